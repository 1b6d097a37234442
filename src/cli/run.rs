//! `spillway run`: runs a workload live or simulated, results on stdout (or files),
//! status lines and the summary on stderr.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Args;

use super::{Failure, load_workload};
use crate::runtime::assemble::{Sinks, engine_for, sinks_for};
use crate::runtime::clock::WallClock;
use crate::runtime::control::Controller;
use crate::runtime::live::{LiveOptions, run_live, watch_ctrl_c};
use crate::runtime::simulated::{SimControl, SimSettings, run_simulated};
use crate::runtime::status;
use crate::spec::{Mode, Policy, Workload, load_policy, parse_run_duration};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The workload YAML file.
    pub workload: PathBuf,
    /// Run for this long instead of the workload's duration (e.g. 5s, 500ms, 2m).
    #[arg(long, value_parser = parse_run_duration)]
    pub duration: Option<i64>,
    /// Write each query's results to DIR/<query>.jsonl instead of its configured sink.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// No per-second status lines (the final summary is still printed).
    #[arg(long)]
    pub quiet: bool,
    /// Run on virtual time with the declared per-query costs, whatever engine.mode says.
    #[arg(long)]
    pub simulated: bool,
    /// Load-shedding policy file, instead of the workload's `policy`.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
}

/// The policy a run uses: `--policy` (relative to the current directory), else the
/// workload's `policy` (relative to the workload file's directory), else `none`.
pub fn resolve_policy(
    workload_path: &Path,
    w: &Workload,
    flag: Option<&Path>,
) -> Result<Policy, Failure> {
    let path = match (flag, &w.policy) {
        (Some(p), _) => p.to_path_buf(),
        // Relative to the workload file, like an include: the pair moves together.
        (None, Some(p)) => match workload_path.parent() {
            Some(dir) if Path::new(p).is_relative() => dir.join(p),
            _ => PathBuf::from(p),
        },
        (None, None) => return Ok(Policy::none()),
    };
    load_policy(&path).map_err(|e| match (flag, &w.policy) {
        (None, Some(p)) => Failure::BadInput(format!(
            "{}: policy `{p}` (read from {}):\n{e}",
            workload_path.display(),
            path.display()
        )),
        _ => Failure::BadInput(e.to_string()),
    })
}

/// The end-of-run summary on stderr, with the shedding part when a policy sheds.
fn print_summary(
    name: &str,
    snapshot: &crate::core::stats::EngineSnapshot,
    elapsed: i64,
    history: Option<&crate::runtime::control::RunHistory>,
) {
    eprint!("{}", status::summary(snapshot, name, elapsed));
    if let Some(h) = history {
        eprint!("{}", status::shedding_summary(h, snapshot));
    }
}

/// The run's sinks; an `--out` that is not a directory is bad input.
fn open_sinks(w: &Workload, out: Option<&Path>) -> Result<Sinks, Failure> {
    sinks_for(w, out).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidInput => Failure::BadInput(e.to_string()),
        _ => Failure::Other(e.into()),
    })
}

