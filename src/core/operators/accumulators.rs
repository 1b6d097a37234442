//! Aggregate accumulators, stored column-wise by group slot so that updating a batch is a
//! tight loop over `(slot, row)` pairs. A slot is valid from `reset` until it is emitted.
//! They hold what was observed; `scaling` holds what random shedding took away.

use crate::core::batch::Column;
use crate::core::expr::{Datum, Side, Storage};
use crate::core::plan::AggFunc;
use crate::core::schema::DataType;

/// The running state of one aggregate over every open group.
#[derive(Debug)]
pub enum Acc {
    Count(Vec<i64>),
    SumInt(Vec<i64>),
    SumFloat(Vec<f64>),
    Avg {
        sum: Vec<f64>,
        n: Vec<i64>,
    },
    /// AVG of a float argument that a SUM of the same argument (`accs[sum]`) already adds
    /// up, in a query that counts its tuples (`accs[count]`): nothing of its own to fold,
    /// emitted as their quotient, the same bits as its own sum and count would give (the
    /// same additions in the same order). Read through `emit_of` and `kept_sum_of`.
    AvgOf {
        sum: usize,
        count: usize,
    },
    MinInt(Vec<i64>),
    MaxInt(Vec<i64>),
    MinFloat(Vec<f64>),
    MaxFloat(Vec<f64>),
}

impl Acc {
    pub fn new(func: AggFunc, arg: Option<DataType>) -> Acc {
        let float = arg == Some(DataType::Float);
        match func {
            AggFunc::CountStar | AggFunc::Count => Acc::Count(Vec::new()),
            AggFunc::Sum if float => Acc::SumFloat(Vec::new()),
            AggFunc::Sum => Acc::SumInt(Vec::new()),
            AggFunc::Avg => Acc::Avg {
                sum: Vec::new(),
                n: Vec::new(),
            },
            AggFunc::Min if float => Acc::MinFloat(Vec::new()),
            AggFunc::Min => Acc::MinInt(Vec::new()),
            AggFunc::Max if float => Acc::MaxFloat(Vec::new()),
            AggFunc::Max => Acc::MaxInt(Vec::new()),
        }
    }

    /// Makes slots `from..to` exist and hold the identity of the aggregate, in one pass.
    pub fn reset_range(&mut self, from: usize, to: usize) {
        fn fill<T: Copy>(v: &mut Vec<T>, from: usize, to: usize, x: T) {
            if to > v.len() {
                v.resize(to, x);
            }
            v[from..to].fill(x);
        }
        match self {
            Acc::Count(v) | Acc::SumInt(v) => fill(v, from, to, 0),
            Acc::SumFloat(v) => fill(v, from, to, 0.0),
            Acc::Avg { sum, n } => {
                fill(sum, from, to, 0.0);
                fill(n, from, to, 0);
            }
            Acc::AvgOf { .. } => {}
            Acc::MinInt(v) => fill(v, from, to, i64::MAX),
            Acc::MaxInt(v) => fill(v, from, to, i64::MIN),
            Acc::MinFloat(v) => fill(v, from, to, f64::INFINITY),
            Acc::MaxFloat(v) => fill(v, from, to, f64::NEG_INFINITY),
        }
    }

    /// Folds `arg[row]` into `slot` for every `(slot, row)` pair.
    pub fn update(&mut self, pairs: &[(u32, u32)], arg: Option<&Datum<'_>>) {
        match self {
            Acc::Count(v) => {
                for &(s, _) in pairs {
                    v[s as usize] += 1;
                }
            }
            Acc::SumInt(v) => each(pairs, ints(arg), |s, x| {
                v[s] = v[s].wrapping_add(x);
            }),
            Acc::SumFloat(v) => each(pairs, floats(arg), |s, x| v[s] += x),
            Acc::Avg { sum, n } => {
                let d = arg.expect("AVG has an argument");
                let mut add = |s: usize, x: f64| {
                    sum[s] += x;
                    n[s] += 1;
                };
                if d.storage() == Storage::Int {
                    each(pairs, d.ints(), |s, x| add(s, x as f64));
                } else {
                    each(pairs, d.floats(), add);
                }
            }
            Acc::AvgOf { .. } => {}
            Acc::MinInt(v) => fold(v, pairs, ints(arg), |x, y| x.min(y)),
            Acc::MaxInt(v) => fold(v, pairs, ints(arg), |x, y| x.max(y)),
            Acc::MinFloat(v) => fold(v, pairs, floats(arg), f64::min),
            Acc::MaxFloat(v) => fold(v, pairs, floats(arg), f64::max),
        }
    }

