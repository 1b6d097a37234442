//! The simulated driver: the same engine, operators and results as a live run, on virtual
//! time. Sources generate by the virtual clock; each scheduler turn advances the clock by
//! the declared per-tuple cost of the query that ran, divided by the declared cores. No
//! wall clock is read, so the same workload and seed give the same results, bit for bit.
//!
//! Sources are generated in slices of `SLICE` virtual time; a slice's tuples (spread evenly
//! over it) are ingested once the clock reaches its end, which adds at most one slice of
//! delay to every result in both the measured and the reference runs. A push stream with
//! many readers (`HOLD_READERS`) and few tuples per slice ingests its slices together, up to
//! `HOLD_MAX` of them, spread evenly over the time they cover: the per-query work of a slice
//! is then paid once per held span.
//!
//! `Disturbances` add what a live machine does to a run (cost jitter, pauses of the
//! engine thread, a neighbour taking capacity, work per emitted row), drawn from their own
//! seed, so a disturbed run is as repeatable as a quiet one.

use super::control::{Controller, RunHistory};
use super::manage::{Command, Manager, Outcome, Scripted};
use super::observe::{Event, Observers, RunInfo, RunMode, RunSummary, TickReport};
use super::stop::{StopHandle, StopReason};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

mod idle;
mod settings;

pub use settings::{Disturbances, Neighbour, SimError, SimSettings};

use crate::core::batch::Batch;
use crate::core::engine::{Emitted, Engine};
use crate::core::schema::Nanos;
use crate::core::stats::EngineSnapshot;
use crate::generator::StreamGenerator;
use crate::spec::{Flow, GeneratorSpec, Policy, SourceKind, Workload};

/// Virtual time granularity of sources.
pub const SLICE: Nanos = 1_000_000;

/// A push stream read by at least this many queries holds its slices back while they bring
/// fewer than `batch_size` tuples, for at most `HOLD_MAX`: each ingested slice costs every
/// reader a queue push and a scheduler turn whatever it brings, so at low per-query rates
/// one-tuple slices would make a run's work queries x slices. Streams with fewer readers
/// ingest every slice.
pub const HOLD_READERS: usize = 64;

/// The most virtual time a held stream's tuples wait before they are ingested (the extra
/// delay a slice can add to its results, on top of one slice).
pub const HOLD_MAX: Nanos = 10 * SLICE;

/// Most control ticks run one by one after a single turn; the rest of what it overran are
/// missed (see the tick loop).
pub const CATCH_UP: usize = 64;

/// What steers a simulated run from outside: the control loop (shedding and the QoS
/// monitor), and the stop handle, checked once per scheduler turn.
pub struct SimControl<'a> {
    pub controller: Option<&'a mut Controller>,
    pub stop: &'a StopHandle,
}

/// Counters a simulated run ends with.
pub struct SimReport {
    pub snapshot: EngineSnapshot,
    /// Virtual time at the end (sources stop at the duration; draining may take longer).
    pub virtual_end: Nanos,
    /// Whether a stop request ended the run before its duration.
    pub interrupted: bool,
    /// The summary observers received with `RunEnded`.
    pub summary: RunSummary,
    /// Scheduler turns the run took: with idle queries skipped and slices held at low
    /// per-query rates, about (batches ingested x readers), not (slices x queries).
    pub turns: u64,
}

/// Most tuples an unlimited pull source offers per slice (bounds a stream nobody reads).
const PULL_SLICE_CAP: u64 = 1 << 20;

struct Source {
    generator: StreamGenerator,
    spec: GeneratorSpec,
    flow: Flow,
    types: Vec<crate::core::schema::DataType>,
    sent: u64,
    /// Start of the first slice whose tuples are held back (not yet ingested), if any.
    held_from: Option<Nanos>,
}

