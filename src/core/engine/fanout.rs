//! Ingest: a stream batch fans out to the queries that read it. Value observers count it,
//! the stream's drop point and then each query's decide what is kept, shared evaluation
//! narrows it to the rows a query's indexed conjunct passes, and what is left is queued
//! (or refused as queue-full by the tuple bound or the memory budget, `Held`).
//!
//! Invariant: every offered row of every reader is accounted for exactly once, as shed
//! (by reason), processed by shared evaluation, queued or queue-full; windowed readers
//! learn which rows they lost and how (`Pipeline::note_lost_spanned`).

use std::sync::Arc;

use super::{Engine, QueryState, shared};
use crate::core::batch::Batch;
use crate::core::drop::DropReason;
use crate::core::held::Held;
use crate::core::indexset::IndexSet;
use crate::core::ingest::{add, diff, loss_kind, observe, share_left};
use crate::core::operators::{LossKind, Pipeline, TimeSpans};
use crate::core::plan::TimeSource;
use crate::core::queue::{LostTime, Queued};
use crate::core::rows::Rows;
use crate::core::schema::Nanos;
use crate::core::shard::RoutedTime;

impl Engine {
    /// Offers a batch of `stream` to every query that reads it: value observers count it,
    /// the stream's drop point and then each query's drop point decide what is kept, and
    /// the rest is queued (or rejected as queue-full). Batches are shared, not copied,
    /// unless a drop point keeps only part of one.
    pub fn ingest(&mut self, stream: usize, batch: Batch) {
        self.ingest_shared(stream, Arc::new(batch));
    }

    /// `ingest` of a batch that other engines (workers) may share: it is not copied.
    pub fn ingest_shared(&mut self, stream: usize, batch: Arc<Batch>) {
        self.ingest_routed(stream, batch, None);
    }

    /// `ingest_shared` of a worker's rows of a batch split by shard (`time`: the stream's
    /// event time those rows cannot see; `None` for a whole batch).
    pub fn ingest_routed(
        &mut self,
        stream: usize,
        batch: Arc<Batch>,
        time: Option<Arc<RoutedTime>>,
    ) {
        self.ingest_cut(stream, batch, time, None);
    }

    /// `ingest` of a batch whose stream drop its source already decided (`PreShed`, at
    /// the keep the stream's drop point published): the kept rows fan out as the drop
    /// point's would, the rest are counted shed at the stream, and windowed readers learn
    /// which rows they lost from the offered batch's spans without reading it.
    pub fn ingest_pre_shed(&mut self, stream: usize, cut: PreShed) {
        let PreShed {
            offered,
            kept,
            sel,
            keep,
            spans,
        } = cut;
        self.ingest_cut(
            stream,
            Arc::new(offered),
            None,
            Some(Given {
                kept,
                sel,
                keep,
                spans,
            }),
        );
    }

