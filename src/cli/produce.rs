//! `spillway produce`: a load generator for TCP sources. It sends a file's lines, or a
//! workload stream's generated tuples as JSON lines or CSV, to an address at a rate over
//! one or more connections, and reports what it sent. Each connection is a thread of its
//! own with its share of the rate; lines are built into one reused buffer per write.

use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{Failure, load_workload};
use crate::core::batch::{Batch, Column};
use crate::core::schema::{Nanos, Schema};
use crate::generator::{FieldGen, StreamGenerator, mix_seed};
use crate::runtime::assemble::shell_runtime;
use crate::runtime::clock::WallClock;
use crate::runtime::signals::watch_signals;
use crate::runtime::status::rate as fmt_rate;
use crate::runtime::stop::StopHandle;
use crate::spec::parse_duration;

#[derive(Args, Debug)]
pub struct ProduceArgs {
    /// A file of lines (JSON lines or CSV without header) sent as they are. Leave it out
    /// and give --workload to send generated tuples instead.
    #[arg(required_unless_present = "workload", conflicts_with = "workload")]
    pub file: Option<PathBuf>,
    /// Where to send: the `listen` address of a workload's tcp source.
    #[arg(long, default_value = "127.0.0.1:7070")]
    pub to: String,
    /// Lines per second over all connections, or `unlimited` (as fast as the socket
    /// takes them).
    #[arg(long, default_value = "unlimited", value_parser = parse_rate)]
    pub rate: Rate,
    /// Connections to open; each sends its share of the lines and of the rate.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub connections: u64,
    /// Generate the tuples of a stream of this workload (its generator if it has one,
    /// otherwise each field's default distribution).
    #[arg(long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
    /// With --workload: the stream to generate (default: the first).
    #[arg(long, requires = "workload")]
    pub stream: Option<String>,
    /// With --workload: how to encode tuples (timestamps as nanoseconds since the epoch).
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    pub format: Format,
    /// Stop after this many lines in all (default: the file once, or endless).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Send the file again from the start after its last line.
    #[arg(long = "loop", requires = "file")]
    pub repeat: bool,
    /// Keep trying to connect for this long, so the consumer may start later.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub connect_timeout: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Jsonl,
    Csv,
}

/// Lines per second, `None` for unlimited.
#[derive(Clone, Copy, Debug)]
pub struct Rate(Option<f64>);

fn parse_rate(s: &str) -> Result<Rate, String> {
    if s == "unlimited" {
        return Ok(Rate(None));
    }
    match s.parse::<f64>() {
        Ok(r) if r > 0.0 && r.is_finite() => Ok(Rate(Some(r))),
        _ => Err(format!(
            "`{s}` is not a rate: give lines per second (e.g. 50000) or `unlimited`"
        )),
    }
}

/// Where one connection's lines come from.
enum Lines {
    /// The file's bytes and the ranges of its lines (newline excluded).
    File {
        bytes: Arc<[u8]>,
        lines: Arc<[(usize, usize)]>,
    },
    Generated {
        schema: Schema,
        fields: Vec<FieldGen>,
        seed: u64,
        format: Format,
    },
}

/// Lines per write.
const CHUNK: u64 = 1024;

pub fn produce(args: ProduceArgs) -> Result<ExitCode, Failure> {
    let addr: SocketAddr = args
        .to
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| Failure::BadInput(format!("--to `{}` is not an address", args.to)))?;
    let (source, total) = match (&args.file, &args.workload) {
        (Some(f), _) => {
            let bytes: Arc<[u8]> = std::fs::read(f)
                .map_err(|e| Failure::BadInput(format!("{}: {e}", f.display())))?
                .into();
            let lines = line_ranges(&bytes);
            let once = lines.len() as u64;
            let total = match (args.count, args.repeat) {
                (Some(c), _) => Some(c),
                (None, true) => None,
                (None, false) => Some(once),
            };
            if once == 0 {
                return Err(Failure::BadInput(format!("{}: no lines", f.display())));
            }
            (
                Lines::File {
                    bytes,
                    lines: lines.into(),
                },
                total,
            )
        }
        (None, Some(w)) => {
            let wl = load_workload(w)?;
            let s = match &args.stream {
                Some(name) => wl.stream(name).ok_or_else(|| {
                    Failure::BadInput(format!("{}: no stream `{name}`", w.display()))
                })?,
                None => &wl.streams[0],
            };
            let (fields, seed) = match s.generator() {
                Some(g) => (g.fields.clone(), g.seed),
                None => (Vec::new(), mix_seed(wl.seed, 0)),
            };
            let source = Lines::Generated {
                schema: s.schema.clone(),
                fields,
                seed,
                format: args.format,
            };
            (source, args.count.or(s.generator().and_then(|g| g.count)))
        }
        (None, None) => unreachable!("clap requires a file or --workload"),
    };
    let source = Arc::new(source);
    let runtime = shell_runtime()?;
    let stop = StopHandle::new();
    watch_signals(&runtime, stop.clone());
    let clock = WallClock::start();
    let n = args.connections;
    let per_conn_rate = args.rate.0.map(|r| r / n as f64);
    let mut threads = Vec::new();
    for k in 0..n {
        let share = total.map(|t| t / n + u64::from(k < t % n));
        let (source, stop) = (source.clone(), stop.clone());
        let timeout = args.connect_timeout;
        threads.push(std::thread::spawn(move || {
            let mut conn = connect(addr, timeout, &clock, &stop)?;
            send(
                &mut conn,
                &source,
                k,
                n,
                share,
                per_conn_rate,
                &clock,
                &stop,
            )
        }));
    }
    let (mut lines, mut bytes, mut failures) = (0u64, 0u64, Vec::new());
    for (k, t) in threads.into_iter().enumerate() {
        match t.join() {
            Ok(Ok((l, b))) => {
                lines += l;
                bytes += b;
            }
            Ok(Err(e)) => failures.push(format!("connection {}: {e}", k + 1)),
            Err(_) => failures.push(format!("connection {}: panicked", k + 1)),
        }
    }
    let secs = (clock.since_start() as f64 / 1e9).max(1e-9);
    eprintln!(
        "produce: sent {lines} lines ({:.1} MB) to {addr} over {n} connection(s) in {secs:.2} s: \
         {} lines/s, {:.1} MB/s",
        bytes as f64 / 1e6,
        fmt_rate(lines as f64 / secs),
        bytes as f64 / 1e6 / secs
    );
    runtime.shutdown_timeout(Duration::from_millis(100));
    if failures.is_empty() {
        // Stopped by a signal: the shell's exit code for it, as `run` does.
        Ok(match stop.reason() {
            Some(r) if r != crate::runtime::stop::StopReason::Requested => {
                ExitCode::from(r.exit_code())
            }
            _ => ExitCode::SUCCESS,
        })
    } else {
        Err(Failure::Other(anyhow::anyhow!("{}", failures.join("; "))))
    }
}

