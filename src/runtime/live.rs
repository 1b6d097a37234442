//! The live driver: sources run on tokio and pace generation by their rate profile on the
//! wall clock; the engine runs on the calling thread, batch at a time, and hands results to
//! the sinks. Stopping (duration reached or Ctrl-C) stops the sources first, then drains
//! every queue, flushes open windows and the sinks, so the summary accounts for every tuple.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError};

use super::clock::WallClock;
use super::control::Controller;
use super::sink::Sink;
use super::status;
use crate::core::batch::Batch;
use crate::core::engine::Engine;
use crate::core::schema::Nanos;
use crate::core::stats::EngineSnapshot;
use crate::generator::StreamGenerator;
use crate::spec::{StreamSpec, Workload};

/// How a run is shown and bounded.
pub struct LiveOptions {
    pub duration: Option<Nanos>,
    pub quiet: bool,
    /// Set by the caller's Ctrl-C handler; the driver stops cleanly when it turns true.
    pub stop: Arc<AtomicBool>,
}

/// What a finished run reports.
pub struct RunReport {
    pub snapshot: EngineSnapshot,
    pub elapsed: Nanos,
    pub interrupted: bool,
    /// Control ticks whose conservation ledger did not balance (0 unless there is a bug).
    pub violations: u64,
    pub history: super::control::RunHistory,
}

type Message = (usize, Batch);

/// How often a paced source wakes up to generate what is due.
const SOURCE_TICK: Duration = Duration::from_millis(1);
const STATUS_EVERY: Nanos = 1_000_000_000;

