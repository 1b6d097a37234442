//! N workers on virtual time. Each worker has its own clock and `capacity.cores / N`
//! cores; the worker whose clock is earliest runs the next turn (ties go to the lower
//! index), and a slice of input is offered to every worker once every clock has passed its
//! end. A worker is charged the declared cost of the rows of its own shards only. Nothing
//! reads a wall clock, so a run is the same bit for bit at any machine; results reach
//! `on_emit` in a fixed order (by clock, then worker).
//!
//! `run_sharded_with` is what `spillway run --simulated` uses with `engine.workers > 1`:
//! each worker's controller (at `cores / N`) ticks at every control tick and the observers
//! get one merged report of the tick (`publish`); scripted changes apply to every worker at
//! once (`changes`), before the next turn at or after their time; a stop request ends the
//! sources and the queues drain, a second one ends the run at once.

use crate::core::batch::Batch;
use crate::core::engine::{Emitted, Engine};
use crate::core::schema::Nanos;
use crate::core::stats::EngineSnapshot;
use crate::generator::StreamGenerator;
use crate::runtime::control::{ControlReport, Controller, RunHistory};
use crate::runtime::controls::PolicySwitch;
use crate::runtime::manage::{Command, Outcome, Scripted};
use crate::runtime::observe::{Event, Observers, RunInfo, RunMode, RunSummary};
use crate::runtime::simulated::SLICE;
use crate::runtime::stop::{StopHandle, StopReason};
use crate::spec::{Flow, Policy, Workload};

use super::Sharded;
use super::changes::ShardedManager;
use super::publish::{Part, Publisher, part};
use super::report::merge_history;

/// What a sharded simulated run ends with.
pub struct ShardedReport {
    /// Per worker, its own engine's counters (tombstones included, empty).
    pub workers: Vec<EngineSnapshot>,
    /// The merged view (`Sharded::snapshot`).
    pub merged: EngineSnapshot,
    /// Per worker, what its controller did (empty without a policy).
    pub history: Vec<RunHistory>,
    /// Per worker, every tick's control report.
    pub ticks: Vec<Vec<ControlReport>>,
    /// Per worker, virtual busy time charged.
    pub busy: Vec<Nanos>,
    pub virtual_end: Nanos,
    /// Whether a stop request ended the run before its duration.
    pub interrupted: bool,
    /// The summary observers received with `RunEnded` (merged over the workers).
    pub summary: RunSummary,
}

/// What steers a sharded simulated run from outside: the stop handle (checked once per
/// turn), the workload's scripted changes, and the dashboard's policy switch (taken once
/// per tick, for every worker).
pub struct ShardedControl<'a> {
    pub stop: &'a StopHandle,
    pub script: Vec<Scripted>,
    pub switch: Option<PolicySwitch>,
}

/// Settings of a sharded simulated run.
pub struct ShardedSim<'a> {
    pub workload: &'a Workload,
    /// Virtual run time of the sources.
    pub duration: Nanos,
    /// Per query, declared cost of one tuple in its shard, ns.
    pub costs: Vec<Nanos>,
    /// Cores of the whole machine, split evenly over the workers.
    pub cores: f64,
    /// Each worker's controller runs this policy; `None` runs without a control loop.
    pub policy: Option<Policy>,
}

struct Gen {
    generator: StreamGenerator,
    rate: crate::generator::RateProfile,
    count: Option<u64>,
    flow: Flow,
    types: Vec<crate::core::schema::DataType>,
    sent: u64,
}

