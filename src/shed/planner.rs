//! The shedder's control step: from one snapshot it decides when (hysteresis trigger on the
//! model load and on latencies), how much (loss/gain greedy against `H * C * m`, `m` from
//! latency feedback), where (random drops merged at streams) and how (random, semantic or
//! window drops). Pure: the same input and state always give the same plan and next state.

use crate::qos::UtilityCurve;
use crate::qos::{QueryLoad, StreamLoad, engine_load, loss_utility};

use super::adapt::{adapt_headroom, refit};
use super::feedback::{Feedback, Gains, MAX_STEP, latency_error, latency_miss};
use super::greedy::{GreedyQuery, cover};
use super::input::{PolicyParams, QueryInput, ShedInput, ShedKind};
use super::model::{Rows, load_at};
use super::placement::merge_at_streams;
use super::plan::{QueryDrop, ShedPlan};
use super::semantic::{derived_curve, semantic_drop};
use super::trigger::Trigger;

/// A query is paused when shedding leaves it under this share of its input while its
/// non-shrinking work takes more than `PAUSE_SHARE` of the machine.
const PAUSE_KEEP: f64 = 0.1;
const PAUSE_SHARE: f64 = 0.5;
/// A pause is kept this many ticks, then the next plan decides afresh: a pause decided on
/// the first crude estimates of a surge must not last as long as the surge does.
const PAUSE_REVISIT: u32 = 40;
/// Caught up: the queued work is under this share of capacity while every latency has
/// more than `RECOVERY_SLACK` of its target to spare. A correction wound down while a
/// backlog lasted (a neighbour, a pause) then leaves the engine idle, so it rises by at
/// least the factor `1 + RECOVERY_STEP` a tick rather than at the integral's pace
/// (relative, so that a correction the model needs low is not thrown off it).
const CAUGHT_UP: f64 = 0.01;
const RECOVERY_SLACK: f64 = 0.3;
const RECOVERY_STEP: f64 = 0.25;
/// Below this model error a backlog counts as draining as predicted.
const DRAINING_ERROR: f64 = 0.1;

/// What the planner remembers between ticks.
#[derive(Clone, Debug, PartialEq)]
pub struct ShedState {
    pub(super) trigger: Trigger,
    pub(super) feedback: Feedback,
    pub(super) last: Option<ShedPlan>,
    /// Multiplier of every model cost, refitted when the correction sits at a bound.
    pub(super) scale: f64,
    /// Consecutive ticks at the lower / upper bound of the correction.
    pub(super) pinned_low: u32,
    pub(super) pinned_high: u32,
    /// Adaptive headroom in force (`None` before the first tick: the policy's).
    pub(super) headroom: Option<f64>,
    /// Queries paused because input drops could not help them; kept while shedding lasts,
    /// revisited every `PAUSE_REVISIT` ticks.
    pub(super) paused: Vec<bool>,
    /// Ticks since the pauses were last decided afresh.
    pub(super) pause_age: u32,
    /// Queries switched to whole-key drops; kept while shedding lasts.
    pub(super) by_keys: Vec<bool>,
}

impl Default for ShedState {
    fn default() -> ShedState {
        ShedState {
            trigger: Trigger::default(),
            feedback: Feedback::default(),
            last: None,
            scale: 1.0,
            pinned_low: 0,
            pinned_high: 0,
            headroom: None,
            paused: Vec::new(),
            pause_age: 0,
            by_keys: Vec::new(),
        }
    }
}

impl ShedState {
    pub fn new() -> ShedState {
        ShedState::default()
    }