/// Runs `workload` on the wall clock until its duration, its sources' counts or `stop`.
pub fn run_live(
    workload: &Workload,
    mut engine: Engine,
    policy: crate::spec::Policy,
    sinks: &mut [Box<dyn Sink>],
    route: &[Option<usize>],
    opts: &LiveOptions,
) -> anyhow::Result<RunReport> {
    let clock = WallClock::start();
    let shedding_policy = !matches!(policy.params.kind, crate::shed::ShedKind::None);
    // Live capacity: one engine thread.
    let mut controller = Controller::new(
        workload,
        &mut engine,
        policy,
        1.0,
        workload.engine.tick,
        clock.now(),
    );
    let batch_size = workload.engine.batch_size.max(1);
    let tick = workload.engine.tick.max(1_000_000);
    let duration = opts.duration.or(workload.duration);
    let sources_stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = crossbeam_channel::bounded::<Message>(4096);
    // Per source: every tuple it stamped before this time has been sent.
    let frontiers: Arc<Vec<AtomicI64>> = Arc::new(
        workload
            .streams
            .iter()
            .map(|_| AtomicI64::new(clock.now()))
            .collect(),
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("spillway-source")
        .enable_all()
        .build()?;
    watch_ctrl_c(&runtime, opts.stop.clone());
    for (i, spec) in workload.streams.iter().enumerate() {
        let generator = StreamGenerator::new(&spec.schema, spec.fields.clone(), spec.seed);
        runtime.spawn(run_source(
            i,
            spec.clone(),
            generator,
            batch_size,
            clock,
            tx.clone(),
            sources_stop.clone(),
            frontiers.clone(),
        ));
    }
    drop(tx);

    let mut next_status = STATUS_EVERY;
    let mut next_tick = tick;
    let mut interrupted = false;
    let mut out = Outputs {
        clock,
        spent: Vec::new(),
        failed: vec![false; sinks.len()],
        sinks,
        route,
        closed: false,
    };
    let mut disconnected = false;
    loop {
        let since = clock.since_start();
        if !sources_stop.load(Ordering::Relaxed) {
            let timed_out = duration.is_some_and(|d| since >= d);
            if opts.stop.load(Ordering::Relaxed) {
                interrupted = true;
            }
            if timed_out || interrupted || out.closed {
                sources_stop.store(true, Ordering::Relaxed);
            }
        }
        let t0 = clock.now();
        disconnected |= drain(&rx, &mut engine);
        engine.record_overhead(clock.now() - t0);
        if engine.has_work() {
            let start = clock.now();
            if let Some(turn) = engine.run_turn(start) {
                let end = clock.now();
                engine.record_busy(turn.query, end - start);
                out.emit(&mut engine, end);
            }
        } else if disconnected {
            break;
        } else {
            match rx.recv_timeout(Duration::from_millis(1)) {
                Ok((s, b)) => {
                    // Ingest is engine overhead here too, not only in `drain`.
                    let t0 = clock.now();
                    engine.ingest(s, b);
                    engine.record_overhead(clock.now() - t0);
                }
                Err(RecvTimeoutError::Disconnected) => disconnected = true,
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
        if since >= next_tick {
            let t0 = clock.now();
            // Frontier first, then drain: everything stamped below it is then ingested.
            let frontier = frontiers
                .iter()
                .map(|f| f.load(Ordering::Acquire))
                .min()
                .unwrap_or(t0);
            disconnected |= drain(&rx, &mut engine);
            engine.tick(t0, frontier);
            out.emit(&mut engine, clock.now());
            let report = controller.tick(&mut engine, clock.now(), workload);
            engine.record_overhead(clock.now() - t0);
            next_tick = since + tick;
            if since >= next_status {
                if !opts.quiet {
                    eprint!("{}", status::status_lines(&report, since, shedding_policy));
                }
                out.flush();
                next_status = since + STATUS_EVERY;
            }
        }
    }
    engine.flush(clock.now());
    out.emit(&mut engine, clock.now());
    out.flush();
    runtime.shutdown_timeout(Duration::from_millis(100));
    Ok(RunReport {
        snapshot: engine.snapshot(false),
        elapsed: clock.since_start(),
        interrupted,
        violations: controller.violations(),
        history: controller.history().clone(),
    })
}

/// Sets `stop` on the first Ctrl-C (the run then drains and flushes); a second Ctrl-C
/// aborts at once.
pub fn watch_ctrl_c(runtime: &tokio::runtime::Runtime, stop: Arc<AtomicBool>) {
    // SIGTERM (a service manager, `timeout`) stops as cleanly as Ctrl-C.
    let term = stop.clone();
    runtime.spawn(async move {
        let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        else {
            return;
        };
        if s.recv().await.is_some() {
            eprintln!("spillway: SIGTERM: draining queues and flushing sinks (again to abort)");
            term.store(true, Ordering::Relaxed);
            if s.recv().await.is_some() {
                std::process::exit(143);
            }
        }
    });
    runtime.spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!(
                "spillway: stopping: draining queues and flushing sinks (Ctrl-C again to abort)"
            );
            stop.store(true, Ordering::Relaxed);
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
}

/// The sinks of a run, with the queries routed to each; a failed sink is reported once
/// and then skipped (a closed stdout pipe is not reported).
struct Outputs<'a> {
    clock: WallClock,
    /// Time spent writing each query's results during the last `emit`, charged to the
    /// query as processing: sink work the shedder must see.
    spent: Vec<(usize, Nanos)>,
    sinks: &'a mut [Box<dyn Sink>],
    route: &'a [Option<usize>],
    failed: Vec<bool>,
    /// A reader closed its end (`run ... | head`): the run stops, as pipelines expect.
    closed: bool,
}

impl Outputs<'_> {
    fn emit(&mut self, engine: &mut Engine, now: Nanos) {
        self.spent.clear();
        engine.emit(now, |e| {
            let Some(si) = self.route.get(e.index).copied().flatten() else {
                return;
            };
            if self.failed[si] {
                return;
            }
            let t0 = self.clock.now();
            let written = self.sinks[si].write(e);
            self.spent.push((e.index, self.clock.now() - t0));
            if let Err(err) = written {
                self.failed[si] = true;
                if err.kind() == std::io::ErrorKind::BrokenPipe {
                    self.closed = true;
                } else {
                    eprintln!("spillway: sink of query `{}` failed: {err}", e.query);
                }
            }
        });
        for &(q, ns) in &self.spent {
            engine.record_busy(q, ns);
        }
    }

    fn flush(&mut self) {
        for (s, failed) in self.sinks.iter_mut().zip(&mut self.failed) {
            if !*failed && let Err(e) = s.flush() {
                *failed = true;
                self.closed |= e.kind() == std::io::ErrorKind::BrokenPipe;
            }
        }
    }
}

/// Moves every waiting batch into the engine; true once all sources have finished.
fn drain(rx: &Receiver<Message>, engine: &mut Engine) -> bool {
    loop {
        match rx.try_recv() {
            Ok((s, b)) => engine.ingest(s, b),
            Err(crossbeam_channel::TryRecvError::Empty) => return false,
            Err(crossbeam_channel::TryRecvError::Disconnected) => return true,
        }
    }
}

/// Generates one stream: every `SOURCE_TICK` it produces the tuples its rate profile says
/// are due by now, in batches of at most `batch_size`, stamped with the current time.
#[allow(clippy::too_many_arguments)]
async fn run_source(
    index: usize,
    spec: StreamSpec,
    mut generator: StreamGenerator,
    batch_size: usize,
    clock: WallClock,
    tx: Sender<Message>,
    stop: Arc<AtomicBool>,
    frontiers: Arc<Vec<AtomicI64>>,
) {
    let frontier = &frontiers[index];
    run_source_loop(
        index,
        &spec,
        &mut generator,
        batch_size,
        clock,
        &tx,
        &stop,
        frontier,
    )
    .await;
    // Finished: it will stamp nothing more.
    frontier.store(i64::MAX, Ordering::Release);
}

#[allow(clippy::too_many_arguments)]
async fn run_source_loop(
    index: usize,
    spec: &StreamSpec,
    generator: &mut StreamGenerator,
    batch_size: usize,
    clock: WallClock,
    tx: &Sender<Message>,
    stop: &AtomicBool,
    frontier: &AtomicI64,
) {
    let types = spec.schema.types();
    let limit = spec.count.unwrap_or(u64::MAX);
    let mut sent: u64 = 0;
    while !stop.load(Ordering::Relaxed) && sent < limit {
        let due = if spec.rate.is_unlimited() {
            sent + batch_size as u64
        } else {
            spec.rate.count_until(clock.since_start())
        }
        .min(limit);
        while sent < due && !stop.load(Ordering::Relaxed) {
            let n = (due - sent).min(batch_size as u64) as usize;
            let mut batch = Batch::new(&types, n);
            let stamp = clock.now();
            generator.fill(&mut batch, n, stamp, 0);
            sent += n as u64;
            let mut msg = (index, batch);
            loop {
                match tx.try_send(msg) {
                    Ok(()) => {
                        frontier.store(stamp, Ordering::Release);
                        break;
                    }
                    Err(TrySendError::Full(m)) => {
                        msg = m;
                        tokio::time::sleep(Duration::from_micros(200)).await;
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                    }
                    Err(TrySendError::Disconnected(_)) => return,
                }
            }
        }
        // Whatever is generated next will be stamped later than now.
        frontier.store(clock.now(), Ordering::Release);
        if spec.rate.is_unlimited() {
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(SOURCE_TICK).await;
        }
    }
}
