//! Typing rules for SQL operators: which operand types each operator accepts, what it
//! yields, and where an int operand is widened to float so that both operands of every
//! physical `Expr::Binary` share one storage type (the evaluator never coerces per row).

use sqlparser::ast;

use super::SqlError;
use super::source::Source;
use crate::core::expr::{BinOp, Expr};
use crate::core::schema::{DataType, Scalar};

/// A planned expression and its type.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Typed {
    pub expr: Expr,
    pub ty: DataType,
}

impl Typed {
    pub fn new(expr: Expr, ty: DataType) -> Typed {
        Typed { expr, ty }
    }
}

/// Int to float: literals are converted at plan time, everything else gets `ToFloat`.
pub(super) fn to_float(t: Typed) -> Typed {
    let expr = match t.expr {
        Expr::Literal(Scalar::Int(v)) => Expr::Literal(Scalar::Float(v as f64)),
        e if t.ty == DataType::Float => e,
        e => Expr::ToFloat(Box::new(e)),
    };
    Typed::new(expr, DataType::Float)
}

/// Makes two operands the same storage type for a comparison, or `None` if they cannot
/// be compared: numbers with numbers, timestamps with timestamps or ints, strings with
/// strings, bools with bools.
pub(super) fn comparable(l: Typed, r: Typed) -> Option<(Typed, Typed)> {
    use DataType::*;
    match (l.ty, r.ty) {
        (Int, Float) => Some((to_float(l), r)),
        (Float, Int) => Some((l, to_float(r))),
        (a, b) if a == b => Some((l, r)),
        (Timestamp, Int) | (Int, Timestamp) => Some((l, r)),
        _ => None,
    }
}

/// The physical operator for a SQL binary operator, `None` if unsupported.
pub(super) fn bin_op(op: &ast::BinaryOperator) -> Option<BinOp> {
    use ast::BinaryOperator as B;
    Some(match op {
        B::Plus => BinOp::Add,
        B::Minus => BinOp::Sub,
        B::Multiply => BinOp::Mul,
        B::Divide => BinOp::Div,
        B::Modulo => BinOp::Mod,
        B::Eq => BinOp::Eq,
        B::NotEq => BinOp::NotEq,
        B::Lt => BinOp::Lt,
        B::LtEq => BinOp::LtEq,
        B::Gt => BinOp::Gt,
        B::GtEq => BinOp::GtEq,
        B::And => BinOp::And,
        B::Or => BinOp::Or,
        _ => return None,
    })
}

/// Types `l op r`; `e` is the whole expression, quoted in errors.
pub(super) fn binary(
    src: &Source<'_>,
    e: &ast::Expr,
    op: BinOp,
    l: Typed,
    r: Typed,
) -> Result<Typed, SqlError> {
    use DataType::*;
    let (lt, rt) = (l.ty, r.ty);
    let text = || src.expr_text(e);
    let out = match op {
        BinOp::And | BinOp::Or => {
            if lt != Bool || rt != Bool {
                let msg = format!(
                    "type mismatch: `{}` needs bool operands, found {lt} and {rt}",
                    text()
                );
                return Err(src.expr_error(msg, e));
            }
            Some((l, r, Bool))
        }
        BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq => {
            comparable(l, r).map(|(l, r)| (l, r, Bool))
        }
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod => match (lt, rt) {
            (Int, Int) => Some((l, r, Int)),
            (Float, Float) => Some((l, r, Float)),
            (Int, Float) => Some((to_float(l), r, Float)),
            (Float, Int) => Some((l, to_float(r), Float)),
            (Timestamp, Int) if matches!(op, BinOp::Add | BinOp::Sub) => Some((l, r, Timestamp)),
            (Int, Timestamp) if op == BinOp::Add => Some((l, r, Timestamp)),
            (Timestamp, Timestamp) if op == BinOp::Sub => Some((l, r, Int)),
            _ => None,
        },
    };
    match out {
        Some((l, r, ty)) => Ok(Typed::new(Expr::binary(op, l.expr, r.expr), ty)),
        None if is_comparison(op) => Err(src.expr_error(
            format!("type mismatch: `{}` compares {lt} with {rt}", text()),
            e,
        )),
        None => Err(src.expr_error(
            format!(
                "type mismatch: `{}` applies {} to {lt} and {rt}",
                text(),
                BinOp::symbol(op)
            ),
            e,
        )),
    }
}