    fn ingest_cut(
        &mut self,
        stream: usize,
        batch: Arc<Batch>,
        time: Option<Arc<RoutedTime>>,
        given: Option<Given>,
    ) {
        debug_assert!(batch.is_consistent());
        let n = batch.len() as u64;
        if n == 0 {
            return;
        }
        self.refresh_shared(stream);
        let s = &mut self.streams[stream];
        s.ingested += n;
        // Only a pull source reads `stream_room`: a push stream pays no extra pass.
        if s.pulled {
            s.row_bytes = s.row_bytes.max(batch.heap_bytes() / batch.len());
        }
        // An observer without bins was retired (`stop_observing`).
        for o in s.observers.iter_mut().filter(|o| !o.counts.is_empty()) {
            observe(o, &batch);
        }
        let before = s.drop.dropped;
        // The batch as offered, kept while any reader must learn which rows it lost.
        let mut offered: Option<Arc<Batch>> = None;
        let mut time = time;
        // Each batch's time range, found once for all its windowed readers' loss accounting.
        let (mut offered_spans, mut shared_spans) = (TimeSpans::new(), TimeSpans::new());
        let (batch, stream_keep) = match given {
            // Cut by the source: its rows and spans stand for the drop point's decision.
            Some(g) => {
                s.drop.dropped[DropReason::ShedRandom.index()] += n - g.sel.len() as u64;
                for (t, lo, hi) in g.spans {
                    offered_spans.seed(t, lo, hi);
                }
                self.stream_sel = g.sel;
                offered = Some(batch);
                (Arc::new(g.kept), g.keep.clamp(0.0, 1.0))
            }
            None => match s.drop.apply(&batch, &mut self.sel) {
                None => (batch, s.drop.random_keep()),
                Some(()) => {
                    let sel = &self.sel;
                    let kept = s
                        .recycled
                        .filled(&s.types, sel.len(), |k| k.gather_from(&batch, sel));
                    std::mem::swap(&mut self.stream_sel, &mut self.sel);
                    offered = Some(batch);
                    time = time.map(|t| Arc::new(t.gather(&self.stream_sel)));
                    (kept, s.drop.random_keep())
                }
            },
        };
        let stream_shed = diff(&s.drop.dropped, &before);
        let stream_loss = loss_kind(&stream_shed, stream_keep);
        s.shared.route(&batch);
        let (types, empty) = (&s.types, &s.empty);
        // The batch as offered to the stream's drop point: the time its lost rows tell.
        let as_offered: &Batch = offered.as_deref().unwrap_or(&batch);
        // The time its lost rows tell, by time column: found once for every reader of
        // that column that kept nothing (a scan of the batch per reader cost the live 7x
        // check up to a tenth of the engine thread once most readers kept nothing).
        let mut told: Option<(usize, Option<(i64, Nanos)>)> = None;
        for &qi in &s.readers {
            let q = &mut self.queries[qi];
            q.stats.offered += n;
            add(&mut q.stats.dropped, &stream_shed);
            if let (Some(o), Some(kind)) = (&offered, stream_loss) {
                q.pipeline
                    .note_lost_spanned(o, &self.stream_sel, kind, &mut offered_spans);
            }
            if batch.is_empty() {
                if q.tell_lost_time(
                    lost_time(q, as_offered, time.as_ref(), &mut told),
                    self.defer_lost,
                ) {
                    set_for(self.defer_lost, &mut self.lost_pending, &mut self.unemitted)
                        .insert(qi);
                }
                continue;
            }
            // Shared evaluation: only the rows the query's indexed conjunct passes go on;
            // the others were evaluated here and count as processed (`shared.rs`).
            // A member that is behind and drops nothing takes them straight into its
            // newest queued batch (`InputQueue::coalesce_rows`): no copy in between.
            if time.is_none()
                && q.drop.keeps_every_row()
                && let Some(rows) = s.shared.rows_of(qi)
                && !rows.is_empty()
                && !shared::dense(rows.len(), batch.len())
                && q.queue.coalesce_rows(
                    &batch,
                    Some(rows),
                    (
                        stream_keep * q.drop.random_keep(),
                        share_left(n, &stream_shed),
                    ),
                    &mut self.held,
                    shared::COALESCE_ROWS,
                    s.pulled,
                )
            {
                q.stats.processed += (batch.len() - rows.len()) as u64;
                continue;
            }
            let (narrowed, skipped) =
                s.shared
                    .narrow(qi, &batch, time.as_ref(), types, q.drop.keeps_every_row());
            q.stats.processed += skipped;
            let prefiltered = !matches!(narrowed, shared::Narrowed::Whole { prefiltered: false });
            let whole = matches!(narrowed, shared::Narrowed::Whole { .. });
            let (batch, time) = match narrowed {
                shared::Narrowed::Whole { .. } => (batch.clone(), time.clone()),
                shared::Narrowed::Nothing => continue,
                shared::Narrowed::Rows(b, t) => (b, t),
            };
            let before = q.drop.dropped;
            let (kept, kept_sel, kept_time) = match q.drop.apply(&batch, &mut self.sel) {
                None => (batch.clone(), None, time.clone()),
                // Nothing kept (keep 0, the usual case of a query shed whole): no copy.
                Some(()) if self.sel.is_empty() => (empty.clone(), None, None),
                Some(()) if self.sel.len() == batch.len() => (batch.clone(), None, time.clone()),
                // Part kept: the shared batch and this query's selection, no copy of rows
                // (the selection's buffer comes back from `run_turn`).
                Some(()) => {
                    let mut sel = self.spare_sels.pop().unwrap_or_default();
                    sel.clear();
                    sel.extend_from_slice(&self.sel);
                    (batch.clone(), Some(sel), time.clone())
                }
            };
            // Windows window-aware shedding abandoned: their operator withholds them.
            q.drop
                .take_abandoned(|start| q.pipeline.withhold_window(start));
            let query_shed = diff(&q.drop.dropped, &before);
            let kept_rows = kept_sel.as_ref().map_or(kept.len(), Vec::len);
            // Rows lost on the way still tell the time. Only when none was kept: the rows
            // a partial keep kept move the watermark to within a batch's span of where the
            // lost ones would, and a pass over every shed batch for every event-time
            // reader cost the live 7x check a tenth of its ingest.
            if kept_rows == 0
                && q.tell_lost_time(
                    lost_time(q, as_offered, time.as_ref(), &mut told),
                    self.defer_lost,
                )
            {
                set_for(self.defer_lost, &mut self.lost_pending, &mut self.unemitted).insert(qi);
            }
            if kept_rows < batch.len()
                && let Some(kind) = loss_kind(&query_shed, q.drop.random_keep())
            {
                let mut own = TimeSpans::new();
                let spans = if whole { &mut shared_spans } else { &mut own };
                q.pipeline.note_lost_spanned(&batch, &self.sel, kind, spans);
            }
            let item = Queued {
                batch: kept,
                sel: kept_sel,
                keep: stream_keep * q.drop.random_keep(),
                // Each point's semantic share of what reached its value test (window
                // decisions come first there), multiplied along the way.
                value_keep: share_left(n, &stream_shed)
                    * share_left(batch.len() as u64, &query_shed),
                time: kept_time,
                prefiltered,
                advance: LostTime::default(),
            };
            add(&mut q.stats.dropped, &query_shed);
            // A member's rows join its newest queued batch when it is behind (`coalesce`).
            if !whole
                && !item.is_empty()
                && q.queue
                    .coalesce(&item, &mut self.held, shared::COALESCE_ROWS, s.pulled)
            {
                if let Some(sel) = item.sel {
                    self.spare_sels.push(sel);
                }
                // The last other reference to the narrowed batch, so that it is reused.
                drop(batch);
                s.shared.recycle(item.batch);
                continue;
            }
            if !item.is_empty() && enqueue(q, item, &mut self.held, s.pulled) {
                self.queued.insert(qi);
            }
        }
        if let Some(r) = &mut self.streams[stream].retained {
            r.push(offered.unwrap_or(batch));
        }
    }
}

