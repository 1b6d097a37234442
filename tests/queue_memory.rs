//! The engine's memory budget for queued input (`engine.queue_memory`): a batch that
//! several queries queue is counted once, a backlog past the budget is refused as
//! queue-full (and the ledger still balances), an empty queue and a lossless query always
//! take their batch, a pull stream is never refused but told to wait (`stream_room`), and
//! a drained engine holds nothing.

use spillway::core::batch::{Batch, Column};
use spillway::core::drop::DropReason;
use spillway::core::engine::{Engine, EngineConfig, QueryDef, StreamDef};
use spillway::core::schema::{DataType, Field, Schema};
use spillway::sql::{Catalog, plan_query};

const ROWS: usize = 1024;
const ROWS64: u64 = ROWS as u64;
const BUDGET: usize = 1 << 20;

fn schema() -> Schema {
    let f = |n: &str| Field {
        name: n.into(),
        ty: DataType::Int,
    };
    Schema::new(vec![f("a"), f("b")])
}

/// Batch `i`: `ROWS` rows, exactly 24 bytes a row (arrival and two ints).
fn batch(i: usize) -> Batch {
    let base = (i * ROWS) as i64;
    Batch {
        arrival: (0..ROWS as i64).map(|r| base + r).collect(),
        columns: vec![
            Column::Int((0..ROWS as i64).map(|r| base + r).collect()),
            Column::Int((0..ROWS as i64).map(|r| r % 7).collect()),
        ],
    }
}

/// `queries` queries reading all of `s`, with no predicate (a shared predicate index would
/// hand each its own narrowed batch).
fn engine(queries: usize, lossless: &[usize], budget: usize) -> Engine {
    let catalog = Catalog {
        streams: vec![("s".into(), schema())],
    };
    let defs = (0..queries)
        .map(|i| QueryDef {
            name: format!("q{i}"),
            plan: plan_query("SELECT a, b FROM s", &catalog).expect("plans"),
            latency_target: None,
            weight: 1.0,
            lossless: lossless.contains(&i),
        })
        .collect();
    let streams = vec![StreamDef {
        name: "s".into(),
        schema: schema(),
    }];
    let config = EngineConfig {
        queue_capacity: 1 << 30,
        queue_memory: budget,
        ..EngineConfig::default()
    };
    Engine::new(streams, defs, config).expect("builds")
}

fn full(e: &Engine, q: usize) -> u64 {
    e.snapshot().queries[q].dropped[DropReason::QueueFull.index()]
}

fn drain(e: &mut Engine) {
    while e.has_work() {
        e.run_turn(0);
    }
}

#[test]
fn a_batch_nine_queries_queue_is_counted_once() {
    let mut e = engine(9, &[], usize::MAX);
    let bytes = batch(0).heap_bytes();
    assert_eq!(bytes, ROWS * 24);
    for i in 0..10 {
        e.ingest(0, batch(i));
    }
    let snap = e.snapshot();
    assert_eq!(snap.queued_bytes, 10 * bytes as u64);
    assert!(snap.queries.iter().all(|q| q.queued == 10 * ROWS64));
    drain(&mut e);
    let snap = e.snapshot();
    assert_eq!(
        (snap.queued_bytes, snap.queued_bytes_peak),
        (0, 10 * bytes as u64)
    );
}

#[test]
fn a_backlog_past_the_budget_is_queue_full_and_the_ledger_balances() {
    let mut e = engine(3, &[], BUDGET);
    let bytes = batch(0).heap_bytes();
    let fit = BUDGET / bytes; // 42 batches of 24 KiB in 1 MiB
    assert_eq!(fit, 42);
    for i in 0..100 {
        e.ingest(0, batch(i));
    }
    let snap = e.snapshot();
    assert_eq!(snap.queued_bytes, (fit * bytes) as u64);
    for (q, s) in snap.queries.iter().enumerate() {
        assert_eq!(s.queued, (fit * ROWS) as u64, "q{q}");
        assert_eq!(full(&e, q), ((100 - fit) * ROWS) as u64, "q{q}");
        assert!(s.balances(), "q{q}");
    }
    // Once the queues drained, the budget takes batches again.
    drain(&mut e);
    assert_eq!(e.snapshot().queued_bytes, 0);
    e.ingest(0, batch(100));
    assert_eq!(e.snapshot().queries[0].queued, ROWS64);
    drain(&mut e);
    let snap = e.snapshot();
    assert!(snap.queries.iter().all(|q| q.balances()));
    assert_eq!(snap.queued_bytes_peak, (fit * bytes) as u64);
}

