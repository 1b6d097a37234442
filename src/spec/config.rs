//! The workload file format, part one: the document, the engine, streams and queries, as
//! serde structs that mirror the YAML one to one and deny unknown fields. These doc comments
//! are the reference for the format; `distribution.rs` continues it with rates and field
//! distributions. Nothing here is validated beyond its shape: `build` does that.
//!
//! ```yaml
//! name: quickstart
//! seed: 42
//! duration: 10s
//! engine: {mode: live, workers: 1, tick: 100ms, batch_size: 1024, scheduler: round-robin}
//! streams:
//!   readings:
//!     schema: {sensor: int, temp: float, ts: timestamp}
//!     event_time: ts
//!     source:
//!       generator:
//!         rate: 50000
//!         fields:
//!           sensor: {zipf: {n: 1000, s: 1.1}}
//!           temp: {normal: {mean: 20, stddev: 5}}
//! queries:
//!   hot:
//!     sql: SELECT sensor, temp FROM readings WHERE temp > 25
//!     qos: {latency: {p99: 100ms}, weight: 2}
//!     sink: {jsonl: out/hot.jsonl}
//! ```

use serde::Deserialize;

use super::config_io::{NexmarkConfig, ReplayConfig, TcpConfig};
use super::de_named::NamedMap;
use super::distribution::{FieldConfig, RateConfig};
use super::duration::DurationConfig;
use super::workload::Mode;

/// A workload file: the streams to generate, the continuous queries over them, and how to
/// run them.
///
/// Durations anywhere in the file are strings such as `250us`, `500ms`, `10s`, `2m`, `1h`
/// (also `ns`, and decimals like `1.5s`), or plain numbers of seconds.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadConfig {
    /// Required. The workload's name, shown in status lines and reports.
    pub name: String,
    /// Seed of every random generator (default 0). Stream number `i` (from 0, in file
    /// order) draws from `generator::mix_seed(seed, i)`, and each of its fields from its
    /// own generator seeded with that stream seed mixed with the field's position. The same
    /// file therefore yields the same tuples on every run, and editing one stream or field
    /// leaves the values of the others unchanged.
    #[serde(default)]
    pub seed: u64,
    /// How long a run lasts, e.g. `60s` (default: until stopped or until every stream is
    /// exhausted). `spillway run --duration` overrides it.
    #[serde(default)]
    pub duration: Option<DurationConfig>,
    /// How the engine runs; every setting has a default.
    #[serde(default)]
    pub engine: EngineConfig,
    /// Required, at least one. The input streams by name, in the order they are created.
    /// Names are SQL identifiers (letters, digits and `_`, not starting with a digit) and
    /// are case-insensitive, as SQL names are.
    pub streams: NamedMap<StreamConfig>,
    /// Required, at least one. The continuous queries by name.
    pub queries: NamedMap<QueryConfig>,
    /// Path of a load-shedding policy file, kept as written (default: no shedding).
    #[serde(default)]
    pub policy: Option<String>,
    /// What `spillway experiment` compares when its command line does not say.
    #[serde(default)]
    pub experiment: Option<ExperimentConfig>,
    /// Changes to the query set while the workload runs (see `config_changes`).
    #[serde(default)]
    pub changes: Vec<super::config_changes::ChangeConfig>,
}

/// `experiment:` the policies `spillway experiment` runs side by side, and how often.
/// The command's `--policies` and `--repeat` override these.
///
/// ```yaml
/// experiment: {policies: [none, random, semantic], repeat: 3}
/// ```
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentConfig {
    /// Policies to compare, at least one: a built-in kind (`none`, `tail-drop`, `random`,
    /// `semantic`, `window-aware`, with default settings) or a policy file path ending in
    /// `.yaml` (relative to the workload file). Default: `none, random, semantic`.
    #[serde(default)]
    pub policies: Option<Vec<String>>,
    /// Runs per policy, each with the next seed, 1 to 1000 (default 1). With more than one
    /// the report gives the mean and the standard deviation.
    #[serde(default)]
    pub repeat: Option<u32>,
}

/// `engine.workers`: a number of workers, or `auto` (see `EngineConfig::workers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkersConfig {
    Count(u64),
    Auto,
}