/// A stream batch cut by its source: the offered rows, the kept ones (`kept` holds the
/// rows of `offered` that `sel` names, in order), the keep they were drawn with, and the
/// offered batch's time spans (`(source, min, max)`) for loss accounting.
#[derive(Debug)]
pub struct PreShed {
    pub offered: Batch,
    pub kept: Batch,
    pub sel: Vec<u32>,
    pub keep: f64,
    pub spans: Vec<(TimeSource, i64, i64)>,
}

/// `PreShed` less the offered batch, inside the fan-out.
struct Given {
    kept: Batch,
    sel: Vec<u32>,
    keep: f64,
    spans: Vec<(TimeSource, i64, i64)>,
}

/// Queues `item` for `q` (`InputQueue::offer`), or counts its rows as queue-full, lost
/// unscaled; true when it was queued.
pub(super) fn enqueue(q: &mut QueryState, item: Queued, held: &mut Held, paced: bool) -> bool {
    let len = item.len() as u64;
    match q.queue.offer(item, held, paced) {
        Ok(()) => true,
        Err(item) => {
            q.stats.dropped[DropReason::QueueFull.index()] += len;
            if q.pipeline.is_windowed() {
                note_all_lost(&mut q.pipeline, &item);
                let time = match &item.time {
                    Some(t) => q.pipeline.by_event_time().then_some(t.tail),
                    None => q.pipeline.lost_time(Rows::all(&item.batch)),
                };
                // A full queue holds an item: the times go after it, nothing waits.
                for t in item.advance.times().chain(time) {
                    let now = q.tell_lost_time(Some(t), false);
                    debug_assert!(!now, "a refused item leaves a queued one");
                }
            }
            false
        }
    }
}

