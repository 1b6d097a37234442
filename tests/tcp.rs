//! The TCP source on loopback: many connections with malformed lines of every kind are
//! counted exactly and the ledger holds to every query; a silent connection does not hold
//! back arrival-time windows; connections beyond the limit are refused and reported.
//!
//! Runs stop when an observer has seen every line accounted for (not after a sleep), so
//! the assertions are exact whatever the machine's speed.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};

use spillway::core::stats::EngineSnapshot;
use spillway::runtime::assemble::{Sinks, engine_for, shell_runtime};
use spillway::runtime::live::{LiveRun, run_live};
use spillway::runtime::observe::{Event, Observer, Observers, RunSummary, TickReport};
use spillway::runtime::outputs::Outputs;
use spillway::runtime::source::Source;
use spillway::runtime::sources::tcp::TcpSource;
use spillway::runtime::stop::{StopHandle, StopReason};
use spillway::spec::{self, Policy, SourceKind, Workload};

fn workload(max_connections: usize, queue: usize) -> Workload {
    let text = format!(
        r#"
name: tcp-test
duration: 120s
engine: {{batch_size: 256, queue_capacity: {queue}}}
streams:
  readings:
    schema: {{sensor: int, temp: float, city: string, ts: timestamp}}
    source:
      tcp: {{listen: "127.0.0.1:0", max_line: 200, max_connections: {max_connections}}}
      # Idleness cannot be what lets windows close here.
      idle_timeout: 1h
queries:
  all:
    sql: SELECT sensor, temp, city FROM readings
    sink: none
  warm:
    sql: SELECT sensor, temp FROM readings WHERE temp > 50
    sink: none
  windows:
    sql: |
      SELECT city, COUNT(*) AS n FROM readings
      GROUP BY city, TUMBLE(PROCTIME(), INTERVAL '50' MILLISECOND)
    sink: none
"#
    );
    spec::parse(&text, "tcp-test.yaml").unwrap_or_else(|e| panic!("{e}"))
}

/// Stops the run once `expected` inputs are ingested or malformed (and, if asked, a window
/// has closed while the run was still going); remembers events.
struct Until {
    stop: StopHandle,
    expected: u64,
    need_window: bool,
    windows_before_stop: u64,
    events: Vec<Event>,
}

fn accounted(s: &EngineSnapshot) -> u64 {
    s.streams
        .iter()
        .map(|st| st.ingested + st.dropped.iter().sum::<u64>())
        .sum()
}

impl Observer for Until {
    fn on_tick(&mut self, t: &TickReport<'_>) {
        let e = &t.control.qos.engine;
        if t.last || self.stop.is_stopping() {
            return;
        }
        self.windows_before_stop = e.queries[2].results;
        if accounted(e) >= self.expected && (!self.need_window || e.queries[2].results > 0) {
            self.stop.request(StopReason::Requested);
        }
    }
    fn on_event(&mut self, e: &Event) {
        if !matches!(e, Event::RunEnded(_)) {
            self.events.push(e.clone());
        }
    }
}

/// Runs `w` with `source` until `until` stops it.
fn run(w: &Workload, source: TcpSource, until: &mut Until) -> RunSummary {
    let runtime = shell_runtime().unwrap();
    let mut sinks = Sinks {
        sinks: Vec::new(),
        route: vec![None; w.queries.len()],
        files: Vec::new(),
    };
    let mut outputs = Outputs::new(&mut sinks, w.queries.len());
    let stop = until.stop.clone();
    let mut observers = Observers::new(vec![until]);
    let sources: Vec<Box<dyn Source>> = vec![Box::new(source)];
    let summary = run_live(
        LiveRun {
            policy_switch: None,
            workload: w,
            policy: Policy::none(),
            sources,
            duration: None,
            stop,
        },
        &runtime,
        engine_for(w).unwrap(),
        &mut outputs,
        &mut observers,
    );
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    summary
}

fn bind(w: &Workload) -> (TcpSource, SocketAddr) {
    let SourceKind::Tcp(spec) = &w.streams[0].source.kind else {
        panic!("tcp stream expected")
    };
    let src = TcpSource::bind(&w.streams[0], spec).unwrap();
    let addr = src.local_addr().unwrap();
    (src, addr)
}

/// Line `i` of connection `c`: every 100th is malformed, cycling through the kinds.
fn line(c: usize, i: usize) -> (Vec<u8>, bool) {
    let good = format!(
        r#"{{"sensor":{},"temp":{}.5,"city":"c{}","ts":{}}}"#,
        c * 100_000 + i,
        i % 100,
        i % 7,
        1_700_000_000_000_000_000u64 + i as u64
    );
    if i % 100 != 99 {
        return (good.into_bytes(), true);
    }
    let bad: Vec<u8> = match (i / 100) % 7 {
        0 => br#"{"sensor":1,"temp":2.0,"city":"x","ts":3"#.to_vec(), // bad JSON
        1 => br#"{"sensor":1,"city":"x","ts":3}"#.to_vec(),           // missing field
        2 => br#"{"sensor":"one","temp":2.0,"city":"x","ts":3}"#.to_vec(), // mistyped
        3 => format!(
            r#"{{"sensor":1,"temp":2.0,"city":"{}","ts":3}}"#,
            "y".repeat(300)
        )
        .into_bytes(), // over-long
        4 => b"{\"sensor\":1,\"temp\":2.0,\"city\":\"\xff\xfe\",\"ts\":3}".to_vec(), // bad UTF-8
        5 => br#"{"sensor":1,"sensor":1,"temp":2.0,"city":"x","ts":3}"#.to_vec(), // duplicate
        _ => br#"{"sensor":1.5,"temp":2.0,"city":"x","ts":3}"#.to_vec(), // float for int
    };
    (bad, false)
}

