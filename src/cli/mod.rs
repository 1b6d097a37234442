//! Command-line interface: one file per subcommand. Library errors become messages here and
//! only here; bad input exits with code 2, other failures with 1.

mod bench;
mod bench_ingest;
mod bench_many;
mod bench_nexmark;
mod bench_sink;
mod bench_strings;
mod bench_watched;
mod bench_workers;
mod calibrate;
mod check;
mod control;
mod experiment;
mod fuzz;
mod fuzz_gen;
mod fuzz_mutate;
mod produce;
mod query;
mod run;
mod run_tui;
mod run_workers;
mod soak;
mod soak_memory;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Spillway: continuous SQL over streams that sheds load to keep latency promises.
#[derive(Parser, Debug)]
#[command(name = "spillway", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a workload: generate its streams, run its queries, print results as JSON lines
    /// on stdout and a status line per query every second on stderr.
    Run(run::RunArgs),
    /// Validate a workload and print the plan of each query.
    Check(check::CheckArgs),
    /// Measure engine throughput (tuples/s) on pre-generated batches and end to end.
    Bench(bench::BenchArgs),
    /// Measure each query's cost per tuple on this machine, printed as `cost:` settings
    /// for simulated mode.
    Calibrate(calibrate::CalibrateArgs),
    /// Run a workload under several policies side by side, against the exact answer and
    /// the offline optimum; writes summary.md, CSV files and SVG and PNG plots.
    Experiment(experiment::ExperimentArgs),
    /// Send lines to a TCP source at a rate: a file's lines, or a workload stream's
    /// generated tuples (a load generator for `source: {tcp: ...}`).
    Produce(produce::ProduceArgs),
    /// Add, list, show, change or remove queries of a running instance
    /// (`run --control-addr`), or switch its policy.
    Query(query::QueryArgs),
    /// Live check of the QoS promise on five overload shapes scaled to this machine
    /// (3x, 7x with a sliding window, bursts, a step, a ramp); prints per shape the
    /// seconds over target, p99 against target, busy share while shedding and utility.
    Soak(soak::SoakArgs),
    /// Structure-aware fuzzing of workloads, SQL and policies: each case is validated and,
    /// when valid, run briefly on virtual time; fails on a panic, an unlocated error, an
    /// unbalanced ledger or a case over its time limit, printing the case.
    Fuzz(fuzz::FuzzArgs),
}

/// A failed command: bad input (exit 2) or an operational failure (exit 1).
pub enum Failure {
    BadInput(String),
    Other(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Failure {
        Failure::Other(e)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::Other(e.into())
    }
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let result = match cli.command {
        Command::Run(a) => run::run(a),
        Command::Check(a) => check::check(a),
        Command::Bench(a) => bench::bench(a),
        Command::Calibrate(a) => calibrate::calibrate(a),
        Command::Experiment(a) => experiment::experiment(a),
        Command::Produce(a) => produce::produce(a),
        Command::Query(a) => query::query(a),
        Command::Soak(a) => soak::soak(a),
        Command::Fuzz(a) => fuzz::fuzz(a),
    };
    match result {
        Ok(code) => code,
        Err(Failure::BadInput(msg)) => {
            eprintln!("{}", bad_input_line(msg.trim_end()));
            ExitCode::from(2)
        }
        Err(Failure::Other(e)) => {
            eprintln!("spillway: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// One convention for every refusal: a message located in a file starts with
/// `file:line:col:` (what editors and compilers use, so it stays first); any other message
/// starts with `spillway:`, like every other line the CLI writes to stderr.
fn bad_input_line(msg: &str) -> std::borrow::Cow<'_, str> {
    let first = msg.split_whitespace().next().unwrap_or("");
    let mut parts = first.rsplitn(4, ':');
    let located = matches!(
        (parts.next(), parts.next(), parts.next(), parts.next()),
        (Some(""), Some(col), Some(line), Some(file))
            if !file.is_empty()
                && !line.is_empty()
                && !col.is_empty()
                && line.bytes().all(|b| b.is_ascii_digit())
                && col.bytes().all(|b| b.is_ascii_digit())
    );
    if located || msg.starts_with("spillway:") {
        msg.into()
    } else {
        format!("spillway: {msg}").into()
    }
}

/// Writes `text` to stdout; a closed pipe (`spillway check ... | head`) is not an error.
pub(crate) fn print(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// `println!` that survives a closed stdout.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::print(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use outln;

/// Loads and validates a workload file, turning every problem into bad input.
fn load_workload(path: &std::path::Path) -> Result<crate::spec::Workload, Failure> {
    crate::spec::load_file(path).map_err(|e| Failure::BadInput(e.to_string()))
}

/// Why workload `file` cannot run simulated, located at the setting it is about when the
/// file can be read again (`file:line:column: path: message`).
fn sim_refusal(file: &std::path::Path, e: &crate::runtime::simulated::SimError) -> Failure {
    let name = file.display().to_string();
    match (e.path(), std::fs::read_to_string(file)) {
        (Some(path), Ok(text)) => Failure::BadInput(
            crate::spec::SpecError::located(&name, &text, &path, e.to_string()).to_string(),
        ),
        _ => Failure::BadInput(format!("{name}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::bad_input_line;

    #[test]
    fn refusals_start_with_a_location_or_the_program_name() {
        let l = |m: &str| bad_input_line(m).into_owned();
        assert_eq!(
            l("w.yaml:3:7: queries.q: bad"),
            "w.yaml:3:7: queries.q: bad"
        );
        assert_eq!(l("spillway: 400: no"), "spillway: 400: no");
        assert_eq!(
            l("policy `x` is listed twice"),
            "spillway: policy `x` is listed twice"
        );
        assert_eq!(
            l("w.yaml: no stream `s`"),
            "spillway: w.yaml: no stream `s`"
        );
        assert_eq!(l("a:b:c: x"), "spillway: a:b:c: x");
    }
}
