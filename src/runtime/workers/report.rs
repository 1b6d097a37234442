//! One control report from N workers' reports, for the observers (status line, metrics,
//! dashboard): the QoS view of the whole run. Rates, queues, shed counts and loads add;
//! capacity adds (every worker has its own); a query's latency over the window is the
//! worst worker's (each worker holds a part of the query's keys, and the query meets its
//! target only if every part does); keep fractions are the lowest any worker installed;
//! utility and delivered share are weighted by each worker's input. The engine counters
//! are merged as `workers::merge` does. Per-tick latency histograms (`tick_latency`) add.

use hdrhistogram::Histogram;

use crate::core::stats::EngineSnapshot;
use crate::runtime::control::ControlReport;
use crate::runtime::monitor::{QosSnapshot, QueryQos};
use crate::shed::ShedPlan;

/// Weighted mean of `f` over `parts` by `w`, or the plain mean when every weight is 0.
fn mean<T>(parts: &[&T], w: impl Fn(&T) -> f64, f: impl Fn(&T) -> f64) -> f64 {
    let total: f64 = parts.iter().map(|p| w(p)).sum();
    if total > 0.0 {
        parts.iter().map(|p| w(p) * f(p)).sum::<f64>() / total
    } else {
        parts.iter().map(|p| f(p)).sum::<f64>() / parts.len().max(1) as f64
    }
}

/// Query `q` over the workers that run it.
fn merge_query(parts: &[&QueryQos]) -> QueryQos {
    let mut m = parts[0].clone();
    let sum = |f: fn(&QueryQos) -> f64| parts.iter().map(|p| f(p)).sum::<f64>();
    m.rate_in = sum(|p| p.rate_in);
    m.rate_out = sum(|p| p.rate_out);
    m.row_rate = sum(|p| p.row_rate);
    m.fixed_cost = sum(|p| p.fixed_cost);
    m.queued = parts.iter().map(|p| p.queued).sum();
    m.shed = parts.iter().map(|p| p.shed).sum();
    m.queue_full = parts.iter().map(|p| p.queue_full).sum();
    m.queue_delay = parts.iter().map(|p| p.queue_delay).max().unwrap_or(0);
    m.p50 = parts.iter().map(|p| p.p50).max().unwrap_or(0);
    m.p99 = parts.iter().map(|p| p.p99).max().unwrap_or(0);
    m.latency = parts.iter().filter_map(|p| p.latency).max();
    m.cost = mean(parts, |p| p.rate_in, |p| p.cost);
    m.row_cost = mean(parts, |p| p.row_rate, |p| p.row_cost);
    m.delivered = mean(parts, |p| p.rate_in, |p| p.delivered);
    m.utility = mean(parts, |p| p.rate_in, |p| p.utility);
    m.selectivity = if m.rate_in > 0.0 {
        m.rate_out / m.rate_in
    } else {
        m.selectivity
    };
    m
}

fn merge_plan(plans: &[&ShedPlan], reports: &[&ControlReport]) -> ShedPlan {
    let mut m = plans[0].clone();
    let sum = |f: fn(&ShedPlan) -> f64| plans.iter().map(|p| f(p)).sum::<f64>();
    m.load = sum(|p| p.load);
    m.target = sum(|p| p.target);
    m.excess = sum(|p| p.excess);
    m.expected_load = sum(|p| p.expected_load);
    m.expected_input = sum(|p| p.expected_input);
    m.unmet = sum(|p| p.unmet);
    m.shedding = plans.iter().any(|p| p.shedding);
    m.input_insufficient = plans.iter().any(|p| p.input_insufficient);
    m.weighted_utility = mean(reports, |r| r.qos.busy, |r| r.plan.weighted_utility);
    for (s, keep) in m.streams.iter_mut().enumerate() {
        *keep = plans.iter().map(|p| p.streams[s]).fold(1.0, f64::min);
    }
    m
}

