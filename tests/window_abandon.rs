//! Window-aware shedding abandons a window open when a surge begins: a window whose keep
//! at opening is more than twice what the plan keeps now drops its remaining rows and is
//! withheld whole (never emitted inexact, never processed late), while the windows opened
//! after it keep whole (key, window) groups, exactly. Found by a user trial: the window
//! open at a 25x surge kept everything, 800k tuples and 4 s of work behind it.

use spillway::core::batch::{Batch, Column};
use spillway::core::drop::{DropReason, DropRule, WindowRule};
use spillway::core::engine::{Engine, EngineConfig, QueryDef, StreamDef};
use spillway::core::plan::WindowSpec;
use spillway::core::schema::{DataType, Field, Scalar, Schema};
use spillway::sql::{Catalog, plan_query};

const SEC: i64 = 1_000_000_000;
const KEYS: i64 = 4;

fn schema() -> Schema {
    Schema::new(vec![
        Field {
            name: "k".into(),
            ty: DataType::Int,
        },
        Field {
            name: "ts".into(),
            ty: DataType::Timestamp,
        },
    ])
}

fn engine() -> Engine {
    let catalog = Catalog {
        streams: vec![("s".into(), schema())],
    };
    let sql = "SELECT k, COUNT(*) AS n, window_start FROM s \
               GROUP BY k, TUMBLE(ts, INTERVAL '1' SECOND)";
    let defs = vec![QueryDef {
        name: "per_key".into(),
        plan: plan_query(sql, &catalog).expect("plans"),
        latency_target: None,
        weight: 1.0,
        lossless: false,
    }];
    let streams = vec![StreamDef {
        name: "s".into(),
        schema: schema(),
    }];
    Engine::new(streams, defs, EngineConfig::default()).expect("builds")
}

/// 100 rows over a tenth of a second from `from`, keys round robin.
fn rows(from: i64) -> Batch {
    let ts: Vec<i64> = (0..100).map(|i| from + i * SEC / 1000).collect();
    Batch {
        arrival: ts.clone(),
        columns: vec![
            Column::Int((0..100).map(|i| i % KEYS).collect()),
            Column::Int(ts),
        ],
    }
}

fn window_rule(e: &mut Engine, keep: f64) {
    let mut rules = e.drop_rules();
    rules.queries[0] = DropRule::Window(WindowRule {
        keep,
        time_column: Some(1),
        window: WindowSpec::tumbling(SEC),
        key_columns: vec![0],
    });
    e.install(&rules);
}

/// Every row emitted: (window start, key, count).
fn drain(e: &mut Engine) -> Vec<(i64, i64, i64)> {
    while e.has_work() {
        e.run_turn(0);
    }
    let mut out = Vec::new();
    e.emit(0, |em| {
        for r in 0..em.batch.len() {
            let row = em.batch.row(r, em.types);
            let (Scalar::Int(k), Scalar::Int(n), Scalar::Timestamp(start)) =
                (&row[0], &row[1], &row[2])
            else {
                panic!("{row:?}");
            };
            out.push((*start, *k, *n));
        }
    });
    out
}

/// Feeds second 0 in two halves (the rule with `keep` comes in between), then seconds 1
/// and 2, then closes; returns the rows emitted and the engine.
fn surge(keep: f64) -> (Vec<(i64, i64, i64)>, Engine) {
    let mut e = engine();
    let mut out = Vec::new();
    for t in 0..5 {
        e.ingest(0, rows(t * SEC / 10));
    }
    out.extend(drain(&mut e));
    window_rule(&mut e, keep);
    for t in 5..30 {
        e.ingest(0, rows(t * SEC / 10));
        out.extend(drain(&mut e));
    }
    e.flush(3 * SEC);
    out.extend(drain(&mut e));
    (out, e)
}

#[test]
fn a_window_open_when_the_keep_falls_below_half_is_withheld_whole() {
    let (out, e) = surge(0.3);
    // [0, 1 s) held half its rows when the rule came in: none of it is emitted.
    assert!(out.iter().all(|r| r.0 != 0), "{out:?}");
    // Later windows keep whole groups: every emitted count is the exact 250.
    assert!(out.iter().any(|r| r.0 == SEC));
    assert!(out.iter().all(|r| r.2 == 250), "{out:?}");
    let q = &e.snapshot().queries[0];
    assert_eq!(q.windows_withheld, 1);
    // Nothing lost from the ledger: 3000 offered, 500 processed before the rule, the
    // rest of [0, 1 s) dropped whole, later windows by (key, window) group.
    let shed = q.dropped[DropReason::ShedWindow.index()];
    assert_eq!(q.offered, 3000);
    assert_eq!(q.processed + shed + q.queued, q.offered);
    assert!(shed >= 500, "the rest of [0, 1 s) is shed: {shed}");
}

#[test]
fn a_window_keeping_less_than_twice_the_new_keep_is_still_kept_whole() {
    let (out, e) = surge(0.6);
    let first: Vec<_> = out.iter().filter(|r| r.0 == 0).collect();
    assert_eq!(first.len(), KEYS as usize, "{out:?}");
    assert!(first.iter().all(|r| r.2 == 250));
    assert_eq!(e.snapshot().queries[0].windows_withheld, 0);
}
