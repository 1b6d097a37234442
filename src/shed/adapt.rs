//! Adapting the planner to what it observes: adaptive headroom from latency slack, the
//! idle lift from capacity the engine left unused, and refitting the load model when the
//! feedback correction sits at a bound. Invariant: the headroom stays in `[H, 1]`, the lift
//! in `[1, LIFT_MAX]` and the model scale in `[1 / SCALE_LIMIT, SCALE_LIMIT]`.

use super::input::{PolicyParams, QueryInput};
use super::plan::ShedPlan;
use super::planner::ShedState;

/// Consecutive ticks the correction may sit at a bound before the model is refitted.
const REFIT_TICKS: u32 = 4;
/// The model must have under-predicted the arriving work by this share to be refitted.
const REFIT_ERROR: f64 = 0.25;
/// One refit multiplies the model's costs by at most this: a correction driven to its
/// floor by a transient (the backlog of a surge's first ticks, a descheduled engine) must
/// not be locked into the model whole, since only `REFIT_UNDO` per refit takes it back.
const REFIT_STEP: f64 = 2.0;
/// "At the lower bound" means within this factor of it.
const NEAR_FLOOR: f64 = 3.0;
/// The model scale stays within `[1 / SCALE_LIMIT, SCALE_LIMIT]`.
const SCALE_LIMIT: f64 = 256.0;
/// Adaptive headroom: rise per tick with ample slack, fall per tick without.
const HEADROOM_UP: f64 = 0.01;
const HEADROOM_DOWN: f64 = 0.05;
/// "Ample slack": the worst latency error (share of target to spare below the setpoint).
const AMPLE_SLACK: f64 = 0.3;

/// The idle lift: a shedding plan may leave the engine waiting for input this share of
/// the time before the target rises (the engine's own loop, its clock reads and its
/// batches' arrival leave a little idle time in any plan).
pub const IDLE_TARGET: f64 = 0.05;
/// The lift rises by at most this factor's excess over 1 in one tick (`1 + 0.1`): the
/// idle share a plan leaves is measured a tick after it is installed.
const LIFT_STEP: f64 = 0.1;
/// The lift falls by this factor a tick once a latency is above its setpoint or the
/// backlog grows.
const LIFT_DOWN: f64 = 0.8;
/// The lift rises only after a plan that handed out at least this share of its target:
/// idle time under a plan that admitted less (keeps rising a step a tick after a surge,
/// paused queries) says nothing about the model, and lifting for it would wind up.
const LIFT_USED: f64 = 0.9;
/// ... and whose queries received what it planned: each at least this share of its
/// planned keep (less `DELIVERED_SLACK`, for the measurement's smoothing). A window-aware
/// drop that withholds a whole window leaves the engine idle with the plan's keep unmet:
/// lifting the target for it would admit the next window larger still (in simulation,
/// every window of `workloads/window-aware.yaml` was withheld).
const DELIVERED_SHARE: f64 = 0.75;
const DELIVERED_SLACK: f64 = 0.05;
/// The lift stays within `[1, LIFT_MAX]`: a model that over-prices the work four times
/// over is as far as idle time is trusted to correct.
const LIFT_MAX: f64 = 4.0;

