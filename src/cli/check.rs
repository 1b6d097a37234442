//! `spillway check`: validates a workload and prints each query's plan.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::outln;
use super::{Failure, load_workload};
use crate::core::explain::describe;
use crate::runtime::simulated::SimSettings;
use crate::spec::Mode;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The workload YAML file.
    pub workload: PathBuf,
}

pub fn check(args: CheckArgs) -> Result<ExitCode, Failure> {
    let w = load_workload(&args.workload)?;
    // What `run` would refuse, `check` refuses too.
    let policy = super::run::resolve_policy(&args.workload, &w, None)?;
    if w.engine.mode == Mode::Simulated {
        SimSettings::from_workload(&w, None).map_err(|e| super::sim_refusal(&args.workload, &e))?;
    }
    super::run_workers::scripted_adds(&args.workload, &w)?;
    outln!(
        "{}: workload `{}` is valid: {} stream(s), {} query(ies)",
        args.workload.display(),
        w.name,
        w.streams.len(),
        w.queries.len()
    );
    outln!("policy {} ({:?})", policy.name, policy.params.kind);
    for s in &w.streams {
        let cols: Vec<String> = s
            .schema
            .fields
            .iter()
            .map(|f| format!("{} {}", f.name, f.ty))
            .collect();
        outln!("stream {} ({})", s.name, cols.join(", "));
    }
    for q in &w.queries {
        outln!("query {}:", q.name);
        let input = &w.stream(&q.plan.stream).expect("validated").schema;
        super::print(&describe(&q.plan, input));
    }
    Ok(ExitCode::SUCCESS)
}
