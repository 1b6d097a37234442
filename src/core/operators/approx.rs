//! How approximate each result row is. Results computed from input that lost tuples to
//! random shedding carry the effective keep fraction behind them and, for scaled
//! aggregates, a 95% confidence interval; exact results carry nothing.
//!
//! Invariant: `keep` is empty (every row exact) or has one entry per result row; each
//! `Interval` column has one `lo`/`hi` per row (NaN where the row is exact).

use crate::core::batch::Batch;
use crate::core::plan::{AggFunc, AggregatePlan};
use crate::core::schema::DataType;

/// How one output column of an approximate row relates to the exact answer.
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnApprox {
    /// Exact, or not an aggregate this module can qualify (keys, window bounds, and any
    /// expression computed over a scaled aggregate).
    Exact,
    /// A scaled estimate (COUNT, SUM) or ratio estimate (AVG) with a 95% interval.
    Interval { lo: Vec<f64>, hi: Vec<f64> },
    /// The observed MAX: the exact MAX is at least this.
    LowerBound,
    /// The observed MIN: the exact MIN is at most this.
    UpperBound,
}

impl ColumnApprox {
    /// The same kind of qualification, with no rows.
    pub fn kind(&self) -> ColumnApprox {
        match self {
            ColumnApprox::Interval { .. } => ColumnApprox::Interval {
                lo: Vec::new(),
                hi: Vec::new(),
            },
            other => other.clone(),
        }
    }

    /// How each output column of an aggregate over input that lost tuples is qualified:
    /// keys exact; MIN an upper bound, MAX a lower bound; COUNT, SUM and AVG intervals;
    /// the two window bounds exact. The one layout scaling and loss accounting share.
    pub fn for_aggregate(plan: &AggregatePlan) -> Vec<ColumnApprox> {
        (0..plan.keys.len())
            .map(|_| ColumnApprox::Exact)
            .chain(plan.aggs.iter().map(|a| match a.func {
                AggFunc::Min => ColumnApprox::UpperBound,
                AggFunc::Max => ColumnApprox::LowerBound,
                _ => ColumnApprox::Interval {
                    lo: Vec::new(),
                    hi: Vec::new(),
                },
            }))
            .chain([ColumnApprox::Exact, ColumnApprox::Exact])
            .collect()
    }
}

/// Approximation side-car of a result batch, row-aligned with it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResultApprox {
    /// Effective keep fraction of each row's input (1 for exact rows); empty if all exact.
    pub keep: Vec<f64>,
    /// One entry per output column once any row with column qualifications was
    /// approximate; empty otherwise (every column `Exact`). Kept across `clear`, so that
    /// interval buffers are reused: the kinds of a pipeline's columns never change.
    pub columns: Vec<ColumnApprox>,
}

impl ResultApprox {
    pub fn is_exact(&self) -> bool {
        self.keep.is_empty()
    }

    /// Forgets every row; the column kinds stay.
    pub fn clear(&mut self) {
        self.keep.clear();
        for c in &mut self.columns {
            if let ColumnApprox::Interval { lo, hi } = c {
                lo.clear();
                hi.clear();
            }
        }
    }

    /// The interval of column `col` at `row`, if that column has intervals and the row is
    /// approximate.
    pub fn interval(&self, col: usize, row: usize) -> Option<(f64, f64)> {
        match self.columns.get(col)? {
            ColumnApprox::Interval { lo, hi } => {
                let (l, h) = (*lo.get(row)?, *hi.get(row)?);
                (!l.is_nan()).then_some((l, h))
            }
            _ => None,
        }
    }

    /// Appends `n` rows that all had keep fraction `keep`, after `before` existing rows,
    /// with no interval columns (stateless results: fewer rows, each one exact).
    pub fn push_uniform(&mut self, before: usize, n: usize, keep: f64) {
        if keep >= 1.0 && self.is_exact() {
            return;
        }
        self.fill_to(before);
        self.keep.extend(std::iter::repeat_n(keep, n));
        self.fill_to(before + n);
    }

    /// Appends approximate row `row` (rows before it without an entry are exact) with keep
    /// fraction `keep`. `kinds` gives every column's kind and is installed on first use;
    /// `intervals[c]` is the `(lo, hi)` of column `c`, read for `Interval` columns only.
    pub fn push_row(
        &mut self,
        row: usize,
        keep: f64,
        kinds: &[ColumnApprox],
        intervals: &[(f64, f64)],
    ) {
        if self.columns.is_empty() {
            self.columns = kinds.iter().map(ColumnApprox::kind).collect();
        }
        self.fill_to(row);
        self.keep.push(keep);
        for (c, &(l, h)) in self.columns.iter_mut().zip(intervals) {
            if let ColumnApprox::Interval { lo, hi } = c {
                lo.push(l);
                hi.push(h);
            }
        }
    }

