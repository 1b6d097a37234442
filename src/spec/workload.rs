//! The validated workload: what the runtime builds a run from. Every value here has passed
//! validation (names resolve, types fit, numbers are in range, every query is planned), so
//! consumers never re-check it.

use serde::Deserialize;

use crate::core::plan::QueryPlan;
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
}

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
    /// Positive.
    pub tick: Nanos,
    /// Tuples per batch, at least 1.
    pub batch_size: usize,
    /// Tuples per query input queue, at least 1.
    pub queue_capacity: usize,
    pub scheduler: SchedulerKind,
    /// Simulated capacity in cores; positive.
    pub cores: f64,
}

impl Default for EngineSettings {
    fn default() -> EngineSettings {
        EngineSettings {
            mode: Mode::Live,
            workers: 1,
            tick: 100_000_000,
            batch_size: 1024,
            queue_capacity: 1_000_000,
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

/// A piecewise-linear utility function: at least one point, x strictly increasing,
/// utilities in `[0, 1]`; flat beyond the first and last points.
#[derive(Clone, Debug, PartialEq)]
pub struct UtilityCurve {
    pub points: Vec<(f64, f64)>,
}

impl UtilityCurve {
    /// The utility at `x`, interpolated linearly between the points.
    pub fn at(&self, x: f64) -> f64 {
        let p = &self.points;
        let Some(&(x0, u0)) = p.first() else {
            return 0.0;
        };
        if x <= x0 {
            return u0;
        }
        for w in p.windows(2) {
            let ((xa, ua), (xb, ub)) = (w[0], w[1]);
            if x <= xb {
                return ua + (ub - ua) * (x - xa) / (xb - xa);
            }
        }
        p[p.len() - 1].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utility_curve_interpolates_and_holds_its_ends() {
        let c = UtilityCurve {
            points: vec![(25.0, 0.1), (35.0, 1.0)],
        };
        assert_eq!(c.at(0.0), 0.1);
        assert!((c.at(30.0) - 0.55).abs() < 1e-12);
        assert_eq!(c.at(35.0), 1.0);
        assert_eq!(c.at(99.0), 1.0);
        let single = UtilityCurve {
            points: vec![(5.0, 0.5)],
        };
        assert_eq!(single.at(-1.0), 0.5);
        assert_eq!(single.at(10.0), 0.5);
    }
}
