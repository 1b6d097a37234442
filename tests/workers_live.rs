//! `spillway run` with `engine.workers: 2`, live: a finite pull stream through a keyed
//! event-time aggregate, a keyless filter and a string-keyed aggregate gives the same rows
//! as one worker, the summary balances every query's ledger, and the same workload runs
//! simulated on two workers too. With the keyed aggregate alone, the
//! stream is routed by shard (the coordinator splits each batch into a part per worker): the
//! same rows again, and the ledger counts each tuple once.

use std::process::Command;

fn spillway() -> Command {
    Command::new(env!("CARGO_BIN_EXE_spillway"))
}

fn workload(workers: usize) -> String {
    format!(
        r#"name: workers-live
seed: 5
engine: {{workers: {workers}, tick: 20ms, batch_size: 512}}
streams:
  readings:
    schema: {{sensor: int, temp: float, city: string, ts: timestamp}}
    event_time: ts
    source:
      flow: pull
      generator:
        rate: unlimited
        count: 300000
        fields:
          sensor: {{zipf: {{n: 500, s: 1.2}}}}
          temp: {{normal: {{mean: 20, stddev: 6}}}}
          city: {{choice: {{values: [oslo, rome, lima, pune]}}}}
          ts: {{sequence: {{start: 0, step: 10us}}}}
queries:
  trend:
    sql: |
      SELECT sensor, COUNT(*) AS n, SUM(temp) AS total, window_start
      FROM readings GROUP BY sensor, HOP(ts, INTERVAL '100' MILLISECOND, INTERVAL '1' SECOND)
    cost: 100ns
  alerts:
    sql: SELECT sensor, city, temp FROM readings WHERE temp > 33
    cost: 100ns
  per_city:
    sql: |
      SELECT city, COUNT(*) AS n, MAX(temp) AS hi, window_start
      FROM readings GROUP BY city, TUMBLE(ts, INTERVAL '1' SECOND)
    cost: 100ns
"#
    )
}

/// The workload with only its keyed `trend` query: the stream is routed by shard.
fn routed(workers: usize) -> String {
    let w = workload(workers);
    w[..w.find("  alerts:").unwrap()].to_string()
}

/// Runs the workload on `workers` workers; returns stderr and each query's rows without
/// their latency, in file order.
fn run(workers: usize) -> (String, Vec<Vec<String>>) {
    run_yaml(&workload(workers), &["trend", "alerts", "per_city"])
}

fn run_yaml(yaml: &str, queries: &[&str]) -> (String, Vec<Vec<String>>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.yaml");
    std::fs::write(&path, yaml).unwrap();
    let out = spillway()
        .arg("run")
        .arg(&path)
        .arg("--quiet")
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    let rows = queries
        .iter()
        .map(|q| {
            let text = std::fs::read_to_string(dir.path().join(format!("{q}.jsonl"))).unwrap();
            text.lines()
                .map(|l| {
                    let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                    v.as_object_mut().unwrap().remove("latency_ms");
                    v.to_string()
                })
                .collect()
        })
        .collect();
    (err, rows)
}

#[test]
fn two_live_workers_give_the_rows_of_one_and_balanced_ledgers() {
    let (err1, one) = run(1);
    let (err2, two) = run(2);
    assert!(
        err2.contains("2 engine workers over 64 key shards"),
        "{err2}"
    );
    for err in [&err1, &err2] {
        assert_eq!(err.matches("balanced").count(), 3, "{err}");
        assert!(!err.contains("VIOLATED"), "{err}");
    }
    assert!(one[0].len() > 1000, "trend rows: {}", one[0].len());
    // The keyless filter runs whole on one worker: the same rows in the same order.
    assert_eq!(two[1], one[1]);
    for q in [0, 2] {
        let (mut a, mut b) = (one[q].clone(), two[q].clone());
        a.sort();
        b.sort();
        assert_eq!(a, b, "query {q}");
    }
}

#[test]
fn a_routed_stream_on_two_live_workers_gives_the_rows_of_one() {
    let (err1, one) = run_yaml(&routed(1), &["trend"]);
    let (err2, two) = run_yaml(&routed(2), &["trend"]);
    for err in [&err1, &err2] {
        assert_eq!(err.matches("balanced").count(), 1, "{err}");
        assert!(!err.contains("VIOLATED"), "{err}");
        // Routed: every tuple is offered once, on one worker.
        assert!(err.contains("of 300000 offered"), "{err}");
    }
    assert!(one[0].len() > 1000, "trend rows: {}", one[0].len());
    let (mut a, mut b) = (one[0].clone(), two[0].clone());
    a.sort();
    b.sort();
    assert_eq!(a, b);
}

#[test]
fn two_workers_run_simulated_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.yaml");
    std::fs::write(&path, workload(2)).unwrap();
    let out = spillway()
        .args(["run", "--simulated", "--duration", "1s", "--quiet"])
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("2 engine workers over 64 key shards"), "{err}");
    assert!(err.contains("of 300000 offered"), "{err}");
}
