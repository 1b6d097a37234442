//! What the shedder reads each control tick: one consistent snapshot of measured rates,
//! costs, queues and latencies, plus the policy. Plain data borrowed from the runtime;
//! the planner clamps every number it uses, so a bad measurement degrades a plan but never
//! panics.

use super::model::Rows;
use crate::qos::UtilityCurve;
use crate::qos::ValueHistogram;

/// How shed tuples are chosen: a closed set, matched exhaustively by the planner.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShedKind {
    /// Never shed: every plan keeps everything and reports `shedding: false`.
    #[default]
    None,
    /// The runtime's bounded queues drop what does not fit; plans keep everything but
    /// still report overload in `shedding`.
    TailDrop,
    /// Bernoulli drops at stream and query drop points (Aurora random drop).
    Random,
    /// Queries with a value QoS drop their lowest-utility value ranges first; the others
    /// drop at random.
    Semantic,
    /// Windowed aggregates keep or drop whole (key, window) groups; the others drop at
    /// random.
    WindowAware,
}

/// Policy numbers. Each field documents its valid range; the planner replaces a value
/// outside it by the nearest valid one (NaN by the default), so the config layer should
/// reject such values before they get here.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PolicyParams {
    pub kind: ShedKind,
    /// `H` in `(0, 1]`: share of capacity that query work may use; the rest is left for
    /// ingest, scheduling, statistics and the shedder. Default 0.9.
    pub headroom: f64,
    /// Fraction of queued work to drain per second, `>= 0`: queue load is
    /// `melt * sum c_q * queued_q`, so a backlog claims capacity until it is gone.
    /// Default 2: the model claims capacity to drain a backlog within about half a second,
    /// so a surge leaves latency above target for as short a time as possible.
    pub melt: f64,
    /// Cursor step in percent delivered, in `[0.1, 100]`. Smaller steps shed closer to
    /// the need but take more planning work (`100 / step` moves per query at most).
    /// Default 1.
    pub step: f64,
    /// Hysteresis: shedding stops only once the load is below `low * H * C * m`, in
    /// `(0, 1]`. Default 0.8.
    pub low: f64,
    /// Hysteresis: ... and only after that many consecutive calm ticks. Default 5.
    pub hold: u32,
    /// Feedback aims each latency at `setpoint * target`, in `(0, 1]`: aiming below the
    /// target leaves room for the controller's ripple, so steady state stays under the
    /// target. Default 0.8.
    pub setpoint: f64,
    /// Proportional gain of the latency feedback, `>= 0`. Default 0.3: enough damping that the integral action does not swing a backlog back and forth (a loop around an integrating plant needs it).
    pub kp: f64,
    /// Integral gain of the latency feedback, `>= 0`. Default 0.05. With `g = H * (true
    /// cost / model cost) * tick / latency target` (the loop's plant gain), the loop is
    /// stable and well damped for roughly `kp * g <= 0.5` and `ki * g <= 0.3`; the
    /// defaults fit `g` up to about 4 (a 100 ms tick, a 50 ms target, a model 2x off).
    pub ki: f64,
    /// Lowest correction `m`, in `(0, correction_max]`. Default 0.05: feedback may cut the
    /// model's capacity to 5 % but never to nothing, so the model keeps a say.
    pub correction_min: f64,
    /// Highest correction `m`, `> 0`. Default 1: feedback only tightens the model; above 1
    /// it could let the model admit more than `H * C` when latencies look good.
    pub correction_max: f64,
    /// Adaptive headroom: while shedding, the share of capacity handed out rises from
    /// `headroom` towards 1 as long as every latency has ample slack, and falls back at
    /// once when slack shrinks. Default true.
    pub adaptive_headroom: bool,
}

