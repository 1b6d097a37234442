//! The engine: streams fan out into per-query input queues; a scheduler picks which query
//! runs the next batch; results wait in per-query buffers until the driver emits them with
//! an emission time. The engine is stepped by a driver and never reads a clock.
//!
//! Driver protocol: `ingest` arriving batches, `run_turn(now)` while `has_work()`, `tick(now)`
//! every engine tick, `emit(now, ..)` to hand results to sinks (this is when latency is
//! recorded), and at the end `flush(now)` then `emit`.
//!
//! The query set may change between turns (`manage.rs`): indices are stable for the whole
//! run. A removed query keeps its slot as a tombstone with its final, balanced ledger, so
//! every per-query vector (plans, monitor tracks, observers' tables) stays aligned.

use std::sync::Arc;

mod access;
mod defs;
mod fanout;
mod history;
mod manage;
mod output;
mod selected;
mod shard;
mod shared;
mod snapshot;
mod thin;

pub use defs::{DEFAULT_QUEUE_MEMORY, EngineConfig, EngineError, QueryDef, StreamDef};
pub use fanout::PreShed;
pub use history::Replay;
pub use manage::Removal;
pub use shard::shard_column;
pub use shared::DEFAULT_SHARE_MIN;

use super::batch::Batch;
use super::drop::DropPoint;
use super::held::Held;
use super::indexset::IndexSet;
pub use super::ingest::{DropRules, ValueObserver};
use super::ingest::{mix, observe_rows};
use super::operators::{Output, Pipeline, ResultApprox};
use super::queue::{InputQueue, LostTime, Queued};
use super::recycle::BatchRing;
use super::scheduler::{QueueView, Scheduler, SchedulerKind};
use super::schema::{DataType, Nanos};
use super::stats::QueryStats;

#[derive(Debug)]
struct StreamState {
    def: StreamDef,
    /// `def.schema.types()`, kept so ingest does not rebuild it per batch.
    types: Vec<DataType>,
    readers: Vec<usize>,
    ingested: u64,
    drop: DropPoint,
    observers: Vec<ValueObserver>,
    /// Inputs a source could not parse (`DropReason::Malformed`).
    malformed: u64,
    /// Recent history, as ingested (before any drop), if the stream retains it.
    retained: Option<super::retain::Retained>,
    /// A batch of no rows of this schema: what a query that keeps nothing is handed.
    empty: Arc<Batch>,
    /// The predicate index shared by the readers' filters (`shared.rs`).
    shared: shared::StreamShare,
    /// Batches of the rows a partial stream keep kept, reused once their readers are done.
    recycled: BatchRing,
    /// The source waits for room (`set_pulled`): the memory budget never refuses it.
    pulled: bool,
    /// The most heap bytes a row of this pull stream has taken (`Batch::heap_bytes`) so
    /// far, from an estimate of 8 bytes a column: what `stream_room` divides the memory
    /// budget's room by.
    row_bytes: usize,
    /// The least queue bound of its readers (`pull_bound` for an unbounded one), once
    /// worked out (`Engine::stream_room_empty`); `None` after a reader or a bound changed.
    reader_bound: Option<usize>,
}

#[derive(Debug)]
struct QueryState {
    def: QueryDef,
    stream: usize,
    pipeline: Pipeline,
    queue: InputQueue,
    drop: DropPoint,
    /// Results not yet emitted.
    out: Output,
    stats: QueryStats,
    /// Counts the values of one field of every tuple the pipeline processes (what was
    /// delivered, after every drop): the experiment's measure of value utility kept.
    processed_values: Option<ValueObserver>,
    /// Removed from the run: no input, never scheduled, ledger frozen (a tombstone).
    removed: bool,
    /// Times of rows lost while nothing was queued, not yet told to the pipeline (live
    /// runtimes defer them to `Engine::close_lost`, which charges the closing to the
    /// query's busy time); always before every queued item's rows.
    pending: LostTime,
}

impl QueryState {
    /// Whether a turn of this query has something to do: queued input, or the rest of a
    /// window close (`Engine::set_close_step`).
    fn has_work(&self) -> bool {
        !self.queue.is_empty() || self.pipeline.closing_due().is_some()
    }

    /// Runs one queued item through the pipeline into `out`; returns its tuples. A batch
    /// narrowed for this query alone that is its whole result (a filter query whose WHERE
    /// the predicate index evaluated) becomes the result, not a copy of it.
    fn process(&mut self, item: &mut Queued) -> usize {
        let tuples = item.len();
        self.settle_pending();
        let whole = item.prefiltered && item.sel.is_none() && item.time.is_none();
        if whole
            && self.out.is_empty()
            && self.pipeline.passes_through()
            && let Some(batch) = Arc::get_mut(&mut item.batch)
        {
            (self.pipeline).pass_through(batch, item.keep, item.value_keep, &mut self.out);
        } else {
            self.pipeline.next_prefiltered(item.prefiltered);
            self.pipeline.process_selected(
                item.rows(),
                item.keep,
                item.value_keep,
                item.time.as_deref(),
                &mut self.out,
            );
        }
        self.pipeline.advance_lost(&item.advance, &mut self.out);
        tuples
    }

