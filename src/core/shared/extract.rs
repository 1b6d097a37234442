//! Which part of a query's WHERE clause a predicate index can evaluate: one conjunct of the
//! form `column <op> constant` (or `constant <op> column`), `op` one of `= < <= > >=`.
//! The invariant: a row passes the conjunct returned here exactly when `Expr::eval` of that
//! conjunct yields true for it, so routing by the index and then running the whole filter
//! gives the rows the filter alone gives.

use std::sync::Arc;

use crate::core::expr::{BinOp, Expr};
use crate::core::schema::{DataType, Scalar};

/// A comparison of the column's value `x` against the constant `c`: `x > c` etc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
}

/// The constant, in the storage type the comparison runs in.
#[derive(Clone, Debug, PartialEq)]
pub enum Key {
    /// Compared as floats; `from_int`: the column is an int the planner converts
    /// (`ToFloat`) before comparing.
    Float { c: f64, from_int: bool },
    /// Int or timestamp column against an int constant.
    Int(i64),
    /// String column: equality only.
    Str(Arc<str>),
}

/// The conjunct a predicate index evaluates for one query.
#[derive(Clone, Debug, PartialEq)]
pub struct Indexable {
    pub column: usize,
    pub cmp: Cmp,
    pub key: Key,
}

/// The first indexable conjunct of `filter` (a top-level `AND` chain), if any. `types` are
/// the input stream's column types.
pub fn indexable(filter: &Expr, types: &[DataType]) -> Option<Indexable> {
    match filter {
        Expr::Binary {
            op: BinOp::And,
            left,
            right,
        } => indexable(left, types).or_else(|| indexable(right, types)),
        Expr::Binary { op, left, right } => {
            let cmp = cmp_of(*op)?;
            comparison(cmp, left, right, types)
                .or_else(|| comparison(flip(cmp), right, left, types))
        }
        _ => None,
    }
}

/// `indexable`, with the rest of the filter once that conjunct is taken out (`None`: nothing
/// is left). The rest passes a row exactly when the filter does, for rows that pass the
/// conjunct (conjuncts have no side effects, so their order does not matter).
pub fn split(filter: &Expr, types: &[DataType]) -> Option<(Indexable, Option<Expr>)> {
    let and = |a: Option<Expr>, b: &Expr| {
        Some(match a {
            Some(a) => Expr::binary(BinOp::And, a, b.clone()),
            None => b.clone(),
        })
    };
    match filter {
        Expr::Binary {
            op: BinOp::And,
            left,
            right,
        } => match split(left, types) {
            Some((ix, rest)) => Some((ix, and(rest, right))),
            None => {
                let (ix, rest) = split(right, types)?;
                Some((ix, and(rest, left)))
            }
        },
        e => Some((indexable(e, types)?, None)),
    }
}

fn cmp_of(op: BinOp) -> Option<Cmp> {
    Some(match op {
        BinOp::Gt => Cmp::Gt,
        BinOp::GtEq => Cmp::Ge,
        BinOp::Lt => Cmp::Lt,
        BinOp::LtEq => Cmp::Le,
        BinOp::Eq => Cmp::Eq,
        _ => return None,
    })
}

/// `c < x` is `x > c`.
fn flip(cmp: Cmp) -> Cmp {
    match cmp {
        Cmp::Gt => Cmp::Lt,
        Cmp::Ge => Cmp::Le,
        Cmp::Lt => Cmp::Gt,
        Cmp::Le => Cmp::Ge,
        Cmp::Eq => Cmp::Eq,
    }
}

/// `column <cmp> literal`, if `col` and `lit` have that shape and types the index handles.
fn comparison(cmp: Cmp, col: &Expr, lit: &Expr, types: &[DataType]) -> Option<Indexable> {
    let Expr::Literal(s) = lit else {
        return None;
    };
    let (column, from_int) = match col {
        Expr::Column(c) => (*c, false),
        Expr::ToFloat(inner) => match **inner {
            Expr::Column(c) => (c, true),
            _ => return None,
        },
        _ => return None,
    };
    let ty = *types.get(column)?;
    let key = match (ty, s, from_int) {
        // Float equality stays with the filter: hashing floats would have to agree with
        // `==` on -0.0 and NaN.
        (DataType::Float, Scalar::Float(c), false) if !c.is_nan() && cmp != Cmp::Eq => {
            Key::Float { c: *c, from_int }
        }
        (DataType::Int | DataType::Timestamp, Scalar::Float(c), true)
            if !c.is_nan() && cmp != Cmp::Eq =>
        {
            Key::Float { c: *c, from_int }
        }
        (DataType::Int | DataType::Timestamp, Scalar::Int(c) | Scalar::Timestamp(c), false) => {
            Key::Int(*c)
        }
        (DataType::Str, Scalar::Str(c), false) if cmp == Cmp::Eq => Key::Str(c.clone()),
        _ => return None,
    };
    Some(Indexable { column, cmp, key })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
        Expr::binary(op, l, r)
    }

    #[test]
    fn finds_the_first_indexable_conjunct_either_way_round() {
        let types = [DataType::Int, DataType::Float, DataType::Str];
        let e = bin(
            BinOp::And,
            bin(BinOp::Add, Expr::col(0), Expr::lit(Scalar::Int(1))),
            bin(BinOp::Lt, Expr::lit(Scalar::Float(0.5)), Expr::col(1)),
        );
        assert_eq!(
            indexable(&e, &types),
            Some(Indexable {
                column: 1,
                cmp: Cmp::Gt,
                key: Key::Float {
                    c: 0.5,
                    from_int: false
                }
            })
        );
        let s = bin(BinOp::Eq, Expr::col(2), Expr::lit(Scalar::Str("eu".into())));
        assert_eq!(
            indexable(&s, &types).map(|i| i.key),
            Some(Key::Str("eu".into()))
        );
        let f = bin(BinOp::Eq, Expr::col(1), Expr::lit(Scalar::Float(1.0)));
        assert_eq!(indexable(&f, &types), None);
        let or = bin(BinOp::Or, s.clone(), s);
        assert_eq!(indexable(&or, &types), None);
    }
}
