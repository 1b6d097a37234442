//! The shedder's control step: from one snapshot it decides when (hysteresis trigger on the
//! model load and on latencies), how much (loss/gain greedy against `H * C * m`, `m` from
//! latency feedback), where (random drops merged at streams) and how (random, semantic or
//! window drops). Pure: the same input and state always give the same plan and next state.

use crate::qos::UtilityCurve;
use crate::qos::{QueryLoad, StreamLoad, engine_load, loss_utility};

use super::feedback::{Feedback, Gains, latency_error, latency_miss};
use super::greedy::{GreedyQuery, cover};
use super::input::{PolicyParams, QueryInput, ShedInput, ShedKind};
use super::placement::merge_at_streams;
use super::plan::{QueryDrop, ShedPlan};
use super::semantic::{derived_curve, semantic_drop};
use super::trigger::Trigger;

/// What the planner remembers between ticks.
#[derive(Clone, Debug, Default)]
pub struct ShedState {
    trigger: Trigger,
    feedback: Feedback,
    last: Option<ShedPlan>,
}

impl ShedState {
    pub fn new() -> ShedState {
        ShedState::default()
    }

    /// Whether the last tick left the shedder in its shedding state.
    pub fn shedding(&self) -> bool {
        self.trigger.shedding()
    }

    /// The feedback correction `m` after the last tick (1 before the first).
    pub fn correction(&self) -> f64 {
        self.feedback.correction()
    }

    /// The plan the last tick returned.
    pub fn last_plan(&self) -> Option<&ShedPlan> {
        self.last.as_ref()
    }
}

fn non_negative(x: f64) -> f64 {
    if x.is_finite() && x > 0.0 { x } else { 0.0 }
}

/// How a query's cursor is realised at its drop point.
enum Mode {
    Random,
    /// Index into the derived curves.
    Semantic(usize),
    Window,
}

/// Chooses each query's drop kind: value drops need a value QoS with counts, window drops a
/// windowed aggregate; everything else drops at random.
fn mode(kind: ShedKind, q: &QueryInput, derived: &mut Vec<UtilityCurve>) -> Mode {
    match kind {
        ShedKind::Semantic => match q.value.and_then(|v| derived_curve(v.histogram)) {
            Some(c) => {
                derived.push(c);
                Mode::Semantic(derived.len() - 1)
            }
            None => Mode::Random,
        },
        ShedKind::WindowAware if q.windowed => Mode::Window,
        ShedKind::None | ShedKind::TailDrop | ShedKind::Random | ShedKind::WindowAware => {
            Mode::Random
        }
    }
}

/// One control tick: updates `state` and returns the plan to install.
///
/// Load is planned on the unshed demand: `T = sum_s r_s * L_s + melt * sum_q c_q * queued_q`
/// with `L_s = sum of c_q` over the queries of `s`, against `target = H * C * m`.
pub fn plan(input: &ShedInput, state: &mut ShedState) -> ShedPlan {
    let out = decide(input, state);
    state.last = Some(out.clone());
    out
}

fn weight_of(q: &QueryInput) -> f64 {
    if q.weight.is_finite() && q.weight > 0.0 {
        q.weight
    } else {
        1.0
    }
}

fn rate_of(input: &ShedInput, q: &QueryInput) -> f64 {
    input
        .streams
        .get(q.stream)
        .map_or(0.0, |s| non_negative(s.rate))
}

