//! Queue ceilings: a keep measured from a query's own queue, not from the load model. The
//! plan prices a keep with costs it measured at other keeps; a query it re-admits after a
//! pause, or raises a step a tick, can cost far more than the model says, and its queue
//! grows for as many ticks as the feedback needs to see the latency climb (live, in
//! `soak --shape 3x`, a HOP admitted at keep 0.45 grew a 0.75 M tuple queue over six ticks
//! and came out at 206 ms against 200 while the correction moved 0.9 -> 0.7). A queue is an
//! integrator: what it gained over the last tick is what was admitted beyond what the query
//! was served, whatever the model thinks either costs.
//!
//! So, each tick, for every query with a latency target: when its queue grew and the
//! newest queued tuple's wait at the rate the query was served (Little's law) has passed
//! `LATE` of the target, its delivered share gets a ceiling: the share of its offered
//! input it was served at. For the next tick only, the ceiling is lower by what drains the
//! queue down to `DRAIN_TO` of the target. A ceiling that is not hit again rises by
//! `RELAX` a tick and goes once it reaches 1, or at once when the engine waited for input
//! during the tick (live, with a busy neighbour, a ceiling set while the neighbour had the
//! core held its query low for the second it took to relax, while the engine idled); a
//! queue that grows again lowers it again
//! (multiplicative decrease, additive-or-multiplicative increase on the queue's own
//! measurement, as congestion control does). The plan's keeps above a ceiling come down
//! to it.
//!
//! The work the ceilings take out of a plan is handed back to the feedback correction
//! (`HAND_BACK`), so that the model's error is still corrected where it lies rather than
//! hidden behind the ceilings.
//!
//! Invariant: only a shedding plan's random drops are lowered, never a lossless query's;
//! a ceiling stays in `[0, 1)` or is absent, and all ceilings go when shedding stops.

use super::apply::model_cost;
use crate::qos::loss_utility;
use crate::runtime::monitor::QosSnapshot;
use crate::shed::{QueryDrop, ShedPlan, weighted_mean};
use crate::spec::QosSpec;

/// A growing queue whose newest tuple waits this share of the target gets a ceiling.
pub const LATE: f64 = 0.25;
/// The ceiling drains the queue to this share of the target over the next tick.
pub const DRAIN_TO: f64 = 0.2;
/// A ceiling not hit again rises by this factor a tick, and at least by `RELAX_STEP`
/// (from 0 back to 1 in 18 ticks, under a second at a 50 ms tick).
pub const RELAX: f64 = 1.2;
pub const RELAX_STEP: f64 = 0.02;

/// A ceiling one tick later, not hit again.
fn relaxed(was: f64) -> f64 {
    (was * RELAX).max(was + RELAX_STEP)
}

/// The feedback correction comes down by the work the ceilings took out of a plan, by at
/// most this much a tick: a model that under-prices a query for seconds is corrected
/// within a second or two, while the few ticks of an engine stall (live, 200 ms with the
/// input stopped and every queue served late) do not take the target down with them (at
/// `feedback::MAX_STEP` a tick they took it from 0.95 to 0.16, and the next ticks shed
/// nearly everything).
pub const HAND_BACK: f64 = 0.05;

#[derive(Clone, Debug, Default)]
pub(super) struct Ceilings {
    /// Per query: tuples offered, processed and queued at the last tick.
    seen: Vec<(u64, u64, u64)>,
    /// Per query: the rate it was served at over the last tick (tuples/s).
    served: Vec<f64>,
    /// Per query: the ceiling on its delivered share, if any.
    ceiling: Vec<Option<f64>>,
    /// When the last tick was measured (ns).
    at: Option<i64>,
}

/// One query's tick as the ceilings read it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct QueueTick {
    /// Tuples the query's pipeline took over the tick, or at the rate of the tick before if
    /// that was faster (one tick the engine was paused or away does not set a ceiling).
    pub served: f64,
    /// Queued tuples at the tick's start and end.
    pub before: f64,
    pub after: f64,
    /// Queued tuples thinned away during the tick (they left without being served).
    pub thinned: f64,
    /// Tuples offered to the query over the tick, before any drop point.
    pub offered: f64,
    /// The tick's length (s).
    pub secs: f64,
    /// Its latency target (s).
    pub target: f64,
}

