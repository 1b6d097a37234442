//! Spillway: a load-shedding data stream management system.
//!
//! ```text
//!  spec (YAML workload) ──▶ sql (query text -> QueryPlan)
//!        │                        │
//!        ▼                        ▼
//!  generator (rates,      core: batches ─▶ per-query input queues ─▶ scheduler ─▶
//!  field distributions) ─▶       pipelines (filter, project, window aggregate) ─▶ results
//!        ▲                        │
//!  runtime (live driver: tokio sources, engine thread, sinks, status line)
//!  cli (run, check, bench)
//! ```
//!
//! `core`, `sql`, `spec` and `generator` are pure: no I/O, no threads, no clock. The `shell`
//! feature adds `runtime` and the CLI around them.

pub mod core;
pub mod generator;
pub mod qos;
pub mod shed;
pub mod spec;
pub mod sql;

#[cfg(feature = "shell")]
pub mod cli;
pub mod runtime;
