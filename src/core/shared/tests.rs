//! The predicate index against the expression evaluator: for random conjuncts and random
//! batches, a member's routed rows are exactly the rows `Expr::select` passes.

use proptest::prelude::*;

use super::{Cmp, Indexable, Key, SharedIndex};
use crate::core::batch::{Batch, Column, StrColumn};
use crate::core::expr::{BinOp, Expr};
use crate::core::schema::{DataType, Scalar};

const TYPES: [DataType; 3] = [DataType::Int, DataType::Float, DataType::Str];
const STRS: [&str; 3] = ["a", "b", "c"];

fn conjunct() -> impl Strategy<Value = Indexable> {
    let cmp = prop::sample::select(vec![Cmp::Gt, Cmp::Ge, Cmp::Lt, Cmp::Le, Cmp::Eq]);
    let range = prop::sample::select(vec![Cmp::Gt, Cmp::Ge, Cmp::Lt, Cmp::Le]);
    prop_oneof![
        (cmp, -3i64..4).prop_map(|(cmp, c)| Indexable {
            column: 0,
            cmp,
            key: Key::Int(c)
        }),
        (range.clone(), -3i64..4).prop_map(|(cmp, c)| Indexable {
            column: 0,
            cmp,
            key: Key::Float {
                c: c as f64 / 2.0,
                from_int: true
            }
        }),
        (range, -3i64..4).prop_map(|(cmp, c)| Indexable {
            column: 1,
            cmp,
            key: Key::Float {
                c: c as f64 / 2.0,
                from_int: false
            }
        }),
        (0..3usize).prop_map(|s| Indexable {
            column: 2,
            cmp: Cmp::Eq,
            key: Key::Str(STRS[s].into())
        }),
    ]
}

/// The conjunct as the planner writes it.
fn expr(m: &Indexable) -> Expr {
    let op = match m.cmp {
        Cmp::Gt => BinOp::Gt,
        Cmp::Ge => BinOp::GtEq,
        Cmp::Lt => BinOp::Lt,
        Cmp::Le => BinOp::LtEq,
        Cmp::Eq => BinOp::Eq,
    };
    let (col, lit) = match &m.key {
        Key::Int(c) => (Expr::col(m.column), Scalar::Int(*c)),
        Key::Float { c, from_int: true } => (
            Expr::ToFloat(Box::new(Expr::col(m.column))),
            Scalar::Float(*c),
        ),
        Key::Float { c, .. } => (Expr::col(m.column), Scalar::Float(*c)),
        Key::Str(s) => (Expr::col(m.column), Scalar::Str(s.clone())),
    };
    Expr::binary(op, col, Expr::lit(lit))
}

fn row() -> impl Strategy<Value = (i64, f64, usize)> {
    let f = prop_oneof![
        (-6i64..7).prop_map(|v| v as f64 / 4.0),
        Just(f64::NAN),
        Just(-0.0),
        Just(f64::INFINITY),
    ];
    (-4i64..5, f, 0..4usize)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn routed_rows_are_the_rows_the_conjunct_passes(
        members in prop::collection::vec(conjunct(), 1..30),
        rows in prop::collection::vec(row(), 0..60),
    ) {
        let mut b = Batch::new(&TYPES, rows.len());
        for (j, &(i, f, s)) in rows.iter().enumerate() {
            let s = ["a", "b", "c", "d"][s];
            b.push_row(j as i64, &[Scalar::Int(i), Scalar::Float(f), Scalar::Str(s.into())]);
        }
        // Query indices with gaps, as after removals.
        let indexed: Vec<(usize, Indexable)> =
            members.iter().enumerate().map(|(k, m)| (3 * k + 1, m.clone())).collect();
        let mut index = SharedIndex::build(&indexed);
        index.route(&b);
        let mut sel = Vec::new();
        for (q, m) in &indexed {
            expr(m).select(&b, &mut sel);
            prop_assert_eq!(index.rows_of(*q), Some(sel.as_slice()), "{:?}", m);
            prop_assert_eq!(index.rows_of(q + 1), None);
        }
    }
}

/// String members under a dictionary larger than the batch (values no row uses: looked up
/// per row) and one no larger (looked up per value): the rows `Expr::select` passes.
#[test]
fn string_members_route_the_same_rows_under_any_dictionary() {
    let members: Vec<(usize, Indexable)> = (["a", "b", "zz"].iter().enumerate())
        .map(|(q, s)| {
            let key = Key::Str((*s).into());
            (
                q,
                Indexable {
                    column: 2,
                    cmp: Cmp::Eq,
                    key,
                },
            )
        })
        .collect();
    let mut index = SharedIndex::build(&members);
    let texts = ["b", "a", "b", "c", "zz"];
    let mut small = Batch::new(&TYPES, texts.len());
    for (j, s) in texts.iter().enumerate() {
        small.push_row(
            j as i64,
            &[Scalar::Int(0), Scalar::Float(0.0), Scalar::Str((*s).into())],
        );
    }
    let mut large = small.clone();
    let mut c = StrColumn::with_capacity(texts.len());
    (0..20).for_each(|i| c.push(&format!("unused{i}").into()));
    c.truncate(0);
    texts.iter().for_each(|s| c.push(&(*s).into()));
    large.columns[2] = Column::Str(c);
    let mut sel = Vec::new();
    for b in [&small, &large] {
        index.route(b);
        for (q, m) in &members {
            expr(m).select(b, &mut sel);
            assert_eq!(index.rows_of(*q), Some(sel.as_slice()), "{m:?}");
        }
        assert_eq!(index.rows_of(0), Some(&[1][..]));
        assert_eq!(index.rows_of(1), Some(&[0, 2][..]));
        assert_eq!(index.rows_of(2), Some(&[4][..]));
    }
}
