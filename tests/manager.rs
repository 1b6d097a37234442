//! The Manager in simulated mode: queries added, patched and removed by a workload's
//! `changes:` at virtual times, under 3x overload. Deterministic (virtual time only).

mod support;

use spillway::runtime::assemble::engine_for;
use spillway::runtime::control::Controller;
use spillway::runtime::manage::script;
use spillway::runtime::observe::{Event, EventLog, Observers};
use spillway::runtime::simulated::{SimControl, SimSettings, run_simulated_script};
use spillway::runtime::stop::StopHandle;
use spillway::spec::{self, ChangeAction};
use support::{MS, Row, S, policy, workload};

/// 100 k tuples/s against three queries of 10 us per tuple on one core: 3x capacity.
/// At 4 s a fourth query joins (5 us, 3.5x), at 6 s a fifth (4x), at 7 s `a`'s target
/// tightens to 50 ms, at 8 s `b` leaves, flushing (3x again).
const OVERLOAD: &str = r#"
name: manager-overload
seed: 3
duration: 12s
engine: {mode: simulated, batch_size: 256, tick: 100ms, scheduler: qos, capacity: {cores: 1}}
streams:
  readings:
    schema: {sensor: int, temp: float}
    rate: 100000
    fields:
      sensor: {uniform: {min: 0, max: 100}}
      temp: {normal: {mean: 20, stddev: 5}}
queries:
  a:
    sql: SELECT sensor, temp FROM readings WHERE temp > 10
    qos: {latency: {p99: 100ms}, loss_tolerance: [[100, 1.0], [75, 0.9], [50, 0.75], [25, 0.5], [0, 0.0]]}
    cost: 10us
  b:
    sql: SELECT sensor FROM readings WHERE temp > 15
    qos: {latency: {p99: 100ms}, loss_tolerance: [[100, 1.0], [75, 0.9], [50, 0.75], [25, 0.5], [0, 0.0]]}
    cost: 10us
  c:
    sql: SELECT temp FROM readings WHERE sensor < 50
    qos: {latency: {p99: 100ms}, loss_tolerance: [[100, 1.0], [75, 0.9], [50, 0.75], [25, 0.5], [0, 0.0]]}
    cost: 10us
changes:
  - {at: 8s, remove: b}
  - at: 4s
    add: {name: d, sql: "SELECT sensor, temp FROM readings WHERE temp > 20", qos: {latency: {p99: 100ms}, loss_tolerance: [[100, 1.0], [75, 0.9], [50, 0.75], [25, 0.5], [0, 0.0]]}, cost: 5us}
  - at: 6s
    add:
      name: e
      sql: |
        SELECT sensor, temp
        FROM readings WHERE temp < 25
      qos: {latency: {p99: 100ms}, loss_tolerance: [[100, 1.0], [75, 0.9], [50, 0.75], [25, 0.5], [0, 0.0]]}
      cost: 5us
  - {at: 7s, patch: {name: a, qos: {latency: {p99: 50ms}}}}
"#;

struct Outcome {
    rows: Vec<Row>,
    events: Vec<Event>,
    snapshot: spillway::core::stats::EngineSnapshot,
    violations: u64,
    history: spillway::runtime::control::RunHistory,
}

fn run(text: &str) -> Outcome {
    let w = workload(text);
    let mut engine = engine_for(&w).unwrap();
    let settings = SimSettings::from_workload(&w, None).unwrap();
    let mut controller = Controller::new(
        &w,
        &mut engine,
        policy("random"),
        settings.cores,
        w.engine.tick,
        0,
    );
    let changes = script(&w, |_| Err("no policy changes here")).unwrap();
    let mut rows = Vec::new();
    let mut log = EventLog::default();
    let report = run_simulated_script(
        &w,
        engine,
        &settings,
        SimControl {
            controller: Some(&mut controller),
            stop: &StopHandle::new(),
        },
        changes,
        |e| {
            for i in 0..e.batch.len() {
                rows.push(Row {
                    query: e.index,
                    at: e.emitted_at,
                    latency: e.emitted_at - e.batch.arrival[i],
                    values: Vec::new(),
                    keep: 1.0,
                    ci: Vec::new(),
                });
            }
        },
        &mut Observers::new(vec![&mut log]),
    );
    Outcome {
        rows,
        events: log.0,
        snapshot: report.snapshot,
        violations: controller.violations(),
        history: controller.history().clone(),
    }
}

fn p99(rows: &[Row], q: usize, from: i64, to: i64) -> Option<i64> {
    let mut l: Vec<i64> = rows
        .iter()
        .filter(|r| r.query == q && r.at >= from && r.at < to)
        .map(|r| r.latency)
        .collect();
    if l.is_empty() {
        return None;
    }
    l.sort_unstable();
    Some(l[((l.len() as f64 * 0.99).ceil() as usize).clamp(1, l.len()) - 1])
}

