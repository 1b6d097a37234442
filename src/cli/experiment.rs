//! `spillway experiment`: runs a workload under several policies plus the exact and
//! optimum references and writes the summary, CSV files and plots into `--out` (several
//! workloads: one subdirectory each, named after the file). Progress goes to stderr
//! (hidden when stderr is not a terminal); bad input exits with code 2 before anything
//! runs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{Failure, load_workload};
use crate::experiment::{self, NamedPolicy, Setup, plots, report};
use crate::runtime::clock::WallClock;
use crate::spec::{DEFAULT_EXPERIMENT_POLICIES, Policy, load_policy, parse_duration, parse_policy};

#[derive(Args, Debug)]
pub struct ExperimentArgs {
    /// The workload YAML file(s). With several, each writes into `DIR/<file stem>/` and
    /// the command reports the total time (`spillway experiment workloads/*.yaml`).
    #[arg(required = true)]
    pub workload: Vec<PathBuf>,
    /// Policies to compare, comma-separated: built-in kinds (none, tail-drop, random,
    /// semantic, window-aware) or policy files (`.yaml`). Default: the workload's
    /// `experiment.policies`, else none,random,semantic.
    #[arg(long, value_delimiter = ',')]
    pub policies: Option<Vec<String>>,
    /// Directory for summary.md, results.csv, timeseries.csv and the plots (SVG and PNG).
    #[arg(long, value_name = "DIR", default_value = "experiment-out")]
    pub out: PathBuf,
    /// Run the policies live on the wall clock (the references stay simulated).
    #[arg(long)]
    pub live: bool,
    /// Runs per policy, each with the next seed (default: the workload's
    /// `experiment.repeat`, else 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: Option<u32>,
    /// First seed (default: the workload's `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run for this long instead of the workload's duration (e.g. 5s).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<i64>,
}

/// A policy by built-in kind name or file path; files named in the workload are relative
/// to it.
fn policy(name: &str, relative_to: Option<&Path>) -> Result<NamedPolicy, Failure> {
    let is_file = name.ends_with(".yaml") || name.ends_with(".yml") || name.contains('/');
    if !is_file {
        let p = if name == "none" {
            Policy::none()
        } else {
            parse_policy(&format!("kind: {name}\n"), name).map_err(|_| {
                Failure::BadInput(format!(
                    "unknown policy `{name}`: use none, tail-drop, random, semantic, window-aware, or a policy file ending in .yaml"
                ))
            })?
        };
        return Ok(NamedPolicy {
            label: name.into(),
            policy: Policy {
                name: name.into(),
                ..p
            },
        });
    }
    let path = match relative_to {
        Some(dir) => super::run::beside(dir, Path::new(name)),
        None => PathBuf::from(name),
    };
    let p = load_policy(&path).map_err(|e| Failure::BadInput(e.to_string()))?;
    Ok(NamedPolicy {
        label: Path::new(name)
            .file_stem()
            .map_or(name.into(), |s| s.to_string_lossy().into_owned()),
        policy: p,
    })
}

/// One workload's experiment, checked before anything runs.
struct Planned {
    path: PathBuf,
    workload: crate::spec::Workload,
    setup: Setup,
    out: PathBuf,
}

