//! `spillway run`: runs a workload live or simulated, results on stdout (or files),
//! status lines and the summary on stderr.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::run_tui::TuiRun;
use super::{Failure, load_workload};
use crate::runtime::assemble::{Sinks, engine_for, shell_runtime, sinks_for, sources_for};
use crate::runtime::clock::WallClock;
use crate::runtime::control::Controller;
use crate::runtime::live::{LiveChanges, LiveRun, run_live_managed};
use crate::runtime::metrics::{MetricsObserver, MetricsServer, parse_metrics_addr};
use crate::runtime::observe::{Event, Observer, Observers};
use crate::runtime::outputs::Outputs;
use crate::runtime::pace::Pacer;
use crate::runtime::signals::watch_signals;
use crate::runtime::simulated::{SimControl, SimSettings, run_simulated_script};
use crate::runtime::status::{self, StatusObserver};
use crate::runtime::stop::{StopHandle, StopReason};
use crate::spec::{Mode, Policy, Workload, load_policy, parse_duration, parse_run_duration};

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
    /// Serve Prometheus metrics on http://ADDR/metrics while the run lasts (HOST:PORT, or
    /// a bare PORT for 127.0.0.1). Off by default.
    #[arg(long, value_name = "ADDR", value_parser = parse_metrics_addr)]
    pub metrics_addr: Option<SocketAddr>,
    /// With --metrics-addr: keep serving this long after the run ends, so the last scrape
    /// sees the final counts (Ctrl-C ends the wait).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5s")]
    pub metrics_linger: i64,
    /// Simulated runs: play virtual time at X times wall speed (1 = real time), so a
    /// scraper or a watcher sees the run unfold. Without it a simulated run goes flat out.
    #[arg(long, value_name = "X")]
    pub speed: Option<f64>,
    /// Serve the control API (add, change, remove queries while running; live runs) on
    /// this address, e.g. 127.0.0.1:7700. A non-loopback address needs a token.
    #[arg(long, value_name = "ADDR")]
    pub control_addr: Option<std::net::SocketAddr>,
    /// File holding the bearer token the control API requires (default: the
    /// SPILLWAY_CONTROL_TOKEN environment variable, if set).
    #[arg(long, value_name = "FILE")]
    pub control_token_file: Option<PathBuf>,
    /// Full-screen terminal dashboard instead of status lines (q quits, ? lists the keys);
    /// a simulated run then plays at --speed (default 1).
    #[arg(long)]
    pub tui: bool,
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
            Some(dir) => beside(dir, Path::new(p)),
            None => PathBuf::from(p),
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