#[test]
fn adding_two_queries_and_removing_one_at_3x_keeps_the_others_in_target() {
    let out = run(OVERLOAD);
    let changes = [4 * S, 6 * S, 7 * S, 8 * S];
    // Indices are stable: a, b, c, then d and e as added; b keeps its slot.
    let names: Vec<&str> = out
        .snapshot
        .queries
        .iter()
        .map(|q| q.name.as_str())
        .collect();
    assert_eq!(names, ["a", "b", "c", "d", "e"]);
    let life = |q: usize| match q {
        1 => (0, 8 * S),
        3 => (4 * S, 12 * S),
        4 => (6 * S, 12 * S),
        _ => (0, 12 * S),
    };
    let mut checked = 0;
    for second in 1..12 {
        let (from, to) = (second * S, (second + 1) * S);
        // The first second after a change may be over target while the shedder adapts.
        if changes.iter().any(|&c| from < c + S && to > c) {
            continue;
        }
        for (q, name) in names.iter().enumerate() {
            let (born, gone) = life(q);
            if from < born + S || from >= gone {
                continue;
            }
            let p = p99(&out.rows, q, from, to)
                .unwrap_or_else(|| panic!("query {q} delivered nothing in second {second}"));
            assert!(
                p <= 100 * MS,
                "query {name} p99 {:.1} ms over its 100 ms target in second {second}",
                p as f64 / 1e6
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} query-seconds checked");
    // It was overload: the shedder shed.
    let shed: u64 = out.snapshot.queries.iter().map(|q| q.shed()).sum();
    assert!(shed > 0);
    // Every ledger balances, the removed query's final one included, and it is frozen.
    assert_eq!(out.violations, 0);
    for q in &out.snapshot.queries {
        assert!(q.balances(), "{q:?}");
    }
    let removed: Vec<_> = out
        .events
        .iter()
        .filter_map(|e| match e {
            Event::QueryRemoved { query, ledger, .. } => Some((*query, ledger.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(removed.len(), 1);
    let (index, ledger) = &removed[0];
    assert_eq!(*index, 1);
    assert!(ledger.balances() && ledger.removed && ledger.queued == 0);
    assert!(ledger.offered > 0 && ledger.processed > 0);
    let mut final_b = out.snapshot.queries[1].clone();
    final_b.p50 = ledger.p50;
    final_b.p99 = ledger.p99;
    final_b.max = ledger.max;
    assert_eq!(
        &final_b, &**ledger,
        "the removed query's ledger never moves again"
    );
    // b produced nothing after its removal.
    assert!(
        out.rows
            .iter()
            .filter(|r| r.query == 1)
            .all(|r| r.at <= 8 * S + 10 * MS)
    );
    // Observers saw each change.
    let added = out
        .events
        .iter()
        .filter(|e| matches!(e, Event::QueryAdded { .. }))
        .count();
    let changed = out
        .events
        .iter()
        .filter(|e| matches!(e, Event::QueryChanged { .. }))
        .count();
    assert_eq!((added, changed), (2, 1));
}

#[test]
fn scripted_runs_are_deterministic() {
    let a = run(OVERLOAD);
    let b = run(OVERLOAD);
    assert_eq!(a.rows.len(), b.rows.len());
    assert_eq!(a.snapshot, b.snapshot);
}

#[test]
fn changes_are_validated_like_queries_with_located_errors() {
    let bad = OVERLOAD
        .replace(
            "SELECT sensor, temp FROM readings WHERE temp > 20",
            "SELECT sensor, temp FROM nowhere",
        )
        .replace("{at: 8s, remove: b}", "{at: 8s, remove: zz}");
    let e = spec::parse(&bad, "w.yaml").unwrap_err().to_string();
    assert!(
        e.contains("w.yaml:29:51:") && e.contains("changes[1].add.sql"),
        "{e}"
    );
    assert!(e.contains("nowhere"), "{e}");
    assert!(
        e.contains("changes[0].remove: no query named `zz` is running at that time"),
        "{e}"
    );
    // Names are resolved in time order: adding `d` twice clashes, re-adding `b` after its
    // removal does not.
    let twice = OVERLOAD.replace("name: e", "name: d");
    let e = spec::parse(&twice, "w.yaml").unwrap_err().to_string();
    assert!(e.contains("already running at that time"), "{e}");
    let again = OVERLOAD
        .replace("name: e", "name: b")
        .replace("at: 6s", "at: 9s");
    let w = workload(&again);
    assert!(matches!(&w.changes[3].action, ChangeAction::Add(q) if q.name == "b"));
}

#[test]
fn utility_over_the_run_counts_only_the_ticks_a_query_was_there() {
    let out = run(OVERLOAD);
    let h = &out.history;
    for q in 0..out.snapshot.queries.len() {
        let mean = h.utility_sum[q] / h.utility_ticks[q].max(1) as f64;
        assert!(
            mean >= h.utility_min[q] - 1e-9 && mean <= 1.0 + 1e-9,
            "query {q}: mean {mean} outside [{}, 1]",
            h.utility_min[q]
        );
    }
    // b was removed at 8 s, d added at 4 s: each counted fewer ticks than the whole run.
    assert!(h.utility_ticks[1] < h.ticks && h.utility_ticks[3] < h.ticks);
    assert!(h.utility_ticks[1] > 0 && h.utility_ticks[3] > 0);
}

#[test]
fn a_query_the_controller_never_saw_has_no_utility_figures() {
    // An ad-hoc query over history can come and go between two control ticks.
    let out = run(OVERLOAD);
    let mut h = out.history.clone();
    h.utility_ticks[1] = 0;
    let text = spillway::runtime::status::shedding_summary(&h, &out.snapshot);
    let name = &out.snapshot.queries[1].name;
    assert!(
        text.contains(&format!("drop point query {name}: no control tick")),
        "{text}"
    );
    let other = &out.snapshot.queries[0].name;
    assert!(
        text.contains(&format!("drop point query {other}: lowest keep")),
        "{text}"
    );
}
