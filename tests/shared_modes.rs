//! Shared evaluation in both modes: a workload of 12 threshold and equality queries on one
//! stream (so its predicate index is in use) gives, with the index and without it, the same
//! rows in a simulated run and the same result counts and balanced ledgers in a live run.

use spillway::core::engine::Engine;
use spillway::core::stats::EngineSnapshot;
use spillway::runtime::assemble::{engine_for, run_headless};
use spillway::runtime::observe::Observers;
use spillway::runtime::simulated::{SimControl, SimSettings, run_simulated};
use spillway::runtime::stop::StopHandle;
use spillway::spec::{self, Policy};

fn workload(mode: &str) -> spec::Workload {
    workload_at(mode, "20000", 20_000)
}

/// `workload` at `rate` tuples/s (or `unlimited`), `count` tuples in all.
fn workload_at(mode: &str, rate: &str, count: u64) -> spec::Workload {
    let mut y = format!(
        "name: shared-modes\nseed: 11\nduration: 2s\nengine: {{mode: {mode}, batch_size: 64}}\n\
         streams:\n  s:\n    schema: {{sensor: int, temp: float, city: string, ts: timestamp}}\n    \
         event_time: ts\n    rate: {rate}\n    count: {count}\n    fields:\n      \
         sensor: {{uniform: {{min: 0, max: 99}}}}\n      temp: {{normal: {{mean: 20, stddev: 5}}}}\n      \
         city: {{choice: {{values: [eu, us, asia]}}}}\n      ts: {{sequence: {{start: 0, step: 50us}}}}\nqueries:\n"
    );
    for i in 0..8 {
        y.push_str(&format!(
            "  hot{i}:\n    sql: \"SELECT sensor, temp FROM s WHERE temp > {}.5\"\n    cost: 50ns\n",
            22 + i
        ));
    }
    for c in ["eu", "us"] {
        y.push_str(&format!(
            "  city_{c}:\n    sql: \"SELECT sensor, ts FROM s WHERE city = '{c}' AND sensor < 50\"\n    cost: 50ns\n"
        ));
    }
    y.push_str("  low:\n    sql: \"SELECT sensor FROM s WHERE 10 >= sensor\"\n    cost: 50ns\n");
    y.push_str("  odd:\n    sql: \"SELECT sensor FROM s WHERE sensor % 2 = 1\"\n    cost: 50ns\n");
    spec::parse(&y, "shared-modes.yaml").unwrap()
}

fn engine(w: &spec::Workload, shared: bool) -> Engine {
    let mut e = engine_for(w).unwrap();
    if !shared {
        e.set_share_min(usize::MAX);
    }
    e
}

fn simulated(shared: bool) -> (Vec<String>, EngineSnapshot, usize) {
    let w = workload("simulated");
    let settings = SimSettings::from_workload(&w, None).unwrap();
    let mut e = engine(&w, shared);
    let members = e.shared_queries(0).len();
    let mut rows = Vec::new();
    let report = run_simulated(
        &w,
        e,
        &settings,
        SimControl {
            controller: None,
            stop: &StopHandle::new(),
        },
        |em| {
            for i in 0..em.batch.len() {
                rows.push(format!("{} {:?}", em.query, em.batch.row(i, em.types)));
            }
        },
        &mut Observers::default(),
    );
    (rows, report.snapshot, members)
}

fn balanced(s: &EngineSnapshot, count: u64) {
    for q in &s.queries {
        let dropped: u64 = q.dropped.iter().sum();
        assert_eq!(q.offered, count, "{}", q.name);
        assert_eq!(q.offered, dropped + q.processed + q.queued, "{}", q.name);
    }
}

#[test]
fn simulated_runs_give_the_same_rows_shared_and_unshared() {
    let (a, sa, none) = simulated(false);
    let (b, sb, members) = simulated(true);
    assert_eq!(none, 0);
    assert_eq!(members, 11, "every query but `odd` shares");
    assert!(a.len() > 1000);
    assert_eq!(a, b);
    balanced(&sa, 20_000);
    balanced(&sb, 20_000);
    for (x, y) in sa.queries.iter().zip(&sb.queries) {
        assert_eq!((x.results, x.dropped), (y.results, y.dropped), "{}", x.name);
    }
}

#[test]
fn live_runs_give_the_same_results_shared_and_unshared() {
    live_runs_agree(&workload("live"), 20_000);
}

/// At an unlimited rate the engine falls behind: source batches wait in the channel and are
/// merged before routing, and members' rows coalesce in their queues.
#[test]
fn live_runs_behind_their_source_give_the_same_results_shared_and_unshared() {
    live_runs_agree(&workload_at("live", "unlimited", 300_000), 300_000);
}

fn live_runs_agree(w: &spec::Workload, count: u64) {
    let run = |shared| {
        run_headless(
            w,
            engine(w, shared),
            Policy::none(),
            None,
            &mut Observers::default(),
        )
        .unwrap()
        .snapshot
    };
    let (a, b) = (run(false), run(true));
    balanced(&a, count);
    balanced(&b, count);
    for (x, y) in a.queries.iter().zip(&b.queries) {
        assert_eq!(x.results, y.results, "{}", x.name);
        assert_eq!(x.processed, count, "{}", x.name);
        assert_eq!(y.processed, count, "{}", y.name);
    }
}
