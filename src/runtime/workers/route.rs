//! Routing by shard, done by the workers themselves: a stream whose every query is
//! sharded on the same key column (and reads the same time) is *routed*. Each batch of it
//! is shared (one `Arc`) with every worker, and each worker's `Router` keeps its own rows,
//! with the stream's event time those rows cannot see (`RoutedTime`: per row, the largest
//! time so far over the whole stream; at the end, the batch's). Nothing splits batches
//! serially before the workers: each hashes the key column and copies only its rows, in
//! parallel with the others. Any other stream is offered whole to every worker, each
//! keeping its shards in its pipeline.
//!
//! Invariant: a routed stream's rows are kept by exactly one worker each, in input order,
//! and every row's watermark is the one a single engine would have had at that row.

use crate::core::batch::{Batch, Column};
use crate::core::engine::Engine;
use crate::core::plan::{PlanBody, TimeSource};
use crate::core::schema::{DataType, Nanos};
use crate::core::shard::{RoutedTime, ShardMap, key_hash_float, key_hash_int, key_hash_str};

use super::Placement;

/// How one stream's batches reach the workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Split by the shard of this key column; windows read `time`.
    Split { column: usize, time: TimeSource },
    /// The whole batch to every worker.
    Broadcast,
}

/// One worker's side of routing: it reads every batch of a routed stream (shared, never
/// copied by anyone else) and keeps its own rows, with their `RoutedTime`. Every worker
/// selects for itself, in parallel: nothing splits batches serially before the workers.
/// One per worker (it carries each stream's largest time so far, which every worker
/// computes identically since each reads every batch).
#[derive(Clone, Debug)]
pub struct Router {
    routes: Vec<Route>,
    types: Vec<Vec<DataType>>,
    /// Per stream: the largest time seen so far and its arrival.
    high: Vec<(i64, Nanos)>,
    /// Per virtual shard: whether this worker owns it.
    owned: Vec<bool>,
    /// This worker's rows of the batch being selected.
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
            types: (0..routes.len())
                .map(|s| engine.stream_schema(s).types())
                .collect(),
            high: vec![(i64::MIN, 0); routes.len()],
            routes,
            owned: (0..map.shards()).map(|s| map.owner(s) == me).collect(),
            sel: Vec::new(),
        }
    }

    pub fn route(&self, stream: usize) -> Route {
        self.routes[stream]
    }

    /// This worker's rows of `batch` of `stream` and their `RoutedTime` (an empty batch
    /// when it owns none of them); `None` for a broadcast stream, which the worker takes
    /// whole. Every batch of a routed stream must pass here, in order, even when the
    /// worker keeps none of its rows: the batch's time still moves the stream's.
    pub fn select(&mut self, stream: usize, batch: &Batch) -> Option<(Batch, RoutedTime)> {
        let Route::Split { column, time } = self.routes[stream] else {
            return None;
        };
        let times: &[i64] = match time {
            TimeSource::Column(c) => match &batch.columns[c] {
                Column::Int(v) => v,
                other => unreachable!("time column {other:?}"),
            },
            TimeSource::Arrival => &batch.arrival,
        };
        let n = batch.len();
        // Written for every row, kept (`j` moves on) for owned ones: no branch on the
        // owner, which is a coin toss the branch predictor cannot learn.
        self.sel.clear();
        self.sel.resize(n, 0);
        let mut prefix = vec![(0, 0); n];
        let mut high = self.high[stream];
        let arrival = &batch.arrival;
        let (sel, owned) = (&mut self.sel[..], &self.owned[..]);
        let kept = match &batch.columns[column] {
            Column::Int(v) => keep_owned(owned, times, arrival, &mut high, sel, &mut prefix, |i| {
                key_hash_int(v[i])
            }),
            Column::Float(v) => {
                keep_owned(owned, times, arrival, &mut high, sel, &mut prefix, |i| {
                    key_hash_float(v[i])
                })
            }
            Column::Bool(v) => {
                keep_owned(owned, times, arrival, &mut high, sel, &mut prefix, |i| {
                    key_hash_int(i64::from(v[i]))
                })
            }
            Column::Str(v) => keep_owned(owned, times, arrival, &mut high, sel, &mut prefix, |i| {
                key_hash_str(&v[i])
            }),
        };
        self.high[stream] = high;
        self.sel.truncate(kept);
        prefix.truncate(kept);
        let mut b = Batch::new(&self.types[stream], kept);
        b.gather_from(batch, &self.sel);
        Some((b, RoutedTime { prefix, tail: high }))
    }
}

/// Writes every row's index and its time prefix at `sel[j]`, `prefix[j]`, moving `j` on
/// only for rows whose key's hash (`hash(row)`) falls in an owned shard; returns how many
/// were kept.
fn keep_owned(
    owned: &[bool],
    times: &[i64],
    arrival: &[Nanos],
    high: &mut (i64, Nanos),
    sel: &mut [u32],
    prefix: &mut [(i64, Nanos)],
    hash: impl Fn(usize) -> u64,
) -> usize {
    let mask = (owned.len() - 1) as u64;
    let mut j = 0;
    let mut h = *high;
    for (i, (&t, &a)) in times.iter().zip(arrival).enumerate() {
        if t > h.0 {
            h = (t, a);
        }
        sel[j] = i as u32;
        prefix[j] = h;
        j += usize::from(owned[(hash(i) & mask) as usize]);
    }
    *high = h;
    j
}
