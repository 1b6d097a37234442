//! Bursts shorter than the plan's reaction: 200 ms at 3x capacity every second, with a
//! 100 ms control tick. Robust estimates give a burst's first tick no weight, so the plan
//! at its end still sees the calm rate; only the inner guard, between ticks, can hold the
//! target. Found by a user's trial: every second was over a 50 ms target under every
//! policy (p99 82-85 ms), because the guard cut once per tick (one query, halved: 1.5x
//! left) and the next plan restored the keep it had cut.

mod support;

use support::*;

/// One stream bursting to `high` tuples/s for 200 ms of every second (10k/s otherwise),
/// read by the given queries under the deadline-aware (`qos`) scheduler.
fn bursting(high: u64, queries: &str) -> String {
    format!(
        r#"
name: bursts
seed: 3
duration: 6s
engine: {{mode: simulated, tick: 100ms, batch_size: 256, scheduler: qos, capacity: {{cores: 1}}, queue_capacity: 10000000, queue_memory: 1GiB}}
streams:
  s:
    schema: {{k: int, v: float, ts: timestamp}}
    event_time: ts
    source:
      generator:
        rate: {{bursts: {{high: {high}, low: 10000, on: 200ms, off: 800ms}}}}
        fields:
          k: {{uniform: {{min: 1, max: 1000}}}}
          v: {{normal: {{mean: 50, stddev: 10}}}}
          ts: now
queries:
{queries}"#
    )
}

/// A filter with a 50 ms target at 10 us a tuple: 3x at 300k tuples/s.
const FILTER: &str = r#"  f:
    sql: SELECT k, v FROM s WHERE v > 60
    qos: {latency: {p99: 50ms}}
    cost: 10us
"#;

/// A sliding count (100 ms target, 8 us) and a filter (50 ms, 2 us): 3x at 300k/s. Both
/// lose utility steeply below half their input (the trial's shape).
const TWO: &str = r#"  agg:
    sql: "SELECT k, COUNT(*) AS n, SUM(v) AS sv, window_end FROM s GROUP BY k, HOP(ts, INTERVAL '100' MILLISECOND, INTERVAL '1' SECOND)"
    qos: {latency: {p99: 100ms}, loss_tolerance: [[100, 1.0], [50, 0.7], [0, 0.0]]}
    cost: 8us
  f:
    sql: SELECT k, v FROM s WHERE v > 60
    qos: {latency: {p99: 50ms}, loss_tolerance: [[100, 1.0], [50, 0.7], [0, 0.0]]}
    cost: 2us
"#;

/// Every second's p99 of every query within its target (`targets`, ms), from the second
/// second on (the first burst meets a controller with no measurements at all).
fn holds(text: &str, kind: &str, targets: &[i64]) {
    let w = workload(text);
    let run = simulate(&w, policy(kind), 1.0, None);
    for (q, &t) in targets.iter().enumerate() {
        for s in 1..6 {
            let p99 = run.p99(q, s * S, (s + 1) * S);
            assert!(
                p99 <= t * MS,
                "{kind}: query {q} p99 {:.1} ms over its {t} ms target in second {s}",
                p99 as f64 / 1e6
            );
        }
    }
    assert!(run.reports.iter().any(|r| r.plan.shedding), "{kind}: shed");
    assert!(
        run.reports.iter().any(|r| !r.plan.shedding && r.qos.at > S),
        "{kind}: the calm between bursts is not shed"
    );
}

#[test]
fn a_filter_holds_its_target_through_200_ms_bursts_at_3x() {
    for kind in ["random", "semantic"] {
        holds(&bursting(300_000, FILTER), kind, &[50]);
    }
}

#[test]
fn two_queries_hold_their_targets_through_200_ms_bursts_at_3x() {
    // Not yet held: the same under the round-robin scheduler (the filter waits behind the
    // count's queue: 54-79 ms in every burst, from 65-128 ms before), and bursts of 10x:
    // halving at most three times per tick does not catch up with a burst that steep.
    holds(&bursting(300_000, TWO), "random", &[100, 50]);
}
