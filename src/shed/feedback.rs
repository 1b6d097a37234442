//! Feedback on latency (Tu et al., VLDB 2006): a velocity-form PI controller that scales the
//! model's capacity target `H * C` by a correction `m`. Invariant: `m` stays within its
//! bounds and never integrates past them (anti-windup), so it recovers as soon as the error
//! turns.

use super::input::QueryInput;

/// Largest move of `m` in one tick: one odd measurement (an engine pause, a burst of
/// window closings) cannot swing the correction further than this.
pub const MAX_STEP: f64 = 0.2;

/// Controller state carried between ticks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Feedback {
    correction: f64,
    /// Error of the last tick that had one; 0 before the first, which makes the velocity
    /// form match the positional `m = 1 + kp * e + ki * sum e`.
    prev_error: f64,
}

impl Default for Feedback {
    fn default() -> Feedback {
        Feedback {
            correction: 1.0,
            prev_error: 0.0,
        }
    }
}

/// Controller gains and bounds, already sanitised.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gains {
    pub kp: f64,
    pub ki: f64,
    pub min: f64,
    pub max: f64,
}

impl Feedback {
    /// Restarts at `m` (after the model was refitted to absorb the old correction).
    pub fn reset(&mut self, m: f64) {
        self.correction = m;
    }

    /// The current correction `m`.
    pub fn correction(&self) -> f64 {
        self.correction
    }

    /// One tick: `m += kp * (e - e_prev) + ki * e` (a move of at most `MAX_STEP`), clamped to `[min, max]`, where `e` is the
    /// relative latency error (positive: room to spare). The integral term is skipped while
    /// `m` sits at a bound and `e` pushes further into it. Without an error (no latency
    /// measured this tick) `m` holds. Returns the new `m`.
    pub fn update(&mut self, error: Option<f64>, g: Gains) -> f64 {
        let m = self.correction.clamp(g.min, g.max);
        let Some(e) = error.filter(|e| e.is_finite()) else {
            self.correction = m;
            return m;
        };
        let e = e.clamp(-1.0, 1.0);
        let pushing_past = (m >= g.max && e > 0.0) || (m <= g.min && e < 0.0);
        let integral = if pushing_past { 0.0 } else { g.ki * e };
        let step = (g.kp * (e - self.prev_error) + integral).clamp(-MAX_STEP, MAX_STEP);
        self.correction = (m + step).clamp(g.min, g.max);
        self.prev_error = e;
        self.correction
    }
}

/// The worst relative latency error over queries with a positive target and a measurement:
/// `min of (setpoint * target - measured) / target`, clamped to `[-1, 1]`. `None` when no
/// query has both.
pub fn latency_error(queries: &[QueryInput], setpoint: f64) -> Option<f64> {
    queries
        .iter()
        .filter_map(|q| {
            let l = q.latency?;
            let measured = l.measured?;
            (l.target > 0.0 && measured.is_finite())
                .then(|| ((setpoint * l.target - measured) / l.target).clamp(-1.0, 1.0))
        })
        .reduce(f64::min)
}

/// Whether any query's measured latency is above its target.
pub fn latency_miss(queries: &[QueryInput]) -> bool {
    queries.iter().any(|q| {
        q.latency
            .is_some_and(|l| l.target > 0.0 && l.measured.is_some_and(|m| m > l.target))
    })
}

#[cfg(test)]
mod tests {
    use super::super::input::LatencyInput;
    use super::*;

    const G: Gains = Gains {
        kp: 0.1,
        ki: 0.05,
        min: 0.05,
        max: 1.0,
    };

    #[test]
    fn the_worst_query_sets_the_error() {
        let with = |target, measured| QueryInput {
            latency: Some(LatencyInput { target, measured }),
            ..QueryInput::new(0, 1.0)
        };
        let qs = [
            with(100.0, Some(50.0)),
            with(100.0, Some(130.0)),
            with(100.0, None),
            QueryInput::new(0, 1.0),
        ];
        assert!((latency_error(&qs, 1.0).unwrap() + 0.3).abs() < 1e-12);
        assert!((latency_error(&qs, 0.8).unwrap() + 0.5).abs() < 1e-12);
        assert!(latency_miss(&qs));
        assert_eq!(latency_error(&qs[2..], 1.0), None);
        assert!(!latency_miss(&qs[2..]));
        assert_eq!(latency_error(&[with(100.0, Some(1e9))], 1.0), Some(-1.0));
    }

    #[test]
    fn no_windup_at_the_bounds() {
        let mut f = Feedback::default();
        // Latency far below target for a long time: m stays at its max...
        for _ in 0..100 {
            assert_eq!(f.update(Some(1.0), G), 1.0);
        }
        // ...and reacts at once when latency turns: no accumulated credit to burn.
        let m = f.update(Some(-0.5), G);
        assert!((m - (1.0 + 0.1 * (-0.5 - 1.0) - 0.05 * 0.5)).abs() < 1e-12);
        // Pinned at the floor, a persistent miss does not wind up either.
        for _ in 0..200 {
            f.update(Some(-1.0), G);
        }
        assert_eq!(f.correction(), 0.05);
        let up = f.update(Some(0.5), G);
        assert!(up > 0.05 + 0.1);
        // No measurement: hold.
        assert_eq!(f.update(None, G), up);
    }
}
