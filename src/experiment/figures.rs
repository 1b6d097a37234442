//! The figures of one run, per query and for the run as a whole ("all"), computed from
//! what the recorder kept, the answer check and the optimum. Every figure is a named `f64`
//! (NaN where it does not apply), so repeats average and files print one way.
//!
//! Invariant: `METRICS` fixes the order and names of every figure; `Row::values` follows it.

use super::answers::AnswerError;
use super::optimum::{KnapsackQuery, Optimum};
use super::recorder::Recorder;
use crate::core::drop::DropReason;
use crate::qos::loss_utility;
use crate::spec::Workload;

/// Names of the figures, in column order. `docs/experiment.md` explains each.
pub const METRICS: &[&str] = &[
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "latency_max_ms",
    "target_ms",
    "over_target_share",
    "longest_over_s",
    "holds_target",
    "offered",
    "delivered_share",
    "shed_share",
    "shed_stream_share",
    "shed_query_share",
    "shed_random_share",
    "shed_semantic_share",
    "shed_window_share",
    "queue_full_share",
    "loss_utility",
    "value_utility",
    "weighted_utility",
    "optimum_utility",
    "share_of_optimum",
    "rows",
    "exact_rows",
    "missing_rows",
    "extra_rows",
    "rel_error_mean",
    "rel_error_p95",
    "rel_error_max",
    "ci_coverage",
    "processed_per_s",
    "busy_share",
];

/// Index of a figure in `METRICS`.
pub fn metric(name: &str) -> usize {
    METRICS
        .iter()
        .position(|m| *m == name)
        .unwrap_or_else(|| panic!("unknown metric {name}"))
}

/// A run holds its targets when at most this share of its seconds were over target.
pub const HOLDS_SHARE: f64 = 0.05;

/// One row of figures: a query of a run, or `all` for the run.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub policy: String,
    /// Which repetition (0-based); rows of averaged repeats keep 0.
    pub repeat: u32,
    pub query: String,
    pub values: Vec<f64>,
}

impl Row {
    fn new(policy: &str, query: &str) -> Row {
        Row {
            policy: policy.into(),
            repeat: 0,
            query: query.into(),
            values: vec![f64::NAN; METRICS.len()],
        }
    }

    fn set(&mut self, name: &str, v: f64) {
        self.values[metric(name)] = v;
    }

    pub fn get(&self, name: &str) -> f64 {
        self.values[metric(name)]
    }
}

/// What the figures of a run are computed against.
pub struct Context<'a> {
    pub workload: &'a Workload,
    pub knapsack: &'a [KnapsackQuery],
    pub optimum: Option<&'a Optimum>,
    /// Per query: the value utility the exact run processed (= offered).
    pub offered_value: &'a [f64],
    pub cores: f64,
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// Per query, the value utility a run processed.
pub fn value_processed(rec: &Recorder, knapsack: &[KnapsackQuery]) -> Vec<f64> {
    let Some(last) = &rec.last else {
        return vec![0.0; knapsack.len()];
    };
    last.queries
        .iter()
        .zip(knapsack)
        .map(|(q, k)| {
            if k.bin_utility.len() > 1 && q.processed_values.len() == k.bin_utility.len() {
                q.processed_values
                    .iter()
                    .zip(&k.bin_utility)
                    .map(|(c, u)| *c as f64 * u)
                    .sum()
            } else {
                q.processed as f64
            }
        })
        .collect()
}