impl Default for PolicyParams {
    fn default() -> PolicyParams {
        PolicyParams {
            kind: ShedKind::Random,
            headroom: 0.9,
            melt: 2.0,
            step: 1.0,
            low: 0.8,
            hold: 5,
            setpoint: 0.8,
            kp: 0.3,
            ki: 0.05,
            correction_min: 0.05,
            correction_max: 1.0,
            adaptive_headroom: true,
        }
    }
}

/// `x` if finite and inside `[lo, hi]`, the nearest end if finite outside it, `default` if
/// NaN or infinite.
fn within(x: f64, lo: f64, hi: f64, default: f64) -> f64 {
    if x.is_finite() {
        x.clamp(lo, hi)
    } else {
        default
    }
}

impl PolicyParams {
    /// The same policy with every number inside its documented range.
    pub fn sanitized(&self) -> PolicyParams {
        let d = PolicyParams::default();
        let correction_max = within(self.correction_max, 1e-3, 1e3, d.correction_max);
        PolicyParams {
            kind: self.kind,
            headroom: within(self.headroom, 1e-3, 1.0, d.headroom),
            melt: within(self.melt, 0.0, 1e6, d.melt),
            step: within(self.step, 0.1, 100.0, d.step),
            low: within(self.low, 1e-3, 1.0, d.low),
            hold: self.hold,
            setpoint: within(self.setpoint, 1e-3, 1.0, d.setpoint),
            kp: within(self.kp, 0.0, 1e3, d.kp),
            ki: within(self.ki, 0.0, 1e3, d.ki),
            correction_min: within(self.correction_min, 1e-3, correction_max, d.correction_min)
                .min(correction_max),
            correction_max,
            adaptive_headroom: self.adaptive_headroom,
        }
    }
}

/// One stream's measurements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StreamInput {
    /// Tuples per second offered at the stream's drop point, before any drop (smoothed,
    /// e.g. an `Ewma`). Plans are computed from the unshed demand every tick.
    pub rate: f64,
    /// Engine work per tuple that passes the stream's drop point, ns: fanning it out to
    /// the stream's queries (their drop points and queues), before any query work. A drop at
    /// the stream's drop point saves it; a drop at a query's drop point does not. 0 when
    /// not measured (simulated runs charge no ingest).
    pub ingest: f64,
}

impl StreamInput {
    /// A stream offering `rate` tuples per second with no ingest work.
    pub fn at(rate: f64) -> StreamInput {
        StreamInput { rate, ingest: 0.0 }
    }
}

/// A query's value QoS, for semantic shedding.
#[derive(Clone, Copy, Debug)]
pub struct ValueQos<'a> {
    /// Column of the input stream the histogram bins (`ValueUtility::column`); copied into
    /// the `SemanticDrop` so the drop point knows which value to read.
    pub column: usize,
    /// That column's value histogram, built from the query's value-utility curve and fed
    /// with every tuple offered to the stream, before any drop.
    pub histogram: &'a ValueHistogram,
}

/// A latency target with its measurement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencyInput {
    /// The target, ns (`LatencyTarget::target`); not positive means no target.
    pub target: f64,
    /// The measured latency at the target's percentile over the recent window, ns;
    /// `None` when no result left in the window (nothing to judge by).
    pub measured: Option<f64>,
}