/// Runs `sim.workload` on the workers of `sharded`; `on_emit(worker, rows)` sees every
/// result batch. No observers, no stop, no scripted changes.
pub fn run_sharded(
    sim: &ShardedSim<'_>,
    sharded: Sharded,
    on_emit: impl FnMut(usize, &Emitted<'_>),
) -> ShardedReport {
    let stop = StopHandle::new();
    let control = ShardedControl {
        stop: &stop,
        script: Vec::new(),
        switch: None,
    };
    run_sharded_with(
        sim,
        sharded,
        control,
        on_emit,
        &mut Observers::new(Vec::new()),
    )
}

/// `run_sharded` with a stop handle, scripted changes and observers: every control tick
/// (with a policy) the observers get the workers' reports merged into one.
pub fn run_sharded_with(
    sim: &ShardedSim<'_>,
    mut sharded: Sharded,
    control: ShardedControl<'_>,
    mut on_emit: impl FnMut(usize, &Emitted<'_>),
    observers: &mut Observers<'_>,
) -> ShardedReport {
    let w = sim.workload;
    let n = sharded.workers();
    let per_worker = (sim.cores / n as f64).max(1e-9);
    let ShardedControl {
        stop,
        script,
        switch,
    } = control;
    let mut script = script;
    script.sort_by_key(|s| s.at);
    let mut script = script.into_iter().peekable();
    let none = Policy::none();
    let info = RunInfo::new(
        w,
        RunMode::Simulated,
        sim.policy.as_ref().unwrap_or(&none),
        sim.cores,
        Some(sim.duration),
        &[],
    );
    let shedding_policy = info.shedding_policy;
    observers.event(Event::RunStarted(info));
    let mut manager = ShardedManager::new(w).with_policy(sim.policy.as_ref().unwrap_or(&none));
    let mut publisher = Publisher::new(w, w.engine.tick);
    let mut costs = sim.costs.clone();
    let mut controllers: Vec<Option<Controller>> = Vec::with_capacity(n);
    for e in sharded.engines.iter_mut() {
        controllers.push(sim.policy.clone().map(|p| {
            let mut c = Controller::new(w, e, p, per_worker, w.engine.tick, 0);
            for q in 0..e.query_count() {
                if e.is_removed(q) {
                    c.remove_query(e, q);
                }
            }
            c
        }));
    }
    let mut gens: Vec<Gen> = w
        .streams
        .iter()
        .map(|s| {
            let g = s
                .generator()
                .cloned()
                .unwrap_or_else(|| crate::spec::GeneratorSpec {
                    rate: crate::generator::RateProfile::Constant(0.0),
                    fields: Vec::new(),
                    count: Some(0),
                    seed: 0,
                });
            Gen {
                generator: StreamGenerator::new(&s.schema, g.fields.clone(), g.seed),
                rate: g.rate,
                count: g.count,
                flow: s.source.flow,
                types: s.schema.types(),
                sent: 0,
            }
        })
        .collect();
    let batch_size = w.engine.batch_size.max(1);
    let mut clocks: Vec<Nanos> = vec![0; n];
    let mut done = vec![false; n];
    let mut busy_total = vec![0; n];
    let mut ticks: Vec<Vec<ControlReport>> = vec![Vec::new(); n];
    let mut generated_to: Nanos = 0;
    let mut next_tick = w.engine.tick;
    let mut duration = sim.duration;
    let (mut interrupted, mut aborted) = (false, false);
    loop {
        let now_min = (0..n)
            .filter(|&k| !done[k])
            .map(|k| clocks[k])
            .min()
            .unwrap_or(Nanos::MAX);
        let at = now_min.min(clocks.iter().copied().max().unwrap_or(0));
        // Stopped early: sources end now, then the queues drain as at the end of a run.
        if !interrupted && let Some(reason) = stop.reason() {
            interrupted = true;
            duration = duration.min(generated_to);
            let abort = false;
            observers.event(Event::StopRequested { at, reason, abort });
        }
        if stop.is_aborted() {
            aborted = true;
            let reason = stop.reason().unwrap_or(StopReason::Requested);
            let abort = true;
            observers.event(Event::StopRequested { at, reason, abort });
            break;
        }
        // (Once every worker is done, `now_min` is `MAX`: changes after the end never apply.)
        while now_min != Nanos::MAX
            && script.peek().is_some_and(|c| c.at <= now_min)
            && let Some(change) = script.next()
        {
            if let Command::Add(q) = &change.command {
                costs.push(q.cost.unwrap_or(0));
            }
            let before: Vec<Vec<u64>> = (sharded.engines.iter())
                .map(|e| e.snapshot().queries.iter().map(|q| q.processed).collect())
                .collect();
            let applied = manager.apply(
                change.command,
                &mut sharded,
                &mut controllers,
                now_min,
                now_min,
                &mut on_emit,
                observers,
            );
            match &applied {
                Ok(Outcome::Added { index }) => {
                    let spec = &manager.queries()[*index];
                    let latency = spec.qos.as_ref().and_then(|s| s.latency);
                    publisher.add_query(latency.map(|l| l.percentile));
                }
                // A flushed removal processed its queues: that work takes virtual time.
                Ok(Outcome::Removed { index, .. }) => {
                    for (k, e) in sharded.engines.iter_mut().enumerate() {
                        let q = &e.snapshot().queries[*index];
                        let done = q.processed - before[k][*index];
                        let busy = (costs[*index] as f64 * done as f64).round() as Nanos;
                        e.record_busy(*index, busy);
                        busy_total[k] += busy;
                        clocks[k] += (busy as f64 / per_worker).round() as Nanos;
                    }
                }
                // Scripted changes were validated before the run (`changes::place`).
                _ => {}
            }
        }
        // Offer every slice that every worker's clock has passed.
        while generated_to + SLICE <= now_min && generated_to < duration {
            let to = generated_to + SLICE;
            for (i, g) in gens.iter_mut().enumerate() {
                let due = g.rate.count_until(to).min(g.count.unwrap_or(u64::MAX));
                let mut left = due.saturating_sub(g.sent);
                if g.flow == Flow::Pull {
                    let room = (sharded.engines.iter())
                        .map(|e| e.stream_room(i) as u64)
                        .min()
                        .unwrap_or(0);
                    left = left.min(room.max(batch_size as u64)).min(1 << 20);
                }
                if left == 0 {
                    continue;
                }
                let spacing = SLICE / left as Nanos;
                let mut first = generated_to;
                while left > 0 {
                    let k = left.min(batch_size as u64) as usize;
                    let mut b = Batch::new(&g.types, k);
                    g.generator.fill(&mut b, k, first, spacing);
                    sharded.ingest(i, b);
                    first += k as Nanos * spacing;
                    g.sent += k as u64;
                    left -= k as u64;
                }
            }
            generated_to = to;
        }
        // Control ticks once every worker has reached them.
        while now_min >= next_tick && now_min != Nanos::MAX {
            if let Some(p) = switch.as_ref().and_then(PolicySwitch::take) {
                for (e, c) in sharded.engines.iter_mut().zip(controllers.iter_mut()) {
                    if let Some(c) = c {
                        c.set_policy(e, p.clone());
                    }
                }
            }
            let mut parts: Vec<Part> = Vec::with_capacity(n);
            for (k, e) in sharded.engines.iter_mut().enumerate() {
                e.tick(next_tick, |_| generated_to);
                e.emit(next_tick.max(clocks[k]), |x| on_emit(k, x));
                if let Some(c) = controllers[k].as_mut() {
                    let report = c.tick(e, next_tick, w);
                    ticks[k].push(report.clone());
                    parts.push(part(report, c));
                }
            }
            if parts.len() == n {
                publisher.publish(&parts, &sharded, observers, next_tick, false, None);
            }
            next_tick += w.engine.tick;
        }
        let Some(k) = (0..n).filter(|&k| !done[k]).min_by_key(|&k| (clocks[k], k)) else {
            break;
        };
        let e = &mut sharded.engines[k];
        if let Some(turn) = e.run_turn(clocks[k]) {
            let owned = e.owned_last(turn.query) as f64;
            let cost = sim.costs.get(turn.query).copied().unwrap_or(0) as f64;
            let busy = (cost * owned).round() as Nanos;
            e.record_busy(turn.query, busy);
            busy_total[k] += busy;
            clocks[k] += ((busy as f64 / per_worker).round() as Nanos).max(1);
            let now = clocks[k];
            e.emit(now, |x| on_emit(k, x));
            if let Some(c) = controllers[k].as_mut() {
                c.guard(e, now);
            }
        } else if generated_to < duration {
            // Results no turn handed out (windows the time of shed rows closed): now.
            if e.has_results() {
                e.emit(clocks[k], |x| on_emit(k, x));
            }
            clocks[k] = clocks[k].max(generated_to + SLICE);
        } else {
            done[k] = true;
        }
    }
    let end = clocks.iter().copied().max().unwrap_or(0);
    let mut history = Vec::new();
    let mut parts: Vec<Part> = Vec::with_capacity(n);
    let mut violations = 0;
    for (k, e) in sharded.engines.iter_mut().enumerate() {
        if !aborted {
            // A window end at a time (`Engine::flush_stepwise`): the same rows in the
            // same order, never all held at once, and a second stop request ends it.
            aborted = !e.flush_stepwise(
                end,
                |e| e.emit(end, |x| on_emit(k, x)),
                || !stop.is_aborted(),
            );
        }
        if let Some(c) = controllers[k].as_mut() {
            let report = c.measure(e, end);
            parts.push(part(report, c));
            history.push(c.history().clone());
            violations += c.violations();
        }
    }
    let merged = sharded.snapshot();
    if parts.len() == n {
        let last = Some(merged.clone());
        publisher.publish(&parts, &sharded, observers, end, true, last);
    }
    let summary = RunSummary {
        workload: w.name.clone(),
        mode: RunMode::Simulated,
        elapsed: end,
        wall: 0,
        snapshot: merged.clone(),
        history: match history.is_empty() {
            true => RunHistory::default(),
            false => merge_history(&history),
        },
        shedding_policy,
        stopped: stop.reason(),
        aborted,
        ledger_violations: violations,
        undelivered: vec![0; manager.queries().len()],
    };
    observers.event(Event::RunEnded(Box::new(summary.clone())));
    ShardedReport {
        workers: sharded.engines.iter().map(Engine::snapshot).collect(),
        merged,
        history,
        ticks,
        busy: busy_total,
        virtual_end: end,
        interrupted,
        summary,
    }
}
