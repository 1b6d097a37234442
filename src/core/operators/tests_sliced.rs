//! Sliding windows by slices against the per-window reference: random tuples (late ones,
//! gaps, filtered ones) in random batches, some shed at random or thinned by value, give
//! the same rows and the same side-car through both paths, on event and arrival time.

use proptest::prelude::*;

use super::tests::{assert_aligned, batch, pipeline};
use super::{Body, Output, Pipeline, WindowAggregate};
use crate::core::plan::PlanBody;
use crate::core::schema::Scalar;
use crate::sql::{Catalog, plan_query};

const MS: i64 = 1_000_000;

/// The pipeline of `sql`, its window operator computing per window if `per_window`.
fn build(sql: &str, per_window: bool) -> Pipeline {
    let mut p = pipeline(sql);
    if per_window {
        let catalog = Catalog {
            streams: vec![("s".into(), super::tests::schema())],
        };
        let plan = plan_query(sql, &catalog).expect("plans");
        let (PlanBody::Aggregate(a), Body::Aggregate(b)) = (&plan.body, &mut p.body) else {
            unreachable!("an aggregate query")
        };
        b.op = WindowAggregate::per_window(a);
    }
    p
}

type Input = Vec<(Vec<(i64, i64, i64)>, f64, f64)>;

/// Runs `(rows, keep, value_keep)` batches, ticking at each batch's last time, then
/// flushes; returns the rows and the side-car.
fn run(p: &mut Pipeline, input: &Input) -> (Vec<Vec<Scalar>>, Output) {
    let mut out = p.new_output();
    for (rows, keep, value_keep) in input {
        p.process(&batch(rows), *keep, *value_keep, &mut out);
        if let Some(&(_, _, t)) = rows.last() {
            p.on_tick(t * MS, &mut out);
        }
    }
    p.flush(1_000_000 * MS, &mut out);
    assert_aligned(&out);
    let rows = (0..out.len())
        .map(|i| out.rows.row(i, p.output_types()))
        .collect();
    (rows, out)
}

/// Batches of `(k, v, ts_ms)` rows; times wander forward with some steps back (late
/// rows) and some jumps (empty slices). Keeps are powers of two so that every sum here is
/// exact and the two paths must agree to the bit.
fn input(monotonic: bool) -> impl Strategy<Value = Input> {
    let row = (0i64..4, -10i64..10, -3i64..6);
    let batch = (
        prop::collection::vec(row, 0..12),
        prop::sample::select(vec![1.0, 1.0, 0.5, 0.25]),
        prop::sample::select(vec![1.0, 1.0, 0.5]),
    );
    prop::collection::vec(batch, 1..12).prop_map(move |batches| {
        let mut t = 0i64;
        batches
            .into_iter()
            .map(|(rows, keep, vk)| {
                let rows = rows
                    .into_iter()
                    .map(|(k, v, dt)| {
                        let dt = if monotonic { dt.max(0) } else { dt };
                        t = (t + dt).max(0);
                        (k, v, t)
                    })
                    .collect();
                (rows, keep, vk)
            })
            .collect()
    })
}

fn sql(time: &str, slide: i64, size: i64) -> String {
    format!(
        "SELECT k, COUNT(*) AS n, SUM(v) AS sv, AVG(v) AS av, MIN(v) AS lo, MAX(v) AS hi, \
         SUM(x) AS sx, AVG(x) AS ax, MIN(x) AS xlo, MAX(x) AS xhi, window_start, window_end \
         FROM s WHERE v > -7 GROUP BY k, \
         HOP({time}, INTERVAL '{slide}' MILLISECOND, INTERVAL '{size}' MILLISECOND)"
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn sliced_event_time_windows_equal_per_window(
        input in input(false), slide in 1i64..4, n in 2i64..6,
    ) {
        let q = sql("ts", slide, slide * n);
        let (want, want_out) = run(&mut build(&q, true), &input);
        let (got, got_out) = run(&mut build(&q, false), &input);
        prop_assert_eq!(&got, &want);
        // Debug text: NaN (no interval) equals NaN, every other float prints exactly.
        prop_assert_eq!(format!("{:?}", got_out.approx), format!("{:?}", want_out.approx));
        prop_assert_eq!(&got_out.rows.arrival, &want_out.rows.arrival);
    }

    #[test]
    fn sliced_arrival_time_windows_equal_per_window(
        input in input(true), slide in 1i64..4, n in 2i64..6,
    ) {
        let q = sql("PROCTIME()", slide, slide * n);
        let (want, want_out) = run(&mut build(&q, true), &input);
        let (got, got_out) = run(&mut build(&q, false), &input);
        prop_assert_eq!(&got, &want);
        // Debug text: NaN (no interval) equals NaN, every other float prints exactly.
        prop_assert_eq!(format!("{:?}", got_out.approx), format!("{:?}", want_out.approx));
        prop_assert_eq!(&got_out.rows.arrival, &want_out.rows.arrival);
    }
}
