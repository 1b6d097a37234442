//! Physical expressions, evaluated a batch at a time. Column references are indices fixed at
//! plan time and operand types are made equal by the planner (it inserts `ToFloat`), so
//! evaluation never looks up a name or coerces a value per row.

use super::batch::{Batch, Column, StrColumn};
use super::compare::{select_compare, str_cmp_by_value};
pub use super::datum::{Datum, Side, Storage};
use super::rows::Rows;
use super::schema::Scalar;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
}

impl BinOp {
    /// The operator as SQL writes it.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Eq => "=",
            BinOp::NotEq => "<>",
            BinOp::Lt => "<",
            BinOp::LtEq => "<=",
            BinOp::Gt => ">",
            BinOp::GtEq => ">=",
            BinOp::And => "AND",
            BinOp::Or => "OR",
        }
    }
}

/// A type-checked expression over one batch's columns.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// Column `i` of the input batch.
    Column(usize),
    /// The arrival time of each row (the `PROCTIME()` pseudo column).
    Arrival,
    Literal(Scalar),
    /// Both operands have the same storage type; comparisons yield bool.
    Binary {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Not(Box<Expr>),
    Neg(Box<Expr>),
    /// Int (or timestamp) to float.
    ToFloat(Box<Expr>),
    /// `expr [NOT] IN (list)`; the list holds scalars of the operand's storage type.
    InList {
        expr: Box<Expr>,
        list: Vec<Scalar>,
        negated: bool,
    },
    /// `CASE WHEN c THEN v ... ELSE e END`; all values have one storage type.
    Case {
        branches: Vec<(Expr, Expr)>,
        otherwise: Box<Expr>,
    },
}

enum Out<T> {
    One(T),
    Many(Vec<T>),
}

fn zip<A: Copy, B: Copy, O>(a: Side<A>, b: Side<B>, f: impl Fn(A, B) -> O) -> Out<O> {
    match (a, b) {
        (Side::One(x), Side::One(y)) => Out::One(f(x, y)),
        (Side::Many(xs), Side::One(y)) => Out::Many(xs.iter().map(|&x| f(x, y)).collect()),
        (Side::One(x), Side::Many(ys)) => Out::Many(ys.iter().map(|&y| f(x, y)).collect()),
        (Side::Many(xs), Side::Many(ys)) => {
            Out::Many(xs.iter().zip(ys).map(|(&x, &y)| f(x, y)).collect())
        }
    }
}

fn map<A: Copy, O>(a: Side<A>, f: impl Fn(A) -> O) -> Out<O> {
    match a {
        Side::One(x) => Out::One(f(x)),
        Side::Many(xs) => Out::Many(xs.iter().map(|&x| f(x)).collect()),
    }
}

macro_rules! datum {
    ($out:expr, $one:ident, $col:ident) => {
        match $out {
            Out::One(v) => Datum::$one(v),
            Out::Many(v) => Datum::Owned(Column::$col(v)),
        }
    };
}

fn cmp<T: PartialOrd>(op: BinOp, x: T, y: T) -> bool {
    match op {
        BinOp::Eq => x == y,
        BinOp::NotEq => x != y,
        BinOp::Lt => x < y,
        BinOp::LtEq => x <= y,
        BinOp::Gt => x > y,
        BinOp::GtEq => x >= y,
        _ => unreachable!("{op:?} is not a comparison"),
    }
}

fn int_arith(op: BinOp, x: i64, y: i64) -> i64 {
    match op {
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        // Integer division by zero yields 0 rather than aborting a continuous query; the
        // one overflow (`i64::MIN / -1`) wraps as every other int overflow does.
        BinOp::Div if y == 0 => 0,
        BinOp::Mod if y == 0 => 0,
        BinOp::Div => x.wrapping_div(y),
        BinOp::Mod => x.wrapping_rem(y),
        _ => unreachable!("{op:?} is not arithmetic"),
    }
}

fn float_arith(op: BinOp, x: f64, y: f64) -> f64 {
    match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        // As for ints, dividing by zero yields 0: results have no NULL, and JSON has no
        // infinity (docs/sql.md).
        BinOp::Div if y == 0.0 => 0.0,
        BinOp::Mod if y == 0.0 => 0.0,
        BinOp::Div => x / y,
        BinOp::Mod => x % y,
        _ => unreachable!("{op:?} is not arithmetic"),
    }
}

fn is_cmp(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq
    )
}

impl Expr {
    pub fn col(i: usize) -> Expr {
        Expr::Column(i)
    }

    pub fn lit(s: Scalar) -> Expr {
        Expr::Literal(s)
    }

    pub fn binary(op: BinOp, left: Expr, right: Expr) -> Expr {
        Expr::Binary {
            op,
            left: Box::new(left),
            right: Box::new(right),
        }
    }

