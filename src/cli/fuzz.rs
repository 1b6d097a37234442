//! `spillway fuzz`: structure-aware fuzzing of everything a user writes. Each case is a
//! workload (a shipped one or a generated one, mutated by `fuzz_mutate`) and a policy
//! (none, or a shipped one, maybe mutated). It goes through validation, and when valid
//! through a short simulated run. A case fails on a panic, an error without a location, a
//! valid workload the engine cannot build, an unbalanced ledger, or a run over the time
//! limit; the first failure is printed whole (and written to a file) and exits 1.
//! Wall-clock time limits are the point here, so `Instant::now` is allowed.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::Args;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use serde_yaml::Value;

use super::Failure;
use super::fuzz_gen::{POLICIES, WORKLOADS, workload};
use super::fuzz_mutate::mutate_text;
use crate::core::schema::Nanos;
use crate::runtime::assemble::engine_for;
use crate::runtime::control::Controller;
use crate::runtime::manage::script;
use crate::runtime::observe::Observers;
use crate::runtime::simulated::{SimControl, SimSettings, run_simulated_script};
use crate::runtime::stop::StopHandle;
use crate::spec::{self, Policy, SpecErrors, parse_duration, parse_policy};

#[derive(Args, Debug)]
pub struct FuzzArgs {
    /// Cases to run.
    #[arg(long, default_value_t = 1000)]
    pub cases: u64,
    /// Seed of the case generator: the same seed gives the same cases.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// First case number (reproduce a reported case with `--start N --cases 1`).
    #[arg(long, default_value_t = 0)]
    pub start: u64,
    /// Wall time one case may take (validation and run).
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub time_limit: i64,
    /// Resident memory the process may reach while one case runs, MB (each case's peak where
    /// `/proc/self/clear_refs` can restart it, else sampled every 64 cases).
    #[arg(long, default_value_t = 1024)]
    pub max_rss_mb: u64,
    /// Where a failing case's workload and policy are written.
    #[arg(long, default_value = "fuzz-failure")]
    pub out: PathBuf,
}

/// One generated input.
struct Case {
    origin: String,
    workload: String,
    policy: Option<String>,
}

/// What a case did, when it did not fail.
enum Outcome {
    Ran,
    Rejected,
}

/// Most tuples a case's run generates: a case tests behaviour, not throughput.
const TUPLE_BUDGET: u64 = 200_000;
/// Longest virtual time a case runs.
const MAX_RUN: Nanos = 500_000_000;

/// How often a long run prints where it is.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// One status line: cases done, the rate, and the time left at that rate.
fn progress(done: u64, cases: u64, took: Duration, ran: u64, rejected: u64) {
    let secs = took.as_secs_f64();
    let rate = done as f64 / secs.max(1e-9);
    let left = cases.saturating_sub(done) as f64 / rate.max(1e-9);
    eprintln!(
        "fuzz: {done} of {cases} cases in {secs:.0} s ({rate:.0} cases/s, about {left:.0} s left): {ran} ran, {rejected} rejected, no failure so far; RSS {} MB",
        rss_mb("VmRSS"),
    );
}

/// The panic of the case being run, recorded by the hook instead of printed.
static PANIC: Mutex<Option<String>> = Mutex::new(None);

