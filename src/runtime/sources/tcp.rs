//! The TCP source: a listener whose connections each send one tuple per line. Every
//! connection runs in its own task (a slow or silent one stalls no other) and parses into
//! its own reused batch, on a runtime of `parse_threads` threads of the source's own, so
//! several connections parse in parallel; one forwarding task hands batches to the engine,
//! merges malformed counts into one sampled report per `SAMPLE_EVERY`, and owns the
//! frontier.
//!
//! Sample invariant: a connection stores a sample message in the shared slot before any
//! malformed count that did not store one can leave a connection, so every report of a
//! count carries a message (this report's sample, or the last one), never an empty one.
//!
//! Frontier invariant: the forwarder never sends a stamp below the highest stamp or
//! frontier it has already sent (it raises earlier stamps to that floor), so it may move
//! the frontier to `now` whenever it has nothing queued. It does so every `FRONTIER_TICK`,
//! so a listener with no input, or a connection that sends nothing, never holds back
//! arrival-time windows and no idle timeout is needed. A connection stamps its lines when
//! it reads them and sends a partial batch as soon as its socket has nothing more, so the
//! raise is at most a few milliseconds.

use std::io;
use std::mem;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::lines::{Line, LineBuffer};
use super::parse::{LineError, LineParser, ShowError};
use crate::core::batch::Batch;
use crate::core::schema::{Nanos, Schema};
use crate::runtime::source::{Source, SourceContext};
use crate::spec::{LineFormat, StreamSpec, TcpSpec};

/// How often the forwarder moves the frontier and connections re-check for a stop.
const FRONTIER_TICK: Duration = Duration::from_millis(10);
/// At most one malformed report (with one sample message) per this interval.
const SAMPLE_EVERY: Nanos = 100_000_000;
/// Messages the connections may have queued for the forwarder before they wait.
const CHANNEL: usize = 64;

/// What a connection tells the forwarder.
enum Msg {
    Batch(Batch),
    Malformed(u64),
}

/// A bound listener, ready to run as a stream's source.
pub struct TcpSource {
    listener: std::net::TcpListener,
    spec: TcpSpec,
    schema: Schema,
}

impl TcpSource {
    /// Binds `spec.listen` now, so a bad or busy address fails before the run starts.
    pub fn bind(stream: &StreamSpec, spec: &TcpSpec) -> io::Result<TcpSource> {
        let listener = std::net::TcpListener::bind(spec.listen).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "stream `{}`: cannot listen on {}: {e}",
                    stream.name, spec.listen
                ),
            )
        })?;
        listener.set_nonblocking(true)?;
        Ok(TcpSource {
            listener,
            spec: spec.clone(),
            schema: stream.schema.clone(),
        })
    }

    /// The address it listens on (the real port when the spec asked for port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

impl Source for TcpSource {
    fn kind(&self) -> &'static str {
        "tcp"
    }

    fn run(self: Box<Self>, ctx: SourceContext) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(self.listen(ctx))
    }
}

/// What the forwarder and the connections share.
struct Shared {
    ctx: SourceContext,
    schema: Schema,
    format: LineFormat,
    max_line: usize,
    /// The next malformed line may format a sample message (set once per report). Cleared
    /// only after the message is in `sample`, under its lock.
    sample_wanted: AtomicBool,
    /// The sample message of this report, taken by the forwarder when it reports.
    sample: Mutex<Option<String>>,
    active: AtomicUsize,
}

/// The forwarder's malformed and refused-connection tallies since its last report.
#[derive(Default)]
struct Pending {
    malformed: u64,
    last_sample: String,
    refused: u64,
    refused_last: Option<SocketAddr>,
}

