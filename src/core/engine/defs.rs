//! What an engine is built from: its streams, its queries, its configuration, and the
//! errors building or changing it can give.

use crate::core::plan::QueryPlan;
use crate::core::scheduler::SchedulerKind;
use crate::core::schema::{Nanos, Schema};

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

/// The default `EngineConfig::queue_memory`: 64 MiB, about 1.4 M rows of six numbers,
/// far more than a latency target of a second lets a shedding engine queue.
pub const DEFAULT_QUEUE_MEMORY: usize = 64 << 20;

#[derive(Clone, Copy, Debug)]
pub struct EngineConfig {
    pub queue_capacity: usize,
    /// What all input queues together may hold in memory, in bytes (`Held`): past it,
    /// a batch no queue holds yet is refused as queue-full by every query but those with
    /// an empty queue and the lossless ones.
    pub queue_memory: usize,
    pub scheduler: SchedulerKind,
    /// Seeds the drop points' random generators.
    pub seed: u64,
}

impl Default for EngineConfig {
    fn default() -> EngineConfig {
        EngineConfig {
            queue_capacity: 1_000_000,
            queue_memory: DEFAULT_QUEUE_MEMORY,
            scheduler: SchedulerKind::RoundRobin,
            seed: 0,
        }
    }
}

#[derive(Clone, Debug, thiserror::Error, PartialEq)]
pub enum EngineError {
    #[error("query `{query}` reads unknown stream `{stream}`")]
    UnknownStream { query: String, stream: String },
    #[error("a query named `{0}` is already running")]
    DuplicateQuery(String),
    #[error("no running query has index {0}")]
    NoSuchQuery(usize),
}
