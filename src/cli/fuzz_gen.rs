//! Generated workloads for `spillway fuzz`: small simulated workloads built from random
//! choices of schema, distributions, rate profiles, queries (filters, projections,
//! tumbling and hopping windows over event or arrival time), QoS and engine settings.
//! Most are valid; the mutator then bends them. Also the seed corpus: the shipped
//! workloads and policies, embedded so the command runs from any directory.

use rand::RngExt;
use rand::rngs::SmallRng;

/// The shipped workloads and policies (`workloads/`, `policies/`).
pub const WORKLOADS: &[(&str, &str)] = &[
    (
        "quickstart",
        include_str!("../../workloads/quickstart.yaml"),
    ),
    ("overload", include_str!("../../workloads/overload.yaml")),
    ("firehose", include_str!("../../workloads/firehose.yaml")),
    (
        "monitoring",
        include_str!("../../workloads/monitoring.yaml"),
    ),
    (
        "experiment",
        include_str!("../../workloads/experiment.yaml"),
    ),
    ("nexmark", include_str!("../../workloads/nexmark.yaml")),
    ("tcp", include_str!("../../workloads/tcp.yaml")),
];
pub const POLICIES: &[(&str, &str)] = &[
    ("none", include_str!("../../policies/none.yaml")),
    ("random", include_str!("../../policies/random.yaml")),
    ("semantic", include_str!("../../policies/semantic.yaml")),
    ("tail-drop", include_str!("../../policies/tail-drop.yaml")),
    (
        "window-aware",
        include_str!("../../policies/window-aware.yaml"),
    ),
];

fn one<'a>(rng: &mut SmallRng, xs: &[&'a str]) -> &'a str {
    xs[rng.random_range(0..xs.len())]
}

/// A generated workload as YAML text.
pub fn workload(rng: &mut SmallRng) -> String {
    let rate = match rng.random_range(0..4) {
        0 => format!("{}", rng.random_range(1..50_000)),
        1 => format!(
            "{{steps: [{{at: 0s, rate: {}}}, {{at: 50ms, rate: {}}}]}}",
            rng.random_range(0..20_000),
            rng.random_range(0..20_000)
        ),
        2 => format!(
            "{{ramp: {{from: {}, to: {}, over: 100ms}}}}",
            rng.random_range(0..10_000),
            rng.random_range(0..10_000)
        ),
        _ => "0.5".into(),
    };
    let count = if rng.random_ratio(1, 3) {
        format!("\n        count: {}", rng.random_range(0..5000))
    } else {
        String::new()
    };
    let key = one(
        rng,
        &[
            "{uniform: {min: 1, max: 5}}",
            "{zipf: {n: 100, s: 1.1}}",
            "{sequence: {start: 0, step: 1}}",
        ],
    );
    let val = one(
        rng,
        &[
            "{normal: {mean: 20, stddev: 5}}",
            "{uniform: {min: -1, max: 1}}",
            "{constant: 1.5}",
        ],
    );
    let ts = one(rng, &["now", "{sequence: {start: 0, step: 1ms}}"]);
    let mut text = format!(
        "name: gen
seed: {seed}
duration: {dur}ms
engine: {{mode: simulated, tick: {tick}ms, batch_size: {batch}, scheduler: {sched}}}
streams:
  s:
    schema: {{k: int, v: float, c: string, ts: timestamp}}
    event_time: ts
    source:
      flow: {flow}
      generator:
        rate: {rate}{count}
        fields:
          k: {key}
          v: {val}
          c: {{choice: {{values: [a, b, c]}}}}
          ts: {ts}
queries:
",
        seed = rng.random_range(0..1000),
        dur = rng.random_range(1..400),
        tick = one(rng, &["10", "50", "100"]),
        batch = one(rng, &["1", "7", "64", "1024"]),
        sched = one(rng, &["round-robin", "longest-queue", "qos"]),
        flow = one(rng, &["push", "push", "pull"]),
    );
    for i in 0..rng.random_range(1..5) {
        let sql = match rng.random_range(0..6) {
            0 => "SELECT k, v FROM s WHERE v > 20".into(),
            1 => "SELECT k, v * 2 + 1 AS w, c FROM s WHERE k % 2 = 0".into(),
            2 => format!(
                "SELECT k, COUNT(*) AS n, SUM(v) AS sv, AVG(v) AS av FROM s GROUP BY k, TUMBLE(ts, INTERVAL '{}' MILLISECOND)",
                rng.random_range(1..200)
            ),
            3 => "SELECT c, MIN(v) AS lo, MAX(v) AS hi FROM s GROUP BY c, HOP(ts, INTERVAL '10' MILLISECOND, INTERVAL '50' MILLISECOND)".into(),
            4 => "SELECT COUNT(*) AS n FROM s GROUP BY TUMBLE(PROCTIME(), INTERVAL '20' MILLISECOND)".into(),
            _ => "SELECT k, COUNT(*) AS n FROM s GROUP BY k, TUMBLE(ts, INTERVAL '1' SECOND) HAVING COUNT(*) > 3".into(),
        };
        text.push_str(&format!(
            "  q{i}:\n    sql: \"{sql}\"\n    cost: {}ns\n",
            rng.random_range(1..2000)
        ));
        if rng.random_ratio(1, 2) {
            text.push_str(&format!(
                "    qos: {{latency: {{p99: {}ms}}, loss_tolerance: [[100, 1], [{}, 0.5], [0, 0]]}}\n",
                rng.random_range(1..200),
                rng.random_range(1..99)
            ));
        }
    }
    text
}