/// One query's measurements and QoS.
#[derive(Clone, Copy, Debug)]
pub struct QueryInput<'a> {
    /// Index of the stream it reads in `ShedInput::streams`; out of range reads as a
    /// silent stream (no load, never shed).
    pub stream: usize,
    /// Work per input tuple, ns (measured busy time per tuple, or the declared cost).
    /// A query of cost 0 saves nothing by shedding, so it is never shed.
    pub cost: f64,
    /// Tuples in its input queue.
    pub queued: f64,
    /// Work per emitted row beyond the per-tuple work (window closing, sinks), ns.
    pub row_cost: f64,
    /// Work per second it does whatever its input (as fitted), ns/s; already taken off
    /// `ShedInput::capacity`, so it only decides whether to pause the query.
    pub fixed: f64,
    /// Rows per second it emits now, measured at keep fraction `keep_now`.
    pub rows: f64,
    /// The share of its stream's offered tuples it received when `rows` was measured.
    pub keep_now: f64,
    /// How its rows follow its keep fraction.
    pub rows_shape: Rows,
    /// Whether it groups by plain columns, so whole keys can be dropped.
    pub keys: bool,
    /// Loss-tolerance graph, points ascending in percent delivered; `None`: linear from
    /// (0, 0) to (100, 1).
    pub loss: Option<&'a UtilityCurve>,
    /// Importance, `> 0` (1 if not); losses are multiplied by it.
    pub weight: f64,
    /// Never shed this query (it relies on flow control instead).
    pub lossless: bool,
    /// Value QoS, used when the policy is `Semantic`.
    pub value: Option<ValueQos<'a>>,
    /// Whether the query is a windowed aggregate, where `WindowAware` drops whole windows.
    pub windowed: bool,
    /// Latency target and measurement, if the query has a target.
    pub latency: Option<LatencyInput>,
    /// For a grouped window shed to (almost) nothing: its last informative emission, what
    /// re-admitting it at a small keep costs (its own `rows` have faded to 0). The
    /// allocation prices the keeps it chooses with it; the demand at keep 1 does not.
    pub remembered: Option<Emission>,
}

/// A query's emission as last measured: rows per second at keep fraction `keep`, and ns of
/// work per row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Emission {
    pub rows: f64,
    pub keep: f64,
    pub row_cost: f64,
}

impl QueryInput<'_> {
    /// A query on `stream` with cost `cost` and every other field at its neutral value:
    /// empty queue, default loss curve, weight 1, sheddable, no value QoS, not windowed,
    /// no latency target.
    pub fn new(stream: usize, cost: f64) -> QueryInput<'static> {
        QueryInput {
            stream,
            cost,
            queued: 0.0,
            row_cost: 0.0,
            fixed: 0.0,
            rows: 0.0,
            keep_now: 1.0,
            rows_shape: Rows::Linear,
            keys: false,
            loss: None,
            weight: 1.0,
            lossless: false,
            value: None,
            windowed: false,
            latency: None,
            remembered: None,
        }
    }
}

/// The whole snapshot for one control tick.
#[derive(Clone, Debug)]
pub struct ShedInput<'a> {
    /// Streams, indexed as the engine indexes them; `ShedPlan::streams` follows this order.
    pub streams: Vec<StreamInput>,
    /// Queries, indexed as the engine indexes them; `ShedPlan::queries` follows this order.
    pub queries: Vec<QueryInput<'a>>,
    /// `C`: ns of work per second the engine can do, `cores * 1e9`.
    pub capacity: f64,
    /// The load model checked over the last tick: `(arrived - predicted) / predicted` work
    /// (`None` when not known). The model is refitted only when it under-predicted.
    pub model_error: Option<f64>,
    /// The backlog's trend over the last ticks (`None` until enough ticks were seen, or
    /// when the runtime does not measure it).
    pub backlog: Option<BacklogInput>,
    /// Engine work per second that went unused over the last tick, ns/s: time waiting for
    /// input with every queue empty (0 when not measured). While shedding, it is capacity
    /// the plan's model priced as used (`ShedPlan::lift`).
    pub idle: f64,
    pub policy: PolicyParams,
}

/// The queued work's floor and its growth, as the runtime measured them: the least queued
/// work (every query's depth times its cost per tuple) over the last few ticks, and how
/// fast that floor rose against the few ticks before. A floor rather than the depth at one
/// tick, whose swings follow when a source's batch landed: the floor rises only when the
/// engine falls behind what it admits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BacklogInput {
    /// ns of work queued at the floor.
    pub floor: f64,
    /// ns of work per second the floor grew by (negative: it shrank).
    pub growth: f64,
}
