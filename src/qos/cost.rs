//! Per-query cost model `busy = fixed + per_passed x passed + per_tuple x tuples + per_row x
//! rows` per tick, fitted by least squares with exponential forgetting. `passed` counts the
//! tuples that reached the query's stream past its drop point: a query pays some work for
//! each of them (loss accounting, its drop point) whatever its own keep, so busy time
//! divided by processed tuples overstates the per-tuple cost once its own drop thins the
//! input. A windowed aggregate likewise spends time per window row it emits whatever its
//! input. A shedder trusting the plain ratio would shed ever more. The fit separates the
//! terms when the data identify them (else it falls back to fewer terms, then to the plain
//! ratio); one tick's busy time pulls the fit by a bounded amount (`OUTLIER`), so an engine
//! pause or a burst of closings cannot swing it. Invariant: every estimate is finite and
//! non-negative.

use super::robust::bounded;

/// Forgetting factor per tick: older ticks weigh `FORGET^age`.
const FORGET: f64 = 0.9;
/// One tick's busy time counts as at most this factor off the model's prediction.
const OUTLIER: f64 = 3.0;
/// A regressor is identified when at least this share of its spread is not explained by
/// the others.
const IDENTIFIED: f64 = 1e-2;
/// The per-passed term is kept only when it explains at least this share of the work.
const MATERIAL: f64 = 0.02;
/// Under this share of what reaches it processed, a query's busy time cannot tell its
/// per-tuple cost.
const SPARSE: f64 = 0.25;
/// Regressors: 1, passed, tuples, rows (per second).
const K: usize = 4;
const ONE: usize = 0;
const PASSED: usize = 1;
const TUPLES: usize = 2;
const ROWS: usize = 3;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct CostModel {
    /// Weighted sums of `x x^T` and `x b` for `x = (1, passed/s, tuples/s, rows/s)`,
    /// `b` = busy/s.
    xx: [[f64; K]; K],
    xb: [f64; K],
    per_passed: f64,
    per_tuple: f64,
    per_row: f64,
    fixed: f64,
}

impl CostModel {
    /// Adds one tick: `tuples` processed in `busy` ns over `seconds`.
    pub fn update(&mut self, tuples: f64, busy: f64, seconds: f64) {
        self.update_with_rows(tuples, 0.0, busy, seconds);
    }

    /// Adds one tick: `tuples` processed and `rows` emitted in `busy` ns over `seconds`
    /// (every tuple that reached the query was processed).
    pub fn update_with_rows(&mut self, tuples: f64, rows: f64, busy: f64, seconds: f64) {
        self.update_full(tuples, tuples, rows, busy, seconds);
    }

    /// Adds one tick: `passed` tuples reached the query's stream past its drop point, of
    /// which `tuples` were processed, `rows` emitted, in `busy` ns over `seconds`.
    pub fn update_full(&mut self, passed: f64, tuples: f64, rows: f64, busy: f64, seconds: f64) {
        if ![passed, tuples, rows, busy]
            .iter()
            .all(|v| v.is_finite() && *v >= 0.0)
        {
            return;
        }
        // Fit busy per second against the counts per second, so ticks of unequal length
        // mix.
        let secs = seconds.max(1e-9);
        let (p, n, r) = (passed / secs, tuples / secs, rows / secs);
        let b = if self.xx[ONE][ONE] >= 3.0 {
            bounded(busy / secs, self.predict_full(p, n, r), OUTLIER)
        } else {
            busy / secs
        };
        let x = [1.0, p, n, r];
        for i in 0..K {
            for j in 0..K {
                self.xx[i][j] = FORGET * self.xx[i][j] + x[i] * x[j];
            }
            self.xb[i] = FORGET * self.xb[i] + x[i] * b;
        }
        if self.fit(&[ONE, PASSED, TUPLES, ROWS])
            || self.fit(&[ONE, PASSED, TUPLES])
            || self.fit(&[ONE, TUPLES, ROWS])
            || self.fit(&[ONE, TUPLES])
        {
            return;
        }
        let (s1, sp, sn, sb) = (
            self.xx[ONE][ONE],
            self.xx[ONE][PASSED],
            self.xx[ONE][TUPLES],
            self.xb[ONE],
        );
        self.per_row = 0.0;
        // Not identifiable now. A query that processes a small share of what reaches it
        // (its own drop keeps little, or it is paused) cannot tell its per-tuple cost: its
        // busy time is mostly per passed tuple, and the ratio would charge it all to the
        // few kept ones. The per-tuple cost last fitted holds, and the rest is per passed.
        if self.per_tuple > 0.0 && sp > 0.0 && sn < SPARSE * sp {
            self.per_passed = ((sb - self.fixed * s1 - self.per_tuple * sn) / sp).max(0.0);
            return;
        }
        self.per_passed = 0.0;
        // Otherwise keep the fixed part last fitted and let the per-tuple part follow the
        // current ratio, so the estimate never freezes.
        // If the old fixed part no longer fits under today's busy time, it is stale: drop it.
        let residual = sb - self.fixed * s1;
        if self.fixed > 0.0 && sn > 0.0 && residual > 0.0 {
            self.per_tuple = residual / sn;
        } else {
            self.fixed = 0.0;
            self.per_tuple = if sn > 0.0 { sb / sn } else { 0.0 };
        }
    }

