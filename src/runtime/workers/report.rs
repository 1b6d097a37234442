//! One control report from N workers' reports, for the observers (status line, metrics,
//! dashboard): the QoS view of the whole run. Rates, queues, shed counts and loads add;
//! capacity adds (every worker has its own); a query's latency percentiles over the window
//! are read from the sum of the workers' latency histograms (`MergedLatency`, never the
//! worst or the mean of the workers' percentiles); keep fractions are the lowest any worker installed;
//! utility and delivered share are weighted by each worker's input. The engine counters
//! are merged as `workers::merge` does. Per-tick latency histograms (`tick_latency`) add.

use hdrhistogram::Histogram;

use crate::core::schema::Nanos;
use crate::core::stats::EngineSnapshot;
use crate::qos::{LatencyWindow, MergeScratch};
use crate::runtime::control::ControlReport;
use crate::runtime::monitor::{CONTROL_TICKS, QosSnapshot, QueryQos};
use crate::shed::ShedPlan;
use crate::spec::Workload;

/// The merged view's result latency: per query, a window of the workers' per-tick latency
/// histograms added, as one monitor's window would hold had one engine recorded them all.
/// Its percentiles replace the workers' in the merged report.
#[derive(Debug)]
pub struct MergedLatency {
    windows: Vec<LatencyWindow>,
    /// Per query: the percentile of its latency target, if it has one.
    targets: Vec<Option<f64>>,
    window_ticks: usize,
    scratch: MergeScratch,
}

impl MergedLatency {
    /// For `w`'s queries, over the ticks of one second at `tick` (the monitor's window).
    pub fn new(w: &Workload, tick: Nanos) -> MergedLatency {
        let window_ticks = (1_000_000_000 / tick.max(1)).max(1) as usize;
        MergedLatency {
            windows: Vec::new(),
            targets: (w.queries.iter())
                .map(|q| q.qos.as_ref().and_then(|s| s.latency).map(|l| l.percentile))
                .collect(),
            window_ticks,
            scratch: MergeScratch::default(),
        }
    }

    /// A query added while running, with its latency target's percentile if it has one.
    pub fn add_target(&mut self, percentile: Option<f64>) {
        self.targets.push(percentile);
    }

    /// Ends a tick whose summed per-query latencies are `tick`.
    pub fn push(&mut self, tick: &[Histogram<u64>]) {
        while self.windows.len() < tick.len() {
            self.windows.push(LatencyWindow::new(self.window_ticks));
        }
        for (w, h) in self.windows.iter_mut().zip(tick) {
            w.push(Some(h));
        }
    }

    /// Sets each query's p50, p99 and control latency (at its target's percentile over the
    /// last ticks, or the oldest queued tuple's delay if larger) from the summed windows.
    pub fn apply(&mut self, queries: &mut [QueryQos]) {
        for (q, (m, w)) in queries.iter_mut().zip(&self.windows).enumerate() {
            let scratch = &mut self.scratch;
            let [p50, p99] = w
                .percentiles([50.0, 99.0], self.window_ticks, scratch)
                .unwrap_or([0, 0]);
            (m.p50, m.p99) = (p50 as Nanos, p99 as Nanos);
            if m.latency.is_some()
                && let Some(Some(p)) = self.targets.get(q)
            {
                let at = w.percentile(*p, CONTROL_TICKS, scratch).unwrap_or(0) as Nanos;
                m.latency = Some(at.max(m.queue_delay));
            }
        }
    }
}

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
    // Placeholders until `MergedLatency::apply` reads them from the summed histograms.
    m.p50 = parts.iter().map(|p| p.p50).max().unwrap_or(0);
    m.p99 = parts.iter().map(|p| p.p99).max().unwrap_or(0);
    m.latency = parts.iter().filter_map(|p| p.latency).max();
    m.cost = mean(parts, |p| p.rate_in, |p| p.cost);
    m.row_cost = mean(parts, |p| p.row_rate, |p| p.row_cost);
    m.passed_cost = mean(parts, |p| p.rate_in, |p| p.passed_cost);
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
    m.ingest = sum(|p| p.ingest);
    m.unmet = sum(|p| p.unmet);
    m.shedding = plans.iter().any(|p| p.shedding);
    m.input_insufficient = plans.iter().any(|p| p.input_insufficient);
    m.rising = plans.iter().any(|p| p.rising);
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
        fan_out_cost: reports.iter().map(|r| r.qos.fan_out_cost).sum::<f64>()
            / reports.len().max(1) as f64,
        overhead_fixed: reports.iter().map(|r| r.qos.overhead_fixed).sum(),
        idle: reports.iter().map(|r| r.qos.idle).sum(),
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
        thinned: reports.iter().map(|r| r.thinned).sum(),
        thinned_queries: (0..reports
            .iter()
            .map(|r| r.thinned_queries.len())
            .max()
            .unwrap_or(0))
            .map(|q| {
                (reports.iter())
                    .map(|r| r.thinned_queries.get(q).copied().unwrap_or(0))
                    .sum()
            })
            .collect(),
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

