//! Dictionary-encoded strings through pipelines: equality and order filters on a string
//! column and GROUP BY a string key give the rows a naive evaluation of the decoded values
//! gives, whatever the batches' dictionaries: one per batch in first-seen order, one larger
//! than the batch with values no row uses (the per-row paths), or one shared by every batch
//! (a generator's).

use std::sync::Arc;

use proptest::prelude::*;

use super::Pipeline;
use crate::core::batch::{Batch, Column, Dict, StrColumn};
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

/// `(k, city, x, ts_ms)`.
type Row = (i64, String, f64, i64);

/// How a batch's city column is encoded.
#[derive(Clone, Copy, Debug)]
enum Encoding {
    /// Its own dictionary, values in first-seen order.
    PerBatch,
    /// Its own dictionary, seeded with every city of the input in reverse order plus 50
    /// values no row uses: larger than the batch.
    Large,
    /// One dictionary of every city of the input, shared by all batches.
    Shared,
}

fn universe(input: &[Vec<Row>]) -> Vec<Arc<str>> {
    let mut all: Vec<String> = input.iter().flatten().map(|r| r.1.clone()).collect();
    all.sort();
    all.dedup();
    all.reverse();
    all.extend((0..50).map(|i| format!("unused{i}")));
    all.into_iter().map(|s| Arc::from(s.as_str())).collect()
}

fn batches(input: &[Vec<Row>], enc: Encoding) -> Vec<Batch> {
    let all = universe(input);
    let (shared, codes) = Dict::of(&all);
    input
        .iter()
        .map(|rows| {
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
            let code = |c: &str| codes[all.iter().position(|a| &**a == c).unwrap()];
            match enc {
                Encoding::PerBatch => {}
                Encoding::Large => {
                    let mut c = StrColumn::with_capacity(rows.len());
                    all.iter().for_each(|v| c.push(v));
                    c.truncate(0);
                    rows.iter().for_each(|r| c.push(&Arc::from(r.1.as_str())));
                    b.columns[1] = Column::Str(c);
                }
                Encoding::Shared => {
                    let mut c = StrColumn::with_capacity(rows.len());
                    c.extend_coded(&shared, rows.iter().map(|r| code(&r.1)));
                    b.columns[1] = Column::Str(c);
                }
            }
            b
        })
        .collect()
}

/// Every output value row of `sql` over the batches, flushed at the end.
fn run(sql: &str, input: &[Batch]) -> Vec<Vec<Scalar>> {
    let catalog = Catalog {
        streams: vec![("s".into(), schema())],
    };
    let mut p = Pipeline::new(
        &plan_query(sql, &catalog).expect("plans"),
        &schema().types(),
    );
    let mut out = p.new_output();
    for b in input {
        p.process(b, 1.0, 1.0, &mut out);
    }
    p.flush(i64::MAX / 2, &mut out);
    let types = p.output_types().to_vec();
    (0..out.len()).map(|i| out.rows.row(i, &types)).collect()
}

fn s(v: &str) -> Scalar {
    Scalar::Str(v.into())
}

/// Naive tumbling GROUP BY city over 10 ms windows (times non-decreasing): windows in
/// start order, keys in first-seen order, `(city, n, sum k)`.
fn naive_groups(rows: &[&Row]) -> Vec<Vec<Scalar>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < rows.len() {
        let w = rows[i].3.div_euclid(10);
        let mut groups: Vec<(String, i64, i64)> = Vec::new();
        while i < rows.len() && rows[i].3.div_euclid(10) == w {
            let (k, c, _, _) = rows[i];
            match groups.iter_mut().find(|g| g.0 == *c) {
                Some(g) => (g.1, g.2) = (g.1 + 1, g.2 + k),
                None => groups.push((c.clone(), 1, *k)),
            }
            i += 1;
        }
        out.extend(
            (groups.into_iter()).map(|(c, n, sk)| vec![s(&c), Scalar::Int(n), Scalar::Int(sk)]),
        );
    }
    out
}

fn city() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["oslo", "rome", "lima", "pune"]).prop_map(str::to_string),
        1 => (0..300u32).prop_map(|i| format!("c{i}")),
    ]
}

/// Batches of rows whose times step forward by 0-4 ms.
fn input() -> impl Strategy<Value = Vec<Vec<Row>>> {
    let row = (0..6i64, city(), -5.0..25.0f64, 0..5i64);
    prop::collection::vec(prop::collection::vec(row, 0..40), 1..8).prop_map(|batches| {
        let mut t = 0;
        let step = |(k, c, x, d): (i64, String, f64, i64), t: &mut i64| {
            *t += d;
            (k, c, x, *t)
        };
        (batches.into_iter())
            .map(|rows| rows.into_iter().map(|r| step(r, &mut t)).collect())
            .collect()
    })
}

const ENCODINGS: [Encoding; 3] = [Encoding::PerBatch, Encoding::Large, Encoding::Shared];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// `=`, `<>` and `<` against a constant, either side, alone (a selection straight from
    /// the comparison) and under AND (a column of booleans): the naive rows, decoded.
    #[test]
    fn string_filters_match_a_naive_filter_under_every_dictionary(input in input()) {
        type Pass = fn(&Row) -> bool;
        let cases: [(&str, Pass); 4] = [
            ("SELECT city, k FROM s WHERE city = 'oslo'", |r| r.1 == "oslo"),
            ("SELECT city, k FROM s WHERE 'rome' <> city", |r| r.1 != "rome"),
            ("SELECT city, k FROM s WHERE city < 'oslo' AND x > 0.0", |r| r.1.as_str() < "oslo" && r.2 > 0.0),
            ("SELECT k, city FROM s WHERE 'lima' = city OR k = 3", |r| r.1 == "lima" || r.0 == 3),
        ];
        for (sql, pass) in cases {
            let want: Vec<Vec<Scalar>> = input.iter().flatten().filter(|r| pass(r))
                .map(|r| if sql.starts_with("SELECT city") {
                    vec![s(&r.1), Scalar::Int(r.0)]
                } else {
                    vec![Scalar::Int(r.0), s(&r.1)]
                })
                .collect();
            for enc in ENCODINGS {
                prop_assert_eq!(&run(sql, &batches(&input, enc)), &want, "{} {:?}", sql, enc);
            }
        }
    }

    /// Tumbling GROUP BY the string key: the naive groups, under every dictionary.
    #[test]
    fn string_group_by_matches_a_naive_group_by_under_every_dictionary(input in input()) {
        let sql = "SELECT city, COUNT(*) AS n, SUM(k) AS sk FROM s \
                   GROUP BY city, TUMBLE(ts, INTERVAL '10' MILLISECOND)";
        let rows: Vec<&Row> = input.iter().flatten().collect();
        let want = naive_groups(&rows);
        for enc in ENCODINGS {
            prop_assert_eq!(&run(sql, &batches(&input, enc)), &want, "{:?}", enc);
        }
    }
}
