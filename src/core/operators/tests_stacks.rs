//! Float sums of sliding windows through the two-stacks queue: slices are grouped
//! differently from one-by-one addition, so the last bit may differ from the per-window
//! path, but the same input gives the same bits however it is batched, and the values stay
//! within rounding of the per-window path's.

use proptest::prelude::*;

use super::tests::{assert_aligned, pipeline, schema};
use super::{Output, Pipeline};
use crate::core::batch::Batch;
use crate::core::schema::Scalar;

const MS: i64 = 1_000_000;

/// A batch of `(k, v, ts_ms)` rows whose float `x` is `v / 10` (not exact in binary).
fn batch(rows: &[(i64, i64, i64)]) -> Batch {
    let mut b = Batch::new(&schema().types(), rows.len());
    for &(k, v, t) in rows {
        let row = [
            Scalar::Int(k),
            Scalar::Int(v),
            Scalar::Float(v as f64 / 10.0),
            Scalar::Timestamp(t * MS),
        ];
        b.push_row(t * MS, &row);
    }
    b
}

/// Runs `rows` in batches of `size` kept with probability `keep`, then flushes.
fn run(p: &mut Pipeline, rows: &[(i64, i64, i64)], size: usize, keep: f64) -> Output {
    let mut out = p.new_output();
    for chunk in rows.chunks(size) {
        p.process(&batch(chunk), keep, 1.0, &mut out);
    }
    p.flush(1_000_000 * MS, &mut out);
    assert_aligned(&out);
    out
}

fn rows_of(p: &Pipeline, out: &Output) -> Vec<Vec<Scalar>> {
    (0..out.len())
        .map(|i| out.rows.row(i, p.output_types()))
        .collect()
}

/// Rows whose times wander forward with steps back (late rows, within the window).
fn input() -> impl Strategy<Value = Vec<(i64, i64, i64)>> {
    prop::collection::vec((0i64..3, -50i64..50, -4i64..6), 1..120).prop_map(|rows| {
        let mut t = 0i64;
        rows.into_iter()
            .map(|(k, v, dt)| {
                t = (t + dt).max(0);
                (k, v, t)
            })
            .collect()
    })
}

const SQL: &str = "SELECT k, SUM(x) AS sx, AVG(x) AS ax, MIN(x) AS lo, COUNT(*) AS n \
     FROM s GROUP BY k, HOP(ts, INTERVAL '2' MILLISECOND, INTERVAL '10' MILLISECOND)";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn float_sums_are_the_same_bits_at_every_batch_size(
        rows in input(), keep in prop::sample::select(vec![1.0, 0.3]),
    ) {
        let mut whole = pipeline(SQL);
        let want = run(&mut whole, &rows, rows.len(), keep);
        let want_rows = format!("{:?}", rows_of(&whole, &want));
        for size in [1, 3, 7] {
            let mut p = pipeline(SQL);
            let got = run(&mut p, &rows, size, keep);
            prop_assert_eq!(format!("{:?}", rows_of(&p, &got)), want_rows.clone());
            prop_assert_eq!(format!("{:?}", got.approx), format!("{:?}", want.approx));
        }
        // Within rounding of one-by-one addition.
        let mut reference = pipeline(SQL);
        if let super::Body::Aggregate(b) = &mut reference.body {
            let plan = crate::sql::plan_query(SQL, &crate::sql::Catalog {
                streams: vec![("s".into(), schema())],
            }).expect("plans");
            let crate::core::plan::PlanBody::Aggregate(a) = &plan.body else { unreachable!() };
            b.op = super::WindowAggregate::per_window(a);
        }
        let exact = run(&mut reference, &rows, rows.len(), keep);
        let (got, exp) = (rows_of(&whole, &want), rows_of(&reference, &exact));
        prop_assert_eq!(got.len(), exp.len());
        for (g, e) in got.iter().zip(&exp) {
            for (a, b) in g.iter().zip(e) {
                match (a, b) {
                    (Scalar::Float(a), Scalar::Float(b)) => {
                        prop_assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{a} vs {b}")
                    }
                    _ => prop_assert_eq!(a, b),
                }
            }
        }
    }
}
