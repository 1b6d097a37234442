//! Sharding one query of an engine: with several workers, each worker's engine runs every
//! keyed query over the whole stream and its pipeline keeps only the rows of that worker's
//! key shards (see `core::shard`).

use super::Engine;
use crate::core::expr::Expr;
use crate::core::plan::PlanBody;
use crate::core::shard::ShardFilter;

impl Engine {
    /// Keeps only the rows of `filter`'s shards for query `q`, from the next turn on.
    pub fn set_shard(&mut self, q: usize, filter: ShardFilter) {
        self.queries[q].pipeline.set_shard(filter);
    }

    /// Rows of query `q`'s last processed batch in this engine's shards.
    pub fn owned_last(&self, q: usize) -> usize {
        self.queries[q].pipeline.owned_last()
    }
}

/// The input column a query can be sharded on: its first GROUP BY key that is a plain
/// column. Every row of one group has the same value there, so a group lives on one shard.
/// `None` for projections (no state: they run whole on one worker, which keeps their row
/// order) and for aggregates grouped only by window or by computed keys.
pub fn shard_column(body: &PlanBody) -> Option<usize> {
    match body {
        PlanBody::Project(_) => None,
        PlanBody::Aggregate(a) => a.keys.iter().find_map(|k| match k {
            Expr::Column(c) => Some(*c),
            _ => None,
        }),
    }
}

impl Engine {
    /// Query `q`'s result latency since the start, once it has emitted a result.
    pub fn latency_histogram(&self, q: usize) -> Option<&hdrhistogram::Histogram<u64>> {
        self.queries[q].stats.latency.get()
    }
}
