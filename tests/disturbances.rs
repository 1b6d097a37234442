//! The QoS promise under what a live machine does to a run, on virtual time: cost jitter,
//! engine pauses, a neighbour halving capacity, output-heavy windows; and on the workload
//! shapes of the live check (sustained 3x, 7x with a sliding window, bursts, a step, a
//! ramp). Each test asserts, after the first second of each surge, no second over target;
//! the engine at least 85% busy while shedding; and the model's prediction error reported.
//! Deterministic: same seeds, same numbers.

mod support;

use spillway::runtime::simulated::{Disturbances, Neighbour};
use support::*;

/// Two queries on one stream, 10 us of work per tuple in all: capacity 100k tuples/s on
/// one core. `rate` is a rate profile in YAML; `hop` makes the aggregate a sliding window.
fn shape(rate: &str, seconds: u64, hop: bool) -> String {
    let window = if hop {
        "HOP(ts, INTERVAL '100' MILLISECOND, INTERVAL '1' SECOND)"
    } else {
        "TUMBLE(ts, INTERVAL '100' MILLISECOND)"
    };
    format!(
        r#"
name: shape
seed: 17
duration: {seconds}s
engine: {{mode: simulated, batch_size: 100, tick: 50ms, queue_capacity: 100000000}}
streams:
  s:
    schema: {{k: int, v: float, ts: timestamp}}
    event_time: ts
    rate: {rate}
    fields:
      k: {{uniform: {{min: 0, max: 99}}}}
      v: {{normal: {{mean: 20, stddev: 6}}}}
      ts: now
queries:
  agg:
    sql: SELECT k, COUNT(*) AS n, SUM(v) AS total FROM s GROUP BY k, {window}
    qos:
      latency: {{p99: 200ms}}
      loss_tolerance: [[100, 1.0], [50, 0.8], [20, 0.5], [0, 0.0]]
    cost: 6us
  alert:
    sql: SELECT k, v FROM s WHERE v > 25
    qos:
      latency: {{p99: 100ms}}
      loss_tolerance: [[100, 1.0], [50, 0.8], [0, 0.0]]
      weight: 3
    cost: 4us
"#
    )
}

const TARGETS: [i64; 2] = [200 * MS, 100 * MS];

struct Check {
    over: usize,
    seconds: usize,
    busy: f64,
    model_error: f64,
}

/// Per second and query, the p99 of results emitted in it against the target, skipping
/// the first second of each surge (starting at `surges`, whole seconds); the mean busy
/// share over shedding ticks; the mean model error reported.
fn check(run: &Run, seconds: i64, surges: &[i64]) -> Check {
    let mut over = 0;
    let mut counted = 0;
    for k in 0..seconds {
        if surges.contains(&k) {
            continue;
        }
        for (q, target) in TARGETS.iter().enumerate() {
            counted += 1;
            let p99 = run.p99(q, k * S, (k + 1) * S);
            if p99 > *target {
                eprintln!("second {k}: query {q} p99 {:.1} ms", p99 as f64 / 1e6);
                over += 1;
            }
        }
    }
    let shedding: Vec<f64> = run
        .reports
        .iter()
        .filter(|r| r.plan.shedding && r.plan.drops_any() && r.qos.at < seconds * S)
        .map(|r| r.qos.busy)
        .collect();
    let busy = shedding.iter().sum::<f64>() / shedding.len().max(1) as f64;
    let last = run.reports.last().unwrap();
    Check {
        over,
        seconds: counted,
        busy,
        model_error: last.qos.model_error_mean.unwrap_or(f64::NAN),
    }
}

fn assert_holds(name: &str, c: &Check) {
    assert_holds_busy(name, c, 0.85);
}

/// As `assert_holds`, with the engine at least `busy` busy while shedding.
fn assert_holds_busy(name: &str, c: &Check, busy: f64) {
    eprintln!(
        "{name}: {} of {} query-seconds over target, busy {:.4} while shedding, model error {:.3}",
        c.over, c.seconds, c.busy, c.model_error
    );
    assert!(
        c.over as f64 <= 0.01 * c.seconds as f64,
        "{name}: {} of {} query-seconds over target",
        c.over,
        c.seconds
    );
    assert!(c.busy >= busy, "{name}: busy {:.3} while shedding", c.busy);
    assert!(c.model_error.is_finite(), "{name}: no model error reported");
}

fn run(text: &str, d: Disturbances) -> Run {
    simulate_disturbed(&workload(text), policy("random"), 1.0, None, d)
}

const STEP: &str =
    "{steps: [{at: 0s, rate: 50000}, {at: 2s, rate: 300000}, {at: 6s, rate: 50000}]}";

#[test]
fn cost_jitter_on_sustained_3x() {
    let r = run(
        &shape("300000", 6, false),
        Disturbances {
            cost_jitter: 0.5,
            seed: 1,
            ..Disturbances::default()
        },
    );
    assert_holds("jitter, 3x", &check(&r, 6, &[0]));
}

