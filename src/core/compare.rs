//! Selections straight from a comparison of a column with a constant (`temp > 0.0`,
//! `sensor = 4`, `city = 'oslo'`, either side): the indices of the rows that pass, without
//! the column of booleans `Expr::eval` would build first (an allocation and a second pass
//! per batch). A string column is compared once per dictionary value, then per row by code.
//!
//! Invariant: the rows are exactly those `Expr::eval` marks true: the same operator on the
//! same values (a NaN passes only `<>`, as there).

use super::batch::{Batch, Column, StrColumn};
use super::datum::Datum;
use super::expr::{BinOp, Expr};
use super::schema::Scalar;

/// The rows of `batch` for which `expr` holds, when `expr` is a column compared with an
/// int, float or string constant of the column's type (a string column only when its
/// dictionary has no more values than the batch has rows): `Some(true)` when every row holds it
/// (`sel` left empty), `Some(false)` with the passing rows in `sel`. `None` for any
/// other expression (nothing written).
pub(super) fn select_compare(expr: &Expr, batch: &Batch, sel: &mut Vec<u32>) -> Option<bool> {
    let Expr::Binary { op, left, right } = expr else {
        return None;
    };
    let (column, constant, op) = match (&**left, &**right) {
        (Expr::Column(c), Expr::Literal(k)) => (*c, k, *op),
        (Expr::Literal(k), Expr::Column(c)) => (*c, k, flipped(*op)?),
        _ => return None,
    };
    match (&batch.columns[column], constant) {
        (Column::Int(v), Scalar::Int(k) | Scalar::Timestamp(k)) => by_op(v, *k, op, sel),
        (Column::Float(v), Scalar::Float(k)) => by_op(v, *k, op, sel),
        (Column::Str(v), Scalar::Str(k)) if v.per_value_pays(v.len()) => {
            let pass = per_value(v, |x| str_op(op, x, k))?;
            Some(keep(v.codes(), sel, |c| pass[c as usize]))
        }
        _ => None,
    }
}

/// `x op k` on strings; `None` for an operator that is no comparison.
fn str_op(op: BinOp, x: &str, k: &str) -> Option<bool> {
    Some(match op {
        BinOp::Eq => x == k,
        BinOp::NotEq => x != k,
        BinOp::Lt => x < k,
        BinOp::LtEq => x <= k,
        BinOp::Gt => x > k,
        BinOp::GtEq => x >= k,
        _ => return None,
    })
}

/// `f` of each value of `v`'s dictionary, by code; `None` if `f` gives `None` for one.
fn per_value(v: &StrColumn, f: impl Fn(&str) -> Option<bool>) -> Option<Vec<bool>> {
    v.dict().values().iter().map(|x| f(x)).collect()
}

/// A string column compared with a string constant (either side) as a column of booleans,
/// once per dictionary value and then per row by code: the values `Expr::eval` gives row
/// by row. `None` for other operands, or a dictionary with more values than rows.
pub(super) fn str_cmp_by_value<'a>(
    op: BinOp,
    l: &Datum<'_>,
    r: &Datum<'_>,
    n: usize,
) -> Option<Datum<'a>> {
    let (v, pass) = match (l, r) {
        (Datum::Strs(v), Datum::Str(k)) if v.per_value_pays(n) => {
            (v, per_value(v, |x| str_op(op, x, k))?)
        }
        (Datum::Str(k), Datum::Strs(v)) if v.per_value_pays(n) => {
            (v, per_value(v, |x| str_op(op, k, x))?)
        }
        _ => return None,
    };
    let rows = v.codes().iter().map(|&c| pass[c as usize]).collect();
    Some(Datum::Owned(Column::Bool(rows)))
}

/// `k op x` as `x op' k`; `None` for an operator that is no comparison.
fn flipped(op: BinOp) -> Option<BinOp> {
    Some(match op {
        BinOp::Eq | BinOp::NotEq => op,
        BinOp::Lt => BinOp::Gt,
        BinOp::LtEq => BinOp::GtEq,
        BinOp::Gt => BinOp::Lt,
        BinOp::GtEq => BinOp::LtEq,
        _ => return None,
    })
}

