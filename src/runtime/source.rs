//! Sources of a live run: a `Source` produces one stream's tuples on the tokio runtime and
//! talks to the engine only through its `SourceContext`: batches and malformed-input
//! reports go over its own bounded channel, and its frontier says below which arrival
//! time it will send nothing more. The generator is one kind of source; sockets and file
//! replays plug in the same way without touching the driver or the engine.
//!
//! Flow control: the engine thread drains a `push` source whenever it can (overflow is
//! shed or counted as queue-full in the engine's queues), and a `pull` source only while
//! every query reading its stream has room, so a pull source's channel fills and `send`
//! waits: nothing is lost and memory stays bounded. A pull batch is stamped when the
//! engine takes it, so its latency counts from then, not from when it was made.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, TrySendError};

use super::clock::WallClock;
use super::controls::RateScale;
use super::frontier::SourceFrontier;
use super::source_shed::{SourceShed, StreamKeep};
use crate::core::batch::Batch;
use crate::core::engine::PreShed;
use crate::core::schema::Nanos;
use crate::generator::StreamGenerator;
use crate::spec::{Flow, GeneratorSpec, SourceKind, StreamSpec};

/// Batches a source may have in flight before `send` waits.
const CHANNEL_BATCHES: usize = 64;
/// How long a source waits before retrying a full channel.
const RETRY: Duration = Duration::from_micros(200);
/// How often a paced generator wakes up to produce what is due.
const GENERATOR_TICK: Duration = Duration::from_millis(1);
/// Batches a generator produces before it yields (keeps stops prompt at any rate).
const BURST: usize = 64;

/// What a source sends the engine thread.
pub enum SourceMsg {
    Batch(Batch),
    /// A batch its source cut by the stream's keep (`source_shed`).
    Shed(PreShed),
    /// `count` inputs could not be parsed; `sample` says why one of them failed.
    Malformed {
        count: u64,
        sample: String,
    },
}

/// The channel ended: the run is over; the source should return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

/// One stream's producer.
pub trait Source: Send + 'static {
    /// `generator`, `tcp`, `replay`: shown at run start.
    fn kind(&self) -> &'static str;
    /// Produces until the input ends or `ctx.stopped()`; returning ends the stream.
    fn run(self: Box<Self>, ctx: SourceContext) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// A source's side of its link to the engine.
pub struct SourceContext {
    pub stream: usize,
    pub flow: Flow,
    pub batch_size: usize,
    pub clock: WallClock,
    tx: Sender<SourceMsg>,
    frontier: Arc<SourceFrontier>,
    stop: Arc<AtomicBool>,
    /// The stream drop point's share of a push source (none for pull: it waits).
    shed: Option<SourceShed>,
}

impl SourceContext {
    /// Whether the run asked sources to stop.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Hands a batch to the engine, waiting while its channel is full. A batch's tuples
    /// must not be stamped before the frontier this source last advanced to.
    pub async fn send(&self, batch: Batch) -> Result<(), Closed> {
        let stamp = batch.arrival.first().copied();
        let mut msg = match &self.shed {
            Some(shed) => match shed.cut(batch) {
                Ok(cut) => SourceMsg::Shed(cut),
                Err(whole) => SourceMsg::Batch(whole),
            },
            None => SourceMsg::Batch(batch),
        };
        loop {
            match self.tx.try_send(msg) {
                Ok(()) => {
                    if let Some(s) = stamp {
                        self.frontier.advance(s, self.clock.now());
                    }
                    return Ok(());
                }
                Err(TrySendError::Full(m)) => {
                    msg = m;
                    // Waiting for the engine is being busy, not idle.
                    self.frontier.touch(self.clock.now());
                    if self.stopped() {
                        return Err(Closed);
                    }
                    tokio::time::sleep(RETRY).await;
                }
                Err(TrySendError::Disconnected(_)) => return Err(Closed),
            }
        }
    }

    /// Promises that nothing sent from now on is stamped before `t`.
    pub fn advance(&self, t: Nanos) {
        self.frontier.advance(t, self.clock.now());
    }

    /// Reports `count` unparseable inputs with one sample reason.
    pub async fn malformed(&self, count: u64, sample: String) -> Result<(), Closed> {
        self.tx
            .send(SourceMsg::Malformed { count, sample })
            .map_err(|_| Closed)
    }
}

/// The engine thread's side of a source.
pub struct SourceLink {
    pub rx: Receiver<SourceMsg>,
    pub frontier: Arc<SourceFrontier>,
    pub flow: Flow,
    /// The source has returned and its channel is empty.
    pub done: bool,
    /// Where the driver publishes the stream drop point's keep for a push source to apply
    /// (`source_shed`); left at 1, the source sends every batch whole.
    pub keep: StreamKeep,
}

