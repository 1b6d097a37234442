//! The Prometheus mirror checked against the run it mirrors: a deterministic simulated
//! shedding run is rendered mid-run and at the end through the real exporter's text
//! format; at the end every counter equals the summary's ledger exactly, the latency
//! histogram holds every recorded latency in its buckets, every metric is documented, and
//! every PromQL expression the dashboard and the alert rules use names an emitted metric.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use spillway::core::drop::DropReason;
use spillway::runtime::assemble::engine_for;
use spillway::runtime::control::Controller;
use spillway::runtime::metrics::names as n;
use spillway::runtime::metrics::{MetricsObserver, recorder_builder};
use spillway::runtime::observe::{Event, EventLog, Observers, OnTick, RunSummary, TickReport};
use spillway::runtime::simulated::{SimControl, SimSettings, run_simulated};
use spillway::runtime::stop::StopHandle;
use support::*;

/// A parsed exposition: `name{k="v",...}` (labels sorted) -> value, plus `# TYPE` lines.
struct Exposition {
    samples: BTreeMap<String, f64>,
    types: BTreeMap<String, String>,
}

fn parse(text: &str) -> Exposition {
    let mut samples = BTreeMap::new();
    let mut types = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            types.insert(name.to_string(), kind.to_string());
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap();
        let key = match series.split_once('{') {
            None => series.to_string(),
            Some((name, labels)) => {
                let mut l: Vec<&str> = labels.trim_end_matches('}').split(',').collect();
                l.sort_unstable();
                format!("{name}{{{}}}", l.join(","))
            }
        };
        let v = match value {
            "+Inf" => f64::INFINITY,
            v => v
                .parse()
                .unwrap_or_else(|_| panic!("bad value in `{line}`")),
        };
        assert!(
            samples.insert(key, v).is_none(),
            "duplicate series `{line}`"
        );
    }
    Exposition { samples, types }
}

impl Exposition {
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let key = if labels.is_empty() {
            name.to_string()
        } else {
            let mut l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
            l.sort_unstable();
            format!("{name}{{{}}}", l.join(","))
        };
        *self
            .samples
            .get(&key)
            .unwrap_or_else(|| panic!("no series {key} in the exposition"))
    }

    /// Metric family names (histogram series folded into their family).
    fn families(&self) -> BTreeSet<String> {
        self.types.keys().cloned().collect()
    }
}

struct Observed {
    mid: String,
    end: String,
    summary: RunSummary,
    events: Vec<Event>,
    /// Per query: latencies recorded over the run (sum of tick histogram lengths).
    latencies: Vec<u64>,
    ticks: u64,
}

/// The shedding step of `tests/shedding.rs` in small: capacity 100k tuples/s, 3x from 1 s.
const STEP: &str = r#"
name: step
seed: 11
duration: 4s
engine: {mode: simulated, batch_size: 100, tick: 50ms}
streams:
  s:
    schema: {k: int, v: float, ts: timestamp}
    event_time: ts
    rate: {steps: [{at: 0s, rate: 50000}, {at: 1s, rate: 300000}, {at: 3s, rate: 50000}]}
    fields:
      k: {uniform: {min: 0, max: 99}}
      v: {normal: {mean: 20, stddev: 6}}
      ts: now
queries:
  agg:
    sql: SELECT k, COUNT(*) AS n FROM s GROUP BY k, TUMBLE(ts, INTERVAL '100' MILLISECOND)
    qos:
      latency: {p99: 200ms}
      loss_tolerance: [[100, 1.0], [50, 0.8], [0, 0.0]]
    cost: 6us
  alert:
    sql: SELECT k, v FROM s WHERE v > 25
    qos:
      latency: {p99: 100ms}
      loss_tolerance: [[100, 1.0], [0, 0.0]]
    cost: 4us
"#;

