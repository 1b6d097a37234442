//! Routing by shard, done once per batch: a stream whose every query is sharded on the
//! same key column (and reads the same time) is *routed*. The one `Router` of a run (on
//! the coordinator live, in `Sharded::ingest` simulated) splits each batch of it into one
//! `Part` per worker: that worker's rows, in input order, with the stream's event time
//! those rows cannot see (`RoutedTime`: per row, the largest time so far over the whole
//! stream; at the end, the batch's). Each row is hashed and copied once, whatever the
//! number of workers; the workers only ingest their parts. Live, the coordinator joins a
//! worker's parts of the batches its sources have ready into parts of a batch's size
//! (`Coalesce`), so a worker pays per-batch work once per batch, not N times as often. Any
//! other stream is offered whole to every worker, each keeping its shards in its pipeline.
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

/// One worker's rows of a routed batch and the stream time they cannot see.
#[derive(Debug)]
pub struct Part {
    pub batch: Batch,
    pub time: RoutedTime,
}

/// The run's routing table and splitter: each stream's `Route`, and for routed streams the
/// largest time seen so far (carried from batch to batch, so a worker that owned none of a
/// batch's rows still sees that batch's time with its next row). Every batch of a routed
/// stream must be split here, in order.
#[derive(Clone, Debug)]
pub struct Router {
    routes: Vec<Route>,
    types: Vec<Vec<DataType>>,
    /// Per stream: the largest time seen so far and its arrival.
    high: Vec<(i64, Nanos)>,
    /// Per virtual shard: the worker that owns it.
    owner: Vec<u16>,
    /// Scratch of one split: per worker, the indices of its rows; per row, its time prefix.
    sels: Vec<Vec<u32>>,
    prefix: Vec<(i64, Nanos)>,
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
            owner: (0..map.shards()).map(|s| map.owner(s) as u16).collect(),
            sels: vec![Vec::new(); workers],
            prefix: Vec::new(),
        }
    }

    pub fn route(&self, stream: usize) -> Route {
        self.routes[stream]
    }

    /// `batch` of `stream` split into one part per worker (indexed by worker; a part may
    /// be empty), or `None` for a broadcast stream, which every worker takes whole.
    pub fn split(&mut self, stream: usize, batch: &Batch) -> Option<Vec<Part>> {
        let Route::Split { .. } = self.routes[stream] else {
            return None;
        };
        let mut parts: Vec<Part> = (0..self.sels.len())
            .map(|_| self.empty_part(stream, 0))
            .collect();
        self.split_onto(stream, batch, &mut parts);
        Some(parts)
    }

    /// A part of `stream` with no rows, room for `rows`.
    pub fn empty_part(&self, stream: usize, rows: usize) -> Part {
        Part {
            batch: Batch::new(&self.types[stream], rows),
            time: RoutedTime {
                prefix: Vec::with_capacity(rows),
                tail: (i64::MIN, 0),
            },
        }
    }

    /// Appends each worker's rows of `batch` of `stream` onto its part in `parts` (indexed
    /// by worker), and makes every part's tail the stream's time at the end of `batch`: a
    /// part holding consecutive batches is what their parts would be, delivered at once
    /// (`Coalesce`). False, and nothing appended, for a broadcast stream.
    pub fn split_onto(&mut self, stream: usize, batch: &Batch, parts: &mut [Part]) -> bool {
        let Route::Split { column, time } = self.routes[stream] else {
            return false;
        };
        let times: &[i64] = match time {
            TimeSource::Column(c) => match &batch.columns[c] {
                Column::Int(v) => v,
                other => unreachable!("time column {other:?}"),
            },
            TimeSource::Arrival => &batch.arrival,
        };
        let n = batch.len();
        for s in &mut self.sels {
            s.clear();
            s.reserve(n);
        }
        self.prefix.clear();
        self.prefix.reserve(n);
        let mut high = self.high[stream];
        let mut scan = Scan {
            owner: &self.owner,
            times,
            arrival: &batch.arrival,
            high: &mut high,
            sels: &mut self.sels,
            prefix: &mut self.prefix,
        };
        match &batch.columns[column] {
            Column::Int(v) => scan.run(|i| key_hash_int(v[i])),
            Column::Float(v) => scan.run(|i| key_hash_float(v[i])),
            Column::Bool(v) => scan.run(|i| key_hash_int(i64::from(v[i]))),
            // Hashed once per dictionary value, then looked up per row by code.
            Column::Str(v) if v.per_value_pays(n) => {
                let by_code: Vec<u64> = (v.dict().values().iter())
                    .map(|x| key_hash_str(x))
                    .collect();
                let codes = v.codes();
                scan.run(|i| by_code[codes[i] as usize])
            }
            Column::Str(v) => scan.run(|i| key_hash_str(&v[i])),
        }
        self.high[stream] = high;
        let prefix = &self.prefix;
        for (part, sel) in parts.iter_mut().zip(&self.sels) {
            part.batch.gather_from(batch, sel);
            (part.time.prefix).extend(sel.iter().map(|&i| prefix[i as usize]));
            part.time.tail = high;
        }
        true
    }
}