    /// Marks in `used` every input column the expression reads.
    pub fn mark_columns(&self, used: &mut [bool]) {
        match self {
            Expr::Column(i) => {
                if let Some(u) = used.get_mut(*i) {
                    *u = true;
                }
            }
            Expr::Arrival | Expr::Literal(_) => {}
            Expr::Binary { left, right, .. } => {
                left.mark_columns(used);
                right.mark_columns(used);
            }
            Expr::Not(e) | Expr::Neg(e) | Expr::ToFloat(e) => e.mark_columns(used),
            Expr::InList { expr, .. } => expr.mark_columns(used),
            Expr::Case {
                branches,
                otherwise,
            } => {
                for (c, v) in branches {
                    c.mark_columns(used);
                    v.mark_columns(used);
                }
                otherwise.mark_columns(used);
            }
        }
    }

    /// Evaluates the expression over every row of `batch`.
    pub fn eval<'a>(&'a self, batch: &'a Batch) -> Datum<'a> {
        let n = batch.len();
        match self {
            Expr::Column(i) => Datum::from_column(&batch.columns[*i]),
            Expr::Arrival => Datum::Ints(&batch.arrival),
            Expr::Literal(s) => Datum::from_scalar(s),
            Expr::Binary { op, left, right } => {
                let (l, r) = (left.eval(batch), right.eval(batch));
                binary(*op, &l, &r, n)
            }
            Expr::Not(e) => datum!(map(e.eval(batch).bools(), |b| !b), Bool, Bool),
            Expr::Neg(e) => {
                let d = e.eval(batch);
                match d.storage() {
                    Storage::Int => datum!(map(d.ints(), i64::wrapping_neg), Int, Int),
                    Storage::Float => datum!(map(d.floats(), |x| -x), Float, Float),
                    s @ (Storage::Str | Storage::Bool) => {
                        unreachable!("the planner types NEG of {s:?}")
                    }
                }
            }
            Expr::ToFloat(e) => datum!(map(e.eval(batch).ints(), |x| x as f64), Float, Float),
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                let d = expr.eval(batch);
                let neg = *negated;
                if d.is_str() {
                    let strs: Vec<&str> = list
                        .iter()
                        .filter_map(|s| match s {
                            Scalar::Str(v) => Some(&**v),
                            _ => None,
                        })
                        .collect();
                    let rows = if matches!(d, Datum::Str(_)) { 1 } else { n };
                    let v: Vec<bool> = (0..rows)
                        .map(|i| strs.contains(&d.str_at(i)) != neg)
                        .collect();
                    if rows == 1 && n != 1 {
                        Datum::Bool(v[0])
                    } else {
                        Datum::Owned(Column::Bool(v))
                    }
                } else if d.storage() == Storage::Int {
                    let ints: Vec<i64> = list.iter().filter_map(scalar_int).collect();
                    datum!(map(d.ints(), |x| ints.contains(&x) != neg), Bool, Bool)
                } else if d.storage() == Storage::Float {
                    let fl: Vec<f64> = list.iter().filter_map(Scalar::as_f64).collect();
                    datum!(map(d.floats(), |x| fl.contains(&x) != neg), Bool, Bool)
                } else {
                    let bs: Vec<bool> = list
                        .iter()
                        .filter_map(|s| match s {
                            Scalar::Bool(b) => Some(*b),
                            _ => None,
                        })
                        .collect();
                    datum!(map(d.bools(), |x| bs.contains(&x) != neg), Bool, Bool)
                }
            }
            Expr::Case {
                branches,
                otherwise,
            } => eval_case(branches, otherwise, batch),
        }
    }

    /// Evaluates and appends the `batch.len()` results to `out`.
    pub fn eval_into(&self, batch: &Batch, out: &mut Column) {
        self.eval(batch).append_to(out, batch.len());
    }

    /// Evaluates over the whole batch and appends the results of the rows `rows` sees.
    pub fn eval_rows_into(&self, rows: Rows<'_>, out: &mut Column) {
        match rows.sel {
            None => self.eval_into(rows.batch, out),
            Some(sel) => self.eval(rows.batch).append_selected(out, sel),
        }
    }

    /// `select`, except that when every row holds it returns `true` and leaves `sel`
    /// empty: the caller reads the whole batch and no index list is built.
    pub fn select_or_all(&self, batch: &Batch, sel: &mut Vec<u32>) -> bool {
        if let Some(all) = select_compare(self, batch, sel) {
            return all;
        }
        sel.clear();
        match self.eval(batch).as_bools() {
            Ok(v) if v.iter().all(|b| *b) => true,
            Ok(v) => {
                sel.extend(
                    v.iter()
                        .enumerate()
                        .filter(|(_, b)| **b)
                        .map(|(i, _)| i as u32),
                );
                false
            }
            Err(all) => all,
        }
    }

    /// Row indices of `batch` for which this boolean expression holds, into `sel`.
    pub fn select(&self, batch: &Batch, sel: &mut Vec<u32>) {
        match select_compare(self, batch, sel) {
            Some(true) => return sel.extend(0..batch.len() as u32),
            Some(false) => return,
            None => sel.clear(),
        }
        match self.eval(batch).as_bools() {
            Ok(v) => sel.extend(
                v.iter()
                    .enumerate()
                    .filter(|(_, b)| **b)
                    .map(|(i, _)| i as u32),
            ),
            Err(true) => sel.extend(0..batch.len() as u32),
            Err(false) => {}
        }
    }
}

