//! Ad-hoc queries through the control API of a real `spillway run`: over the retained
//! history the rows equal those the same continuous query wrote for the same windows;
//! refusals are 400 with a reason; unknown paths get a JSON 404. Scripted adds and API
//! adds in one live run each write to their own sink. Windows are compared by their event
//! times, so nothing here depends on how fast the machine is.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

const WORKLOAD: &str = r#"
name: api-history
seed: 7
engine: {tick: 50ms, batch_size: 16}
streams:
  readings:
    schema: {sensor: int, temp: float, ts: timestamp}
    event_time: ts
    retain: {last: 3s}
    source:
      flow: push
      generator:
        rate: 2000
        fields:
          sensor: {zipf: {n: 5, s: 1.0}}
          temp: {normal: {mean: 20, stddev: 6}}
          ts: now
  other:
    schema: {x: int}
    rate: 10
queries:
  per_sensor:
    sql: |
      SELECT sensor, COUNT(*) AS n, MAX(temp) AS hottest, window_start, window_end
      FROM readings GROUP BY sensor, TUMBLE(ts, INTERVAL '500' MILLISECOND)
"#;

struct Server {
    child: Child,
    base: String,
    dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Server {
    start_with(WORKLOAD)
}

fn start_with(workload: &str) -> Server {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.yaml"), workload).unwrap();
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
        .arg("--out")
        .arg(dir.path().join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let base = loop {
        let line = lines.next().expect("spillway ended").unwrap();
        if let Some(rest) = line.split("control API on ").nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Server { child, base, dir }
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

fn post(s: &Server, body: Value) -> (u16, Value) {
    answer(
        agent()
            .post(format!("{}/queries", s.base))
            .send(body.to_string()),
    )
}

fn time(v: &Value) -> SystemTime {
    humantime::parse_rfc3339(v.as_str().unwrap()).unwrap()
}

/// Polls `GET /status` until the run has been up `secs` (the run's own clock).
fn wait_until(s: &Server, secs: f64) {
    loop {
        let (_, st) = answer(agent().get(format!("{}/status", s.base)).call());
        if st["elapsed_s"].as_f64().unwrap_or(0.0) >= secs {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn an_adhoc_query_over_history_gives_the_rows_the_continuous_query_wrote() {
    let s = start();
    wait_until(&s, 4.0);
    let sql = "SELECT sensor, COUNT(*) AS n, MAX(temp) AS hottest, window_start, window_end \
               FROM readings GROUP BY sensor, TUMBLE(ts, INTERVAL '500' MILLISECOND)";
    let (code, r) = post(&s, json!({"name": "recent", "mode": "ad-hoc", "sql": sql}));
    assert_eq!(code, 200, "{r}");
    assert!(r["history"]["tuples"].as_u64().unwrap() > 1_000, "{r}");
    assert_eq!(r["truncated"], 0);
    assert!(r["ledger"]["balanced"].as_bool().unwrap(), "{r}");
    let (from, to) = (time(&r["history"]["from"]), time(&r["history"]["to"]));
    // History spans about the 3 s retained.
    let span = to.duration_since(from).unwrap();
    assert!(span > Duration::from_millis(2_500), "{span:?}");
    // Windows wholly inside the history: after its start, closed well before its end.
    let inside = |row: &Value| {
        time(&row["window_start"]) >= from + Duration::from_millis(100)
            && time(&row["window_end"]) + Duration::from_millis(300) <= to
    };
    let adhoc: Vec<Value> = r["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| inside(r))
        .cloned()
        .collect();
    assert!(adhoc.len() >= 5, "{r}");

    // The continuous query's rows for the same windows, from its file once it is removed
    // (flushed) and the run has stopped.
    let (code, _) = answer(
        agent()
            .delete(format!("{}/queries/per_sensor", s.base))
            .call(),
    );
    assert_eq!(code, 200);
    let status = Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut s = s;
    let _ = s.child.wait();
    let text = std::fs::read_to_string(s.dir.path().join("out/per_sensor.jsonl")).unwrap();
    let continuous: Vec<Value> = text
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            let m = v.as_object_mut().unwrap();
            m.remove("query");
            m.remove("latency_ms");
            v
        })
        .filter(|r| inside(r))
        .collect();
    assert_eq!(adhoc, continuous);
}

#[test]
fn adhoc_refusals_and_unknown_paths_say_why() {
    let s = start();
    // A stream that keeps no history.
    let (code, r) = post(
        &s,
        json!({"name": "p", "mode": "ad-hoc", "sql": "SELECT x FROM other"}),
    );
    assert_eq!(code, 400);
    assert!(r["error"].as_str().unwrap().contains("retain"), "{r}");
    // A sink on an ad-hoc query that ends, a bad mode, `continue` without ad-hoc.
    let (code, r) = post(
        &s,
        json!({"name": "q", "mode": "ad-hoc", "sql": "SELECT temp FROM readings", "sink": "stdout"}),
    );
    assert_eq!(code, 400, "{r}");
    let (code, r) = post(
        &s,
        json!({"name": "q", "mode": "later", "sql": "SELECT temp FROM readings"}),
    );
    assert_eq!(code, 400, "{r}");
    assert!(r["error"].as_str().unwrap().contains("ad-hoc"), "{r}");
    let (code, _) = post(
        &s,
        json!({"name": "q", "continue": true, "sql": "SELECT temp FROM readings"}),
    );
    assert_eq!(code, 400);
    // Bad SQL in an ad-hoc query: located, as any query.
    let (code, r) = post(
        &s,
        json!({"name": "q", "mode": "ad-hoc", "sql": "SELECT FROM readings"}),
    );
    assert_eq!(code, 400);
    assert!(r["error"].as_str().unwrap().contains("request:"), "{r}");

    // An ad-hoc query that continues: history, then live, like any query.
    wait_until(&s, 1.0);
    let (code, r) = post(
        &s,
        json!({"name": "live", "mode": "ad-hoc", "continue": true, "sql": "SELECT temp FROM readings WHERE temp > 30", "sink": "none"}),
    );
    assert_eq!(code, 200, "{r}");
    assert!(r["history"]["tuples"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(r["query"]["state"], "running");
    let (_, st) = answer(agent().get(format!("{}/status", s.base)).call());
    let retained = &st["streams"][0]["retained"];
    assert!(retained["tuples"].as_u64().unwrap() > 0, "{st}");
    assert!(retained["bytes"].as_u64().unwrap() > 0, "{st}");

    // The client: rows as JSON lines on stdout, the rest of the answer on stderr.
    let out = Command::new(env!("CARGO_BIN_EXE_spillway"))
        .args(["query", "add", "counts", "--adhoc", "--jsonl", "--addr"])
        .arg(s.base.trim_start_matches("http://"))
        .args([
            "--sql",
            "SELECT COUNT(*) AS n FROM readings GROUP BY TUMBLE(ts, INTERVAL '1' HOUR)",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // One window (two if an hour began within the 3 s of history).
    assert!((1..=2).contains(&lines.len()), "{lines:?}");
    assert!(lines[0]["n"].as_u64().unwrap() > 0);
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"history\""));
    let out = Command::new(env!("CARGO_BIN_EXE_spillway"))
        .args(["query", "add", "p", "--adhoc", "--addr"])
        .arg(s.base.trim_start_matches("http://"))
        .args(["--sql", "SELECT x FROM other"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a refused ad-hoc query exits 2");

    // Unknown paths and methods: JSON with a message.
    let (code, r) = answer(agent().get(format!("{}/nope", s.base)).call());
    assert_eq!(code, 404);
    assert!(r["error"].as_str().unwrap().contains("GET /nope"), "{r}");
    let (code, r) = answer(agent().delete(format!("{}/status", s.base)).call());
    assert_eq!(code, 405);
    assert!(r["error"].as_str().unwrap().contains("DELETE"), "{r}");
}

#[test]
fn scripted_adds_and_api_adds_each_write_to_their_own_sink() {
    let workload = format!(
        "{WORKLOAD}changes:\n  - {{at: 1500ms, add: {{name: scripted, sql: \"SELECT sensor FROM readings WHERE sensor = 1\"}}}}\n"
    );
    let s = start_with(&workload);
    // Added through the API before the scripted add: it takes the index the scripted
    // query would have had if indices were fixed up front.
    let (code, r) = post(
        &s,
        json!({"name": "api", "sql": "SELECT temp FROM readings WHERE sensor = 2"}),
    );
    assert_eq!(code, 200, "{r}");
    assert_eq!(r["index"], 1);
    wait_until(&s, 2.5);
    let (_, list) = answer(agent().get(format!("{}/queries", s.base)).call());
    assert_eq!(list[2]["name"], "scripted", "{list}");
    let status = Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut s = s;
    let _ = s.child.wait();
    for (file, query, field) in [("api", "api", "temp"), ("scripted", "scripted", "sensor")] {
        let text = std::fs::read_to_string(s.dir.path().join(format!("out/{file}.jsonl"))).unwrap();
        assert!(!text.is_empty(), "{file} is empty");
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["query"], query, "{file}: {line}");
            assert!(v.get(field).is_some(), "{file}: {line}");
        }
    }
}