/// Runs `w` on virtual time. `on_emit` receives every result batch; `controller` runs
/// every engine tick and the observers see its report, then the run's events.
pub fn run_simulated(
    w: &Workload,
    engine: Engine,
    settings: &SimSettings,
    control: SimControl<'_>,
    on_emit: impl FnMut(&Emitted<'_>),
    observers: &mut Observers<'_>,
) -> SimReport {
    run_simulated_script(w, engine, settings, control, Vec::new(), on_emit, observers)
}

/// `run_simulated` with changes to the query set applied at their virtual times (before
/// the first scheduler turn at or after each `at`). An added query's results reach
/// `on_emit` with the next free index; its cost is its declared `cost`.
pub fn run_simulated_script(
    w: &Workload,
    mut engine: Engine,
    settings: &SimSettings,
    control: SimControl<'_>,
    mut script: Vec<Scripted>,
    mut on_emit: impl FnMut(&Emitted<'_>),
    observers: &mut Observers<'_>,
) -> SimReport {
    script.sort_by_key(|s| s.at);
    let mut script = script.into_iter().peekable();
    let mut costs = settings.costs.clone();
    let SimControl {
        mut controller,
        stop,
    } = control;
    let none = Policy::none();
    let policy = controller.as_deref().map_or(&none, |c| c.policy());
    let info = RunInfo::new(
        w,
        RunMode::Simulated,
        policy,
        settings.cores,
        Some(settings.duration),
        &[],
    );
    let shedding_policy = info.shedding_policy;
    let mut manager = Manager::new(w, policy);
    observers.event(Event::RunStarted(info));
    let batch_size = w.engine.batch_size.max(1);
    let mut sources: Vec<Source> = w
        .streams
        .iter()
        .map(|s| {
            // `from_workload` admits generated streams only; any other offers nothing.
            let g = match &s.source.kind {
                SourceKind::Generator(g) => g.clone(),
                _ => GeneratorSpec {
                    rate: crate::generator::RateProfile::Constant(0.0),
                    fields: Vec::new(),
                    count: Some(0),
                    seed: 0,
                },
            };
            Source {
                generator: StreamGenerator::new(&s.schema, g.fields.clone(), g.seed),
                spec: g,
                flow: s.source.flow,
                types: s.schema.types(),
                sent: 0,
                held_from: None,
            }
        })
        .collect();
    let cores = settings.cores.max(1e-9);
    let d = &settings.disturbances;
    let mut rng = SmallRng::seed_from_u64(d.seed);
    let mut next_pause = if d.pause_every > 0 && d.pause > 0 {
        d.pause_every
    } else {
        Nanos::MAX
    };
    let mut rows = vec![0u64; w.queries.len()];
    // Charges the per-row work of what `emit` just handed out, and advances the clock.
    let charge_rows = |engine: &mut Engine, rows: &mut [u64], now: &mut Nanos| {
        // Only queries with a row cost are charged (a turn costs idle queries nothing).
        for (q, r) in rows.iter_mut().enumerate().take(d.row_costs.len()) {
            let row_cost = d.row_costs.get(q).copied().unwrap_or(0).max(0);
            if *r > 0 && row_cost > 0 {
                let busy = (row_cost as f64 * *r as f64 / d.share_at(*now)).round() as Nanos;
                engine.record_busy(q, busy);
                *now += ((busy as f64 / cores).round() as Nanos).max(1);
            }
            *r = 0;
        }
    };
    let mut now: Nanos = 0;
    let mut generated_to: Nanos = 0;
    let mut next_tick = w.engine.tick;
    let mut duration = settings.duration;
    let mut interrupted = false;
    let mut aborted = false;
    let mut turns: u64 = 0;
    loop {
        // Stopped early: sources end now, then the queues drain as at the end of a run.
        if !interrupted && let Some(reason) = stop.reason() {
            interrupted = true;
            duration = duration.min(generated_to);
            observers.event(Event::StopRequested {
                at: now,
                reason,
                abort: false,
            });
        }
        if stop.is_aborted() {
            aborted = true;
            observers.event(Event::StopRequested {
                at: now,
                reason: stop.reason().unwrap_or(StopReason::Requested),
                abort: true,
            });
            break;
        }
        // (`peek` first: `next_if` moves the change out and back on every turn.)
        while script.peek().is_some_and(|c| c.at <= now)
            && let Some(change) = script.next()
        {
            if let Command::Add(q) = &change.command {
                costs.push(q.cost.unwrap_or(0));
            }
            let processed = |e: &Engine| -> Vec<u64> {
                e.snapshot().queries.iter().map(|q| q.processed).collect()
            };
            let before = processed(&engine);
            let applied = manager.apply(
                change.command,
                &mut engine,
                controller.as_deref_mut(),
                now,
                now,
                &mut on_emit,
                observers,
            );
            // A flushed removal processed its queue: that work takes virtual time too. It
            // is engine overhead: the query's final ledger was published at its removal.
            if let Ok(Outcome::Removed { index, removal }) = &applied {
                let done = removal.ledger.processed - before[*index];
                let cost = costs[*index] as f64 * settings.cost_scale;
                let busy = (cost * done as f64).round() as Nanos;
                engine.record_overhead(busy);
                now += (busy as f64 / cores).round() as Nanos;
            }
            // A scripted change was validated with the workload; one that still fails
            // (a race with a stop) changes nothing.
            let _ = applied;
        }
        // Ingest every slice that has fully arrived by `now`.
        while generated_to + SLICE <= now && generated_to < duration {
            let (from, to) = (generated_to, generated_to + SLICE);
            for (i, src) in sources.iter_mut().enumerate() {
                let limit = src.spec.count.unwrap_or(u64::MAX);
                let due = src.spec.rate.count_until(to).min(limit);
                let mut n = due.saturating_sub(src.sent);
                if src.flow == Flow::Pull {
                    // A pull source offers only what its stream's queues have room for;
                    // the rest waits in the source (it falls behind its schedule).
                    let room = engine.stream_room(i) as u64;
                    let room = if engine.stream_drained(i) {
                        room.max(batch_size as u64)
                    } else {
                        room
                    };
                    n = n.min(room).min(PULL_SLICE_CAP);
                }
                if n == 0 {
                    src.held_from = None;
                    continue;
                }
                let held_from = *src.held_from.get_or_insert(from);
                let hold = src.flow == Flow::Push
                    && engine.stream_readers(i) >= HOLD_READERS
                    && n < batch_size as u64
                    && to - held_from < HOLD_MAX
                    && to < duration;
                if hold {
                    continue;
                }
                src.held_from = None;
                let spacing = (to - held_from) / n as Nanos;
                let mut first = held_from;
                while n > 0 {
                    let k = n.min(batch_size as u64) as usize;
                    let mut b = Batch::new(&src.types, k);
                    src.generator.fill(&mut b, k, first, spacing);
                    engine.ingest(i, b);
                    first += k as Nanos * spacing;
                    src.sent += k as u64;
                    n -= k as u64;
                }
            }
            generated_to = to;
        }
        if let Some(turn) = engine.run_turn(now) {
            turns += 1;
            let jitter = if d.cost_jitter > 0.0 {
                1.0 + d.cost_jitter.min(0.99) * (2.0 * rng.random::<f64>() - 1.0)
            } else {
                1.0
            };
            let cost = costs[turn.query] as f64 * settings.cost_scale * jitter / d.share_at(now);
            let mut busy = (cost * turn.tuples as f64).round() as Nanos;
            if now >= next_pause {
                busy += d.pause;
                next_pause = next_pause.saturating_add(d.pause_every);
            }
            engine.record_busy(turn.query, busy);
            now += ((busy as f64 / cores).round() as Nanos).max(1);
            hand_out(&mut engine, now, &mut rows, &mut on_emit);
            charge_rows(&mut engine, &mut rows, &mut now);
            if let Some(c) = controller.as_deref_mut() {
                c.guard(&mut engine, now);
            }
        } else if generated_to < duration {
            // Results no turn handed out (windows the time of shed rows closed): now.
            if engine.has_results() {
                hand_out(&mut engine, now, &mut rows, &mut on_emit);
                charge_rows(&mut engine, &mut rows, &mut now);
            }
            // Nothing queued: jump to the next event (`idle.rs`), folding ticks at rest.
            let next_at = |s: &Source| {
                let limit = s.spec.count.unwrap_or(u64::MAX);
                idle::next_due_slice(&s.spec.rate, limit, s.sent, generated_to)
            };
            let scripted = script.peek().map_or(Nanos::MAX, |c| c.at);
            let land = sources
                .iter()
                .map(next_at)
                .fold(idle::slice_reaching(duration, generated_to), Nanos::min)
                .min(idle::slice_reaching(scripted, generated_to));
            let tick = w.engine.tick;
            if tick > 0
                && land >= next_tick.saturating_add(tick)
                && !engine.awaits_tick()
                && controller.as_deref().is_none_or(Controller::at_rest)
            {
                // The ticks at or before `land - tick` (the rest run one by one).
                let n = (land - tick - next_tick) / tick + 1;
                let last = next_tick + (n - 1) * tick;
                if let Some(c) = controller.as_deref_mut() {
                    c.fold_ticks(n as u64, last);
                }
                next_tick = last + tick;
            }
            generated_to = land.min(idle::slice_reaching(next_tick, generated_to));
            let waited = (generated_to + SLICE - now).max(0);
            // Every core waits for input over the jump: capacity no plan used.
            engine.record_idle((waited as f64 * cores).round() as Nanos);
            now = now.max(generated_to + SLICE);
        } else {
            break;
        }
        let mut caught_up = 0;
        while now >= next_tick {
            // A turn that overran many ticks (a long pause, a large declared cost on a small
            // capacity) is followed by at most `CATCH_UP` ticks one by one. The rest are
            // missed, as a live engine thread busy that long misses them, and the next tick
            // measures the whole gap. Without this, one turn could cost hours of wall time.
            if caught_up == CATCH_UP || (caught_up > 0 && stop.is_stopping()) {
                let tick = w.engine.tick.max(1);
                next_tick += (now - next_tick) / tick * tick;
            }
            caught_up += 1;
            engine.tick(next_tick.min(now), |_| generated_to);
            hand_out(&mut engine, now, &mut rows, &mut on_emit);
            charge_rows(&mut engine, &mut rows, &mut now);
            if let Some(c) = controller.as_deref_mut() {
                let report = c.tick(&mut engine, next_tick, w);
                observers.tick(&TickReport {
                    elapsed: next_tick,
                    control: &report,
                    tick_latency: &c.tick_latency(),
                    last: false,
                });
            }
            next_tick += w.engine.tick;
        }
    }
    if !aborted {
        // A window end at a time: a second stop request cuts a huge final state short.
        let done = engine.flush_stepwise(now, |e| e.emit(now, &mut on_emit), || !stop.is_aborted());
        if !done {
            aborted = true;
            observers.event(Event::StopRequested {
                at: now,
                reason: stop.reason().unwrap_or(StopReason::Requested),
                abort: true,
            });
        }
    }
    let (snapshot, history, ledger_violations) = match controller {
        Some(c) => {
            let report = c.measure(&mut engine, now);
            observers.tick(&TickReport {
                elapsed: now,
                control: &report,
                tick_latency: &c.tick_latency(),
                last: true,
            });
            (report.qos.engine, c.history().clone(), c.violations())
        }
        None => (engine.snapshot(), RunHistory::default(), 0),
    };
    let summary = RunSummary {
        workload: w.name.clone(),
        mode: RunMode::Simulated,
        elapsed: now,
        wall: 0,
        snapshot: snapshot.clone(),
        history,
        shedding_policy,
        stopped: stop.reason(),
        aborted,
        ledger_violations,
        undelivered: vec![0; manager.queries().len()],
    };
    observers.event(Event::RunEnded(Box::new(summary.clone())));
    SimReport {
        snapshot,
        virtual_end: now,
        interrupted,
        summary,
        turns,
    }
}

/// Hands the engine's pending results to `on_emit` as emitted at `now`, counting each
/// query's rows in `rows` (what `charge_rows` charges).
fn hand_out(
    engine: &mut Engine,
    now: Nanos,
    rows: &mut Vec<u64>,
    on_emit: &mut impl FnMut(&Emitted<'_>),
) {
    engine.emit(now, &mut |e: &Emitted<'_>| {
        // Queries added by a script grow the set as the run goes.
        if e.index >= rows.len() {
            rows.resize(e.index + 1, 0);
        }
        rows[e.index] += e.batch.len() as u64;
        on_emit(e)
    });
}
