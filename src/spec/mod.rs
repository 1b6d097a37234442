//! Workload files: YAML text -> validated, typed `Workload`. The invariant is that a
//! `Workload` exists only if the whole file is valid, queries planned included; otherwise
//! `SpecErrors` lists every problem with its file, line, column and setting path.
//!
//! The pipeline: `read` parses the YAML and deserializes each section, stream and query on
//! its own, and each key of the engine, a stream or a query on its own when that entry
//! fails (`de_entry`; `de` tracks the path of every value; `duplicates` finds every
//! duplicate key); `build` validates meaning (`build_stream`, `build_field`, `build_query`,
//! which plans the SQL); `locate` turns setting paths into positions. The format is documented field by field in `config` and `distribution`.

mod build;
mod build_changes;
mod build_field;
mod build_query;
mod build_retain;
mod build_source;
mod build_stream;
mod config;
mod config_changes;
mod config_io;
mod count;
mod de;
mod de_access;
mod de_entry;
mod de_named;
mod depth;
mod distribution;
mod duplicates;
mod duration;
mod error;
mod locate;
mod policy;
mod read;
mod request;
mod sink_io;
mod workload;
mod workload_io;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_errors;
#[cfg(test)]
mod tests_errors_entry;
#[cfg(test)]
mod tests_errors_values;
#[cfg(test)]
mod tests_sql;

use std::path::Path;

pub use build::auto_workers;
pub use build_stream::MAX_RATE;
pub use config::{
    EngineConfig, ExperimentConfig, FlowConfig, GeneratorConfig, QosConfig, QueryConfig,
    RetainConfig, SchedulerConfig, SinkConfig, SourceConfig, StreamConfig, ValueConfig,
    WorkersConfig, WorkloadConfig,
};
pub use config_changes::{AddConfig, ChangeConfig, PatchConfig};
pub use config_io::{FormatConfig, NexmarkConfig, NexmarkEventConfig, ReplayConfig, TcpConfig};
pub use de_named::NamedMap;
pub use distribution::{
    BurstsConfig, ChoiceConfig, FieldConfig, Literal, NormalConfig, RampConfig, RateConfig,
    SequenceConfig, SineConfig, StepConfig, UniformConfig, ZipfConfig,
};
pub use duration::{DurationConfig, parse_duration, parse_run_duration};
pub use error::{SpecError, SpecErrors};
pub use policy::{Policy, PolicyConfig, load_policy, parse_policy};
pub use request::{
    QueryMode, RequestError, parse_qos_request, parse_query_request, split_query_mode,
};
pub use sink_io::{DEFAULT_SINK_BUFFER, SinkFormatConfig, TcpSinkConfig, TcpSinkSpec};
pub use workload::{
    Change, ChangeAction, DEFAULT_EXPERIMENT_POLICIES, DEFAULT_IDLE_TIMEOUT, EngineSettings,
    ExperimentSpec, Flow, GeneratorSpec, LatencyTarget, Mode, QosPatch, QosSpec, QuerySpec,
    SchedulerKind, SinkSpec, SourceKind, SourceSpec, StreamSpec, UtilityCurve, ValueUtility,
    Workload,
};
pub use workload_io::{
    DEFAULT_LISTEN, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_LINE, LineFormat, NexmarkEvent,
    NexmarkSpec, ReplayPace, ReplaySpec, TcpSpec,
};

use build_query::Planner;
use error::Diagnostics;

/// Parses and validates a workload; `file` names it in error messages.
pub fn parse(text: &str, file: &str) -> Result<Workload, SpecErrors> {
    parse_with(text, file, &crate::sql::plan_query)
}

/// Reads the file at `path` and parses it. With `load_policy`, the only file reads of the
/// pure library (sinks, in the shell, write files).
pub fn load_file(path: impl AsRef<Path>) -> Result<Workload, SpecErrors> {
    let (text, name) = read_text(path.as_ref(), "workload")?;
    parse(&text, &name)
}

/// The text of the file at `path` and its name for messages; a read failure is a located
/// error like any other (`what` names the kind of file).
pub(crate) fn read_text(path: &Path, what: &str) -> Result<(String, String), SpecErrors> {
    let name = path.display().to_string();
    std::fs::read_to_string(path)
        .map(|text| (text, name.clone()))
        .map_err(|e| SpecErrors {
            errors: vec![SpecError {
                file: name,
                line: 1,
                column: 1,
                path: String::new(),
                message: format!("cannot read the {what} file: {e}"),
            }],
        })
}

/// `parse` with the SQL planner as a parameter, so the rest can be tested on its own.
fn parse_with(text: &str, file: &str, planner: Planner) -> Result<Workload, SpecErrors> {
    let mut diag = Diagnostics::new(text, file);
    let workload = read::read(&mut diag).and_then(|r| build::build(&mut diag, r, planner));
    match workload {
        Some(w) if diag.is_empty() => Ok(w),
        _ => Err(diag.finish()),
    }
}
