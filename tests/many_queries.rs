//! Many standing queries on one stream (issue 9): a simulated run's work must grow with
//! the batches ingested times their readers, not with slices times queries. Counted in
//! scheduler turns (deterministic), never timed. Every tuple still reaches every query,
//! each row reaches the one query that matches it, and a stream with few readers still
//! ingests every slice.

use spillway::core::engine::Engine;
use spillway::runtime::observe::Observers;
use spillway::runtime::simulated::{
    HOLD_MAX, HOLD_READERS, SLICE, SimControl, SimReport, SimSettings, run_simulated,
};
use spillway::runtime::stop::StopHandle;
use spillway::spec;

/// `n` queries `SELECT a, b FROM s WHERE a = i` on one stream of `rate` tuples/s whose `a`
/// is `i mod n` in turn: each tuple matches exactly one query.
fn workload(n: usize, rate: u64, duration_ms: u64) -> spec::Workload {
    let mut y = format!(
        "name: many\nseed: 1\nduration: {duration_ms}ms\nengine: {{mode: simulated, max_queries: \
         {n}}}\nstreams:\n  s:\n    schema: {{a: int, b: int}}\n    rate: {rate}\n    fields:\n      \
         a: {{sequence: {{start: 0, step: 1}}}}\n      b: {{uniform: {{min: 0, max: 9}}}}\n\
         queries:\n"
    );
    for i in 0..n {
        y.push_str(&format!(
            "  q{i}:\n    sql: \"SELECT a, b FROM s WHERE a % {n} = {i}\"\n    cost: 50ns\n    \
             sink: none\n"
        ));
    }
    spec::parse(&y, "many.yaml").unwrap()
}

/// Runs `w` with no controller; returns the report and the rows per query (`a` values).
fn run(w: &spec::Workload) -> (SimReport, Vec<Vec<i64>>) {
    let engine: Engine = spillway::runtime::assemble::engine_for(w).unwrap();
    let settings = SimSettings::from_workload(w, None).unwrap();
    let mut rows = vec![Vec::new(); w.queries.len()];
    let report = run_simulated(
        w,
        engine,
        &settings,
        SimControl {
            controller: None,
            stop: &StopHandle::new(),
        },
        |e| {
            for i in 0..e.batch.len() {
                match e.batch.row(i, e.types)[0] {
                    spillway::core::schema::Scalar::Int(a) => rows[e.index].push(a),
                    ref d => panic!("a is an int: {d:?}"),
                }
            }
        },
        &mut Observers::default(),
    );
    (report, rows)
}

#[test]
fn many_queries_at_a_low_rate_cost_turns_per_held_span_not_per_slice() {
    // 1000 tuples/s: one tuple per 1 ms slice. Ingesting every slice would cost each of
    // the 500 queries 1000 turns; held for `HOLD_MAX`, about 100.
    let (n, rate, ms) = (500, 1000, 1000);
    assert!(n >= HOLD_READERS);
    let w = workload(n, rate, ms);
    let (report, rows) = run(&w);
    let tuples = rate * ms / 1000;
    let spans = (ms as i64 * 1_000_000 / HOLD_MAX) as u64;
    assert!(
        report.turns <= n as u64 * (spans + 1),
        "{} turns for {n} queries over {spans} held spans: per-slice work came back",
        report.turns
    );
    assert!(report.turns >= n as u64 * spans, "{} turns", report.turns);
    // Nothing lost or misrouted: every query saw every tuple and kept exactly its own.
    for (i, (q, r)) in report.snapshot.queries.iter().zip(&rows).enumerate() {
        assert!(q.balances(), "{q:?}");
        assert_eq!(q.offered, tuples, "{}", q.name);
        assert_eq!(q.processed, tuples, "{}", q.name);
        let want: Vec<i64> = (0..tuples as i64)
            .filter(|a| a % n as i64 == i as i64)
            .collect();
        assert_eq!(r, &want, "{}", q.name);
    }
    // Held tuples keep their own arrival times: the delay they add is at most `HOLD_MAX`
    // plus one slice.
    for q in &report.snapshot.queries {
        assert!(q.max <= HOLD_MAX + SLICE, "{}: max {}", q.name, q.max);
    }
}

#[test]
fn a_stream_with_few_readers_ingests_every_slice() {
    let n = HOLD_READERS - 1;
    let (report, rows) = run(&workload(n, 1000, 200));
    // One tuple per slice, each offered to every query: one turn per query per slice.
    assert_eq!(report.turns, n as u64 * 200);
    assert_eq!(rows.iter().map(Vec::len).sum::<usize>(), 200);
    // Each tuple waits for the end of its slice only (plus the turns before its own).
    for q in &report.snapshot.queries {
        assert!(q.max <= 2 * SLICE, "{}: max {}", q.name, q.max);
    }
}