fn is_comparison(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq
    )
}

/// `-x`: ints and floats only; constants are folded so `-5` stays a literal.
pub(super) fn negate(src: &Source<'_>, e: &ast::Expr, t: Typed) -> Result<Typed, SqlError> {
    let expr = match t.expr {
        Expr::Literal(Scalar::Int(v)) => Expr::Literal(Scalar::Int(v.wrapping_neg())),
        Expr::Literal(Scalar::Float(v)) => Expr::Literal(Scalar::Float(-v)),
        _ if !matches!(t.ty, DataType::Int | DataType::Float) => {
            let msg = format!(
                "type mismatch: `{}` needs a numeric operand, found {}",
                src.expr_text(e),
                t.ty
            );
            return Err(src.expr_error(msg, e));
        }
        x => Expr::Neg(Box::new(x)),
    };
    Ok(Typed::new(expr, t.ty))
}

/// Requires a bool; `what` says where, e.g. "WHERE needs a bool condition".
pub(super) fn need_bool(
    src: &Source<'_>,
    e: &ast::Expr,
    t: &Typed,
    what: &str,
) -> Result<(), SqlError> {
    if t.ty == DataType::Bool {
        return Ok(());
    }
    let msg = format!("type mismatch: {what}, `{}` is {}", src.expr_text(e), t.ty);
    Err(src.expr_error(msg, e))
}

/// One type for all CASE results: equal types, int with float (as float), or int with
/// timestamp (as timestamp). `None` if the types cannot share a column.
pub(super) fn unify(values: Vec<Typed>) -> Option<(Vec<Expr>, DataType)> {
    use DataType::*;
    let first = values.first()?.ty;
    let ty = values.iter().try_fold(first, |acc, v| match (acc, v.ty) {
        (a, b) if a == b => Some(a),
        (Int, Float) | (Float, Int) => Some(Float),
        (Int, Timestamp) | (Timestamp, Int) => Some(Timestamp),
        _ => None,
    })?;
    let exprs = values
        .into_iter()
        .map(|v| {
            if ty == Float {
                to_float(v).expr
            } else {
                v.expr
            }
        })
        .collect();
    Some((exprs, ty))
}

/// A literal value; numbers with a `.` or exponent are floats, others ints.
pub(super) fn literal(src: &Source<'_>, e: &ast::Expr, v: &ast::Value) -> Result<Typed, SqlError> {
    use ast::Value as V;
    let scalar = match v {
        V::Number(n, _) if n.contains(['.', 'e', 'E']) => match n.parse::<f64>() {
            Ok(f) => Scalar::Float(f),
            Err(_) => return Err(src.expr_error("invalid number literal", e)),
        },
        V::Number(n, _) => match n.parse::<i64>() {
            Ok(i) => Scalar::Int(i),
            Err(_) => return Err(src.expr_error("integer literal out of range for int", e)),
        },
        V::SingleQuotedString(s) => Scalar::Str(s.as_str().into()),
        V::Boolean(b) => Scalar::Bool(*b),
        V::Null => {
            return Err(src.expr_error("unsupported: NULL (stream values are never null)", e));
        }
        _ => return Err(src.expr_error("unsupported: this kind of literal", e)),
    };
    let ty = scalar.data_type();
    Ok(Typed::new(Expr::Literal(scalar), ty))
}

/// Converts IN-list constants to the operand's storage type (after the operand was widened
/// to float if any constant is a float). `None` if a constant cannot be compared with it.
pub(super) fn in_list_scalar(ty: DataType, s: Scalar) -> Option<Scalar> {
    use DataType::*;
    match (ty, s) {
        (Float, Scalar::Int(v)) => Some(Scalar::Float(v as f64)),
        (Timestamp, Scalar::Int(v)) => Some(Scalar::Int(v)),
        (t, s) if s.data_type() == t => Some(s),
        _ => None,
    }
}