    /// Least squares over the regressors `idx` (the intercept first), taken when every
    /// one of them is identified, every coefficient is non-negative, the per-tuple one
    /// positive, and a per-passed term explains a material share of the work.
    fn fit(&mut self, idx: &[usize]) -> bool {
        let k = idx.len();
        if self.xx[ONE][ONE] < if k > 2 { 5.0 } else { 3.0 } {
            return false;
        }
        let mut a = [[0.0; K]; K];
        let mut b = [0.0; K];
        for (i, &ri) in idx.iter().enumerate() {
            for (j, &rj) in idx.iter().enumerate() {
                a[i][j] = self.xx[ri][rj];
            }
            b[i] = self.xb[ri];
        }
        if (1..k).any(|i| a[i][i] <= 0.0) {
            return false;
        }
        let Some(c) = solve(&a, &b, k) else {
            return false;
        };
        // Each regressor's spread left once the others explain what they can:
        // `1 / (A^-1)_jj`, against its own `A_jj`.
        for j in 1..k {
            let mut e = [0.0; K];
            e[j] = 1.0;
            match solve(&a, &e, k) {
                Some(inv) if inv[j] > 0.0 && 1.0 / inv[j] > IDENTIFIED * a[j][j] => {}
                _ => return false,
            }
        }
        if !c[..k].iter().all(|v| v.is_finite() && *v >= 0.0) {
            return false;
        }
        let mut coef = [0.0; K];
        for (i, &ri) in idx.iter().enumerate() {
            coef[ri] = c[i];
        }
        if coef[TUPLES] <= 0.0 {
            return false;
        }
        if idx.contains(&PASSED) {
            // Mean work the per-passed term explains, against the mean work.
            let explained = coef[PASSED] * self.xx[ONE][PASSED];
            if explained < MATERIAL * self.xb[ONE] {
                return false;
            }
        }
        self.fixed = coef[ONE];
        self.per_passed = coef[PASSED];
        self.per_tuple = coef[TUPLES];
        self.per_row = coef[ROWS];
        true
    }

    /// ns of work per second the model predicts for `tuples` and `rows` per second, every
    /// tuple that reached the query processed.
    pub fn predict(&self, tuples: f64, rows: f64) -> f64 {
        self.predict_full(tuples, tuples, rows)
    }

    /// ns of work per second for `passed`, `tuples` and `rows` per second.
    pub fn predict_full(&self, passed: f64, tuples: f64, rows: f64) -> f64 {
        self.fixed + self.per_passed * passed + self.per_tuple * tuples + self.per_row * rows
    }