fn by_op<T: Copy + PartialOrd>(v: &[T], k: T, op: BinOp, sel: &mut Vec<u32>) -> Option<bool> {
    Some(match op {
        BinOp::Eq => keep(v, sel, |x| x == k),
        BinOp::NotEq => keep(v, sel, |x| x != k),
        BinOp::Lt => keep(v, sel, |x| x < k),
        BinOp::LtEq => keep(v, sel, |x| x <= k),
        BinOp::Gt => keep(v, sel, |x| x > k),
        BinOp::GtEq => keep(v, sel, |x| x >= k),
        _ => return None,
    })
}

/// Counts the passing rows first (a compare and an add per row, vectorised); when some
/// fail, writes every row's index and moves on only past passing ones (no branch on the
/// outcome, which the predictor cannot learn at middling selectivity).
fn keep<T: Copy>(v: &[T], sel: &mut Vec<u32>, pass: impl Fn(T) -> bool) -> bool {
    sel.clear();
    let n = v.len();
    let passing = v.iter().filter(|&&x| pass(x)).count();
    if passing == n {
        return true;
    }
    if passing > 0 {
        sel.resize(n, 0);
        let mut j = 0;
        for (i, &x) in v.iter().enumerate() {
            sel[j] = i as u32;
            j += usize::from(pass(x));
        }
        sel.truncate(j);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> Batch {
        Batch {
            arrival: vec![0; 6],
            columns: vec![
                Column::Int(vec![3, -1, 7, 3, 0, 9]),
                Column::Float(vec![0.5, f64::NAN, -2.0, 0.5, 4.0, -0.0]),
            ],
        }
    }

    /// The rows `Expr::eval` marks true, the slow way.
    fn by_eval(e: &Expr, b: &Batch) -> Vec<u32> {
        let mut sel = Vec::new();
        let d = e.eval(b);
        for i in 0..b.len() {
            if d.bools().at(i) {
                sel.push(i as u32);
            }
        }
        sel
    }

    #[test]
    fn every_comparison_either_way_round_selects_the_rows_eval_marks_true() {
        let b = batch();
        let ops = [
            BinOp::Eq,
            BinOp::NotEq,
            BinOp::Lt,
            BinOp::LtEq,
            BinOp::Gt,
            BinOp::GtEq,
        ];
        let constants = [
            (0, Scalar::Int(3)),
            (0, Scalar::Int(-5)),
            (0, Scalar::Int(100)),
            (1, Scalar::Float(0.5)),
            (1, Scalar::Float(0.0)),
            (1, Scalar::Float(f64::NAN)),
        ];
        let mut checked = 0;
        for op in ops {
            for (c, k) in &constants {
                let (col, lit) = (
                    Box::new(Expr::Column(*c)),
                    Box::new(Expr::Literal(k.clone())),
                );
                for e in [
                    Expr::Binary {
                        op,
                        left: col.clone(),
                        right: lit.clone(),
                    },
                    Expr::Binary {
                        op,
                        left: lit,
                        right: col,
                    },
                ] {
                    let want = by_eval(&e, &b);
                    let mut sel = vec![99];
                    let all =
                        select_compare(&e, &b, &mut sel).expect("a column against a constant");
                    let got = if all {
                        (0..b.len() as u32).collect()
                    } else {
                        sel
                    };
                    assert_eq!(got, want, "{e:?}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 72);
    }

    #[test]
    fn other_shapes_are_left_to_eval() {
        let b = batch();
        let mut sel = vec![7];
        let two_columns = Expr::Binary {
            op: BinOp::Gt,
            left: Box::new(Expr::Column(0)),
            right: Box::new(Expr::Column(0)),
        };
        assert_eq!(select_compare(&two_columns, &b, &mut sel), None);
        let mixed = Expr::Binary {
            op: BinOp::Gt,
            left: Box::new(Expr::Column(1)),
            right: Box::new(Expr::Literal(Scalar::Int(1))),
        };
        assert_eq!(select_compare(&mixed, &b, &mut sel), None);
        assert_eq!(sel, vec![7]);
    }
}