#[test]
fn an_empty_queue_and_a_lossless_query_take_their_batch_past_the_budget() {
    let mut e = engine(2, &[1], BUDGET);
    for i in 0..120 {
        e.ingest(0, batch(i));
    }
    // q0 stopped at the budget; q1 (lossless) took every batch, past it.
    assert_eq!(e.snapshot().queries[0].queued, 42 * ROWS64);
    assert_eq!(e.snapshot().queries[1].queued, 120 * ROWS64);
    assert_eq!(full(&e, 1), 0);
    assert!(e.snapshot().queued_bytes > BUDGET as u64);
    // q0 drains (turns alternate, so q1 keeps about 78 batches, still past the budget):
    // its empty queue takes the next batch.
    while e.queue_depth(0) > 0 {
        e.run_turn(0);
    }
    assert!(e.snapshot().queued_bytes > BUDGET as u64);
    let before = full(&e, 0);
    e.ingest(0, batch(120));
    assert_eq!((e.queue_depth(0), full(&e, 0)), (ROWS, before));
    // A second one finds its queue not empty and the budget spent.
    e.ingest(0, batch(121));
    assert_eq!((e.queue_depth(0), full(&e, 0)), (ROWS, before + ROWS64));
}

#[test]
fn a_pull_stream_is_told_to_wait_and_never_refused() {
    let mut e = engine(2, &[], BUDGET);
    e.set_pulled(0);
    assert_eq!(e.stream_room(0), BUDGET / 24);
    for i in 0..60 {
        e.ingest(0, batch(i));
    }
    assert_eq!(e.stream_room(0), 0);
    let snap = e.snapshot();
    assert!(snap.queries.iter().all(|q| q.queued == 60 * ROWS64));
    assert_eq!(full(&e, 0) + full(&e, 1), 0);
    drain(&mut e);
    assert_eq!(e.stream_room(0), BUDGET / 24);
}

#[test]
fn room_checks_agree_with_the_room_and_the_bound_follows_installed_capacities() {
    let mut e = engine(3, &[], BUDGET);
    e.set_pulled(0);
    // Drained: the budget binds (24 bytes a row), and the queues' bound is far above it.
    assert_eq!(e.stream_room_empty(0), BUDGET / 24);
    for i in 0..40 {
        e.ingest(0, batch(i));
        let room = e.stream_room(0);
        for rows in [0, 1, ROWS, room, room + 1, 8 * ROWS] {
            assert_eq!(
                e.stream_has_room(0, rows),
                room >= rows,
                "batch {i}, {rows} rows"
            );
        }
        // What the room could grow to does not shrink as the queues fill.
        assert_eq!(e.stream_room_empty(0), BUDGET / 24);
    }
    // A bound installed by the shedder (a tail-drop policy's) binds below the budget.
    e.install(&spillway::core::engine::DropRules {
        streams: vec![spillway::core::drop::DropRule::KeepAll],
        queries: vec![spillway::core::drop::DropRule::KeepAll; 3],
        queue_capacity: Some(3 * ROWS),
    });
    assert_eq!(e.stream_room_empty(0), 3 * ROWS);
    assert!(
        !e.stream_has_room(0, 1),
        "every queue is past its new bound"
    );
    drain(&mut e);
    assert_eq!(e.stream_room(0), 3 * ROWS);
    assert!(e.stream_has_room(0, 3 * ROWS) && !e.stream_has_room(0, 3 * ROWS + 1));
}