/// `path` read relative to `dir` (unless absolute), with `dir/..` pairs folded so messages
/// show `policies/random.yaml`, not `workloads/../policies/random.yaml`. Lexical only: a
/// symlinked `dir` could make the folded path differ, so only plain names are folded.
pub fn beside(dir: &Path, path: &Path) -> PathBuf {
    use std::path::Component;
    if path.is_absolute() {
        return path.to_path_buf();
    }
    let mut out: Vec<Component> = Vec::new();
    for c in dir.components().chain(path.components()) {
        match (c, out.last()) {
            (Component::CurDir, _) => {}
            (Component::ParentDir, Some(Component::Normal(_))) => {
                out.pop();
            }
            _ => out.push(c),
        }
    }
    if out.is_empty() {
        PathBuf::from(".")
    } else {
        out.iter().collect()
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
    let mut w = load_workload(&args.workload)?;
    let simulated = args.simulated || w.engine.mode == Mode::Simulated;
    if simulated && w.engine.workers_auto {
        // `workers: auto` of a live workload run simulated: the modelled cores, not this
        // machine's, so the run is the same everywhere.
        w.engine.workers =
            crate::spec::auto_workers(Mode::Simulated, w.engine.cores, w.streams.len());
    }
    let mut engine = engine_for(&w).map_err(|e| Failure::BadInput(e.to_string()))?;
    let policy = resolve_policy(&args.workload, &w, args.policy.as_deref())?;
    let settings = if simulated {
        Some(
            SimSettings::from_workload(&w, args.duration)
                .map_err(|e| super::sim_refusal(&args.workload, &e))?,
        )
    } else {
        None
    };
    let mut pacer = match (args.speed, simulated) {
        (None, _) => None,
        // The dashboard paces simulated runs itself.
        (Some(_), true) if args.tui => None,
        (Some(x), true) if x.is_finite() && x > 0.0 => Some(Pacer::new(x)),
        (Some(x), true) => {
            return Err(Failure::BadInput(format!(
                "--speed {x}: expected a positive number (times wall speed)"
            )));
        }
        (Some(_), false) => {
            return Err(Failure::BadInput(
                "--speed applies to simulated runs (add --simulated); a live run is already real time"
                    .into(),
            ));
        }
    };
    let changes = super::control::scripted(&args.workload, &w)?;
    // What several workers cannot take, refused before anything starts.
    super::run_workers::scripted_adds(&args.workload, &w)?;
    if simulated && args.control_addr.is_some() {
        return Err(Failure::BadInput(
            "--control-addr needs a live run; simulated runs take scripted `changes:`".into(),
        ));
    }
    let mut sinks = open_sinks(&w, args.out.as_deref())?;
    let stdout_sink = sinks.stdout_of(&w, args.out.as_deref());
    // Sources and signal watchers share one small runtime; the engine keeps this thread.
    let runtime = shell_runtime()?;
    let stop = StopHandle::new();
    watch_signals(&runtime, stop.clone());
    let mut status = StatusObserver::new(args.quiet);
    let mut tui = match args.tui {
        true => Some(TuiRun::open(
            &w,
            &policy,
            &stop,
            settings.is_some().then(|| args.speed.unwrap_or(1.0)),
            &mut sinks,
            args.out.is_some(),
        )?),
        false => None,
    };
    let switch = tui.as_ref().map(|t| t.switch.clone());
    let sources = match &tui {
        Some(t) => t.sources(&w)?,
        None => sources_for(&w)?,
    };
    let metrics = match args.metrics_addr {
        Some(addr) => Some(MetricsServer::start(addr, &runtime).map_err(anyhow::Error::from)?),
        None => None,
    };
    if let Some(m) = &metrics {
        eprintln!("  metrics on http://{}/metrics", m.addr());
    }
    let mut metrics_observer = metrics.as_ref().map(|m| MetricsObserver::new(m.recorder()));
    // The pacer goes first: each tick is published once wall time has caught up with it.
    // The dashboard paces simulated runs itself.
    let mut list: Vec<&mut dyn Observer> = Vec::new();
    match &mut tui {
        Some(t) => list.extend(t.observers()),
        None => {
            if let Some(p) = &mut pacer {
                list.push(p);
            }
            list.push(&mut status);
        }
    }
    if let Some(o) = &mut metrics_observer {
        list.push(o);
    }
    let mut observers = Observers::new(list);
    let live = match settings {
        None => Some(super::control::live_changes(
            &runtime,
            args.control_addr,
            args.control_token_file.as_deref(),
            args.out.clone(),
            changes.clone(),
        )?),
        Some(_) => None,
    };
    let mut outputs = Outputs::new(&mut sinks, w.queries.len()).with_stdout(stdout_sink);
    if live.is_some() {
        // Scripted adds get their index when applied, after any the control API made.
        super::control::hold_scripted_sinks(&mut outputs, &w);
    }
    let simulated = settings.is_some();
    let mut summary = match settings {
        None if w.engine.workers > 1 => super::run_workers::run(
            &w,
            policy,
            sources,
            args.duration,
            &stop,
            switch,
            live.unwrap_or(LiveChanges {
                script: Vec::new(),
                inbox: None,
            }),
            &runtime,
            &mut outputs,
            &mut observers,
        )?,
        None => run_live_managed(
            LiveRun {
                workload: &w,
                policy,
                sources,
                duration: args.duration,
                stop: stop.clone(),
                policy_switch: switch,
            },
            live.unwrap_or(LiveChanges {
                script: Vec::new(),
                inbox: None,
            }),
            &runtime,
            engine,
            &mut outputs,
            &mut observers,
        ),
        Some(settings) if w.engine.workers > 1 => super::run_workers::simulate(
            &w,
            policy,
            &settings,
            &stop,
            changes,
            switch,
            &mut outputs,
            &mut observers,
        )?,
        Some(settings) => {
            let clock = WallClock::start();
            let mut controller =
                Controller::new(&w, &mut engine, policy, settings.cores, w.engine.tick, 0)
                    .with_switch(switch);
            let report = run_simulated_script(
                &w,
                engine,
                &settings,
                SimControl {
                    controller: Some(&mut controller),
                    stop: &stop,
                },
                changes,
                |e| {
                    outputs.write(e);
                    // A reader that went away (`| head`) ends the run, as live.
                    if outputs.closed && !stop.is_stopping() {
                        stop.request(StopReason::Requested);
                    }
                },
                &mut observers,
            );
            outputs.close();
            let tuples: u64 = report.snapshot.streams.iter().map(|s| s.ingested).sum();
            print_sim_speed(report.virtual_end, clock.since_start(), tuples);
            report.summary
        }
    };
    if simulated {
        // Virtual time runs with the observers lent out: its sink failures are told now,
        // and its undelivered rows fail the run as a live run's do.
        for (query, message) in outputs.failures.drain(..) {
            observers.event(Event::SinkFailed {
                at: summary.elapsed,
                query,
                message,
            });
        }
        summary.undelivered = outputs.undelivered.clone();
    }
    if let Some(m) = &metrics {
        let linger = std::time::Duration::from_nanos(args.metrics_linger.max(0) as u64);
        if !linger.is_zero() {
            eprintln!(
                "  serving final metrics on http://{}/metrics for {} (Ctrl-C ends it)",
                m.addr(),
                humantime::format_duration(linger)
            );
        }
        m.linger(linger, &stop);
    }
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    if let Some(t) = &tui {
        // The dashboard has given the terminal back: now the summary it kept off screen.
        eprint!("{}{}", status::summary(&summary), t.closing_lines());
    }
    let failed_sinks = summary.undelivered.iter().any(|n| *n > 0);
    if failed_sinks {
        return Err(Failure::Other(anyhow::anyhow!(
            "a sink failed: {} result rows were not delivered (see above)",
            summary.undelivered.iter().sum::<u64>()
        )));
    }
    for f in &sinks.files {
        eprintln!("  results written to {}", f.display());
    }
    Ok(match summary.stopped {
        Some(r) if r != StopReason::Requested => ExitCode::from(r.exit_code()),
        _ => ExitCode::SUCCESS,
    })
}

/// The closing line of a simulated run: virtual time against wall time, and the virtual
/// tuples it got through per second of wall time.
pub(super) fn print_sim_speed(
    virtual_end: crate::core::schema::Nanos,
    wall: crate::core::schema::Nanos,
    tuples: u64,
) {
    eprintln!(
        "  simulated {:.1} s of virtual time in {:.2} s of wall time ({} virtual tuples/s of wall time)",
        virtual_end as f64 / 1e9,
        wall as f64 / 1e9,
        status::rate(tuples as f64 / (wall as f64 / 1e9).max(1e-9))
    );
}

#[cfg(test)]
mod tests {
    use super::beside;
    use std::path::{Path, PathBuf};

    #[test]
    fn a_policy_beside_the_workload_reads_without_dot_dot() {
        let p = |d: &str, f: &str| beside(Path::new(d), Path::new(f));
        assert_eq!(
            p("workloads", "../policies/random.yaml"),
            PathBuf::from("policies/random.yaml")
        );
        assert_eq!(p("a/b", "./c.yaml"), PathBuf::from("a/b/c.yaml"));
        assert_eq!(p("", "../x.yaml"), PathBuf::from("../x.yaml"));
        assert_eq!(p("w", "/abs/x.yaml"), PathBuf::from("/abs/x.yaml"));
        assert_eq!(p("w", ".."), PathBuf::from("."));
    }
}