/// The idle lift: the target's factor for capacity the model priced as used but the
/// engine spent waiting for input. Live, with every correction and the headroom at 1, the
/// engine waited a fifth to a third of each shedding tick with every queue empty (the
/// model priced the admitted work 1.3-1.5x over what it cost). It rises while the last
/// plan dropped input, handed out its target (`LIFT_USED`) and was not `rising` (the rise
/// limit held back every keep a larger target could raise: while the keeps climb a step a
/// tick after a burst the engine idles whatever the prices, and the lift, with nothing to
/// act on, would only wind up), its queries received it
/// (`DELIVERED_SHARE`), the demand is still above the target, every latency has ample
/// slack, the backlog does not grow and the engine waited more than `IDLE_TARGET` of the
/// tick (`idle`, a share of capacity): by the idle excess, at most `LIFT_STEP`. It falls by
/// `LIFT_DOWN` once a latency is above its setpoint or the backlog grows, and goes back to
/// 1 when shedding stops (`planner`): live, with a busy neighbour, a query held at keep
/// 0.01 read its cost inflated after a burst, the keeps climbed a step a tick while the
/// engine idled, and the lift wound up to 3.4 within the shedding period (the plans,
/// priced with the inflated cost, looked as if they handed out their target), which must
/// not over-admit the next surge.
pub(super) fn adapt_lift(
    state: &mut ShedState,
    queries: &[QueryInput],
    idle: f64,
    error: Option<f64>,
    grows: bool,
    overloaded: bool,
) -> f64 {
    let dropped = state.last.as_ref().is_some_and(|l| {
        l.shedding
            && l.drops_any()
            && !l.rising
            && l.expected_load >= LIFT_USED * l.target
            && l.delivered.len() == queries.len()
            && queries
                .iter()
                .zip(&l.delivered)
                .all(|(q, &d)| q.keep_now >= DELIVERED_SHARE * d - DELIVERED_SLACK)
    });
    let lift = match error {
        _ if grows => state.lift * LIFT_DOWN,
        Some(e) if e < 0.0 => state.lift * LIFT_DOWN,
        Some(e) if e > AMPLE_SLACK && dropped && overloaded && idle > IDLE_TARGET => {
            state.lift * (1.0 + (idle - IDLE_TARGET).min(LIFT_STEP))
        }
        _ => state.lift,
    };
    state.lift = if lift.is_finite() {
        lift.clamp(1.0, LIFT_MAX)
    } else {
        1.0
    };
    state.lift
}

/// Adaptive headroom: up by `HEADROOM_UP` per shedding tick while the worst latency has
/// ample slack and the engine keeps up (`keeps_up`: the backlog's floor, measured, holds
/// under `GROWING_FLOOR` of work: slack shown under load, not the calm before a backlog),
/// down by `HEADROOM_DOWN` once any latency is above its setpoint or the backlog grows
/// (`grows`, as the correction is cut for it), within `[H, 1]`.
pub(super) fn adapt_headroom(
    state: &mut ShedState,
    p: &PolicyParams,
    error: Option<f64>,
    keeps_up: bool,
    grows: bool,
) -> f64 {
    let h = state.headroom.unwrap_or(p.headroom);
    let h = if !p.adaptive_headroom {
        p.headroom
    } else {
        match error {
            _ if grows => h - HEADROOM_DOWN,
            Some(e) if e < 0.0 => h - HEADROOM_DOWN,
            Some(e) if e > AMPLE_SLACK && keeps_up && state.trigger.shedding() => h + HEADROOM_UP,
            _ => h,
        }
        .clamp(p.headroom, 1.0)
    };
    state.headroom = Some(h);
    h
}

/// When the correction has sat at a bound for `REFIT_TICKS` ticks, the model absorbs it:
/// at the lower bound its scale is multiplied by `1 / m`, at most `REFIT_STEP`, and `m` by
/// the same factor (the same effective model, but the correction is off its bound and
/// free to move either way). At the lower bound the model was too optimistic; at the upper
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
    // Near the floor rather than on it: the proportional term can lift `m` off the floor
    // every other tick while the model stays just as wrong.
    let low = m <= NEAR_FLOOR * p.correction_min && model_error.is_some_and(|e| e > REFIT_ERROR);
    let high = m >= p.correction_max * (1.0 - 1e-9) && shedding && error.is_some_and(|e| e > 0.0);
    state.pinned_low = if low { state.pinned_low + 1 } else { 0 };
    state.pinned_high = if high && state.scale > 1.0 {
        state.pinned_high + 1
    } else {
        0
    };
    let (factor, restart) = if state.pinned_low >= REFIT_TICKS {
        let f = (1.0 / m).min(REFIT_STEP);
        (f, (m * f).min(p.correction_max))
    } else if state.pinned_high >= REFIT_TICKS {
        // Undoes an earlier refit gently (never below the measured costs): a model
        // that was right a moment ago should not swing.
        ((1.0 / state.scale).max(0.8), 1.0)
    } else {
        return;
    };
    state.scale = (state.scale * factor).clamp(1.0 / SCALE_LIMIT, SCALE_LIMIT);
    state.feedback.reset(restart);
    state.pinned_low = 0;
    state.pinned_high = 0;
    out.refit = Some(state.scale);
}
