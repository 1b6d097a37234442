//! The end of input in steps (`Engine::flush_stepwise`): a window end at a time, each step's
//! rows handed on before the next, so a huge final window state is never held whole and an
//! abort between steps stops it. The rows and their order are those of `flush`, for tumbling
//! and sliding windows (by slices or not), on event and arrival time, keyed or not.

use spillway::core::batch::Batch;
use spillway::core::engine::{Engine, EngineConfig, QueryDef, StreamDef};
use spillway::core::schema::{DataType, Field, Scalar, Schema};
use spillway::sql::{Catalog, plan_query};

fn schema() -> Schema {
    Schema::new(vec![
        Field {
            name: "k".into(),
            ty: DataType::Int,
        },
        Field {
            name: "v".into(),
            ty: DataType::Float,
        },
        Field {
            name: "ts".into(),
            ty: DataType::Timestamp,
        },
    ])
}

const QUERIES: [&str; 5] = [
    "SELECT k, COUNT(*) AS n, SUM(v) AS s, window_end FROM s GROUP BY k, HOP(ts, INTERVAL '10' MILLISECOND, INTERVAL '100' MILLISECOND)",
    "SELECT k, MIN(v) AS lo, MAX(v) AS hi, window_start FROM s GROUP BY k, HOP(ts, INTERVAL '30' MILLISECOND, INTERVAL '90' MILLISECOND)",
    "SELECT COUNT(*) AS n, window_end FROM s GROUP BY TUMBLE(ts, INTERVAL '25' MILLISECOND)",
    "SELECT k, v FROM s WHERE v > 0.5",
    "SELECT k, AVG(v) AS m, window_end FROM s GROUP BY k, TUMBLE(PROCTIME(), INTERVAL '40' MILLISECOND) HAVING COUNT(*) > 1",
];

/// An engine running `QUERIES` with 2,000 tuples of 50 keys over 200 ms ingested and
/// drained, every window still open.
fn loaded() -> Engine {
    let catalog = Catalog {
        streams: vec![("s".into(), schema())],
    };
    let queries = QUERIES
        .iter()
        .enumerate()
        .map(|(i, sql)| QueryDef {
            name: format!("q{i}"),
            plan: plan_query(sql, &catalog).unwrap(),
            latency_target: None,
            weight: 1.0,
            lossless: false,
        })
        .collect();
    let mut e = Engine::new(
        vec![StreamDef {
            name: "s".into(),
            schema: schema(),
        }],
        queries,
        EngineConfig::default(),
    )
    .unwrap();
    let mut b = Batch::new(&schema().types(), 2000);
    for i in 0..2000i64 {
        let t = i * 100_000;
        b.push_row(
            t,
            &[
                Scalar::Int(i * 7 % 50),
                Scalar::Float((i % 13) as f64 / 13.0),
                Scalar::Timestamp(t),
            ],
        );
    }
    e.ingest(0, b);
    while e.run_turn(0).is_some() {}
    e
}

/// Each emitted row as text, with its query.
fn take(e: &mut Engine, out: &mut Vec<String>) {
    e.emit(1 << 40, |em| {
        for r in 0..em.batch.len() {
            out.push(format!("{} {:?}", em.query, em.batch.row(r, em.types)));
        }
    });
}

#[test]
fn stepwise_gives_the_rows_of_flush_in_order_a_window_end_at_a_time() {
    let mut whole = loaded();
    let mut expected = Vec::new();
    take(&mut whole, &mut expected);
    let before = expected.len();
    whole.flush(1 << 30);
    take(&mut whole, &mut expected);
    assert!(
        expected.len() > before + 500,
        "{} rows at the end",
        expected.len()
    );

    let mut stepped = loaded();
    let mut got = Vec::new();
    take(&mut stepped, &mut got);
    let mut steps = 0;
    let mut most = 0;
    let done = stepped.flush_stepwise(
        1 << 30,
        |e| {
            let n = got.len();
            take(e, &mut got);
            most = most.max(got.len() - n);
            steps += 1;
        },
        || true,
    );
    assert!(done);
    assert_eq!(got, expected);
    assert!(steps > 10, "{steps} steps");
    // One step holds the rows of one window end of one query: at most 50 keys.
    assert!(most <= 50, "{most} rows in one step");
}

#[test]
fn an_abort_between_steps_stops_the_flush() {
    let mut e = loaded();
    let mut got = Vec::new();
    take(&mut e, &mut got);
    let before = got.len();
    let steps = std::cell::Cell::new(0);
    let done = e.flush_stepwise(
        1 << 30,
        |e| {
            take(e, &mut got);
            steps.set(steps.get() + 1);
        },
        || steps.get() < 3,
    );
    assert!(!done);
    assert_eq!(steps.get(), 3);
    assert!(
        got.len() - before <= 150,
        "{} rows after the abort",
        got.len() - before
    );
}
