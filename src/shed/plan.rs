//! What the shedder hands the runtime each tick: a keep fraction per stream drop point and a
//! drop per query drop point. Invariant: a query's effective keep (stream keep times its own
//! expected keep) equals its planned delivered fraction, wherever the drop was placed.

use crate::qos::Binning;

/// The settings of every drop point, plus what the planner expects of them.
#[derive(Clone, Debug, PartialEq)]
pub struct ShedPlan {
    /// Keep probability at each stream's drop point, in `[0, 1]` (1 keeps everything);
    /// a tuple dropped here reaches none of the stream's queries.
    pub streams: Vec<f64>,
    /// The drop at each query's drop point, applied to tuples the stream kept.
    pub queries: Vec<QueryDrop>,
    /// Planned share of its stream's offered tuples each query receives, in `[0, 1]`
    /// (percent-delivery cursor / 100). For random drops it is the sampling rate to scale
    /// SUM and COUNT by (Horvitz-Thompson); semantic and window drops are not uniform
    /// samples and must not be scaled.
    pub delivered: Vec<f64>,
    /// Expected utility of each query at its delivered fraction, in `[0, 1]` (its
    /// loss-tolerance graph, or for a semantic drop the share of value utility kept);
    /// not weighted.
    pub utility: Vec<f64>,
    /// `sum w_q * utility_q / sum w_q`; 1 when there are no queries.
    pub weighted_utility: f64,
    /// `T`: model load of the unshed demand, ns of work per second (stream plus queue load).
    pub load: f64,
    /// `H * C * m`: the load the plan aims at.
    pub target: f64,
    /// `T - target`; negative when there is room to spare.
    pub excess: f64,
    /// Model load once this plan is installed (per-tuple and per-row work at the planned
    /// keeps, plus queue load): `target` minus less than one step's gain when shedding
    /// covered the excess ("enough, not more"). The monitor checks it against the
    /// measured work of the next tick.
    pub expected_load: f64,
    /// Work per second the admitted input brings under this plan (`expected_load`
    /// without the queue's melt): what the monitor checks against the work that arrived.
    pub expected_input: f64,
    /// Ingest work per second under this plan, ns/s: tuples passing the stream drop points
    /// times their fan-out cost (`StreamInput::ingest`). Part of `load` and
    /// `expected_load`, not of `expected_input`.
    pub ingest: f64,
    /// Excess that shedding could not cover (lossless queries, queue load alone above the
    /// target); 0 when the plan is enough.
    pub unmet: f64,
    /// The feedback correction `m` this plan used.
    pub correction: f64,
    /// Whether the shedder is in its shedding state (hysteresis). A shedding plan may still
    /// keep everything when the excess is not positive.
    pub shedding: bool,
    /// The share of capacity handed out this tick (the policy's `H`, raised by adaptive
    /// headroom while latencies have slack).
    pub headroom: f64,
    /// The idle lift this plan used: the target's factor for capacity the engine was seen
    /// to leave unused under earlier shedding plans (1 until it was).
    pub lift: f64,
    /// The rise limit (`KEEP_RISE`) held at least one keep under what the allocation
    /// wanted, and it held every keep under 1 that a larger target could raise (not
    /// paused, not lossless): the keeps are climbing a step a tick, a larger target would
    /// change nothing this tick, and idle time under the plan is the climb's, not the
    /// model's prices'. False when no keep was held.
    pub rising: bool,
    /// The factor the load model's costs are multiplied by (1 until a refit).
    pub model_scale: f64,
    /// Set on the tick the model was refitted because the correction sat at a bound: the
    /// new `model_scale`.
    pub refit: Option<f64>,
    /// Dropping input tuples could not bring the load under the target: work that does
    /// not shrink with the input (emitting window rows) is too large. The plan then uses
    /// whole-window drops or pauses queries (`paused`).
    pub input_insufficient: bool,
    /// Queries paused (keep 0) because dropping their input alone was not enough, lowest
    /// utility per unit of load first; never a lossless query.
    pub paused: Vec<usize>,
}