fn observe(policy_kind: &str) -> Observed {
    let w = workload(STEP);
    let mut engine = engine_for(&w).unwrap();
    let settings = SimSettings::from_workload(&w, None).unwrap();
    let mut controller = Controller::new(
        &w,
        &mut engine,
        policy(policy_kind),
        settings.cores,
        w.engine.tick,
        0,
    );
    let recorder = recorder_builder().build_recorder();
    let handle = recorder.handle();
    let mut metrics = MetricsObserver::new(Arc::new(recorder));
    let mut log = EventLog::default();
    let mut mid = String::new();
    let mut latencies = vec![0u64; w.queries.len()];
    let mut ticks = 0;
    let mut probe = OnTick(|t: &TickReport<'_>| {
        ticks += 1;
        for (q, h) in t.tick_latency.iter().enumerate() {
            latencies[q] += h.len();
        }
        // A scrape in the middle of the overload.
        if t.elapsed == 2 * S {
            mid = handle.render();
        }
    });
    run_simulated(
        &w,
        engine,
        &settings,
        SimControl {
            controller: Some(&mut controller),
            stop: &StopHandle::new(),
        },
        |_| {},
        &mut Observers::new(vec![&mut metrics, &mut log, &mut probe]),
    );
    let summary = log
        .0
        .iter()
        .find_map(|e| match e {
            Event::RunEnded(s) => Some((**s).clone()),
            _ => None,
        })
        .unwrap();
    let end = handle.render();
    Observed {
        mid,
        end,
        summary,
        events: log.0,
        latencies,
        ticks,
    }
}

#[test]
fn at_the_end_every_counter_equals_the_summary_ledger() {
    let o = observe("random");
    let x = parse(&o.end);
    let snap = &o.summary.snapshot;
    let s = &snap.streams[0];
    assert_eq!(
        x.get(n::STREAM_INGESTED, &[("stream", "s")]),
        s.ingested as f64
    );
    assert_eq!(x.get(n::STREAM_MALFORMED, &[("stream", "s")]), 0.0);
    let stream_random = s.dropped[DropReason::ShedRandom.index()];
    assert_eq!(
        x.get(
            n::STREAM_SHED,
            &[("stream", "s"), ("reason", "shed-random")]
        ),
        stream_random as f64
    );
    let mut shed_total = 0;
    for q in &snap.queries {
        let l = [("query", q.name.as_str())];
        assert_eq!(x.get(n::QUERY_OFFERED, &l), q.offered as f64);
        assert_eq!(x.get(n::QUERY_PROCESSED, &l), q.processed as f64);
        assert_eq!(x.get(n::QUERY_RESULTS, &l), q.results as f64);
        assert_eq!(x.get(n::QUERY_QUEUED, &l), q.queued as f64);
        assert_eq!(x.get(n::QUERY_LEDGER_GAP, &l), 0.0);
        // Shed by point and reason adds up to the query's drops, reason by reason.
        for reason in [
            DropReason::ShedRandom,
            DropReason::ShedSemantic,
            DropReason::ShedWindow,
        ] {
            let at = |point| {
                x.get(
                    n::QUERY_SHED,
                    &[
                        ("query", &q.name),
                        ("point", point),
                        ("reason", reason.label()),
                    ],
                )
            };
            assert_eq!(at("stream") + at("query"), q.dropped[reason.index()] as f64);
        }
        assert_eq!(
            x.get(
                n::QUERY_SHED,
                &[
                    ("query", &q.name),
                    ("point", "queue"),
                    ("reason", "queue-full")
                ]
            ),
            q.queue_full() as f64
        );
        shed_total += q.shed();
    }
    // The run did shed, so the comparison above is not vacuous.
    assert!(
        stream_random > 0 || shed_total > 0,
        "the step run shed nothing"
    );
    assert_eq!(
        x.get(n::LEDGER_VIOLATIONS, &[]),
        o.summary.ledger_violations as f64
    );
    assert_eq!(x.get(n::LEDGER_VIOLATIONS, &[]), 0.0);
    assert_eq!(x.get(n::TICKS, &[]), o.ticks as f64);
    assert_eq!(x.get(n::RUN_ENDED, &[]), 1.0);
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        x.get(n::BUILD_INFO, &[("version", version), ("policy", "random")]),
        1.0
    );
    assert_eq!(x.get(n::RUN_ELAPSED, &[]), o.summary.elapsed as f64 / 1e9);
}

