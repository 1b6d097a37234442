//! Per-query cost model `busy = fixed + per_tuple x tuples` per tick, fitted by least
//! squares with exponential forgetting. A windowed aggregate spends time per window it
//! closes whatever its input, so busy time divided by tuples overstates the per-tuple cost
//! once shedding thins the input, and a shedder trusting it would shed ever more. The fit
//! separates the two; invariant: both estimates are finite and non-negative.

/// Forgetting factor per tick: older ticks weigh `FORGET^age`.
const FORGET: f64 = 0.9;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct CostModel {
    s1: f64,
    sn: f64,
    sb: f64,
    snn: f64,
    snb: f64,
    per_tuple: f64,
    fixed: f64,
}

impl CostModel {
    /// Adds one tick: `tuples` processed in `busy` ns over `seconds`.
    pub fn update(&mut self, tuples: f64, busy: f64, seconds: f64) {
        if !(tuples.is_finite() && busy.is_finite()) || tuples < 0.0 || busy < 0.0 {
            return;
        }
        // Fit busy per second against tuples per second, so ticks of unequal length mix.
        let secs = seconds.max(1e-9);
        let (n, b) = (tuples / secs, busy / secs);
        self.s1 = FORGET * self.s1 + 1.0;
        self.sn = FORGET * self.sn + n;
        self.sb = FORGET * self.sb + b;
        self.snn = FORGET * self.snn + n * n;
        self.snb = FORGET * self.snb + n * b;
        let var = self.s1 * self.snn - self.sn * self.sn;
        let ratio = if self.sn > 0.0 {
            self.sb / self.sn
        } else {
            0.0
        };
        // Only trust a slope when the input rate varied enough to identify it (a
        // coefficient of variation of about 10%).
        if var > 1e-2 * self.s1 * self.snn && self.s1 >= 3.0 {
            let slope = (self.s1 * self.snb - self.sn * self.sb) / var;
            let intercept = (self.sb - slope * self.sn) / self.s1;
            if slope > 0.0 && intercept >= 0.0 {
                self.per_tuple = slope;
                self.fixed = intercept;
                return;
            }
        }
        // Not identifiable now: keep the fixed part last fitted and let the per-tuple part
        // follow the current ratio, so the estimate never freezes.
        // If the old fixed part no longer fits under today's busy time, it is stale: drop it.
        let residual = self.sb - self.fixed * self.s1;
        if self.fixed > 0.0 && self.sn > 0.0 && residual > 0.0 {
            self.per_tuple = residual / self.sn;
        } else {
            self.fixed = 0.0;
            self.per_tuple = ratio;
        }
    }

    /// ns of work per input tuple.
    pub fn per_tuple(&self) -> f64 {
        self.per_tuple
    }

    /// ns of work per second whatever the input (window emission, ticks).
    pub fn fixed(&self) -> f64 {
        self.fixed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pure_per_tuple_cost_is_found_with_or_without_rate_changes() {
        let mut m = CostModel::default();
        for _ in 0..20 {
            m.update(1000.0, 500_000.0, 0.1);
        }
        assert!((m.per_tuple() - 500.0).abs() < 1e-6);
        assert_eq!(m.fixed(), 0.0);
        for k in 0..20 {
            let n = 1000.0 + 100.0 * k as f64;
            m.update(n, 500.0 * n, 0.1);
        }
        assert!((m.per_tuple() - 500.0).abs() < 1e-3, "{}", m.per_tuple());
        assert!(m.fixed().abs() < 1.0, "{}", m.fixed());
    }

    #[test]
    fn a_stale_fixed_part_is_dropped_not_kept_against_the_evidence() {
        let mut m = CostModel::default();
        for k in 0..20 {
            let n = 1000.0 + 100.0 * k as f64;
            m.update(n, 1e6 + 500.0 * n, 0.1);
        }
        assert!(m.fixed() > 0.0);
        // The window work disappears; the rate stays constant (no slope to fit).
        for _ in 0..60 {
            m.update(1000.0, 500.0 * 1000.0, 0.1);
        }
        // Never pinned at zero, and consistent with what is measured now (10k tuples/s,
        // 5 ms of work per second).
        assert!(m.per_tuple() > 100.0, "per-tuple cost {}", m.per_tuple());
        let predicted = m.fixed() + m.per_tuple() * 10_000.0;
        assert!(
            (predicted - 5e6).abs() < 0.05 * 5e6,
            "predicts {predicted} ns/s"
        );
    }

    #[test]
    fn fixed_work_is_separated_when_shedding_thins_the_input() {
        // 200 ns per tuple plus 50 ms of work per second; input thinned step by step.
        let mut m = CostModel::default();
        for k in 0..30 {
            let rate = 1_000_000.0 / (1.0 + k as f64 * 0.3);
            let n = rate * 0.1;
            m.update(n, 200.0 * n + 5_000_000.0, 0.1);
        }
        assert!((m.per_tuple() - 200.0).abs() < 1.0, "{}", m.per_tuple());
        assert!((m.fixed() - 50_000_000.0).abs() < 1e6, "{}", m.fixed());
    }
}
