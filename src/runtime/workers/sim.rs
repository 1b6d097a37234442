//! N workers on virtual time. Each worker has its own clock and `capacity.cores / N`
//! cores; the worker whose clock is earliest runs the next turn (ties go to the lower
//! index), and a slice of input is offered to every worker once every clock has passed its
//! end. A worker is charged the declared cost of the rows of its own shards only. Nothing
//! reads a wall clock, so a run is the same bit for bit at any machine; results reach
//! `on_emit` in a fixed order (by clock, then worker).

use crate::core::batch::Batch;
use crate::core::engine::{Emitted, Engine};
use crate::core::schema::Nanos;
use crate::core::stats::EngineSnapshot;
use crate::generator::StreamGenerator;
use crate::runtime::control::{ControlReport, Controller, RunHistory};
use crate::runtime::simulated::SLICE;
use crate::spec::{Flow, Policy, Workload};

use super::Sharded;

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
/// result batch.
pub fn run_sharded(
    sim: &ShardedSim<'_>,
    mut sharded: Sharded,
    mut on_emit: impl FnMut(usize, &Emitted<'_>),
) -> ShardedReport {
    let w = sim.workload;
    let n = sharded.workers();
    let per_worker = (sim.cores / n as f64).max(1e-9);
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
    loop {
        let now_min = (0..n)
            .filter(|&k| !done[k])
            .map(|k| clocks[k])
            .min()
            .unwrap_or(Nanos::MAX);
        // Offer every slice that every worker's clock has passed.
        while generated_to + SLICE <= now_min && generated_to < sim.duration {
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
            for (k, e) in sharded.engines.iter_mut().enumerate() {
                e.tick(next_tick, |_| generated_to);
                e.emit(next_tick.max(clocks[k]), |x| on_emit(k, x));
                if let Some(c) = controllers[k].as_mut() {
                    ticks[k].push(c.tick(e, next_tick, w));
                }
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
        } else if generated_to < sim.duration {
            clocks[k] = clocks[k].max(generated_to + SLICE);
        } else {
            done[k] = true;
        }
    }
    let end = clocks.iter().copied().max().unwrap_or(0);
    let mut history = Vec::new();
    for (k, e) in sharded.engines.iter_mut().enumerate() {
        e.flush(end);
        e.emit(end, |x| on_emit(k, x));
        if let Some(c) = controllers[k].as_mut() {
            c.measure(e, end);
            history.push(c.history().clone());
        }
    }
    ShardedReport {
        workers: sharded.engines.iter().map(Engine::snapshot).collect(),
        merged: sharded.snapshot(),
        history,
        ticks,
        busy: busy_total,
        virtual_end: end,
    }
}
