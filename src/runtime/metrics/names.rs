//! Every metric name Spillway exports, in one place: `spillway_` prefix, base units in the
//! name (`_seconds`, `_ratio`, `_tuples`), `_total` on counters. Labels come only from the
//! bounded set in `labels` (a stream, a query, a drop point, a reason, a policy), never
//! from a key or a value. docs/metrics.md describes each; a test keeps the two in step.

/// The label names a metric may carry.
pub mod labels {
    pub const STREAM: &str = "stream";
    pub const QUERY: &str = "query";
    /// `stream` (the stream's drop point), `query` (the query's), `queue` (its input queue).
    pub const POINT: &str = "point";
    /// A `DropReason` label: `shed-random`, `shed-semantic`, `shed-window`, `queue-full`.
    pub const REASON: &str = "reason";
    pub const POLICY: &str = "policy";
    /// Only on `spillway_build_info`.
    pub const VERSION: &str = "version";
}

// Run and engine.
pub const BUILD_INFO: &str = "spillway_build_info";
pub const RUN_ELAPSED: &str = "spillway_run_elapsed_seconds";
pub const RUN_ENDED: &str = "spillway_run_ended";
pub const TICKS: &str = "spillway_control_ticks_total";
pub const DEMAND: &str = "spillway_engine_demand_ratio";
pub const CAPACITY_TARGET: &str = "spillway_engine_capacity_target_ratio";
pub const EXPECTED_LOAD: &str = "spillway_engine_expected_load_ratio";
pub const UNMET: &str = "spillway_engine_unmet_demand_ratio";
pub const BUSY: &str = "spillway_engine_busy_ratio";
pub const OVERHEAD: &str = "spillway_engine_overhead_ratio";
pub const QUEUED_BYTES: &str = "spillway_engine_queued_bytes";
pub const SHEDDING: &str = "spillway_engine_shedding";
pub const CORRECTION: &str = "spillway_engine_feedback_correction";
pub const WEIGHTED_UTILITY: &str = "spillway_engine_weighted_utility_ratio";
pub const LEDGER_VIOLATIONS: &str = "spillway_ledger_violations_total";

// Per stream.
pub const STREAM_INGESTED: &str = "spillway_stream_ingested_tuples_total";
pub const STREAM_MALFORMED: &str = "spillway_stream_malformed_total";
pub const STREAM_SHED: &str = "spillway_stream_shed_tuples_total";
pub const STREAM_KEEP: &str = "spillway_stream_keep_ratio";
pub const STREAM_RATE: &str = "spillway_stream_offered_rate_tuples_per_second";
pub const STREAM_RETAINED: &str = "spillway_stream_retained_tuples";
pub const STREAM_RETAINED_BYTES: &str = "spillway_stream_retained_bytes";
pub const STREAM_RETAINED_EVICTED: &str = "spillway_stream_retained_evicted_tuples_total";

// Per query.
pub const QUERY_OFFERED: &str = "spillway_query_offered_tuples_total";
pub const QUERY_PROCESSED: &str = "spillway_query_processed_tuples_total";
pub const QUERY_RESULTS: &str = "spillway_query_results_total";
pub const QUERY_LATE: &str = "spillway_query_late_tuples_total";
pub const QUERY_SHED: &str = "spillway_query_shed_tuples_total";
pub const QUERY_QUEUED: &str = "spillway_query_queued_tuples";
pub const QUERY_OLDEST_AGE: &str = "spillway_query_oldest_queued_age_seconds";
pub const QUERY_LATENCY: &str = "spillway_query_latency_seconds";
pub const QUERY_TARGET: &str = "spillway_query_latency_target_seconds";
pub const QUERY_CONTROL_LATENCY: &str = "spillway_query_control_latency_seconds";
pub const QUERY_KEEP: &str = "spillway_query_keep_ratio";
pub const QUERY_DELIVERED: &str = "spillway_query_delivered_ratio";
pub const QUERY_UTILITY: &str = "spillway_query_utility_ratio";
pub const QUERY_VIOLATING: &str = "spillway_query_violating";
pub const QUERY_VIOLATION_SECONDS: &str = "spillway_query_violation_seconds";
pub const QUERY_VIOLATIONS: &str = "spillway_query_violation_episodes_total";
pub const QUERY_LEDGER_GAP: &str = "spillway_query_ledger_gap_tuples";

/// Upper bounds (seconds) of the latency histogram's buckets: 0.5 ms to 30 s, dense
/// around the usual targets (10 ms .. 2 s).
pub const LATENCY_BUCKETS: [f64; 19] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0,
    1.5, 2.5, 10.0, 30.0,
];