    /// ns of work per tuple reaching the query's stream past its drop point, whatever the
    /// query's own keep (0 unless identified).
    pub fn per_passed(&self) -> f64 {
        self.per_passed
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

/// `a x = b` for the leading `k x k` block, by Gaussian elimination with partial
/// pivoting; `None` when it is (numerically) singular.
fn solve(a: &[[f64; K]; K], b: &[f64; K], k: usize) -> Option<[f64; K]> {
    let mut m = *a;
    let mut x = *b;
    let scale = (0..k).map(|i| a[i][i].abs()).fold(0.0, f64::max);
    if !(scale.is_finite() && scale > 0.0) {
        return None;
    }
    for col in 0..k {
        let pivot = (col..k).max_by(|&i, &j| m[i][col].abs().total_cmp(&m[j][col].abs()))?;
        let p = m[pivot][col].abs();
        if p.is_nan() || p <= 1e-12 * scale {
            return None;
        }
        m.swap(col, pivot);
        x.swap(col, pivot);
        for row in col + 1..k {
            let f = m[row][col] / m[col][col];
            let pivot_row = m[col];
            for (v, p) in m[row][col..k].iter_mut().zip(&pivot_row[col..k]) {
                *v -= f * p;
            }
            x[row] -= f * x[col];
        }
    }
    for col in (0..k).rev() {
        let mut v = x[col];
        for c in col + 1..k {
            v -= m[col][c] * x[c];
        }
        x[col] = v / m[col][col];
        if !x[col].is_finite() {
            return None;
        }
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

    #[test]
    fn work_per_passed_tuple_is_not_charged_to_the_kept_ones() {
        // 20 ns per processed tuple plus 8 ns for every tuple that reached the query,
        // kept or not (its loss accounting), as the query's own keep falls from 1 to 0.01
        // while the stream's own keep moves the tuples that reach it between 10 and 20 M/s.
        let mut m = CostModel::default();
        for k in 0..40 {
            let keep = [1.0, 0.5, 0.2, 0.05, 0.01][k % 5];
            let passed = 1e6 * (1.0 + 0.5 * (k % 3) as f64);
            let tuples = passed * keep;
            m.update_full(passed, tuples, 0.0, 8.0 * passed + 20.0 * tuples, 0.1);
        }
        // Within 3%: the first ticks, before the terms were identified, were bounded
        // against a cruder model, and forgetting takes a while to wash them out.
        assert!((m.per_tuple() - 20.0).abs() < 0.6, "{}", m.per_tuple());
        assert!((m.per_passed() - 8.0).abs() < 0.25, "{}", m.per_passed());
        // The plain ratio at keep 0.01 would say 820 ns per tuple.
        assert!(m.predict_full(1e7, 1e5, 0.0) < 1.05 * (8e7 + 2e6));
        // Without the passed counts the kept tuples carry it all.
        let mut plain = CostModel::default();
        for k in 0..40 {
            let keep = [1.0, 0.5, 0.2, 0.05, 0.01][k % 5];
            let tuples = 1e6 * keep;
            plain.update(tuples, 8.0 * 1e6 + 20.0 * tuples, 0.1);
        }
        assert_eq!(plain.per_passed(), 0.0);
    }

    #[test]
    fn a_query_keeping_little_holds_its_per_tuple_cost() {
        // 20 ns per processed tuple and 2 ns per passed one, at keep 1 ...
        let mut m = CostModel::default();
        for _ in 0..20 {
            m.update_full(1e6, 1e6, 0.0, 22.0 * 1e6, 0.1);
        }
        assert!((m.per_tuple() - 22.0).abs() < 1e-6);
        // ... then paused or keeping 1%: the ratio would read 220 or more per tuple.
        for k in 0..30 {
            let tuples = if k % 2 == 0 { 0.0 } else { 1e4 };
            m.update_full(1e6, tuples, 0.0, 2.0 * 1e6 + 20.0 * tuples, 0.1);
        }
        assert!(m.per_tuple() <= 22.0 + 1e-6, "{}", m.per_tuple());
        // What it spends at any keep is read as work its own drop cannot save (fixed at
        // this rate, here).
        let at_full = m.predict_full(1e7, 1e7, 0.0);
        assert!(at_full > 0.2e9 && at_full < 0.3e9, "{at_full}");
        // Paused outright: what it still spends is no reason to think tuples cost more.
        for _ in 0..30 {
            m.update_full(1e6, 0.0, 0.0, 2.0 * 1e6, 0.1);
        }
        assert!(m.per_tuple() <= 22.0 + 1e-6, "{}", m.per_tuple());
        let paused = m.predict_full(1e7, 0.0, 0.0);
        assert!((paused - 2e7).abs() < 0.1 * 2e7, "{paused}");
    }
}
