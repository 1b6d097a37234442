//! How wrong each policy's answers are: the exact run's result rows are the ground truth,
//! and every row a policy run emits is matched to them by (query, group key, window).
//!
//! Invariant: an aggregate query's rows are matched only on columns that name a group and
//! its window (`widen` makes every query project all of them), never on aggregate values;
//! an exact row no run matched is missing, a run's row with no exact counterpart is extra.

use std::collections::HashMap;
use std::sync::Arc;

use crate::core::batch::{Batch, Column};
use crate::core::engine::Emitted;
use crate::core::expr::Expr;
use crate::core::plan::{PlanBody, WindowSpec};
use crate::core::schema::{DataType, Field};
use crate::spec::Workload;

/// Name of the window column `widen` adds to queries that do not project one.
pub const WINDOW_COLUMN: &str = "experiment_window_start";
/// Name prefix of group-key columns `widen` adds to queries that do not project them.
pub const KEY_COLUMN: &str = "experiment_key_";

/// How the rows of one query are matched.
#[derive(Clone, Debug, PartialEq)]
pub enum Matching {
    /// One row per passing tuple: compared by row count only.
    Rows,
    /// Output columns naming the group (keys, then the window start) and the numeric
    /// aggregate columns compared between runs.
    Groups {
        keys: Vec<usize>,
        window: usize,
        slide: i64,
        values: Vec<usize>,
    },
}

/// Makes every aggregate query of `w` project its group keys and window start (added at
/// the end of its output where missing), so each result row says which group it is.
pub fn widen(w: &mut Workload) -> Vec<Matching> {
    w.queries
        .iter_mut()
        .map(|q| {
            let plan = &mut q.plan;
            let PlanBody::Aggregate(a) = &mut plan.body else {
                return Matching::Rows;
            };
            let (k, n) = (a.keys.len(), a.aggs.len());
            let find =
                |project: &[Expr], c: usize| project.iter().position(|e| *e == Expr::Column(c));
            let mut keys = Vec::with_capacity(k);
            for i in 0..k {
                let at = find(&a.project, i).unwrap_or_else(|| {
                    a.project.push(Expr::Column(i));
                    plan.output.fields.push(Field {
                        name: format!("{KEY_COLUMN}{i}"),
                        ty: a.key_types[i],
                    });
                    a.project.len() - 1
                });
                keys.push(at);
            }
            // The window start, or its end (one names the window as well as the other).
            let window = find(&a.project, k + n)
                .or_else(|| find(&a.project, k + n + 1))
                .unwrap_or_else(|| {
                    a.project.push(Expr::Column(k + n));
                    plan.output.fields.push(Field {
                        name: WINDOW_COLUMN.into(),
                        ty: DataType::Timestamp,
                    });
                    a.project.len() - 1
                });
            let values = (0..a.project.len())
                .filter(|&c| {
                    let e = &a.project[c];
                    let is_window = *e == Expr::Column(k + n) || *e == Expr::Column(k + n + 1);
                    !keys.contains(&c)
                        && !is_window
                        && c != window
                        && !matches!(e, Expr::Column(i) if *i < k)
                        && matches!(plan.output.fields[c].ty, DataType::Int | DataType::Float)
                })
                .collect();
            let WindowSpec { slide, .. } = a.window;
            Matching::Groups {
                keys,
                window,
                slide,
                values,
            }
        })
        .collect()
}

/// The identity of a row: its group key and window, as bytes.
fn group_key(b: &Batch, row: usize, keys: &[usize], window: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 * (keys.len() + 1));
    for &c in keys {
        match &b.columns[c] {
            Column::Int(v) => out.extend_from_slice(&v[row].to_le_bytes()),
            Column::Float(v) => out.extend_from_slice(&v[row].to_bits().to_le_bytes()),
            Column::Bool(v) => out.push(v[row] as u8),
            Column::Str(v) => {
                out.extend_from_slice(v[row].as_bytes());
                out.push(0xff);
            }
        }
    }
    out.extend_from_slice(&window.to_le_bytes());
    out
}

fn number(b: &Batch, c: usize, row: usize) -> f64 {
    match &b.columns[c] {
        Column::Int(v) => v[row] as f64,
        Column::Float(v) => v[row],
        _ => f64::NAN,
    }
}

fn window_of(b: &Batch, c: usize, row: usize) -> i64 {
    match &b.columns[c] {
        Column::Int(v) => v[row],
        _ => 0,
    }
}

/// One query's rows in the exact run.
#[derive(Debug, Default)]
struct ExactQuery {
    index: HashMap<Vec<u8>, usize>,
    /// Aggregate values of each indexed row, `width` per row.
    values: Vec<f64>,
    rows: u64,
}

/// Window starts are taken relative to the first window a run emits, per query, when the
/// runs do not share a time base (live runs against the simulated exact run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeBase {
    Absolute,
    FirstWindow,
}

/// Turns emitted rows into (key, values) with the window aligned by `base`.
#[derive(Debug)]
struct Reader {
    matching: Vec<Matching>,
    base: TimeBase,
    origin: Vec<Option<i64>>,
}

impl Reader {
    fn new(matching: Vec<Matching>, base: TimeBase) -> Reader {
        let n = matching.len();
        Reader {
            matching,
            base,
            origin: vec![None; n],
        }
    }

