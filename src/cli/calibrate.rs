//! `spillway calibrate`: runs a workload live for a few seconds without shedding, measures
//! each query's processing cost per input tuple on this machine, and prints the `cost:`
//! settings that let simulated mode model this machine.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::outln;
use super::{Failure, load_workload};
use crate::core::plan::fmt_nanos;
use crate::runtime::assemble::{engine_for, run_headless};
use crate::runtime::observe::Observers;
use crate::spec::{Policy, parse_duration};

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// The workload YAML file.
    pub workload: PathBuf,
    /// How long to measure.
    #[arg(long, value_parser = positive_duration, default_value = "5s")]
    pub duration: i64,
}

fn positive_duration(s: &str) -> Result<i64, String> {
    match parse_duration(s)? {
        d if d >= 100_000_000 => Ok(d),
        _ => Err(format!("`{s}` is too short to measure: use at least 100ms")),
    }
}

pub fn calibrate(args: CalibrateArgs) -> Result<ExitCode, Failure> {
    let w = load_workload(&args.workload)?;
    let engine = engine_for(&w).map_err(|e| Failure::BadInput(e.to_string()))?;
    eprintln!(
        "spillway: calibrating `{}`: running it live for {:.1} s without shedding, results discarded",
        w.name,
        args.duration as f64 / 1e9
    );
    if w.engine.workers > 1 {
        // A declared cost is per tuple a worker processes, at any N (`workers::sim`).
        eprintln!(
            "spillway: on one engine worker (engine.workers: {} is not used: a query's cost per tuple is the same on each worker)",
            w.engine.workers
        );
    }
    let report = run_headless(
        &w,
        engine,
        Policy::none(),
        Some(args.duration),
        &mut Observers::default(),
    )?;
    let busy: u64 = report.snapshot.queries.iter().map(|q| q.busy).sum();
    outln!(
        "# measured by `spillway calibrate` over {:.1} s; the engine thread was busy {:.0}% of the time",
        report.elapsed as f64 / 1e9,
        100.0 * busy as f64 / report.elapsed.max(1) as f64
    );
    outln!("queries:");
    for q in &report.snapshot.queries {
        if q.processed == 0 {
            outln!("  {}:    # processed nothing: no cost measured", q.name);
            continue;
        }
        let ns = (q.busy as f64 / q.processed as f64).round().max(1.0) as i64;
        outln!(
            "  {}:\n    cost: {}    # {} tuples, {:.1} ms busy",
            q.name,
            fmt_nanos(ns),
            q.processed,
            q.busy as f64 / 1e6
        );
    }
    Ok(ExitCode::SUCCESS)
}
