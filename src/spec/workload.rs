//! The validated workload: what the runtime builds a run from. Every value here has passed
//! validation (names resolve, types fit, numbers are in range, every query is planned), so
//! consumers never re-check it.

use serde::Deserialize;

pub use crate::qos::UtilityCurve;

use crate::core::plan::QueryPlan;
use crate::core::retain::RetainLimit;
use crate::core::schema::{Nanos, Schema};
use crate::generator::{FieldGen, RateProfile};
use crate::sql::Catalog;

use super::workload_io::{NexmarkSpec, ReplaySpec, TcpSpec};

pub use crate::core::scheduler::SchedulerKind;

/// A workload ready to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub name: String,
    pub seed: u64,
    /// How long a run lasts; `None`: until stopped or until the streams are exhausted.
    pub duration: Option<Nanos>,
    pub engine: EngineSettings,
    /// In file order.
    pub streams: Vec<StreamSpec>,
    /// In file order.
    pub queries: Vec<QuerySpec>,
    /// The policy file, as written.
    pub policy: Option<String>,
    /// The `experiment:` block, if the file has one.
    pub experiment: Option<ExperimentSpec>,
    /// Scripted changes to the query set, in time order (`changes:`).
    pub changes: Vec<Change>,
}

/// What `spillway experiment` compares by default (see `ExperimentConfig`).
#[derive(Clone, Debug, PartialEq)]
pub struct ExperimentSpec {
    /// Built-in policy kinds or policy file paths as written; at least one, no repeats.
    pub policies: Vec<String>,
    /// At least 1.
    pub repeat: u32,
}

/// The policies an experiment compares when nothing says otherwise.
pub const DEFAULT_EXPERIMENT_POLICIES: [&str; 3] = ["none", "random", "semantic"];

impl Workload {
    pub fn stream(&self, name: &str) -> Option<&StreamSpec> {
        self.streams
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
    }

    /// The streams by name, as the SQL planner sees them.
    pub fn catalog(&self) -> Catalog {
        Catalog {
            streams: self
                .streams
                .iter()
                .map(|s| (s.name.clone(), s.schema.clone()))
                .collect(),
        }
    }
}

/// Live or simulated execution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Real time: sources follow the wall clock.
    #[default]
    Live,
    /// Virtual time advanced by each query's `cost`.
    Simulated,
}

/// `engine:` settings with defaults applied.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EngineSettings {
    pub mode: Mode,
    /// At least 1.
    pub workers: usize,
    /// `workers: auto`: `workers` was resolved for `mode` (`build::auto_workers`); a run
    /// that overrides the mode (`--simulated`) resolves it again.
    pub workers_auto: bool,
    /// Positive.
    pub tick: Nanos,
    /// Tuples per batch, at least 1.
    pub batch_size: usize,
    /// Live runs: rows a window close emits in one turn, at least 1 (`Engine::set_close_step`).
    pub close_step: usize,
    /// Live runs, round robin: ns of engine time a query gets a round, 0 for a turn a
    /// round (`Engine::set_turn_quantum`).
    pub turn_quantum: Nanos,
    /// Tuples per query input queue, at least 1.
    pub queue_capacity: usize,
    /// Bytes all input queues together may hold (every worker its share), at least 1 MiB.
    pub queue_memory: usize,
    pub scheduler: SchedulerKind,
    /// Simulated capacity in cores; at least `build::MIN_CORES` (0.001).
    pub cores: f64,
}

impl Default for EngineSettings {
    fn default() -> EngineSettings {
        EngineSettings {
            mode: Mode::Live,
            workers: 1,
            workers_auto: false,
            tick: 100_000_000,
            batch_size: 1024,
            close_step: crate::core::engine::LIVE_CLOSE_STEP,
            turn_quantum: crate::core::engine::LIVE_TURN_QUANTUM,
            queue_capacity: 1_000_000,
            queue_memory: crate::core::engine::DEFAULT_QUEUE_MEMORY,
            scheduler: SchedulerKind::RoundRobin,
            cores: 1.0,
        }
    }
}

/// One input stream: its schema and its source.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamSpec {
    pub name: String,
    /// Field order as in the file; `event_time` set if the stream declares one.
    pub schema: Schema,
    pub source: SourceSpec,
    /// Recent history kept for ad-hoc queries (`retain:`), if any.
    pub retain: Option<RetainLimit>,
}

impl StreamSpec {
    /// The generator behind this stream, if it is generated.
    pub fn generator(&self) -> Option<&GeneratorSpec> {
        match &self.source.kind {
            SourceKind::Generator(g) => Some(g),
            SourceKind::Tcp(_) | SourceKind::Replay(_) | SourceKind::Nexmark(_) => None,
        }
    }
}

/// Where a stream's tuples come from, and how it meets a full engine.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceSpec {
    pub kind: SourceKind,
    pub flow: Flow,
    /// Silence (no frontier progress) after which the source stops holding back windows.
    pub idle_timeout: Nanos,
}

/// The default `idle_timeout`.
pub const DEFAULT_IDLE_TIMEOUT: Nanos = 1_000_000_000;

