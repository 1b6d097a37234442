//! The control API end to end: a real `spillway run --control-addr` over loopback HTTP,
//! queries added, patched and removed under overload, refused requests, access limits, and
//! the `spillway query` client. No assertion here depends on timing.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

fn spillway() -> Command {
    Command::new(env!("CARGO_BIN_EXE_spillway"))
}

/// A push stream at 1 M tuples/s and a query over 100 sliding windows: far more than a
/// test build processes, so the shedder sheds.
const WORKLOAD: &str = r#"
name: api-overload
seed: 5
engine: {tick: 50ms, batch_size: 512, scheduler: qos}
streams:
  readings:
    schema: {sensor: int, temp: float, ts: timestamp}
    event_time: ts
    source:
      flow: push
      generator:
        rate: 1000000
        fields:
          sensor: {zipf: {n: 2000, s: 1.0}}
          temp: {normal: {mean: 20, stddev: 6}}
          ts: now
queries:
  trend:
    sql: |
      SELECT sensor, COUNT(*) AS n, SUM(temp) AS s, AVG(temp) AS a, MIN(temp) AS lo,
             MAX(temp) AS hi, window_end
      FROM readings
      GROUP BY sensor, HOP(ts, INTERVAL '10' MILLISECOND, INTERVAL '1' SECOND)
    qos: {latency: {p99: 200ms}}
    sink: none
policy: random.yaml
"#;

