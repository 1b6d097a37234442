//! One view of N workers: their engine snapshots merged. Counters add, latency histograms
//! add (percentiles are read from the sum, never averaged), and a query that runs on one
//! owner worker is taken from that worker alone (the others hold an empty tombstone).
//!
//! A stream routed by shard (`workers::route`) reaches each worker with its rows only, so
//! its queries' merged ledgers count tuples: the merged `offered` is the stream's count,
//! and `ingested` adds over the workers. A broadcast stream is offered whole to every
//! worker, so a keyed query's merged ledger there counts tuple visits (`offered` is the
//! stream's count times the workers it runs on) and the stream is counted once. Either way
//! the merged ledger balances because each worker's does.

use hdrhistogram::Histogram;

use super::Sharded;
use crate::core::engine::Engine;
use crate::core::schema::Nanos;
use crate::core::stats::{EngineSnapshot, QuerySnapshot, latency_histogram};

/// Adds `b`'s counters into `a` (one query's ledger on two workers).
pub fn add_ledger(a: &mut QuerySnapshot, b: &QuerySnapshot) {
    a.offered += b.offered;
    for (x, y) in a.dropped.iter_mut().zip(&b.dropped) {
        *x += y;
    }
    a.busy += b.busy;
    a.processed += b.processed;
    a.queued += b.queued;
    a.late += b.late;
    a.windows_lost += b.windows_lost;
    a.windows_withheld += b.windows_withheld;
    a.results += b.results;
    if a.processed_values.len() < b.processed_values.len() {
        a.processed_values.resize(b.processed_values.len(), 0);
    }
    for (x, y) in a.processed_values.iter_mut().zip(&b.processed_values) {
        *x += y;
    }
}

/// The latency of query `q` over every worker that runs it.
pub fn merged_latency(engines: &[&Engine], q: usize) -> Histogram<u64> {
    let mut h = latency_histogram();
    for e in engines {
        if let Some(x) = e.latency_histogram(q) {
            h.add(x).expect("latency histograms share their bounds");
        }
    }
    h
}

impl Sharded {
    /// The workers' snapshots as one: per query, the sum over the workers that run it.
    /// A broadcast stream is counted once (every worker ingests all of it), a routed one
    /// adds; drop counters add.
    pub fn snapshot(&self) -> EngineSnapshot {
        let snaps: Vec<EngineSnapshot> = self.engines.iter().map(Engine::snapshot).collect();
        let engines: Vec<&Engine> = self.engines.iter().collect();
        merge(&snaps, &engines, |w, q| self.runs(w, q), |s| self.routed(s))
    }

    /// Whether `stream` is routed by shard (each worker keeps only its rows).
    pub fn routed(&self, stream: usize) -> bool {
        self.router.route(stream) != super::route::Route::Broadcast
    }
}

/// Merges per-worker snapshots; `runs(w, q)` says whether worker `w` runs query `q`,
/// `routed(s)` whether stream `s` is routed by shard (its `ingested` then adds).
pub fn merge(
    snaps: &[EngineSnapshot],
    engines: &[&Engine],
    runs: impl Fn(usize, usize) -> bool,
    routed: impl Fn(usize) -> bool,
) -> EngineSnapshot {
    let mut out = snaps[0].clone();
    for (i, s) in out.streams.iter_mut().enumerate() {
        s.dropped = Default::default();
        if routed(i) {
            s.ingested = snaps.iter().map(|x| x.streams[i].ingested).sum();
        }
    }
    for snap in snaps {
        for (a, b) in out.streams.iter_mut().zip(&snap.streams) {
            for (x, y) in a.dropped.iter_mut().zip(&b.dropped) {
                *x += y;
            }
        }
    }
    out.overhead = snaps.iter().map(|s| s.overhead).sum();
    out.idle = snaps.iter().map(|s| s.idle).sum();
    // Each worker holds its own batches: bytes add (the peak is a bound, peaks of
    // different moments added).
    out.queued_bytes = snaps.iter().map(|s| s.queued_bytes).sum();
    out.queued_bytes_peak = snaps.iter().map(|s| s.queued_bytes_peak).sum();
    for (q, merged) in out.queries.iter_mut().enumerate() {
        let mut first = true;
        for (w, snap) in snaps.iter().enumerate() {
            if !runs(w, q) {
                continue;
            }
            if first {
                *merged = snap.queries[q].clone();
                first = false;
            } else {
                add_ledger(merged, &snap.queries[q]);
            }
        }
        let h = merged_latency(engines, q);
        let at = |p: f64| h.value_at_quantile(p) as Nanos;
        if !h.is_empty() {
            merged.p50 = at(0.5);
            merged.p99 = at(0.99);
            merged.max = h.max() as Nanos;
        }
    }
    out
}
