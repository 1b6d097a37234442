//! Pipelines under random shedding: exact input stays exact, lossy groups come out scaled
//! with the side-car row-aligned through HAVING and the SELECT list, and the scaled
//! answers and their 95% intervals hold up statistically.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::{ColumnApprox, Output, Pipeline, ResultApprox};
use crate::core::batch::Batch;
use crate::core::schema::{DataType, Field, Scalar, Schema};
use crate::sql::{Catalog, plan_query};

const SEC: i64 = 1_000_000_000;
const MS: i64 = 1_000_000;

/// Stream `s(k int, v int, x float, ts timestamp)` with event time `ts`.
pub(super) fn schema() -> Schema {
    let f = |n: &str, ty| Field { name: n.into(), ty };
    let mut s = Schema::new(vec![
        f("k", DataType::Int),
        f("v", DataType::Int),
        f("x", DataType::Float),
        f("ts", DataType::Timestamp),
    ]);
    s.event_time = Some(3);
    s
}

pub(super) fn pipeline(sql: &str) -> Pipeline {
    let catalog = Catalog {
        streams: vec![("s".into(), schema())],
    };
    let plan = plan_query(sql, &catalog).expect("plans");
    Pipeline::new(&plan, &schema().types())
}

/// Input rows `(k, v, ts_ms)`.
type Rows<'a> = &'a [(i64, i64, i64)];

/// A batch of `rows`; `x` is `v` as a float and each row arrives at its `ts`.
pub(super) fn batch(rows: Rows<'_>) -> Batch {
    let mut b = Batch::new(&schema().types(), rows.len());
    for &(k, v, t) in rows {
        let row = [
            Scalar::Int(k),
            Scalar::Int(v),
            Scalar::Float(v as f64),
            Scalar::Timestamp(t * MS),
        ];
        b.push_row(t * MS, &row);
    }
    b
}

