//! `spillway check`: validates a workload and prints each query's plan.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{Failure, load_workload};
use crate::core::explain::describe;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The workload YAML file.
    pub workload: PathBuf,
}

pub fn check(args: CheckArgs) -> Result<ExitCode, Failure> {
    let w = load_workload(&args.workload)?;
    println!(
        "{}: workload `{}` is valid: {} stream(s), {} query(ies)",
        args.workload.display(),
        w.name,
        w.streams.len(),
        w.queries.len()
    );
    for s in &w.streams {
        let cols: Vec<String> = s
            .schema
            .fields
            .iter()
            .map(|f| format!("{} {}", f.name, f.ty))
            .collect();
        println!("stream {} ({})", s.name, cols.join(", "));
    }
    for q in &w.queries {
        println!("query {}:", q.name);
        let input = &w.stream(&q.plan.stream).expect("validated").schema;
        print!("{}", describe(&q.plan, input));
    }
    Ok(ExitCode::SUCCESS)
}
