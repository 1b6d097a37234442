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
//! on their own). A member whose conjunct passed at least a quarter of the rows over its
//! last `DENSE_AFTER` routed rows is dense: it leaves the index (copying most of every
//! batch for it costs more than its own filter in place) and is let back in `REVISIT` rows
//! later to be judged afresh; meanwhile a batch it matches densely is read whole. Membership may change at any time: a batch the index narrowed is queued
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
    /// Per query (by index): rows routed while a member and rows its conjunct passed,
    /// since its density was last judged (`DENSE_AFTER`).
    seen: Vec<(u64, u64)>,
    /// Queries left out of the index for being dense, until `REVISIT` more rows were
    /// routed.
    dense: Vec<bool>,
    /// Rows routed since a query was last left out (0: none left out).
    since: u64,
    /// Narrowed batches the queries are done with, reused (this stream's column types):
    /// a member's batch costs no allocation but its `Arc`. A batch a query took whole as
    /// its result (`Pipeline::pass_through`) comes back holding that result's old buffers.
    spare: Vec<Batch>,
}

/// The most rows a member's queued batch gathers from later ingested batches while the
/// member is behind (`InputQueue::coalesce`): the default `engine.batch_size`, so that a
/// turn of a member costs about what a turn of any query costs.
pub(super) const COALESCE_ROWS: usize = 1024;

/// A member whose indexed conjunct passes at least `1 / DENSE` of a batch's rows reads
/// that batch whole and runs its own filter over it, as if it were not a member: copying
/// most of a batch for each of several queries costs more than each query filtering it in
/// place (8 range queries passing 44-100% of their rows ran at half the speed of 7
/// unshared ones). The index pays off where each tuple matches few of its queries.
pub(super) const DENSE: usize = 4;

/// Whether `matched` of `rows` rows is dense (`DENSE`).
pub(super) fn dense(matched: usize, rows: usize) -> bool {
    matched * DENSE >= rows
}

/// A member is judged dense or not once this many rows were routed for it: a member
/// found dense leaves the index (routing it costs a row id per passing row too) ...
const DENSE_AFTER: u64 = 1 << 16;
/// ... and every query left out is let back in once this many more rows were routed, to
/// be judged afresh (the data may have changed).
const REVISIT: u64 = 1 << 24;

/// Spare batches kept per stream at most.
const SPARE: usize = 4096;

impl Default for StreamShare {
    fn default() -> StreamShare {
        StreamShare {
            index: SharedIndex::default(),
            dirty: true,
            share_min: DEFAULT_SHARE_MIN,
            seen: Vec::new(),
            dense: Vec::new(),
            since: 0,
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

    /// Evaluates the members' indexed conjuncts over `batch`, and judges each member's
    /// density every `DENSE_AFTER` rows (a dense member leaves the index at the next
    /// ingest's rebuild; `REVISIT` rows later every query left out is let back in).
    pub(super) fn route(&mut self, batch: &Batch) {
        if self.since > 0 {
            self.since += batch.len() as u64;
            if self.since >= REVISIT {
                self.since = 0;
                self.dense.clear();
                self.dirty = true;
            }
        }
        if self.index.is_empty() {
            return;
        }
        self.index.route(batch);
        let n = batch.len() as u64;
        for &q in self.index.members() {
            let matched = self.index.rows_of(q).map_or(0, <[u32]>::len) as u64;
            if self.seen.len() <= q {
                self.seen.resize(q + 1, (0, 0));
            }
            let s = &mut self.seen[q];
            *s = (s.0 + n, s.1 + matched);
            if s.0 >= DENSE_AFTER {
                if dense(s.1 as usize, s.0 as usize) {
                    if self.dense.len() <= q {
                        self.dense.resize(q + 1, false);
                    }
                    self.dense[q] = true;
                    self.dirty = true;
                    self.since = self.since.max(1);
                }
                *s = (0, 0);
            }
        }
    }

    /// Whether query `q` was left out of the index for being dense.
    fn is_dense(&self, q: usize) -> bool {
        self.dense.get(q).copied().unwrap_or(false)
    }

    /// The rows of the last routed batch that query `q`'s indexed conjunct passes
    /// (ascending), if `q` is a member.
    pub(super) fn rows_of(&self, q: usize) -> Option<&[u32]> {
        self.index.rows_of(q)
    }

    /// Rows of the last routed `batch` left for query `q`, and how many the index filtered
    /// out (counted as processed by the caller). A dense match (`dense`) for a query whose
    /// drop point keeps every row is the batch whole, not prefiltered: the query filters
    /// it in place rather than read a copy of most of it. While its drop point sheds, its
    /// rows are copied as any member's are, so that drops are drawn among matching rows
    /// only.
    pub(super) fn narrow(
        &mut self,
        q: usize,
        batch: &Batch,
        time: Option<&Arc<RoutedTime>>,
        types: &[DataType],
        keeps_every_row: bool,
    ) -> (Narrowed, u64) {
        let Some(rows) = self.index.rows_of(q) else {
            return (Narrowed::Whole { prefiltered: false }, 0);
        };
        let skipped = (batch.len() - rows.len()) as u64;
        if rows.is_empty() {
            (Narrowed::Nothing, skipped)
        } else if rows.len() == batch.len() {
            (Narrowed::Whole { prefiltered: true }, 0)
        } else if keeps_every_row && dense(rows.len(), batch.len()) {
            (Narrowed::Whole { prefiltered: false }, 0)
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
            if q.removed
                || q.pipeline.is_windowed()
                || q.processed_values.is_some()
                || s.shared.is_dense(qi)
            {
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
        share.seen.clear();
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
