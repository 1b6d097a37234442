//! A windowed aggregate with its HAVING and SELECT list: the group rows the window operator
//! closes are qualified for the input they lost (`loss`), filtered by HAVING and projected
//! into result rows.
//!
//! Invariant: at most one chunk of unfiltered group rows exists at once. A close that
//! completes many windows (the end of input, a frontier jump) would otherwise build every
//! row of all of them before HAVING drops most; instead the rows are finished a few
//! windows at a time, as soon as `CHUNK_ROWS` are buffered at a window boundary, and the
//! loss accounting of each chunk is judged up to the last window it holds. The result rows,
//! their annotations and the windows counted as lost are those of finishing the whole
//! close at once.

use super::approx::Output;
use super::loss::WindowLoss;
use super::window::{GroupSink, WindowAggregate};
use crate::core::expr::Expr;
use crate::core::plan::AggregatePlan;

/// Group rows buffered before they are finished (at the next window boundary): a chunk is
/// at most this plus one window's rows.
pub(super) const CHUNK_ROWS: usize = 8192;

#[derive(Debug)]
pub(super) struct Aggregate {
    pub(super) op: WindowAggregate,
    /// Tuples the windows lost before they reached the operator.
    pub(super) loss: WindowLoss,
    finish: Finish,
}

/// What turns closed group rows into result rows, apart from the operator (so that the
/// operator can hand it rows while it closes windows).
#[derive(Debug)]
struct Finish {
    having: Option<Expr>,
    project: Vec<Expr>,
    /// For each SELECT column, the group-row column whose approximation it inherits.
    inherit: Vec<Option<usize>>,
    /// Group rows closed by the operator, before HAVING and projection.
    groups: Output,
    /// The group rows that passed HAVING.
    kept: Output,
    /// HAVING's selection (scratch).
    sel: Vec<u32>,
    /// Group rows buffered before a chunk is finished.
    chunk_rows: usize,
    /// Most group rows ever buffered at once (what the chunking bounds).
    peak_groups: usize,
}

/// The sink the operator closes windows into: the finish stage and where result rows go.
pub(super) struct Chunks<'a> {
    finish: &'a mut Finish,
    loss: &'a mut WindowLoss,
    out: &'a mut Output,
}

impl GroupSink for Chunks<'_> {
    fn buffer(&mut self) -> &mut Output {
        &mut self.finish.groups
    }

    fn window_closed(&mut self, closed: i64) {
        if self.finish.groups.len() >= self.finish.chunk_rows {
            self.finish.run(self.loss, closed, self.out);
        }
    }
}

impl Chunks<'_> {
    /// Finishes the rows still buffered, and judges the windows ending by `closed` (the
    /// operator's `closed()` once it is done).
    pub(super) fn done(self, closed: i64) {
        self.finish.run(self.loss, closed, self.out);
    }
}

impl Aggregate {
    pub(super) fn new(a: &AggregatePlan) -> Aggregate {
        Aggregate {
            op: WindowAggregate::new(a),
            loss: WindowLoss::new(a),
            finish: Finish {
                having: a.having.clone(),
                project: a.project.clone(),
                inherit: a
                    .project
                    .iter()
                    .map(|e| match e {
                        Expr::Column(c) => Some(*c),
                        _ => None,
                    })
                    .collect(),
                groups: Output::new(&a.group_row_types()),
                kept: Output::new(&a.group_row_types()),
                sel: Vec::new(),
                chunk_rows: CHUNK_ROWS,
                peak_groups: 0,
            },
        }
    }

    /// The operator, and the sink it closes windows into, whose rows end in `out`: call
    /// `Chunks::done` with the operator's `closed()` after the operator's last call.
    pub(super) fn split<'a>(
        &'a mut self,
        out: &'a mut Output,
    ) -> (&'a mut WindowAggregate, Chunks<'a>) {
        let sink = Chunks {
            finish: &mut self.finish,
            loss: &mut self.loss,
            out,
        };
        (&mut self.op, sink)
    }

    /// Buffers up to `rows` group rows before finishing them (at a window boundary);
    /// `usize::MAX` finishes each close whole.
    #[cfg(test)]
    pub(super) fn set_chunk_rows(&mut self, rows: usize) {
        self.finish.chunk_rows = rows.max(1);
    }

    /// Most unfiltered group rows buffered at once so far.
    #[cfg(test)]
    pub(super) fn peak_group_rows(&self) -> usize {
        self.finish.peak_groups
    }
}

impl Finish {
    /// Qualifies the buffered group rows for the input their windows lost, judges the
    /// windows ending by `closed`, and appends the rows passing HAVING, projected, to `out`.
    fn run(&mut self, loss: &mut WindowLoss, closed: i64, out: &mut Output) {
        let groups = &mut self.groups;
        self.peak_groups = self.peak_groups.max(groups.len());
        loss.apply(groups, closed);
        if groups.is_empty() {
            return;
        }
        let rows: &Output = match &self.having {
            None => groups,
            Some(h) => {
                h.select(&groups.rows, &mut self.sel);
                self.kept.clear();
                self.kept.rows.gather_from(&groups.rows, &self.sel);
                self.kept.approx.gather_from(0, &groups.approx, &self.sel);
                &self.kept
            }
        };
        let before = out.rows.len();
        for (e, col) in self.project.iter().zip(out.rows.columns.iter_mut()) {
            e.eval_into(&rows.rows, col);
        }
        out.rows.arrival.extend_from_slice(&rows.rows.arrival);
        out.approx
            .extend_projected(before, &rows.approx, rows.len(), &self.inherit);
        groups.clear();
    }
}