/// The rows of one run: one per query, then `all`.
pub fn run_rows(
    policy: &str,
    rec: &Recorder,
    answers: &[AnswerError],
    ctx: &Context<'_>,
) -> Vec<Row> {
    let ms = |ns: u64| ns as f64 / 1e6;
    let Some(last) = &rec.last else {
        return Vec::new();
    };
    let secs = (rec.elapsed as f64 / 1e9).max(1e-9);
    let processed_value = value_processed(rec, ctx.knapsack);
    let mut rows = Vec::new();
    let mut weighted = 0.0;
    let mut total_weight = 0.0;
    let mut worst_over: f64 = 0.0;
    let mut busy = 0.0;
    for (qi, q) in last.queries.iter().enumerate() {
        let spec = &ctx.workload.queries[qi];
        let r = &rec.queries[qi];
        let mut row = Row::new(policy, &spec.name);
        let h = &r.latency;
        if !h.is_empty() {
            row.set("latency_p50_ms", ms(h.value_at_quantile(0.5)));
            row.set("latency_p95_ms", ms(h.value_at_quantile(0.95)));
            row.set("latency_p99_ms", ms(h.value_at_quantile(0.99)));
            row.set("latency_max_ms", ms(h.max()));
        }
        if let Some((t, _)) = r.target {
            row.set("target_ms", t as f64 / 1e6);
            let over = r.seconds_over.iter().filter(|o| **o).count();
            let share = over as f64 / r.seconds_over.len().max(1) as f64;
            let longest = r
                .seconds_over
                .split(|o| !*o)
                .map(<[bool]>::len)
                .max()
                .unwrap_or(0);
            row.set("over_target_share", share);
            row.set("longest_over_s", longest as f64);
            row.set("holds_target", (share <= HOLDS_SHARE) as u8 as f64);
            worst_over = worst_over.max(share);
        }
        let offered = q.offered as f64;
        let of = |n: u64| {
            if offered > 0.0 {
                n as f64 / offered
            } else {
                0.0
            }
        };
        let stream = &last.streams[rec.info.as_ref().map_or(0, |i| i.queries[qi].stream)];
        let stream_shed: u64 = stream.dropped.iter().sum::<u64>()
            - stream.dropped[DropReason::Malformed.index()]
            - stream.dropped[DropReason::QueueFull.index()];
        row.set("offered", offered);
        row.set("delivered_share", of(q.processed));
        row.set("shed_share", of(q.shed()));
        row.set("shed_stream_share", of(stream_shed));
        row.set("shed_query_share", of(q.shed().saturating_sub(stream_shed)));
        row.set(
            "shed_random_share",
            of(q.dropped[DropReason::ShedRandom.index()]),
        );
        row.set(
            "shed_semantic_share",
            of(q.dropped[DropReason::ShedSemantic.index()]),
        );
        row.set(
            "shed_window_share",
            of(q.dropped[DropReason::ShedWindow.index()]),
        );
        row.set("queue_full_share", of(q.queue_full()));
        let curve = spec.qos.as_ref().and_then(|s| s.loss_tolerance.as_ref());
        row.set("loss_utility", loss_utility(curve, 100.0 * of(q.processed)));
        let value = if ctx.offered_value[qi] > 0.0 {
            processed_value[qi] / ctx.offered_value[qi]
        } else {
            1.0
        };
        row.set("value_utility", value);
        let weight = ctx.knapsack[qi].weight;
        weighted += weight * value;
        total_weight += weight;
        if let Some(o) = ctx.optimum {
            row.set("optimum_utility", o.value_share[qi]);
            // The optimum may give a query (almost) nothing; a share of nothing is no figure.
            if o.value_share[qi] > 1e-6 {
                row.set("share_of_optimum", value / o.value_share[qi]);
            }
        }
        let a = &answers[qi];
        row.set("rows", a.rows as f64);
        row.set("exact_rows", a.exact_rows as f64);
        row.set("missing_rows", a.missing as f64);
        row.set("extra_rows", a.extra as f64);
        if !a.errors.is_empty() {
            let mut e = a.errors.clone();
            e.sort_by(f64::total_cmp);
            row.set("rel_error_mean", e.iter().sum::<f64>() / e.len() as f64);
            row.set("rel_error_p95", quantile(&e, 0.95));
            row.set("rel_error_max", e[e.len() - 1]);
        }
        if a.with_interval > 0 {
            row.set("ci_coverage", a.covered as f64 / a.with_interval as f64);
        }
        row.set("processed_per_s", q.processed as f64 / secs);
        row.set("busy_share", q.busy as f64 / (ctx.cores * secs * 1e9));
        busy += q.busy as f64;
        rows.push(row);
    }
    let mut all = Row::new(policy, "all");
    let weighted = weighted / total_weight.max(1e-12);
    all.set("weighted_utility", weighted);
    all.set("over_target_share", worst_over);
    all.set("holds_target", (worst_over <= HOLDS_SHARE) as u8 as f64);
    if let Some(o) = ctx.optimum {
        all.set("optimum_utility", o.weighted);
        all.set("share_of_optimum", weighted / o.weighted.max(1e-12));
    }
    all.set("busy_share", busy / (ctx.cores * secs * 1e9));
    rows.push(all);
    rows
}

/// The optimum's rows: its utilities only.
pub fn optimum_rows(ctx: &Context<'_>, o: &Optimum) -> Vec<Row> {
    let mut rows = Vec::new();
    for (qi, q) in ctx.workload.queries.iter().enumerate() {
        let mut row = Row::new("optimum", &q.name);
        let curve = q.qos.as_ref().and_then(|s| s.loss_tolerance.as_ref());
        row.set("delivered_share", o.delivered[qi]);
        row.set("loss_utility", loss_utility(curve, 100.0 * o.delivered[qi]));
        row.set("value_utility", o.value_share[qi]);
        row.set("optimum_utility", o.value_share[qi]);
        row.set("share_of_optimum", 1.0);
        rows.push(row);
    }
    let mut all = Row::new("optimum", "all");
    all.set("weighted_utility", o.weighted);
    all.set("optimum_utility", o.weighted);
    all.set("share_of_optimum", 1.0);
    rows.push(all);
    rows
}
