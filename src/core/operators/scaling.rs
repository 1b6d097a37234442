//! Horvitz-Thompson state of the groups that lost input to random shedding: the extra sums
//! that turn a group's observed COUNT, SUM and AVG into estimates of the exact answer with
//! 95% intervals (Babcock, Datar, Motwani, ICDE 2004: "scale the answer by 1/p"), and the
//! scaled group row with its side-car row built from them.
//!
//! Invariant: a slot holds state only once it has folded a tuple of a batch kept with
//! probability `p < 1` (it is then *lossy*). Tuples of exact batches (`p == 1`) contribute
//! nothing to any sum here, so they are never visited: exact input costs nothing extra.
//!
//! Estimators, for the kept tuples `i` of a group, each kept with probability `p_i` and
//! weighted `w_i = 1/p_i`, with `c_i = (1 - p_i) / p_i^2`:
//!
//! - COUNT: `N = sum w_i`, `var(N) = sum c_i`.
//! - SUM:   `S = sum w_i v_i`, `var(S) = sum c_i v_i^2`.
//! - AVG:   the ratio `R = S / N`, with the linearised (Taylor) variance of a ratio
//!   estimator `var(R) = sum c_i (v_i - R)^2 / N^2`. With one keep fraction `p` this is
//!   `(1 - p) * s^2 / n`, the finite-population-corrected variance of a sample mean.
//! - The interval is `estimate +- 1.96 * sqrt(var)` (normal approximation; it is not
//!   clamped, so a COUNT's lower end may fall below the tuples actually seen).
//!
//! Every sum runs over lossy tuples only, because `p = 1` makes `w - 1` and `c` zero: the
//! group's plain count and sum (kept by its accumulators) supply the exact part, and
//! `N = count + sum (w_i - 1)`, `S = sum + sum (w_i - 1) v_i`.

mod combine;

use super::accumulators::{Acc, emit_of, kept_sum_of, push_estimate};
use super::approx::{ColumnApprox, Output};
use crate::core::expr::Storage;
use crate::core::expr::{Datum, Expr, Side};
use crate::core::plan::{AggFunc, AggregatePlan};

/// The normal quantile of a two-sided 95% interval, rounded as usual.
pub const Z95: f64 = 1.96;

/// A scaled aggregate value and its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Estimate {
    fn new(value: f64, var: f64) -> Estimate {
        let half = Z95 * var.max(0.0).sqrt();
        Estimate {
            value,
            lo: value - half,
            hi: value + half,
        }
    }
}

/// Per-slot sums over the lossy tuples of one SUM or AVG argument.
#[derive(Debug, Default)]
struct ArgSums {
    /// `sum (w - 1) v`: added to the plain sum it gives the HT sum.
    excess: Vec<f64>,
    /// `sum c v^2`: the variance of the HT sum.
    sq: Vec<f64>,
    /// The first lossy value of the slot; the two sums below are taken around it so that
    /// the AVG variance does not cancel catastrophically when values sit far from zero.
    shift: Vec<f64>,
    /// `sum c (v - shift)`.
    d1: Vec<f64>,
    /// `sum c (v - shift)^2`.
    d2: Vec<f64>,
}

/// Horvitz-Thompson sums of every open group, stored column-wise by slot like `Acc`, and
/// how to turn them into a scaled group row.
#[derive(Debug)]
pub struct Scaling {
    /// The aggregate calls and the number of group keys before them in the group row.
    calls: Vec<AggFunc>,
    nkeys: usize,
    /// Call `i`'s argument index in `args` (SUM and AVG calls only): calls over the same
    /// argument share one set of sums.
    arg_of: Vec<Option<usize>>,
    /// Whether call `i` is the first over its argument, the one that folds it.
    folds: Vec<bool>,
    /// How each group-row column of a lossy group is qualified.
    kinds: Vec<ColumnApprox>,
    /// Scratch: the interval of each group-row column of the row being emitted.
    intervals: Vec<(f64, f64)>,
    /// Whether the slot has folded a tuple of a batch with keep < 1 since its reset.
    lossy: Vec<bool>,
    /// `sum (w - 1)`: added to the kept count it gives the HT count.
    excess: Vec<f64>,
    /// `sum c`: the variance of the HT count.
    var: Vec<f64>,
    args: Vec<ArgSums>,
}

impl Scaling {
    /// State for the aggregate calls of `plan`.
    pub fn new(plan: &AggregatePlan) -> Scaling {
        let mut args: Vec<&Expr> = Vec::new();
        let mut arg_of = Vec::with_capacity(plan.aggs.len());
        let mut folds = Vec::with_capacity(plan.aggs.len());
        for a in &plan.aggs {
            let (j, fold) = match (a.func, &a.arg) {
                (AggFunc::Sum | AggFunc::Avg, Some(e)) => match args.iter().position(|x| *x == e) {
                    Some(j) => (Some(j), false),
                    None => {
                        args.push(e);
                        (Some(args.len() - 1), true)
                    }
                },
                _ => (None, false),
            };
            arg_of.push(j);
            folds.push(fold);
        }
        let nkeys = plan.keys.len();
        let kinds = ColumnApprox::for_aggregate(plan);
        Scaling {
            calls: plan.aggs.iter().map(|a| a.func).collect(),
            nkeys,
            arg_of,
            folds,
            kinds,
            intervals: Vec::new(),
            lossy: Vec::new(),
            excess: Vec::new(),
            var: Vec::new(),
            args: args.iter().map(|_| ArgSums::default()).collect(),
        }
    }

    /// Makes slots `from..to` exist and exact (the only per-group work on the exact path).
    pub fn reset_range(&mut self, from: usize, to: usize) {
        if to > self.lossy.len() {
            self.lossy.resize(to, false);
        }
        self.lossy[from..to].fill(false);
    }

