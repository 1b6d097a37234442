//! Idle virtual time costs nothing (issue 9): a simulated run jumps its clock over
//! stretches with nothing queued, so a run of 100000 hours with a burst of input at the
//! start finishes in seconds (stepping every slice and tick would take hours) and gives
//! exactly the rows a 10-second run of the same input gives.
//! Wall-clock bounds are the point here, so `Instant::now` is allowed.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// 100 tuples in the first 5 s, then nothing for 100000 hours: a filter, an arrival-time
/// window (closed by ticks) and an event-time window (closed by its watermark and the
/// final flush).
const BURST: &str = "name: burst
seed: 7
duration: 100000h
engine: {mode: simulated, tick: 100ms}
streams:
  s:
    schema: {k: int, v: float, ts: timestamp}
    event_time: ts
    source:
      generator:
        rate: 20
        count: 100
        fields:
          k: {uniform: {min: 1, max: 3}}
          v: {normal: {mean: 20, stddev: 5}}
          ts: now
queries:
  hot:
    sql: SELECT k, v FROM s WHERE v > 25
    cost: 50ns
  per_second:
    sql: SELECT k, COUNT(*) AS n, SUM(v) AS sv FROM s GROUP BY k, TUMBLE(PROCTIME(), INTERVAL '1' SECOND)
    cost: 80ns
    qos: {latency: {p99: 100ms}, loss_tolerance: [[100, 1], [0, 0]]}
  per_ts:
    sql: SELECT COUNT(*) AS n FROM s GROUP BY TUMBLE(ts, INTERVAL '2' SECOND)
    cost: 80ns
";

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("spillway-idle-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(workload: &Path, out: &Path, args: &[&str]) -> (Output, Duration) {
    let t = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_spillway"))
        .args(["run", "--simulated", "--quiet", "--out"])
        .arg(out)
        .args(args)
        .arg(workload)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (o, t.elapsed())
}

fn rows(out: &Path, query: &str) -> String {
    std::fs::read_to_string(out.join(format!("{query}.jsonl"))).unwrap()
}

#[test]
fn a_hundred_thousand_idle_hours_take_seconds_and_change_no_row() {
    let d = dir("burst");
    let w = d.join("burst.yaml");
    std::fs::write(&w, BURST).unwrap();
    for policy in ["none", "random"] {
        let policy = format!("{}/policies/{policy}.yaml", env!("CARGO_MANIFEST_DIR"));
        let (long, short) = (d.join("long"), d.join("short"));
        let (o, took) = run(&w, &long, &["--policy", &policy]);
        // Stepping would take about 74 hours; debug builds on a busy machine take seconds.
        assert!(took < Duration::from_secs(60), "took {took:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("after 360000000.0 s"),
            "the whole duration ran: {err}"
        );
        assert!(err.contains("ingested 100 "), "{err}");
        run(&w, &short, &["--policy", &policy, "--duration", "10s"]);
        for q in ["hot", "per_second", "per_ts"] {
            assert_eq!(rows(&long, q), rows(&short, q), "{q}");
        }
        let per_second = rows(&long, "per_second");
        let n: u64 = per_second
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["n"].as_u64().unwrap()
            })
            .sum();
        assert_eq!(n, 100, "every tuple is counted once: {per_second}");
        assert_eq!(rows(&long, "per_ts").lines().count(), 3);
    }
}