    /// The factor the model's costs are multiplied by.
    pub fn model_scale(&self) -> f64 {
        self.scale
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
#[derive(Clone, Copy)]
enum Mode {
    Random,
    /// A stable share of the query's keys (rows shrink with it).
    Keys,
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
    let scale = state.scale;
    let streams: Vec<StreamLoad> = input
        .streams
        .iter()
        .map(|s| StreamLoad { rate: s.rate })
        .collect();
    let loads: Vec<QueryLoad> = qs
        .iter()
        .map(|q| QueryLoad {
            stream: q.stream,
            cost: q.cost * scale,
            queued: q.queued,
            keep: 1.0,
        })
        .collect();
    let report = engine_load(&streams, &loads, p.melt);
    // Row work at full input, beyond the per-tuple work.
    let rows_load: f64 = qs
        .iter()
        .map(|q| {
            let r = rate_of(input, q);
            load_at(q, r, 1.0, q.rows_shape, scale)
                - load_at(
                    &QueryInput {
                        row_cost: 0.0,
                        ..*q
                    },
                    r,
                    1.0,
                    q.rows_shape,
                    scale,
                )
        })
        .sum();
    let total = report.total + rows_load;

    let mut out = ShedPlan::keep_all(input.streams.len(), qs.len());
    for (u, q) in out.utility.iter_mut().zip(qs) {
        *u = loss_utility(q.loss, 100.0);
    }
    out.weighted_utility = weighted(qs, &out.utility);
    out.load = total;
    out.expected_load = total;
    out.expected_input = total - report.queue;
    out.model_scale = scale;
    if p.kind == ShedKind::None {
        out.headroom = p.headroom;
        out.target = p.headroom * capacity;
        out.excess = total - out.target;
        return out;
    }
    let gains = Gains {
        kp: p.kp,
        ki: p.ki,
        min: p.correction_min,
        max: p.correction_max,
    };
    let error = latency_error(qs, p.setpoint);
    // A latency held up by a backlog the model already accounts for (its queue load) and
    // that no more work than predicted is feeding is not a model error: the correction
    // holds instead of winding down, and the backlog's melt does the work.
    let draining = report.queue > 0.0 && input.model_error.is_some_and(|e| e < DRAINING_ERROR);
    let before = state.feedback.correction();
    let mut m = state
        .feedback
        .update(error.filter(|e| !(draining && *e < 0.0)), gains);
    if report.queue <= CAUGHT_UP * capacity && error.is_some_and(|e| e > RECOVERY_SLACK) {
        m = m.max(
            (before * (1.0 + RECOVERY_STEP))
                .min(before + MAX_STEP)
                .min(gains.max),
        );
        state.feedback.reset(m);
    }
    let headroom = adapt_headroom(state, &p, error);
    out.correction = m;
    out.headroom = headroom;
    out.target = headroom * capacity * m;
    out.excess = total - out.target;
    out.shedding = state
        .trigger
        .update(total, out.target, latency_miss(qs), p.low, p.hold);
    refit(
        state,
        &p,
        m,
        error,
        input.model_error,
        out.shedding,
        &mut out,
    );
    if out.shedding && p.kind != ShedKind::TailDrop {
        state.pause_age = if state.paused.contains(&true) {
            state.pause_age + 1
        } else {
            0
        };
        if state.pause_age >= PAUSE_REVISIT {
            state.pause_age = 0;
            state.paused.clear();
        }
        allocate(
            input,
            &p,
            report.queue,
            scale,
            &mut state.paused,
            &mut state.by_keys,
            &mut out,
        );
    } else {
        state.paused.clear();
        state.pause_age = 0;
        state.by_keys.clear();
    }
    out
}

/// How a query's keep is realised and how its rows follow the keep.
fn shape_of(q: &QueryInput, mode: &Mode) -> Rows {
    match mode {
        Mode::Window | Mode::Keys => Rows::Linear,
        _ => q.rows_shape,
    }
}

/// How much, where and how: greedy cursors against `out.excess`, merged at streams,
/// realised per query. The greedy sees linear gains; the plan is then checked against the
/// full load model (rows that do not shrink with the input) and tightened; if dropping
/// input cannot cover the excess, whole-window drops take over where a query allows
/// them, and the lowest-utility queries are paused.
fn allocate(
    input: &ShedInput,
    p: &PolicyParams,
    queue_load: f64,
    scale: f64,
    sticky: &mut Vec<bool>,
    by_keys: &mut Vec<bool>,
    out: &mut ShedPlan,
) {
    let qs = &input.queries;
    let mut derived = Vec::new();
    let mut modes: Vec<Mode> = qs.iter().map(|q| mode(p.kind, q, &mut derived)).collect();
    by_keys.resize(qs.len(), false);
    for (i, m) in modes.iter_mut().enumerate() {
        if by_keys[i] {
            *m = Mode::Keys;
        }
    }
    // Work at keep 1. A query dropping whole keys sheds its window work too, but only as
    // its open windows close: the fixed work stays reserved until the fit sees it go.
    let full_of = |modes: &[Mode]| -> Vec<f64> {
        qs.iter()
            .zip(modes)
            .map(|(q, m)| load_at(q, rate_of(input, q), 1.0, shape_of(q, m), scale))
            .collect()
    };
    let mut full = full_of(&modes);
    sticky.resize(qs.len(), false);
    let mut paused: Vec<bool> = (0..qs.len())
        .map(|i| sticky[i] && !qs[i].lossless)
        .collect();
    let mut excess = out.excess;
    let mut cov;
    let mut round = 0;
    loop {
        let curve_of = |i: usize| match modes[i] {
            Mode::Semantic(d) => Some(&derived[d]),
            Mode::Random | Mode::Window | Mode::Keys => qs[i].loss,
        };
        let greedy: Vec<GreedyQuery> = qs
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let r = rate_of(input, q);
                // Gain of a linear query is all of its work; of a grouped one, only the
                // per-tuple part is sure to go with the input.
                let gain = match shape_of(q, &modes[i]) {
                    Rows::Linear => full[i],
                    Rows::Grouped { .. } => r * non_negative(q.cost) * scale,
                };
                GreedyQuery {
                    stream: q.stream,
                    gain_per_percent: gain / 100.0,
                    weight: weight_of(q),
                    curve: curve_of(i),
                    movable: !q.lossless && !paused[i],
                }
            })
            .collect();
        let pause_gain: f64 = (0..qs.len()).filter(|&i| paused[i]).map(|i| full[i]).sum();
        cov = cover(&greedy, input.streams.len(), excess - pause_gain, p.step);
        let keeps: Vec<f64> = (0..qs.len())
            .map(|i| {
                if paused[i] {
                    0.0
                } else {
                    cov.cursors[i] / 100.0
                }
            })
            .collect();
        let predicted: f64 = qs
            .iter()
            .enumerate()
            .map(|(i, q)| {
                load_at(
                    q,
                    rate_of(input, q),
                    keeps[i],
                    shape_of(q, &modes[i]),
                    scale,
                )
            })
            .sum::<f64>()
            + queue_load;
        // The dominance rule: a grouped query left under PAUSE_KEEP of its input while its
        // work that does not shrink with the input takes over PAUSE_SHARE of the machine
        // buys little: drop whole keys instead (its rows then shrink), or pause it.
        let whole =
            non_negative(input.capacity) + qs.iter().map(|q| non_negative(q.fixed)).sum::<f64>();
        let dominated = (0..qs.len()).find(|&i| {
            let q = &qs[i];
            let k = keeps[i];
            let r = rate_of(input, q);
            !paused[i]
                && !q.lossless
                && matches!(modes[i], Mode::Random)
                && matches!(q.rows_shape, Rows::Grouped { .. })
                && k < PAUSE_KEEP
                && non_negative(q.fixed) * scale + load_at(q, r, k, shape_of(q, &modes[i]), scale)
                    - r * k * non_negative(q.cost) * scale
                    > PAUSE_SHARE * whole
        });
        if let Some(i) = dominated
            && round < 2 * qs.len() + 4
        {
            out.input_insufficient = true;
            round += 1;
            if qs[i].keys {
                modes[i] = Mode::Keys;
                full = full_of(&modes);
            } else {
                paused[i] = true;
            }
            continue;
        }
        let over = predicted - out.target;
        let unmet = excess - pause_gain - cov.gained;
        round += 1;
        if round > 2 * qs.len() + 4 || (over <= 0.02 * out.target.max(1.0) && unmet <= 0.0) {
            break;
        }
        // Row work of grouped queries still running, which the greedy's gains leave out.
        let hidden: f64 = (0..qs.len())
            .filter(|&i| {
                !paused[i]
                    && !qs[i].lossless
                    && matches!(shape_of(&qs[i], &modes[i]), Rows::Grouped { .. })
            })
            .map(|i| full[i] - rate_of(input, &qs[i]) * non_negative(qs[i].cost) * scale)
            .sum();
        // Work no drop can remove this tick: the backlog's melt and lossless queries.
        let floor = queue_load
            + (0..qs.len())
                .filter(|&i| qs[i].lossless)
                .map(|i| full[i])
                .sum::<f64>();
        if unmet > 0.0 && (hidden <= 0.0 || floor >= out.target) {
            // Nothing but queued or lossless work is left: shedding cannot do more.
            break;
        }
        if unmet > 0.0 {
            // Input drops alone cannot cover: switch a windowed query to whole-window
            // drops (its rows then shrink with its input), else pause the query with the
            // least utility per unit of load.
            out.input_insufficient = true;
            if let Some(i) = (0..qs.len()).find(|&i| {
                qs[i].windowed
                    && !qs[i].lossless
                    && matches!(modes[i], Mode::Random)
                    && matches!(qs[i].rows_shape, Rows::Grouped { .. })
            }) {
                modes[i] = Mode::Window;
                continue;
            }
            let next = (0..qs.len())
                .filter(|&i| !qs[i].lossless && !paused[i] && full[i] > 0.0)
                .min_by(|&a, &b| {
                    (weight_of(&qs[a]) / full[a]).total_cmp(&(weight_of(&qs[b]) / full[b]))
                });
            match next {
                Some(i) => paused[i] = true,
                None => break,
            }
        } else {
            // The rows shrank less than the greedy assumed: ask for the difference.
            excess += over;
        }
    }
    *sticky = paused.clone();
    *by_keys = modes.iter().map(|m| matches!(m, Mode::Keys)).collect();
    out.unmet = (excess
        - cov.gained
        - (0..qs.len())
            .filter(|&i| paused[i])
            .map(|i| full[i])
            .sum::<f64>())
    .max(0.0);
    out.paused = (0..qs.len()).filter(|&i| paused[i]).collect();
    let curve_of = |i: usize| match modes[i] {
        Mode::Semantic(d) => Some(&derived[d]),
        Mode::Random | Mode::Window | Mode::Keys => qs[i].loss,
    };