    /// Makes `keep` cover `rows` rows, the missing ones exact; nothing to do while every
    /// row is exact.
    pub fn pad(&mut self, rows: usize) {
        if !self.is_exact() {
            self.fill_to(rows);
        }
    }

    /// Multiplies the keep fraction of existing row `row` by `factor` (exact rows start at
    /// 1), and with `drop_intervals` makes its intervals unknown (NaN). `kinds` is installed
    /// if no row was approximate yet.
    pub fn qualify(
        &mut self,
        row: usize,
        factor: f64,
        drop_intervals: bool,
        kinds: &[ColumnApprox],
    ) {
        if self.columns.is_empty() {
            self.columns = kinds.iter().map(ColumnApprox::kind).collect();
        }
        self.fill_to(row + 1);
        self.keep[row] *= factor;
        if drop_intervals {
            for c in &mut self.columns {
                if let ColumnApprox::Interval { lo, hi } = c {
                    lo[row] = f64::NAN;
                    hi[row] = f64::NAN;
                }
            }
        }
    }

    /// Appends the rows `sel` of `src` after `before` existing rows (HAVING).
    pub fn gather_from(&mut self, before: usize, src: &ResultApprox, sel: &[u32]) {
        if src.is_exact() {
            self.pad(before + sel.len());
            return;
        }
        if self.columns.is_empty() {
            self.columns = src.columns.iter().map(ColumnApprox::kind).collect();
        }
        self.fill_to(before);
        self.keep.extend(sel.iter().map(|&i| src.keep[i as usize]));
        for (d, s) in self.columns.iter_mut().zip(&src.columns) {
            if let (ColumnApprox::Interval { lo, hi }, ColumnApprox::Interval { lo: sl, hi: sh }) =
                (d, s)
            {
                lo.extend(sel.iter().map(|&i| sl[i as usize]));
                hi.extend(sel.iter().map(|&i| sh[i as usize]));
            }
        }
    }

    /// Appends the `n` rows of `src` after `before` existing rows, projected: output column
    /// `c` takes `src` column `from[c]`, or is `Exact` where `from[c]` is `None`.
    pub fn extend_projected(
        &mut self,
        before: usize,
        src: &ResultApprox,
        n: usize,
        from: &[Option<usize>],
    ) {
        if src.is_exact() {
            self.pad(before + n);
            return;
        }
        if self.columns.is_empty() {
            self.columns = from
                .iter()
                .map(|f| match f.and_then(|c| src.columns.get(c)) {
                    Some(k) => k.kind(),
                    None => ColumnApprox::Exact,
                })
                .collect();
        }
        self.fill_to(before);
        self.keep.extend_from_slice(&src.keep[..n]);
        for (d, f) in self.columns.iter_mut().zip(from) {
            let src_col = f.and_then(|c| src.columns.get(c));
            if let (
                ColumnApprox::Interval { lo, hi },
                Some(ColumnApprox::Interval { lo: sl, hi: sh }),
            ) = (d, src_col)
            {
                lo.extend_from_slice(&sl[..n]);
                hi.extend_from_slice(&sh[..n]);
            }
        }
        self.fill_to(before + n);
    }

    /// Makes `keep` and every interval column cover `rows` rows, the missing ones exact.
    fn fill_to(&mut self, rows: usize) {
        if self.keep.len() < rows {
            self.keep.resize(rows, 1.0);
        }
        for c in &mut self.columns {
            if let ColumnApprox::Interval { lo, hi } = c
                && lo.len() < rows
            {
                lo.resize(rows, f64::NAN);
                hi.resize(rows, f64::NAN);
            }
        }
    }
}

/// A result buffer: rows plus how approximate they are.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    pub rows: Batch,
    pub approx: ResultApprox,
}

impl Output {
    /// An empty buffer for rows of `types`.
    pub fn new(types: &[DataType]) -> Output {
        Output {
            rows: Batch::new(types, 0),
            approx: ResultApprox::default(),
        }
    }

    pub fn clear(&mut self) {
        self.rows.clear();
        self.approx.clear();
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}
