//! File replay and Nexmark through the binary: results are checked row by row against an
//! independent computation in the test, and nothing is lost (both run in `pull` flow, so
//! the run ends when the input does).

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use spillway::core::batch::{Batch, Column};
use spillway::core::schema::DataType;
use spillway::generator::nexmark::{NexmarkGenerator, fields_of};
use spillway::spec::NexmarkEvent;

fn spillway() -> Command {
    Command::new(env!("CARGO_BIN_EXE_spillway"))
}

/// Runs `workload` (text) with `--out`, returns stderr and each query's rows.
fn run(dir: &Path, workload: &str, queries: &[&str]) -> (String, Vec<Vec<Value>>) {
    let file = dir.join("w.yaml");
    std::fs::write(&file, workload).unwrap();
    let out = spillway()
        .args(["run", "--quiet", "--out"])
        .arg(dir.join("out"))
        .arg(&file)
        .current_dir(dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{err}");
    let rows = queries
        .iter()
        .map(|q| {
            std::fs::read_to_string(dir.join("out").join(format!("{q}.jsonl")))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        })
        .collect();
    (err, rows)
}

fn int(v: &Value, k: &str) -> i64 {
    v[k].as_i64().unwrap_or_else(|| panic!("{k} in {v}"))
}

#[test]
fn replay_sends_every_line_in_order_and_counts_the_malformed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let n = 200_000;
    let mut jsonl = String::new();
    let mut csv = String::from("temp,ts,sensor\n");
    for i in 0..n {
        jsonl.push_str(&format!(
            "{{\"sensor\":{i},\"temp\":{}.25,\"ts\":{}}}\n",
            i % 40,
            1_000 + i
        ));
        if i % 1000 == 0 {
            jsonl.push_str("{\"sensor\": oops}\n");
        }
        if i < 1000 {
            csv.push_str(&format!("{}.5,{},{i}\n", i % 40, 2_000 + i));
        }
    }
    csv.push_str("1.0,not-a-time,5\n");
    std::fs::write(dir.path().join("trace.jsonl"), jsonl).unwrap();
    std::fs::write(dir.path().join("trace.csv"), csv).unwrap();
    let (err, rows) = run(
        dir.path(),
        r#"name: replay
streams:
  trace:
    schema: {sensor: int, temp: float, ts: timestamp}
    source: {replay: {file: trace.jsonl}}
  small:
    schema: {sensor: int, temp: float, ts: timestamp}
    source: {replay: {file: trace.csv}}
queries:
  warm:
    sql: SELECT sensor, temp FROM trace WHERE temp > 38
  small_all:
    sql: SELECT sensor, temp FROM small
"#,
        &["warm", "small_all"],
    );
    assert!(
        err.contains(&format!("stream trace: ingested {n} (")),
        "{err}"
    );
    assert!(err.contains("malformed 200"), "{err}");
    assert!(err.contains("stream small: ingested 1000 ("), "{err}");
    assert!(err.contains("malformed 1"), "{err}");
    // File order, every row: sensors i with temp i % 40 + 0.25 above 38.
    let warm: Vec<i64> = rows[0].iter().map(|r| int(r, "sensor")).collect();
    let expected: Vec<i64> = (0..n).filter(|i| i % 40 >= 38).collect();
    assert!(
        warm == expected,
        "{} rows, expected {}",
        warm.len(),
        expected.len()
    );
    let small: Vec<(i64, f64)> = rows[1]
        .iter()
        .map(|r| (int(r, "sensor"), r["temp"].as_f64().unwrap()))
        .collect();
    let expected: Vec<(i64, f64)> = (0..1000).map(|i| (i, (i % 40) as f64 + 0.5)).collect();
    assert_eq!(small, expected, "CSV columns matched by header name");
}

/// Every bid among the first `events` Nexmark events of `seed`, as (auction, bidder, price).
fn bids(seed: u64, events: u64) -> Vec<(i64, i64, i64)> {
    let cols = fields_of(NexmarkEvent::Bid);
    let types: Vec<DataType> = cols.iter().map(|c| c.2).collect();
    let mut g = NexmarkGenerator::new(NexmarkEvent::Bid, seed, cols.iter().map(|c| c.1).collect());
    let mut b = Batch::new(&types, 0);
    g.fill(&mut b, events, usize::MAX, 0, 1);
    let col = |i: usize| match &b.columns[i] {
        Column::Int(v) => v.clone(),
        _ => unreachable!(),
    };
    let (a, p, price) = (col(0), col(1), col(2));
    (0..a.len()).map(|i| (a[i], p[i], price[i])).collect()
}

#[test]
fn nexmark_q0_to_q2_match_an_independent_computation() {
    let dir = tempfile::tempdir().unwrap();
    let events = 100_000;
    let (err, rows) = run(
        dir.path(),
        &format!(
            r#"name: nexmark-check
seed: 11
streams:
  bid:
    schema: {{auction: int, bidder: int, price: int, date_time: timestamp}}
    source: {{nexmark: {{event: bid, rate: unlimited, count: {events}}}}}
queries:
  q0:
    sql: SELECT auction, bidder, price FROM bid
  q1:
    sql: SELECT auction, price * 0.908 AS euros FROM bid
  q2:
    sql: SELECT auction, price FROM bid WHERE auction % 123 = 0
"#
        ),
        &["q0", "q1", "q2"],
    );
    let expected = bids(11, events);
    assert_eq!(expected.len(), 92_000, "46 of every 50 events are bids");
    assert!(err.contains("stream bid: ingested 92000 ("), "{err}");
    let q0: Vec<(i64, i64, i64)> = rows[0]
        .iter()
        .map(|r| (int(r, "auction"), int(r, "bidder"), int(r, "price")))
        .collect();
    assert!(q0 == expected, "q0 differs from the generated bids");
    assert_eq!(rows[1].len(), expected.len());
    for (r, (a, _, p)) in rows[1].iter().zip(&expected) {
        assert_eq!(int(r, "auction"), *a);
        let euros = r["euros"].as_f64().unwrap();
        assert!(
            (euros - *p as f64 * 0.908).abs() < 1e-6 * euros.max(1.0),
            "{r}"
        );
    }
    let q2: Vec<(i64, i64)> = rows[2]
        .iter()
        .map(|r| (int(r, "auction"), int(r, "price")))
        .collect();
    let want: Vec<(i64, i64)> = expected
        .iter()
        .filter(|(a, _, _)| a % 123 == 0)
        .map(|&(a, _, p)| (a, p))
        .collect();
    assert!(!want.is_empty());
    assert_eq!(q2, want);
}
