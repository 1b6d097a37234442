//! The Prometheus mirror of a run: an observer that, on the engine thread, turns each
//! tick's report into `metrics` handles (counters set to the engine's cumulative counts,
//! gauges, and the latency histogram fed from the tick's HDR histograms, one sample per
//! recorded value, never one per tuple). Invariant: after `RunEnded` every counter equals
//! the summary's ledger exactly, because both are read from the same final snapshot.

use std::sync::Arc;

use hdrhistogram::Histogram as Hdr;
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Label, Level, Metadata, Recorder};

use super::names::{self as n, labels};
use crate::core::drop::DropReason;
use crate::core::stats::EngineSnapshot;
use crate::runtime::observe::{Event, Observer, RunInfo, TickReport};

static META: Metadata<'static> = Metadata::new(module_path!(), Level::INFO, Some(module_path!()));

/// The drop reasons a drop point sheds for (queue-full and malformed are counted apart).
const SHED_REASONS: [DropReason; 3] = [
    DropReason::ShedRandom,
    DropReason::ShedSemantic,
    DropReason::ShedWindow,
];

const NS: f64 = 1e9;

/// Registers and describes metrics on one recorder.
struct Registrar<'a> {
    rec: &'a dyn Recorder,
}

impl Registrar<'_> {
    fn key(name: &'static str, labels: &[(&'static str, &str)]) -> Key {
        let labels: Vec<Label> = labels
            .iter()
            .map(|(k, v)| Label::new(*k, v.to_string()))
            .collect();
        Key::from_parts(name, labels)
    }
    fn counter(&self, name: &'static str, labels: &[(&'static str, &str)]) -> Counter {
        self.rec
            .describe_counter(KeyName::from_const_str(name), None, help(name));
        self.rec.register_counter(&Self::key(name, labels), &META)
    }
    fn gauge(&self, name: &'static str, labels: &[(&'static str, &str)]) -> Gauge {
        self.rec
            .describe_gauge(KeyName::from_const_str(name), None, help(name));
        self.rec.register_gauge(&Self::key(name, labels), &META)
    }
    fn histogram(&self, name: &'static str, labels: &[(&'static str, &str)]) -> Histogram {
        self.rec
            .describe_histogram(KeyName::from_const_str(name), None, help(name));
        self.rec.register_histogram(&Self::key(name, labels), &META)
    }
}

fn help(name: &str) -> metrics::SharedString {
    let text = n::ALL
        .iter()
        .find(|(k, _)| *k == name)
        .map_or("", |(_, h)| h);
    metrics::SharedString::const_str(text)
}

struct StreamHandles {
    ingested: Counter,
    malformed: Counter,
    shed: [Counter; 3],
    keep: Gauge,
    rate: Gauge,
    retained: Gauge,
    retained_bytes: Gauge,
    evicted: Counter,
}

struct QueryHandles {
    stream: usize,
    offered: Counter,
    processed: Counter,
    results: Counter,
    late: Counter,
    /// By `SHED_REASONS`, at the stream's and at the query's drop point.
    shed_stream: [Counter; 3],
    shed_query: [Counter; 3],
    queue_full: Counter,
    queued: Gauge,
    oldest: Gauge,
    latency: Histogram,
    target: Gauge,
    control_latency: Gauge,
    keep: Gauge,
    delivered: Gauge,
    utility: Gauge,
    violating: Gauge,
    violation_seconds: Gauge,
    violations: Counter,
    ledger_gap: Gauge,
    /// Whether a violation episode is open, and the seconds counted so far.
    in_violation: bool,
    seconds: f64,
}

struct EngineHandles {
    elapsed: Gauge,
    ended: Gauge,
    ticks: Counter,
    demand: Gauge,
    target: Gauge,
    expected: Gauge,
    unmet: Gauge,
    busy: Gauge,
    overhead: Gauge,
    queued_bytes: Gauge,
    shedding: Gauge,
    correction: Gauge,
    weighted_utility: Gauge,
    ledger_violations: Counter,
}

struct Handles {
    engine: EngineHandles,
    streams: Vec<StreamHandles>,
    queries: Vec<QueryHandles>,
    last_elapsed: i64,
}

/// Mirrors a run into a `metrics` recorder (the Prometheus exporter's, or any other).
pub struct MetricsObserver {
    recorder: Arc<dyn Recorder + Send + Sync>,
    handles: Option<Handles>,
}

impl MetricsObserver {
    pub fn new(recorder: Arc<dyn Recorder + Send + Sync>) -> MetricsObserver {
        MetricsObserver {
            recorder,
            handles: None,
        }
    }
}