#[test]
fn engine_pauses_on_a_step() {
    // 40 ms stalls every 700 ms, counted as busy time of the turn they hit (as live).
    let r = run(
        &shape(STEP, 8, false),
        Disturbances {
            pause_every: 700 * MS,
            pause: 40 * MS,
            seed: 2,
            ..Disturbances::default()
        },
    );
    assert_holds("pauses, step", &check(&r, 8, &[2]));
}

#[test]
fn a_neighbour_halving_capacity_on_sustained_3x() {
    let r = run(
        &shape("300000", 8, false),
        Disturbances {
            neighbour: Some(Neighbour {
                from: 3 * S,
                to: 5 * S,
                share: 0.5,
            }),
            seed: 3,
            ..Disturbances::default()
        },
    );
    // The neighbour arriving is a surge of its own.
    assert_holds("neighbour, 3x", &check(&r, 8, &[0, 3]));
}

#[test]
fn output_heavy_sliding_windows_at_7x() {
    // 7 us per tuple (capacity 143k tuples/s) at 1M tuples/s; 100 keys x 10 windows a
    // second, 100 us per emitted row: 100 ms of work a second that thinning the input
    // barely touches.
    // The issue's live failure, scaled down: one sliding-window query alone on its stream.
    let text = shape("1000000", 6, true)
        .replace("cost: 6us", "cost: 7us")
        .split("  alert:")
        .next()
        .unwrap()
        .to_string();
    let r = run(
        &text,
        Disturbances {
            row_costs: vec![100_000, 0],
            seed: 4,
            ..Disturbances::default()
        },
    );
    let c = check(&r, 6, &[0]);
    assert_holds("output-heavy, 7x HOP", &c);
    // The model learned that part of the work does not shrink with the input (per row
    // when rows varied enough to tell them from tuples, else as fixed work), and its
    // prediction of the work after each keep held within 25% on average. (Over workload
    // seeds 17-20 the mean error is 0.07-0.19: which rows a random drop keeps moves it.)
    let shedding: Vec<_> = r.reports.iter().filter(|r| r.plan.shedding).collect();
    let learned = shedding
        .iter()
        .filter(|r| r.qos.queries[0].row_cost > 0.0 || r.qos.queries[0].fixed_cost > 0.0)
        .count();
    assert!(
        learned * 2 > shedding.len(),
        "rows cost learned on {learned} of {} ticks",
        shedding.len()
    );
    assert!(c.model_error < 0.25, "model error {:.3}", c.model_error);
}

#[test]
fn bursts_on_and_off_at_3x() {
    let r = run(
        &shape(
            "{bursts: {high: 300000, low: 30000, on: 2s, off: 2s}}",
            10,
            false,
        ),
        Disturbances {
            cost_jitter: 0.2,
            seed: 5,
            ..Disturbances::default()
        },
    );
    assert_holds("bursts 3x", &check(&r, 10, &[0, 4, 8]));
}

#[test]
fn a_slow_ramp_to_5x() {
    // Crosses capacity at about 1 s.
    let r = run(
        &shape("{ramp: {from: 50000, to: 500000, over: 8s}}", 8, false),
        Disturbances {
            cost_jitter: 0.2,
            seed: 6,
            ..Disturbances::default()
        },
    );
    assert_holds("ramp to 5x", &check(&r, 8, &[1]));
}

#[test]
fn everything_at_once_on_a_step() {
    let r = run(
        &shape(STEP, 8, false),
        Disturbances {
            cost_jitter: 0.3,
            pause_every: 900 * MS,
            pause: 30 * MS,
            neighbour: Some(Neighbour {
                from: 4 * S,
                to: 5 * S,
                share: 0.5,
            }),
            row_costs: vec![20_000, 0],
            seed: 7,
        },
    );
    // The neighbour leaving at 5 s once left the correction wound down (0.11) by the
    // backlog it caused, and the engine idle for half a second (84.98% busy in all): the
    // planner now recovers by a bounded step when nothing is queued.
    assert_holds("all disturbances, step", &check(&r, 8, &[2, 4]));
}

#[test]
fn a_cost_model_that_over_prices_the_work_1_5x_on_sustained_3x() {
    // The model believes the declared costs; the engine does the work in two thirds of
    // that time. Live, with the correction and the headroom both at 1, such a model left the
    // engine waiting for input a fifth to a third of each shedding tick. The idle lift
    // hands that time out, and the targets still hold.
    let w = workload(&shape("450000", 8, false));
    let declared: Vec<f64> = w.queries.iter().map(|q| q.cost.unwrap() as f64).collect();
    let r = simulate_disturbed(
        &w,
        policy("random"),
        1.0 / 1.5,
        Some(declared),
        Disturbances {
            cost_jitter: 0.2,
            seed: 8,
            ..Disturbances::default()
        },
    );
    assert_holds("over-priced 1.5x, 3x", &check(&r, 8, &[0]));
    let late = &r.at(7 * S).plan;
    assert!(
        late.lift > 1.3,
        "the lift took up the model's error: lift {:.2}, m {:.2}, headroom {:.2}",
        late.lift,
        late.correction,
        late.headroom
    );
}
