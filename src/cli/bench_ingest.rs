//! `spillway bench`, ingest part: how fast lines become tuples. The line parser alone
//! (JSON lines and CSV, no sockets), then the TCP source end to end over loopback with 1
//! and 4 connections sending pre-built lines as fast as they can, until the engine has
//! ingested every line (4 connections on one parse thread, then on the default number);
//! reported in lines/s and MB/s.

use std::io::Write;
use std::net::TcpStream;

use super::Failure;
use super::outln;
use super::produce::{Format, encode};
use crate::core::batch::Batch;
use crate::core::schema::Nanos;
use crate::generator::StreamGenerator;
use crate::runtime::assemble::{Sinks, engine_for, shell_runtime};
use crate::runtime::clock::WallClock;
use crate::runtime::live::{LiveRun, run_live};
use crate::runtime::observe::{Observer, Observers, TickReport};
use crate::runtime::outputs::Outputs;
use crate::runtime::source::Source;
use crate::runtime::sources::parse::LineParser;
use crate::runtime::sources::tcp::TcpSource;
use crate::runtime::stop::{StopHandle, StopReason};
use crate::spec::{self, LineFormat, SourceKind, Workload};

const WORKLOAD: &str = r#"name: bench-ingest
engine: {batch_size: 1024, queue_capacity: 100000000, queue_memory: 64GiB}
streams:
  readings:
    schema: {sensor: int, temp: float, city: string, ts: timestamp}
    source: {tcp: {listen: "127.0.0.1:0", format: FORMAT, parse_threads: THREADS}}
queries:
  q:
    sql: SELECT sensor FROM readings WHERE temp > 1000.0
    sink: none
"#;

/// The default number of parse threads (the machine's cores, at most 4).
fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

fn workload(format: &str, threads: usize) -> Result<Workload, Failure> {
    let text = WORKLOAD
        .replace("FORMAT", format)
        .replace("THREADS", &threads.to_string());
    spec::parse(&text, "<bench-ingest>").map_err(|e| Failure::Other(anyhow::anyhow!("{e}")))
}

/// `lines` lines of the bench stream (sensor, temp, city, ts) in `format`.
fn payload(w: &Workload, lines: usize, format: Format) -> Vec<u8> {
    let s = &w.streams[0];
    let fields = vec![
        crate::generator::FieldGen::Zipf { n: 1000, s: 1.1 },
        crate::generator::FieldGen::Normal {
            mean: 20.0,
            stddev: 5.0,
        },
        crate::generator::FieldGen::Choice {
            values: vec!["oslo".into(), "rome".into(), "lima".into()],
            weights: None,
        },
        crate::generator::FieldGen::Now,
    ];
    let mut g = StreamGenerator::new(&s.schema, fields, 7);
    let mut out = Vec::with_capacity(lines * 64);
    let mut b = Batch::new(&s.schema.types(), 1024);
    let mut left = lines;
    while left > 0 {
        let n = left.min(1024);
        b.clear();
        g.fill(&mut b, n, 1_700_000_000_000_000_000, 1000);
        encode(&mut out, &b, &s.schema, format);
        left -= n;
    }
    out
}

fn line_report(what: &str, lines: u64, bytes: u64, ns: Nanos) {
    let secs = (ns as f64 / 1e9).max(1e-9);
    outln!(
        "{what:<58} {:>8.2} M lines/s {:>8.1} MB/s",
        lines as f64 / secs / 1e6,
        bytes as f64 / secs / 1e6
    );
}

/// Runs the ingest benchmarks on `lines` lines each.
pub fn bench_ingest(lines: u64) -> Result<(), Failure> {
    let lines = lines.clamp(1, 2_000_000) as usize;
    let clock = WallClock::start();
    for (format, label, lf) in [
        (Format::Jsonl, "jsonl", LineFormat::Jsonl),
        (Format::Csv, "csv", LineFormat::Csv),
    ] {
        let w = workload(label, default_threads())?;
        let bytes = payload(&w, lines, format);
        let mut parser = LineParser::new(&w.streams[0].schema, lf);
        let types = w.streams[0].schema.types();
        let mut batch = Batch::new(&types, 1024);
        let t0 = clock.since_start();
        let mut ok = 0u64;
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            if parser.parse_into(line, 0, &mut batch).is_ok() {
                ok += 1;
            }
            if batch.len() == 1024 {
                batch.clear();
            }
        }
        line_report(
            &format!("ingest: {label} line parser alone, 4 fields"),
            ok,
            bytes.len() as u64,
            clock.since_start() - t0,
        );
        // 4 connections on one parse thread: the yardstick for what more threads buy.
        let one = workload(label, 1)?;
        for (conns, w, threads) in [
            (1usize, &w, default_threads()),
            (4, &one, 1),
            (4, &w, default_threads()),
        ] {
            let ns = tcp_run(w, &bytes, lines as u64, conns)?;
            line_report(
                &format!("ingest: tcp {label}, {conns} connection(s), {threads} parse thread(s)"),
                lines as u64,
                bytes.len() as u64,
                ns,
            );
        }
    }
    Ok(())
}

/// Stops the run once `expected` tuples are ingested.
struct Until(StopHandle, u64);

impl Observer for Until {
    fn on_tick(&mut self, t: &TickReport<'_>) {
        if t.control.qos.engine.streams[0].ingested >= self.1 {
            self.0.request(StopReason::Requested);
        }
    }
}

/// Sends `bytes` (`lines` lines) over `conns` connections; the time until all are in.
fn tcp_run(w: &Workload, bytes: &[u8], lines: u64, conns: usize) -> Result<Nanos, Failure> {
    let SourceKind::Tcp(spec) = &w.streams[0].source.kind else {
        unreachable!("the bench stream is tcp")
    };
    let source = TcpSource::bind(&w.streams[0], spec)?;
    let addr = source.local_addr()?;
    // Split at line boundaries into `conns` parts.
    let mut parts = Vec::new();
    let mut start = 0;
    for k in 1..=conns {
        let mut end = bytes.len() * k / conns;
        while end < bytes.len() && bytes[end - 1] != b'\n' {
            end += 1;
        }
        parts.push(bytes[start..end].to_vec());
        start = end;
    }
    let senders: Vec<_> = parts
        .into_iter()
        .map(|p| {
            std::thread::spawn(move || {
                if let Ok(mut s) = TcpStream::connect(addr) {
                    let _ = s.write_all(&p);
                }
            })
        })
        .collect();
    let runtime = shell_runtime()?;
    let mut sinks = Sinks {
        sinks: Vec::new(),
        route: vec![None; w.queries.len()],
        files: Vec::new(),
    };
    let mut outputs = Outputs::new(&mut sinks, w.queries.len());
    let stop = StopHandle::new();
    let mut until = Until(stop.clone(), lines);
    let sources: Vec<Box<dyn Source>> = vec![Box::new(source)];
    let summary = run_live(
        LiveRun {
            policy_switch: None,
            workload: w,
            policy: spec::Policy::none(),
            sources,
            duration: Some(120_000_000_000),
            stop,
        },
        &runtime,
        engine_for(w).map_err(|e| anyhow::anyhow!(e))?,
        &mut outputs,
        &mut Observers::new(vec![&mut until]),
    );
    for s in senders {
        let _ = s.join();
    }
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    let got = summary.snapshot.streams[0].ingested;
    if got != lines {
        return Err(Failure::Other(anyhow::anyhow!(
            "ingest bench: {got} of {lines} lines ingested"
        )));
    }
    Ok(summary.elapsed)
}
