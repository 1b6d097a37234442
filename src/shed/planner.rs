//! The shedder's control step: from one snapshot it decides when (hysteresis trigger on the
//! model load and on latencies) and against what target (`H * C * m * lift`, `m` from
//! latency feedback, `H` adaptive headroom, `lift` from idle time under shedding plans);
//! `allocate` then decides how much, where and how.
//! Pure: the same input and state always give the same plan and next state.

use crate::qos::{QueryLoad, StreamLoad, engine_load, loss_utility};

use super::adapt::{adapt_headroom, adapt_lift, refit};
use super::allocate::{Held, allocate, weighted};
use super::feedback::{Feedback, Gains, MAX_STEP, latency_error, latency_miss};
use super::input::{QueryInput, ShedInput, ShedKind};
use super::model::load_at;
use super::plan::ShedPlan;
use super::trigger::Trigger;

/// A pause is kept this many ticks, then the next plan decides afresh: a pause decided on
/// the first crude estimates of a surge must not last as long as the surge does.
const PAUSE_REVISIT: u32 = 40;
/// ... or sooner, once the target's factor (the correction times the idle lift) has risen
/// this many times over what it was when the last query was paused (live, pauses decided
/// at `m` 0.2 in a surge's backlog left the engine half idle for two seconds at `m` 1;
/// after a step down to 0.5x input, a query paused at its overload cost stayed paused
/// 2.5 s while the lift climbed to 4 on the idle time the pause left).
const PAUSE_RECOVERED: f64 = 2.0;
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
/// The backlog is growing when its floor holds more than `GROWING_FLOOR` seconds of work
/// and rose by more than `GROWING_RATE` of capacity per second: the engine takes less
/// than the plan admits, whatever the latencies say yet. Live, on a ramp through
/// capacity, a model a few percent optimistic let the floor rise from 1 ms to 120 ms of
/// work over two seconds while every latency still had half its target to spare.
pub(super) const GROWING_FLOOR: f64 = 0.002;
pub(super) const GROWING_RATE: f64 = 0.02;
/// Ticks after a cut for growth during which more growth is not cut for again.
const GROWTH_LAG: u32 = 3;

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
    /// The correction times the lift (`m * lift`) when a query was last paused: once it
    /// has risen to `PAUSE_RECOVERED` times that, the pauses are decided afresh (they were
    /// chosen against a target the feedback or the lift has since raised).
    pub(super) pause_m: f64,
    /// Ticks left before the backlog's growth is answered again (`GROWTH_LAG`).
    pub(super) growth_wait: u32,
    /// Queries switched to whole-key drops; kept while shedding lasts.
    pub(super) by_keys: Vec<bool>,
    /// The idle lift in force (`adapt::adapt_lift`), 1 until the engine is seen idle under
    /// a shedding plan.
    pub(super) lift: f64,
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
            pause_m: 1.0,
            growth_wait: 0,
            by_keys: Vec::new(),
            lift: 1.0,
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

    /// Lowers the correction by `share` of the target (at most `step`, never under `min`):
    /// work an inner loop had to take out of the last plan (the runtime's queue ceilings)
    /// is work the model under-priced, and the next plan must hear of it, as a feedback
    /// that saw the latency it prevented would have.
    pub fn lower_correction(&mut self, share: f64, step: f64, min: f64) {
        if !(share.is_finite() && share > 0.0) {
            return;
        }
        let m = self.feedback.correction();
        let lowered = (m * (1.0 - share.min(1.0)))
            .max(m - step.clamp(0.0, MAX_STEP))
            .max(min);
        if lowered < m {
            self.feedback.reset(lowered);
        }
    }
}

pub(super) use crate::qos::non_negative;

/// One control tick: updates `state` and returns the plan to install.
///
/// Load is planned on the unshed demand: `T = sum_s r_s * (f_s + L_s) + melt * sum_q c_q *
/// queued_q` with `L_s = sum of c_q` over the queries of `s` and `f_s` its fan-out work per
/// tuple, against `target = H * C * m * lift`.
pub fn plan(input: &ShedInput, state: &mut ShedState) -> ShedPlan {
    let out = decide(input, state);
    state.last = Some(out.clone());
    out
}

