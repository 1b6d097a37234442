//! `spillway run --simulated` with `engine.workers: N` as a user meets it: the same rows
//! at 1, 2 and 4 workers (scripted changes included), the same bytes for the same N twice,
//! every ledger balanced under shedding, and what several workers refuse (exit 2, located):
//! a scripted add its stream's route cannot take (`run` and `check`), experiments.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn spillway() -> Command {
    Command::new(env!("CARGO_BIN_EXE_spillway"))
}

/// Two streams: `readings` is read by queries keyed differently (offered whole to every
/// worker), `clicks` only by queries keyed by `uid` (split by shard).
fn workload(workers: usize, rate: u64, changes: &str) -> String {
    format!(
        r#"name: workers-cli
seed: 11
duration: 3s
engine: {{mode: simulated, workers: {workers}, tick: 50ms, batch_size: 128, scheduler: qos, capacity: {{cores: 2}}}}
streams:
  readings:
    schema: {{sensor: int, temp: float, city: string, ts: timestamp}}
    event_time: ts
    rate: {rate}
    fields:
      sensor: {{uniform: {{min: 0, max: 199}}}}
      temp: {{normal: {{mean: 20, stddev: 6}}}}
      city: {{choice: {{values: [oslo, rome, lima, pune]}}}}
      ts: now
  clicks:
    schema: {{uid: int, ts: timestamp}}
    event_time: ts
    rate: {rate}
    fields:
      uid: {{uniform: {{min: 0, max: 99}}}}
      ts: now
queries:
  trend:
    sql: |
      SELECT sensor, COUNT(*) AS n, SUM(temp) AS total, window_start
      FROM readings GROUP BY sensor, TUMBLE(ts, INTERVAL '500' MILLISECOND)
    qos: {{latency: {{p99: 200ms}}, loss_tolerance: [[100, 1.0], [0, 0.0]]}}
    cost: 20us
    sink: stdout
  alerts:
    sql: SELECT sensor, city, temp FROM readings WHERE temp > 30
    qos: {{latency: {{p99: 200ms}}}}
    cost: 2us
    sink: stdout
  per_city:
    sql: |
      SELECT city, COUNT(*) AS n, MAX(temp) AS hi, window_start
      FROM readings GROUP BY city, TUMBLE(ts, INTERVAL '1' SECOND)
    qos: {{latency: {{p99: 1500ms}}}}
    cost: 2us
    sink: stdout
  per_user:
    sql: |
      SELECT uid, COUNT(*) AS n, window_start
      FROM clicks GROUP BY uid, TUMBLE(ts, INTERVAL '500' MILLISECOND)
    qos: {{latency: {{p99: 200ms}}}}
    cost: 5us
    sink: stdout
{changes}"#
    )
}

/// Adds on both streams, a patch and flushed removals (a filter on its owner worker, an
/// aggregate sharded over all), all on keys the routes allow.
const CHANGES: &str = r#"changes:
  - at: 1s
    add:
      name: hot_sensors
      sql: "SELECT sensor, MAX(temp) AS hi, window_start FROM readings GROUP BY sensor, TUMBLE(ts, INTERVAL '500' MILLISECOND)"
      qos: {latency: {p99: 200ms}}
      cost: 3us
      sink: stdout
  - at: 1200ms
    add:
      name: user_max
      sql: "SELECT uid, COUNT(*) AS n, window_start FROM clicks GROUP BY uid, TUMBLE(ts, INTERVAL '500' MILLISECOND)"
      cost: 3us
      sink: stdout
  - {at: 1500ms, patch: {name: trend, qos: {latency: {p99: 300ms}}}}
  - {at: 2s, remove: alerts, flush: true}
  - {at: 2500ms, remove: per_city, flush: true}
"#;

fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spillway-workers-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn run(path: &Path, extra: &[&str]) -> Output {
    spillway()
        .arg("run")
        .arg(path)
        .args(["--quiet"])
        .args(extra)
        .output()
        .unwrap()
}

/// Every stdout row with its latency taken out (N workers on cores / N each are another
/// machine: when a row is emitted differs, what it says does not), sorted.
fn rows(out: &Output) -> Vec<String> {
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v: Vec<String> = (text.lines())
        .map(|l| {
            let mut j: serde_json::Value = serde_json::from_str(l).unwrap();
            j.as_object_mut().unwrap().remove("latency_ms");
            j.to_string()
        })
        .collect();
    v.sort();
    v
}

fn count(rows: &[String], query: &str) -> usize {
    let q = format!("\"query\":\"{query}\"");
    rows.iter().filter(|r| r.contains(&q)).count()
}

#[test]
fn the_same_rows_at_1_2_and_4_workers_with_scripted_changes_and_the_same_bytes_twice() {
    let mut by_n = Vec::new();
    for n in [1, 2, 4] {
        let p = write(&format!("same-{n}.yaml"), &workload(n, 20_000, CHANGES));
        let out = run(&p, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{n} workers: {err}");
        // Nothing is shed: every query processed all it was offered.
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(" of ")).collect();
        let whole = (lines.iter())
            .filter_map(|l| l.split("processed ").nth(1))
            .filter(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                w.len() > 2 && w[0] == w[2]
            })
            .count();
        assert_eq!(whole, 6, "{err}");
        if n > 1 {
            assert!(err.contains(&format!("{n} engine workers")), "{err}");
        }
        by_n.push((n, rows(&out), out.stdout));
    }
    let (_, one, _) = &by_n[0];
    for q in [
        "trend",
        "alerts",
        "per_city",
        "per_user",
        "hot_sensors",
        "user_max",
    ] {
        assert!(count(one, q) > 0, "no rows of {q}");
    }
    for (n, got, _) in &by_n[1..] {
        assert_eq!(got.len(), one.len(), "{n} workers");
        assert!(got == one, "{n} workers: rows differ");
    }
    // Deterministic: the same N twice gives the same bytes in the same order.
    let p = write("same-2.yaml", &workload(2, 20_000, CHANGES));
    let again = run(&p, &[]);
    assert!(again.stdout == by_n[1].2, "two runs on 2 workers differ");
}

