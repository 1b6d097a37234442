//! End to end through the binary: `spillway run` on a workload with a TCP source, fed by
//! `spillway produce` over loopback; every line sent is ingested and reaches the sink.

use std::io::Read;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Duration;

fn spillway() -> Command {
    Command::new(env!("CARGO_BIN_EXE_spillway"))
}

/// A loopback port nobody listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn run_with_a_tcp_source_ingests_everything_produce_sends() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let workload = dir.path().join("tcp.yaml");
    std::fs::write(
        &workload,
        format!(
            r#"name: tcp-e2e
streams:
  readings:
    schema: {{sensor: int, temp: float, ts: timestamp}}
    source:
      tcp: {{listen: "127.0.0.1:{port}"}}
queries:
  everything:
    sql: SELECT sensor, temp FROM readings
"#
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let mut run = spillway()
        .args(["run", "--quiet", "--duration", "60s", "--out"])
        .arg(&out)
        .arg(&workload)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `produce` retries until the listener is up.
    let produced = spillway()
        .args(["produce", "--workload"])
        .arg(&workload)
        .args(["--to", &format!("127.0.0.1:{port}")])
        .args(["--rate", "40000", "--connections", "3", "--count", "20000"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&produced.stderr);
    assert!(produced.status.success(), "{said}");
    assert!(said.contains("sent 20000 lines"), "{said}");
    // Results reach the file within a sink flush (1 s); wait for all of them.
    let results = out.join("everything.jsonl");
    let mut waited = 0;
    let count = |p: &std::path::Path| std::fs::read_to_string(p).map_or(0, |t| t.lines().count());
    while count(&results) < 20_000 && waited < 300 {
        std::thread::sleep(Duration::from_millis(100));
        waited += 1;
    }
    let killed = Command::new("kill")
        .args(["-INT", &run.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = run.wait().unwrap();
    let mut err = String::new();
    run.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(130), "Ctrl-C ends with 130: {err}");
    assert!(err.contains("stream readings: ingested 20000"), "{err}");
    assert!(err.contains("balanced"), "{err}");
    assert_eq!(count(&results), 20_000);
}

#[test]
fn run_refuses_a_tcp_workload_in_simulated_mode_and_produce_rejects_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let workload = dir.path().join("tcp.yaml");
    std::fs::write(
        &workload,
        "name: t\nduration: 1s\nstreams:\n  s:\n    schema: {a: int}\n    source: {tcp: {listen: \"127.0.0.1:1\"}}\nqueries:\n  q: {sql: SELECT a FROM s, cost: 10ns}\n",
    )
    .unwrap();
    let out = spillway()
        .args(["run", "--simulated"])
        .arg(&workload)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("stream `s` has a `tcp` source"), "{err}");
    let out = spillway()
        .args(["produce", "--rate", "fast", "/dev/null"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a rate"));
}