fn plan(args: &ExperimentArgs, path: &Path, out: PathBuf) -> Result<Planned, Failure> {
    let w = load_workload(path)?;
    super::run_workers::refuse_experiment(path, &w)?;
    let block = w.experiment.as_ref();
    let policies = match (&args.policies, block) {
        (Some(p), _) => p
            .iter()
            .map(|n| policy(n.trim(), None))
            .collect::<Result<Vec<_>, _>>()?,
        (None, Some(b)) => b
            .policies
            .iter()
            .map(|n| policy(n, path.parent()))
            .collect::<Result<Vec<_>, _>>()?,
        (None, None) => DEFAULT_EXPERIMENT_POLICIES
            .iter()
            .map(|n| policy(n, None))
            .collect::<Result<Vec<_>, _>>()?,
    };
    let mut labels: Vec<&str> = policies.iter().map(|p| p.label.as_str()).collect();
    labels.sort_unstable();
    if let Some(w) = labels.windows(2).find(|w| w[0] == w[1]) {
        return Err(Failure::BadInput(format!(
            "policy `{}` is listed twice",
            w[0]
        )));
    }
    if labels.iter().any(|l| *l == "exact" || *l == "optimum") {
        return Err(Failure::BadInput(
            "`exact` and `optimum` are the experiment's references, not policies".into(),
        ));
    }
    if out.exists() && !out.is_dir() {
        return Err(Failure::BadInput(format!(
            "--out {}: not a directory",
            out.display()
        )));
    }
    let setup = Setup {
        policies,
        repeat: args.repeat.or(block.map(|b| b.repeat)).unwrap_or(1),
        seed: args.seed.unwrap_or(w.seed),
        live: args.live,
        duration: args.duration,
    };
    Ok(Planned {
        path: path.to_path_buf(),
        workload: w,
        setup,
        out,
    })
}

pub fn experiment(args: ExperimentArgs) -> Result<ExitCode, Failure> {
    let several = args.workload.len() > 1;
    let mut planned = Vec::new();
    for path in &args.workload {
        let out = if several {
            let stem = path.file_stem().unwrap_or(path.as_os_str());
            args.out.join(stem)
        } else {
            args.out.clone()
        };
        if planned.iter().any(|p: &Planned| p.out == out) {
            return Err(Failure::BadInput(format!(
                "{}: two workloads would write into {}",
                path.display(),
                out.display()
            )));
        }
        planned.push(plan(&args, path, out)?);
    }
    let clock = WallClock::start();
    for p in &planned {
        let started = clock.since_start();
        run_one(p)?;
        if several {
            eprintln!(
                "{}: {:.1} s",
                p.path.display(),
                (clock.since_start() - started) as f64 / 1e9
            );
        }
    }
    if several {
        eprintln!(
            "{} experiments in {:.1} s",
            planned.len(),
            clock.since_start() as f64 / 1e9
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn run_one(p: &Planned) -> Result<(), Failure> {
    let (w, setup) = (&p.workload, &p.setup);
    let total = setup.repeat as u64 * (1 + setup.policies.len() as u64);
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut started = 0;
    let outcome = experiment::run(w, setup, &mut |label| {
        if started > 0 {
            bar.inc(1);
        }
        started += 1;
        bar.set_message(label.to_string());
    })
    .map_err(|e| match e {
        experiment::ExperimentError::Io(e) => Failure::Other(e.into()),
        other => Failure::BadInput(format!("{}: {other}", p.path.display())),
    })?;
    bar.finish_and_clear();
    std::fs::create_dir_all(&p.out)?;
    let command = std::env::args()
        .map(|a| {
            Path::new(&a)
                .file_name()
                .filter(|_| a.ends_with("spillway"))
                .map_or(a.clone(), |f| f.to_string_lossy().into_owned())
        })
        .collect::<Vec<_>>()
        .join(" ");
    let out = &p.out;
    report::write_results(&outcome, &out.join("results.csv"))?;
    report::write_timeseries(&outcome, &out.join("timeseries.csv"))?;
    std::fs::write(
        out.join("summary.md"),
        report::report_markdown(&outcome, &command),
    )?;
    let plot = |r: Result<(), Box<dyn std::error::Error>>, name: &str| {
        r.map_err(|e| Failure::Other(anyhow::anyhow!("cannot draw {name}: {e}")))
    };
    plot(
        plots::latency(&outcome, &out.join("latency.svg")),
        "latency.svg",
    )?;
    plot(plots::keep(&outcome, &out.join("keep.svg")), "keep.svg")?;
    plot(
        plots::utility(&outcome, &out.join("utility.svg")),
        "utility.svg",
    )?;
    plot(
        plots::error_cdf(&outcome, &out.join("error_cdf.svg")),
        "error_cdf.svg",
    )?;
    eprintln!("summary: {}", out.join("summary.md").display());
    Ok(())
}