#[test]
fn under_shedding_on_2_workers_every_ledger_balances_and_the_merged_view_sheds() {
    // 120 k tuples/s x 20 us on `trend` alone is 1.2 cores of 2 per worker's 1: both shed.
    let p = write("shed.yaml", &workload(2, 120_000, ""));
    let out = run(&p, &["--policy", "policies/random.yaml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.matches("-> balanced").count(), 4, "{err}");
    assert!(!err.contains("violated"), "{err}");
    let active: u64 = err
        .split("shedding: active ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(active > 10, "{err}");
    // The approximate rows say so: scaled counts carry a keep fraction and an interval.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.contains("\"query\":\"trend\"") && l.contains("n_ci95")),
        "no scaled trend row"
    );
}

#[test]
fn what_several_workers_refuse_exits_2_with_a_located_reason() {
    // A keyless query added to a stream split by key: it would need every row.
    let bad = "changes:\n  - {at: 1s, add: {name: all_clicks, sql: \"SELECT uid FROM clicks WHERE uid > 5\", cost: 1us}}\n";
    let p = write("unroutable.yaml", &workload(2, 1000, bad));
    let out = run(&p, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("unroutable.yaml:"), "{err}");
    assert!(err.contains("changes[0].add"), "{err}");
    assert!(err.contains("split by its key column `uid`"), "{err}");
    // What `run` refuses, `check` refuses too.
    let out = spillway().arg("check").arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("changes[0].add"));
    // The same add on one worker is fine.
    let p = write("routable-1.yaml", &workload(1, 1000, bad));
    assert!(run(&p, &[]).status.success());
    // Experiments judge policies against one engine's optimum: refused on several workers.
    let p = write("experiment.yaml", &workload(2, 1000, ""));
    let out = spillway()
        .arg("experiment")
        .arg(&p)
        .arg("--out")
        .arg(p.with_extension("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("experiment.yaml:4:"), "{err}");
    assert!(err.contains("runs one engine worker"), "{err}");
}

/// The ledger `offered A = processed B + shed C + queue-full D + withdrawn E` of the
/// removal line of `query`, which must add up.
fn removal(err: &str, query: &str) -> [u64; 5] {
    let line = (err.lines())
        .find(|l| l.contains(&format!("query `{query}` removed")))
        .unwrap_or_else(|| panic!("no removal of {query}: {err}"));
    let ledger = line.split("removed:").nth(1).unwrap();
    let n: Vec<u64> = (ledger.split(|c: char| !c.is_ascii_digit()))
        .filter_map(|w| w.parse().ok())
        .collect();
    let v: [u64; 5] = n[..5].try_into().unwrap();
    assert_eq!(v[0], v[1] + v[2] + v[3] + v[4], "{line}");
    v
}

#[test]
fn scripted_changes_apply_to_every_live_worker() {
    let live = workload(2, 2000, CHANGES).replace("mode: simulated", "mode: live");
    let p = write("live-changes.yaml", &live);
    let out = run(&p, &["--duration", "3s"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("2 engine workers"), "{err}");
    assert!(err.contains("query `hot_sensors` added"), "{err}");
    assert!(err.contains("query `user_max` added"), "{err}");
    assert!(err.contains("query `trend`: QoS changed"), "{err}");
    // Removed once each, the workers' final ledgers added: the filter ran on one owner
    // (every tuple once); the keyed aggregate on a stream offered whole to both workers
    // counts visits (each tuple on each worker).
    let alerts = removal(&err, "alerts");
    let per_city = removal(&err, "per_city");
    assert!(alerts[0] > 1000, "{alerts:?}");
    assert!(per_city[0] > 2 * alerts[0], "{per_city:?} {alerts:?}");
    assert_eq!(err.matches(" removed: ").count(), 2, "{err}");
    let rows = rows(&out);
    for q in ["hot_sensors", "user_max", "trend", "per_user"] {
        assert!(count(&rows, q) > 0, "no rows of {q}");
    }
}

#[test]
fn changes_due_after_the_end_of_a_simulated_run_never_apply() {
    // `user_max` is added at 1.2 s: after the end of a 1.1 s run, on any number of workers.
    let names = |n: usize| -> Vec<String> {
        let p = write(&format!("end-{n}.yaml"), &workload(n, 2000, CHANGES));
        let out = run(&p, &["--duration", "1100ms"]);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        (err.lines())
            .filter_map(|l| l.strip_prefix("  query "))
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect()
    };
    let one = names(1);
    assert!(one.contains(&"hot_sensors".to_string()), "{one:?}");
    assert!(!one.contains(&"user_max".to_string()), "{one:?}");
    assert_eq!(names(2), one);
}

/// `overload-2workers.yaml` is `overload.yaml` with `workers: 2` (it had drifted: a step
/// to 3.4 M tuples/s with doubled costs against the other's 7 M).
#[test]
fn the_two_worker_overload_is_the_overload_on_two_workers() {
    let read = |f: &str| {
        let path = format!("{}/workloads/{f}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        spillway::spec::parse(&text, &path).unwrap_or_else(|e| panic!("{e}"))
    };
    let one = read("overload.yaml");
    let mut two = read("overload-2workers.yaml");
    assert_eq!(two.engine.workers, 2);
    two.name = one.name.clone();
    two.engine.workers = one.engine.workers;
    assert_eq!(format!("{two:?}"), format!("{one:?}"));
}
