//! Rows lost before they reach an event-time window still tell the time: a window whose
//! later rows were all shed (or refused by a full queue) closes when the rows before them
//! are done, due at the arrival of the first lost row that completed it, not when the next
//! kept row arrives (or at the end of input, with a latency of nothing). Found by a user's
//! trial: under `window-aware`, window [5 s, 6 s) was emitted at the end of the run and
//! reported 1.4 ms of latency, 14 s after its end.

use spillway::core::batch::{Batch, Column};
use spillway::core::drop::DropRule;
use spillway::core::engine::{Engine, EngineConfig, QueryDef, StreamDef};
use spillway::core::schema::{DataType, Field, Nanos, Scalar, Schema};
use spillway::sql::{Catalog, plan_query};

const SEC: i64 = 1_000_000_000;

fn schema() -> Schema {
    Schema::new(vec![Field {
        name: "ts".into(),
        ty: DataType::Timestamp,
    }])
}

/// A one-second event-time count, with a tuple bound of `capacity`.
fn engine(capacity: usize) -> Engine {
    let catalog = Catalog {
        streams: vec![("s".into(), schema())],
    };
    let sql = "SELECT COUNT(*) AS n, window_end FROM s GROUP BY TUMBLE(ts, INTERVAL '1' SECOND)";
    let defs = vec![QueryDef {
        name: "per_second".into(),
        plan: plan_query(sql, &catalog).expect("plans"),
        latency_target: None,
        weight: 1.0,
        lossless: false,
    }];
    let streams = vec![StreamDef {
        name: "s".into(),
        schema: schema(),
    }];
    let config = EngineConfig {
        queue_capacity: capacity,
        ..EngineConfig::default()
    };
    Engine::new(streams, defs, config).expect("builds")
}

/// Ten rows from `from` to `from + 0.9 s`, each arriving at its own time.
fn rows(from: i64) -> Batch {
    let ts: Vec<i64> = (0..10).map(|i| from + i * SEC / 10).collect();
    Batch {
        arrival: ts.clone(),
        columns: vec![Column::Int(ts)],
    }
}

fn set_keep(e: &mut Engine, keep: f64) {
    let mut rules = e.drop_rules();
    rules.queries[0] = DropRule::Random { keep };
    e.install(&rules);
}

fn run(e: &mut Engine) {
    while e.has_work() {
        e.run_turn(0);
    }
}

/// The rows emitted now: (count, window end, the arrival their latency counts from).
fn emitted(e: &mut Engine, now: Nanos) -> Vec<(i64, i64, Nanos)> {
    let mut out = Vec::new();
    e.emit(now, |em| {
        for r in 0..em.batch.len() {
            let row = em.batch.row(r, em.types);
            let (Scalar::Int(n), Scalar::Timestamp(end)) = (&row[0], &row[1]) else {
                panic!("{row:?}");
            };
            out.push((*n, *end, em.batch.arrival[r]));
        }
    });
    out
}

#[test]
fn a_window_whose_later_rows_are_all_shed_closes_when_they_arrive() {
    let mut e = engine(1 << 20);
    e.ingest(0, rows(0));
    run(&mut e);
    assert_eq!(emitted(&mut e, SEC), vec![], "window [0, 1 s) is open");
    set_keep(&mut e, 0.0);
    e.ingest(0, rows(SEC));
    run(&mut e);
    // Closed by the shed rows of the next second; due at the arrival of the last row of
    // their batch holding their latest time (1.9 s).
    assert_eq!(
        emitted(&mut e, 2 * SEC),
        vec![(10, SEC, SEC + 9 * SEC / 10)]
    );
    let q = &e.snapshot().queries[0];
    assert_eq!(q.offered, 20);
    assert_eq!(q.processed, 10);
}

