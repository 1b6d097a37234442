//! Per-query cost model `busy = fixed + per_tuple x tuples + per_row x rows` per tick,
//! fitted by least squares with exponential forgetting. A windowed aggregate spends time
//! per window row it emits whatever its input, so busy time divided by tuples overstates
//! the per-tuple cost once shedding thins the input, and a shedder trusting it would shed
//! ever more. The fit separates the three when the data identify them (else it falls back
//! to fixed + per-tuple, then to the plain ratio); one tick's busy time pulls the fit by a
//! bounded amount (`OUTLIER`), so an engine pause or a burst of closings cannot swing it.
//! Invariant: every estimate is finite and non-negative.

use super::robust::bounded;

/// Forgetting factor per tick: older ticks weigh `FORGET^age`.
const FORGET: f64 = 0.9;
/// One tick's busy time counts as at most this factor off the model's prediction.
const OUTLIER: f64 = 3.0;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct CostModel {
    /// Weighted sums of `x x^T` and `x b` for `x = (1, tuples/s, rows/s)`, `b` = busy/s.
    xx: [[f64; 3]; 3],
    xb: [f64; 3],
    per_tuple: f64,
    per_row: f64,
    fixed: f64,
}

impl CostModel {
    /// Adds one tick: `tuples` processed in `busy` ns over `seconds`.
    pub fn update(&mut self, tuples: f64, busy: f64, seconds: f64) {
        self.update_with_rows(tuples, 0.0, busy, seconds);
    }

    /// Adds one tick: `tuples` processed and `rows` emitted in `busy` ns over `seconds`.
    pub fn update_with_rows(&mut self, tuples: f64, rows: f64, busy: f64, seconds: f64) {
        if !(tuples.is_finite() && busy.is_finite() && rows.is_finite())
            || tuples < 0.0
            || busy < 0.0
            || rows < 0.0
        {
            return;
        }
        // Fit busy per second against tuples and rows per second, so ticks of unequal
        // length mix.
        let secs = seconds.max(1e-9);
        let (n, r) = (tuples / secs, rows / secs);
        let b = if self.xx[0][0] >= 3.0 {
            bounded(busy / secs, self.predict(n, r), OUTLIER)
        } else {
            busy / secs
        };
        let x = [1.0, n, r];
        for i in 0..3 {
            for j in 0..3 {
                self.xx[i][j] = FORGET * self.xx[i][j] + x[i] * x[j];
            }
            self.xb[i] = FORGET * self.xb[i] + x[i] * b;
        }
        if self.fit3() || self.fit2() {
            return;
        }
        let (s1, sn, sb) = (self.xx[0][0], self.xx[0][1], self.xb[0]);
        self.per_row = 0.0;
        // Not identifiable now: keep the fixed part last fitted and let the per-tuple part
        // follow the current ratio, so the estimate never freezes.
        // If the old fixed part no longer fits under today's busy time, it is stale: drop it.
        let residual = sb - self.fixed * s1;
        if self.fixed > 0.0 && sn > 0.0 && residual > 0.0 {
            self.per_tuple = residual / sn;
        } else {
            self.fixed = 0.0;
            self.per_tuple = if sn > 0.0 { sb / sn } else { 0.0 };
        }
    }

    /// All three terms, when rows vary independently of tuples (a coefficient of
    /// variation of about 10% left after the other regressors) and every term comes out
    /// non-negative.
    fn fit3(&mut self) -> bool {
        let a = self.xx;
        if a[0][0] < 5.0 || a[2][2] <= 0.0 {
            return false;
        }
        let Some(c) = solve3(a, self.xb) else {
            return false;
        };
        // Variance of rows not explained by (1, tuples): the Schur complement.
        let d2 = a[0][0] * a[1][1] - a[0][1] * a[0][1];
        if d2 <= 0.0 {
            return false;
        }
        let det3 = det(a);
        let unexplained = det3 / d2;
        if unexplained <= 1e-2 * a[2][2] {
            return false;
        }
        if c.iter().all(|v| v.is_finite() && *v >= 0.0) && c[1] > 0.0 {
            self.fixed = c[0];
            self.per_tuple = c[1];
            self.per_row = c[2];
            return true;
        }
        false
    }