/// Feeds `(rows, keep)` batches, flushes, and checks the side-car invariant.
fn run(sql: &str, batches: &[(Rows<'_>, f64)]) -> (Pipeline, Output) {
    let mut p = pipeline(sql);
    let mut out = p.new_output();
    for (rows, keep) in batches {
        p.process(&batch(rows), *keep, 1.0, &mut out);
    }
    p.flush(1_000 * SEC, &mut out);
    assert_aligned(&out);
    (p, out)
}

pub(super) fn assert_aligned(out: &Output) {
    let a = &out.approx;
    assert!(a.is_exact() || a.keep.len() == out.len(), "{a:?}");
    for c in &a.columns {
        if let ColumnApprox::Interval { lo, hi } = c {
            assert_eq!((lo.len(), hi.len()), (a.keep.len(), a.keep.len()));
        }
    }
}

fn rows(p: &Pipeline, out: &Output) -> Vec<Vec<Scalar>> {
    (0..out.len())
        .map(|i| out.rows.row(i, p.output_types()))
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn assert_interval(a: &ResultApprox, col: usize, row: usize, est: f64, var: f64) {
    let (lo, hi) = a.interval(col, row).expect("an interval");
    let half = 1.96 * var.sqrt();
    assert!(
        close(lo, est - half) && close(hi, est + half),
        "column {col} row {row}: [{lo}, {hi}] vs {est} +- {half}"
    );
}

const COUNT_SUM_AVG: &str = "SELECT k, COUNT(*) AS n, SUM(v) AS total, AVG(v) AS mean, \
     SUM(x) AS fsum FROM s GROUP BY k, TUMBLE(ts, INTERVAL '1' SECOND)";

#[test]
fn exact_input_gives_exact_results_and_no_side_car() {
    let sql = "SELECT k, COUNT(*) AS n, SUM(v), AVG(x), MIN(v), MAX(x), window_start \
               FROM s GROUP BY k, TUMBLE(ts, INTERVAL '1' SECOND) HAVING COUNT(*) > 1";
    let input: Rows = &[(1, 5, 0), (2, 7, 10), (1, 3, 20), (2, 1, 1500)];
    let (p, out) = run(sql, &[(input, 1.0)]);
    assert_eq!(
        rows(&p, &out),
        vec![vec![
            Scalar::Int(1),
            Scalar::Int(2),
            Scalar::Int(8),
            Scalar::Float(4.0),
            Scalar::Int(3),
            Scalar::Float(5.0),
            Scalar::Timestamp(0),
        ]]
    );
    assert!(out.approx.is_exact());
    assert!(out.approx.columns.is_empty());
}

#[test]
fn lossy_batch_is_scaled_with_hand_checked_intervals() {
    // Window [0, 1s): k=1 kept 1, 2, 3, 4 at keep 0.5 (w = 2, c = (1-p)/p^2 = 2).
    // Window [1s, 2s): k=1 kept 5 at keep 1: exact.
    let lossy: Rows = &[(1, 1, 0), (1, 2, 1), (1, 3, 2), (1, 4, 3)];
    let exact: Rows = &[(1, 5, 1000)];
    let (p, out) = run(COUNT_SUM_AVG, &[(lossy, 0.5), (exact, 1.0)]);
    assert_eq!(
        rows(&p, &out),
        vec![
            // HT count 4*2, HT sum 10*2, ratio 20/8.
            vec![
                Scalar::Int(1),
                Scalar::Int(8),
                Scalar::Int(20),
                Scalar::Float(2.5),
                Scalar::Float(20.0),
            ],
            vec![
                Scalar::Int(1),
                Scalar::Int(1),
                Scalar::Int(5),
                Scalar::Float(5.0),
                Scalar::Float(5.0),
            ],
        ]
    );
    let a = &out.approx;
    assert_eq!(a.keep, vec![0.5, 1.0]);
    assert_eq!(a.columns[0], ColumnApprox::Exact);
    // var(count) = 4 * 2; var(sum) = 2 * (1 + 4 + 9 + 16) = 60;
    // var(avg) = 2 * ((1-2.5)^2 + (2-2.5)^2 + (3-2.5)^2 + (4-2.5)^2) / 8^2 = 10 / 64.
    assert_interval(a, 1, 0, 8.0, 8.0);
    assert_interval(a, 2, 0, 20.0, 60.0);
    assert_interval(a, 3, 0, 2.5, 10.0 / 64.0);
    assert_interval(a, 4, 0, 20.0, 60.0);
    for c in 1..5 {
        assert_eq!(a.interval(c, 1), None, "the exact row has no interval");
    }
}

#[test]
fn int_estimates_round_to_the_nearest_integer() {
    // keep 0.3: each kept tuple stands for 3.33; the count 6.67 rounds to 7, the sum 10.
    let sql = "SELECT COUNT(*), SUM(v), AVG(v) FROM s GROUP BY TUMBLE(ts, INTERVAL '1' SECOND)";
    let (p, out) = run(sql, &[(&[(0, 1, 0), (0, 2, 1)], 0.3)]);
    assert_eq!(
        rows(&p, &out),
        vec![vec![Scalar::Int(7), Scalar::Int(10), Scalar::Float(1.5)]]
    );
    assert!(close(out.approx.keep[0], 0.3));
    let (lo, hi) = out.approx.interval(0, 0).unwrap();
    assert!(
        close((lo + hi) / 2.0, 2.0 / 0.3),
        "interval centred on the unrounded count"
    );
}

#[test]
fn min_and_max_stay_observed_and_are_flagged_as_bounds() {
    // No COUNT or AVG: the row's keep comes from a hidden count.
    let sql = "SELECT k, MIN(v) AS lo, MAX(x) AS hi, SUM(v) AS total \
               FROM s GROUP BY k, TUMBLE(ts, INTERVAL '1' SECOND)";
    let (p, out) = run(sql, &[(&[(1, 4, 0), (1, 9, 1), (1, 6, 2)], 0.25)]);
    assert_eq!(
        rows(&p, &out),
        vec![vec![
            Scalar::Int(1),
            Scalar::Int(4),
            Scalar::Float(9.0),
            Scalar::Int(76),
        ]]
    );
    let a = &out.approx;
    assert_eq!(a.keep, vec![0.25]);
    assert_eq!(a.columns[1], ColumnApprox::UpperBound);
    assert_eq!(a.columns[2], ColumnApprox::LowerBound);
    // c = 0.75 / 0.0625 = 12; var(sum) = 12 * (16 + 81 + 36).
    assert_interval(a, 3, 0, 76.0, 12.0 * 133.0);
}

#[test]
fn having_sees_scaled_counts_and_keeps_the_side_car_aligned() {
    // In one window: a (4 kept at 0.5 -> 8), b (2 kept -> 4), d (3 kept -> 6), then c (5
    // tuples at keep 1, exact). HAVING n >= 5 keeps a, d and c; a passes only because its
    // count is scaled.
    let sql = "SELECT k, COUNT(*) AS n, COUNT(*) * 10 AS tens, window_end \
               FROM s GROUP BY k, TUMBLE(ts, INTERVAL '1' SECOND) HAVING COUNT(*) >= 5";
    let lossy: Rows = &[
        (1, 0, 0),
        (2, 0, 1),
        (1, 0, 2),
        (4, 0, 3),
        (1, 0, 4),
        (2, 0, 5),
        (1, 0, 6),
        (4, 0, 7),
        (4, 0, 8),
    ];
    let exact: Rows = &[(3, 0, 10), (3, 0, 11), (3, 0, 12), (3, 0, 13), (3, 0, 14)];
    let (p, out) = run(sql, &[(lossy, 0.5), (exact, 1.0)]);
    let got: Vec<(Scalar, Scalar, Scalar)> = rows(&p, &out)
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone(), r[2].clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (Scalar::Int(1), Scalar::Int(8), Scalar::Int(80)),
            (Scalar::Int(4), Scalar::Int(6), Scalar::Int(60)),
            (Scalar::Int(3), Scalar::Int(5), Scalar::Int(50)),
        ]
    );
    let a = &out.approx;
    assert_eq!(a.keep, vec![0.5, 0.5, 1.0]);
    assert_interval(a, 1, 0, 8.0, 8.0);
    assert_interval(a, 1, 1, 6.0, 6.0);
    assert_eq!(a.interval(1, 2), None);
    // Arithmetic over an aggregate and the window bound are not qualified.
    assert_eq!(a.columns[2], ColumnApprox::Exact);
    assert_eq!(a.columns[3], ColumnApprox::Exact);
}

#[test]
fn mixed_keep_within_a_window_weights_each_batch_by_its_own_keep() {
    // 1, 2, 3, 4 at keep 0.5 then 10, 20 at keep 1: count 8 + 2, sum 20 + 30, ratio 5.
    // Only the lossy tuples carry variance: var(count) = 8, var(sum) = 60,
    // var(avg) = 2 * ((1-5)^2 + (2-5)^2 + (3-5)^2 + (4-5)^2) / 10^2 = 0.6.
    let lossy: Rows = &[(1, 1, 0), (1, 2, 1), (1, 3, 2), (1, 4, 3)];
    let exact: Rows = &[(1, 10, 4), (1, 20, 5)];
    for order in [[(lossy, 0.5), (exact, 1.0)], [(exact, 1.0), (lossy, 0.5)]] {
        let (p, out) = run(COUNT_SUM_AVG, &order);
        assert_eq!(
            rows(&p, &out),
            vec![vec![
                Scalar::Int(1),
                Scalar::Int(10),
                Scalar::Int(50),
                Scalar::Float(5.0),
                Scalar::Float(50.0),
            ]]
        );
        let a = &out.approx;
        assert!(close(a.keep[0], 0.6));
        assert_interval(a, 1, 0, 10.0, 8.0);
        assert_interval(a, 2, 0, 50.0, 60.0);
        assert_interval(a, 3, 0, 5.0, 0.6);
    }
}

#[test]
fn stateless_rows_carry_their_batch_keep() {
    let mut p = pipeline("SELECT k, v FROM s WHERE v > 1");
    let mut out = p.new_output();
    p.process(&batch(&[(1, 2, 0), (1, 0, 1)]), 1.0, 1.0, &mut out);
    assert!(out.approx.is_exact());
    p.process(&batch(&[(1, 2, 2), (1, 3, 3)]), 0.5, 1.0, &mut out);
    p.process(&batch(&[(1, 4, 4)]), 1.0, 1.0, &mut out);
    assert_eq!(out.approx.keep, vec![1.0, 0.5, 0.5, 1.0]);
    assert!(out.approx.columns.is_empty());
}

/// Per window: exact answers and the scaled ones with their intervals.
struct WindowCheck {
    exact: [f64; 3],
    est: [f64; 3],
    ci: [(f64, f64); 3],
}

/// `windows` windows of `per_window` tuples, `v` uniform in 0..100, dropped at random so
/// that batch `b` of each window keeps each tuple with probability `keep(b)`.
fn shed_windows(
    seed: u64,
    windows: i64,
    per_window: i64,
    keep: impl Fn(i64) -> f64,
) -> Vec<WindowCheck> {
    const BATCH: i64 = 1_000;
    let sql = "SELECT COUNT(*) AS n, SUM(v) AS total, AVG(x) AS mean \
               FROM s GROUP BY TUMBLE(ts, INTERVAL '1' SECOND)";
    let mut p = pipeline(sql);
    let mut out = p.new_output();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut exact = Vec::new();
    let types = schema().types();
    for w in 0..windows {
        let (mut n, mut sum) = (0.0, 0.0);
        for b in 0..per_window / BATCH {
            let p_keep = keep(b);
            let mut kept = Batch::new(&types, BATCH as usize);
            for i in 0..BATCH {
                let v = (rng.random::<f64>() * 100.0) as i64;
                n += 1.0;
                sum += v as f64;
                if rng.random::<f64>() < p_keep {
                    let t = w * SEC + (b * BATCH + i) * (SEC / per_window);
                    let row = [
                        Scalar::Int(0),
                        Scalar::Int(v),
                        Scalar::Float(v as f64),
                        Scalar::Timestamp(t),
                    ];
                    kept.push_row(t, &row);
                }
            }
            p.process(&kept, p_keep, 1.0, &mut out);
        }
        exact.push([n, sum, sum / n]);
    }
    p.flush(windows * SEC, &mut out);
    assert_aligned(&out);
    assert_eq!(out.len(), windows as usize);
    exact
        .into_iter()
        .enumerate()
        .map(|(row, exact)| {
            let r = out.rows.row(row, p.output_types());
            let num = |s: &Scalar| s.as_f64().unwrap();
            WindowCheck {
                exact,
                est: [num(&r[0]), num(&r[1]), num(&r[2])],
                ci: [0, 1, 2].map(|c| out.approx.interval(c, row).unwrap()),
            }
        })
        .collect()
}

fn assert_estimates_hold(checks: &[WindowCheck]) {
    let names = ["COUNT", "SUM", "AVG"];
    for (a, name) in names.iter().enumerate() {
        let near = checks
            .iter()
            .filter(|c| (c.est[a] - c.exact[a]).abs() <= 0.05 * c.exact[a])
            .count();
        let covered = checks
            .iter()
            .filter(|c| c.ci[a].0 <= c.exact[a] && c.exact[a] <= c.ci[a].1)
            .count();
        assert_eq!(near, checks.len(), "{name}: within 5% in every window");
        assert!(
            covered * 10 >= checks.len() * 9,
            "{name}: exact value inside the 95% interval in {covered} of {} windows",
            checks.len()
        );
    }
}

#[test]
fn scaled_answers_are_close_and_intervals_cover_at_keep_one_half() {
    let checks = shed_windows(7, 200, 10_000, |_| 0.5);
    assert_estimates_hold(&checks);
}

#[test]
fn scaled_answers_hold_when_keep_changes_between_batches() {
    // The shedder adapts: batches alternate between keep 0.5, 1.0 and 0.25.
    let checks = shed_windows(11, 200, 12_000, |b| [0.5, 1.0, 0.25][b as usize % 3]);
    assert_estimates_hold(&checks);
}
