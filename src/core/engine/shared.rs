//! The engine's side of shared evaluation (`core::shared`): which queries of a stream join
//! its predicate index, and how a member's ledger reads when the index filters its input.
//!
//! Where the drop decision sits: **after** the shared filter. A member query's drop point,
//! queue and pipeline see only the rows its indexed conjunct passes. A row the index filters
//! out was evaluated (by the index, at ingest) and is counted as `processed` there: it is not
//! a dropped row, exactly as a row the query's own filter rejects is processed, not dropped.
//! So the ledger stays balanced at every moment (`offered` = the stream's tuples =
//! dropped by reason + queued + processed), drops stay per query and per reason, and without
//! shedding the rows are those of unshared evaluation (the pipeline runs the residual
//! conjuncts of its WHERE clause over the matching rows). What changes under shedding, by design: a query's
//! random and semantic drops are drawn among the rows it would keep, so its `dropped`
//! counts no rows its filter would have rejected anyway, its queue holds only matching
//! rows (fewer queue-full drops), and semantic `value_keep` is the share of its matching
//! rows that passed the value test. In simulated mode a member's declared per-tuple cost is
//! charged per matching row it runs, as every query is charged per row it runs.
//!
//! A query joins the index when it is running, has no windows (a window operator must see
//! the rows its filter rejects: they move its watermark), has no processed-value observer
//! (the experiment counts every row the pipeline sees) and has an indexable conjunct; and
//! only while its stream has at least `share_min` such queries (few queries filter as fast
//! on their own). Membership may change at any time: a batch the index narrowed is queued
//! marked `prefiltered`, and only such batches skip the indexed conjunct (the pipeline runs
//! the residual conjuncts on them, its whole filter on any other batch).

use std::sync::Arc;

use super::Engine;
use crate::core::batch::Batch;
use crate::core::schema::DataType;
use crate::core::shard::RoutedTime;
use crate::core::shared::{SharedIndex, split};

/// Below this many eligible queries on one stream, each filters on its own.
pub const DEFAULT_SHARE_MIN: usize = 8;

/// One stream's shared-evaluation state.
#[derive(Debug)]
pub(super) struct StreamShare {
    index: SharedIndex,
    /// The readers changed since the index was built.
    dirty: bool,
    share_min: usize,
    /// Narrowed batches the queries are done with, reused (this stream's column types):
    /// a member's batch costs no allocation but its `Arc`. A batch a query took whole as
    /// its result (`Pipeline::pass_through`) comes back holding that result's old buffers.
    spare: Vec<Batch>,
}

/// The most rows a member's queued batch gathers from later ingested batches while the
/// member is behind (`InputQueue::coalesce`): the default `engine.batch_size`, so that a
/// turn of a member costs about what a turn of any query costs.
pub(super) const COALESCE_ROWS: usize = 1024;

/// Spare batches kept per stream at most.
const SPARE: usize = 4096;

impl Default for StreamShare {
    fn default() -> StreamShare {
        StreamShare {
            index: SharedIndex::default(),
            dirty: true,
            share_min: DEFAULT_SHARE_MIN,
            spare: Vec::new(),
        }
    }
}

/// What the index leaves of a batch for one reader.
pub(super) enum Narrowed {
    /// Not a member, or (`prefiltered`) a member all of whose rows match: the batch as it
    /// is.
    Whole { prefiltered: bool },
    /// No row matches.
    Nothing,
    /// The matching rows.
    Rows(Arc<Batch>, Option<Arc<RoutedTime>>),
}

impl StreamShare {
    /// Marks the index stale (a reader joined, left or changed).
    pub(super) fn invalidate(&mut self) {
        self.dirty = true;
    }

    /// Whether no query's input is filtered by the index (none is built).
    pub(super) fn is_idle(&self) -> bool {
        self.index.is_empty()
    }

    /// Evaluates the members' indexed conjuncts over `batch`.
    pub(super) fn route(&mut self, batch: &Batch) {
        if !self.index.is_empty() {
            self.index.route(batch);
        }
    }

    /// The rows of the last routed batch that query `q`'s indexed conjunct passes
    /// (ascending), if `q` is a member.
    pub(super) fn rows_of(&self, q: usize) -> Option<&[u32]> {
        self.index.rows_of(q)
    }

    /// Rows of the last routed `batch` left for query `q`, and how many the index filtered
    /// out (counted as processed by the caller).
    pub(super) fn narrow(
        &mut self,
        q: usize,
        batch: &Batch,
        time: Option<&Arc<RoutedTime>>,
        types: &[DataType],
    ) -> (Narrowed, u64) {
        let Some(rows) = self.index.rows_of(q) else {
            return (Narrowed::Whole { prefiltered: false }, 0);
        };
        let skipped = (batch.len() - rows.len()) as u64;
        if rows.is_empty() {
            (Narrowed::Nothing, skipped)
        } else if rows.len() == batch.len() {
            (Narrowed::Whole { prefiltered: true }, 0)
        } else {
            let mut kept = match self.spare.pop() {
                Some(mut b) => {
                    b.clear();
                    b
                }
                None => Batch::new(types, rows.len()),
            };
            kept.gather_from(batch, rows);
            let t = time.map(|t| Arc::new(t.gather(rows)));
            (Narrowed::Rows(Arc::new(kept), t), skipped)
        }
    }
}

impl StreamShare {
    /// Takes back a batch of this stream a query has processed, if nothing else holds it.
    pub(super) fn recycle(&mut self, batch: Arc<Batch>) {
        if self.spare.len() < SPARE
            && let Ok(b) = Arc::try_unwrap(batch)
        {
            self.spare.push(b);
        }
    }
}

impl Engine {
    /// Shares evaluation on a stream once it has `n` or more eligible queries (`usize::MAX`:
    /// never; default `DEFAULT_SHARE_MIN`). Applies from the next `ingest` on.
    pub fn set_share_min(&mut self, n: usize) {
        for s in &mut self.streams {
            s.shared.share_min = n;
            s.shared.invalidate();
        }
    }

    /// The queries whose input `stream`'s predicate index filters (after the next ingest
    /// rebuilds it, if stale).
    pub fn shared_queries(&mut self, stream: usize) -> &[usize] {
        self.refresh_shared(stream);
        self.streams[stream].shared.index.members()
    }

    /// Rebuilds `stream`'s index if its readers changed.
    pub(super) fn refresh_shared(&mut self, stream: usize) {
        let s = &self.streams[stream];
        if !s.shared.dirty {
            return;
        }
        let mut members = Vec::new();
        let mut residuals = Vec::new();
        for &qi in &s.readers {
            let q = &self.queries[qi];
            if q.removed || q.pipeline.is_windowed() || q.processed_values.is_some() {
                continue;
            }
            if let Some((found, rest)) = q.def.plan.filter.as_ref().and_then(|f| split(f, &s.types))
            {
                members.push((qi, found));
                residuals.push(rest);
            }
        }
        let share = &mut self.streams[stream].shared;
        share.dirty = false;
        if members.len() < share.share_min {
            share.index = SharedIndex::default();
            return;
        }
        share.index = SharedIndex::build(&members);
        // A residual is a function of the plan alone, so it stays right for batches queued
        // while a member even after the query leaves the index.
        for ((qi, _), rest) in members.iter().zip(residuals) {
            self.queries[*qi].pipeline.set_residual(rest);
        }
    }
}