/// The kinds of source (a closed set: a new kind is a compile error wherever it must be
/// handled).
#[derive(Clone, Debug, PartialEq)]
pub enum SourceKind {
    Generator(GeneratorSpec),
    /// Lines from TCP connections.
    Tcp(TcpSpec),
    /// Lines of a file.
    Replay(ReplaySpec),
    /// One stream of the Nexmark auction benchmark.
    Nexmark(NexmarkSpec),
}

impl SourceKind {
    /// `generator`, `tcp`, `replay` or `nexmark`.
    pub fn label(&self) -> &'static str {
        match self {
            SourceKind::Generator(_) => "generator",
            SourceKind::Tcp(_) => "tcp",
            SourceKind::Replay(_) => "replay",
            SourceKind::Nexmark(_) => "nexmark",
        }
    }
}

/// Whether a source can be slowed down when the engine is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// It cannot: overflow is shed or counted as queue-full.
    Push,
    /// It waits while its stream's queues are full: nothing is lost, memory stays bounded.
    Pull,
}

impl Flow {
    pub fn label(self) -> &'static str {
        match self {
            Flow::Push => "push",
            Flow::Pull => "pull",
        }
    }
}

/// A seeded generator of tuples.
#[derive(Clone, Debug, PartialEq)]
pub struct GeneratorSpec {
    pub rate: RateProfile,
    /// One distribution per schema field, each fitting its field's type.
    pub fields: Vec<FieldGen>,
    /// Stop after this many tuples; `None`: endless.
    pub count: Option<u64>,
    /// `generator::mix_seed(workload seed, index of the stream in the file)`.
    pub seed: u64,
}

/// One continuous query.
#[derive(Clone, Debug, PartialEq)]
pub struct QuerySpec {
    pub name: String,
    pub sql: String,
    pub plan: QueryPlan,
    pub qos: Option<QosSpec>,
    /// Per-input-tuple cost for simulated mode; positive.
    pub cost: Option<Nanos>,
    pub sink: SinkSpec,
}

/// Where a query's results go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SinkSpec {
    /// JSON lines on standard output.
    Stdout,
    /// JSON lines appended to the file at this path.
    Jsonl(String),
    /// Discarded (still counted).
    None,
    /// JSON lines to a TCP listener, reconnecting with backoff.
    Tcp(super::sink_io::TcpSinkSpec),
}

/// Quality-of-service settings of a query.
#[derive(Clone, Debug, PartialEq)]
pub struct QosSpec {
    pub latency: Option<LatencyTarget>,
    /// Utility by percent of results delivered (x in `[0, 100]`), non-decreasing in x.
    pub loss_tolerance: Option<UtilityCurve>,
    pub value: Option<ValueUtility>,
    /// Positive; 1 unless set.
    pub weight: f64,
    /// Zero loss tolerance: never shed.
    pub lossless: bool,
}

impl QosSpec {
    /// The latency target, whatever its percentile.
    pub fn latency_target(&self) -> Option<Nanos> {
        self.latency.map(|l| l.target)
    }
}

/// `percentile`% of results should leave within `target` of their input's arrival.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencyTarget {
    /// In `(0, 100]`, e.g. 99.9 for `p999`.
    pub percentile: f64,
    /// Positive.
    pub target: Nanos,
}

/// Utility of a tuple by the value of one numeric input column.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueUtility {
    pub field: String,
    /// Index of `field` in the input stream's schema.
    pub column: usize,
    pub curve: UtilityCurve,
}

/// A scripted change of the running query set (`changes:`), applied at `at`: virtual time
/// in simulated mode, time since the start live.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub at: Nanos,
    pub action: ChangeAction,
}

/// What a change does. Names are checked in time order: an add's name is free at its
/// time, a patch or remove names a query running at its time.
#[derive(Clone, Debug, PartialEq)]
pub enum ChangeAction {
    Add(Box<QuerySpec>),
    Patch {
        query: String,
        qos: QosPatch,
    },
    /// `flush`: emit its open windows (default) rather than drop them.
    Remove {
        query: String,
        flush: bool,
    },
    /// The policy file, as written (relative to the workload file).
    Policy(String),
}

/// QoS settings to change; `None` leaves a setting as it is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QosPatch {
    pub latency: Option<LatencyTarget>,
    pub loss_tolerance: Option<UtilityCurve>,
    pub value: Option<ValueUtility>,
    pub weight: Option<f64>,
    pub lossless: Option<bool>,
}

impl QosPatch {
    /// `current` (a query without QoS counts as defaults) with this patch applied.
    pub fn apply(&self, current: Option<&QosSpec>) -> QosSpec {
        let mut q = current.cloned().unwrap_or(QosSpec {
            latency: None,
            loss_tolerance: None,
            value: None,
            weight: 1.0,
            lossless: false,
        });
        if let Some(l) = self.latency {
            q.latency = Some(l);
        }
        if let Some(c) = &self.loss_tolerance {
            q.loss_tolerance = Some(c.clone());
        }
        if let Some(v) = &self.value {
            q.value = Some(v.clone());
        }
        if let Some(w) = self.weight {
            q.weight = w;
        }
        if let Some(l) = self.lossless {
            q.lossless = l;
        }
        q
    }
}