    // Where: random drops shared by a whole stream move up to it.
    let keeps: Vec<f64> = (0..qs.len())
        .map(|i| {
            if paused[i] {
                0.0
            } else {
                cov.cursors[i] / 100.0
            }
        })
        .collect();
    let mergeable: Vec<bool> = modes.iter().map(|m| matches!(m, Mode::Random)).collect();
    let query_streams: Vec<usize> = qs.iter().map(|q| q.stream).collect();
    let merged = merge_at_streams(input.streams.len(), &query_streams, &keeps, &mergeable);

    // How: each query's drop, and what it is expected to deliver.
    let mut stream_load = 0.0;
    for (i, q) in qs.iter().enumerate() {
        let cursor = 100.0 * keeps[i];
        out.queries[i] = match modes[i] {
            _ if cursor >= 100.0 => QueryDrop::KeepAll,
            Mode::Random => QueryDrop::random(merged.queries[i]),
            Mode::Window => QueryDrop::window(keeps[i]),
            Mode::Keys if keeps[i] >= 1.0 - 1e-12 => QueryDrop::KeepAll,
            Mode::Keys => QueryDrop::Keys { keep: keeps[i] },
            Mode::Semantic(_) => match q.value {
                Some(v) => QueryDrop::Semantic(semantic_drop(v.column, v.histogram, cursor)),
                None => QueryDrop::random(keeps[i]),
            },
        };
        out.delivered[i] = keeps[i];
        out.utility[i] = loss_utility(curve_of(i), cursor);
        stream_load += load_at(
            q,
            rate_of(input, q),
            keeps[i],
            shape_of(q, &modes[i]),
            scale,
        );
    }
    out.streams = merged.streams;
    out.expected_load = stream_load + queue_load;
    out.expected_input = stream_load;
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