    pub fn is_lossy(&self, slot: usize) -> bool {
        self.lossy[slot]
    }

    /// Folds the weights of the tuples `pairs` of a batch kept with probability `keep`
    /// (`0 < keep < 1`), making their slots lossy. Call before `update_call`.
    pub fn update(&mut self, pairs: &[(u32, u32)], keep: f64) {
        let (w1, c) = weights(keep);
        for &(s, _) in pairs {
            let s = s as usize;
            if !self.lossy[s] {
                self.start(s);
            }
            self.excess[s] += w1;
            self.var[s] += c;
        }
    }

    /// Folds the argument values `arg` of call `i` for the same `pairs` and `keep` as
    /// `update` (nothing for calls that are not SUM or AVG, or whose argument an earlier
    /// call folds).
    pub fn update_call(&mut self, i: usize, pairs: &[(u32, u32)], arg: &Datum<'_>, keep: f64) {
        let Some(j) = self.arg_of[i].filter(|_| self.folds[i]) else {
            return;
        };
        let (w1, c) = weights(keep);
        let a = &mut self.args[j];
        let mut fold = |s: usize, v: f64| {
            if a.shift[s].is_nan() {
                a.shift[s] = v;
            }
            let d = v - a.shift[s];
            a.excess[s] += w1 * v;
            a.sq[s] += c * v * v;
            a.d1[s] += c * d;
            a.d2[s] += c * d * d;
        };
        if arg.storage() == Storage::Int {
            let v: Side<'_, i64> = arg.ints();
            for &(s, r) in pairs {
                fold(s as usize, v.at(r as usize) as f64);
            }
        } else {
            let v: Side<'_, f64> = arg.floats();
            for &(s, r) in pairs {
                fold(s as usize, v.at(r as usize));
            }
        }
    }

    /// Appends the aggregate columns of lossy `slot`, which kept `kept` tuples, to the
    /// group row being built in `out` (COUNT, SUM and AVG scaled, MIN and MAX observed),
    /// and its side-car row: keep fraction `kept / HT count` and the intervals.
    pub fn emit(&mut self, slot: usize, kept: i64, accs: &[Acc], out: &mut Output) {
        let count = self.count(slot, kept);
        self.intervals.clear();
        self.intervals
            .resize(self.kinds.len(), (f64::NAN, f64::NAN));
        for (i, func) in self.calls.iter().enumerate() {
            let col = &mut out.rows.columns[self.nkeys + i];
            let sum = || kept_sum_of(accs, i, slot).expect("SUM and AVG sum");
            let est = match (func, self.arg_of[i]) {
                (AggFunc::CountStar | AggFunc::Count, _) => count,
                (AggFunc::Sum, Some(j)) => self.sum(j, slot, sum()),
                (AggFunc::Avg, Some(j)) => self.avg(j, slot, kept, sum()),
                _ => {
                    emit_of(accs, i, slot, col);
                    continue;
                }
            };
            push_estimate(col, est.value);
            self.intervals[self.nkeys + i] = (est.lo, est.hi);
        }
        let row = out.rows.len();
        let keep = kept as f64 / count.value;
        out.approx.push_row(row, keep, &self.kinds, &self.intervals);
    }

    /// The side-car row of a group that semantic drops thinned but random drops did not:
    /// its keep fraction, no intervals (nothing was scaled), MIN and MAX flagged as bounds.
    pub fn mark_incomplete(&mut self, row: usize, keep: f64, out: &mut Output) {
        self.intervals.clear();
        self.intervals
            .resize(self.kinds.len(), (f64::NAN, f64::NAN));
        out.approx.push_row(row, keep, &self.kinds, &self.intervals);
    }

    /// The HT count of a lossy `slot` that kept `kept` tuples.
    fn count(&self, slot: usize, kept: i64) -> Estimate {
        Estimate::new(kept as f64 + self.excess[slot], self.var[slot])
    }

    /// The HT sum of argument `j` of a lossy `slot` whose kept values sum to `kept_sum`.
    fn sum(&self, j: usize, slot: usize, kept_sum: f64) -> Estimate {
        let a = &self.args[j];
        Estimate::new(kept_sum + a.excess[slot], a.sq[slot])
    }

    /// The ratio estimate of AVG of argument `j`: HT sum over HT count.
    fn avg(&self, j: usize, slot: usize, kept: i64, kept_sum: f64) -> Estimate {
        let a = &self.args[j];
        let n = kept as f64 + self.excess[slot];
        let r = (kept_sum + a.excess[slot]) / n;
        // sum c (v - r)^2, expanded around the shift.
        let d = r - a.shift[slot];
        let ss = a.d2[slot] - 2.0 * d * a.d1[slot] + d * d * self.var[slot];
        Estimate::new(r, ss.max(0.0) / (n * n))
    }

    /// Makes `slot` lossy with every sum zero.
    fn start(&mut self, s: usize) {
        fn zero(v: &mut Vec<f64>, s: usize, x: f64) {
            if s >= v.len() {
                v.resize(s + 1, x);
            }
            v[s] = x;
        }
        self.lossy[s] = true;
        zero(&mut self.excess, s, 0.0);
        zero(&mut self.var, s, 0.0);
        for a in &mut self.args {
            zero(&mut a.excess, s, 0.0);
            zero(&mut a.sq, s, 0.0);
            zero(&mut a.shift, s, f64::NAN);
            zero(&mut a.d1, s, 0.0);
            zero(&mut a.d2, s, 0.0);
        }
    }
}

/// `(w - 1, c)` of a tuple kept with probability `keep`.
fn weights(keep: f64) -> (f64, f64) {
    ((1.0 - keep) / keep, (1.0 - keep) / (keep * keep))
}