    /// Folds slot `s` of `src` (the same aggregate) into slot `d` for every `(d, s)` pair:
    /// how a window's value is made from its slices. Exact for counts, integer sums,
    /// MIN and MAX; float sums add slice sums, which may round differently from adding
    /// the same values one by one.
    pub fn combine(&mut self, src: &Acc, pairs: &[(u32, u32)]) {
        fn merge<T: Copy>(v: &mut [T], w: &[T], pairs: &[(u32, u32)], f: impl Fn(T, T) -> T) {
            for &(d, s) in pairs {
                let x = &mut v[d as usize];
                *x = f(*x, w[s as usize]);
            }
        }
        match (self, src) {
            (Acc::Count(v), Acc::Count(w)) | (Acc::SumInt(v), Acc::SumInt(w)) => {
                merge(v, w, pairs, i64::wrapping_add)
            }
            (Acc::SumFloat(v), Acc::SumFloat(w)) => merge(v, w, pairs, |x, y| x + y),
            (Acc::Avg { sum, n }, Acc::Avg { sum: ws, n: wn }) => {
                for &(d, s) in pairs {
                    sum[d as usize] += ws[s as usize];
                    n[d as usize] += wn[s as usize];
                }
            }
            (Acc::AvgOf { .. }, Acc::AvgOf { .. }) => {}
            (Acc::MinInt(v), Acc::MinInt(w)) => merge(v, w, pairs, i64::min),
            (Acc::MaxInt(v), Acc::MaxInt(w)) => merge(v, w, pairs, i64::max),
            (Acc::MinFloat(v), Acc::MinFloat(w)) => merge(v, w, pairs, f64::min),
            (Acc::MaxFloat(v), Acc::MaxFloat(w)) => merge(v, w, pairs, f64::max),
            (acc, src) => unreachable!("combine {src:?} into {acc:?}"),
        }
    }

    /// Appends the final value of `slot` to `out`.
    pub fn emit(&self, slot: usize, out: &mut Column) {
        match (self, out) {
            (Acc::Count(v) | Acc::SumInt(v) | Acc::MinInt(v) | Acc::MaxInt(v), Column::Int(o)) => {
                o.push(v[slot])
            }
            (Acc::SumFloat(v) | Acc::MinFloat(v) | Acc::MaxFloat(v), Column::Float(o)) => {
                o.push(v[slot])
            }
            (Acc::Avg { sum, n }, Column::Float(o)) => o.push(sum[slot] / n[slot].max(1) as f64),
            (acc, out) => unreachable!("emit {acc:?} into {out:?}"),
        }
    }

    /// Tuples folded into `slot`, for the aggregates that count them (COUNT, AVG).
    pub fn kept_count(&self, slot: usize) -> Option<i64> {
        match self {
            Acc::Count(v) => Some(v[slot]),
            Acc::Avg { n, .. } => Some(n[slot]),
            _ => None,
        }
    }

    /// Sum of the values folded into `slot`, for the aggregates that sum them (SUM, AVG).
    pub fn kept_sum(&self, slot: usize) -> Option<f64> {
        match self {
            Acc::SumInt(v) => Some(v[slot] as f64),
            Acc::SumFloat(v) => Some(v[slot]),
            Acc::Avg { sum, .. } => Some(sum[slot]),
            _ => None,
        }
    }
}