/// The byte ranges of the lines of `bytes` (a last line without newline included).
fn line_ranges(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for nl in memchr::memchr_iter(b'\n', bytes) {
        let end = if nl > start && bytes[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        if end > start {
            out.push((start, end));
        }
        start = nl + 1;
    }
    if start < bytes.len() {
        out.push((start, bytes.len()));
    }
    out
}

/// Connects, retrying every 50 ms for `timeout` ns.
fn connect(
    addr: SocketAddr,
    timeout: Nanos,
    clock: &WallClock,
    stop: &StopHandle,
) -> Result<TcpStream, String> {
    let deadline = clock.since_start() + timeout;
    loop {
        match TcpStream::connect(addr) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e) if clock.since_start() >= deadline || stop.is_stopping() => {
                return Err(format!("cannot connect to {addr}: {e}"));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Sends connection `k`'s lines (every `n`-th, `share` of them) at `rate` lines/s;
/// returns lines and bytes sent.
#[allow(clippy::too_many_arguments)]
fn send(
    conn: &mut TcpStream,
    source: &Lines,
    k: u64,
    n: u64,
    share: Option<u64>,
    rate: Option<f64>,
    clock: &WallClock,
    stop: &StopHandle,
) -> Result<(u64, u64), String> {
    let limit = share.unwrap_or(u64::MAX);
    let start = clock.since_start();
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    let (mut sent, mut bytes) = (0u64, 0u64);
    let mut gen_state = match source {
        Lines::Generated {
            schema,
            fields,
            seed,
            ..
        } => Some((
            StreamGenerator::new(schema, fields.clone(), mix_seed(*seed, k)),
            Batch::new(&schema.types(), CHUNK as usize),
        )),
        Lines::File { .. } => None,
    };
    while sent < limit && !stop.is_stopping() {
        let due = match rate {
            Some(r) => ((clock.since_start() - start) as f64 / 1e9 * r) as u64,
            None => sent + CHUNK,
        }
        .min(limit)
        .min(sent + CHUNK);
        if due <= sent {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        buf.clear();
        let m = (due - sent) as usize;
        match (source, &mut gen_state) {
            (Lines::File { bytes, lines }, _) => {
                for i in sent..due {
                    let (a, b) = lines[((i * n + k) % lines.len() as u64) as usize];
                    buf.extend_from_slice(&bytes[a..b]);
                    buf.push(b'\n');
                }
            }
            (Lines::Generated { schema, format, .. }, Some((g, batch))) => {
                batch.clear();
                g.fill(batch, m, clock.now(), 0);
                encode(&mut buf, batch, schema, *format);
            }
            (Lines::Generated { .. }, None) => unreachable!("generator state is made above"),
        }
        conn.write_all(&buf)
            .map_err(|e| format!("closed by {} after {sent} lines: {e}", peer(conn)))?;
        sent = due;
        bytes += buf.len() as u64;
    }
    Ok((sent, bytes))
}

fn peer(conn: &TcpStream) -> String {
    conn.peer_addr()
        .map_or("the peer".into(), |a| a.to_string())
}

/// Appends `batch`'s rows to `buf` as lines.
pub fn encode(buf: &mut Vec<u8>, batch: &Batch, schema: &Schema, format: Format) {
    let names: Vec<String> = schema
        .fields
        .iter()
        .map(|f| serde_json::to_string(&f.name).unwrap_or_default())
        .collect();
    for row in 0..batch.len() {
        if format == Format::Jsonl {
            buf.push(b'{');
        }
        for (i, col) in batch.columns.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            if format == Format::Jsonl {
                buf.extend_from_slice(names[i].as_bytes());
                buf.push(b':');
            }
            let _ = match col {
                Column::Int(v) => write!(buf, "{}", v[row]),
                Column::Float(v) if v[row].is_finite() => write!(buf, "{:?}", v[row]),
                Column::Float(_) => write!(buf, "0.0"),
                Column::Bool(v) => write!(buf, "{}", v[row]),
                Column::Str(v) if format == Format::Jsonl => {
                    serde_json::to_writer(&mut *buf, &*v[row]).map_err(std::io::Error::other)
                }
                Column::Str(v) if needs_quotes(&v[row]) => {
                    write!(buf, "\"{}\"", v[row].replace('"', "\"\""))
                }
                Column::Str(v) => write!(buf, "{}", v[row]),
            };
        }
        if format == Format::Jsonl {
            buf.push(b'}');
        }
        buf.push(b'\n');
    }
}

fn needs_quotes(s: &str) -> bool {
    s.bytes().any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r'))
}