/// What a late, growing queue asks for: the share of its offered input the query was
/// served at (`sustained`, the ceiling that stays and relaxes), and for the next tick only
/// the share that also drains the queue down to `DRAIN_TO` of the target (`now`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Asked {
    pub sustained: f64,
    pub now: f64,
}

/// What `t` asks for, or `None` when the query's queue is not late and growing.
pub(super) fn ceiling_of(t: QueueTick) -> Option<Asked> {
    if !(t.secs > 0.0 && t.served > 0.0 && t.offered > 0.0 && t.target > 0.0) {
        return None;
    }
    let rate = t.served / t.secs;
    let wait = t.after / rate;
    // Admitted beyond what was served: the queue grew, or would have without a thinning.
    if t.after + t.thinned <= t.before || wait < LATE * t.target {
        return None;
    }
    let offered = t.offered / t.secs;
    let drain = (t.after - DRAIN_TO * t.target * rate).max(0.0) / t.secs;
    Some(Asked {
        sustained: (rate / offered).clamp(0.0, 1.0),
        now: ((rate - drain).max(0.0) / offered).clamp(0.0, 1.0),
    })
}

/// One query's counters at a tick, as the ceilings read them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Counters {
    /// Tuples offered to it (before any drop point) and taken by its pipeline, so far.
    pub offered: u64,
    pub processed: u64,
    /// Tuples queued now, and thinned from its queue by the last plan.
    pub queued: u64,
    pub thinned: u64,
    /// Its stream, that stream's offered rate (tuples/s) and its measured cost (ns/tuple).
    pub stream: usize,
    pub stream_rate: f64,
    pub cost: f64,
    /// Its latency target (ns), if it has one and may be shed (not lossless, not removed).
    pub target: Option<i64>,
}

impl Ceilings {
    /// Measures the tick ending at `qos.at` from `qos` (the queries' QoS in force in `specs`,
    /// `thinned` per query by the last plan, `idle`: whether the engine waited for input
    /// more than `shed::IDLE_TARGET` of the tick) and lowers `p`'s keeps to the ceilings.
    /// Returns the work (ns/s, at the measured costs) the ceilings took out of `p`.
    /// Work is priced as the plan prices it: at `declared` costs when the model has them.
    pub(super) fn apply(
        &mut self,
        qos: &QosSnapshot,
        specs: &[Option<QosSpec>],
        declared: Option<&[f64]>,
        thinned: &[u64],
        idle: bool,
        p: &mut ShedPlan,
    ) -> f64 {
        let counters: Vec<Counters> = qos
            .queries
            .iter()
            .zip(&qos.engine.queries)
            .enumerate()
            .map(|(q, (m, e))| {
                let spec = specs.get(q).and_then(Option::as_ref);
                let sheddable = spec.is_some_and(|s| !s.lossless) && !e.removed;
                Counters {
                    offered: e.offered,
                    processed: e.processed,
                    queued: m.queued as u64,
                    thinned: thinned.get(q).copied().unwrap_or(0),
                    stream: m.stream,
                    stream_rate: qos.streams.get(m.stream).map_or(0.0, |s| s.rate),
                    cost: model_cost(declared, q, m.cost),
                    target: m.target.filter(|_| sheddable),
                }
            })
            .collect();
        self.apply_counters(&counters, specs, qos.at, idle, p)
    }

