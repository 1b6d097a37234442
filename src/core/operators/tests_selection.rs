//! Selection vectors: a pipeline reading a batch through a selection (rows kept in place)
//! gives exactly the rows, arrivals and side-car it gives on a copy of the selected rows,
//! for sparse, empty and full selections, with string columns of repeated and distinct
//! values; and tumbling windows (the newest window's key cache) match a naive GROUP BY.

use proptest::prelude::*;

use super::{Output, Pipeline};
use crate::core::batch::Batch;
use crate::core::rows::Rows;
use crate::core::schema::{DataType, Field, Scalar, Schema};
use crate::sql::{Catalog, plan_query};

const MS: i64 = 1_000_000;

/// Stream `s(k int, city string, x float, ts timestamp)` with event time `ts`.
fn schema() -> Schema {
    let f = |n: &str, ty| Field { name: n.into(), ty };
    let mut s = Schema::new(vec![
        f("k", DataType::Int),
        f("city", DataType::Str),
        f("x", DataType::Float),
        f("ts", DataType::Timestamp),
    ]);
    s.event_time = Some(3);
    s
}

fn pipeline(sql: &str) -> Pipeline {
    let catalog = Catalog {
        streams: vec![("s".into(), schema())],
    };
    Pipeline::new(
        &plan_query(sql, &catalog).expect("plans"),
        &schema().types(),
    )
}

/// One input row: `(k, city, x, ts_ms)`; it arrives at `ts`.
type Row = (i64, String, f64, i64);

fn batch(rows: &[Row]) -> Batch {
    let mut b = Batch::new(&schema().types(), rows.len());
    for (k, city, x, t) in rows {
        let row = [
            Scalar::Int(*k),
            Scalar::Str(city.as_str().into()),
            Scalar::Float(*x),
            Scalar::Timestamp(t * MS),
        ];
        b.push_row(t * MS, &row);
    }
    b
}

/// Every output row as `(arrival, values)`, and the side-car, for comparison.
fn rows_of(out: &Output, types: &[DataType]) -> Vec<(i64, Vec<Scalar>)> {
    (0..out.len())
        .map(|i| (out.rows.arrival[i], out.rows.row(i, types)))
        .collect()
}

/// Runs `(batch, selection)` pairs through `sql` twice, reading through the selection and
/// on a copy of the selected rows, then flushes; both must agree. Returns the rows.
fn both_ways(sql: &str, input: &[(Batch, Option<Vec<u32>>)]) -> Vec<(i64, Vec<Scalar>)> {
    let (mut viewed, mut copied) = (pipeline(sql), pipeline(sql));
    let (mut vo, mut co) = (viewed.new_output(), copied.new_output());
    for (b, sel) in input {
        let rows = match sel {
            Some(s) => Rows::selected(b, s),
            None => Rows::all(b),
        };
        viewed.process_selected(rows, 1.0, 1.0, None, &mut vo);
        let mut copy = Batch::new(&schema().types(), 0);
        match sel {
            Some(s) => copy.gather_from(b, s),
            None => copy.extend_from(b),
        }
        copied.process(&copy, 1.0, 1.0, &mut co);
    }
    viewed.flush(i64::MAX / 2, &mut vo);
    copied.flush(i64::MAX / 2, &mut co);
    let types = viewed.output_types().to_vec();
    let (v, c) = (rows_of(&vo, &types), rows_of(&co, &types));
    assert_eq!(v, c, "{sql}: read through the selection vs on a copy");
    assert_eq!(vo.approx, co.approx, "{sql}: side-car");
    v
}

fn row(k: i64, city: &str, x: f64, t: i64) -> Row {
    (k, city.to_string(), x, t)
}

#[test]
fn projection_reads_sparse_empty_and_full_selections() {
    let rows = vec![
        row(1, "oslo", 12.0, 1),
        row(2, "rome", -3.0, 2),
        row(3, "oslo", 15.0, 3),
        row(4, "lima", 11.0, 4),
        row(5, "oslo", 1.0, 5),
        row(6, "kyiv", 20.0, 6),
        row(7, "rome", 30.0, 7),
        row(8, "oslo", 10.5, 8),
    ];
    let b = batch(&rows);
    let sql = "SELECT city, x * 2.0 AS x2, k FROM s WHERE x > 10.0";
    for sel in [
        None,
        Some(vec![]),
        Some(vec![1, 4]),    // no selected row passes the filter
        Some(vec![0, 3, 6]), // every selected row passes, not every row
        Some(vec![2, 5, 7]),
        Some((0..8).collect()),
    ] {
        let got = both_ways(sql, &[(b.clone(), sel.clone())]);
        let want: Vec<(i64, Vec<Scalar>)> = rows
            .iter()
            .enumerate()
            .filter(|(i, r)| sel.as_ref().is_none_or(|s| s.contains(&(*i as u32))) && r.2 > 10.0)
            .map(|(_, (k, c, x, t))| {
                let vals = vec![
                    Scalar::Str(c.as_str().into()),
                    Scalar::Float(x * 2.0),
                    Scalar::Int(*k),
                ];
                (t * MS, vals)
            })
            .collect();
        assert_eq!(got, want, "selection {sel:?}");
    }
}