/// Joins each worker's parts of consecutive batches of one routed stream until they hold
/// `rows` rows (a batch), so that a worker ingests batches of the size a single engine
/// would, not a 1/N slice of each: per-batch work (a turn, a queue entry, an emit) would
/// otherwise be paid N times as often. The coordinator joins only batches its sources
/// already have ready and sends what it holds as soon as they have none (`drain`), so
/// joining adds no wait: it happens when the input outruns the coordinator.
#[derive(Debug)]
pub struct Coalesce {
    stream: usize,
    rows: usize,
    parts: Vec<Part>,
}

impl Coalesce {
    /// An empty joiner for `stream`, one part per worker of `router`.
    pub fn new(router: &Router, stream: usize, rows: usize) -> Coalesce {
        let parts = (0..router.sels.len())
            .map(|_| router.empty_part(stream, 2 * rows))
            .collect();
        Coalesce {
            stream,
            rows: rows.max(1),
            parts,
        }
    }

    /// Splits `batch` onto the held parts and hands `send` each worker's part that now
    /// holds a batch's worth of rows. False for a broadcast stream (nothing taken).
    pub fn add(
        &mut self,
        router: &mut Router,
        batch: &Batch,
        mut send: impl FnMut(usize, Part),
    ) -> bool {
        if !router.split_onto(self.stream, batch, &mut self.parts) {
            return false;
        }
        for k in 0..self.parts.len() {
            if self.parts[k].batch.len() >= self.rows {
                send(k, self.take(router, k));
            }
        }
        true
    }

    /// Hands `send` every held part that has rows, in worker order.
    pub fn drain(&mut self, router: &Router, mut send: impl FnMut(usize, Part)) {
        for k in 0..self.parts.len() {
            if !self.parts[k].batch.is_empty() {
                send(k, self.take(router, k));
            }
        }
    }

    fn take(&mut self, router: &Router, k: usize) -> Part {
        // Room for twice `rows`: the batch that fills a part overshoots `rows` by less
        // than one batch (of a source's usual size).
        let fresh = router.empty_part(self.stream, 2 * self.rows);
        std::mem::replace(&mut self.parts[k], fresh)
    }
}

/// One pass over a batch: each row's time prefix, and its index onto its owner's list.
struct Scan<'a> {
    owner: &'a [u16],
    times: &'a [i64],
    arrival: &'a [Nanos],
    high: &'a mut (i64, Nanos),
    sels: &'a mut [Vec<u32>],
    prefix: &'a mut Vec<(i64, Nanos)>,
}

impl Scan<'_> {
    fn run(&mut self, hash: impl Fn(usize) -> u64) {
        let mask = (self.owner.len() - 1) as u64;
        let mut h = *self.high;
        for (i, (&t, &a)) in self.times.iter().zip(self.arrival).enumerate() {
            if t > h.0 {
                h = (t, a);
            }
            self.prefix.push(h);
            let o = self.owner[(hash(i) & mask) as usize] as usize;
            self.sels[o].push(i as u32);
        }
        *self.high = h;
    }
}