    /// The window of row `row` of query `q` after alignment.
    fn window(&mut self, q: usize, b: &Batch, row: usize, col: usize, slide: i64) -> i64 {
        let w = window_of(b, col, row);
        match self.base {
            TimeBase::Absolute => w,
            TimeBase::FirstWindow => {
                let o = *self.origin[q].get_or_insert(w);
                (w - o).div_euclid(slide.max(1))
            }
        }
    }
}

/// The exact run's answers: what every other run is compared with.
#[derive(Debug)]
pub struct ExactAnswers {
    reader: Reader,
    queries: Vec<ExactQuery>,
}

impl ExactAnswers {
    pub fn new(matching: Vec<Matching>) -> ExactAnswers {
        let n = matching.len();
        ExactAnswers {
            reader: Reader::new(matching, TimeBase::Absolute),
            queries: (0..n).map(|_| ExactQuery::default()).collect(),
        }
    }

    /// Records the rows of one emission of the exact run.
    pub fn record(&mut self, e: &Emitted<'_>) {
        let q = &mut self.queries[e.index];
        q.rows += e.batch.len() as u64;
        let Matching::Groups {
            keys,
            window,
            slide,
            values,
        } = self.reader.matching[e.index].clone()
        else {
            return;
        };
        for row in 0..e.batch.len() {
            let w = self.reader.window(e.index, e.batch, row, window, slide);
            let key = group_key(e.batch, row, &keys, w);
            let at = q.index.len();
            if q.index.insert(key, at).is_none() {
                q.values
                    .extend(values.iter().map(|&c| number(e.batch, c, row)));
            }
        }
    }

    pub fn matching(&self) -> &[Matching] {
        &self.reader.matching
    }
}

/// One query's answer error in one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AnswerError {
    pub rows: u64,
    pub exact_rows: u64,
    /// Exact rows no row of the run matched / rows of the run with no exact counterpart
    /// (for stateless queries: the row count difference).
    pub missing: u64,
    pub extra: u64,
    /// Relative error of every matched aggregate value: `|run - exact| / |exact|` (0 when
    /// both are 0, 1 when only the exact value is).
    pub errors: Vec<f64>,
    /// Values that carried a 95% interval, and those whose interval held the exact value.
    pub with_interval: u64,
    pub covered: u64,
}

/// Compares one run's rows with the exact answers as they are emitted.
#[derive(Debug)]
pub struct AnswerCheck {
    exact: Arc<ExactAnswers>,
    reader: Reader,
    matched: Vec<Vec<bool>>,
    out: Vec<AnswerError>,
}

impl AnswerCheck {
    pub fn new(exact: Arc<ExactAnswers>, base: TimeBase) -> AnswerCheck {
        AnswerCheck {
            reader: Reader::new(exact.reader.matching.clone(), base),
            matched: exact
                .queries
                .iter()
                .map(|q| vec![false; q.index.len()])
                .collect(),
            out: vec![AnswerError::default(); exact.queries.len()],
            exact,
        }
    }

    /// Checks the rows of one emission.
    pub fn record(&mut self, e: &Emitted<'_>) {
        let qi = e.index;
        let out = &mut self.out[qi];
        out.rows += e.batch.len() as u64;
        let Matching::Groups {
            keys,
            window,
            slide,
            values,
        } = &self.reader.matching[qi]
        else {
            return;
        };
        let (keys, values, window, slide) = (keys.clone(), values.clone(), *window, *slide);
        let exact = &self.exact.queries[qi];
        for row in 0..e.batch.len() {
            let w = self.reader.window(qi, e.batch, row, window, slide);
            let key = group_key(e.batch, row, &keys, w);
            let Some(&at) = exact.index.get(&key) else {
                out.extra += 1;
                continue;
            };
            if std::mem::replace(&mut self.matched[qi][at], true) {
                out.extra += 1;
                continue;
            }
            for (j, &c) in values.iter().enumerate() {
                let truth = exact.values[at * values.len() + j];
                let got = number(e.batch, c, row);
                out.errors.push(relative_error(got, truth));
                if let Some((lo, hi)) = e.approx.and_then(|a| a.interval(c, row)) {
                    out.with_interval += 1;
                    out.covered += (lo <= truth && truth <= hi) as u64;
                }
            }
        }
    }

    /// The errors per query, once the run has ended.
    pub fn finish(mut self) -> Vec<AnswerError> {
        for (qi, out) in self.out.iter_mut().enumerate() {
            let exact = &self.exact.queries[qi];
            out.exact_rows = exact.rows;
            match &self.reader.matching[qi] {
                Matching::Rows => {
                    out.missing = exact.rows.saturating_sub(out.rows);
                    out.extra = out.rows.saturating_sub(exact.rows);
                }
                Matching::Groups { .. } => {
                    out.missing = self.matched[qi].iter().filter(|m| !**m).count() as u64;
                }
            }
        }
        self.out
    }
}

/// `|got - truth| / |truth|`; 0 when both are 0, 1 when only `truth` is 0.
pub fn relative_error(got: f64, truth: f64) -> f64 {
    if got == truth {
        0.0
    } else if truth == 0.0 || !got.is_finite() {
        1.0
    } else {
        ((got - truth) / truth).abs()
    }
}
