//! Plan shapes for the supported grammar: each test plans one query against the
//! `readings` stream and checks the physical plan it must compile to.

use super::{Catalog, plan_query};
use crate::core::expr::{BinOp, Expr};
use crate::core::plan::{
    AggCall, AggFunc, AggregatePlan, PlanBody, QueryPlan, TimeSource, WindowSpec,
};
use crate::core::schema::{DataType, Field, Scalar, Schema};

const SEC: i64 = 1_000_000_000;

/// `readings(sensor int, temp float, city string, ok bool, ts timestamp)`, event time `ts`.
pub(super) fn catalog() -> Catalog {
    let f = |name: &str, ty| Field {
        name: name.into(),
        ty,
    };
    let mut schema = Schema::new(vec![
        f("sensor", DataType::Int),
        f("temp", DataType::Float),
        f("city", DataType::Str),
        f("ok", DataType::Bool),
        f("ts", DataType::Timestamp),
    ]);
    schema.event_time = Some(4);
    Catalog {
        streams: vec![("readings".into(), schema)],
    }
}

fn plan(sql: &str) -> QueryPlan {
    plan_query(sql, &catalog()).unwrap_or_else(|e| panic!("{sql}\n{e} at {}:{}", e.line, e.column))
}

fn project(sql: &str) -> (Option<Expr>, Vec<Expr>, QueryPlan) {
    let p = plan(sql);
    match &p.body {
        PlanBody::Project(exprs) => (p.filter.clone(), exprs.clone(), p),
        other => panic!("expected a projection, got {other:?}"),
    }
}

fn aggregate(sql: &str) -> (AggregatePlan, QueryPlan) {
    let p = plan(sql);
    match &p.body {
        PlanBody::Aggregate(a) => (a.clone(), p),
        other => panic!("expected an aggregate, got {other:?}"),
    }
}

fn names(p: &QueryPlan) -> Vec<(&str, DataType)> {
    p.output
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.ty))
        .collect()
}

fn col(i: usize) -> Expr {
    Expr::Column(i)
}
fn int(v: i64) -> Expr {
    Expr::Literal(Scalar::Int(v))
}
fn float(v: f64) -> Expr {
    Expr::Literal(Scalar::Float(v))
}
fn string(v: &str) -> Expr {
    Expr::Literal(Scalar::Str(v.into()))
}
fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
    Expr::binary(op, l, r)
}

#[test]
fn filter_and_projection_with_expression_and_alias() {
    let (filter, exprs, p) = project(
        "SELECT sensor, temp * 2 AS double_temp, temp+1 FROM Readings \
         WHERE temp > 20 AND city = 'Oslo'",
    );
    assert_eq!(p.stream, "readings");
    let want_filter = bin(
        BinOp::And,
        bin(BinOp::Gt, col(1), float(20.0)),
        bin(BinOp::Eq, col(2), string("Oslo")),
    );
    assert_eq!(filter, Some(want_filter));
    assert_eq!(
        exprs,
        vec![
            col(0),
            bin(BinOp::Mul, col(1), float(2.0)),
            bin(BinOp::Add, col(1), float(1.0)),
        ]
    );
    assert_eq!(
        names(&p),
        vec![
            ("sensor", DataType::Int),
            ("double_temp", DataType::Float),
            ("temp + 1", DataType::Float),
        ]
    );
    assert_eq!(p.output.event_time, None);
}

#[test]
fn select_star_expands_every_column_and_keeps_event_time() {
    let (filter, exprs, p) = project("SELECT * FROM readings");
    assert_eq!(filter, None);
    assert_eq!(exprs, (0..5).map(col).collect::<Vec<_>>());
    assert_eq!(p.output, catalog().streams[0].1);
}

