//! `spillway run` with `engine.workers > 1`: what such a run supports, the live run on N
//! engine workers over key shards (`runtime::workers::live`) and the simulated one
//! (`runtime::workers::sim`, with scripted changes).

use std::path::Path;

use super::Failure;
use crate::core::schema::Nanos;
use crate::core::shard::DEFAULT_SHARDS;
use crate::runtime::assemble::engine_for;
use crate::runtime::clock::WallClock;
use crate::runtime::controls::PolicySwitch;
use crate::runtime::live::{LiveChanges, LiveRun};
use crate::runtime::manage::Scripted;
use crate::runtime::observe::{Observers, RunSummary};
use crate::runtime::outputs::Outputs;
use crate::runtime::simulated::SimSettings;
use crate::runtime::source::Source;
use crate::runtime::stop::StopHandle;
use crate::runtime::stop::StopReason;
use crate::runtime::workers::Sharded;
use crate::runtime::workers::changes::place;
use crate::runtime::workers::live::run_live_workers;
use crate::runtime::workers::sim::{ShardedControl, ShardedSim, run_sharded_with};
use crate::spec::{ChangeAction, Policy, SpecError, Workload};

/// Refuses a scripted add of `w` (workload file `path`) that its stream's route on
/// `engine.workers` workers cannot take (`workers::changes::place`), located at the add.
pub fn scripted_adds(path: &Path, w: &Workload) -> Result<(), Failure> {
    let n = w.engine.workers;
    if n <= 1 || w.changes.is_empty() {
        return Ok(());
    }
    let sharded = Sharded::new(n, DEFAULT_SHARDS, || engine_for(w))
        .map_err(|e| Failure::BadInput(e.to_string()))?;
    for (i, c) in w.changes.iter().enumerate() {
        if let ChangeAction::Add(q) = &c.action
            && let Err(e) = place(w, &sharded, q, w.queries.len() + i)
        {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let (file, at) = (path.display().to_string(), format!("changes[{i}].add"));
            let e = SpecError::located(&file, &text, &at, e.to_string());
            return Err(Failure::BadInput(e.to_string()));
        }
    }
    Ok(())
}

/// `spillway experiment` runs one engine: with `engine.workers > 1` it refuses, located.
/// Its two references model one engine: the offline optimum packs the declared
/// `capacity.cores` as one knapsack per tick, which N workers with `cores / N` each and a
/// skewed key spread cannot reach, so every policy would be judged against a bound of
/// another machine; and the value-based figures count processed tuples, which on a stream
/// offered whole to every worker are counted once per worker.
pub fn refuse_experiment(path: &Path, w: &Workload) -> Result<(), Failure> {
    let n = w.engine.workers;
    if n <= 1 {
        return Ok(());
    }
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let message = format!(
        "`spillway experiment` runs one engine worker (got engine.workers: {n}): its offline optimum and value figures model one engine on capacity.cores; set workers: 1 for the experiment, and compare several workers with `spillway run --simulated` (same seed, same rows)"
    );
    let file = path.display().to_string();
    Err(Failure::BadInput(
        SpecError::located(&file, &text, "engine.workers", message).to_string(),
    ))
}

/// Runs `w` on virtual time on `w.engine.workers` workers (`workers::sim`), its scripted
/// `changes` applied to every worker, results to `outputs`.
#[allow(clippy::too_many_arguments)]
pub fn simulate(
    w: &Workload,
    policy: Policy,
    settings: &SimSettings,
    stop: &StopHandle,
    changes: Vec<Scripted>,
    switch: Option<PolicySwitch>,
    outputs: &mut Outputs<'_>,
    observers: &mut Observers<'_>,
) -> Result<RunSummary, Failure> {
    let n = w.engine.workers;
    let sharded = Sharded::new(n, DEFAULT_SHARDS, || engine_for(w))
        .map_err(|e| Failure::BadInput(e.to_string()))?;
    eprintln!(
        "  {n} engine workers over {DEFAULT_SHARDS} key shards, simulated on {} cores per worker",
        settings.cores / n as f64
    );
    let sim = ShardedSim {
        workload: w,
        duration: settings.duration,
        costs: settings.costs.clone(),
        cores: settings.cores,
        policy: Some(policy),
    };
    let clock = WallClock::start();
    let control = ShardedControl {
        stop,
        script: changes,
        switch,
    };
    let report = run_sharded_with(
        &sim,
        sharded,
        control,
        |_, e| {
            outputs.write(e);
            // A reader that went away (`| head`) ends the run, as with one worker.
            if outputs.closed && !stop.is_stopping() {
                stop.request(StopReason::Requested);
            }
        },
        observers,
    );
    outputs.close();
    let tuples: u64 = report.merged.streams.iter().map(|s| s.ingested).sum();
    super::run::print_sim_speed(report.virtual_end, clock.since_start(), tuples);
    Ok(report.summary)
}

/// Runs `w` live on `w.engine.workers` workers; its scripted changes and the control
/// API's requests (`changes`) reach every worker in band.
#[allow(clippy::too_many_arguments)]
pub fn run(
    w: &Workload,
    policy: Policy,
    sources: Vec<Box<dyn Source>>,
    duration: Option<Nanos>,
    stop: &StopHandle,
    switch: Option<PolicySwitch>,
    changes: LiveChanges,
    runtime: &tokio::runtime::Runtime,
    outputs: &mut Outputs<'_>,
    observers: &mut Observers<'_>,
) -> Result<RunSummary, Failure> {
    let sharded = Sharded::new(w.engine.workers, DEFAULT_SHARDS, || engine_for(w))
        .map_err(|e| Failure::BadInput(e.to_string()))?;
    eprintln!(
        "  {} engine workers over {DEFAULT_SHARDS} key shards",
        w.engine.workers
    );
    Ok(run_live_workers(
        LiveRun {
            workload: w,
            policy,
            sources,
            duration,
            stop: stop.clone(),
            policy_switch: switch,
        },
        changes,
        runtime,
        sharded,
        outputs,
        observers,
    ))
}
