//! The QoS monitor, scheduler and simulated clock under load, on virtual time: the
//! numbers here are exact consequences of the declared costs, not of this machine.

mod support;

use proptest::prelude::*;
use support::*;

fn one_query(rate: u64, cost: &str, seconds: u64) -> String {
    format!(
        r#"
name: load
seed: 1
duration: {seconds}s
engine: {{mode: simulated, batch_size: 256, queue_capacity: 100000000, tick: 100ms}}
streams:
  s:
    schema: {{k: int, v: float}}
    rate: {rate}
queries:
  q:
    sql: SELECT k, v FROM s WHERE v >= 0
    qos: {{latency: {{p99: 100ms}}}}
    cost: {cost}
"#
    )
}

#[test]
fn at_half_capacity_latency_is_the_service_time_and_queues_stay_short() {
    // 100k tuples/s x 5 us = 0.5 core.
    let run = simulate(
        &workload(&one_query(100_000, "5us", 5)),
        policy("none"),
        1.0,
        None,
    );
    let p99 = run.p99(0, S, 5 * S);
    // Slice delay (1 ms) plus a 256-tuple batch (1.28 ms) plus a little queueing.
    assert!(p99 < 4 * MS, "p99 {p99} ns");
    let max_queue = run
        .reports
        .iter()
        .map(|r| r.qos.queries[0].queued)
        .max()
        .unwrap();
    assert!(max_queue < 1000, "queue reached {max_queue}");
    let busy = run.at(3 * S).qos.busy;
    assert!((busy - 0.5).abs() < 0.05, "busy {busy}");
    assert_eq!(run.violations, 0);
}

#[test]
fn at_twice_capacity_without_shedding_queue_and_latency_grow_linearly() {
    // 100k tuples/s x 20 us = 2 cores of work on 1: the queue grows by 50k tuples/s.
    let run = simulate(
        &workload(&one_query(100_000, "20us", 6)),
        policy("none"),
        1.0,
        None,
    );
    let q = |t: i64| run.at(t).qos.queries[0].queued as f64;
    let (q2, q4, q6) = (q(2 * S), q(4 * S), q(6 * S));
    assert!((q2 - 100_000.0).abs() < 5_000.0, "queue at 2 s: {q2}");
    assert!((q4 - 200_000.0).abs() < 5_000.0, "queue at 4 s: {q4}");
    assert!((q6 / q4 - 1.5).abs() < 0.05, "queue at 6 s: {q6}");
    // Latency grows by half a second per second: a tuple waits for all queued work.
    let d = |t: i64| run.at(t).qos.queries[0].queue_delay as f64 / 1e9;
    assert!(
        (d(4 * S) - 2.0).abs() < 0.1,
        "queueing delay at 4 s: {}",
        d(4 * S)
    );
    assert!(
        (d(6 * S) - 3.0).abs() < 0.1,
        "queueing delay at 6 s: {}",
        d(6 * S)
    );
    assert!(run.p99(0, 5 * S, 6 * S) > 2 * S);
}

fn tight_and_loose(scheduler: &str) -> String {
    format!(
        r#"
name: two-targets
seed: 2
duration: 5s
engine: {{mode: simulated, batch_size: 128, scheduler: {scheduler}, queue_capacity: 100000000}}
streams:
  s:
    schema: {{k: int, v: float}}
    rate: 100000
queries:
  tight:
    sql: SELECT k FROM s WHERE v > 0.5
    qos: {{latency: {{p99: 20ms}}, weight: 2}}
    cost: 2us
  loose:
    sql: SELECT k, v FROM s
    qos: {{latency: {{p99: 5s}}}}
    cost: 9us
"#
    )
}

#[test]
fn qos_scheduling_keeps_the_tight_query_in_target_where_round_robin_does_not() {
    // Load: 100k x (2 + 9) us = 1.1 cores. The tight query alone needs 0.2.
    let qos = simulate(
        &workload(&tight_and_loose("qos")),
        policy("none"),
        1.0,
        None,
    );
    let rr = simulate(
        &workload(&tight_and_loose("round-robin")),
        policy("none"),
        1.0,
        None,
    );
    let qos_p99 = qos.p99(0, S, 5 * S);
    let rr_p99 = rr.p99(0, S, 5 * S);
    assert!(qos_p99 <= 20 * MS, "qos: tight p99 {qos_p99} ns");
    assert!(rr_p99 > 20 * MS, "round-robin: tight p99 {rr_p99} ns");
    // The backlog went to the loose query instead.
    assert!(qos.at(5 * S).qos.queries[1].queued > 10_000);
}

#[test]
fn monitor_measures_rates_costs_and_selectivity() {
    let run = simulate(
        &workload(&tight_and_loose("qos")),
        policy("none"),
        1.0,
        None,
    );
    let r = &run.at(2 * S).qos;
    assert!(
        (r.streams[0].rate - 100_000.0).abs() < 2_000.0,
        "{}",
        r.streams[0].rate
    );
    assert!(
        (r.queries[0].cost - 2_000.0).abs() < 1.0,
        "{}",
        r.queries[0].cost
    );
    assert!(
        (r.queries[1].cost - 9_000.0).abs() < 1.0,
        "{}",
        r.queries[1].cost
    );
    // v is uniform in [0, 1): about half pass `v > 0.5`.
    assert!(
        (r.queries[0].selectivity - 0.5).abs() < 0.05,
        "{}",
        r.queries[0].selectivity
    );
    assert!((r.queries[1].selectivity - 1.0).abs() < 1e-9);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    /// Whatever the rates, costs, batch sizes, queue bounds and policy, every tuple is
    /// accounted for at every tick and at the end.
    #[test]
    fn conservation_holds_on_random_workloads(
        rate in 1_000u64..60_000,
        cost_a in 1u64..40,
        cost_b in 1u64..40,
        batch in 1usize..300,
        queue in 100usize..50_000,
        kind in prop::sample::select(vec!["none", "tail-drop", "random", "semantic", "window-aware"]),
        seed in 0u64..1000,
    ) {
        let text = format!(r#"
name: random
seed: {seed}
duration: 2s
engine: {{mode: simulated, batch_size: {batch}, queue_capacity: {queue}}}
streams:
  s:
    schema: {{k: int, v: float, ts: timestamp}}
    event_time: ts
    rate: {rate}
    fields: {{k: {{uniform: {{min: 0, max: 20}}}}, v: {{normal: {{mean: 10, stddev: 5}}}}}}
queries:
  a:
    sql: SELECT k, v FROM s WHERE v > 5
    qos: {{latency: {{p99: 50ms}}, value: {{field: v, utility: [[0, 0.0], [20, 1.0]]}}}}
    cost: {cost_a}us
  b:
    sql: SELECT k, COUNT(*) AS n, SUM(v) AS total FROM s GROUP BY k, TUMBLE(ts, INTERVAL '100' MILLISECOND)
    qos: {{latency: {{p99: 200ms}}}}
    cost: {cost_b}us
"#);
        let run = simulate(&workload(&text), policy(kind), 1.0, None);
        prop_assert_eq!(run.violations, 0);
        for q in &run.snapshot.queries {
            prop_assert!(q.balances(), "{:?}", q);
            prop_assert_eq!(q.queued, 0);
            prop_assert_eq!(q.offered, run.snapshot.streams[0].ingested);
        }
        for r in &run.reports {
            for q in &r.qos.engine.queries {
                prop_assert!(q.balances(), "{:?}", q);
            }
        }
    }
}