#[test]
fn between_in_and_case() {
    let (filter, exprs, p) = project(
        "SELECT CASE WHEN temp > 30 THEN 'hot' WHEN temp > 10 THEN 'mild' ELSE 'cold' END AS feel,
                CASE sensor WHEN 1 THEN 0.5 ELSE 2 END
         FROM readings
         WHERE sensor BETWEEN 1 AND 10 AND temp NOT BETWEEN -5 AND 1.5
           AND city IN ('Oslo', 'Rome') AND sensor NOT IN (3, -4)",
    );
    let between = bin(
        BinOp::And,
        bin(BinOp::GtEq, col(0), int(1)),
        bin(BinOp::LtEq, col(0), int(10)),
    );
    let not_between = bin(
        BinOp::Or,
        bin(BinOp::Lt, col(1), float(-5.0)),
        bin(BinOp::Gt, col(1), float(1.5)),
    );
    let in_cities = Expr::InList {
        expr: Box::new(col(2)),
        list: vec![Scalar::Str("Oslo".into()), Scalar::Str("Rome".into())],
        negated: false,
    };
    let not_in = Expr::InList {
        expr: Box::new(col(0)),
        list: vec![Scalar::Int(3), Scalar::Int(-4)],
        negated: true,
    };
    let and = |l, r| bin(BinOp::And, l, r);
    let want = and(and(and(between, not_between), in_cities), not_in);
    assert_eq!(filter, Some(want));
    let feel = Expr::Case {
        branches: vec![
            (bin(BinOp::Gt, col(1), float(30.0)), string("hot")),
            (bin(BinOp::Gt, col(1), float(10.0)), string("mild")),
        ],
        otherwise: Box::new(string("cold")),
    };
    let simple = Expr::Case {
        branches: vec![(bin(BinOp::Eq, col(0), int(1)), float(0.5))],
        otherwise: Box::new(float(2.0)),
    };
    assert_eq!(exprs, vec![feel, simple]);
    assert_eq!(names(&p)[0], ("feel", DataType::Str));
    assert_eq!(names(&p)[1].1, DataType::Float);
}

#[test]
fn mixed_int_and_float_operands_are_widened() {
    let (filter, exprs, _) =
        project("SELECT sensor + temp, -sensor, NOT ok FROM readings WHERE sensor IN (1, 2.5)");
    assert_eq!(
        exprs,
        vec![
            bin(BinOp::Add, Expr::ToFloat(Box::new(col(0))), col(1)),
            Expr::Neg(Box::new(col(0))),
            Expr::Not(Box::new(col(3))),
        ]
    );
    let want = Expr::InList {
        expr: Box::new(Expr::ToFloat(Box::new(col(0)))),
        list: vec![Scalar::Float(1.0), Scalar::Float(2.5)],
        negated: false,
    };
    assert_eq!(filter, Some(want));
}

#[test]
fn proctime_and_timestamp_arithmetic() {
    let (filter, exprs, p) = project(
        "SELECT PROCTIME() - ts AS delay, ts + INTERVAL '1' SECOND AS later FROM readings \
         WHERE ts > PROCTIME() - INTERVAL '500 ms'",
    );
    assert_eq!(
        exprs,
        vec![
            bin(BinOp::Sub, Expr::Arrival, col(4)),
            bin(BinOp::Add, col(4), int(SEC)),
        ]
    );
    let want = bin(
        BinOp::Gt,
        col(4),
        bin(BinOp::Sub, Expr::Arrival, int(SEC / 2)),
    );
    assert_eq!(filter, Some(want));
    assert_eq!(
        names(&p),
        vec![("delay", DataType::Int), ("later", DataType::Timestamp)]
    );
}

