//! Query pipelines: a filter, then either a projection (stateless) or a windowed
//! aggregate followed by HAVING and the SELECT list. A pipeline turns input batches into
//! result batches whose `arrival` is the arrival of the tuple that made each row due, and
//! keeps each result's approximation side-car row-aligned with it through HAVING and the
//! SELECT list.
//!
//! A SELECT column that is exactly an aggregate (`Expr::Column` of an aggregate's group-row
//! column) inherits that aggregate's approximation; every other column, including any
//! expression computed over a scaled aggregate, is `Exact` in the side-car: it gets no
//! interval, although its row still carries the keep fraction.

mod accumulators;
mod aggregate;
mod approx;
mod closing;
mod interner;
mod loss;
mod loss_runs;
mod lost;
mod scaling;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_chunks;
#[cfg(test)]
mod tests_dict;
#[cfg(test)]
mod tests_placement;
#[cfg(test)]
mod tests_selection;
#[cfg(test)]
mod tests_sliced;
#[cfg(test)]
mod tests_stacks;
#[cfg(test)]
mod tests_state;
mod window;

pub use approx::{ColumnApprox, Output, ResultApprox};
pub use loss::{LossKind, TimeSpans};
pub use window::{GroupSink, WindowAggregate};

use aggregate::Aggregate;

use super::batch::Batch;
use super::expr::Expr;
use super::plan::{PlanBody, QueryPlan};
use super::rows::Rows;
use super::schema::{DataType, Nanos};
use super::shard::{RoutedTime, ShardFilter};

#[derive(Debug)]
enum Body {
    Project(Vec<Expr>),
    Aggregate(Box<Aggregate>),
}

/// The executable form of one `QueryPlan`.
#[derive(Debug)]
pub struct Pipeline {
    filter: Option<Expr>,
    body: Body,
    input_types: Vec<DataType>,
    out_types: Vec<DataType>,
    /// The rows read after the filter (batch row indices, ascending): a selection, never
    /// a copy of the rows. Also HAVING's scratch.
    sel: Vec<u32>,
    /// Scratch: per filtered row, the watermark the unfiltered rows up to it imply.
    prefix: Vec<(i64, Nanos)>,
    /// With several workers: keeps only the rows of this worker's key shards. It acts as
    /// a second filter, so the rows of other shards still move the watermark in order.
    shard: Option<ShardFilter>,
    /// This worker's share of the last processed batch's rows (all of them unsharded; with
    /// a WHERE clause, the owned share of the passed rows scaled to the batch): what a
    /// simulated worker is charged for.
    owned_last: usize,
    /// The filter without the conjunct a predicate index evaluates at ingest (shared
    /// evaluation), once the query joined one; `prefiltered` batches run it instead.
    residual: Option<Option<Expr>>,
    /// The next `process_routed` batch is prefiltered (reset by that call).
    prefiltered: bool,
    /// The SELECT list is every input column in order (`SELECT *` or its spelling out):
    /// a batch every row of which passes is its own result.
    identity: bool,
}

impl Pipeline {
    pub fn new(plan: &QueryPlan, input_types: &[DataType]) -> Pipeline {
        let body = match &plan.body {
            PlanBody::Project(exprs) => Body::Project(exprs.clone()),
            PlanBody::Aggregate(a) => Body::Aggregate(Box::new(Aggregate::new(a))),
        };
        let identity = matches!(&body, Body::Project(exprs)
            if exprs.len() == input_types.len()
                && exprs.iter().enumerate().all(|(i, e)| matches!(e, Expr::Column(c) if *c == i)));
        Pipeline {
            filter: plan.filter.clone(),
            identity,
            body,
            prefix: Vec::new(),
            shard: None,
            owned_last: 0,
            residual: None,
            prefiltered: false,
            input_types: input_types.to_vec(),
            out_types: plan.output.types(),
            sel: Vec::new(),
        }
    }

    /// Sets the filter that prefiltered batches run (the query's WHERE clause less the
    /// conjunct a predicate index already evaluated).
    pub fn set_residual(&mut self, residual: Option<Expr>) {
        self.residual = Some(residual);
    }

    /// Marks the next `process_routed` batch as prefiltered (every row passed the indexed
    /// conjunct). Needs `set_residual` first.
    pub fn next_prefiltered(&mut self, on: bool) {
        self.prefiltered = on && self.residual.is_some();
    }

    /// Whether a prefiltered batch, read whole, is its own result: the SELECT list is every
    /// column in order, nothing is left of the WHERE clause after the predicate index, and
    /// no shard filter applies (`pass_through`).
    pub fn passes_through(&self) -> bool {
        self.identity && matches!(self.residual, Some(None)) && self.shard.is_none()
    }

