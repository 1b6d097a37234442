//! Per-query cost model `busy = fixed + per_passed x passed + per_tuple x tuples + per_row x
//! rows` per tick, fitted by least squares with exponential forgetting. `passed` counts the
//! tuples that reached the query's stream past its drop point: a query pays some work for
//! each of them (loss accounting, its drop point) whatever its own keep, so busy time
//! divided by processed tuples overstates the per-tuple cost once its own drop thins the
//! input. A windowed aggregate likewise spends time per window row it emits whatever its
//! input. A shedder trusting the plain ratio would shed ever more. The fit separates the
//! terms when the data identify them (else it falls back to fewer terms, then to the plain
//! ratio); one tick's busy time pulls the fit by a bounded amount (`OUTLIER`), so an engine
//! pause or a burst of closings cannot swing it. A term is identified only when it stands
//! out of the fit's own noise (`SIGNIFICANT` standard errors): live, a query's input rate
//! barely moves while its keep holds, and a split of noisy busy time between a fixed part
//! and a per-tuple part then lands anywhere (a HOP query was read as 1 ns per tuple plus
//! 120 ms/s fixed, kept whole, and its backlog grew for a second). Invariant: every
//! estimate is finite and non-negative.

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
/// A fitted coefficient must be at least this many of its standard errors (from the
/// residuals of the weighted fit) to be believed; otherwise fewer terms are tried.
const SIGNIFICANT: f64 = 3.0;
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
    /// Weighted sum of `b^2`, for the residuals' variance.
    bb: f64,
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
        // A tick in which nothing reached the query says nothing about its per-tuple or
        // per-passed costs, and forgetting through it would leave the next few ticks'
        // counts as all the evidence there is: live, a query paused for seconds was
        // re-admitted, its first tick (groups being created, a surge's contention) read
        // 10666 ns a tuple against a running 15-50, and it was paused again on that figure
        // for good. Such ticks (no rows emitted either) are left out, and the fit stands as
        // it was.
        if passed == 0.0 && tuples == 0.0 && rows == 0.0 {
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
        self.bb = FORGET * self.bb + b * b;
        // Richest first; each with and without a fixed part (an intercept that does not
        // stand out of the noise is no fixed work).
        const FITS: [&[usize]; 7] = [
            &[ONE, PASSED, TUPLES, ROWS],
            &[PASSED, TUPLES, ROWS],
            &[ONE, PASSED, TUPLES],
            &[PASSED, TUPLES],
            &[ONE, TUPLES, ROWS],
            &[TUPLES, ROWS],
            &[ONE, TUPLES],
        ];
        // Of the fits whose every term stands out of the noise, the one with the least
        // residual variance per degree of freedom (the first on a tie).
        let best = FITS
            .iter()
            .filter_map(|idx| self.fit(idx))
            .min_by(|x, y| x.1.total_cmp(&y.1));
        if let Some((coef, _)) = best {
            self.fixed = coef[ONE];
            self.per_passed = coef[PASSED];
            self.per_tuple = coef[TUPLES];
            self.per_row = coef[ROWS];
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
        // few kept ones. The per-tuple cost last fitted holds, and the rest is per passed;
        // but never above what the busy time could pay for if it were all per processed
        // tuple: live, a grouped query read at 4954 ns a tuple in a run's first tick (its
        // groups being created) was then kept under a quarter at about 40, and that figure
        // held for 30 s. The bound falls as bounded ticks come in (`OUTLIER`), over seconds.
        // (When the fixed part explains all of the busy time, the bound says nothing: a
        // per-tuple cost cut to 0 would leave the next tick to the plain ratio below,
        // which charges all the fixed work to a few tuples.)
        if self.per_tuple > 0.0 && sp > 0.0 && sn < SPARSE * sp {
            let room = sb - self.fixed * s1;
            if sn > 0.0 && room > 0.0 {
                self.per_tuple = self.per_tuple.min(room / sn);
            }
            self.per_passed = ((sb - self.fixed * s1 - self.per_tuple * sn) / sp).max(0.0);
            return;
        }
        // Otherwise the data cannot tell a fixed part from a per-tuple one: the plain
        // ratio, which charges all of it to the tuples (a drop then looks as if it saved
        // more than it does, which errs towards holding the target; the feedback corrects
        // the rest). A fixed part kept from an earlier fit would be believed whatever the
        // busy time says now.
        self.per_passed = 0.0;
        self.fixed = 0.0;
        self.per_tuple = if sn > 0.0 { sb / sn } else { 0.0 };
    }

    /// Least squares over the regressors `idx` (the intercept, if any, first), with its
    /// residual variance per degree of freedom: `None` unless every regressor is
    /// identified, every coefficient non-negative and `SIGNIFICANT`, the per-tuple one
    /// positive, and a per-passed term explains a material share of the work.
    fn fit(&self, idx: &[usize]) -> Option<([f64; K], f64)> {
        let k = idx.len();
        if self.xx[ONE][ONE] < if k > 2 { 5.0 } else { 3.0 } {
            return None;
        }
        let mut a = [[0.0; K]; K];
        let mut b = [0.0; K];
        for (i, &ri) in idx.iter().enumerate() {
            for (j, &rj) in idx.iter().enumerate() {
                a[i][j] = self.xx[ri][rj];
            }
            b[i] = self.xb[ri];
        }
        let first = usize::from(idx[0] == ONE);
        if (first..k).any(|i| a[i][i] <= 0.0) {
            return None;
        }
        // The coefficients, and the diagonal of `A^-1`, which both checks below read
        // (one elimination for all of them: `solve_many`).
        let mut rhs = [[0.0; K]; K + 1];
        rhs[0] = b;
        for (j, e) in rhs[1..=k].iter_mut().enumerate() {
            e[j] = 1.0;
        }
        let x = solve_many(&a, &mut rhs, k + 1, k)?;
        let c = x[0];
        let mut inv = [0.0; K];
        for (j, d) in inv[..k].iter_mut().enumerate() {
            *d = x[j + 1][j];
        }
        // Each regressor's spread left once the others explain what they can:
        // `1 / (A^-1)_jj`, against its own `A_jj`.
        if !(first..k).all(|j| inv[j] > 0.0 && 1.0 / inv[j] > IDENTIFIED * a[j][j]) {
            return None;
        }
        if !c[..k].iter().all(|v| v.is_finite() && *v >= 0.0) {
            return None;
        }
        // Each coefficient must stand out of the noise: the residual variance of the
        // weighted fit times `(A^-1)_jj` is its variance.
        let n = self.xx[ONE][ONE];
        let fitted: f64 = c[..k].iter().zip(&b[..k]).map(|(c, b)| c * b).sum();
        let rss = (self.bb - fitted).max(0.0);
        let dof = n - k as f64;
        if dof <= 0.5 {
            return None;
        }
        let variance = rss / dof;
        if (0..k).any(|j| c[j] < SIGNIFICANT * (variance * inv[j].max(0.0)).sqrt()) {
            return None;
        }
        let mut coef = [0.0; K];
        for (i, &ri) in idx.iter().enumerate() {
            coef[ri] = c[i];
        }
        if coef[TUPLES] <= 0.0 {
            return None;
        }
        if idx.contains(&PASSED) {
            // Mean work the per-passed term explains, against the mean work.
            let explained = coef[PASSED] * self.xx[ONE][PASSED];
            if explained < MATERIAL * self.xb[ONE] {
                return None;
            }
        }
        Some((coef, variance))
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
/// pivoting, for the first `n` right-hand sides `b` of `rhs` at once, solved in place:
/// the elimination of `a` (its pivots and row operations depend on `a` alone) is done
/// once, and each side goes through the same operations in the same order, so each
/// result is bit for bit what solving it alone gives. `None` when the block is
/// (numerically) singular or any result is not finite.
fn solve_many<'r, const N: usize>(
    a: &[[f64; K]; K],
    rhs: &'r mut [[f64; K]; N],
    n: usize,
    k: usize,
) -> Option<&'r [[f64; K]; N]> {
    let mut m = *a;
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
        for x in &mut rhs[..n] {
            x.swap(col, pivot);
        }
        for row in col + 1..k {
            let f = m[row][col] / m[col][col];
            let pivot_row = m[col];
            for (v, p) in m[row][col..k].iter_mut().zip(&pivot_row[col..k]) {
                *v -= f * p;
            }
            for x in &mut rhs[..n] {
                x[row] -= f * x[col];
            }
        }
    }
    for x in &mut rhs[..n] {
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
    }
    Some(rhs)
}

#[cfg(test)]
#[path = "cost_tests.rs"]
mod tests;
