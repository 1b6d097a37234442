//! The engine: streams fan out into per-query input queues; a scheduler picks which query
//! runs the next batch; results wait in per-query buffers until the driver emits them with
//! an emission time. The engine is stepped by a driver and never reads a clock.
//!
//! Driver protocol: `ingest` arriving batches, `run_turn(now)` while `has_work()`, `tick(now)`
//! every engine tick, `emit(now, ..)` to hand results to sinks (this is when latency is
//! recorded), and at the end `flush(now)` then `emit`.

use std::sync::Arc;

mod access;

use super::batch::Batch;
use super::drop::{DropPoint, DropReason};
pub use super::ingest::{DropRules, ValueObserver};
use super::ingest::{add, diff, loss_kind, mix, observe, share_left};
use super::operators::{LossKind, Output, Pipeline, ResultApprox};
use super::plan::QueryPlan;
use super::queue::{Admit, InputQueue, Queued};
use super::scheduler::{QueueView, Scheduler, SchedulerKind};
use super::schema::{DataType, Nanos, Schema};
use super::stats::{EngineSnapshot, QuerySnapshot, QueryStats, StreamSnapshot};

/// A stream the engine accepts input for.
#[derive(Clone, Debug)]
pub struct StreamDef {
    pub name: String,
    pub schema: Schema,
}

/// A registered continuous query.
#[derive(Clone, Debug)]
pub struct QueryDef {
    pub name: String,
    pub plan: QueryPlan,
    pub latency_target: Option<Nanos>,
    pub weight: f64,
    /// Zero loss tolerance: its input queue is unbounded (never queue-full) and the
    /// shedder never drops its input.
    pub lossless: bool,
}

#[derive(Clone, Copy, Debug)]
pub struct EngineConfig {
    pub queue_capacity: usize,
    pub scheduler: SchedulerKind,
    /// Seeds the drop points' random generators.
    pub seed: u64,
}