#[test]
fn a_backlog_closes_each_window_at_the_first_lost_row_that_completed_it() {
    let mut e = engine(1 << 20);
    // Queued, not yet processed: the shed rows' time must wait for them.
    e.ingest(0, rows(0));
    set_keep(&mut e, 0.0);
    e.ingest(0, rows(SEC));
    e.ingest(0, rows(2 * SEC));
    assert_eq!(emitted(&mut e, 3 * SEC), vec![], "nothing processed yet");
    run(&mut e);
    // [0, 1 s) is due when the rows of the second second arrived, not the third's: its
    // latency counts from 1.9 s. Window [1 s, 2 s) kept no row and emits nothing.
    assert_eq!(
        emitted(&mut e, 3 * SEC),
        vec![(10, SEC, SEC + 9 * SEC / 10)]
    );
}

#[test]
fn rows_refused_by_a_full_queue_tell_the_time_after_the_queued_ones() {
    // A bound of ten tuples: the first batch queues, the next two are refused.
    let mut e = engine(10);
    e.ingest(0, rows(0));
    e.ingest(0, rows(SEC));
    e.ingest(0, rows(2 * SEC));
    let q = &e.snapshot().queries[0];
    assert_eq!((q.queued, q.offered), (10, 30));
    run(&mut e);
    assert_eq!(
        emitted(&mut e, 3 * SEC),
        vec![(10, SEC, SEC + 9 * SEC / 10)]
    );
}

#[test]
fn a_backlog_thinned_to_nothing_still_closes_the_window_before_it() {
    let mut e = engine(1 << 20);
    e.ingest(0, rows(0));
    run(&mut e);
    // The next second's rows queue, then the whole backlog is thinned away.
    e.ingest(0, rows(SEC));
    e.ingest(0, rows(2 * SEC));
    assert_eq!(e.thin_queued(0, 0.0, 0.8), 20);
    // [0, 1 s) closed by the thinned rows; [1 s, 2 s) lost them all and emits nothing.
    assert_eq!(
        emitted(&mut e, 3 * SEC),
        vec![(10, SEC, SEC + 9 * SEC / 10)]
    );
}

#[test]
fn live_runtimes_close_such_windows_after_ingest_and_charge_the_query() {
    let mut e = engine(1 << 20);
    e.set_lost_deferred(true);
    e.ingest(0, rows(0));
    run(&mut e);
    set_keep(&mut e, 0.0);
    let busy = e.snapshot().queries[0].busy;
    e.ingest(0, rows(SEC));
    // Held back: ingest closed nothing (its time is engine overhead).
    assert!(!e.has_results());
    assert_eq!(emitted(&mut e, 2 * SEC), vec![]);
    // The driver's clock reads 5 ns, then 12 ns: 7 ns of closing, the query's.
    let mut reads = [5, 12].into_iter();
    assert_eq!(e.close_lost(|| reads.next().expect("two reads")), 7);
    assert_eq!(e.snapshot().queries[0].busy, busy + 7);
    assert!(e.has_results());
    assert_eq!(
        emitted(&mut e, 2 * SEC),
        vec![(10, SEC, SEC + 9 * SEC / 10)]
    );
    // Nothing held back: free.
    assert_eq!(e.close_lost(|| panic!("no clock read")), 0);
}

#[test]
fn a_held_back_time_goes_before_rows_queued_after_it() {
    let mut e = engine(1 << 20);
    e.set_lost_deferred(true);
    e.ingest(0, rows(0));
    run(&mut e);
    set_keep(&mut e, 0.0);
    e.ingest(0, rows(SEC));
    set_keep(&mut e, 1.0);
    e.ingest(0, rows(2 * SEC));
    // The turn of the queued rows tells the held-back time first: [0, 1 s) due at 1.9 s,
    // then [2 s, 3 s) still open.
    run(&mut e);
    assert_eq!(
        emitted(&mut e, 3 * SEC),
        vec![(10, SEC, SEC + 9 * SEC / 10)]
    );
}
