//! Issue 9, item 1: a row built from a window that lost tuples never looks exact, whatever
//! the keep fraction (0 included), and a window that lost every tuple is counted.

use spillway::core::batch::{Batch, Column};
use spillway::core::drop::DropRule;
use spillway::core::engine::{DropRules, Engine};
use spillway::core::schema::DataType;

const WORKLOAD: &str = r#"
name: honest
engine: {mode: simulated}
streams:
  s:
    schema: {k: int, v: int, ts: timestamp}
    event_time: ts
    rate: 1000
queries:
  per_key:
    sql: SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM s GROUP BY k, TUMBLE(ts, INTERVAL '1' SECOND)
    cost: 10ns
  other:
    sql: SELECT k FROM s WHERE k < 0
    cost: 10ns
"#;

/// 100 tuples from `ms` (1 per ms), keys alternating 0 and 1, `v` = 1.
fn batch(ms: i64) -> Batch {
    let mut b = Batch::new(&[DataType::Int, DataType::Int, DataType::Timestamp], 100);
    for i in 0..100 {
        let t = (ms + i) * 1_000_000;
        b.arrival.push(t);
        if let [Column::Int(k), Column::Int(v), Column::Int(ts)] = &mut b.columns[..] {
            k.push(i % 2);
            v.push(1);
            ts.push(t);
        }
    }
    b
}

fn rules(keep: f64) -> DropRules {
    DropRules {
        streams: vec![DropRule::KeepAll],
        queries: vec![DropRule::Random { keep }, DropRule::KeepAll],
        queue_capacity: None,
    }
}

/// `(window start s, keep, n interval)` of every `per_key` row.
type Row = (i64, Option<f64>, Option<(f64, f64)>);

fn drain(e: &mut Engine, now: i64, rows: &mut Vec<Row>) {
    while e.run_turn(now).is_some() {}
    e.emit(now, |r| {
        if r.query != "per_key" {
            return;
        }
        for i in 0..r.batch.len() {
            let Column::Int(starts) = &r.batch.columns[3] else {
                panic!("window_start")
            };
            let keep = r
                .approx
                .and_then(|a| a.keep.get(i).copied())
                .filter(|&k| k < 1.0);
            let ci = r.approx.and_then(|a| a.interval(1, i));
            rows.push((starts[i] / 1_000_000_000, keep, ci));
        }
    });
}

fn engine() -> Engine {
    let w = spillway::spec::parse(WORKLOAD, "honest.yaml").unwrap();
    spillway::runtime::assemble::engine_for(&w).unwrap()
}

#[test]
fn a_window_cut_by_keep_0_carries_its_keep_and_a_fully_lost_one_is_counted() {
    let mut e = engine();
    let mut rows = Vec::new();
    // Window 0: 500 ms kept, then keep 0 for the rest of it and all of window 1.
    for ms in (0..500).step_by(100) {
        e.ingest(0, batch(ms));
    }
    drain(&mut e, 500_000_000, &mut rows);
    e.install(&rules(0.0));
    for ms in (500..2000).step_by(100) {
        e.ingest(0, batch(ms));
    }
    drain(&mut e, 2_000_000_000, &mut rows);
    // Window 2: exact again.
    e.install(&rules(1.0));
    for ms in (2000..3000).step_by(100) {
        e.ingest(0, batch(ms));
    }
    drain(&mut e, 3_000_000_000, &mut rows);
    e.flush(3_000_000_000);
    drain(&mut e, 3_000_000_000, &mut rows);
    let snap = e.snapshot();
    assert!(snap.queries.iter().all(|q| q.balances()));
    let w0: Vec<&Row> = rows.iter().filter(|r| r.0 == 0).collect();
    assert_eq!(w0.len(), 2, "{rows:?}");
    for r in &w0 {
        let keep =
            r.1.unwrap_or_else(|| panic!("window 0 lost half its tuples: {rows:?}"));
        assert!((keep - 0.5).abs() < 1e-9, "{rows:?}");
        assert_eq!(r.2, None, "no interval can be computed for a keep of 0");
    }
    assert!(rows.iter().all(|r| r.0 != 1), "{rows:?}");
    assert_eq!(snap.queries[0].windows_lost, 1, "{rows:?}");
    let w2: Vec<&Row> = rows.iter().filter(|r| r.0 == 2).collect();
    assert_eq!(w2.len(), 2);
    assert!(
        w2.iter().all(|r| r.1.is_none()),
        "window 2 is exact: {rows:?}"
    );
}

#[test]
fn a_group_that_kept_nothing_of_a_sampled_batch_still_says_it_lost() {
    let mut e = engine();
    let mut rows = Vec::new();
    // Window 0: exact for 900 ms, then a batch sampled so thinly that nothing of it is
    // kept: no group gets Horvitz-Thompson state, yet every group may have lost tuples.
    for ms in (0..900).step_by(100) {
        e.ingest(0, batch(ms));
    }
    e.install(&rules(1e-12));
    e.ingest(0, batch(900));
    e.install(&rules(1.0));
    drain(&mut e, 1_000_000_000, &mut rows);
    e.flush(1_000_000_000);
    drain(&mut e, 1_000_000_000, &mut rows);
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in &rows {
        let keep = r.1.unwrap_or_else(|| panic!("a row looks exact: {rows:?}"));
        assert!((keep - 0.9).abs() < 1e-9, "{rows:?}");
        assert_eq!(r.2, None, "{rows:?}");
    }
}