    /// Tells the pipeline the lost times held back (`pending`), closing what they complete.
    fn settle_pending(&mut self) {
        if !self.pending.is_none() {
            let pending = std::mem::take(&mut self.pending);
            self.pipeline.advance_lost(&pending, &mut self.out);
        }
    }
}

/// What one scheduler turn did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turn {
    pub query: usize,
    pub tuples: usize,
}

/// Results of one query handed to a sink.
pub struct Emitted<'a> {
    /// Index of the query in registration order.
    pub index: usize,
    pub query: &'a str,
    pub names: &'a [String],
    pub types: &'a [DataType],
    pub batch: &'a Batch,
    /// How approximate the rows are; `None` when every row is exact.
    pub approx: Option<&'a ResultApprox>,
    pub emitted_at: Nanos,
}

#[derive(Debug)]
pub struct Engine {
    streams: Vec<StreamState>,
    queries: Vec<QueryState>,
    scheduler: Scheduler,
    views: Vec<QueueView>,
    /// Every query with queued input or a close part-emitted (and maybe some with neither
    /// any more, pruned when met): a turn looks at these only, so idle queries cost a turn
    /// nothing.
    queued: IndexSet,
    /// Every query with unemitted results (maybe more): what `emit` visits.
    unemitted: IndexSet,
    /// Every query holding lost times back (`QueryState::pending`): what `close_lost` visits.
    lost_pending: IndexSet,
    /// Lost times that find a query's queue empty wait for `close_lost` (live runtimes,
    /// which time it) instead of closing windows inside `ingest`.
    defer_lost: bool,
    names: Vec<Vec<String>>,
    sel: Vec<u32>,
    /// Rows the stream's drop point kept of the batch being ingested.
    stream_sel: Vec<u32>,
    /// What the input queues hold in memory, against `config.queue_memory`.
    held: Held,
    /// Selection buffers of processed batches, reused for the next partial keeps.
    spare_sels: Vec<Vec<u32>>,
    /// Engine-thread time spent outside query turns (ingest, hand-off), ns.
    overhead: u64,
    /// Engine-thread time spent waiting for input (live runs), ns.
    idle: u64,
    /// Every ns recorded so far as a query's busy time, overhead or idle time: what a
    /// driver's loop did not account for is the difference to its elapsed time.
    accounted: u64,
    /// Queue depth (tuples) past which `stream_room` tells pull sources to wait.
    pull_bound: usize,
    /// How the engine was configured, for queries added later.
    config: EngineConfig,
    /// The queue capacity the shedder last installed, for queries added later.
    installed_capacity: Option<usize>,
    /// Rows a window close emits in one turn at most (`set_close_step`).
    close_step: usize,
}

impl Engine {
    pub fn new(
        streams: Vec<StreamDef>,
        queries: Vec<QueryDef>,
        config: EngineConfig,
    ) -> Result<Engine, EngineError> {
        let ss: Vec<StreamState> = streams
            .into_iter()
            .enumerate()
            .map(|(i, def)| StreamState {
                types: def.schema.types(),
                empty: Arc::new(Batch::new(&def.schema.types(), 0)),
                row_bytes: 8 * (def.schema.types().len() + 1),
                reader_bound: None,
                def,
                readers: Vec::new(),
                ingested: 0,
                drop: DropPoint::new(mix(config.seed, 1 + 2 * i as u64)),
                observers: Vec::new(),
                malformed: 0,
                retained: None,
                shared: shared::StreamShare::default(),
                recycled: BatchRing::new(),
                pulled: false,
            })
            .collect();
        let mut engine = Engine {
            streams: ss,
            queries: Vec::with_capacity(queries.len()),
            scheduler: Scheduler::new(config.scheduler),
            views: Vec::new(),
            queued: IndexSet::new(),
            unemitted: IndexSet::new(),
            lost_pending: IndexSet::new(),
            defer_lost: false,
            names: Vec::new(),
            sel: Vec::new(),
            stream_sel: Vec::new(),
            spare_sels: Vec::new(),
            held: Held::new(config.queue_memory),
            overhead: 0,
            idle: 0,
            accounted: 0,
            pull_bound: config.queue_capacity.max(1),
            config,
            installed_capacity: None,
            close_step: usize::MAX,
        };
        for def in queries {
            engine.push_query(def)?;
        }
        Ok(engine)
    }