impl<'de> Deserialize<'de> for WorkersConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(WorkersVisitor)
    }
}

struct WorkersVisitor;

impl serde::de::Visitor<'_> for WorkersVisitor {
    type Value = WorkersConfig;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a number of workers (1 to 64) or `auto`")
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<WorkersConfig, E> {
        Ok(WorkersConfig::Count(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<WorkersConfig, E> {
        u64::try_from(v)
            .map(WorkersConfig::Count)
            .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<WorkersConfig, E> {
        match v {
            "auto" => Ok(WorkersConfig::Auto),
            _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
        }
    }
}

/// `engine:` how the engine runs.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    /// `live` (default): real time, real sources. `simulated`: virtual time driven by the
    /// per-tuple `cost` of each query, reproducible bit for bit.
    #[serde(default)]
    pub mode: Option<Mode>,
    /// Engine worker threads, 1 to 64, or `auto` (default 1). With N > 1 (live runs), each
    /// worker runs its own engine and controller on one core; a query grouped by a plain
    /// column is split over all workers by key (64 key shards), any other query runs whole
    /// on one worker. Results are the same as with one worker (see docs/workers.md).
    /// `auto`: live, the available cores minus one per stream (its source thread), at
    /// least 1; simulated, `capacity.cores` rounded down, at least 1 (so a simulated run
    /// stays the same on every machine).
    #[serde(default)]
    pub workers: Option<WorkersConfig>,
    /// How often sources emit what is due and the engine checks windows and load
    /// (default `100ms`). Shorter ticks mean smoother input, lower latency and a faster
    /// reaction to surges, at more overhead. At least `1ms`.
    #[serde(default)]
    pub tick: Option<DurationConfig>,
    /// Tuples per batch, 1 to 1048576 (default 1024). Larger batches amortise per-batch
    /// costs; smaller ones lower latency.
    #[serde(default, deserialize_with = "super::count::opt")]
    pub batch_size: Option<usize>,
    /// Live runs: result rows a tumbling window's close emits in one scheduler turn, at
    /// least 1 (default 16384; sliding windows computed by slices close whole). The rest of a large close is emitted by that query's next turns,
    /// other queries running in between: smaller steps keep tight-target queries waiting
    /// less, larger ones let the closing query's rows out sooner.
    #[serde(default, deserialize_with = "super::count::opt")]
    pub close_step: Option<usize>,
    /// Live runs, round-robin scheduler: engine time each query with work gets a round
    /// (default `1ms`; `10us` to `1s`). A query whose turns are long (a close step, a batch
    /// of a costly aggregate) then waits a few rounds while cheap queries drain their
    /// queues, rather than each getting one batch a round. `0` gives a turn a round.
    #[serde(default)]
    pub turn_quantum: Option<DurationConfig>,
    /// Capacity of each query's input queue in tuples, at least 1 (default 1000000). A full
    /// queue drops arriving tuples (counted as `QueueFull`), so this bounds memory and
    /// queueing delay. Queries whose QoS says `lossless` have unbounded queues.
    #[serde(default, deserialize_with = "super::count::opt")]
    pub queue_capacity: Option<usize>,
    /// What all input queues together may hold in memory (default `64MiB`, at least
    /// `1MiB`): a size such as `64MiB`, `1GB` or a number of bytes. Queues share batches,
    /// so a batch several queries hold counts once. Past the budget, a batch no queue holds
    /// yet is refused as queue-full, except by a query whose queue is empty and by
    /// lossless queries. With N workers each holds a 1/N share.
    #[serde(default)]
    pub queue_memory: Option<bytesize::ByteSize>,
    /// Which query runs next: `round-robin` (default, each query with work in turn),
    /// `longest-queue` (the most queued tuples), or `qos` (the least latency slack relative
    /// to the query's `qos.latency` target, divided by its `qos.weight`).
    #[serde(default)]
    pub scheduler: Option<SchedulerConfig>,
    /// Simulated mode only: the processing capacity, e.g. `{cores: 1}` (default 1 core; at
    /// least 0.001).
    /// Each scheduler turn takes `tuples x cost / cores` of virtual time.
    #[serde(default)]
    pub capacity: Option<CapacityConfig>,
    /// The most queries the workload may register, at least 1 (default 10000). Each idle
    /// query costs a few KB and each active one about 100 KB of latency histograms, so
    /// this bounds what a file can make the engine allocate.
    #[serde(default, deserialize_with = "super::count::opt")]
    pub max_queries: Option<usize>,
}

/// `engine.capacity`: how much processing a simulated run has.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityConfig {
    /// Cores, positive; fractions model a share of a core.
    pub cores: f64,
}

/// `engine.scheduler`: the scheduling policy, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchedulerConfig {
    RoundRobin,
    LongestQueue,
    Qos,
}

