//! Batch-at-once placement (`window::fast`) against the general row-by-row loop: random
//! tuples (late ones, gaps, filtered ones) in random batches, some shed at random or
//! thinned by value, give the same rows, side-car and late count either way, for tumbling
//! windows on event and arrival time with and without allowed lateness, several key
//! columns, and sliced sliding windows.

use proptest::prelude::*;

use super::tests_sliced::{Input, input, run};
use super::{Body, Pipeline, WindowAggregate};
use crate::core::plan::PlanBody;
use crate::sql::{Catalog, plan_query};

const MS: i64 = 1_000_000;

/// The pipeline of `sql` with `lateness_ms` of allowed lateness, placing batches at once
/// when `batch` (else row by row).
fn build(sql: &str, lateness_ms: i64, batch: bool) -> Pipeline {
    let catalog = Catalog {
        streams: vec![("s".into(), super::tests::schema())],
    };
    let plan = plan_query(sql, &catalog).expect("plans");
    let mut p = Pipeline::new(&plan, &super::tests::schema().types());
    let (PlanBody::Aggregate(a), Body::Aggregate(b)) = (&plan.body, &mut p.body) else {
        unreachable!("an aggregate query")
    };
    let mut a = a.clone();
    a.lateness = lateness_ms * MS;
    b.op = WindowAggregate::new(&a);
    if !batch {
        b.op = std::mem::replace(&mut b.op, WindowAggregate::new(&a)).without_batch_placement();
    }
    p
}

fn same_either_way(q: &str, lateness_ms: i64, input: &Input) -> Result<(), TestCaseError> {
    let (mut fast, mut rowwise) = (build(q, lateness_ms, true), build(q, lateness_ms, false));
    let (got, got_out) = run(&mut fast, input);
    let (want, want_out) = run(&mut rowwise, input);
    prop_assert_eq!(&got, &want);
    // Debug text: NaN (no interval) equals NaN, every other float prints exactly.
    prop_assert_eq!(
        format!("{:?}", got_out.approx),
        format!("{:?}", want_out.approx)
    );
    prop_assert_eq!(&got_out.rows.arrival, &want_out.rows.arrival);
    prop_assert_eq!(fast.late(), rowwise.late());
    Ok(())
}

fn query(keys: &str, window: &str) -> String {
    format!(
        "SELECT {keys}, COUNT(*) AS n, SUM(v) AS sv, AVG(x) AS ax, MIN(v) AS lo, MAX(x) AS hi, \
         window_start, window_end FROM s WHERE v > -7 GROUP BY {keys}, {window}"
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn tumbling_windows_place_batches_as_row_by_row(
        input in input(false), size in 1i64..20, lateness in 0i64..4, two_keys: bool,
    ) {
        let keys = if two_keys { "k, v" } else { "k" };
        let q = query(keys, &format!("TUMBLE(ts, INTERVAL '{size}' MILLISECOND)"));
        same_either_way(&q, lateness, &input)?;
    }

    #[test]
    fn arrival_time_and_sliced_windows_place_batches_as_row_by_row(
        input in input(true), slide in 1i64..6, n in 1i64..5, proctime: bool,
    ) {
        let time = if proctime { "PROCTIME()" } else { "ts" };
        let q = query("k", &format!(
            "HOP({time}, INTERVAL '{slide}' MILLISECOND, INTERVAL '{}' MILLISECOND)",
            slide * n
        ));
        same_either_way(&q, 0, &input)?;
    }
}

/// The newest tumbling window's groups live in its key cache only; once a later window is
/// the newest, a late tuple (within the allowed lateness) must find the group its window
/// already has, and a new key there open one, whether its window is the one just passed or
/// an earlier one (each map built from the window's slots).
#[test]
fn a_late_tuple_finds_its_group_after_a_later_window_became_the_newest() {
    use crate::core::schema::Scalar;
    let q = "SELECT k, COUNT(*) AS n, window_start FROM s GROUP BY k, TUMBLE(ts, INTERVAL '10' MILLISECOND)";
    let row = |k, n, start_ms: i64| {
        vec![
            Scalar::Int(k),
            Scalar::Int(n),
            Scalar::Timestamp(start_ms * MS),
        ]
    };
    // (k, v, ts ms), allowed lateness (ms), the rows expected.
    type Case<'a> = (&'a [(i64, i64, i64)], i64, Vec<Vec<Scalar>>);
    let cases: [Case<'_>; 2] = [
        // [0, 10) gets k1; [10, 20) becomes the newest; k1, a new k2 and k1 again arrive
        // late for [0, 10).
        (
            &[(1, 1, 5), (1, 1, 15), (1, 1, 7), (2, 1, 8), (1, 1, 9)],
            10,
            vec![row(1, 1, 10), row(1, 3, 0), row(2, 1, 0)],
        ),
        // Two windows on: [0, 10) no longer has a cache, [10, 20) has the one it had.
        (
            &[
                (1, 1, 5),
                (1, 1, 15),
                (1, 1, 25),
                (1, 1, 7),
                (2, 1, 8),
                (1, 1, 17),
                (3, 1, 18),
                (1, 1, 9),
                (3, 1, 19),
            ],
            20,
            vec![
                row(1, 1, 20),
                row(1, 2, 10),
                row(1, 3, 0),
                row(2, 1, 0),
                row(3, 2, 10),
            ],
        ),
    ];
    for (input, lateness, want) in &cases {
        for (one_batch, batch_placement) in [(false, true), (false, false), (true, true)] {
            let mut p = build(q, *lateness, batch_placement);
            let mut out = p.new_output();
            if one_batch {
                p.process(&super::tests::batch(input), 1.0, 1.0, &mut out);
            } else {
                for row in input.iter() {
                    p.process(&super::tests::batch(&[*row]), 1.0, 1.0, &mut out);
                }
            }
            p.flush(1_000 * MS, &mut out);
            let mut got: Vec<Vec<Scalar>> = (0..out.len())
                .map(|i| out.rows.row(i, p.output_types()))
                .collect();
            got.sort_by_key(|r| format!("{r:?}"));
            let mut want = want.clone();
            want.sort_by_key(|r| format!("{r:?}"));
            assert_eq!(
                got, want,
                "lateness {lateness}, one batch {one_batch}, batch placement {batch_placement}"
            );
            assert_eq!(p.late(), 0);
        }
    }
}
