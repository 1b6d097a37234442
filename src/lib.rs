//! Spillway: a load-shedding data stream management system.
//!
//! ```text
//!  spec (workload + policy YAML) ──▶ sql (query text -> QueryPlan)
//!        │                                 │
//!        ▼                                 ▼
//!  generator (rates,   ──▶ core: ingest ─▶ drop points ─▶ per-query queues ─▶ scheduler
//!  distributions)            ─▶ pipelines (filter, project, window aggregate) ─▶ results
//!                                 │ counters                     ▲ drop rules
//!                                 ▼                              │
//!  runtime::monitor (QosSnapshot) ──▶ shed (when / where / how much) ──▶ runtime::control
//!  runtime::{simulated, live} drive it all; cli: run, check, calibrate, bench
//! ```
//!
//! Pure (no I/O, no threads, no clock): `core`, `sql`, `spec` (apart from reading the
//! workload and policy files), `generator`, `qos`, `shed`, and `runtime::{monitor,
//! control, simulated, status}`. The `shell` feature adds the wall clock, the live
//! driver, sinks and the CLI.

pub mod core;
pub mod generator;
pub mod qos;
pub mod shed;
pub mod spec;
pub mod sql;

#[cfg(feature = "shell")]
pub mod cli;
#[cfg(feature = "shell")]
pub mod experiment;
pub mod runtime;
