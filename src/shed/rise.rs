//! How fast a shedding plan may hand work back. The allocation prices keeps with costs
//! measured at other keeps; a query it re-admits after a pause, or raises a long way, can
//! cost far more than the model says. So each keep rises from the last shedding plan's by
//! at most `KEEP_RISE` a tick, and all the rising keeps together add at most `LOAD_RISE` of
//! the target in predicted load; falls are at once. Invariant: a limited keep lies between
//! the last plan's keep and the allocation's, and with no excess left (or no last plan)
//! nothing is limited.

use crate::qos::non_negative;

/// While shedding an excess, a query's keep rises by at most this much a tick (falls are at
/// once; with no excess left, every keep goes back to 1 at once):
/// a plan made on estimates of work the engine is not doing now (a paused query's, a
/// query kept thin) must not hand all of it back in one tick. Live, lifting the pauses of
/// four sliding-window queries at once queued 0.8 M tuples within two ticks.
pub const KEEP_RISE: f64 = 0.1;
/// And all keeps together by at most this share of the target load a tick, as predicted:
/// at 7x overload a 0.1 step of one HOP's keep is about 30% of the machine. Live, in
/// `soak --shape 7x-hop`, a HOP re-admitted 0 -> 0.1 -> 0.2 in two ticks after a
/// correction cut queued 0.35 M tuples and went over its target three ticks later.
pub const LOAD_RISE: f64 = 0.15;

/// What the limits did to one plan's keeps.
pub(super) struct Limited {
    pub keeps: Vec<f64>,
    /// A limit held at least one keep back, and no keep under 1 that a larger target could
    /// raise (`movable`) was free of them (`ShedPlan::rising`).
    pub rising: bool,
}

/// Limits the rise of the allocation's `keeps` from the last shedding plan's (`prev`)
/// while shedding an `excess`. `movable[i]`: the query's keep is the shedder's to raise
/// (neither paused nor lossless); `load_of(i, k)`: its predicted load at keep `k`.
pub(super) fn limit_rises(
    mut keeps: Vec<f64>,
    prev: Option<&[f64]>,
    excess: f64,
    target: f64,
    movable: &[bool],
    load_of: impl Fn(usize, f64) -> f64,
) -> Limited {
    let n = keeps.len();
    let mut held = vec![false; n];
    let mut was = vec![f64::NAN; n];
    for i in 0..n {
        let k = keeps[i];
        match prev.and_then(|p| p.get(i)) {
            Some(&w) if excess > 0.0 && movable[i] && w.is_finite() && k > w => {
                was[i] = w;
                if k > w + KEEP_RISE {
                    held[i] = true;
                    keeps[i] = w + KEEP_RISE;
                }
            }
            _ => {}
        }
    }
    let added: Vec<f64> = (0..n)
        .map(|i| {
            if was[i].is_nan() {
                0.0
            } else {
                (load_of(i, keeps[i]) - load_of(i, was[i])).max(0.0)
            }
        })
        .collect();
    let budget = LOAD_RISE * non_negative(target);
    let total: f64 = added.iter().sum();
    if total > budget {
        let f = budget / total;
        for i in 0..n {
            if added[i] > 0.0 {
                keeps[i] = was[i] + (keeps[i] - was[i]) * f;
                held[i] = true;
            }
        }
    }
    let free = (0..n).any(|i| !held[i] && movable[i] && keeps[i] < 1.0);
    Limited {
        rising: held.iter().any(|&h| h) && !free,
        keeps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_rise_a_step_each_and_a_share_of_the_target_together_and_fall_at_once() {
        // Load in proportion to the keep: 100 units of work per unit of keep.
        let load = |_: usize, k: f64| 100.0 * k;
        let prev = [0.2, 0.5, 0.9, 0.0];
        let movable = [true, true, true, false];
        // One query asks for far more, one a little more, one less; a lossless or paused
        // one is never limited.
        let l = limit_rises(
            vec![0.8, 0.55, 0.3, 1.0],
            Some(&prev),
            1.0,
            1000.0,
            &movable,
            load,
        );
        assert!(
            (l.keeps[0] - (0.2 + KEEP_RISE)).abs() < 1e-12,
            "{:?}",
            l.keeps
        );
        assert!((l.keeps[1] - 0.55).abs() < 1e-12);
        assert_eq!(l.keeps[2], 0.3);
        assert_eq!(l.keeps[3], 1.0);
        // The falling one is free to rise again later: not a plan held by the limits.
        assert!(!l.rising);
        // A small target: 15% of 50 units is 7.5, against 10 (the first, after its step
        // limit) + 5 asked for; both are scaled down alike, and the plan is held.
        let l = limit_rises(
            vec![0.6, 0.55],
            Some(&[0.2, 0.5]),
            1.0,
            50.0,
            &[true; 2],
            load,
        );
        let added = 100.0 * (l.keeps[0] - 0.2) + 100.0 * (l.keeps[1] - 0.5);
        assert!((added - LOAD_RISE * 50.0).abs() < 1e-9, "{:?}", l.keeps);
        assert!((l.keeps[0] - 0.25).abs() < 1e-9 && (l.keeps[1] - 0.525).abs() < 1e-9);
        assert!(l.rising);
        // No excess left, or no last plan: nothing is limited.
        for (prev, excess) in [(Some(&[0.0, 0.0][..]), 0.0), (None, 1.0)] {
            let l = limit_rises(vec![1.0, 0.7], prev, excess, 100.0, &[true; 2], load);
            assert_eq!(l.keeps, vec![1.0, 0.7]);
            assert!(!l.rising);
        }
    }
}