/// The backlog's growth as a share of capacity, when it is growing (`GROWING_FLOOR`,
/// `GROWING_RATE`).
fn growing(input: &ShedInput, capacity: f64) -> Option<f64> {
    let b = input.backlog?;
    (capacity > 0.0 && b.floor > GROWING_FLOOR * capacity && b.growth > GROWING_RATE * capacity)
        .then(|| b.growth / capacity)
}

pub(super) fn rate_of(input: &ShedInput, q: &QueryInput) -> f64 {
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
    // Fan-out past the stream drop points, at full input.
    let ingest: f64 = input
        .streams
        .iter()
        .map(|s| non_negative(s.rate) * non_negative(s.ingest))
        .sum();
    let total = report.total + rows_load + ingest;

    let mut out = ShedPlan::keep_all(input.streams.len(), qs.len());
    for (u, q) in out.utility.iter_mut().zip(qs) {
        *u = loss_utility(q.loss, 100.0);
    }
    out.weighted_utility = weighted(qs, &out.utility);
    out.load = total;
    out.expected_load = total;
    out.expected_input = total - report.queue - ingest;
    out.ingest = ingest;
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
    let growth = growing(input, capacity);
    // The floors lag a cut by a window or so: growth seen in the next `GROWTH_LAG` ticks
    // was already answered, and cutting for it again would shed it twice.
    let fresh = growth.filter(|_| state.growth_wait == 0);
    state.growth_wait = if fresh.is_some() {
        GROWTH_LAG
    } else {
        state.growth_wait.saturating_sub(1)
    };
    let before = state.feedback.correction();
    let mut m = match growth {
        // The engine takes less than the plan admits: the target comes down by the
        // excess the floor's growth measures (`H * C * m` less `growth`, in the model's
        // scaled costs), at most one step a tick, and latencies with room to spare do not
        // push it back up while the floor still rises.
        Some(g) => {
            let held = state
                .feedback
                .update(error.filter(|e| *e < 0.0 && !draining), gains);
            let m = if fresh.is_some() {
                let h = state.headroom.unwrap_or(p.headroom).max(0.1);
                let cut = (before - g * scale / h)
                    .max(before - MAX_STEP)
                    .max(gains.min);
                held.min(cut)
            } else {
                held
            };
            state.feedback.reset(m);
            m
        }
        None => state
            .feedback
            .update(error.filter(|e| !(draining && *e < 0.0)), gains),
    };
    if growth.is_none()
        && report.queue <= CAUGHT_UP * capacity
        && error.is_some_and(|e| e > RECOVERY_SLACK)
    {
        m = m.max(
            (before * (1.0 + RECOVERY_STEP))
                .min(before + MAX_STEP)
                .min(gains.max),
        );
        state.feedback.reset(m);
    }
    let keeps_up = input
        .backlog
        .is_some_and(|b| b.floor <= GROWING_FLOOR * capacity);
    let headroom = adapt_headroom(state, &p, error, keeps_up, fresh.is_some());
    let idle = if capacity > 0.0 {
        non_negative(input.idle) / capacity
    } else {
        0.0
    };
    let overloaded = total > headroom * capacity * m * state.lift;
    let lift = adapt_lift(state, qs, idle, error, growth.is_some(), overloaded);
    out.correction = m;
    out.headroom = headroom;
    out.lift = lift;
    out.target = headroom * capacity * m * lift;
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
        let pausing = state.paused.contains(&true);
        if state.pause_age >= PAUSE_REVISIT
            || (pausing && m * lift >= PAUSE_RECOVERED * state.pause_m)
        {
            state.pause_age = 0;
            state.paused.clear();
        }
        let had = state.paused.iter().filter(|&&x| x).count();
        // Keeps rise from the last shedding plan's, a step a tick (`allocate`).
        let prev = state
            .last
            .as_ref()
            .filter(|l| l.shedding)
            .map(|l| l.delivered.clone());
        allocate(
            input,
            &p,
            report.queue,
            scale,
            Held {
                prev: prev.as_deref(),
                paused: &mut state.paused,
                by_keys: &mut state.by_keys,
            },
            &mut out,
        );
        if state.paused.iter().filter(|&&x| x).count() > had {
            state.pause_m = m * lift;
        }
    } else {
        state.paused.clear();
        state.pause_age = 0;
        state.by_keys.clear();
        if !out.shedding {
            state.lift = 1.0;
        }
    }
    out
}