/// Starts `source` for stream `stream` on `runtime`; returns the engine's end of it.
pub fn spawn(
    runtime: &tokio::runtime::Runtime,
    source: Box<dyn Source>,
    stream: usize,
    spec: &StreamSpec,
    batch_size: usize,
    clock: WallClock,
    stop: Arc<AtomicBool>,
) -> SourceLink {
    let (tx, rx) = crossbeam_channel::bounded(CHANNEL_BATCHES);
    let frontier = Arc::new(SourceFrontier::new(clock.now(), spec.source.idle_timeout));
    let keep = StreamKeep::default();
    let shed = (spec.source.flow == Flow::Push).then(|| {
        SourceShed::new(
            keep.clone(),
            spec.schema.types(),
            0x5eed_5ced ^ stream as u64,
        )
    });
    let ctx = SourceContext {
        stream,
        flow: spec.source.flow,
        batch_size,
        clock,
        tx,
        frontier: frontier.clone(),
        stop,
        shed,
    };
    let finished = frontier.clone();
    runtime.spawn(async move {
        source.run(ctx).await;
        // Ended: it will stamp nothing more.
        finished.finish();
    });
    SourceLink {
        rx,
        frontier,
        flow: spec.source.flow,
        done: false,
        keep,
    }
}

/// The source a stream's spec describes. Listeners bind and files open here, so a busy
/// address or a missing file fails before the run starts.
pub fn source_for(spec: &StreamSpec) -> std::io::Result<Box<dyn Source>> {
    use super::sources::{nexmark::NexmarkSource, replay::ReplaySource, tcp::TcpSource};
    Ok(match &spec.source.kind {
        SourceKind::Generator(g) => Box::new(GeneratorSource::new(spec, g)),
        SourceKind::Tcp(t) => Box::new(TcpSource::bind(spec, t)?),
        SourceKind::Replay(r) => Box::new(ReplaySource::open(spec, r)?),
        SourceKind::Nexmark(n) => Box::new(NexmarkSource::new(spec, n)),
    })
}

/// As `source_for`, with paced generators' rates multiplied by `scale` as it changes
/// (other kinds keep their own pace).
pub fn scaled_source_for(spec: &StreamSpec, scale: &RateScale) -> std::io::Result<Box<dyn Source>> {
    match &spec.source.kind {
        SourceKind::Generator(g) => Ok(Box::new(
            GeneratorSource::new(spec, g).with_scale(scale.clone()),
        )),
        _ => source_for(spec),
    }
}

/// Generates a stream at its rate profile on the wall clock: every millisecond it sends
/// what is due by now (as fast as the engine takes it when `unlimited`), stamped with the
/// current time.
pub struct GeneratorSource {
    generator: StreamGenerator,
    spec: GeneratorSpec,
    types: Vec<crate::core::schema::DataType>,
    /// A live factor on the rate profile (the dashboard's `+`/`-`); none: exactly the profile.
    scale: Option<RateScale>,
}

impl GeneratorSource {
    pub fn new(stream: &StreamSpec, g: &GeneratorSpec) -> GeneratorSource {
        GeneratorSource {
            generator: StreamGenerator::new(&stream.schema, g.fields.clone(), g.seed),
            spec: g.clone(),
            types: stream.schema.types(),
            scale: None,
        }
    }

    /// Multiplies the rate profile by `scale` from each moment on (an unlimited rate stays so).
    pub fn with_scale(mut self, scale: RateScale) -> GeneratorSource {
        self.scale = Some(scale);
        self
    }

    async fn produce(mut self, ctx: SourceContext) {
        let limit = self.spec.count.unwrap_or(u64::MAX);
        let unlimited = self.spec.rate.is_unlimited();
        let start = ctx.clock.epoch_at_start();
        let mut sent: u64 = 0;
        // Scaled: what the profile makes due since the last look, times the scale then.
        let (mut profile_due, mut scaled_due) = (0u64, 0.0f64);
        while !ctx.stopped() && sent < limit {
            let due = if unlimited {
                sent + (BURST * ctx.batch_size) as u64
            } else {
                let now_due = self.spec.rate.count_until(ctx.clock.now() - start);
                match &self.scale {
                    None => now_due,
                    Some(k) => {
                        scaled_due += now_due.saturating_sub(profile_due) as f64 * k.get();
                        profile_due = now_due;
                        scaled_due as u64
                    }
                }
            }
            .min(limit);
            let mut burst = 0;
            while sent < due && burst < BURST && !ctx.stopped() {
                let n = (due - sent).min(ctx.batch_size as u64) as usize;
                let mut batch = Batch::new(&self.types, n);
                self.generator.fill(&mut batch, n, ctx.clock.now(), 0);
                if ctx.send(batch).await.is_err() {
                    return;
                }
                sent += n as u64;
                burst += 1;
            }
            // Whatever is generated next will be stamped later than now.
            ctx.advance(ctx.clock.now());
            if unlimited || sent < due {
                // More is due at once: let the runtime breathe, then go on.
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(GENERATOR_TICK).await;
            }
        }
    }
}

impl Source for GeneratorSource {
    fn kind(&self) -> &'static str {
        "generator"
    }

    fn run(self: Box<Self>, ctx: SourceContext) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(self.produce(ctx))
    }
}