pub fn run(args: RunArgs) -> Result<ExitCode, Failure> {
    let w = load_workload(&args.workload)?;
    let engine = engine_for(&w).map_err(|e| Failure::BadInput(e.to_string()))?;
    let policy = resolve_policy(&args.workload, &w, args.policy.as_deref())?;
    if args.simulated || w.engine.mode == Mode::Simulated {
        let settings = SimSettings::from_workload(&w, args.duration)
            .map_err(|e| Failure::BadInput(format!("{}: {e}", args.workload.display())))?;
        let sinks = open_sinks(&w, args.out.as_deref())?;
        return simulated(&w, engine, policy, &settings, sinks, args.quiet);
    }
    let mut sinks = open_sinks(&w, args.out.as_deref())?;
    let opts = LiveOptions {
        duration: args.duration,
        quiet: args.quiet,
        stop: Arc::new(AtomicBool::new(false)),
    };
    if !args.quiet {
        eprintln!(
            "spillway: running `{}` live ({} stream(s), {} query(ies), policy {}){}",
            w.name,
            w.streams.len(),
            w.queries.len(),
            policy.name,
            args.duration
                .or(w.duration)
                .map(|d| format!(" for {:.1} s; Ctrl-C stops early", d as f64 / 1e9))
                .unwrap_or_else(|| "; Ctrl-C stops".into())
        );
    }
    let shedding = !matches!(policy.params.kind, crate::shed::ShedKind::None);
    let report = run_live(&w, engine, policy, &mut sinks.sinks, &sinks.route, &opts)?;
    print_summary(
        &w.name,
        &report.snapshot,
        report.elapsed,
        shedding.then_some(&report.history),
    );
    if report.violations > 0 {
        eprintln!(
            "  conservation ledger violated at {} ticks",
            report.violations
        );
    }
    for f in &sinks.files {
        eprintln!("  results written to {}", f.display());
    }
    Ok(if report.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

fn simulated(
    w: &Workload,
    mut engine: crate::core::engine::Engine,
    policy: Policy,
    settings: &SimSettings,
    mut sinks: Sinks,
    quiet: bool,
) -> Result<ExitCode, Failure> {
    if !quiet {
        eprintln!(
            "spillway: running `{}` simulated for {:.1} s of virtual time on {} core(s), policy {}",
            w.name,
            settings.duration as f64 / 1e9,
            settings.cores,
            policy.name
        );
    }
    let shedding_policy = !matches!(policy.params.kind, crate::shed::ShedKind::None);
    let mut controller = Controller::new(w, &mut engine, policy, settings.cores, w.engine.tick, 0);
    let clock = WallClock::start();
    let mut failed = vec![false; sinks.sinks.len()];
    let mut next_status = 1_000_000_000;
    // Ctrl-C stops a simulated run as cleanly as a live one.
    let stop = Arc::new(AtomicBool::new(false));
    let signals = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    watch_ctrl_c(&signals, stop.clone());
    let closed = AtomicBool::new(false);
    let report = run_simulated(
        w,
        engine,
        settings,
        SimControl {
            controller: Some(&mut controller),
            stop: &|| stop.load(Ordering::Relaxed) || closed.load(Ordering::Relaxed),
        },
        |e| {
            if let Some(si) = sinks.route[e.index]
                && !failed[si]
                && let Err(err) = sinks.sinks[si].write(e)
            {
                failed[si] = true;
                // A reader that went away (`| head`) ends the run, as live.
                if err.kind() == std::io::ErrorKind::BrokenPipe {
                    closed.store(true, Ordering::Relaxed);
                }
            }
        },
        |r| {
            if r.qos.at >= next_status {
                if !quiet {
                    eprint!("{}", status::status_lines(r, r.qos.at, shedding_policy));
                }
                next_status += 1_000_000_000;
            }
        },
        |_, _| {},
    );
    signals.shutdown_background();
    for s in sinks.sinks.iter_mut() {
        let _ = s.flush();
    }
    let wall = clock.since_start();
    print_summary(
        &w.name,
        &report.snapshot,
        report.virtual_end,
        shedding_policy.then_some(controller.history()),
    );
    let tuples: u64 = report.snapshot.streams.iter().map(|s| s.ingested).sum();
    eprintln!(
        "  simulated {:.1} s of virtual time in {:.2} s of wall time ({} virtual tuples/s of wall time)",
        report.virtual_end as f64 / 1e9,
        wall as f64 / 1e9,
        status::rate(tuples as f64 / (wall as f64 / 1e9).max(1e-9))
    );
    if controller.violations() > 0 {
        eprintln!(
            "  conservation ledger violated at {} ticks",
            controller.violations()
        );
    }
    for f in &sinks.files {
        eprintln!("  results written to {}", f.display());
    }
    Ok(if report.interrupted && !closed.load(Ordering::Relaxed) {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}