#[test]
fn many_connections_with_malformed_lines_are_counted_exactly_and_the_ledger_holds() {
    const CONNS: usize = 4;
    const LINES: usize = 25_000;
    let w = workload(16, 10_000_000);
    let (source, addr) = bind(&w);
    // A connection that sends nothing and stays open all run long.
    let silent = TcpStream::connect(addr).unwrap();
    let mut good = 0u64;
    let mut bad = 0u64;
    let mut payloads = Vec::new();
    for c in 0..CONNS {
        let mut buf = Vec::new();
        for i in 0..LINES {
            let (l, ok) = line(c, i);
            buf.extend_from_slice(&l);
            buf.push(b'\n');
            if ok { good += 1 } else { bad += 1 }
        }
        if c == 0 {
            // Closed mid-line: counted as one malformed input.
            buf.extend_from_slice(br#"{"sensor":7,"te"#);
            bad += 1;
        }
        payloads.push(buf);
    }
    assert_eq!(bad, (CONNS * LINES / 100) as u64 + 1);
    let senders: Vec<_> = payloads
        .into_iter()
        .map(|buf| {
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                // Odd-sized writes split lines across reads.
                for chunk in buf.chunks(4093) {
                    s.write_all(chunk).unwrap();
                }
            })
        })
        .collect();
    let mut until = Until {
        stop: StopHandle::new(),
        expected: good + bad,
        need_window: true,
        windows_before_stop: 0,
        events: Vec::new(),
    };
    let summary = {
        let handle = std::thread::spawn(move || {
            for s in senders {
                s.join().unwrap();
            }
        });
        let summary = run(&w, source, &mut until);
        handle.join().unwrap();
        summary
    };
    drop(silent);
    assert_eq!(
        summary.stopped,
        Some(StopReason::Requested),
        "stopped by the observer"
    );
    let snap = &summary.snapshot;
    let st = &snap.streams[0];
    let malformed = st.dropped[spillway::core::drop::DropReason::Malformed.index()];
    assert_eq!(st.ingested, good, "every good line is ingested");
    assert_eq!(malformed, bad, "every bad line is counted as malformed");
    assert_eq!(st.ingested + malformed, (CONNS * LINES) as u64 + 1);
    for q in &snap.queries {
        assert!(q.balances(), "ledger of {}: {q:?}", q.name);
        assert_eq!(q.offered, good, "{} sees every good tuple", q.name);
    }
    assert_eq!(snap.queries[0].processed, good);
    // Good lines with i % 100 in 50..=98 have temp > 50.
    let warm = (CONNS * (LINES / 100) * 49) as u64;
    assert_eq!(snap.queries[1].results, warm);
    assert_eq!(summary.ledger_violations, 0);
    // The silent connection did not hold arrival-time windows back.
    assert!(
        until.windows_before_stop > 0,
        "windows closed during the run"
    );
    // Samples name the connection, the line and the reason; they are rate-limited.
    let samples: Vec<&String> = until
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Malformed { sample, count, .. } if *count > 0 => Some(sample),
            _ => None,
        })
        .collect();
    assert!(!samples.is_empty());
    assert!(
        samples.len() < 200,
        "{} samples: not rate-limited",
        samples.len()
    );
    assert!(
        samples
            .iter()
            .all(|s| s.starts_with("connection ") && s.contains(" line ")),
        "{samples:?}"
    );
}

#[test]
fn connections_beyond_the_limit_are_refused_and_reported_and_the_rest_go_on() {
    let w = workload(2, 1_000_000);
    let (source, addr) = bind(&w);
    let mut a = TcpStream::connect(addr).unwrap();
    let b = TcpStream::connect(addr).unwrap();
    let client = std::thread::spawn(move || {
        a.write_all(b"{\"sensor\":1,\"temp\":1.0,\"city\":\"a\",\"ts\":1}\n")
            .unwrap();
        // Accepted in order: `a` and `b` hold both slots, so the third is refused.
        let third = TcpStream::connect(addr).unwrap();
        let mut reply = String::new();
        BufReader::new(third).read_line(&mut reply).unwrap();
        assert!(reply.contains("refused"), "{reply}");
        // A slot frees once `b`'s close is seen: retry until a connection is served
        // (served connections get no reply; refused ones get a line and EOF).
        drop(b);
        let mut fourth = loop {
            let c = TcpStream::connect(addr).unwrap();
            c.set_read_timeout(Some(std::time::Duration::from_millis(200)))
                .unwrap();
            let mut reply = String::new();
            match BufReader::new(&c).read_line(&mut reply) {
                Ok(n) if n > 0 => assert!(reply.contains("refused"), "{reply}"),
                _ => break c,
            }
        };
        for i in 0..10 {
            writeln!(fourth, "{i},2.5,x,{i}").unwrap();
            writeln!(fourth, r#"{{"sensor":{i},"temp":2.5,"city":"x","ts":{i}}}"#).unwrap();
        }
        a
    });
    let mut until = Until {
        stop: StopHandle::new(),
        // 1 + 10 JSON lines; the 10 CSV lines on a JSON source are malformed.
        expected: 21,
        need_window: false,
        windows_before_stop: 0,
        events: Vec::new(),
    };
    let summary = run(&w, source, &mut until);
    let _a = client.join().unwrap();
    let st = &summary.snapshot.streams[0];
    assert_eq!(st.ingested, 11);
    assert_eq!(
        st.dropped[spillway::core::drop::DropReason::Malformed.index()],
        10
    );
    assert!(
        until.events.iter().any(|e| matches!(e,
            Event::Malformed { count: 0, sample, .. } if sample.contains("refused"))),
        "{:?}",
        until.events
    );
}