/// Merges the workers' reports of one tick; `runs(w, q)` says whether worker `w` runs
/// query `q`, `engine` is the merged engine snapshot.
pub fn merge_reports(
    reports: &[&ControlReport],
    runs: impl Fn(usize, usize) -> bool,
    engine: EngineSnapshot,
) -> ControlReport {
    let first = reports[0];
    let queries = (0..first.qos.queries.len())
        .map(|q| {
            let parts: Vec<&QueryQos> = (reports.iter().enumerate())
                .filter(|(w, _)| runs(*w, q))
                .map(|(_, r)| &r.qos.queries[q])
                .collect();
            if parts.is_empty() {
                first.qos.queries[q].clone()
            } else {
                merge_query(&parts)
            }
        })
        .collect();
    let qos = QosSnapshot {
        at: first.qos.at,
        streams: first.qos.streams.clone(),
        queries,
        busy: reports.iter().map(|r| r.qos.busy).sum(),
        overhead: reports.iter().map(|r| r.qos.overhead).sum(),
        ingest_cost: reports.iter().map(|r| r.qos.ingest_cost).sum::<f64>()
            / reports.len().max(1) as f64,
        violations: reports.iter().map(|r| r.qos.violations).sum(),
        model_error: reports
            .iter()
            .filter_map(|r| r.qos.model_error)
            .max_by(|a, b| a.abs().total_cmp(&b.abs())),
        model_error_mean: reports
            .iter()
            .filter_map(|r| r.qos.model_error_mean)
            .max_by(|a, b| a.total_cmp(b)),
        engine,
    };
    let plans: Vec<&ShedPlan> = reports.iter().map(|r| &r.plan).collect();
    let low = |f: fn(&ControlReport) -> &Vec<f64>| -> Vec<f64> {
        (0..f(first).len())
            .map(|i| reports.iter().map(|r| f(r)[i]).fold(1.0, f64::min))
            .collect()
    };
    ControlReport {
        plan: merge_plan(&plans, reports),
        stream_keep: low(|r| &r.stream_keep),
        query_keep: low(|r| &r.query_keep),
        qos,
    }
}

/// Adds per-query tick latency histograms of several workers.
pub fn add_tick_latency(into: &mut [Histogram<u64>], from: &[&Histogram<u64>]) {
    for (a, b) in into.iter_mut().zip(from) {
        let _ = a.add(*b);
    }
}

/// The run's history over the workers: tick counts are the longest worker's, minimum keeps
/// and utilities are the lowest, and a query's utility sum is the mean over the workers
/// that controlled it (so the summary's utility mean is the mean over those workers).
pub fn merge_history(
    parts: &[crate::runtime::control::RunHistory],
) -> crate::runtime::control::RunHistory {
    let mut m = parts[0].clone();
    m.ticks = parts.iter().map(|p| p.ticks).max().unwrap_or(0);
    m.shedding_ticks = parts.iter().map(|p| p.shedding_ticks).max().unwrap_or(0);
    m.policy_switches = parts.iter().map(|p| p.policy_switches).max().unwrap_or(0);
    let low = |v: &mut Vec<f64>, f: fn(&crate::runtime::control::RunHistory) -> &Vec<f64>| {
        for (i, a) in v.iter_mut().enumerate() {
            *a = parts
                .iter()
                .filter_map(|p| f(p).get(i))
                .fold(*a, |x, y| x.min(*y));
        }
    };
    low(&mut m.stream_min_keep, |p| &p.stream_min_keep);
    low(&mut m.query_min_keep, |p| &p.query_min_keep);
    low(&mut m.utility_min, |p| &p.utility_min);
    for q in 0..m.utility_sum.len() {
        let ran: Vec<_> = parts
            .iter()
            .filter(|p| p.utility_ticks.get(q).is_some_and(|t| *t > 0))
            .collect();
        if !ran.is_empty() {
            m.utility_sum[q] = ran.iter().map(|p| p.utility_sum[q]).sum::<f64>() / ran.len() as f64;
            m.utility_ticks[q] = ran.iter().map(|p| p.utility_ticks[q]).max().unwrap_or(0);
        }
    }
    m
}
