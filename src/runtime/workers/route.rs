//! Routing by shard, done by the workers themselves: a stream whose every query is
//! sharded on the same key column (and reads the same time) is *routed*. Each batch of it
//! is shared (one `Arc`) with every worker, and each worker's `Router` keeps its own rows,
//! with the stream's event time those rows cannot see (`RoutedTime`: per row, the largest
//! time so far over the whole stream; at the end, the batch's). Nothing splits batches
//! serially before the workers: the first worker to read a batch hashes its key column
//! once for all (`split`), and each worker takes its rows from that (`workers::offer`).
//! Any other stream is offered whole to every worker, each
//! keeping its shards in its pipeline.
//!
//! Invariant: a routed stream's rows are kept by exactly one worker each, in input order,
//! and every row's watermark is the one a single engine would have had at that row.

use std::sync::Arc;

use crate::core::engine::Engine;
use crate::core::plan::{PlanBody, TimeSource};
use crate::core::schema::Nanos;
use crate::core::shard::{RoutedTime, ShardMap};

use super::Placement;
use super::split::{Dispatched, Split, SplitBy};

/// How one stream's batches reach the workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Split by the shard of this key column; windows read `time`.
    Split { column: usize, time: TimeSource },
    /// The whole batch to every worker.
    Broadcast,
}

/// One worker's side of routing: it reads every batch of a routed stream (shared) and
/// picks its own rows of it, with their `RoutedTime`. The
/// batch's split (`split::Split`: each row's owner, the time prefix) is computed once per
/// batch, by whichever worker reads it first; the others read it. One per worker (it
/// carries each stream's largest time so far, which every worker holds identically since
/// each reads every batch).
#[derive(Clone, Debug)]
pub struct Router {
    routes: Vec<Route>,
    /// Per stream: the largest time seen so far and its arrival.
    high: Vec<(i64, Nanos)>,
    /// Per virtual shard: the worker that owns it.
    owner: Vec<u16>,
    /// This worker.
    me: usize,
    /// This worker's rows of the batch at hand (reused: no allocation per batch).
    sel: Vec<u32>,
}

/// The route of each stream of `engine` for `placement` on `workers` workers: split when
/// every query reading the stream is sharded on one column and its windows read one time.
pub fn routes(engine: &Engine, placement: &[Placement], workers: usize) -> Vec<Route> {
    (0..engine.stream_count())
        .map(|s| {
            if workers < 2 {
                return Route::Broadcast;
            }
            let mut route = None;
            for q in (0..engine.query_count()).filter(|&q| engine.query_stream(q) == s) {
                let (Placement::Sharded { column }, PlanBody::Aggregate(a)) =
                    (placement[q], &engine.query_plan(q).body)
                else {
                    return Route::Broadcast;
                };
                let this = Route::Split {
                    column,
                    time: a.time,
                };
                match route {
                    None => route = Some(this),
                    Some(r) if r == this => {}
                    Some(_) => return Route::Broadcast,
                }
            }
            route.unwrap_or(Route::Broadcast)
        })
        .collect()
}

impl Router {
    /// Worker `me`'s router of `engine`'s streams for `placement` on the workers of `map`.
    pub fn new(
        engine: &Engine,
        placement: &[Placement],
        map: &ShardMap,
        workers: usize,
        me: usize,
    ) -> Router {
        let routes = routes(engine, placement, workers);
        Router {
            high: vec![(i64::MIN, 0); routes.len()],
            routes,
            owner: (0..map.shards()).map(|s| map.owner(s) as u16).collect(),
            me,
            sel: Vec::new(),
        }
    }

    pub fn route(&self, stream: usize) -> Route {
        self.routes[stream]
    }

    /// This worker's rows of `batch` of `stream` (ascending; empty when it owns none) and
    /// the stream's time at every row of the batch; `None` for a broadcast stream, which
    /// the worker takes whole. Every batch of a routed stream must pass here, in order,
    /// even when the worker keeps none of its rows: the batch's time still moves the
    /// stream's.
    pub fn select<'a>(
        &'a mut self,
        stream: usize,
        batch: &'a Dispatched,
    ) -> Option<(&'a [u32], &'a Arc<RoutedTime>)> {
        let Route::Split { column, time } = self.routes[stream] else {
            return None;
        };
        let by = SplitBy {
            column,
            time,
            owner: &self.owner,
        };
        let high = self.high[stream];
        let split = batch.split_with(|| Split::compute(&batch.batch, by, high));
        self.high[stream] = split.time().tail;
        split.rows_of(self.me, &mut self.sel);
        Some((&self.sel, split.time()))
    }
}