/// When: load, feedback and hysteresis; then `allocate` if shedding.
fn decide(input: &ShedInput, state: &mut ShedState) -> ShedPlan {
    let p = input.policy.sanitized();
    let capacity = non_negative(input.capacity);
    let qs = &input.queries;
    let streams: Vec<StreamLoad> = input
        .streams
        .iter()
        .map(|s| StreamLoad { rate: s.rate })
        .collect();
    let loads: Vec<QueryLoad> = qs
        .iter()
        .map(|q| QueryLoad {
            stream: q.stream,
            cost: q.cost,
            queued: q.queued,
            keep: 1.0,
        })
        .collect();
    let report = engine_load(&streams, &loads, p.melt);

    let mut out = ShedPlan::keep_all(input.streams.len(), qs.len());
    for (u, q) in out.utility.iter_mut().zip(qs) {
        *u = loss_utility(q.loss, 100.0);
    }
    out.weighted_utility = weighted(qs, &out.utility);
    out.load = report.total;
    out.expected_load = report.total;
    if p.kind == ShedKind::None {
        out.target = p.headroom * capacity;
        out.excess = report.total - out.target;
        return out;
    }
    let gains = Gains {
        kp: p.kp,
        ki: p.ki,
        min: p.correction_min,
        max: p.correction_max,
    };
    let m = state.feedback.update(latency_error(qs, p.setpoint), gains);
    out.correction = m;
    out.target = p.headroom * capacity * m;
    out.excess = report.total - out.target;
    out.shedding = state
        .trigger
        .update(report.total, out.target, latency_miss(qs), p.low, p.hold);
    if out.shedding && p.kind != ShedKind::TailDrop {
        allocate(input, &p, report.queue, &mut out);
    }
    out
}

/// How much, where and how: greedy cursors against `out.excess`, merged at streams,
/// realised per query.
fn allocate(input: &ShedInput, p: &PolicyParams, queue_load: f64, out: &mut ShedPlan) {
    let qs = &input.queries;
    let mut derived = Vec::new();
    let modes: Vec<Mode> = qs.iter().map(|q| mode(p.kind, q, &mut derived)).collect();
    let curve_of = |i: usize| match modes[i] {
        Mode::Semantic(d) => Some(&derived[d]),
        Mode::Random | Mode::Window => qs[i].loss,
    };
    let greedy: Vec<GreedyQuery> = qs
        .iter()
        .enumerate()
        .map(|(i, q)| GreedyQuery {
            stream: q.stream,
            gain_per_percent: rate_of(input, q) * non_negative(q.cost) / 100.0,
            weight: weight_of(q),
            curve: curve_of(i),
            movable: !q.lossless,
        })
        .collect();
    let cov = cover(&greedy, input.streams.len(), out.excess, p.step);
    out.unmet = (out.excess - cov.gained).max(0.0);

    // Where: random drops shared by a whole stream move up to it.
    let keeps: Vec<f64> = cov.cursors.iter().map(|c| c / 100.0).collect();
    let mergeable: Vec<bool> = modes.iter().map(|m| matches!(m, Mode::Random)).collect();
    let query_streams: Vec<usize> = qs.iter().map(|q| q.stream).collect();
    let merged = merge_at_streams(input.streams.len(), &query_streams, &keeps, &mergeable);

    // How: each query's drop, and what it is expected to deliver.
    let mut stream_load = 0.0;
    for (i, q) in qs.iter().enumerate() {
        let cursor = cov.cursors[i];
        out.queries[i] = match modes[i] {
            _ if cursor >= 100.0 => QueryDrop::KeepAll,
            Mode::Random => QueryDrop::random(merged.queries[i]),
            Mode::Window => QueryDrop::window(keeps[i]),
            Mode::Semantic(_) => match q.value {
                Some(v) => QueryDrop::Semantic(semantic_drop(v.column, v.histogram, cursor)),
                None => QueryDrop::random(keeps[i]),
            },
        };
        out.delivered[i] = keeps[i];
        out.utility[i] = loss_utility(curve_of(i), cursor);
        stream_load += rate_of(input, q) * keeps[i] * non_negative(q.cost);
    }
    out.streams = merged.streams;
    out.expected_load = stream_load + queue_load;
    out.weighted_utility = weighted(qs, &out.utility);
}

/// `sum w_q * u_q / sum w_q`, 1 without queries.
fn weighted(qs: &[QueryInput], utility: &[f64]) -> f64 {
    let total: f64 = qs.iter().map(weight_of).sum();
    if total > 0.0 {
        qs.iter()
            .zip(utility)
            .map(|(q, u)| weight_of(q) * u)
            .sum::<f64>()
            / total
    } else {
        1.0
    }
}