impl ShedPlan {
    /// A plan that drops nothing.
    pub fn keep_all(streams: usize, queries: usize) -> ShedPlan {
        ShedPlan {
            streams: vec![1.0; streams],
            queries: vec![QueryDrop::KeepAll; queries],
            delivered: vec![1.0; queries],
            utility: vec![1.0; queries],
            weighted_utility: 1.0,
            load: 0.0,
            target: 0.0,
            excess: 0.0,
            expected_load: 0.0,
            expected_input: 0.0,
            ingest: 0.0,
            unmet: 0.0,
            correction: 1.0,
            shedding: false,
            headroom: 1.0,
            lift: 1.0,
            rising: false,
            model_scale: 1.0,
            refit: None,
            input_insufficient: false,
            paused: Vec::new(),
        }
    }

    /// Whether any drop point drops anything.
    pub fn drops_any(&self) -> bool {
        self.streams.iter().any(|&k| k < 1.0)
            || self
                .queries
                .iter()
                .any(|q| !matches!(q, QueryDrop::KeepAll))
    }
}

/// The setting of one query's drop point.
#[derive(Clone, Debug, PartialEq)]
pub enum QueryDrop {
    /// Drop nothing.
    KeepAll,
    /// Keep each tuple with probability `keep` in `[0, 1)`.
    Random { keep: f64 },
    /// Keep each tuple with the probability of its value's bin.
    Semantic(SemanticDrop),
    /// Keep each (key, window) group with probability `keep` in `[0, 1)`: the runtime
    /// decides once per group and keeps or drops all its tuples, so every emitted window
    /// is exact. Planned as if it saved `1 - keep` of the query's work (exact for tumbling
    /// windows; less for sliding windows, whose tuples belong to several windows).
    Window { keep: f64 },
    /// Keep the tuples of a stable share `keep` of the query's keys: for grouped window
    /// aggregates whose emitted rows do not shrink with a random drop (sliding windows
    /// over many keys); rows then shrink with the keep. Not scaled.
    Keys { keep: f64 },
}

impl QueryDrop {
    /// A random drop, or `KeepAll` when `keep` rounds to 1.
    pub fn random(keep: f64) -> QueryDrop {
        if keep >= 1.0 - 1e-12 {
            QueryDrop::KeepAll
        } else {
            QueryDrop::Random {
                keep: keep.max(0.0),
            }
        }
    }

    /// A window drop, or `KeepAll` when `keep` rounds to 1.
    pub fn window(keep: f64) -> QueryDrop {
        if keep >= 1.0 - 1e-12 {
            QueryDrop::KeepAll
        } else {
            QueryDrop::Window {
                keep: keep.max(0.0),
            }
        }
    }
}

/// A value-based drop: keep probability per bin of a `ValueHistogram`-compatible binning.
/// Per tuple: read `column`, `keep_probability(value)` (two comparisons, a division and an
/// index: O(1), no allocation), keep iff a uniform draw in `[0, 1)` is below it.
#[derive(Clone, Debug, PartialEq)]
pub struct SemanticDrop {
    /// Column of the input stream whose value decides.
    pub column: usize,
    /// The binning of the query's value histogram.
    pub binning: Binning,
    /// Keep probability per bin (`binning.len()` entries): 0 for the lowest-utility bins,
    /// one partial value at the boundary, 1 above it.
    pub keep: Vec<f64>,
    /// Expected share of tuples kept, by the histogram's frequencies.
    pub delivered: f64,
}

impl SemanticDrop {
    /// Keep probability of a tuple whose column holds `v` (NaN falls in the underflow bin).
    #[inline]
    pub fn keep_probability(&self, v: f64) -> f64 {
        self.keep
            .get(self.binning.bin_of(v))
            .copied()
            .unwrap_or(1.0)
    }
}