impl TcpSource {
    async fn listen(self, ctx: SourceContext) {
        let TcpSource {
            listener,
            spec,
            schema,
        } = self;
        let listener = match TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => {
                let _ = ctx.malformed(0, format!("cannot listen: {e}")).await;
                return;
            }
        };
        let threads = spec
            .parse_threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(4)));
        let parse = match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("spillway-parse")
            .enable_all()
            .build()
        {
            Ok(rt) => ParseRuntime(Some(rt)),
            Err(e) => {
                let _ = ctx
                    .malformed(0, format!("cannot start parse threads: {e}"))
                    .await;
                return;
            }
        };
        let shared = Arc::new(Shared {
            ctx,
            schema,
            format: spec.format,
            max_line: spec.max_line,
            sample_wanted: AtomicBool::new(true),
            sample: Mutex::new(None),
            active: AtomicUsize::new(0),
        });
        let ctx = &shared.ctx;
        let (tx, mut rx) = mpsc::channel::<Msg>(CHANNEL);
        let mut tick = tokio::time::interval(FRONTIER_TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut floor: Nanos = 0;
        let mut pending = Pending::default();
        let mut next_report = ctx.clock.now() + SAMPLE_EVERY;
        let mut next_id: u64 = 0;
        loop {
            tokio::select! {
                Some(msg) = rx.recv() => {
                    if forward(ctx, msg, &mut floor, &mut pending).await.is_err() {
                        return;
                    }
                }
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        next_id += 1;
                        if shared.active.load(Ordering::Acquire) >= spec.max_connections {
                            let _ = stream.try_write(
                                format!(
                                    "spillway: refused: {} connections open (max_connections)\n",
                                    spec.max_connections
                                )
                                .as_bytes(),
                            );
                            pending.refused += 1;
                            pending.refused_last = Some(peer);
                        } else {
                            shared.active.fetch_add(1, Ordering::AcqRel);
                            // Registered anew with the parse runtime's reactor there.
                            if let Ok(stream) = stream.into_std() {
                                let (sh, tx, id) = (shared.clone(), tx.clone(), next_id);
                                parse.spawn(async move {
                                    let _slot = Slot(sh.clone());
                                    if let Ok(stream) = TcpStream::from_std(stream) {
                                        serve(sh, id, peer, stream, tx).await;
                                    }
                                });
                            } else {
                                shared.active.fetch_sub(1, Ordering::AcqRel);
                            }
                        }
                    }
                    // Out of descriptors and the like: back off, keep serving the others.
                    Err(_) => tokio::time::sleep(FRONTIER_TICK).await,
                },
                _ = tick.tick() => {
                    if ctx.stopped() {
                        break;
                    }
                    let now = ctx.clock.now();
                    if rx.is_empty() {
                        floor = floor.max(now);
                        ctx.advance(floor);
                    }
                    if now >= next_report {
                        next_report = now + SAMPLE_EVERY;
                        if report(&shared, &mut pending, spec.max_connections).await.is_err() {
                            return;
                        }
                    }
                }
            }
        }
        // Stopping: what the connections already handed over still goes in.
        while let Ok(msg) = rx.try_recv() {
            if forward(ctx, msg, &mut floor, &mut pending).await.is_err() {
                return;
            }
        }
        let _ = report(&shared, &mut pending, spec.max_connections).await;
    }
}

/// The connections' runtime. Dropped (on any return of the forwarder) without waiting:
/// connections see the stop within `FRONTIER_TICK`, and a runtime may not block while
/// being dropped inside another.
struct ParseRuntime(Option<tokio::runtime::Runtime>);

impl ParseRuntime {
    fn spawn(&self, f: impl Future<Output = ()> + Send + 'static) {
        if let Some(rt) = &self.0 {
            rt.spawn(f);
        }
    }
}

impl Drop for ParseRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// Hands one connection message on: a batch to the engine (stamps raised to the floor),
/// malformed counts to the tally.
async fn forward(
    ctx: &SourceContext,
    msg: Msg,
    floor: &mut Nanos,
    pending: &mut Pending,
) -> Result<(), crate::runtime::source::Closed> {
    match msg {
        Msg::Batch(mut b) => {
            for a in &mut b.arrival {
                *a = (*a).max(*floor);
            }
            if let Some(&last) = b.arrival.last() {
                *floor = last;
            }
            ctx.send(b).await
        }
        Msg::Malformed(count) => {
            pending.malformed += count;
            Ok(())
        }
    }
}