#[test]
fn tumbling_count_sum_avg_per_key_with_window_bounds() {
    let (a, p) = aggregate(
        "SELECT city, COUNT(*), SUM(sensor) AS total, AVG(temp), window_start,
                TUMBLE_END(ts, INTERVAL '1' SECOND)
         FROM readings WHERE ok
         GROUP BY city, TUMBLE(ts, INTERVAL '1' SECOND)",
    );
    assert_eq!(p.filter, Some(col(3)));
    assert_eq!(a.time, TimeSource::Column(4));
    assert_eq!(a.window, WindowSpec::tumbling(SEC));
    assert_eq!(a.lateness, 0);
    assert_eq!(a.keys, vec![col(2)]);
    assert_eq!(a.key_types, vec![DataType::Str]);
    let call = |func, arg: Option<(Expr, DataType)>| AggCall {
        func,
        arg_type: arg.as_ref().map(|a| a.1),
        arg: arg.map(|a| a.0),
    };
    assert_eq!(
        a.aggs,
        vec![
            call(AggFunc::CountStar, None),
            call(AggFunc::Sum, Some((col(0), DataType::Int))),
            call(AggFunc::Avg, Some((col(1), DataType::Float))),
        ]
    );
    assert_eq!(a.having, None);
    assert_eq!(a.project, (0..6).map(col).collect::<Vec<_>>());
    use DataType::*;
    assert_eq!(
        names(&p),
        vec![
            ("city", Str),
            ("COUNT(*)", Int),
            ("total", Int),
            ("AVG(temp)", Float),
            ("window_start", Timestamp),
            ("window_end", Timestamp),
        ]
    );
    assert_eq!(p.output.event_time, Some(5));
    assert_eq!(
        a.group_row_types(),
        vec![Str, Int, Int, Float, Timestamp, Timestamp]
    );
}

#[test]
fn hop_takes_slide_then_size() {
    let (a, p) = aggregate(
        "SELECT sensor, MAX(temp), HOP_START(ts, INTERVAL '500' MILLISECOND, INTERVAL '2 seconds') AS ws
         FROM readings
         GROUP BY HOP(ts, INTERVAL '500' MILLISECOND, INTERVAL '2 seconds'), sensor",
    );
    assert_eq!(
        a.window,
        WindowSpec {
            slide: SEC / 2,
            size: 2 * SEC,
        }
    );
    assert_eq!(a.keys, vec![col(0)]);
    assert_eq!(a.project, vec![col(0), col(1), col(2)]);
    assert_eq!(names(&p)[2], ("ws", DataType::Timestamp));
}

#[test]
fn proctime_window_with_fractional_interval() {
    let (a, _) = aggregate(
        "SELECT COUNT(*) AS n, window_end FROM readings GROUP BY TUMBLE(PROCTIME(), INTERVAL '1.5' SECOND)",
    );
    assert_eq!(a.time, TimeSource::Arrival);
    assert_eq!(a.window, WindowSpec::tumbling(3 * SEC / 2));
    assert!(a.keys.is_empty());
    assert_eq!(a.project, vec![col(0), col(2)]);
}

#[test]
fn having_shares_aggregate_slots_with_select() {
    let (a, _) = aggregate(
        "SELECT sensor, COUNT(*) AS n FROM readings
         GROUP BY sensor, TUMBLE(ts, INTERVAL '10' SECOND)
         HAVING COUNT(*) > 5 AND MAX(temp) < 40",
    );
    assert_eq!(a.aggs.len(), 2);
    assert_eq!(a.aggs[1].func, AggFunc::Max);
    assert_eq!(a.project, vec![col(0), col(1)]);
    let want = bin(
        BinOp::And,
        bin(BinOp::Gt, col(1), int(5)),
        bin(BinOp::Lt, col(2), float(40.0)),
    );
    assert_eq!(a.having, Some(want));
}

#[test]
fn arithmetic_over_aggregates_and_key_expressions() {
    let (a, p) = aggregate(
        "SELECT sensor % 10 AS bucket, (sensor % 10) * 2, SUM(temp) / COUNT(*) AS mean,
                AVG(temp) * 2, COUNT(*)
         FROM readings
         GROUP BY sensor % 10, TUMBLE(ts, INTERVAL '1' MINUTE)",
    );
    assert_eq!(a.window, WindowSpec::tumbling(60 * SEC));
    assert_eq!(a.keys, vec![bin(BinOp::Mod, col(0), int(10))]);
    assert_eq!(
        a.project,
        vec![
            col(0),
            bin(BinOp::Mul, col(0), int(2)),
            bin(BinOp::Div, col(1), Expr::ToFloat(Box::new(col(2)))),
            bin(BinOp::Mul, col(3), float(2.0)),
            col(2),
        ]
    );
    assert_eq!(names(&p)[1], ("(sensor % 10) * 2", DataType::Int));
    assert_eq!(names(&p)[2], ("mean", DataType::Float));
}