    /// `process_selected` of a prefiltered `batch` read whole when `passes_through`, into
    /// an empty `out`: the batch's buffers become the result rows and `batch` gets `out`'s
    /// empty ones, so no row is copied. Same rows, arrival times and keeps as the copy.
    pub fn pass_through(
        &mut self,
        batch: &mut Batch,
        keep: f64,
        value_keep: f64,
        out: &mut Output,
    ) {
        debug_assert!(self.passes_through() && out.is_empty() && out.approx.is_exact());
        self.prefiltered = false;
        self.owned_last = batch.len();
        std::mem::swap(&mut out.rows, batch);
        out.approx
            .push_uniform(0, out.rows.len(), keep * value_keep);
    }

    /// Keeps only the rows of one worker's key shards from the next batch on.
    pub fn set_shard(&mut self, shard: ShardFilter) {
        self.shard = Some(shard);
    }

    /// Rows of the last processed batch that belong to this worker's shards.
    pub fn owned_last(&self) -> usize {
        self.owned_last
    }

    pub fn output_types(&self) -> &[DataType] {
        &self.out_types
    }

    /// A fresh, empty result buffer of this pipeline's result type.
    pub fn new_output(&self) -> Output {
        Output::new(&self.out_types)
    }

    /// Withholds the window starting at `start` (`WindowAggregate::withhold`).
    pub fn withhold_window(&mut self, start: i64) {
        if let Body::Aggregate(a) = &mut self.body {
            a.op.withhold(start);
        }
    }

    /// Windows withheld whole because window-aware shedding abandoned them.
    pub fn windows_withheld(&self) -> u64 {
        match &self.body {
            Body::Aggregate(a) => a.op.windows_withheld(),
            Body::Project(_) => 0,
        }
    }

    /// Tuples dropped as late by a window operator.
    pub fn late(&self) -> u64 {
        match &self.body {
            Body::Aggregate(a) => a.op.late(),
            Body::Project(_) => 0,
        }
    }

    /// Windows that closed without a row because every tuple offered to them was lost.
    pub fn windows_lost(&self) -> u64 {
        match &self.body {
            Body::Aggregate(a) => a.loss.windows_lost(),
            Body::Project(_) => 0,
        }
    }

    /// Records that the rows of `batch` not in `kept` (ascending) were discarded for this
    /// query before reaching it, for reason `kind`. Only a windowed pipeline keeps
    /// anything: its rows must say what they lost.
    pub fn note_lost(&mut self, batch: &Batch, kept: &[u32], kind: LossKind) {
        self.note_lost_spanned(batch, kept, kind, &mut TimeSpans::new());
    }

    /// `note_lost` with the time spans of `batch` shared with its other readers (the
    /// engine's fan-out computes each batch's span once for all of them).
    pub fn note_lost_spanned(
        &mut self,
        batch: &Batch,
        kept: &[u32],
        kind: LossKind,
        spans: &mut TimeSpans,
    ) {
        if let Body::Aggregate(a) = &mut self.body {
            let closed = a.op.closed();
            a.loss.note_lost(batch, kept, kind, closed, spans);
        }
    }

    /// Records that the rows `lost` of `batch` (ascending), already queued for this query,
    /// were discarded there for reason `kind` (`Engine::thin_queued`).
    pub fn note_lost_rows(
        &mut self,
        batch: &Batch,
        lost: impl Iterator<Item = u32> + Clone,
        kind: LossKind,
    ) {
        if let Body::Aggregate(a) = &mut self.body {
            let closed = a.op.closed();
            a.loss.note_lost_rows(batch, lost, kind, closed);
        }
    }

    /// Whether the pipeline holds state that a tick or flush may emit.
    pub fn is_windowed(&self) -> bool {
        matches!(self.body, Body::Aggregate(_))
    }

    /// Runs one input batch whose tuples each survived random shedding with probability
    /// `keep`, and of which semantic drops left `value_keep`; results are appended to
    /// `out`.
    pub fn process(&mut self, input: &Batch, keep: f64, value_keep: f64, out: &mut Output) {
        self.process_routed(input, keep, value_keep, None, out);
    }

    /// `process` of a batch that may be one worker's rows of a batch split by shard:
    /// `routed` then carries the stream's event time those rows cannot see, which moves
    /// the watermark as the whole batch would have.
    pub fn process_routed(
        &mut self,
        input: &Batch,
        keep: f64,
        value_keep: f64,
        routed: Option<&RoutedTime>,
        out: &mut Output,
    ) {
        self.process_selected(Rows::all(input), keep, value_keep, routed, out);
    }

