//! The `tcp` result sink against a real loopback listener that goes away and comes back:
//! rows written while it is up arrive whole, rows that overflow the buffer while it is away
//! are counted as lost, rows held within the buffer arrive after the reconnect, and
//! delivered + counted = written, with every delivered line a complete JSON object. End to
//! end, `spillway run` with a `tcp` sink delivers every row, and a listener that never
//! comes up makes the run count every row as undelivered and exit 1.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use spillway::core::batch::Batch;
use spillway::core::engine::Emitted;
use spillway::core::schema::{DataType, Scalar};
use spillway::runtime::sink::Sink;
use spillway::runtime::sinks::TcpSink;
use spillway::spec::TcpSinkSpec;

const TYPES: [DataType; 2] = [DataType::Int, DataType::Str];

/// Writes `rows` rows numbered from `first`, in batches of 100.
fn write(sink: &mut TcpSink, first: i64, rows: i64) {
    let names = vec!["n".to_string(), "pad".to_string()];
    let pad: std::sync::Arc<str> = "x".repeat(64).into();
    let mut n = first;
    while n < first + rows {
        let mut b = Batch::new(&TYPES, 100);
        for _ in 0..100.min(first + rows - n) {
            b.push_row(0, &[Scalar::Int(n), Scalar::Str(pad.clone())]);
            n += 1;
        }
        let e = Emitted {
            index: 0,
            query: "q",
            names: &names,
            types: &TYPES,
            batch: &b,
            approx: None,
            emitted_at: 1_000_000,
        };
        sink.write(&e).unwrap();
    }
    sink.flush().unwrap();
}

/// Reads complete JSON lines from `conn` until EOF or until `want` arrived; sends the
/// row numbers back.
fn reader(conn: TcpStream, want: Option<usize>) -> mpsc::Receiver<Vec<i64>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut got = Vec::new();
        for line in BufReader::new(conn).lines() {
            let Ok(line) = line else { break };
            let v: serde_json::Value = serde_json::from_str(&line).expect("a whole JSON line");
            assert_eq!(v["query"], "q");
            got.push(v["n"].as_i64().unwrap());
            if Some(got.len()) == want {
                break;
            }
        }
        tx.send(got).unwrap();
    });
    rx
}

fn accept(l: &TcpListener) -> TcpStream {
    l.set_nonblocking(false).unwrap();
    l.accept().unwrap().0
}

#[test]
fn listener_that_drops_and_comes_back_loses_nothing_silently() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let mut sink = TcpSink::start(&TcpSinkSpec {
        connect: addr,
        buffer: 256 << 10,
    })
    .unwrap();
    let (mut lost, mut notes) = (0u64, Vec::new());
    fn take(sink: &mut TcpSink, lost: &mut u64, notes: &mut Vec<String>) {
        let (rows, note) = sink.take_lost();
        *lost += rows;
        notes.extend(note);
    }

    // Up: everything arrives.
    write(&mut sink, 0, 1000);
    let conn = accept(&listener);
    // The listener goes before the connection does: a sink that notices the close at once
    // must not find a listener to reconnect to (a connection into a closing listener's
    // backlog would be reset, and its rows counted lost instead of held).
    drop(listener);
    let first = reader(conn, Some(1000))
        .recv_timeout(Duration::from_secs(20))
        .unwrap();
    assert_eq!(first, (0..1000).collect::<Vec<_>>());
    take(&mut sink, &mut lost, &mut notes);
    assert_eq!(lost, 0);

    // Away: the connection and the listener close; a few rows fit the buffer, the flood
    // behind them does not.
    thread::sleep(Duration::from_millis(200));
    write(&mut sink, 1000, 200);
    thread::sleep(Duration::from_millis(200));
    write(&mut sink, 1200, 20_000);
    take(&mut sink, &mut lost, &mut notes);
    assert!(lost > 0, "the overflow is counted");
    assert!(notes.iter().any(|n| n.contains("buffer")), "{notes:?}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("lost") || n.contains("connect")),
        "{notes:?}"
    );

    // Back on the same port: the sink reconnects by itself and delivers what it held,
    // then what comes after.
    let listener = TcpListener::bind(addr).unwrap();
    let conn = accept(&listener);
    let second = reader(conn, None);
    write(&mut sink, 21_200, 500);
    sink.close().unwrap();
    take(&mut sink, &mut lost, &mut notes);
    let second = second.recv_timeout(Duration::from_secs(20)).unwrap();
    assert!(second.windows(2).all(|w| w[0] < w[1]), "in order");
    assert!(second.contains(&1000), "rows held in the buffer arrive");
    assert!(
        (21_200..21_700).all(|n| second.contains(&n)),
        "rows after the reconnect arrive"
    );
    let written = 21_700u64;
    assert_eq!(first.len() as u64 + second.len() as u64 + lost, written);
}

#[test]
fn close_gives_up_on_a_listener_that_never_comes_and_counts_everything() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut sink = TcpSink::start(&TcpSinkSpec {
        connect: addr,
        buffer: 1 << 20,
    })
    .unwrap();
    write(&mut sink, 0, 3000);
    // Returns after its grace (1 s) rather than waiting for a listener for ever.
    sink.close().unwrap();
    let (rows, note) = sink.take_lost();
    assert_eq!(rows, 3000);
    assert!(note.unwrap().contains("cannot connect"));
}

fn spillway() -> Command {
    Command::new(env!("CARGO_BIN_EXE_spillway"))
}

fn workload(dir: &std::path::Path, addr: SocketAddr) -> std::path::PathBuf {
    let path = dir.join("sink.yaml");
    std::fs::write(
        &path,
        format!(
            r#"name: tcp-sink
streams:
  s:
    schema: {{n: int}}
    source:
      generator: {{rate: 20000, count: 5000, fields: {{n: {{sequence: {{start: 0}}}}}}}}
queries:
  all:
    sql: SELECT n FROM s
    sink: {{tcp: {{connect: "{addr}"}}}}
"#
        ),
    )
    .unwrap();
    path
}

#[test]
fn run_delivers_every_row_to_a_tcp_sink_and_counts_them_when_nobody_listens() {
    let dir = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let w = workload(dir.path(), listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let conn = accept(&listener);
        let n = BufReader::new(conn).lines().map_while(Result::ok).count();
        tx.send(n).unwrap();
    });
    let out = spillway()
        .args(["run", "--quiet", "--duration", "60s"])
        .arg(&w)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(rx.recv_timeout(Duration::from_secs(20)).unwrap(), 5000);

    // Nobody listens: every row is undelivered, the run says so and exits 1.
    let gone = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let w = workload(dir.path(), gone);
    let out = spillway()
        .args(["run", "--quiet", "--duration", "60s"])
        .arg(&w)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("5000"), "{err}");
}