/// Naive tumbling GROUP BY city over 10 ms windows of rows with non-decreasing times:
/// windows in start order, keys in first-seen order, `(city, n, sum k, min x, max x)`.
fn naive(rows: &[&Row]) -> Vec<Vec<Scalar>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < rows.len() {
        let w = rows[i].3.div_euclid(10);
        let mut j = i;
        let mut groups: Vec<(String, i64, i64, f64, f64)> = Vec::new();
        while j < rows.len() && rows[j].3.div_euclid(10) == w {
            let (k, c, x, _) = rows[j];
            match groups.iter_mut().find(|g| g.0 == *c) {
                Some(g) => {
                    g.1 += 1;
                    g.2 += k;
                    g.3 = g.3.min(*x);
                    g.4 = g.4.max(*x);
                }
                None => groups.push((c.clone(), 1, *k, *x, *x)),
            }
            j += 1;
        }
        for (c, n, sk, lo, hi) in groups {
            out.push(vec![
                Scalar::Str(c.as_str().into()),
                Scalar::Int(n),
                Scalar::Int(sk),
                Scalar::Float(lo),
                Scalar::Float(hi),
                Scalar::Timestamp(w * 10 * MS),
            ]);
        }
        i = j;
    }
    out
}

const AGG: &str = "SELECT city, COUNT(*) AS n, SUM(k) AS sk, MIN(x) AS lo, MAX(x) AS hi, \
     window_start FROM s WHERE x > 0.0 GROUP BY city, TUMBLE(ts, INTERVAL '10' MILLISECOND)";
const HOP: &str = "SELECT city, COUNT(*) AS n, SUM(k) AS sk, MAX(x) AS hi FROM s \
     WHERE x > 0.0 GROUP BY city, HOP(ts, INTERVAL '5' MILLISECOND, INTERVAL '20' MILLISECOND)";
const LATE: &str = "SELECT k, COUNT(*) AS n, MIN(x) AS lo FROM s WHERE x < 5.0 \
     GROUP BY k, TUMBLE(ts, INTERVAL '10' MILLISECOND)";

/// A city: a few repeated names and, now and then, a name seen once.
fn city() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["oslo", "rome", "lima"]).prop_map(str::to_string),
        1 => (0..1000u32).prop_map(|i| format!("c{i}")),
    ]
}

/// Rows with times that step forward by 0-4 ms (`ordered`) or jump back now and then,
/// cut into batches, each read through a selection kept with probability 0, 0.2, 0.7 or 1.
fn input(ordered: bool) -> impl Strategy<Value = Vec<(Vec<Row>, Vec<bool>)>> {
    let row = (0..6i64, city(), -5.0..25.0f64, 0..5i64, 0..8u8);
    let batch = (prop::collection::vec(row, 0..40), 0..4usize, any::<u64>());
    prop::collection::vec(batch, 1..8).prop_map(move |batches| {
        let mut t = 0i64;
        batches
            .into_iter()
            .map(|(rows, p, seed)| {
                let keep = [0.0, 0.2, 0.7, 1.0][p];
                let mut state = seed | 1;
                let rows: Vec<Row> = rows
                    .into_iter()
                    .map(|(k, c, x, step, back)| {
                        t += step;
                        let ts = if !ordered && back == 0 {
                            (t - 15).max(0)
                        } else {
                            t
                        };
                        (k, c, x, ts)
                    })
                    .collect();
                let kept = rows
                    .iter()
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        ((state >> 11) as f64 / (1u64 << 53) as f64) < keep
                    })
                    .collect();
                (rows, kept)
            })
            .collect()
    })
}

fn with_selections(input: &[(Vec<Row>, Vec<bool>)]) -> Vec<(Batch, Option<Vec<u32>>)> {
    input
        .iter()
        .map(|(rows, kept)| {
            let sel = (0..rows.len() as u32)
                .filter(|&i| kept[i as usize])
                .collect();
            (batch(rows), Some(sel))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Tumbling GROUP BY a string key through selections: the same rows as on copies, and
    /// the rows a naive GROUP BY of the selected, passing rows gives.
    #[test]
    fn tumbling_windows_through_selections_match_copies_and_a_naive_group_by(
        input in input(true)
    ) {
        let got = both_ways(AGG, &with_selections(&input));
        let selected: Vec<&Row> = input
            .iter()
            .flat_map(|(rows, kept)| rows.iter().zip(kept).filter(|(_, k)| **k).map(|(r, _)| r))
            .filter(|r| r.2 > 0.0)
            .collect();
        let values: Vec<Vec<Scalar>> = got.into_iter().map(|(_, v)| v).collect();
        prop_assert_eq!(values, naive(&selected));
    }

    /// Sliding windows, late rows and the watermark moved by rows the filter rejects: read
    /// through selections as on copies.
    #[test]
    fn sliding_and_late_rows_through_selections_match_copies(input in input(false)) {
        let batches = with_selections(&input);
        both_ways(HOP, &batches);
        both_ways(LATE, &batches);
        both_ways("SELECT city, k FROM s WHERE city <> 'oslo'", &batches);
    }
}
