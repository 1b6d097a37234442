//! Issue 8: the work of closing a query's windows at an engine tick is charged to that
//! query (its busy time, which the load model fits as query work), not to the engine's
//! overhead; a plain `tick` (the simulated drivers) charges nothing, so simulated runs
//! stay deterministic.

use spillway::core::batch::{Batch, Column};
use spillway::core::engine::Engine;
use spillway::core::schema::DataType;

const WORKLOAD: &str = r#"
name: charging
engine: {mode: simulated}
streams:
  s:
    schema: {k: int, ts: timestamp}
    rate: 1000
queries:
  plain:
    sql: SELECT k FROM s WHERE k < 0
    cost: 10ns
  per_key:
    sql: SELECT k, COUNT(*) AS n, window_start FROM s GROUP BY k, TUMBLE(PROCTIME(), INTERVAL '1' SECOND)
    cost: 10ns
  quiet:
    sql: SELECT COUNT(*) AS n, window_start FROM s GROUP BY TUMBLE(PROCTIME(), INTERVAL '10' SECOND)
    cost: 10ns
"#;

/// 100 tuples from `ms` (1 per ms), keys 0..4.
fn batch(ms: i64) -> Batch {
    let mut b = Batch::new(&[DataType::Int, DataType::Timestamp], 100);
    for i in 0..100 {
        let t = (ms + i) * 1_000_000;
        b.arrival.push(t);
        if let [Column::Int(k), Column::Int(ts)] = &mut b.columns[..] {
            k.push(i % 4);
            ts.push(t);
        }
    }
    b
}

fn engine() -> Engine {
    let w = spillway::spec::parse(WORKLOAD, "charging.yaml").unwrap();
    let mut e = spillway::runtime::assemble::engine_for(&w).unwrap();
    for ms in (0..1_000).step_by(100) {
        e.ingest(0, batch(ms));
    }
    while e.run_turn(0).is_some() {}
    e
}

#[test]
fn closing_windows_is_charged_to_the_query_that_emits() {
    let mut e = engine();
    let before: Vec<u64> = e.snapshot().queries.iter().map(|q| q.busy).collect();
    // A clock that moves 1 µs per reading: the closing of `per_key`'s window is the only
    // emission, so it gets the one reading's span; `quiet` (window still open) and
    // `plain` (no window) get nothing.
    let mut t = 0;
    let charged = e.tick_timed(
        2_000_000_000,
        |_| 2_000_000_000,
        || {
            t += 1_000;
            t
        },
    );
    let snap = e.snapshot();
    let added: Vec<u64> = snap
        .queries
        .iter()
        .zip(&before)
        .map(|(q, b)| q.busy - b)
        .collect();
    assert_eq!(charged, 1_000);
    assert_eq!(added, vec![0, 1_000, 0]);
    assert_eq!(
        snap.overhead, 0,
        "the driver records overhead, not the tick"
    );
    let mut rows = 0;
    e.emit(2_000_000_000, |r| rows += r.batch.len());
    assert_eq!(rows, 4, "one row per key of the closed window");
}

#[test]
fn a_plain_tick_charges_nothing() {
    let mut e = engine();
    let before: Vec<u64> = e.snapshot().queries.iter().map(|q| q.busy).collect();
    e.tick(2_000_000_000, |_| 2_000_000_000);
    let after: Vec<u64> = e.snapshot().queries.iter().map(|q| q.busy).collect();
    assert_eq!(before, after);
    let mut rows = 0;
    e.emit(2_000_000_000, |r| rows += r.batch.len());
    assert_eq!(rows, 4);
}