/// Sends the malformed count and refused connections since the last report, if any.
async fn report(
    shared: &Shared,
    p: &mut Pending,
    max_connections: usize,
) -> Result<(), crate::runtime::source::Closed> {
    if p.malformed > 0 {
        let taken = shared
            .sample
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(s) = taken {
            p.last_sample = s;
        }
        shared
            .ctx
            .malformed(mem::take(&mut p.malformed), p.last_sample.clone())
            .await?;
    }
    if p.refused > 0 {
        let msg = format!(
            "{} connection(s) refused, the last from {}: {max_connections} open already \
             (max_connections)",
            p.refused,
            p.refused_last.map_or("?".into(), |a| a.to_string())
        );
        p.refused = 0;
        shared.ctx.malformed(0, msg).await?;
    }
    shared.sample_wanted.store(true, Ordering::Release);
    Ok(())
}

/// One connection's malformed lines since it last sent them on.
struct Bad {
    count: u64,
}

impl Bad {
    /// Counts a malformed line, and stores its message as the report's sample if none is
    /// wanted yet. The flag is cleared only once the message is stored: a line that sees
    /// it cleared was preceded by a stored sample, so the forwarder never receives a count
    /// before any sample exists (connections race each other to the forwarder).
    fn add(&mut self, s: &Shared, id: u64, peer: SocketAddr, line: u64, e: &LineError) {
        self.count += 1;
        if s.sample_wanted.load(Ordering::Acquire) {
            let mut slot = s.sample.lock().unwrap_or_else(PoisonError::into_inner);
            if s.sample_wanted.load(Ordering::Acquire) {
                *slot = Some(format!(
                    "connection {id} ({peer}) line {line}: {}",
                    ShowError(e, &s.schema)
                ));
                s.sample_wanted.store(false, Ordering::Release);
            }
        }
    }
}

/// Gives the connection slot back when the connection ends, however it ends.
struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Reads one connection until it closes or the run stops.
async fn serve(
    shared: Arc<Shared>,
    id: u64,
    peer: SocketAddr,
    stream: TcpStream,
    tx: mpsc::Sender<Msg>,
) {
    let s = &*shared;
    let types = s.schema.types();
    let batch_size = s.ctx.batch_size;
    let mut lines = LineBuffer::new(s.max_line);
    let mut parser = LineParser::new(&s.schema, s.format);
    let mut batch = Batch::new(&types, batch_size);
    let mut bad = Bad { count: 0 };
    loop {
        if s.ctx.stopped() {
            return;
        }
        let read = stream.try_read(lines.space());
        let n = match read {
            Ok(n) if n > 0 => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                // Nothing more for now: what is parsed goes on at once.
                if flush(&tx, &mut batch, &types, &mut bad).await.is_err() {
                    return;
                }
                let _ = tokio::time::timeout(FRONTIER_TICK, stream.readable()).await;
                continue;
            }
            // Closed (or reset): a line without its newline is malformed.
            _ => {
                if lines.finish() {
                    bad.add(s, id, peer, lines.line_no, &LineError::Unterminated);
                }
                let _ = flush(&tx, &mut batch, &types, &mut bad).await;
                return;
            }
        };
        lines.filled(n);
        let t = s.ctx.clock.now();
        while let Some((no, line)) = lines.next_line() {
            let r = match line {
                Line::Text([]) => continue,
                Line::Text(l) => parser.parse_into(l, t, &mut batch),
                Line::TooLong => Err(LineError::TooLong(s.max_line)),
            };
            if let Err(e) = r {
                bad.add(s, id, peer, no, &e);
            }
            if batch.len() >= batch_size {
                let full = mem::replace(&mut batch, Batch::new(&types, batch_size));
                if tx.send(Msg::Batch(full)).await.is_err() {
                    return;
                }
            }
        }
        // Share the runtime with the other connections between reads.
        tokio::task::yield_now().await;
    }
}

/// Sends the partial batch and the malformed count, if any.
async fn flush(
    tx: &mpsc::Sender<Msg>,
    batch: &mut Batch,
    types: &[crate::core::schema::DataType],
    bad: &mut Bad,
) -> Result<(), ()> {
    if !batch.is_empty() {
        let b = mem::replace(batch, Batch::new(types, batch.arrival.capacity().max(1)));
        tx.send(Msg::Batch(b)).await.map_err(|_| ())?;
    }
    if bad.count > 0 {
        let msg = Msg::Malformed(mem::take(&mut bad.count));
        tx.send(msg).await.map_err(|_| ())?;
    }
    Ok(())
}