/// The time rows of `whole` (a batch as offered) that `q` lost still tell
/// (`Pipeline::lost_time`): with `time` (a batch split by shard), its tail.
fn lost_time(
    q: &QueryState,
    whole: &Batch,
    time: Option<&Arc<RoutedTime>>,
    told: &mut Option<(usize, Option<(i64, Nanos)>)>,
) -> Option<(i64, Nanos)> {
    match time {
        Some(t) => q.pipeline.by_event_time().then_some(t.tail),
        None => {
            let column = q.pipeline.event_time_column()?;
            match *told {
                Some((c, found)) if c == column => found,
                _ => {
                    let found = q.pipeline.lost_time(Rows::all(whole));
                    *told = Some((column, found));
                    found
                }
            }
        }
    }
}

/// Where a query that `tell_lost_time` answered true goes: held back for `close_lost`
/// (`defer`), or due for `emit`.
fn set_for<'a>(
    defer: bool,
    pending: &'a mut IndexSet,
    unemitted: &'a mut IndexSet,
) -> &'a mut IndexSet {
    if defer { pending } else { unemitted }
}

impl QueryState {
    /// Tells the pipeline the time of rows it lost (`lost_time`): after the newest queued
    /// item, or with nothing queued at once (or, with `defer`, held in `pending` for
    /// `Engine::close_lost`). True when that may have closed windows (the results wait in
    /// `out`), or with `defer` when a time was held back.
    fn tell_lost_time(&mut self, time: Option<(i64, Nanos)>, defer: bool) -> bool {
        let Some(time) = time else {
            return false;
        };
        let pipeline = &self.pipeline;
        match self
            .queue
            .advance_newest(time, |a, b| pipeline.crosses(a, b))
        {
            None => false,
            Some(time) if defer => {
                let pipeline = &self.pipeline;
                self.pending.push(time, |a, b| pipeline.crosses(a, b));
                true
            }
            Some(time) => {
                self.settle_pending();
                self.pipeline.advance_time(time, &mut self.out);
                !self.out.is_empty() || self.pipeline.closing_due().is_some()
            }
        }
    }
}

/// Tells a windowed pipeline that every row of `item` was lost unscaled (its queue was
/// full): the rows not selected were never the query's, so they are passed as kept.
fn note_all_lost(pipeline: &mut Pipeline, item: &Queued) {
    match &item.sel {
        None => pipeline.note_lost(&item.batch, &[], LossKind::Unscaled),
        Some(sel) => {
            let mut others = Vec::with_capacity(item.batch.len() - sel.len());
            let mut next = sel.iter().peekable();
            for row in 0..item.batch.len() as u32 {
                if next.next_if(|&&s| s == row).is_none() {
                    others.push(row);
                }
            }
            pipeline.note_lost(&item.batch, &others, LossKind::Unscaled);
        }
    }
}
