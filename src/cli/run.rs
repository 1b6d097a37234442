//! `spillway run`: runs a workload live, results on stdout (or files), status on stderr.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::Args;

use super::{Failure, load_workload};
use crate::runtime::assemble::{engine_for, sinks_for};
use crate::runtime::live::{LiveOptions, run_live};
use crate::runtime::status;
use crate::spec::{Mode, parse_duration};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The workload YAML file.
    pub workload: PathBuf,
    /// Run for this long instead of the workload's duration (e.g. 5s, 500ms, 2m).
    #[arg(long, value_parser = parse_duration_arg)]
    pub duration: Option<i64>,
    /// Write each query's results to DIR/<query>.jsonl instead of its configured sink.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// No per-second status lines (the final summary is still printed).
    #[arg(long)]
    pub quiet: bool,
}

fn parse_duration_arg(s: &str) -> Result<i64, String> {
    parse_duration(s)
}

pub fn run(args: RunArgs) -> Result<ExitCode, Failure> {
    let w = load_workload(&args.workload)?;
    if w.engine.mode == Mode::Simulated {
        return Err(Failure::BadInput(format!(
            "{}: engine.mode simulated is not available yet; use mode: live",
            args.workload.display()
        )));
    }
    let engine = engine_for(&w).map_err(|e| Failure::BadInput(e.to_string()))?;
    let mut sinks = sinks_for(&w, args.out.as_deref())?;
    let opts = LiveOptions {
        duration: args.duration,
        quiet: args.quiet,
        stop: Arc::new(AtomicBool::new(false)),
    };
    if !args.quiet {
        eprintln!(
            "spillway: running `{}` live ({} stream(s), {} query(ies)){}",
            w.name,
            w.streams.len(),
            w.queries.len(),
            args.duration
                .or(w.duration)
                .map(|d| format!(" for {:.1} s; Ctrl-C stops early", d as f64 / 1e9))
                .unwrap_or_else(|| "; Ctrl-C stops".into())
        );
    }
    let report = run_live(&w, engine, &mut sinks.sinks, &sinks.route, &opts)?;
    eprint!(
        "{}",
        status::summary(&report.snapshot, &w.name, report.elapsed)
    );
    for f in &sinks.files {
        eprintln!("  results written to {}", f.display());
    }
    Ok(if report.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}