struct Server {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

/// Starts `spillway run` with the control API on a free loopback port.
fn start(extra: &[&str], token: Option<&str>) -> Server {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.yaml"), WORKLOAD).unwrap();
    std::fs::copy("policies/random.yaml", dir.path().join("random.yaml")).unwrap();
    let mut cmd = spillway();
    cmd.arg("run")
        .arg(dir.path().join("w.yaml"))
        .args([
            "--control-addr",
            "127.0.0.1:0",
            "--quiet",
            "--duration",
            "30s",
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(t) = token {
        cmd.env("SPILLWAY_CONTROL_TOKEN", t);
    }
    let mut child = cmd.spawn().unwrap();
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
    // Keep draining stderr so the child never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    Server {
        child,
        base,
        _dir: dir,
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn post(s: &Server, body: &str) -> (u16, Value) {
    answer(agent().post(format!("{}/queries", s.base)).send(body))
}

fn get(s: &Server, path: &str) -> (u16, Value) {
    answer(agent().get(format!("{}{path}", s.base)).call())
}

fn balanced(ledger: &Value) -> bool {
    let n = |k: &str| ledger[k].as_u64().unwrap();
    let dropped: u64 = ledger["dropped"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    ledger["balanced"] == json!(true) && n("offered") == n("processed") + n("queued") + dropped
}

#[test]
fn queries_come_and_go_over_http_under_overload_with_balanced_ledgers() {
    let s = start(&[], None);
    let add = |name: &str, sql: &str| {
        post(
            &s,
            &json!({"name": name, "sql": sql, "qos": {"latency": {"p99": "100ms"}}, "sink": "none"})
                .to_string(),
        )
    };
    let (code, a) = add("hot", "SELECT sensor, temp FROM readings WHERE temp > 25");
    assert_eq!(code, 200, "{a}");
    assert_eq!(a["index"], 1);
    assert!(
        a["query"]["plan"].as_str().unwrap().contains("filter"),
        "{a}"
    );
    let (code, b) = add("cold", "SELECT sensor FROM readings WHERE temp < 15");
    assert_eq!(code, 200, "{b}");
    assert_eq!(b["index"], 2);

    // Refused: located like a workload file's errors; the instance runs on.
    let (code, e) = add("bad", "SELECT nope FROM readings");
    assert_eq!(code, 400);
    let msg = e["error"].as_str().unwrap();
    assert!(
        msg.starts_with("request:3:") && msg.contains("queries.bad.sql"),
        "{msg}"
    );
    assert!(msg.contains("nope"), "{msg}");
    let (code, e) = add("other", "SELECT sensor FROM nowhere");
    assert_eq!(code, 400);
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("unknown stream `nowhere`"),
        "{e}"
    );
    let (code, e) = add("HOT", "SELECT sensor FROM readings");
    assert_eq!(code, 400);
    assert!(
        e["error"].as_str().unwrap().contains("already running"),
        "{e}"
    );
    let (code, e) = post(&s, "{not json");
    assert_eq!(code, 400);
    assert!(e["error"].as_str().unwrap().contains("not JSON"), "{e}");

    // Let the new queries take input (nothing below depends on how much).
    let mut offered = 0;
    while offered == 0 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let (_, q) = get(&s, "/queries/cold");
        offered = q["ledger"]["offered"].as_u64().unwrap();
    }
    let (code, p) = answer(
        agent()
            .patch(format!("{}/queries/hot", s.base))
            .send(r#"{"weight": 3, "latency": {"p99": "50ms"}}"#),
    );
    assert_eq!(code, 200, "{p}");
    assert_eq!(p["qos"]["weight"], 3.0);
    assert_eq!(p["qos"]["latency"]["target_ms"], 50.0);
    let (code, e) = answer(
        agent()
            .patch(format!("{}/queries/hot", s.base))
            .send(r#"{"weight": -1}"#),
    );
    assert_eq!(code, 400);
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .contains("weight must be positive"),
        "{e}"
    );

    // Remove one: it leaves with its final, balanced ledger in the response.
    let (code, r) = answer(agent().delete(format!("{}/queries/cold", s.base)).call());
    assert_eq!(code, 200, "{r}");
    assert!(balanced(&r["ledger"]), "{r}");
    assert!(r["ledger"]["offered"].as_u64().unwrap() > 0);
    assert_eq!(r["ledger"]["queued"], 0);
    let (code, _) = answer(agent().delete(format!("{}/queries/cold", s.base)).call());
    assert_eq!(code, 404);

    // Every ledger balances, the removed one's included, at every look; and the run comes
    // to shed. How soon depends on the machine (the controller needs a few ticks of
    // backlog), so the test looks every 100 ms for up to 30 s instead of once.
    let mut looks = 0;
    let list = loop {
        let (code, list) = get(&s, "/queries");
        assert_eq!(code, 200);
        let list = list.as_array().unwrap().clone();
        assert_eq!(list.len(), 3);
        assert!(list.iter().all(|q| balanced(&q["ledger"])), "{list:?}");
        assert_eq!(list[2]["state"], "removed");
        let shed: u64 = list
            .iter()
            .map(|q| q["ledger"]["dropped"]["shed-random"].as_u64().unwrap())
            .sum();
        looks += 1;
        if shed > 0 || looks >= 300 {
            break list;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let shed: u64 = list
        .iter()
        .map(|q| q["ledger"]["dropped"]["shed-random"].as_u64().unwrap())
        .sum();
    assert!(shed > 0, "no overload in 30 s: {list:?}");
    let (code, st) = get(&s, "/status");
    assert_eq!(code, 200);
    assert_eq!(st["ledger_violations"], 0);

    // Policy switch, by file.
    let (code, p) = answer(
        agent()
            .put(format!("{}/policy", s.base))
            .send(json!({"file": "policies/none.yaml"}).to_string()),
    );
    assert_eq!(code, 200, "{p}");
    assert_eq!(p["policy"], "policies/none.yaml");

    // Over the body size limit: 413.
    let big = json!({"name": "big", "sql": "x".repeat(100_000)}).to_string();
    let (code, _) = post(&s, &big);
    assert_eq!(code, 413);
}

#[test]
fn the_client_wraps_the_api_with_its_exit_codes() {
    let s = start(&[], None);
    let addr = s.base.trim_start_matches("http://").to_string();
    let run = |args: &[&str]| {
        spillway()
            .arg("query")
            .args(args)
            .args(["--addr", &addr])
            .output()
            .unwrap()
    };
    let out = run(&[
        "add",
        "warm",
        "--sql",
        "SELECT temp FROM readings",
        "--sink",
        "none",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&["add", "broken", "--sql", "SELECT FROM"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("request:3:"));
    let out = run(&["ls"]);
    let ls: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ls.as_array().unwrap().len(), 2);
    let out = run(&["patch", "warm", "--qos", r#"{"lossless": true}"#]);
    assert!(out.status.success());
    let out = run(&["policy", "policies/random.yaml"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(&["rm", "warm", "--no-flush"]);
    assert!(out.status.success());
    let rm: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(balanced(&rm["ledger"]), "{rm}");
    let out = run(&["show", "warm"]);
    let show: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(show["state"], "removed");
    let out = run(&["rm", "warm"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_token_is_required_when_set_and_outside_loopback() {
    // Non-loopback without a token: refuses to start.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.yaml"), WORKLOAD).unwrap();
    std::fs::copy("policies/random.yaml", dir.path().join("random.yaml")).unwrap();
    let out = spillway()
        .arg("run")
        .arg(dir.path().join("w.yaml"))
        .args(["--control-addr", "0.0.0.0:0", "--duration", "1s"])
        .env_remove("SPILLWAY_CONTROL_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a loopback address"));

    // With a token: 401 without it, 200 with it.
    let s = start(&[], Some("s3cret"));
    let (code, _) = get(&s, "/queries");
    assert_eq!(code, 401);
    let (code, _) = answer(
        agent()
            .get(format!("{}/queries", s.base))
            .header("Authorization", "Bearer wrong")
            .call(),
    );
    assert_eq!(code, 401);
    let (code, _) = answer(
        agent()
            .get(format!("{}/queries", s.base))
            .header("Authorization", "Bearer s3cret")
            .call(),
    );
    assert_eq!(code, 200);
}
