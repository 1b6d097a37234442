//! Per-query and per-stream counters and latency histograms, kept by the engine as plain
//! fields (no locks, no metrics calls on the hot path) and read through `EngineSnapshot`.
//!
//! Invariant (the conservation ledger): for each query,
//! `offered == processed + queued + dropped (every reason, queue-full included)`, and
//! `ingested` of a stream equals the `offered` of each query that reads it.

use hdrhistogram::Histogram;

use super::drop::{DropCounts, DropReason};
use super::schema::Nanos;

/// Latency histogram in nanoseconds: 1 µs .. 1 h at 3 significant digits.
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1_000, 3_600_000_000_000, 3).expect("static bounds are valid")
}

#[derive(Debug)]
pub struct QueryStats {
    /// Tuples offered to the query's input queue.
    pub offered: u64,
    /// Tuples dropped before reaching the pipeline, by reason: shed at the stream's or the
    /// query's drop point, or rejected by a full input queue.
    pub dropped: DropCounts,
    /// Nanoseconds spent processing (measured live, declared cost simulated).
    pub busy: u64,
    /// Tuples the pipeline has consumed.
    pub processed: u64,
    /// Result rows emitted.
    pub results: u64,
    /// Result latency since start.
    pub latency: Histogram<u64>,
    /// Result latency since the last control tick (the QoS monitor's sliding window is a
    /// ring of these).
    pub latency_tick: Histogram<u64>,
}

impl Default for QueryStats {
    fn default() -> QueryStats {
        QueryStats {
            offered: 0,
            dropped: [0; crate::core::drop::DropReason::COUNT],
            busy: 0,
            processed: 0,
            results: 0,
            latency: latency_histogram(),
            latency_tick: latency_histogram(),
        }
    }
}

impl QueryStats {
    pub fn record_latency(&mut self, latency: Nanos) {
        let v = latency.max(1_000) as u64;
        self.latency.saturating_record(v);
        self.latency_tick.saturating_record(v);
    }
}

/// A consistent view of one query, taken between turns.
#[derive(Clone, Debug, PartialEq)]
pub struct QuerySnapshot {
    pub name: String,
    pub stream: String,
    pub offered: u64,
    /// By `DropReason::index`.
    pub dropped: DropCounts,
    /// Processing time so far (ns).
    pub busy: u64,
    pub processed: u64,
    pub queued: u64,
    pub late: u64,
    pub results: u64,
    /// p50 and p99 result latency over the whole run (ns).
    pub p50: Nanos,
    pub p99: Nanos,
    pub max: Nanos,
    /// Counts of the processed-value observer (`Engine::observe_processed_values`), in its
    /// bins; empty without one.
    pub processed_values: Vec<u64>,
    /// The query was removed from the run: these are its final counters.
    pub removed: bool,
}

impl QuerySnapshot {
    /// Whether the conservation ledger balances for this query.
    pub fn balances(&self) -> bool {
        self.offered == self.processed + self.queued + self.dropped.iter().sum::<u64>()
    }

    /// Tuples shed by drop points (every reason but queue-full).
    pub fn shed(&self) -> u64 {
        self.dropped.iter().sum::<u64>() - self.queue_full()
    }

    pub fn queue_full(&self) -> u64 {
        self.dropped[DropReason::QueueFull.index()]
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct StreamSnapshot {
    pub name: String,
    /// Well-formed tuples offered to the stream's queries.
    pub ingested: u64,
    /// Shed at the stream's drop point, by reason; `Malformed` counts inputs a source
    /// could not parse (never part of `ingested`).
    pub dropped: DropCounts,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EngineSnapshot {
    pub streams: Vec<StreamSnapshot>,
    pub queries: Vec<QuerySnapshot>,
    /// Engine-thread time outside query turns so far (ns).
    pub overhead: u64,
}