/// `streams.<name>:` one input stream: its schema and where its tuples come from.
///
/// The source is a `source:` block (`source: {generator: {rate: 1000}}`). The flat form of
/// earlier files, `rate`, `count` and `fields` directly on the stream, stays accepted as
/// shorthand for `source: {generator: {rate, count, fields}}`; a stream may use one form or
/// the other, not both.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamConfig {
    /// Required. The fields in order, as a mapping from field name to type: `int` (64-bit
    /// signed), `float` (64-bit), `string`, `bool` or `timestamp` (nanoseconds since the
    /// Unix epoch), e.g. `{sensor: int, temp: float, ts: timestamp}`. Field names follow the
    /// same rules as stream names.
    pub schema: NamedMap<String>,
    /// The timestamp field that carries event time, which event-time windows use and which
    /// lateness is measured against (default: none; windows then use arrival time).
    #[serde(default)]
    pub event_time: Option<String>,
    /// Where the stream's tuples come from, and whether that source can be slowed down.
    #[serde(default)]
    pub source: Option<SourceConfig>,
    /// Shorthand for `source.generator.count`.
    #[serde(default)]
    pub count: Option<u64>,
    /// Shorthand for `source.generator.rate`.
    #[serde(default)]
    pub rate: Option<RateConfig>,
    /// Shorthand for `source.generator.fields`.
    #[serde(default)]
    pub fields: Option<NamedMap<FieldConfig>>,
    /// Keep the stream's recent history in memory, as ingested (before any shedding), so
    /// an ad-hoc query (`POST /queries` with `"mode": "ad-hoc"`) can run over it: see
    /// `RetainConfig` (default: none kept).
    #[serde(default)]
    pub retain: Option<RetainConfig>,
}

/// `streams.<name>.retain:` how much recent history to keep: `{last: 5s}` (the rows that
/// arrived in the last 5 s), `{tuples: 100000}` (the last 100000 rows), or both (whichever
/// keeps fewer). History is bounded in memory: `last` alone also keeps at most 1000000
/// rows, and `tuples` may not exceed 10000000. Memory is about (8 + 8 per field) bytes a
/// row; the status and metrics report what is held.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetainConfig {
    /// Keep rows that arrived at most this long ago, e.g. `5s`.
    #[serde(default)]
    pub last: Option<DurationConfig>,
    /// Keep at most this many rows.
    #[serde(default)]
    pub tuples: Option<u64>,
}

/// `streams.<name>.source:` exactly one kind of source (`generator`, `tcp`, `replay` or
/// `nexmark`), plus how it meets a full engine and how long it may stay silent.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// Tuples drawn from seeded distributions at a rate profile.
    #[serde(default)]
    pub generator: Option<GeneratorConfig>,
    /// Lines from TCP connections: see `TcpConfig`.
    #[serde(default)]
    pub tcp: Option<TcpConfig>,
    /// Lines of a file, replayed: see `ReplayConfig`.
    #[serde(default)]
    pub replay: Option<ReplayConfig>,
    /// One stream of the Nexmark auction benchmark: see `NexmarkConfig`.
    #[serde(default)]
    pub nexmark: Option<NexmarkConfig>,
    /// `push`: the producer cannot be slowed; when the engine's queues are full the
    /// overflow is shed or counted as `queue-full` (sensors, sockets, paced generators).
    /// `pull`: the source waits while the queues of the stream's queries are full, so
    /// nothing is lost and memory stays bounded (replays, benchmark firehoses).
    /// Default: `push` for `tcp` and paced sources; `pull` for an `unlimited` generator or
    /// nexmark stream and for a `replay` without `timestamps` or `rate`.
    #[serde(default)]
    pub flow: Option<FlowConfig>,
    /// A source whose frontier (the arrival time below which it will send nothing more)
    /// has not moved for this long is idle: it stops holding arrival-time windows of other
    /// streams back, as Flink's source idleness does (default 1s). Tuples it sends later
    /// below the engine's frontier count as late.
    #[serde(default)]
    pub idle_timeout: Option<DurationConfig>,
}

