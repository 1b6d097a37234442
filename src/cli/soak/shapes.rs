//! The workloads `spillway soak` runs: one stream, eight windowed aggregates and an alert
//! filter, so that the query work per tuple (about 120 ns over the nine queries on one
//! core, as the probe measures it) rather than ingest sets the capacity, and overload shapes of 3x-7x stay at rates a generator thread can
//! produce on this 2-core machine. Invariant: every shape's text is a valid workload whose
//! queries all carry a latency target.

use crate::core::schema::Nanos;

pub const SHAPES: [&str; 5] = ["3x", "7x-hop", "bursts", "step", "ramp"];
/// Not in the default set: the issue's own setup, at its fixed rate (not scaled).
pub const ISSUE: &str = "issue";

/// The aggregates every shape runs. Sliding windows by slices cost a hash lookup and a
/// slice update per tuple and a merge per emitted row; different keys, slides and
/// filters keep the queries' costs apart, as a real query mix would.
const AGGREGATES: [(&str, &str); 8] = [
    (
        "agg",
        "SELECT k, COUNT(*) AS n, AVG(v) AS mean, window_end FROM src GROUP BY k, HOP(ts, INTERVAL '10' MILLISECOND, INTERVAL '1' SECOND)",
    ),
    (
        "wide",
        "SELECT g, COUNT(*) AS n, AVG(v) AS mean, MAX(v) AS hi, window_end FROM src GROUP BY g, HOP(ts, INTERVAL '100' MILLISECOND, INTERVAL '1' SECOND)",
    ),
    (
        "spread",
        "SELECT g, SUM(v * v) AS energy, MIN(v) AS lo, window_end FROM src WHERE v > 0.1 GROUP BY g, HOP(ts, INTERVAL '50' MILLISECOND, INTERVAL '1' SECOND)",
    ),
    (
        "recent",
        "SELECT k, COUNT(*) AS n, SUM(v) AS total, window_end FROM src WHERE v > 0.2 GROUP BY k, HOP(ts, INTERVAL '20' MILLISECOND, INTERVAL '500' MILLISECOND)",
    ),
    (
        "pairs",
        "SELECT k, h, COUNT(*) AS n, MAX(v) AS hi, window_end FROM src GROUP BY k, h, HOP(ts, INTERVAL '100' MILLISECOND, INTERVAL '1' SECOND)",
    ),
    (
        "mix",
        "SELECT h, SUM(v * 3 - 1) AS s, AVG(v * v) AS m2, window_end FROM src WHERE v < 0.8 GROUP BY h, HOP(ts, INTERVAL '25' MILLISECOND, INTERVAL '1' SECOND)",
    ),
    (
        "slow",
        "SELECT g, COUNT(*) AS n, MIN(v) AS lo, MAX(v) AS hi, window_end FROM src GROUP BY g, HOP(ts, INTERVAL '200' MILLISECOND, INTERVAL '2' SECOND)",
    ),
    (
        "tail",
        "SELECT k, COUNT(*) AS n, AVG(v) AS mean, window_end FROM src WHERE v > 0.5 GROUP BY k, HOP(ts, INTERVAL '10' MILLISECOND, INTERVAL '250' MILLISECOND)",
    ),
];

/// The issue's output-heavy sliding window: 1000 keys on processing time with a 10 ms
/// slide emit about 100k rows a second whatever the input.
const ISSUE_HOP: &str = "SELECT g, COUNT(*) AS n, SUM(v) AS total, AVG(v) AS mean, window_end FROM src WHERE v > 0.5 GROUP BY g, HOP(PROCTIME(), INTERVAL '10' MILLISECOND, INTERVAL '1' SECOND)";

