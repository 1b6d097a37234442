//! The control API on a live run of two engine workers (`runtime::workers::inbox`), over
//! loopback HTTP: a query added over the API runs on both workers, is patched, and leaves
//! with the workers' final ledgers added and balanced; list and status read the merged
//! view; a query its stream's route cannot take, an ad-hoc query and an unknown name are
//! refused. No assertion depends on timing beyond "eventually".

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// `readings` is read by queries keyed differently (offered whole to every worker);
/// `clicks` only by a query keyed by `uid` (split by key between the workers).
const WORKLOAD: &str = r#"
name: api-workers
seed: 5
engine: {workers: 2, tick: 50ms, batch_size: 256}
streams:
  readings:
    schema: {sensor: int, temp: float, ts: timestamp}
    event_time: ts
    rate: 20000
    fields:
      sensor: {uniform: {min: 0, max: 99}}
      temp: {normal: {mean: 20, stddev: 6}}
      ts: now
  clicks:
    schema: {uid: int, ts: timestamp}
    event_time: ts
    rate: 20000
    fields: {uid: {uniform: {min: 0, max: 99}}, ts: now}
queries:
  trend:
    sql: SELECT sensor, COUNT(*) AS n, window_start FROM readings GROUP BY sensor, TUMBLE(ts, INTERVAL '200' MILLISECOND)
    sink: none
  alerts:
    sql: SELECT sensor, temp FROM readings WHERE temp > 30
    sink: none
  per_user:
    sql: SELECT uid, COUNT(*) AS n, window_start FROM clicks GROUP BY uid, TUMBLE(ts, INTERVAL '200' MILLISECOND)
    sink: none
"#;

struct Server {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Server {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.yaml"), WORKLOAD).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_spillway"))
        .arg("run")
        .arg(dir.path().join("w.yaml"))
        .args([
            "--control-addr",
            "127.0.0.1:0",
            "--quiet",
            "--duration",
            "60s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let base = loop {
        let line = lines
            .next()
            .expect("spillway ended before serving")
            .unwrap();
        if let Some(rest) = line.split("control API on ").nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Server {
        child,
        base,
        _dir: dir,
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

fn answer(r: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> (u16, Value) {
    let mut r = r.unwrap();
    let status = r.status().as_u16();
    let text = r.body_mut().read_to_string().unwrap();
    let v = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, v)
}

fn post(s: &Server, body: Value) -> (u16, Value) {
    answer(
        agent()
            .post(format!("{}/queries", s.base))
            .send(body.to_string()),
    )
}

fn get(s: &Server, path: &str) -> (u16, Value) {
    answer(agent().get(format!("{}{path}", s.base)).call())
}

fn balanced(ledger: &Value) -> bool {
    let n = |k: &str| ledger[k].as_u64().unwrap();
    let dropped: u64 = (ledger["dropped"].as_object().unwrap().values())
        .map(|v| v.as_u64().unwrap())
        .sum();
    ledger["balanced"] == json!(true) && n("offered") == n("processed") + n("queued") + dropped
}

#[test]
fn queries_come_and_go_over_http_on_two_live_workers() {
    let s = start();
    let sql = "SELECT sensor, MAX(temp) AS hi, window_start FROM readings GROUP BY sensor, TUMBLE(ts, INTERVAL '200' MILLISECOND)";
    let (code, r) = post(&s, json!({"name": "hot", "sql": sql, "sink": "none"}));
    assert_eq!(code, 200, "{r}");
    assert_eq!(r["index"], 3);
    // On a stream split by key, only a query keyed the same way fits.
    let (code, r) = post(
        &s,
        json!({"name": "all", "sql": "SELECT uid FROM clicks WHERE uid > 3", "sink": "none"}),
    );
    assert_eq!(code, 409, "{r}");
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("split by its key column `uid`"),
        "{r}"
    );
    let (code, r) = post(
        &s,
        json!({"name": "past", "mode": "ad-hoc", "sql": "SELECT sensor FROM readings"}),
    );
    assert_eq!(code, 409, "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("engine.workers: 1"),
        "{r}"
    );
    // The added query runs on both workers: its merged ledger fills up.
    let mut offered = 0;
    for _ in 0..300 {
        let (_, q) = get(&s, "/queries/hot");
        offered = q["ledger"]["offered"].as_u64().unwrap_or(0);
        if offered > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(offered > 0, "the added query never saw input");
    let (code, p) = answer(
        agent()
            .patch(format!("{}/queries/hot", s.base))
            .send(r#"{"weight": 3, "latency": {"p99": "50ms"}}"#),
    );
    assert_eq!(code, 200, "{p}");
    assert_eq!(p["qos"]["weight"], 3.0);
    let (code, list) = get(&s, "/queries");
    assert_eq!(code, 200);
    assert_eq!(list.as_array().unwrap().len(), 4, "{list}");
    let (code, st) = get(&s, "/status");
    assert_eq!(code, 200);
    assert_eq!(st["workers"], 2, "{st}");
    // Removed: one answer, once both workers have sent their final ledgers, added.
    let (code, r) = answer(agent().delete(format!("{}/queries/hot", s.base)).call());
    assert_eq!(code, 200, "{r}");
    assert_eq!(r["removed"], "hot");
    assert!(balanced(&r["ledger"]), "{r}");
    assert!(r["ledger"]["offered"].as_u64().unwrap() >= offered, "{r}");
    let (code, _) = answer(agent().delete(format!("{}/queries/hot", s.base)).call());
    assert_eq!(code, 404);
    // The keyless filter (on one owner worker) leaves the same way.
    let (code, r) = answer(agent().delete(format!("{}/queries/alerts", s.base)).call());
    assert_eq!(code, 200, "{r}");
    assert!(balanced(&r["ledger"]), "{r}");
    let (_, q) = get(&s, "/queries/hot");
    assert_eq!(q["state"], "removed", "{q}");
}