    /// `process_routed` of the rows of a shared batch that a drop point kept for this
    /// query (`input.sel`), read in place: the rows it did not keep are invisible, as if
    /// they had been cut out (`routed`, if any, has one entry per row of the batch).
    pub fn process_selected(
        &mut self,
        input: Rows<'_>,
        keep: f64,
        value_keep: f64,
        routed: Option<&RoutedTime>,
        out: &mut Output,
    ) {
        let unfiltered = input;
        let batch = input.batch;
        let filter = match (std::mem::take(&mut self.prefiltered), &self.residual) {
            (true, Some(r)) => r.as_ref(),
            _ => self.filter.as_ref(),
        };
        // Rows the WHERE clause passes, over the whole batch (what one worker would see).
        let mut passed = unfiltered.len();
        // This worker's share of the batch's input rows: the rows of its shards among the
        // passed ones, scaled to the batch (all rows without sharding).
        let mut owned = unfiltered.len();
        // The rows read next: the filter's (and shard's) selection, in place, no copy.
        let (input, filtered_out) = if filter.is_none() && self.shard.is_none() {
            (unfiltered, false)
        } else {
            let all = match filter {
                Some(f) => f.select_or_all(batch, &mut self.sel),
                None => {
                    self.sel.clear();
                    true
                }
            };
            if all && self.shard.is_some() {
                match unfiltered.sel {
                    Some(s) => self.sel.extend_from_slice(s),
                    None => self.sel.extend(0..batch.len() as u32),
                }
            } else if let Some(s) = unfiltered.sel {
                crate::core::rows::intersect(&mut self.sel, s);
            }
            passed = if all {
                unfiltered.len()
            } else {
                self.sel.len()
            };
            let mut whole = passed == unfiltered.len();
            if let Some(s) = &self.shard {
                s.retain(batch, &mut self.sel);
                owned = if passed == unfiltered.len() {
                    self.sel.len()
                } else if passed > 0 {
                    (unfiltered.len() as u64 * self.sel.len() as u64 / passed as u64) as usize
                } else {
                    0
                };
                whole = self.sel.len() == unfiltered.len();
            }
            if whole {
                (unfiltered, false)
            } else {
                (Rows::selected(batch, &self.sel), true)
            }
        };
        self.owned_last = owned;
        match &mut self.body {
            Body::Project(exprs) => {
                if input.is_empty() {
                    return;
                }
                let before = out.rows.len();
                for (e, col) in exprs.iter().zip(out.rows.columns.iter_mut()) {
                    e.eval_rows_into(input, col);
                }
                match input.sel {
                    None => out.rows.arrival.extend_from_slice(&batch.arrival),
                    Some(sel) => {
                        (out.rows.arrival).extend(sel.iter().map(|&i| batch.arrival[i as usize]))
                    }
                }
                out.approx
                    .push_uniform(before, input.len(), keep * value_keep);
            }
            Body::Aggregate(a) => {
                if filter.is_some() {
                    a.loss.note_filter(unfiltered.len(), passed);
                }
                a.loss.count_kept(input, a.op.closed());
                let (op, mut sink) = a.split(out);
                if let Some(r) = routed {
                    if !input.is_empty() {
                        let prefix = match input.sel {
                            Some(sel) => {
                                self.prefix.clear();
                                (self.prefix).extend(sel.iter().map(|&i| r.prefix[i as usize]));
                                Some(self.prefix.as_slice())
                            }
                            None => Some(r.prefix.as_slice()),
                        };
                        op.process_rows(input, keep, value_keep, prefix, &mut sink);
                    }
                    op.advance_to(r.tail.0, r.tail.1, &mut sink);
                } else if !input.is_empty() {
                    let prefix = if filtered_out {
                        let sel = input.sel.expect("a filtered input is a selection");
                        op.prefix_watermarks_rows(unfiltered, sel, &mut self.prefix);
                        Some(self.prefix.as_slice())
                    } else {
                        None
                    };
                    op.process_rows(input, keep, value_keep, prefix, &mut sink);
                }
                // Tuples the filter removed still tell the time: windows they complete close
                // now, not when the next passing tuple arrives.
                if filtered_out && routed.is_none() {
                    op.advance_rows(unfiltered, &mut sink);
                }
                let done = op.emitted_to();
                sink.done(done);
            }
        }
    }

    pub fn input_types(&self) -> &[DataType] {
        &self.input_types
    }
}
