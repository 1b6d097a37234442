//! What a drop buys: each query's load as a function of its keep fraction, from the
//! three-part cost model (per input tuple, per emitted row, fixed). Rows of a grouped
//! window aggregate do not shrink in proportion to the input: a group is emitted while it
//! holds at least one tuple, so with `c` tuples per group-window, `rows(k) ~ 1 - e^(-c k)`.
//! Invariant: predictions are finite, non-negative and non-decreasing in the keep fraction.

use super::input::QueryInput;
use crate::qos::non_negative;

/// How a query's emitted rows follow its keep fraction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rows {
    /// Rows in proportion to the input (filters, projections; whole-group window drops).
    Linear,
    /// A grouped window aggregate whose tuples each belong to `overlap` windows.
    Grouped { overlap: f64 },
}

/// Under this many admitted tuple-windows per emitted row, a grouped window's rows are
/// the tail of an earlier admission (a row holds at least one tuple; sparse windows in
/// steady state read just over 1).
const RESIDUAL: f64 = 0.9;

/// Solves `c / (1 - e^-c) = rho` for `c >= 0` (tuples per non-empty group-window `rho`).
fn density(rho: f64) -> f64 {
    if !(rho.is_finite() && rho > 1.0 + 1e-9) {
        return 0.0;
    }
    // f(c) = c - rho (1 - e^-c) is convex with f(0) = 0; its positive root lies in
    // (rho - 1, rho]. Bisection: robust and cheap enough at one call per query per tick.
    let (mut lo, mut hi) = ((rho - 1.0).max(0.0), rho);
    for _ in 0..60 {
        let c = 0.5 * (lo + hi);
        if c - rho * (1.0 - (-c).exp()) > 0.0 {
            hi = c;
        } else {
            lo = c;
        }
    }
    0.5 * (lo + hi)
}

/// Rows per second `q` emits at keep fraction `k` (of its stream's offered tuples), from
/// the rows it emits now at `q.keep_now`, reading at `rate` tuples per second.
pub fn rows_at(q: &QueryInput, rate: f64, k: f64, shape: Rows) -> f64 {
    let rows = non_negative(q.rows);
    let k = k.clamp(0.0, 1.0);
    let k0 = q.keep_now.clamp(1e-3, 1.0);
    if rows == 0.0 {
        return 0.0;
    }
    match shape {
        Rows::Linear => rows * k / k0,
        Rows::Grouped { overlap } => {
            let rho = non_negative(rate) * k0 * overlap.max(1.0) / rows;
            if rho < RESIDUAL {
                // More rows than the input admitted now can make (each needs a tuple): they
                // close windows filled at an earlier, higher keep (the query was just cut or
                // paused), and say nothing of how rows follow the keep. Extrapolated from
                // `k0` they read 1/k0 times over (live, a paused HOP's closing windows
                // priced its demand at 20x capacity every other tick while the engine sat
                // half idle). They are what is still to come, not more.
                return rows * (k / k0).min(1.0);
            }
            let c_now = density(rho);
            if c_now < 1e-6 {
                return rows * k / k0;
            }
            let c1 = c_now / k0;
            rows * (1.0 - (-c1 * k).exp()) / (1.0 - (-c_now).exp())
        }
    }
}

/// Work per second of `q` at keep fraction `k`: `scale * (r k c + rows(k) b)` (fixed work
/// is not the query's to shed and is taken off the capacity instead).
pub fn load_at(q: &QueryInput, rate: f64, k: f64, shape: Rows, scale: f64) -> f64 {
    scale
        * (non_negative(rate) * k.clamp(0.0, 1.0) * non_negative(q.cost)
            + rows_at(q, rate, k, shape) * non_negative(q.row_cost))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(rows: f64, keep_now: f64) -> QueryInput<'static> {
        QueryInput {
            rows,
            keep_now,
            row_cost: 1000.0,
            ..QueryInput::new(0, 100.0)
        }
    }

    #[test]
    fn rows_left_from_an_earlier_admission_are_not_extrapolated_from_a_cut_keep() {
        // HOP 100 ms / 1 s over 3 M tuples/s, cut to keep 0.001: 30k tuple-windows a
        // second admitted, 200k rows a second still closing from before the cut.
        let hop = Rows::Grouped { overlap: 10.0 };
        let tail = q(200_000.0, 0.001);
        let r = 3e6;
        assert_eq!(rows_at(&tail, r, 1.0, hop), 200_000.0);
        assert_eq!(rows_at(&tail, r, 0.5, hop), 200_000.0);
        assert!((rows_at(&tail, r, 0.0005, hop) - 100_000.0).abs() < 1e-6);
        // Rows the admitted input can make (1.5 tuples a group-window) are extrapolated
        // as before: at keep 1 every group-window present is full, 20k / (1 - e^-0.87).
        let steady = q(20_000.0, 0.001);
        let full = rows_at(&steady, r, 1.0, hop);
        assert!((33_000.0..35_000.0).contains(&full), "{full}");
    }

    #[test]
    fn sliding_window_rows_barely_shrink_until_keys_vanish() {
        // 2.4 M tuples/s, 1000 keys, HOP 10 ms / 1 s (100 windows per tuple): each
        // group-window holds 2400 tuples, so 100k rows/s are emitted at any sane keep.
        let hop = Rows::Grouped { overlap: 100.0 };
        let q = q(100_000.0, 1.0);
        let r = 2.4e6;
        assert!((rows_at(&q, r, 1.0, hop) - 100_000.0).abs() < 1.0);
        assert!(rows_at(&q, r, 0.1, hop) > 99_000.0);
        assert!(rows_at(&q, r, 0.0001, hop) < 30_000.0);
        assert_eq!(rows_at(&q, r, 0.0, hop), 0.0);
        // A filter's rows follow its input.
        assert!((rows_at(&q, r, 0.5, Rows::Linear) - 50_000.0).abs() < 1e-6);
    }

    #[test]
    fn prediction_from_a_shed_measurement_extrapolates_both_ways() {
        // Measured at keep 0.5: 1 tuple per group-window on average => c = 1 at keep 1.
        let tumble = Rows::Grouped { overlap: 1.0 };
        let r = 1000.0;
        let c_half: f64 = 0.5;
        let rows_half = r * 0.5 / (c_half / (1.0 - (-c_half).exp()));
        let q = q(rows_half, 0.5);
        let full = rows_at(&q, r, 1.0, tumble);
        let expect = r / (1.0 / (1.0 - (-1.0f64).exp()));
        assert!((full - expect).abs() / expect < 1e-6, "{full} vs {expect}");
        assert!(load_at(&q, r, 1.0, tumble, 2.0) > load_at(&q, r, 0.5, tumble, 2.0));
    }
}