fn scalar_int(s: &Scalar) -> Option<i64> {
    match s {
        Scalar::Int(v) | Scalar::Timestamp(v) => Some(*v),
        _ => None,
    }
}

fn binary<'a>(op: BinOp, l: &Datum<'_>, r: &Datum<'_>, n: usize) -> Datum<'a> {
    match op {
        BinOp::And => datum!(zip(l.bools(), r.bools(), |x, y| x && y), Bool, Bool),
        BinOp::Or => datum!(zip(l.bools(), r.bools(), |x, y| x || y), Bool, Bool),
        op if is_cmp(op) => match l.storage() {
            Storage::Int => datum!(zip(l.ints(), r.ints(), |x, y| cmp(op, x, y)), Bool, Bool),
            Storage::Float => datum!(
                zip(l.floats(), r.floats(), |x, y| cmp(op, x, y)),
                Bool,
                Bool
            ),
            Storage::Bool => datum!(zip(l.bools(), r.bools(), |x, y| cmp(op, x, y)), Bool, Bool),
            Storage::Str => {
                if let Some(d) = str_cmp_by_value(op, l, r, n) {
                    return d;
                }
                let one = matches!(l, Datum::Str(_)) && matches!(r, Datum::Str(_));
                let rows = if one { 1 } else { n };
                let v: Vec<bool> = (0..rows)
                    .map(|i| cmp(op, l.str_at(i), r.str_at(i)))
                    .collect();
                if one {
                    Datum::Bool(v[0])
                } else {
                    Datum::Owned(Column::Bool(v))
                }
            }
        },
        op => match l.storage() {
            Storage::Int => datum!(
                zip(l.ints(), r.ints(), |x, y| int_arith(op, x, y)),
                Int,
                Int
            ),
            Storage::Float | Storage::Str | Storage::Bool => datum!(
                zip(l.floats(), r.floats(), |x, y| float_arith(op, x, y)),
                Float,
                Float
            ),
        },
    }
}

fn eval_case<'a>(branches: &[(Expr, Expr)], otherwise: &Expr, batch: &Batch) -> Datum<'a> {
    let n = batch.len();
    // choice[i] = index of the first branch whose condition holds, or branches.len().
    let mut choice = vec![branches.len() as u32; n];
    let mut open = n;
    for (k, (cond, _)) in branches.iter().enumerate() {
        if open == 0 {
            break;
        }
        let c = cond.eval(batch);
        for (i, ch) in choice.iter_mut().enumerate() {
            let hit = match c.bools() {
                Side::One(b) => b,
                Side::Many(v) => v[i],
            };
            if *ch == branches.len() as u32 && hit {
                *ch = k as u32;
                open -= 1;
            }
        }
    }
    let values: Vec<Column> = branches
        .iter()
        .map(|(_, v)| v)
        .chain(std::iter::once(otherwise))
        .map(|e| e.eval(batch).into_column(n))
        .collect();
    let pick = |i: usize| &values[choice[i] as usize];
    Datum::Owned(match &values[0] {
        Column::Int(_) => Column::Int((0..n).map(|i| ints_of(pick(i))[i]).collect()),
        Column::Float(_) => Column::Float((0..n).map(|i| floats_of(pick(i))[i]).collect()),
        Column::Str(_) => {
            let mut out = StrColumn::with_capacity(n);
            for i in 0..n {
                match pick(i) {
                    Column::Str(v) => out.push(&v[i]),
                    other => unreachable!("CASE branch {other:?}"),
                }
            }
            Column::Str(out)
        }
        Column::Bool(_) => Column::Bool(
            (0..n)
                .map(|i| match pick(i) {
                    Column::Bool(v) => v[i],
                    other => unreachable!("CASE branch {other:?}"),
                })
                .collect(),
        ),
    })
}

fn ints_of(c: &Column) -> &[i64] {
    match c {
        Column::Int(v) => v,
        other => unreachable!("CASE branch {other:?}"),
    }
}

fn floats_of(c: &Column) -> &[f64] {
    match c {
        Column::Float(v) => v,
        other => unreachable!("CASE branch {other:?}"),
    }
}