/// Appends the final value of `slot` of `accs[i]` to `out` (an `AvgOf` reads the
/// accumulators it shares).
pub fn emit_of(accs: &[Acc], i: usize, slot: usize, out: &mut Column) {
    match (&accs[i], out) {
        (&Acc::AvgOf { sum, count }, Column::Float(o)) => {
            let (s, n) = (accs[sum].kept_sum(slot), accs[count].kept_count(slot));
            let (Some(s), Some(n)) = (s, n) else {
                unreachable!("AVG shares a sum and a count")
            };
            o.push(s / n.max(1) as f64)
        }
        (acc, out) => acc.emit(slot, out),
    }
}

/// `emit_of` of every slot in `slots`, in order: one match per column, not per value.
pub fn emit_all_of(accs: &[Acc], i: usize, slots: &[u32], out: &mut Column) {
    match (&accs[i], out) {
        (Acc::Count(v) | Acc::SumInt(v) | Acc::MinInt(v) | Acc::MaxInt(v), Column::Int(o)) => {
            o.extend(slots.iter().map(|&s| v[s as usize]))
        }
        (Acc::SumFloat(v) | Acc::MinFloat(v) | Acc::MaxFloat(v), Column::Float(o)) => {
            o.extend(slots.iter().map(|&s| v[s as usize]))
        }
        (Acc::Avg { sum, n }, Column::Float(o)) => o.extend(slots.iter().map(|&s| {
            let s = s as usize;
            sum[s] / n[s].max(1) as f64
        })),
        (&Acc::AvgOf { sum, count }, Column::Float(o)) => match (&accs[sum], &accs[count]) {
            (Acc::SumFloat(sum), Acc::Count(n)) => o.extend(slots.iter().map(|&s| {
                let s = s as usize;
                sum[s] / n[s].max(1) as f64
            })),
            (sum_acc, count_acc) => o.extend(slots.iter().map(|&s| {
                let s = s as usize;
                let (Some(x), Some(n)) = (sum_acc.kept_sum(s), count_acc.kept_count(s)) else {
                    unreachable!("AVG shares a sum and a count")
                };
                x / n.max(1) as f64
            })),
        },
        (acc, out) => unreachable!("emit {acc:?} into {out:?}"),
    }
}

/// `kept_sum` of `accs[i]`, through the SUM an `AvgOf` shares.
pub fn kept_sum_of(accs: &[Acc], i: usize, slot: usize) -> Option<f64> {
    match accs[i] {
        Acc::AvgOf { sum, .. } => accs[sum].kept_sum(slot),
        ref acc => acc.kept_sum(slot),
    }
}

/// Appends a scaled estimate to an aggregate's column: rounded to the nearest integer
/// (saturating) in an int column.
pub fn push_estimate(out: &mut Column, value: f64) {
    match out {
        Column::Int(o) => o.push(value.round() as i64),
        Column::Float(o) => o.push(value),
        c => unreachable!("estimate into {c:?}"),
    }
}

fn ints<'a>(arg: Option<&'a Datum<'_>>) -> Side<'a, i64> {
    arg.expect("aggregate has an argument").ints()
}

fn floats<'a>(arg: Option<&'a Datum<'_>>) -> Side<'a, f64> {
    arg.expect("aggregate has an argument").floats()
}

fn fold<T: Copy>(v: &mut [T], pairs: &[(u32, u32)], a: Side<'_, T>, f: impl Fn(T, T) -> T) {
    each(pairs, a, |s, x| v[s] = f(v[s], x));
}

/// Calls `f(slot, value)` for every `(slot, row)` pair, in order, with the operand's
/// value at the row: one loop per operand shape, no branch per pair.
#[inline]
fn each<T: Copy>(pairs: &[(u32, u32)], a: Side<'_, T>, mut f: impl FnMut(usize, T)) {
    match a {
        Side::Many(v) => pairs
            .iter()
            .for_each(|&(s, r)| f(s as usize, v[r as usize])),
        Side::One(c) => pairs.iter().for_each(|&(s, _)| f(s as usize, c)),
    }
}
