//! Routing before the workers: a stream whose every query is sharded on the same key
//! column (and reads the same time) is split by shard once, and each worker gets only its
//! rows, with the stream's event time those rows cannot see (`RoutedTime`: per row, the
//! largest time so far over the whole stream; at the end, the batch's). Any other stream
//! is offered whole to every worker, each keeping its shards in its pipeline.
//!
//! Invariant: a routed stream's rows reach exactly one worker each, in input order, and
//! every row's watermark is the one a single engine would have had at that row.

use crate::core::batch::{Batch, Column};
use crate::core::engine::Engine;
use crate::core::plan::{PlanBody, TimeSource};
use crate::core::schema::{DataType, Nanos};
use crate::core::shard::{RoutedTime, ShardMap, shards_of};

use super::Placement;

/// How one stream's batches reach the workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Split by the shard of this key column; windows read `time`.
    Split { column: usize, time: TimeSource },
    /// The whole batch to every worker.
    Broadcast,
}

/// Splits the batches of routed streams by shard (one per driver: it carries each
/// stream's largest time so far).
#[derive(Clone, Debug)]
pub struct Router {
    routes: Vec<Route>,
    types: Vec<Vec<DataType>>,
    /// Per stream: the largest time routed so far and its arrival.
    high: Vec<(i64, Nanos)>,
    /// Per virtual shard: its worker.
    owner: Vec<u32>,
    workers: usize,
    shards: Vec<u32>,
    sel: Vec<Vec<u32>>,
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
    /// The router of `engine`'s streams for `placement` on the workers of `map`.
    pub fn new(engine: &Engine, placement: &[Placement], map: &ShardMap, workers: usize) -> Router {
        let routes = routes(engine, placement, workers);
        Router {
            types: (0..routes.len())
                .map(|s| engine.stream_schema(s).types())
                .collect(),
            high: vec![(i64::MIN, 0); routes.len()],
            routes,
            owner: (0..map.shards()).map(|s| map.owner(s) as u32).collect(),
            workers,
            shards: Vec::new(),
            sel: vec![Vec::new(); workers],
        }
    }

    pub fn route(&self, stream: usize) -> Route {
        self.routes[stream]
    }

    /// Worker `w`'s rows of `batch` of `stream` and their `RoutedTime`, for every worker
    /// in order (an empty batch where a worker has no row); `None` for a broadcast stream.
    pub fn split(&mut self, stream: usize, batch: &Batch) -> Option<Vec<(Batch, RoutedTime)>> {
        let Route::Split { column, time } = self.routes[stream] else {
            return None;
        };
        shards_of(batch, column, self.owner.len(), &mut self.shards);
        let times: &[i64] = match time {
            TimeSource::Column(c) => match &batch.columns[c] {
                Column::Int(v) => v,
                other => unreachable!("time column {other:?}"),
            },
            TimeSource::Arrival => &batch.arrival,
        };
        let mut prefix: Vec<Vec<(i64, Nanos)>> = (self.sel.iter())
            .map(|_| Vec::with_capacity(batch.len() / self.workers + 1))
            .collect();
        self.sel.iter_mut().for_each(Vec::clear);
        let mut high = self.high[stream];
        for (row, (&shard, &t)) in self.shards.iter().zip(times).enumerate() {
            if t > high.0 {
                high = (t, batch.arrival[row]);
            }
            let w = self.owner[shard as usize] as usize;
            self.sel[w].push(row as u32);
            prefix[w].push(high);
        }
        self.high[stream] = high;
        let types = &self.types[stream];
        Some(
            (self.sel.iter().zip(prefix))
                .map(|(sel, prefix)| {
                    let mut b = Batch::new(types, sel.len());
                    b.gather_from(batch, sel);
                    (b, RoutedTime { prefix, tail: high })
                })
                .collect(),
        )
    }
}