#[test]
fn a_mid_run_scrape_shows_the_overload_and_counts_below_the_end() {
    let o = observe("random");
    assert!(!o.mid.is_empty(), "no scrape at 2 s");
    let (mid, end) = (parse(&o.mid), parse(&o.end));
    assert_eq!(mid.get(n::RUN_ENDED, &[]), 0.0);
    assert_eq!(mid.get(n::RUN_ELAPSED, &[]), 2.0);
    assert_eq!(mid.get(n::SHEDDING, &[]), 1.0, "shedding at 3x overload");
    let demand = mid.get(n::DEMAND, &[]);
    let target = mid.get(n::CAPACITY_TARGET, &[]);
    assert!(
        demand > 2.0 * target && target > 0.0,
        "demand {demand} vs target {target}"
    );
    let keep =
        mid.get(n::STREAM_KEEP, &[("stream", "s")]) * mid.get(n::QUERY_KEEP, &[("query", "agg")]);
    assert!(keep < 1.0, "keep {keep} while shedding");
    for (k, v) in &mid.samples {
        if k.contains("_total") {
            assert!(end.samples[k] >= *v, "counter {k} went down");
        }
    }
    let ingested = mid.get(n::STREAM_INGESTED, &[("stream", "s")]);
    assert!(ingested > 0.0 && ingested < end.get(n::STREAM_INGESTED, &[("stream", "s")]));
}

#[test]
fn the_latency_histogram_has_seconds_buckets_and_every_recorded_latency() {
    let o = observe("random");
    let x = parse(&o.end);
    assert_eq!(x.types[n::QUERY_LATENCY], "histogram");
    for (qi, q) in ["agg", "alert"].iter().enumerate() {
        let count = x.get(&format!("{}_count", n::QUERY_LATENCY), &[("query", q)]);
        assert_eq!(count, o.latencies[qi] as f64);
        assert!(count > 0.0);
        let mut prev = 0.0;
        for le in n::LATENCY_BUCKETS {
            let b = x.get(
                &format!("{}_bucket", n::QUERY_LATENCY),
                &[("query", q), ("le", &le.to_string())],
            );
            assert!(b >= prev, "buckets are cumulative");
            prev = b;
        }
        let inf = x.get(
            &format!("{}_bucket", n::QUERY_LATENCY),
            &[("query", q), ("le", "+Inf")],
        );
        assert_eq!(inf, count);
        // Mean latency in seconds, not nanoseconds: between 0.1 ms and 10 s.
        let mean = x.get(&format!("{}_sum", n::QUERY_LATENCY), &[("query", q)]) / count;
        assert!(mean > 1e-4 && mean < 10.0, "mean latency {mean} s");
    }
}

#[test]
fn violation_seconds_and_episodes_follow_the_events() {
    // Without shedding the 3x step breaks both targets.
    let o = observe("none");
    let x = parse(&o.end);
    for (qi, q) in ["agg", "alert"].iter().enumerate() {
        let began = o
            .events
            .iter()
            .filter(|e| matches!(e, Event::ViolationBegan { query, .. } if *query == qi))
            .count();
        assert!(began > 0, "{q} never violated its target");
        assert_eq!(x.get(n::QUERY_VIOLATIONS, &[("query", q)]), began as f64);
        let ended: i64 = o
            .events
            .iter()
            .filter_map(|e| match e {
                Event::ViolationEnded { query, lasted, .. } if *query == qi => Some(*lasted),
                _ => None,
            })
            .sum();
        let seconds = x.get(n::QUERY_VIOLATION_SECONDS, &[("query", q)]);
        // Open episodes count up to the end of the run.
        assert!(
            seconds >= ended as f64 / 1e9 - 1e-9,
            "{seconds} < {ended} ns"
        );
        assert!(seconds > 0.0 && seconds <= o.summary.elapsed as f64 / 1e9 + 1e-9);
        assert_eq!(x.get(n::SHEDDING, &[]), 0.0);
    }
    assert_eq!(x.get(n::QUERY_TARGET, &[("query", "agg")]), 0.2);
    assert_eq!(x.get(n::QUERY_TARGET, &[("query", "alert")]), 0.1);
}