    /// Fixed plus per-tuple (rows folded into tuples), when the input rate varied enough
    /// to identify a slope.
    fn fit2(&mut self) -> bool {
        let (s1, sn, snn, sb, snb) = (
            self.xx[0][0],
            self.xx[0][1],
            self.xx[1][1],
            self.xb[0],
            self.xb[1],
        );
        let var = s1 * snn - sn * sn;
        if var > 1e-2 * s1 * snn && s1 >= 3.0 {
            let slope = (s1 * snb - sn * sb) / var;
            let intercept = (sb - slope * sn) / s1;
            if slope > 0.0 && intercept >= 0.0 {
                self.per_tuple = slope;
                self.fixed = intercept;
                self.per_row = 0.0;
                return true;
            }
        }
        false
    }

    /// ns of work per second the model predicts for `tuples` and `rows` per second.
    pub fn predict(&self, tuples: f64, rows: f64) -> f64 {
        self.fixed + self.per_tuple * tuples + self.per_row * rows
    }

    /// ns of work per input tuple.
    pub fn per_tuple(&self) -> f64 {
        self.per_tuple
    }

    /// ns of work per emitted row (window closing, sinks), beyond the per-tuple work.
    pub fn per_row(&self) -> f64 {
        self.per_row
    }

    /// ns of work per second whatever the input (ticks).
    pub fn fixed(&self) -> f64 {
        self.fixed
    }
}

fn det(a: [[f64; 3]; 3]) -> f64 {
    a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1])
        - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
        + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0])
}

/// `a x = b` by Cramer's rule; `None` when `a` is (numerically) singular.
fn solve3(a: [[f64; 3]; 3], b: [f64; 3]) -> Option<[f64; 3]> {
    let d = det(a);
    let scale = a[0][0] * a[1][1] * a[2][2];
    if !(d.is_finite() && scale > 0.0 && d.abs() > 1e-12 * scale) {
        return None;
    }
    let mut x = [0.0; 3];
    for (k, xk) in x.iter_mut().enumerate() {
        let mut m = a;
        for i in 0..3 {
            m[i][k] = b[i];
        }
        *xk = det(m) / d;
    }
    Some(x)
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

    #[test]
    fn per_row_work_is_separated_from_per_tuple_work() {
        // 100 ns per tuple, 2 us per emitted row, 1 ms/s fixed; rows move independently
        // of tuples (keys vanish from windows as shedding deepens, windows close in bursts).
        let mut m = CostModel::default();
        for k in 0..40 {
            let n = 100_000.0 * (1.0 + (k % 7) as f64 * 0.2);
            let r = 10_000.0 * (1.0 + (k % 5) as f64 * 0.3);
            m.update_with_rows(n, r, 100.0 * n + 2_000.0 * r + 1e6, 1.0);
        }
        assert!((m.per_tuple() - 100.0).abs() < 1.0, "{}", m.per_tuple());
        assert!((m.per_row() - 2_000.0).abs() < 20.0, "{}", m.per_row());
        assert!((m.fixed() - 1e6).abs() < 1e5, "{}", m.fixed());
    }

    #[test]
    fn one_paused_tick_pulls_the_model_by_a_bounded_step() {
        let mut m = CostModel::default();
        for _ in 0..20 {
            m.update(1000.0, 500_000.0, 0.1);
        }
        // The engine thread was descheduled for a whole second inside one turn.
        m.update(1000.0, 1e9, 0.1);
        assert!(m.per_tuple() < 500.0 * 1.3, "{}", m.per_tuple());
    }
}
