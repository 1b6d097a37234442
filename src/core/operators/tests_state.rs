//! Window state beyond random shedding: groups thinned by semantic drops say so without
//! being scaled, and interned string keys live only as long as their groups.

use super::tests::{assert_aligned, batch, pipeline};
use super::{ColumnApprox, Output};
use crate::core::batch::Batch;
use crate::core::schema::{DataType, Field, Scalar, Schema};
use crate::sql::{Catalog, plan_query};

const SEC: i64 = 1_000_000_000;

#[test]
fn groups_thinned_by_value_say_so_without_being_scaled() {
    let mut p = pipeline(
        "SELECT k, COUNT(*) AS n, MAX(v) AS hi FROM s GROUP BY k, TUMBLE(ts, INTERVAL '1' SECOND)",
    );
    let mut out = p.new_output();
    // Key 1 comes from a batch semantic drops halved; key 2 from an untouched one.
    p.process(&batch(&[(1, 5, 0), (1, 7, 10)]), 1.0, 0.5, &mut out);
    p.process(&batch(&[(2, 3, 20)]), 1.0, 1.0, &mut out);
    p.flush(1_000 * SEC, &mut out);
    assert_aligned(&out);
    let types = [DataType::Int, DataType::Int, DataType::Int];
    assert_eq!(
        out.rows.row(0, &types),
        [Scalar::Int(1), Scalar::Int(2), Scalar::Int(7)],
        "counts are not scaled"
    );
    assert_eq!(out.approx.keep, [0.5, 1.0]);
    assert_eq!(
        out.approx.interval(1, 0),
        None,
        "no interval without random loss"
    );
    assert_eq!(out.approx.columns[2], ColumnApprox::LowerBound);

    let mut p = pipeline("SELECT k, v FROM s WHERE v > 0");
    let mut out = p.new_output();
    p.process(&batch(&[(1, 5, 0)]), 1.0, 0.25, &mut out);
    assert_eq!(out.approx.keep, [0.25]);
}

#[test]
fn interned_keys_live_only_as_long_as_their_groups() {
    let f = |n: &str, ty| Field { name: n.into(), ty };
    let mut schema = Schema::new(vec![f("name", DataType::Str), f("ts", DataType::Timestamp)]);
    schema.event_time = Some(1);
    let catalog = Catalog {
        streams: vec![("s".into(), schema.clone())],
    };
    let sql = "SELECT name, COUNT(*) AS n FROM s GROUP BY name, TUMBLE(ts, INTERVAL '1' SECOND)";
    let plan = plan_query(sql, &catalog).unwrap();
    let crate::core::plan::PlanBody::Aggregate(a) = &plan.body else {
        unreachable!()
    };
    let mut op = super::WindowAggregate::new(a);
    let mut out = Output::new(&a.group_row_types());
    // 1000 windows, each with 5 session ids never seen again, plus one late tuple each.
    for w in 0..1000i64 {
        let mut b = Batch::new(&schema.types(), 6);
        for i in 0..5 {
            let name: std::sync::Arc<str> = format!("s{w}-{i}").into();
            b.push_row(0, &[Scalar::Str(name), Scalar::Timestamp(w * SEC)]);
        }
        let late: std::sync::Arc<str> = format!("late{w}").into();
        b.push_row(0, &[Scalar::Str(late), Scalar::Timestamp((w - 2) * SEC)]);
        op.process(&b, 1.0, 1.0, None, &mut out);
        assert!(
            op.interned() <= 10,
            "window {w}: {} strings kept",
            op.interned()
        );
    }
    assert_eq!(
        out.len(),
        999 * 5,
        "every closed window emitted with its names"
    );
    let types = a.group_row_types();
    assert_eq!(out.rows.row(0, &types)[0], Scalar::Str("s0-0".into()));
    assert_eq!(
        out.rows.row(4995 - 1, &types)[0],
        Scalar::Str("s998-4".into())
    );
}

/// What `AVG(x)` gives in `shared` (it reads the query's SUM(x) and COUNT(*)) and in
/// `own` (no SUM: it keeps its own sum and count), row by row: value, keep, interval.
fn avg_column(shared: &str, own: &str, input: &super::tests_sliced::Input) -> [Vec<String>; 2] {
    [shared, own].map(|q| {
        let mut p = pipeline(q);
        let (rows, out) = super::tests_sliced::run(&mut p, input);
        (0..rows.len())
            .map(|i| {
                let interval = out.approx.interval(1, i);
                format!("{:?} {:?} {interval:?}", rows[i][1], out.approx.keep.get(i))
            })
            .collect()
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(100))]

    /// An AVG that shares the query's SUM and COUNT (`Acc::AvgOf`) emits what an AVG
    /// with its own sum and count does, exact or scaled, tumbling or sliced.
    #[test]
    fn an_avg_sharing_sum_and_count_emits_what_its_own_would(
        input in super::tests_sliced::input(false), hop: bool,
    ) {
        let window = if hop {
            "HOP(ts, INTERVAL '2' MILLISECOND, INTERVAL '6' MILLISECOND)"
        } else {
            "TUMBLE(ts, INTERVAL '5' MILLISECOND)"
        };
        let q = |calls: &str| format!("SELECT k, {calls}, window_start FROM s WHERE v > -7 GROUP BY k, {window}");
        let [shared, own] = avg_column(
            &q("AVG(x) AS ax, COUNT(*) AS n, SUM(x) AS sx"),
            &q("AVG(x) AS ax, COUNT(*) AS n"),
            &input,
        );
        proptest::prop_assert_eq!(shared, own);
    }
}