pub fn fuzz(args: FuzzArgs) -> Result<ExitCode, Failure> {
    let corpus: Vec<(&str, Value)> = WORKLOADS
        .iter()
        .filter_map(|(n, t)| Some((*n, serde_yaml::from_str(t).ok()?)))
        .collect();
    let policies: Vec<(&str, Value)> = POLICIES
        .iter()
        .filter_map(|(n, t)| Some((*n, serde_yaml::from_str(t).ok()?)))
        .collect();
    let limit = Duration::from_nanos(args.time_limit.max(1) as u64);
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|info| {
        *PANIC.lock().unwrap_or_else(|e| e.into_inner()) = Some(info.to_string());
    }));
    let (to_worker, cases) = mpsc::channel::<Case>();
    let (to_main, results) = mpsc::channel::<(Case, Result<Outcome, String>)>();
    // Deep but valid inputs recurse in parsers: give the worker room.
    std::thread::Builder::new()
        .name("fuzz-case".into())
        .stack_size(64 << 20)
        .spawn(move || {
            for case in cases {
                let r = std::panic::catch_unwind(|| check_case(&case))
                    .unwrap_or_else(|_| Err(format!("panic: {}", take_panic())));
                if to_main.send((case, r)).is_err() {
                    break;
                }
            }
        })?;
    let started = Instant::now();
    let mut next_progress = PROGRESS_EVERY;
    let mut peak_mb = 0;
    let (mut ran, mut rejected) = (0u64, 0u64);
    for i in args.start..args.start.saturating_add(args.cases) {
        let took = started.elapsed();
        if took >= next_progress {
            next_progress = took + PROGRESS_EVERY;
            progress(i - args.start, args.cases, took, ran, rejected);
        }
        let case = make_case(args.seed, i, &corpus, &policies);
        let shown = (
            case.origin.clone(),
            case.workload.clone(),
            case.policy.clone(),
        );
        // Each case's own peak: the kernel's high-water mark restarts here (where allowed).
        let peak_reset = reset_peak_rss();
        to_worker
            .send(case)
            .map_err(|_| anyhow::anyhow!("the fuzz worker died"))?;
        let failure = match results.recv_timeout(limit) {
            Ok((_, Ok(Outcome::Ran))) => {
                ran += 1;
                None
            }
            Ok((_, Ok(Outcome::Rejected))) => {
                rejected += 1;
                None
            }
            Ok((_, Err(why))) => Some(why),
            Err(_) => Some(format!("over the time limit of {limit:?}")),
        };
        let rss = if peak_reset {
            rss_mb("VmHWM")
        } else if i % 64 == 0 {
            rss_mb("VmRSS")
        } else {
            0
        };
        peak_mb = peak_mb.max(rss);
        let failure = failure.or_else(|| {
            (rss > args.max_rss_mb).then(|| {
                format!(
                    "resident memory peaked at {rss} MB, over --max-rss-mb {}",
                    args.max_rss_mb
                )
            })
        });
        if let Some(why) = failure {
            std::panic::set_hook(previous_hook);
            return report_failure(&args, i, &shown, &why);
        }
    }
    std::panic::set_hook(previous_hook);
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "fuzz: {} cases (seed {}, from {}) in {secs:.1} s ({:.0} cases/s): {ran} ran, {rejected} rejected with a located error; no failure; peak RSS {} MB",
        args.cases,
        args.seed,
        args.start,
        args.cases as f64 / secs.max(1e-9),
        peak_mb.max(rss_mb("VmRSS")),
    );
    Ok(ExitCode::SUCCESS)
}

fn take_panic() -> String {
    PANIC
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or_else(|| "(no message)".into())
}