#[test]
fn every_metric_is_named_in_the_module_and_documented() {
    let o = observe("random");
    let x = parse(&o.end);
    let known: BTreeSet<&str> = n::ALL.iter().map(|(k, _)| *k).collect();
    for family in x.families() {
        assert!(
            known.contains(family.as_str()),
            "{family} is not in names::ALL"
        );
    }
    for (name, _) in n::ALL {
        assert!(x.families().contains(*name), "{name} is never emitted");
        assert!(name.starts_with("spillway_"));
        let counter = x.types[*name] == "counter";
        assert_eq!(
            counter,
            name.ends_with("_total"),
            "{name}: `_total` iff counter"
        );
    }
    let docs = std::fs::read_to_string("docs/metrics.md").unwrap();
    for (name, _) in n::ALL {
        assert!(
            docs.contains(&format!("`{name}`")),
            "docs/metrics.md lacks `{name}`"
        );
    }
}

/// Every `spillway_*` name in a PromQL expression, histogram suffixes folded.
fn names_in(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(i) = rest.find("spillway_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let name = &tail[..end];
        let base = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|b| *b == n::QUERY_LATENCY))
            .unwrap_or(name);
        out.push(base.to_string());
        rest = &tail[end..];
    }
    out
}

fn exprs_in(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("expr", serde_json::Value::String(s)) => out.push(s.clone()),
                    _ => exprs_in(v, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| exprs_in(v, out)),
        _ => {}
    }
}

#[test]
fn dashboard_and_alert_expressions_name_only_emitted_metrics() {
    let x = parse(&observe("random").end);
    let families = x.families();
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("dashboards/grafana/spillway.json").unwrap())
            .unwrap();
    let mut exprs = Vec::new();
    exprs_in(&dashboard["panels"], &mut exprs);
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    let queries: Vec<String> = variables
        .iter()
        .filter(|v| v["type"] == "query")
        .map(|v| v["definition"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(queries.len(), 1, "one query variable");
    assert!(variables.iter().any(|v| v["type"] == "datasource"));
    assert!(dashboard["uid"].is_string());
    exprs.extend(queries);
    assert!(
        exprs.len() >= 10,
        "only {} expressions in the dashboard",
        exprs.len()
    );
    let rules: serde_json::Value = serde_yaml::from_str::<serde_json::Value>(
        &std::fs::read_to_string("dashboards/alerts.yml").unwrap(),
    )
    .unwrap();
    let alerts: Vec<String> = rules["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap().iter())
        .map(|r| r["expr"].as_str().unwrap().to_string())
        .collect();
    assert!(alerts.len() >= 3);
    for e in exprs.iter().chain(&alerts) {
        let names = names_in(e);
        assert!(!names.is_empty(), "`{e}` names no metric");
        for name in names {
            assert!(
                families.contains(&name),
                "`{e}` uses {name}, which is not emitted"
            );
        }
    }
}

fn spillway() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_spillway"))
}

#[test]
fn speed_is_for_simulated_runs_and_must_be_positive() {
    let out = spillway()
        .args([
            "run",
            "workloads/quickstart.yaml",
            "--speed",
            "2",
            "--duration",
            "1s",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--speed applies to simulated runs"));
    let out = spillway()
        .args([
            "run",
            "workloads/quickstart.yaml",
            "--simulated",
            "--speed",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = spillway()
        .args([
            "run",
            "workloads/quickstart.yaml",
            "--metrics-addr",
            "not an address",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("HOST:PORT"));
}

#[test]
#[allow(clippy::disallowed_methods)] // the pacer's whole point is wall time
fn a_paced_simulated_run_takes_at_least_its_virtual_time_over_speed() {
    let start = std::time::Instant::now();
    let out = spillway()
        .args(["run", "workloads/quickstart.yaml", "--simulated", "--quiet"])
        .args(["--duration", "1s", "--speed", "2", "--out"])
        .arg(tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // 1 s of virtual time at twice wall speed: at least half a second (no upper bound: a
    // loaded machine may be slower, never faster).
    assert!(start.elapsed() >= std::time::Duration::from_millis(450));
}