/// One shape: its workload text at `capacity` tuples/s over `d` ns, and when its surges
/// start (ns).
pub fn shape(name: &str, capacity: f64, d: Nanos) -> Option<(String, Vec<Nanos>)> {
    let r = |x: f64| (x * capacity).round() as u64;
    let s = |ns: Nanos| format!("{}ms", ns / 1_000_000);
    let (rate, surges, hop) = match name {
        "3x" => (format!("{}", r(3.0)), vec![0], false),
        "7x-hop" => (format!("{}", r(7.0)), vec![0], true),
        "bursts" => {
            let period = 10_000_000_000;
            (
                format!(
                    "{{bursts: {{high: {}, low: {}, on: 5s, off: 5s}}}}",
                    r(3.0),
                    r(0.3)
                ),
                (0..).map(|k| k * period).take_while(|t| *t < d).collect(),
                false,
            )
        }
        "step" => (
            format!(
                "{{steps: [{{at: 0s, rate: {}}}, {{at: {}, rate: {}}}, {{at: {}, rate: {}}}]}}",
                r(0.5),
                s(d / 4),
                r(3.0),
                s(3 * d / 4),
                r(0.5)
            ),
            vec![d / 4],
            false,
        ),
        // Crosses capacity a ninth of the way in.
        "ramp" => (
            format!(
                "{{ramp: {{from: {}, to: {}, over: {}}}}}",
                r(0.5),
                r(5.0),
                s(d)
            ),
            vec![d / 9],
            false,
        ),
        ISSUE => return Some((issue(), vec![0])),
        _ => return None,
    };
    Some((workload(&rate, hop), surges))
}

/// The workload of every scaled shape (`rate` "unlimited" is the capacity probe): the
/// aggregates and the alert, with the issue's sliding window in place of `agg` for `hop`.
pub fn workload(rate: &str, hop: bool) -> String {
    // A measured rate cannot wait (push); the capacity probe offers what the engine takes.
    let flow = if rate == "unlimited" { "pull" } else { "push" };
    let mut queries = String::new();
    for (i, (name, sql)) in AGGREGATES.iter().enumerate() {
        let (name, sql) = if hop && i == 0 {
            ("hop", ISSUE_HOP)
        } else {
            (*name, *sql)
        };
        queries.push_str(&format!(
            "  {name}:\n    sql: \"{sql}\"\n    qos:\n      latency: {{p99: 200ms}}\n      loss_tolerance: [[100, 1.0], [50, 0.8], [0, 0.0]]\n    sink: none\n"
        ));
    }
    format!(
        r#"name: soak
seed: 23
engine: {{mode: live, tick: 50ms, batch_size: 512, scheduler: qos, queue_capacity: 100000000, queue_memory: 64GiB}}
streams:
  src:
    schema: {{k: int, g: int, h: int, v: float, ts: timestamp}}
    event_time: ts
    source:
      generator:
        rate: {rate}
        fields:
          k: {{uniform: {{min: 1, max: 50}}}}
          g: {{uniform: {{min: 1, max: 1000}}}}
          h: {{uniform: {{min: 1, max: 100}}}}
          v: {{uniform: {{min: 0, max: 1}}}}
          ts: now
      flow: {flow}
queries:
{queries}  alert:
    sql: SELECT k, v FROM src WHERE v > 0.9
    qos:
      latency: {{p99: 100ms}}
      loss_tolerance: [[100, 1.0], [0, 0.0]]
      weight: 2
    sink: none
"#
    )
}

/// The issue's setup as it was reported: 2.4 M tuples/s, keys uniform over 1..1000, one
/// sliding-window query on processing time with a 200 ms p99 target.
fn issue() -> String {
    r#"name: soak-issue
seed: 23
engine: {mode: live, tick: 50ms, batch_size: 512, scheduler: qos, queue_capacity: 100000000, queue_memory: 64GiB}
streams:
  src:
    schema: {key: int, v: float}
    source:
      generator:
        rate: 2400000
        fields:
          key: {uniform: {min: 1, max: 1000}}
          v: {uniform: {min: 0, max: 1}}
      flow: push
queries:
  hop:
    sql: "SELECT key, COUNT(*), SUM(v), AVG(v), window_end FROM src WHERE v > 0.5 GROUP BY key, HOP(PROCTIME(), INTERVAL '10' MILLISECOND, INTERVAL '1' SECOND)"
    qos:
      latency: {p99: 200ms}
      loss_tolerance: [[100, 1.0], [50, 0.8], [0, 0.0]]
    sink: none
"#
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_parses_with_targets_on_every_query() {
        let mut names: Vec<&str> = SHAPES.to_vec();
        names.push(ISSUE);
        for name in names {
            let (text, surges) = shape(name, 400_000.0, 60_000_000_000).unwrap();
            let w = crate::spec::parse(&text, name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!surges.is_empty());
            assert!(!w.queries.is_empty());
            for q in &w.queries {
                assert!(q.qos.as_ref().and_then(|s| s.latency).is_some(), "{name}");
            }
        }
        let probe = crate::spec::parse(&workload("unlimited", true), "probe").unwrap();
        assert_eq!(probe.queries.len(), 9);
        assert!(shape("nope", 1.0, 1).is_none());
    }
}
