//! Sliding windows by slices against the per-window reference: random tuples (late ones,
//! gaps, filtered ones) in random batches, some shed at random or thinned by value, give
//! the same rows and the same side-car through both paths, on event and arrival time,
//! with keys that repeat across slices and keys that do not (the two-stacks queue and its
//! direct mode, and the switches between them).

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

pub(super) type Input = Vec<(Vec<(i64, i64, i64)>, f64, f64)>;

/// Runs `(rows, keep, value_keep)` batches, ticking at each batch's last time, then
/// flushes; returns the rows and the side-car.
pub(super) fn run(p: &mut Pipeline, input: &Input) -> (Vec<Vec<Scalar>>, Output) {
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
/// exact and the two paths must agree to the bit. Some batches draw keys from 4 (keys
/// repeat across slices: two stacks), others from 1000 (nearly a key per row: the stacks'
/// direct mode), so runs switch between the two.
pub(super) fn input(monotonic: bool) -> impl Strategy<Value = Input> {
    let row = (0i64..1000, -10i64..10, -3i64..6);
    let batch = (
        prop::collection::vec(row, 0..12),
        prop::sample::select(vec![1.0, 1.0, 0.5, 0.25]),
        prop::sample::select(vec![1.0, 1.0, 0.5]),
        any::<bool>(),
    );
    prop::collection::vec(batch, 1..16).prop_map(move |batches| {
        let mut t = 0i64;
        batches
            .into_iter()
            .map(|(rows, keep, vk, wide)| {
                let rows = rows
                    .into_iter()
                    .map(|(k, v, dt)| {
                        let dt = if monotonic { dt.max(0) } else { dt };
                        t = (t + dt).max(0);
                        (if wide { k } else { k % 4 }, v, t)
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

/// A key per row over 100 slices per window: the two-stacks front would hold each key once
/// per older slice (about 100^2/2 x 20 = 100,000 groups here, 1.7 GB in a fuzz case of
/// 200k rows); the queue's direct mode holds none, and the rows stay the per-window path's.
#[test]
fn distinct_keys_over_many_slices_hold_no_quadratic_state() {
    let q = "SELECT k, COUNT(*) AS n, SUM(v) AS sv FROM s GROUP BY k, \
             HOP(ts, INTERVAL '1' MILLISECOND, INTERVAL '100' MILLISECOND)";
    let (mut sliced, mut reference) = (build(q, false), build(q, true));
    let (mut got, mut want) = (sliced.new_output(), reference.new_output());
    let mut most = 0;
    for t in 0..400i64 {
        let rows: Vec<(i64, i64, i64)> = (0..20).map(|i| (t * 20 + i, i % 7, t)).collect();
        for (p, out) in [(&mut sliced, &mut got), (&mut reference, &mut want)] {
            p.process(&batch(&rows), 1.0, 1.0, out);
            p.on_tick(t * MS, out);
        }
        let Body::Aggregate(a) = &sliced.body else {
            unreachable!("an aggregate query")
        };
        most = most.max(a.op.slice_groups_held());
    }
    // Within the bound the queue keeps itself to: 4 x the 2,000 groups of a window.
    assert!(most <= 4 * 100 * 20, "{most} groups held");
    sliced.flush(1_000_000 * MS, &mut got);
    reference.flush(1_000_000 * MS, &mut want);
    let rows = |p: &Pipeline, out: &Output| -> Vec<Vec<Scalar>> {
        (0..out.len())
            .map(|i| out.rows.row(i, p.output_types()))
            .collect()
    };
    assert!(got.len() > 100_000);
    assert_eq!(rows(&sliced, &got), rows(&reference, &want));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn sliced_event_time_windows_equal_per_window(
        input in input(false), slide in 1i64..4, n in 2i64..9,
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
        input in input(true), slide in 1i64..4, n in 2i64..9,
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