impl Handles {
    fn register(r: &Registrar<'_>, info: &RunInfo) -> Handles {
        let e = |name| r.gauge(name, &[]);
        r.gauge(
            n::BUILD_INFO,
            &[
                (labels::VERSION, env!("CARGO_PKG_VERSION")),
                (labels::POLICY, policy_label(&info.policy)),
            ],
        )
        .set(1.0);
        let engine = EngineHandles {
            elapsed: e(n::RUN_ELAPSED),
            ended: e(n::RUN_ENDED),
            ticks: r.counter(n::TICKS, &[]),
            demand: e(n::DEMAND),
            target: e(n::CAPACITY_TARGET),
            expected: e(n::EXPECTED_LOAD),
            unmet: e(n::UNMET),
            busy: e(n::BUSY),
            overhead: e(n::OVERHEAD),
            queued_bytes: e(n::QUEUED_BYTES),
            shedding: e(n::SHEDDING),
            correction: e(n::CORRECTION),
            weighted_utility: e(n::WEIGHTED_UTILITY),
            ledger_violations: r.counter(n::LEDGER_VIOLATIONS, &[]),
        };
        engine.ended.set(0.0);
        let streams = info
            .streams
            .iter()
            .map(|s| {
                let l = [(labels::STREAM, s.name.as_str())];
                StreamHandles {
                    ingested: r.counter(n::STREAM_INGESTED, &l),
                    malformed: r.counter(n::STREAM_MALFORMED, &l),
                    shed: SHED_REASONS.map(|reason| {
                        r.counter(n::STREAM_SHED, &[l[0], (labels::REASON, reason.label())])
                    }),
                    keep: r.gauge(n::STREAM_KEEP, &l),
                    rate: r.gauge(n::STREAM_RATE, &l),
                    retained: r.gauge(n::STREAM_RETAINED, &l),
                    retained_bytes: r.gauge(n::STREAM_RETAINED_BYTES, &l),
                    evicted: r.counter(n::STREAM_RETAINED_EVICTED, &l),
                }
            })
            .collect();
        let queries = info
            .queries
            .iter()
            .map(|q| {
                let l = [(labels::QUERY, q.name.as_str())];
                let shed = |point: &str, reason: DropReason| {
                    r.counter(
                        n::QUERY_SHED,
                        &[
                            l[0],
                            (labels::POINT, point),
                            (labels::REASON, reason.label()),
                        ],
                    )
                };
                let h = QueryHandles {
                    stream: q.stream,
                    offered: r.counter(n::QUERY_OFFERED, &l),
                    processed: r.counter(n::QUERY_PROCESSED, &l),
                    results: r.counter(n::QUERY_RESULTS, &l),
                    late: r.counter(n::QUERY_LATE, &l),
                    shed_stream: SHED_REASONS.map(|reason| shed("stream", reason)),
                    shed_query: SHED_REASONS.map(|reason| shed("query", reason)),
                    queue_full: shed("queue", DropReason::QueueFull),
                    queued: r.gauge(n::QUERY_QUEUED, &l),
                    oldest: r.gauge(n::QUERY_OLDEST_AGE, &l),
                    latency: r.histogram(n::QUERY_LATENCY, &l),
                    target: r.gauge(n::QUERY_TARGET, &l),
                    control_latency: r.gauge(n::QUERY_CONTROL_LATENCY, &l),
                    keep: r.gauge(n::QUERY_KEEP, &l),
                    delivered: r.gauge(n::QUERY_DELIVERED, &l),
                    utility: r.gauge(n::QUERY_UTILITY, &l),
                    violating: r.gauge(n::QUERY_VIOLATING, &l),
                    violation_seconds: r.gauge(n::QUERY_VIOLATION_SECONDS, &l),
                    violations: r.counter(n::QUERY_VIOLATIONS, &l),
                    ledger_gap: r.gauge(n::QUERY_LEDGER_GAP, &l),
                    in_violation: false,
                    seconds: 0.0,
                };
                // A query without a target has none to show; 0 would read as "violated".
                if let Some((target, _)) = q.target {
                    h.target.set(target as f64 / NS);
                }
                h.violating.set(0.0);
                h.violation_seconds.set(0.0);
                h
            })
            .collect();
        Handles {
            engine,
            streams,
            queries,
            last_elapsed: 0,
        }
    }