    /// `apply` on each query's `Counters`.
    pub(super) fn apply_counters(
        &mut self,
        counters: &[Counters],
        specs: &[Option<QosSpec>],
        now: i64,
        idle: bool,
        p: &mut ShedPlan,
    ) -> f64 {
        let n = counters.len();
        let secs = self.at.map_or(0.0, |a| (now - a) as f64 / 1e9);
        self.at = Some(now);
        self.seen.resize(n, (0, 0, 0));
        self.served.resize(n, 0.0);
        self.ceiling.resize(n, None);
        let mut removed = 0.0;
        for (q, k) in counters.iter().enumerate() {
            let was = std::mem::replace(&mut self.seen[q], (k.offered, k.processed, k.queued));
            let (was_offered, was_processed, was_queued) = was;
            // A query added during the tick has counters for part of it only.
            let fresh = was == (0, 0, 0);
            let served = k.processed.saturating_sub(was_processed) as f64;
            let rate = if secs > 0.0 { served / secs } else { 0.0 };
            let before = std::mem::replace(&mut self.served[q], rate);
            let asked = match k.target {
                Some(t) if p.shedding && !fresh => ceiling_of(QueueTick {
                    served: served.max(before * secs),
                    before: was_queued as f64,
                    after: k.queued as f64,
                    thinned: k.thinned as f64,
                    offered: k.offered.saturating_sub(was_offered) as f64,
                    secs,
                    target: t as f64 / 1e9,
                }),
                _ => None,
            };
            let c = &mut self.ceiling[q];
            *c = match (asked, *c) {
                _ if !p.shedding || k.target.is_none() => None,
                (Some(a), Some(was)) => Some(a.sustained.min(relaxed(was))),
                (Some(a), None) => Some(a.sustained),
                // The engine waited for input: the capacity a ceiling saved is unused.
                (None, Some(_)) if idle => None,
                (None, Some(was)) if relaxed(was) < 1.0 => Some(relaxed(was)),
                (None, _) => None,
            };
            let cap = match (*c, asked) {
                (Some(c), Some(a)) => Some(c.min(a.now)),
                (c, _) => c,
            };
            if let Some(cap) = cap {
                let spec = specs.get(q).and_then(Option::as_ref);
                let cut = lower(p, q, k.stream, cap, spec);
                if cut > 0.0 && k.stream_rate.is_finite() && k.cost.is_finite() {
                    removed += cut * k.stream_rate.max(0.0) * k.cost.max(0.0);
                }
            }
        }
        if removed > 0.0 {
            p.weighted_utility = weighted(specs, &p.utility);
        }
        removed
    }
}

/// `sum w_q * u_q / sum w_q` at the queries' weights (1 without QoS or a usable weight),
/// as the planner weighs a plan's utility.
fn weighted(specs: &[Option<QosSpec>], utility: &[f64]) -> f64 {
    let weight = |q: usize| {
        specs
            .get(q)
            .and_then(Option::as_ref)
            .map_or(1.0, |s| s.weight)
    };
    weighted_mean(utility.iter().enumerate().map(|(q, &u)| (weight(q), u)))
}

/// Lowers query `q`'s random drop in `p` to deliver at most `cap` of its input (its stream
/// `stream`'s keep times its own); returns by how much its delivered share came down.
fn lower(p: &mut ShedPlan, q: usize, stream: usize, cap: f64, spec: Option<&QosSpec>) -> f64 {
    let Some(drop) = p.queries.get_mut(q) else {
        return 0.0;
    };
    let own = match *drop {
        QueryDrop::KeepAll => 1.0,
        QueryDrop::Random { keep } => keep,
        _ => return 0.0,
    };
    let at_stream = p.streams.get(stream).copied().unwrap_or(1.0);
    let planned = at_stream * own;
    if planned <= cap {
        return 0.0;
    }
    let own = if at_stream > 0.0 {
        cap / at_stream
    } else {
        0.0
    };
    *drop = QueryDrop::random(own);
    if let Some(d) = p.delivered.get_mut(q) {
        *d = cap;
    }
    if let Some(u) = p.utility.get_mut(q) {
        *u = loss_utility(spec.and_then(|s| s.loss_tolerance.as_ref()), 100.0 * cap);
    }
    planned - cap
}

#[cfg(test)]
#[path = "drain_tests.rs"]
mod tests;
