//! The engine's counters as a snapshot: each stream's and query's ledger and latency
//! percentiles, and the memory its queues hold. Invariant: taken between turns, every
//! query's ledger balances (offered = processed + queued + dropped by reason).

use super::{Engine, QueryState};
use crate::core::drop::DropReason;
use crate::core::schema::Nanos;
use crate::core::stats::{EngineSnapshot, QuerySnapshot, StreamSnapshot};

impl Engine {
    /// Counters and latency percentiles of every stream and query.
    pub fn snapshot(&self) -> EngineSnapshot {
        let queries = self.queries.iter().map(query_snapshot).collect();
        EngineSnapshot {
            streams: self
                .streams
                .iter()
                .map(|s| {
                    let mut dropped = s.drop.dropped;
                    dropped[DropReason::Malformed.index()] = s.malformed;
                    StreamSnapshot {
                        name: s.def.name.clone(),
                        ingested: s.ingested,
                        dropped,
                        retained: s.retained.as_ref().map(|r| r.snapshot()),
                    }
                })
                .collect(),
            queries,
            overhead: self.overhead,
            idle: self.idle,
            queued_bytes: self.held.bytes() as u64,
            queued_bytes_peak: self.held.peak() as u64,
        }
    }
}

/// The counters of one query.
pub(super) fn query_snapshot(q: &QueryState) -> QuerySnapshot {
    let [p50, p99, max] = q
        .stats
        .quantiles
        .unwrap_or_else(|| q.stats.latency.quantiles());
    QuerySnapshot {
        name: q.def.name.clone(),
        stream: q.def.plan.stream.clone(),
        offered: q.stats.offered,
        dropped: q.stats.dropped,
        busy: q.stats.busy,
        processed: q.stats.processed,
        queued: q.queue.depth() as u64,
        late: q.pipeline.late(),
        windows_lost: q.pipeline.windows_lost(),
        windows_withheld: q.pipeline.windows_withheld(),
        results: q.stats.results,
        p50: p50 as Nanos,
        p99: p99 as Nanos,
        max: max as Nanos,
        processed_values: q
            .processed_values
            .as_ref()
            .map_or_else(Vec::new, |o| o.counts.clone()),
        removed: q.removed,
    }
}
