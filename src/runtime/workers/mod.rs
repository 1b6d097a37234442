//! N engine workers over key shards (`docs/workers.md`). Every worker owns a whole
//! `Engine` over every query. A stream whose queries all share one key column is routed by
//! shard (`route`): the run's one `Router` splits each batch once into a part per worker,
//! with the stream's event time in band. Any other stream is offered whole to every worker (the batch is
//! shared, never copied), and a keyed query keeps only its worker's key shards in its
//! pipeline, as a second filter, so its watermark still moves over every row in order.
//! Either way each group lives on exactly one worker. A query without a plain-column key
//! runs whole on one owner worker (a tombstone elsewhere), which keeps its rows and their
//! order exactly as with one worker.
//!
//! Drivers: `live` (a coordinator thread and N `worker` threads; `collect` merges what
//! they send back) and `sim` (N workers on virtual time). Both publish one merged QoS view
//! per tick (`publish`, from `report` and `merge`) and apply changes of the query set to
//! every worker through one table (`changes`); the live coordinator also serves the
//! control API (`inbox`).
//!
//! Invariant: for every query, the union of the workers' result rows is the one-worker
//! result, and each worker's ledger balances on its own.

pub mod changes;
#[cfg(feature = "shell")]
mod collect;
#[cfg(feature = "shell")]
mod inbox;
#[cfg(feature = "shell")]
pub mod live;
pub mod merge;
pub mod publish;
pub mod report;
pub mod route;
pub mod sim;
#[cfg(feature = "shell")]
mod worker;

use std::sync::Arc;

use crate::core::batch::Batch;
use crate::core::engine::{Engine, shard_column};
use crate::core::shard::ShardMap;
use route::{Part, Route, Router};

/// Where one query runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// On every worker, each keeping the rows of its shards of this input column.
    Sharded { column: usize },
    /// Whole on one worker.
    Owner(usize),
}

/// The workers' engines and where each query runs.
#[derive(Debug)]
pub struct Sharded {
    pub engines: Vec<Engine>,
    pub map: ShardMap,
    pub placement: Vec<Placement>,
    /// The run's router: it splits each batch of a stream routed by shard (`route`).
    pub router: Router,
}

/// Places the queries of `engine` (already built) for `workers` workers: a query with a
/// plain-column GROUP BY key is sharded, any other one is owned by worker `q % workers`.
pub fn placement(engine: &Engine, workers: usize) -> Vec<Placement> {
    (0..engine.query_count())
        .map(|q| match shard_column(&engine.query_plan(q).body) {
            Some(column) if workers > 1 => Placement::Sharded { column },
            _ => Placement::Owner(q % workers),
        })
        .collect()
}

impl Sharded {
    /// `workers` engines made by `build` (each the same query set), over `shards` virtual
    /// shards (a power of two, at least `workers`).
    pub fn new<E>(
        workers: usize,
        shards: usize,
        mut build: impl FnMut() -> Result<Engine, E>,
    ) -> Result<Sharded, E> {
        let workers = workers.max(1);
        let map = ShardMap::new(shards, workers);
        let mut engines = Vec::with_capacity(workers);
        let mut placed = Vec::new();
        let mut router = None;
        for w in 0..workers {
            let mut e = build()?;
            placed = placement(&e, workers);
            let r = router.get_or_insert_with(|| Router::new(&e, &placed, &map, workers));
            for (q, p) in placed.iter().enumerate() {
                let routed = r.route(e.query_stream(q)) != Route::Broadcast;
                match *p {
                    // A routed stream's rows are selected by the router: nothing to filter.
                    Placement::Sharded { .. } if routed => {}
                    Placement::Sharded { column } => e.set_shard(q, map.filter(column, w)),
                    Placement::Owner(o) if o != w => {
                        // Before any input: an empty, balanced tombstone.
                        e.remove_query(q, false, 0, |_| {})
                            .expect("a fresh query can be removed");
                    }
                    Placement::Owner(_) => {}
                }
            }
            engines.push(e);
        }
        if workers > 1 {
            // One queue-memory budget for all: a hot worker may use what cold ones leave.
            let total = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            for e in &mut engines {
                e.share_queue_memory(Arc::clone(&total));
            }
        }
        Ok(Sharded {
            engines,
            map,
            placement: placed,
            router: router.expect("at least one worker"),
        })
    }

    pub fn workers(&self) -> usize {
        self.engines.len()
    }

    /// Offers `batch` of `stream` to the workers: each its part of a routed stream, or
    /// every worker the whole batch (shared) of any other.
    pub fn ingest(&mut self, stream: usize, batch: Batch) {
        match self.router.split(stream, &batch) {
            Some(parts) => {
                for (e, part) in self.engines.iter_mut().zip(parts) {
                    ingest_part(e, stream, part);
                }
            }
            None => {
                let batch = Arc::new(batch);
                for e in &mut self.engines {
                    e.ingest_shared(stream, Arc::clone(&batch));
                }
            }
        }
    }

    /// Whether worker `w` runs query `q` (a tombstone elsewhere).
    pub fn runs(&self, w: usize, q: usize) -> bool {
        match self.placement[q] {
            Placement::Sharded { .. } => true,
            Placement::Owner(o) => o == w,
        }
    }
}

/// Ingests one worker's `part` of a batch of the routed `stream` (nothing when it is empty:
/// the router carries the batch's time to the worker's next part).
pub fn ingest_part(engine: &mut Engine, stream: usize, part: Part) {
    if !part.batch.is_empty() {
        engine.ingest_routed(stream, Arc::new(part.batch), Some(Arc::new(part.time)));
    }
}
