//! The pure engine: tuples and schemas, plans, operators, queues, scheduler and the engine
//! that steps them. Nothing here does I/O, spawns a thread or reads a clock: time is an
//! argument, which is what makes simulated runs reproducible bit for bit.

pub mod batch;
mod compare;
mod datum;
pub mod drop;
pub mod engine;
pub mod explain;
pub mod expr;
pub mod held;
pub mod indexset;
mod ingest;
pub mod latency_runs;
mod lost_time;
pub mod operators;
pub mod plan;
pub mod queue;
pub mod recycle;
pub mod retain;
pub mod rows;
pub mod scheduler;
pub mod schema;
pub mod shard;
pub mod shared;
pub mod stats;
pub mod strings;
pub mod timefmt;