/// `source.flow:` see `SourceConfig::flow`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowConfig {
    Push,
    Pull,
}

/// `source.generator:` a seeded generator.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorConfig {
    /// Stop after this many tuples, at least 1 (default: endless).
    #[serde(default)]
    pub count: Option<u64>,
    /// Required. Offered load in tuples per second over time: see `RateConfig`.
    pub rate: RateConfig,
    /// How each field's values are drawn, by field name: see `FieldConfig`. Fields not
    /// listed use their type's default: ints uniform in `0..=1000`, floats uniform in
    /// `[0, 1)`, strings one of `a`, `b`, `c`, bools a fair coin, timestamps `now`.
    #[serde(default)]
    pub fields: NamedMap<FieldConfig>,
}

/// `queries.<name>:` one continuous query.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryConfig {
    /// Required. The query text; reads one stream. Use a block scalar (`sql: |`) for
    /// queries over several lines; errors point into it.
    pub sql: String,
    /// Quality-of-service targets and utilities (default: none, weight 1).
    #[serde(default)]
    pub qos: Option<QosConfig>,
    /// Processing cost per input tuple, e.g. `180ns`, used by simulated mode to advance
    /// virtual time (measure it with `spillway calibrate`). Must be positive.
    #[serde(default)]
    pub cost: Option<DurationConfig>,
    /// Where results go: `stdout` (default, one JSON object per line), `none` (discarded,
    /// still counted), `{jsonl: path}` (a file of JSON lines; the path is relative to the
    /// working directory), or `{tcp: {connect: IP:port}}` (JSON lines to a TCP listener,
    /// reconnecting with backoff; see `TcpSinkConfig`).
    #[serde(default)]
    pub sink: Option<SinkConfig>,
}

/// `queries.<name>.qos:` what good service means for a query; the scheduler and the load
/// shedder trade queries off with it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QosConfig {
    /// Latency target as one percentile and a duration, e.g. `{p99: 100ms}`: that share of
    /// results should leave within the duration of their input's arrival. Keys are `p50`,
    /// `p90`, `p95`, `p99`, `p999` (99.9), or any `pNN.N` up to `p100`.
    #[serde(default)]
    pub latency: Option<NamedMap<DurationConfig>>,
    /// Utility of delivering a share of the results, as `[percent delivered, utility]`
    /// points from 100 down to 0, e.g. `[[100, 1.0], [50, 0.7], [0, 0.0]]`. Percentages are
    /// in `[0, 100]` and strictly decreasing, utilities in `[0, 1]` and non-increasing;
    /// between points the utility is linear, beyond the ends it holds the end value. A
    /// query whose utility falls slowly is a good candidate for shedding.
    #[serde(default)]
    pub loss_tolerance: Option<Vec<(f64, f64)>>,
    /// Utility of a tuple by the value of one numeric input field, for semantic shedding:
    /// tuples of low utility are dropped first.
    #[serde(default)]
    pub value: Option<ValueConfig>,
    /// Importance relative to other queries, positive (default 1).
    #[serde(default)]
    pub weight: Option<f64>,
    /// `true`: zero loss tolerance: the shedder never drops this query's input (it sheds
    /// other queries more, or reports that the target cannot be met). Default false.
    #[serde(default)]
    pub lossless: Option<bool>,
}

/// `qos.value:` utility by field value.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueConfig {
    /// A numeric (int, float or timestamp) field of the query's input stream.
    pub field: String,
    /// `[field value, utility]` points with strictly increasing values and utilities in
    /// `[0, 1]`, e.g. `[[25, 0.1], [35, 1.0]]`; linear in between, flat beyond the ends.
    pub utility: Vec<(f64, f64)>,
}

/// `queries.<name>.sink:` where results go.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SinkConfig {
    Stdout,
    Jsonl(String),
    None,
    Tcp(super::sink_io::TcpSinkConfig),
}