    /// Appends `def` as the next query (reading its stream from the next `ingest` on).
    fn push_query(&mut self, def: QueryDef) -> Result<usize, EngineError> {
        let qi = self.queries.len();
        let si = self
            .streams
            .iter()
            .position(|s| s.def.name.eq_ignore_ascii_case(&def.plan.stream))
            .ok_or_else(|| EngineError::UnknownStream {
                query: def.name.clone(),
                stream: def.plan.stream.clone(),
            })?;
        self.streams[si].readers.push(qi);
        self.streams[si].shared.invalidate();
        self.streams[si].reader_bound = None;
        let mut pipeline = Pipeline::new(&def.plan, &self.streams[si].types);
        pipeline.set_close_step(self.close_step);
        let capacity = match self.installed_capacity {
            _ if def.lossless => usize::MAX,
            Some(c) => c,
            None => self.config.queue_capacity,
        };
        self.names.push(
            def.plan
                .output
                .fields
                .iter()
                .map(|f| f.name.clone())
                .collect(),
        );
        self.queries.push(QueryState {
            out: pipeline.new_output(),
            pipeline,
            stream: si,
            queue: InputQueue::new(capacity),
            drop: DropPoint::new(mix(self.config.seed, 2 + 2 * qi as u64)),
            stats: QueryStats::default(),
            processed_values: None,
            removed: false,
            pending: LostTime::default(),
            def,
        });
        Ok(qi)
    }

    /// Installs the shedder's decision; it applies from the next `ingest` on.
    pub fn install(&mut self, rules: &DropRules) {
        if rules.queue_capacity.is_some() {
            self.installed_capacity = rules.queue_capacity;
            self.streams.iter_mut().for_each(|s| s.reader_bound = None);
        }
        for (s, r) in self.streams.iter_mut().zip(&rules.streams) {
            s.drop.install(r.clone());
        }
        for (q, r) in self.queries.iter_mut().zip(&rules.queries) {
            q.drop.install(r.clone());
            if let Some(c) = rules.queue_capacity
                && !q.def.lossless
                && !q.removed
            {
                q.queue.set_capacity(c);
            }
        }
    }

    /// Runs one batch of the query the scheduler picks, or one close step of a query
    /// emitting a closed window (`set_close_step`). Only queries that may have work are
    /// looked at (round-robin: one ordered-set lookup).
    pub fn run_turn(&mut self, now: Nanos) -> Option<Turn> {
        let queries = &self.queries;
        let qi = if self.scheduler.kind() == SchedulerKind::RoundRobin {
            self.scheduler
                .pick_round_robin(&mut self.queued, queries.len(), |q| queries[q].has_work())?
        } else {
            self.queued.retain(|q| queries[q].has_work());
            self.views.clear();
            self.views.extend(self.queued.iter().map(|qi| {
                let q = &queries[qi];
                let closing = q.pipeline.closing_due();
                let oldest = match (q.queue.oldest_arrival(), closing) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                QueueView {
                    index: qi,
                    depth: q.queue.depth().max(closing.is_some() as usize),
                    oldest_arrival: oldest,
                    latency_target: q.def.latency_target,
                    weight: q.def.weight,
                }
            }));
            self.scheduler.pick(&self.views, queries.len(), now)?
        };
        let q = &mut self.queries[qi];
        if q.pipeline.closing_due().is_some() {
            // The rest of a close comes before the query's next batch (whose rows are of
            // later windows).
            q.pipeline.resume_close(&mut q.out);
            self.note_work(qi);
            return Some(Turn {
                query: qi,
                tuples: 0,
            });
        }
        let q = &mut self.queries[qi];
        let mut item = q.queue.pop(&mut self.held)?;
        if let Some(o) = &mut q.processed_values {
            observe_rows(o, item.rows());
        }
        let tuples = q.process(&mut item);
        q.stats.processed += tuples as u64;
        let stream = q.stream;
        self.note_work(qi);
        if let Some(sel) = item.sel.take()
            && self.spare_sels.len() < SPARE_SELS
        {
            self.spare_sels.push(sel);
        }
        if item.prefiltered {
            self.streams[stream].shared.recycle(item.batch);
        }
        Some(Turn { query: qi, tuples })
    }

    /// After query `qi`'s pipeline ran (a turn, a tick, lost times): only a query with
    /// results is visited by `emit` (most of many filters emit nothing in most turns), and
    /// one still emitting a close has work.
    pub(super) fn note_work(&mut self, qi: usize) {
        let q = &self.queries[qi];
        if !q.out.is_empty() {
            self.unemitted.insert(qi);
        }
        if q.pipeline.closing_due().is_some() {
            self.queued.insert(qi);
        }
    }
}

/// Rows a window close emits in one turn of a live run (`Engine::set_close_step`): at a
/// few hundred ns a row to close, finish and write, a few ms, against targets of tens of
/// ms and more; a million-group tumbling close is some sixty turns. (Sliding windows
/// computed by slices close whole: a window at a time, each of its keys once.)
pub const LIVE_CLOSE_STEP: usize = 16_384;

/// Engine time a round-robin round gives each query with work in a live run
/// (`Engine::set_turn_quantum`): about one batch of a costly aggregate, or hundreds of a
/// filter's; small against the tightest targets (tens of ms), so a round of a few
/// queries stays short, and a close step of a few ms waits a few rounds.
pub const LIVE_TURN_QUANTUM: Nanos = 1_000_000;

/// Selection buffers kept for reuse (one per partial keep in flight is plenty).
const SPARE_SELS: usize = 256;