#[cfg(all(test, feature = "shell"))]
mod tests {
    use super::*;
    use crate::core::stats::latency_histogram;
    use crate::runtime::control::Controller;
    use crate::spec::Policy;

    const MS: u64 = 1_000_000;

    fn histogram(values: &[(u64, u64)]) -> Histogram<u64> {
        let mut h = latency_histogram();
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
        h
    }

    /// A query's report as a monitor makes it (target p99 <= 50 ms).
    fn workload_and_query() -> (Workload, QueryQos) {
        let w = crate::spec::parse(
            r#"name: merged-latency
engine: {tick: 100ms}
streams:
  s:
    schema: {k: int, ts: timestamp}
    event_time: ts
    rate: 10
    count: 10
    fields: {k: {uniform: {min: 0, max: 9}}, ts: {sequence: {start: 0, step: 1ms}}}
queries:
  q:
    sql: SELECT k, COUNT(*) AS n FROM s GROUP BY k, TUMBLE(ts, INTERVAL '1' SECOND)
    qos: {latency: {p99: 50ms}}
"#,
            "<test>",
        )
        .unwrap();
        let mut e = crate::runtime::assemble::engine_for(&w).unwrap();
        let mut c = Controller::new(&w, &mut e, Policy::none(), 1.0, 100 * MS as i64, 0);
        let q = c.tick(&mut e, 100 * MS as i64, &w).qos.queries[0].clone();
        assert!(q.latency.is_some());
        (w, q)
    }

    #[test]
    fn merged_percentiles_come_from_the_summed_histograms_not_the_worst_worker() {
        let (w, mut q) = workload_and_query();
        let mut merged = MergedLatency::new(&w, 100 * MS as i64);
        // Worker 0: 995 results at 1 ms; worker 1 (a cold shard): 5 results at 500 ms.
        // Alone, worker 1's p99 is 500 ms; over all 1000 results it is 1 ms.
        let a = histogram(&[(MS, 995)]);
        let b = histogram(&[(500 * MS, 5)]);
        let mut sum = a.clone();
        sum.add(&b).unwrap();
        merged.push(&[sum.clone()]);
        q.queue_delay = 0;
        merged.apply(std::slice::from_mut(&mut q));
        assert_eq!(q.p99 as u64, sum.value_at_percentile(99.0));
        assert_eq!(q.p50 as u64, sum.value_at_percentile(50.0));
        assert!(q.p99 < 2 * MS as i64, "{}", q.p99);
        assert_eq!(q.latency, Some(q.p99));
        // The window spans a second of ticks: 9 more ticks of worker 1 alone at 500 ms
        // (50 results) bring the sum's p99 up to 500 ms, as one engine's would be.
        let mut window = sum;
        for _ in 0..9 {
            let h = histogram(&[(500 * MS, 50)]);
            window.add(&h).unwrap();
            merged.push(&[h]);
        }
        merged.apply(std::slice::from_mut(&mut q));
        assert_eq!(q.p99 as u64, window.value_at_percentile(99.0));
        assert!(q.p99 >= 500 * MS as i64, "{}", q.p99);
        // The control signal looks at the last ticks only, and never below the backlog.
        q.queue_delay = 900 * MS as i64;
        merged.apply(std::slice::from_mut(&mut q));
        assert_eq!(q.latency, Some(900 * MS as i64));
    }
}
