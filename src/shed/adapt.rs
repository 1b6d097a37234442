//! Adapting the planner to what it observes: adaptive headroom from latency slack, and
//! refitting the load model when the feedback correction sits at a bound. Invariant: the
//! headroom stays in `[H, 1]` and the model scale in `[1 / SCALE_LIMIT, SCALE_LIMIT]`.

use super::input::PolicyParams;
use super::plan::ShedPlan;
use super::planner::ShedState;

/// Consecutive ticks the correction may sit at a bound before the model is refitted.
const REFIT_TICKS: u32 = 4;
/// The model must have under-predicted the arriving work by this share to be refitted.
const REFIT_ERROR: f64 = 0.25;
/// The model scale stays within `[1 / SCALE_LIMIT, SCALE_LIMIT]`.
const SCALE_LIMIT: f64 = 256.0;
/// Adaptive headroom: rise per tick with ample slack, fall per tick without.
const HEADROOM_UP: f64 = 0.01;
const HEADROOM_DOWN: f64 = 0.05;
/// "Ample slack": the worst latency error (share of target to spare below the setpoint).
const AMPLE_SLACK: f64 = 0.3;

/// Adaptive headroom: up by `HEADROOM_UP` per shedding tick while the worst latency has
/// ample slack, down by `HEADROOM_DOWN` once any latency is above its setpoint, within
/// `[H, 1]`.
pub(super) fn adapt_headroom(state: &mut ShedState, p: &PolicyParams, error: Option<f64>) -> f64 {
    let h = state.headroom.unwrap_or(p.headroom);
    let h = if !p.adaptive_headroom {
        p.headroom
    } else {
        match error {
            Some(e) if e < 0.0 => h - HEADROOM_DOWN,
            Some(e) if e > AMPLE_SLACK && state.trigger.shedding() => h + HEADROOM_UP,
            _ => h,
        }
        .clamp(p.headroom, 1.0)
    };
    state.headroom = Some(h);
    h
}

/// When the correction has sat at a bound for `REFIT_TICKS` ticks, the model absorbs it:
/// its scale is divided by `m` and `m` restarts at 1 (the same target, but the correction
/// is free to move again). At the lower bound the model was too optimistic; at the upper
/// bound, while shedding with slack to spare, an earlier refit is undone step by step.
pub(super) fn refit(
    state: &mut ShedState,
    p: &PolicyParams,
    m: f64,
    error: Option<f64>,
    model_error: Option<f64>,
    shedding: bool,
    out: &mut ShedPlan,
) {
    // Only when the model is seen to be wrong (more work arrived than it predicted): a
    // latency held up by a backlog that is already draining at full speed is no reason.
    let low = m <= p.correction_min * (1.0 + 1e-9) && model_error.is_some_and(|e| e > REFIT_ERROR);
    let high = m >= p.correction_max * (1.0 - 1e-9) && shedding && error.is_some_and(|e| e > 0.0);
    state.pinned_low = if low { state.pinned_low + 1 } else { 0 };
    state.pinned_high = if high && state.scale > 1.0 {
        state.pinned_high + 1
    } else {
        0
    };
    let factor = if state.pinned_low >= REFIT_TICKS {
        1.0 / m
    } else if state.pinned_high >= REFIT_TICKS {
        // Undoes an earlier refit gently (never below the measured costs): a model
        // that was right a moment ago should not swing.
        (1.0 / state.scale).max(0.8)
    } else {
        return;
    };
    state.scale = (state.scale * factor).clamp(1.0 / SCALE_LIMIT, SCALE_LIMIT);
    state.feedback.reset(1.0);
    state.pinned_low = 0;
    state.pinned_high = 0;
    out.refit = Some(state.scale);
}
