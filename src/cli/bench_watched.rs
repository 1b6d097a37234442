//! `spillway bench`'s watched runs: query (b) on one engine with the live driver's
//! bookkeeping around it (turns timed on the wall clock, the QoS monitor ticking), alone,
//! with three observers, or with the Prometheus exporter rendered every second, so that
//! the bench can report what watching costs per tick. Batches are copied before the clock
//! starts: the times cover engine and observer work only.

use super::Failure;
use super::bench::{AGG_SQL, workload_yaml};
use crate::core::batch::Batch;
use crate::core::schema::Nanos;
use crate::runtime::assemble::engine_for;
use crate::runtime::clock::WallClock;
use crate::runtime::control::Controller;
use crate::runtime::observe::{Event, EventLog, Observers, OnTick, RunInfo, RunMode, TickReport};
use crate::runtime::status::StatusObserver;
use crate::spec::{self, Policy};

/// Runs `sql` over the batches on one engine, timing ingest to emission. With
/// `Watch::Monitor`, the live driver's bookkeeping runs too: each turn timed on the wall
/// clock and the QoS monitor ticking every 100 ms, so the difference is the monitor's cost.
pub(super) fn engine_run(
    sql: &str,
    batches: &[Batch],
    clock: &WallClock,
    watch: Watch,
) -> Result<Nanos, Failure> {
    let monitor = watch == Watch::Monitor;
    engine_run_observed(sql, batches, clock, monitor, None, DEFAULT_TICK).map(|m| m.elapsed)
}

/// The default control tick, which observer costs are reported against.
pub(super) const DEFAULT_TICK: Nanos = 100_000_000;
/// The tick of the observer-cost runs: many ticks in a short run.
const MEASURE_TICK: Nanos = 10_000_000;

/// What a watched bench run measured.
pub(super) struct Measured {
    pub(super) elapsed: Nanos,
    /// Engine-thread time inside the observers.
    pub(super) observer_ns: Nanos,
    pub(super) ticks: u64,
}

impl Measured {
    /// Observer time per tick, ns.
    pub(super) fn per_tick(&self) -> f64 {
        self.observer_ns as f64 / self.ticks.max(1) as f64
    }
}

/// Query (b) with the monitor and three observers, ticking every `MEASURE_TICK`.
pub(super) fn observed_run(
    sql: &str,
    batches: &[Batch],
    clock: &WallClock,
) -> Result<Measured, Failure> {
    let mut status = StatusObserver::new(true);
    let mut log = EventLog::default();
    let mut latencies = 0u64;
    let mut recorder = OnTick(|t: &TickReport<'_>| {
        latencies += t.tick_latency.iter().map(|h| h.len()).sum::<u64>();
    });
    let mut observers = Observers::new(vec![&mut status, &mut log, &mut recorder]);
    engine_run_observed(
        sql,
        batches,
        clock,
        true,
        Some(&mut observers),
        MEASURE_TICK,
    )
}

/// Query (b) with the monitor ticking and a `MetricsObserver` fed every tick, while a
/// thread renders the exposition every second (what a 1 s Prometheus scrape costs the
/// exporter, minus the socket).
pub(super) fn engine_run_exported(
    batches: &[Batch],
    clock: &WallClock,
) -> Result<(Measured, f64), Failure> {
    use crate::runtime::metrics::{MetricsObserver, recorder_builder};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let recorder = recorder_builder().build_recorder();
    let handle = recorder.handle();
    let mut observer = MetricsObserver::new(Arc::new(recorder));
    let done = Arc::new(AtomicBool::new(false));
    let scraper = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut bytes = 0;
            let (mut renders, mut render_ns) = (0u32, 0u128);
            while !done.load(Ordering::Relaxed) {
                for _ in 0..20 {
                    if done.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                #[allow(clippy::disallowed_methods)] // a bench on its own thread
                let t0 = std::time::Instant::now();
                bytes += handle.render().len();
                render_ns += t0.elapsed().as_nanos();
                renders += 1;
            }
            std::hint::black_box(bytes);
            render_ns as f64 / renders.max(1) as f64
        })
    };
    let measured = engine_run_observed(
        AGG_SQL,
        batches,
        clock,
        true,
        Some(&mut observer),
        MEASURE_TICK,
    );
    done.store(true, Ordering::Relaxed);
    let render = scraper.join().unwrap_or(0.0);
    Ok((measured?, render))
}

#[inline(never)] // a callgrind dump boundary (README, instruction counts)
fn engine_run_observed(
    sql: &str,
    batches: &[Batch],
    clock: &WallClock,
    monitor: bool,
    mut observer: Option<&mut dyn crate::runtime::observe::Observer>,
    tick: Nanos,
) -> Result<Measured, Failure> {
    let yaml = workload_yaml(1, 1024, sql);
    let qw = spec::parse(&yaml, "<bench>").map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut engine = engine_for(&qw).map_err(|e| anyhow::anyhow!(e))?;
    let mut controller =
        monitor.then(|| Controller::new(&qw, &mut engine, Policy::none(), 1.0, tick, clock.now()));
    // Copies are made before timing starts: the measurement covers engine work only.
    let copies: Vec<Batch> = batches.to_vec();
    if let (Some(o), Some(c)) = (observer.as_deref_mut(), controller.as_ref()) {
        o.on_event(&Event::RunStarted(RunInfo::new(
            &qw,
            RunMode::Live,
            c.policy(),
            1.0,
            None,
            &[],
        )));
    }
    let mut rows = 0usize;
    let (mut observer_ns, mut ticks) = (0, 0u64);
    let start = clock.since_start();
    let mut next_tick = start + tick;
    for b in copies {
        engine.ingest(0, b);
        if let Some(c) = controller.as_mut() {
            let t0 = clock.now();
            if let Some(turn) = engine.run_turn(t0) {
                engine.record_busy(turn.query, clock.now() - t0);
            }
            if clock.since_start() >= next_tick {
                let report = c.tick(&mut engine, clock.now(), &qw);
                if let Some(o) = observer.as_deref_mut() {
                    let t0 = clock.now();
                    o.on_tick(&TickReport {
                        elapsed: clock.since_start() - start,
                        control: &report,
                        tick_latency: &c.tick_latency(),
                        last: false,
                    });
                    observer_ns += clock.now() - t0;
                }
                ticks += 1;
                next_tick += tick;
            }
        } else {
            engine.run_turn(0);
        }
        engine.emit(0, |e| rows += e.batch.len());
    }
    engine.flush(0);
    engine.emit(0, |e| rows += e.batch.len());
    let elapsed = clock.since_start() - start;
    std::hint::black_box(rows);
    Ok(Measured {
        elapsed,
        observer_ns,
        ticks,
    })
}

/// What watches a bench run.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Watch {
    Nothing,
    Monitor,
}