    fn counts(&self, snap: &EngineSnapshot) {
        for (h, s) in self.streams.iter().zip(&snap.streams) {
            h.ingested.absolute(s.ingested);
            h.malformed
                .absolute(s.dropped[DropReason::Malformed.index()]);
            for (c, reason) in h.shed.iter().zip(SHED_REASONS) {
                c.absolute(s.dropped[reason.index()]);
            }
            let kept = s.retained.unwrap_or_default();
            h.retained.set(kept.tuples as f64);
            h.retained_bytes.set(kept.bytes as f64);
            h.evicted.absolute(kept.evicted);
        }
        for (h, q) in self.queries.iter().zip(&snap.queries) {
            h.offered.absolute(q.offered);
            h.processed.absolute(q.processed);
            h.results.absolute(q.results);
            h.late.absolute(q.late);
            let at_stream = snap.streams.get(h.stream).map(|s| s.dropped);
            for (i, reason) in SHED_REASONS.into_iter().enumerate() {
                let all = q.dropped[reason.index()];
                let stream = at_stream.map_or(0, |d| d[reason.index()]).min(all);
                h.shed_stream[i].absolute(stream);
                h.shed_query[i].absolute(all - stream);
            }
            h.queue_full.absolute(q.queue_full());
            h.queued.set(q.queued as f64);
            let accounted = q.processed + q.queued + q.dropped.iter().sum::<u64>();
            h.ledger_gap.set(q.offered as f64 - accounted as f64);
        }
    }

    fn tick(&mut self, t: &TickReport<'_>) {
        let r = t.control;
        let e = &self.engine;
        e.elapsed.set(t.elapsed as f64 / NS);
        e.ticks.increment(1);
        e.demand.set(r.plan.load / NS);
        e.target.set(r.plan.target / NS);
        e.expected.set(r.plan.expected_load / NS);
        e.unmet.set(r.plan.unmet / NS);
        e.busy.set(r.qos.busy);
        e.overhead.set(r.qos.overhead / NS);
        e.queued_bytes.set(r.qos.engine.queued_bytes as f64);
        e.shedding.set(if r.plan.shedding { 1.0 } else { 0.0 });
        e.correction.set(r.plan.correction);
        e.weighted_utility.set(r.plan.weighted_utility);
        e.ledger_violations.absolute(r.qos.violations);
        self.counts(&r.qos.engine);
        for (i, h) in self.streams.iter().enumerate() {
            h.keep.set(r.stream_keep.get(i).copied().unwrap_or(1.0));
            h.rate.set(r.qos.streams.get(i).map_or(0.0, |s| s.rate));
        }
        let dt = (t.elapsed - self.last_elapsed).max(0) as f64 / NS;
        self.last_elapsed = t.elapsed;
        for (i, h) in self.queries.iter_mut().enumerate() {
            if let Some(q) = r.qos.queries.get(i) {
                h.oldest.set(q.queue_delay as f64 / NS);
                h.delivered.set(q.delivered);
                h.utility.set(q.utility);
                if let Some(l) = q.latency {
                    h.control_latency.set(l as f64 / NS);
                }
            }
            h.keep.set(r.query_keep.get(i).copied().unwrap_or(1.0));
            if h.in_violation {
                h.seconds += dt;
                h.violation_seconds.set(h.seconds);
            }
            if let Some(hist) = t.tick_latency.get(i) {
                mirror(hist, &h.latency);
            }
        }
        if t.last {
            e.ended.set(1.0);
        }
    }
}

/// A policy's label: its file stem (`policies/random.yaml` -> `random`), or its name.
fn policy_label(policy: &str) -> &str {
    std::path::Path::new(policy)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(policy)
}

/// Records every distinct value of `hdr` (ns) into `out` (seconds), with its count.
fn mirror(hdr: &Hdr<u64>, out: &Histogram) {
    if hdr.is_empty() {
        return;
    }
    for v in hdr.iter_recorded() {
        let value = hdr.median_equivalent(v.value_iterated_to()) as f64 / NS;
        out.record_many(value, v.count_at_value() as usize);
    }
}

impl Observer for MetricsObserver {
    fn on_tick(&mut self, tick: &TickReport<'_>) {
        if let Some(h) = &mut self.handles {
            h.tick(tick);
        }
    }

    fn on_event(&mut self, event: &Event) {
        match event {
            Event::RunStarted(info) => {
                let r = Registrar {
                    rec: &*self.recorder,
                };
                self.handles = Some(Handles::register(&r, info));
            }
            Event::ViolationBegan { query, .. } => {
                if let Some(h) = self
                    .handles
                    .as_mut()
                    .and_then(|h| h.queries.get_mut(*query))
                {
                    h.in_violation = true;
                    h.violating.set(1.0);
                    h.violations.increment(1);
                }
            }
            Event::ViolationEnded { query, .. } => {
                if let Some(h) = self
                    .handles
                    .as_mut()
                    .and_then(|h| h.queries.get_mut(*query))
                {
                    h.in_violation = false;
                    h.violating.set(0.0);
                }
            }
            Event::RunEnded(summary) => {
                if let Some(h) = &self.handles {
                    // The summary's snapshot is the final tick's; set again so the two
                    // agree even if a driver ends without a final tick.
                    h.counts(&summary.snapshot);
                    h.engine.ended.set(1.0);
                    h.engine
                        .ledger_violations
                        .absolute(summary.ledger_violations);
                    h.engine.elapsed.set(summary.elapsed as f64 / NS);
                }
            }
            _ => {}
        }
    }
}
