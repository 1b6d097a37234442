//! What the QoS monitor publishes at each tick: per-query and per-stream figures and the
//! engine counters they came from. Plain data: every field is computed by `Monitor::tick`
//! from one engine snapshot, and two snapshots compare equal only if every figure does.

use crate::core::schema::Nanos;
use crate::core::stats::EngineSnapshot;
use crate::qos::Binning;

/// One query as the monitor sees it at a tick.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryQos {
    pub name: String,
    pub stream: usize,
    /// Tuples per second processed by the pipeline, over the sliding window.
    pub rate_in: f64,
    /// Result rows per second, over the sliding window.
    pub rate_out: f64,
    /// Queued tuples and the age of the oldest one (input queueing delay, ns).
    pub queued: usize,
    pub queue_delay: Nanos,
    /// Processing cost per input tuple, ns, and work per second independent of the input
    /// (closing windows), ns/s: a least-squares fit of busy time against tuples per tick.
    pub cost: f64,
    pub fixed_cost: f64,
    /// Work per emitted row beyond the per-tuple work (window closing, sinks), ns; 0 when
    /// the fit cannot tell rows from tuples.
    pub row_cost: f64,
    /// Work per tuple that reached the query's stream past its drop point, whatever the
    /// query's own keep (its drop point, loss accounting), ns; only a stream drop saves
    /// it. 0 when the fit cannot tell it from the per-tuple work.
    pub passed_cost: f64,
    /// Result rows per second over the last `qos::SPAN_TICKS` ticks (rows closing every
    /// few ticks read as their mean; one odd tick moves it by its share of the span).
    pub row_rate: f64,
    /// Results per processed tuple.
    pub selectivity: f64,
    /// Result latency percentiles over the sliding window (ns).
    pub p50: Nanos,
    pub p99: Nanos,
    /// Latency at the QoS target's percentile over the last two ticks, or the queueing
    /// delay of the oldest queued tuple if larger (a backlog shows before its results do):
    /// the shedder's feedback signal.
    pub latency: Option<Nanos>,
    pub target: Option<Nanos>,
    /// Share of offered tuples that reached the pipeline over the last tick (EWMA).
    pub delivered: f64,
    /// Utility from the loss-tolerance graph at `delivered` (1 without QoS).
    pub utility: f64,
    /// Tuples shed so far (all drop points and reasons, queue-full excluded).
    pub shed: u64,
    pub queue_full: u64,
    /// The query was removed: its figures are final.
    pub removed: bool,
    /// The value histogram of the query's value-QoS field (decayed counts per bin of the
    /// binning, under- and overflow bins included), for dashboards; `None` without one.
    pub values: Option<(Binning, Vec<f64>)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StreamQos {
    pub name: String,
    /// Offered tuples per second (before any drop).
    pub rate: f64,
}

/// Everything the monitor knows at one tick.
#[derive(Clone, Debug, PartialEq)]
pub struct QosSnapshot {
    pub at: Nanos,
    pub streams: Vec<StreamQos>,
    pub queries: Vec<QueryQos>,
    /// Busy share of the engine over the last tick, 0..1 (can exceed 1 with several cores).
    pub busy: f64,
    /// Engine work outside query turns (ingest, fan-out), ns per second, smoothed and
    /// raised at once by a rise of the offered input (ingest scales with it).
    pub overhead: f64,
    /// Ingest cost per offered tuple, ns (smoothed engine overhead over the smoothed
    /// offered rate): what every offered tuple costs even when a drop point discards it
    /// for every query. A drop at a query's drop point saves that query's work only;
    /// `overhead` is this cost at the current offered rate.
    pub ingest_cost: f64,
    /// The same work fitted as `overhead_fixed + fan_out_cost * tuples` per second, where
    /// the tuples are those past the stream drop points: ns of fan-out per tuple a stream
    /// drop saves, and ns/s no drop saves (control ticks, and the stream drop decision for
    /// every tuple offered, at the current offered rate).
    pub fan_out_cost: f64,
    pub overhead_fixed: f64,
    /// Engine time spent waiting for input with nothing queued, ns per second of the tick:
    /// capacity the plan in force left unused (the simulated engine counts the virtual time
    /// it jumped over with empty queues; 0 where it is not measured).
    pub idle: f64,
    /// Ticks whose ledger did not balance (0 unless there is a bug).
    pub violations: u64,
    /// The load model checked against what happened: `(measured - predicted) / predicted`
    /// query work over this tick, where the prediction is the previous plan's expected
    /// load (capped at capacity); `None` before the first plan or when nothing was
    /// predicted. Filled by the control loop, which owns the plan.
    pub model_error: Option<f64>,
    /// `|model_error|` over the run's shedding ticks so far, weighted by each tick's
    /// predicted load: the sum of |arrived - predicted| over the sum of predicted work.
    pub model_error_mean: Option<f64>,
    /// The engine counters this snapshot was computed from.
    pub engine: EngineSnapshot,
}
