//! How approximate each result row is. Results computed from input that lost tuples to
//! random shedding carry the effective keep fraction behind them and, for scaled
//! aggregates, a 95% confidence interval; exact results carry nothing.
//!
//! Invariant: `keep` is empty (every row exact) or has one entry per result row; each
//! `Interval` column has one `lo`/`hi` per row (NaN where the row is exact).

/// How one output column of an approximate row relates to the exact answer.
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnApprox {
    /// Exact, or not an aggregate this module can qualify.
    Exact,
    /// A scaled estimate (COUNT, SUM) or ratio estimate (AVG) with a 95% interval.
    Interval { lo: Vec<f64>, hi: Vec<f64> },
    /// The observed MAX: the exact MAX is at least this.
    LowerBound,
    /// The observed MIN: the exact MIN is at most this.
    UpperBound,
}

/// Approximation side-car of a result batch, row-aligned with it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResultApprox {
    /// Effective keep fraction of each row's input (1 for exact rows); empty if all exact.
    pub keep: Vec<f64>,
    /// One entry per output column once any row is approximate; empty otherwise.
    pub columns: Vec<ColumnApprox>,
}

impl ResultApprox {
    pub fn is_exact(&self) -> bool {
        self.keep.is_empty()
    }

    pub fn clear(&mut self) {
        self.keep.clear();
        for c in &mut self.columns {
            if let ColumnApprox::Interval { lo, hi } = c {
                lo.clear();
                hi.clear();
            }
        }
    }

    /// Appends `n` rows that all had keep fraction `keep`, after `before` existing rows,
    /// with no interval columns (stateless results: fewer rows, each one exact).
    pub fn push_uniform(&mut self, before: usize, n: usize, keep: f64) {
        if keep >= 1.0 && self.keep.is_empty() {
            return;
        }
        self.pad(before);
        self.keep.extend(std::iter::repeat_n(keep, n));
    }

    /// Makes `keep` cover `rows` rows, the missing ones exact.
    pub fn pad(&mut self, rows: usize) {
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
    pub rows: super::super::batch::Batch,
    pub approx: ResultApprox,
}

impl Output {
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
