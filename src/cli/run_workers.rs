//! `spillway run` with `engine.workers > 1`: what such a run supports, and the live run
//! on N engine workers over key shards (`runtime::workers::live`).

use super::Failure;
use crate::core::schema::Nanos;
use crate::core::shard::DEFAULT_SHARDS;
use crate::runtime::assemble::engine_for;
use crate::runtime::live::LiveRun;
use crate::runtime::manage::Scripted;
use crate::runtime::observe::{Observers, RunSummary};
use crate::runtime::outputs::Outputs;
use crate::runtime::source::Source;
use crate::runtime::stop::StopHandle;
use crate::runtime::workers::Sharded;
use crate::runtime::workers::live::run_live_workers;
use crate::spec::{Policy, Workload};

/// Rejects what several workers do not support yet, with the reason.
pub fn check(
    w: &Workload,
    simulated: bool,
    control_api: bool,
    changes: &[Scripted],
) -> Result<(), Failure> {
    if w.engine.workers <= 1 {
        return Ok(());
    }
    let n = w.engine.workers;
    if simulated {
        return Err(Failure::BadInput(format!(
            "engine.workers: {n} runs live only; simulated runs use one worker (the sharded simulator is tested in tests/workers_sim.rs): drop --simulated or set workers: 1"
        )));
    }
    if control_api {
        return Err(Failure::BadInput(format!(
            "--control-addr needs engine.workers: 1 (got {n}): the control API changes one engine"
        )));
    }
    if !changes.is_empty() {
        return Err(Failure::BadInput(format!(
            "scripted `changes:` need engine.workers: 1 (got {n})"
        )));
    }
    Ok(())
}

/// Runs `w` live on `w.engine.workers` workers.
#[allow(clippy::too_many_arguments)]
pub fn run(
    w: &Workload,
    policy: Policy,
    sources: Vec<Box<dyn Source>>,
    duration: Option<Nanos>,
    stop: &StopHandle,
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
            policy_switch: None,
        },
        runtime,
        sharded,
        outputs,
        observers,
    ))
}