/// Every exported name with its help text, in exposition order; the exporter describes
/// them from this list and docs/metrics.md must mention each.
pub const ALL: &[(&str, &str)] = &[
    (
        BUILD_INFO,
        "Always 1; labels say the Spillway version and the run's policy.",
    ),
    (
        RUN_ELAPSED,
        "Run time so far (virtual time for simulated runs).",
    ),
    (
        RUN_ENDED,
        "1 once the run has ended and the figures are final, else 0.",
    ),
    (TICKS, "Control ticks taken."),
    (
        DEMAND,
        "Unshed demand: seconds of work per second the input would need (1 = one core).",
    ),
    (
        CAPACITY_TARGET,
        "The load the shedder aims at: headroom x capacity x feedback correction x idle lift, seconds of work per second.",
    ),
    (
        EXPECTED_LOAD,
        "Load the model expects once the current plan is installed, seconds of work per second.",
    ),
    (
        UNMET,
        "Excess demand shedding could not cover (lossless queries, backlog), seconds of work per second.",
    ),
    (
        BUSY,
        "Share of the last tick the engine spent processing queries (can exceed 1 with several cores).",
    ),
    (
        OVERHEAD,
        "Engine work outside query turns (ingest), seconds per second.",
    ),
    (
        QUEUED_BYTES,
        "Memory the input queues hold, a batch several queries share counted once (bytes).",
    ),
    (
        SHEDDING,
        "1 while the shedder is in its shedding state, else 0.",
    ),
    (
        CORRECTION,
        "The shedder's feedback correction of its load model (1 = model trusted as is).",
    ),
    (
        WEIGHTED_UTILITY,
        "Planned utility over all queries, weighted, 0..1.",
    ),
    (
        LEDGER_VIOLATIONS,
        "Control ticks whose conservation ledger did not balance (must stay 0).",
    ),
    (
        STREAM_INGESTED,
        "Well-formed tuples that entered the stream (before any drop).",
    ),
    (
        STREAM_MALFORMED,
        "Inputs a source could not parse into a tuple of the stream's schema.",
    ),
    (
        STREAM_SHED,
        "Tuples shed at the stream's drop point, by reason.",
    ),
    (
        STREAM_KEEP,
        "Keep fraction installed at the stream's drop point (1 keeps everything).",
    ),
    (
        STREAM_RATE,
        "Offered tuples per second (smoothed), before any drop.",
    ),
    (
        STREAM_RETAINED,
        "Tuples of recent history the stream holds for ad-hoc queries (`retain:`).",
    ),
    (
        STREAM_RETAINED_BYTES,
        "Estimated bytes of the retained history (string payloads not counted).",
    ),
    (
        STREAM_RETAINED_EVICTED,
        "Tuples that aged or were pushed out of the retained history.",
    ),
    (
        QUERY_OFFERED,
        "Tuples of its stream offered to the query (equals the stream's ingested).",
    ),
    (QUERY_PROCESSED, "Tuples the query's pipeline has consumed."),
    (QUERY_RESULTS, "Result rows the query emitted."),
    (QUERY_LATE, "Tuples the query's windows rejected as late."),
    (
        QUERY_SHED,
        "Tuples of the query dropped before its pipeline, by drop point and reason.",
    ),
    (QUERY_QUEUED, "Tuples waiting in the query's input queue."),
    (
        QUERY_OLDEST_AGE,
        "Age of the oldest tuple in the query's input queue.",
    ),
    (
        QUERY_LATENCY,
        "Result latency: emission time minus the arrival of the tuple that made the result due.",
    ),
    (
        QUERY_TARGET,
        "The query's declared latency target (at its percentile, usually p99).",
    ),
    (
        QUERY_CONTROL_LATENCY,
        "The shedder's latency signal: the target's percentile over the last ticks, or the oldest queued age if larger.",
    ),
    (
        QUERY_KEEP,
        "Keep fraction installed at the query's drop point (1 keeps everything).",
    ),
    (
        QUERY_DELIVERED,
        "Share of offered tuples that reached the pipeline over the last tick (smoothed).",
    ),
    (
        QUERY_UTILITY,
        "Utility of the query at its delivered share, from its loss-tolerance graph, 0..1.",
    ),
    (
        QUERY_VIOLATING,
        "1 while the query's latency is over its target, else 0.",
    ),
    (
        QUERY_VIOLATION_SECONDS,
        "Seconds spent over the latency target so far; only grows (a gauge: metrics counters are integers).",
    ),
    (
        QUERY_VIOLATIONS,
        "Episodes of latency over target that began.",
    ),
    (
        QUERY_LEDGER_GAP,
        "offered - processed - queued - dropped: the conservation ledger (must stay 0).",
    ),
];