/// Case `i` of `seed`: reproducible on its own.
fn make_case(seed: u64, i: u64, corpus: &[(&str, Value)], policies: &[(&str, Value)]) -> Case {
    let mut rng = SmallRng::seed_from_u64(seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    // Half the cases are one mutation or none away from valid, so that most of those run.
    let mutations = *[0, 0, 1, 1, 2, 3].get(rng.random_range(0..6)).unwrap_or(&1);
    let (origin, workload) = if !corpus.is_empty() && rng.random_ratio(2, 5) {
        let (name, tree) = &corpus[rng.random_range(0..corpus.len())];
        (
            format!("workloads/{name}.yaml"),
            mutate_text(tree, mutations, &mut rng),
        )
    } else {
        let text = workload(&mut rng);
        let text = match serde_yaml::from_str::<Value>(&text) {
            Ok(tree) if mutations > 0 => mutate_text(&tree, mutations, &mut rng),
            _ => text,
        };
        ("generated".to_string(), text)
    };
    let policy = (!policies.is_empty() && rng.random_ratio(1, 2)).then(|| {
        let (_, tree) = &policies[rng.random_range(0..policies.len())];
        mutate_text(tree, rng.random_range(0..3), &mut rng)
    });
    Case {
        origin: format!("{origin}, {mutations} mutation(s)"),
        workload,
        policy,
    }
}

/// A rejection must say where: every error names the file and a line and column in it.
fn located(e: &SpecErrors, file: &str, text: &str) -> Result<Outcome, String> {
    let lines = text.lines().count() + 1;
    match e.errors.iter().find(|x| {
        x.file != file || x.line == 0 || x.column == 0 || x.line > lines || x.message.is_empty()
    }) {
        _ if e.errors.is_empty() => Err("rejected with no error at all".into()),
        Some(bad) => Err(format!("an error without a proper location: {bad}")),
        None => Ok(Outcome::Rejected),
    }
}

/// Validation, and for a valid case a short simulated run with the ledger checked.
fn check_case(case: &Case) -> Result<Outcome, String> {
    let w = match spec::parse(&case.workload, "case.yaml") {
        Ok(w) => w,
        Err(e) => return located(&e, "case.yaml", &case.workload),
    };
    let policy = match &case.policy {
        None => Policy::none(),
        Some(text) => match parse_policy(text, "policy.yaml") {
            Ok(p) => p,
            Err(e) => return located(&e, "policy.yaml", text),
        },
    };
    let Ok(changes) = script(&w, |name| {
        let stem = name
            .rsplit('/')
            .next()
            .unwrap_or(name)
            .trim_end_matches(".yaml");
        POLICIES
            .iter()
            .find(|(n, _)| *n == stem)
            .and_then(|(_, t)| parse_policy(t, name).ok())
            .ok_or(())
    }) else {
        return Ok(Outcome::Rejected);
    };
    let duration = short_run(&w);
    // What `run --simulated` refuses with a message (a live-only source, no cost).
    let Ok(settings) = SimSettings::from_workload(&w, Some(duration)) else {
        return Ok(Outcome::Rejected);
    };
    let mut engine =
        engine_for(&w).map_err(|e| format!("a valid workload failed to build: {e}"))?;
    let mut controller = Controller::new(&w, &mut engine, policy, settings.cores, w.engine.tick, 0);
    let stop = StopHandle::new();
    let report = run_simulated_script(
        &w,
        engine,
        &settings,
        SimControl {
            controller: Some(&mut controller),
            stop: &stop,
        },
        changes,
        |_| {},
        &mut Observers::new(Vec::new()),
    );
    if report.summary.ledger_violations > 0 {
        return Err(format!(
            "the ledger did not balance on {} tick(s)",
            report.summary.ledger_violations
        ));
    }
    if let Some(q) = report.snapshot.queries.iter().find(|q| !q.balances()) {
        return Err(format!(
            "query `{}` ends with an unbalanced ledger: {q:?}",
            q.name
        ));
    }
    Ok(Outcome::Ran)
}

/// The virtual time a case runs: its duration, at most `MAX_RUN`, shortened until its
/// streams generate at most `TUPLE_BUDGET` tuples.
fn short_run(w: &spec::Workload) -> Nanos {
    let mut d = w.duration.unwrap_or(MAX_RUN).clamp(1, MAX_RUN);
    let tuples = |d: Nanos| -> u64 {
        w.streams
            .iter()
            .filter_map(|s| s.generator())
            .map(|g| g.rate.count_until(d).min(g.count.unwrap_or(u64::MAX)))
            .fold(0u64, u64::saturating_add)
    };
    while d > 1_000_000 && tuples(d) > TUPLE_BUDGET {
        d /= 2;
    }
    d
}

/// A field of /proc/self/status in MB (0 where there is none).
/// Restarts the process's peak resident memory (`VmHWM`) from its current size; false
/// where the kernel does not allow it (then memory is sampled every 64 cases instead).
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn rss_mb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

fn report_failure(
    args: &FuzzArgs,
    i: u64,
    (origin, workload, policy): &(String, String, Option<String>),
    why: &str,
) -> Result<ExitCode, Failure> {
    let w = args.out.with_extension("yaml");
    let p = args.out.with_extension("policy.yaml");
    let _ = std::fs::write(&w, workload);
    if let Some(text) = policy {
        let _ = std::fs::write(&p, text);
    }
    eprintln!(
        "fuzz: case {i} (seed {}, {origin}) FAILED: {why}",
        args.seed
    );
    eprintln!("--- workload ({}) ---\n{workload}", w.display());
    if let Some(text) = policy {
        eprintln!("--- policy ({}) ---\n{text}", p.display());
    }
    eprintln!(
        "reproduce: spillway fuzz --seed {} --start {i} --cases 1   (or: spillway run --simulated --duration 500ms {}{})",
        args.seed,
        w.display(),
        policy
            .as_ref()
            .map_or(String::new(), |_| format!(" --policy {}", p.display()))
    );
    Ok(ExitCode::from(1))
}