impl Default for EngineConfig {
    fn default() -> EngineConfig {
        EngineConfig {
            queue_capacity: 1_000_000,
            scheduler: SchedulerKind::RoundRobin,
            seed: 0,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EngineError {
    #[error("query `{query}` reads unknown stream `{stream}`")]
    UnknownStream { query: String, stream: String },
}

#[derive(Debug)]
struct StreamState {
    def: StreamDef,
    /// `def.schema.types()`, kept so ingest does not rebuild it per batch.
    types: Vec<DataType>,
    readers: Vec<usize>,
    ingested: u64,
    drop: DropPoint,
    observers: Vec<ValueObserver>,
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
    names: Vec<Vec<String>>,
    sel: Vec<u32>,
    /// Rows the stream's drop point kept of the batch being ingested.
    stream_sel: Vec<u32>,
    /// Engine-thread time spent outside query turns (ingest, hand-off), ns.
    overhead: u64,
}

impl Engine {
    pub fn new(
        streams: Vec<StreamDef>,
        queries: Vec<QueryDef>,
        config: EngineConfig,
    ) -> Result<Engine, EngineError> {
        let mut ss: Vec<StreamState> = streams
            .into_iter()
            .enumerate()
            .map(|(i, def)| StreamState {
                types: def.schema.types(),
                def,
                readers: Vec::new(),
                ingested: 0,
                drop: DropPoint::new(mix(config.seed, 1 + 2 * i as u64)),
                observers: Vec::new(),
            })
            .collect();
        let mut qs = Vec::with_capacity(queries.len());
        for (qi, def) in queries.into_iter().enumerate() {
            let si = ss
                .iter()
                .position(|s| s.def.name.eq_ignore_ascii_case(&def.plan.stream))
                .ok_or_else(|| EngineError::UnknownStream {
                    query: def.name.clone(),
                    stream: def.plan.stream.clone(),
                })?;
            ss[si].readers.push(qi);
            let pipeline = Pipeline::new(&def.plan, &ss[si].def.schema.types());
            qs.push(QueryState {
                out: pipeline.new_output(),
                pipeline,
                stream: si,
                queue: InputQueue::new(if def.lossless {
                    usize::MAX
                } else {
                    config.queue_capacity
                }),
                drop: DropPoint::new(mix(config.seed, 2 + 2 * qi as u64)),
                stats: QueryStats::default(),
                def,
            });
        }
        let names = qs
            .iter()
            .map(|q| {
                q.def
                    .plan
                    .output
                    .fields
                    .iter()
                    .map(|f| f.name.clone())
                    .collect()
            })
            .collect();
        Ok(Engine {
            streams: ss,
            queries: qs,
            scheduler: Scheduler::new(config.scheduler),
            views: Vec::new(),
            names,
            sel: Vec::new(),
            stream_sel: Vec::new(),
            overhead: 0,
        })
    }

    /// Offers a batch of `stream` to every query that reads it: value observers count it,
    /// the stream's drop point and then each query's drop point decide what is kept, and
    /// the rest is queued (or rejected as queue-full). Batches are shared, not copied,
    /// unless a drop point keeps only part of one.
    pub fn ingest(&mut self, stream: usize, batch: Batch) {
        debug_assert!(batch.is_consistent());
        let n = batch.len() as u64;
        if n == 0 {
            return;
        }
        let s = &mut self.streams[stream];
        s.ingested += n;
        for o in &mut s.observers {
            observe(o, &batch);
        }
        let before = s.drop.dropped;
        // The batch as offered, kept while any reader must learn which rows it lost.
        let mut offered: Option<Batch> = None;
        let batch = match s.drop.apply(&batch, &mut self.sel) {
            None => Arc::new(batch),
            Some(()) => {
                let mut kept = Batch::new(&s.types, self.sel.len());
                kept.gather_from(&batch, &self.sel);
                std::mem::swap(&mut self.stream_sel, &mut self.sel);
                offered = Some(batch);
                Arc::new(kept)
            }
        };
        let stream_keep = s.drop.random_keep();
        let stream_shed = diff(&s.drop.dropped, &before);
        let stream_loss = loss_kind(&stream_shed, stream_keep);
        let types = &s.types;
        for &qi in &s.readers {
            let q = &mut self.queries[qi];
            q.stats.offered += n;
            add(&mut q.stats.dropped, &stream_shed);
            if let (Some(o), Some(kind)) = (&offered, stream_loss) {
                q.pipeline.note_lost(o, &self.stream_sel, kind);
            }
            if batch.is_empty() {
                continue;
            }
            let before = q.drop.dropped;
            let kept = match q.drop.apply(&batch, &mut self.sel) {
                None => batch.clone(),
                Some(()) => {
                    let mut kept = Batch::new(types, self.sel.len());
                    kept.gather_from(&batch, &self.sel);
                    Arc::new(kept)
                }
            };
            let query_shed = diff(&q.drop.dropped, &before);
            if kept.len() < batch.len()
                && let Some(kind) = loss_kind(&query_shed, q.drop.random_keep())
            {
                q.pipeline.note_lost(&batch, &self.sel, kind);
            }
            let item = Queued {
                batch: kept,
                keep: stream_keep * q.drop.random_keep(),
                // Each point's semantic share of what reached its value test (window
                // decisions come first there), multiplied along the way.
                value_keep: share_left(n, &stream_shed)
                    * share_left(batch.len() as u64, &query_shed),
            };
            add(&mut q.stats.dropped, &query_shed);
            let len = item.batch.len() as u64;
            if len > 0 {
                let windowed = q.pipeline.is_windowed().then(|| item.batch.clone());
                if q.queue.push(item) == Admit::Full {
                    q.stats.dropped[DropReason::QueueFull.index()] += len;
                    if let Some(b) = windowed {
                        q.pipeline.note_lost(&b, &[], LossKind::Unscaled);
                    }
                }
            }
        }
    }

    /// Installs the shedder's decision; it applies from the next `ingest` on.
    pub fn install(&mut self, rules: &DropRules) {
        for (s, r) in self.streams.iter_mut().zip(&rules.streams) {
            s.drop.install(r.clone());
        }
        for (q, r) in self.queries.iter_mut().zip(&rules.queries) {
            q.drop.install(r.clone());
            if let Some(c) = rules.queue_capacity
                && !q.def.lossless
            {
                q.queue.set_capacity(c);
            }
        }
    }

    /// Whether any query has queued input.
    pub fn has_work(&self) -> bool {
        self.queries.iter().any(|q| !q.queue.is_empty())
    }

    /// Runs one batch of the query the scheduler picks.
    pub fn run_turn(&mut self, now: Nanos) -> Option<Turn> {
        self.views.clear();
        self.views.extend(self.queries.iter().map(|q| QueueView {
            depth: q.queue.depth(),
            oldest_arrival: q.queue.oldest_arrival(),
            latency_target: q.def.latency_target,
            weight: q.def.weight,
        }));
        let qi = self.scheduler.pick(&self.views, now)?;
        let q = &mut self.queries[qi];
        let item = q.queue.pop()?;
        q.pipeline
            .process(&item.batch, item.keep, item.value_keep, &mut q.out);
        q.stats.processed += item.batch.len() as u64;
        Some(Turn {
            query: qi,
            tuples: item.batch.len(),
        })
    }

    /// Closes arrival-time windows that have ended by `now`;
    /// `frontier` is the driver's promise that every tuple arriving before it has been
    /// ingested (sources may stamp tuples before the engine sees them).
    pub fn tick(&mut self, now: Nanos, frontier: Nanos) {
        let now = now.min(frontier);
        for q in &mut self.queries {
            if q.pipeline.is_windowed() {
                let bound = q.queue.oldest_arrival().map_or(now, |a| a.min(now));
                q.pipeline.on_tick(bound, &mut q.out);
            }
        }
    }

    /// Emits every open window: call at end of input, after the queues are drained.
    pub fn flush(&mut self, now: Nanos) {
        for q in &mut self.queries {
            q.pipeline.flush(now, &mut q.out);
        }
    }

    /// Hands every pending result to `sink` as emitted at `now`, recording its latency.
    pub fn emit(&mut self, now: Nanos, mut sink: impl FnMut(&Emitted<'_>)) {
        for (index, (q, names)) in self.queries.iter_mut().zip(&self.names).enumerate() {
            if q.out.is_empty() {
                continue;
            }
            for &a in &q.out.rows.arrival {
                q.stats.record_latency(now - a);
            }
            q.stats.results += q.out.len() as u64;
            q.out.approx.pad(q.out.len());
            sink(&Emitted {
                index,
                query: &q.def.name,
                names,
                types: q.pipeline.output_types(),
                batch: &q.out.rows,
                approx: (!q.out.approx.is_exact()).then_some(&q.out.approx),
                emitted_at: now,
            });
            q.out.clear();
        }
    }

    /// Counters and latency percentiles of every stream and query. With
    /// `reset_interval`, the interval histograms start afresh.
    pub fn snapshot(&mut self, reset_interval: bool) -> EngineSnapshot {
        let queries = self
            .queries
            .iter_mut()
            .map(|q| {
                let h = &q.stats.latency;
                let hi = &q.stats.latency_interval;
                let snap = QuerySnapshot {
                    name: q.def.name.clone(),
                    stream: q.def.plan.stream.clone(),
                    offered: q.stats.offered,
                    dropped: q.stats.dropped,
                    busy: q.stats.busy,
                    processed: q.stats.processed,
                    queued: q.queue.depth() as u64,
                    late: q.pipeline.late(),
                    windows_lost: q.pipeline.windows_lost(),
                    results: q.stats.results,
                    p50_interval: hi.quantile(0.5) as Nanos,
                    p99_interval: hi.quantile(0.99) as Nanos,
                    p50: h.quantile(0.5) as Nanos,
                    p99: h.quantile(0.99) as Nanos,
                    max: h.max() as Nanos,
                };
                if reset_interval {
                    q.stats.latency_interval.reset();
                }
                snap
            })
            .collect();
        EngineSnapshot {
            streams: self
                .streams
                .iter()
                .map(|s| StreamSnapshot {
                    name: s.def.name.clone(),
                    ingested: s.ingested,
                    dropped: s.drop.dropped,
                })
                .collect(),
            queries,
            overhead: self.overhead,
        }
    }
}
