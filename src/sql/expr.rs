//! SQL expressions -> typed physical `Expr`s. The translation of operators is shared; what
//! a name or a function call means is decided by a `Scope` (input row or group row), so a
//! column can never be read where the plan has no such column.

use sqlparser::ast;

use super::SqlError;
use super::source::Source;
use super::types::{self, Typed};
use super::window;
use crate::core::expr::{BinOp, Expr};
use crate::core::schema::{DataType, Scalar, Schema};

/// Everything expression planning needs to know about the query.
pub(super) struct Planner<'a> {
    pub src: &'a Source<'a>,
    /// The input stream, as the catalog spells it.
    pub stream: &'a str,
    /// The FROM alias, which may qualify column names like the stream name can.
    pub alias: Option<&'a str>,
    pub schema: &'a Schema,
}

/// What names and calls mean where an expression appears.
pub(super) trait Scope {
    /// Gives meaning to a node this scope owns (a column, an aggregate call, a window
    /// bound); `Ok(None)` leaves the node to the structural translation.
    fn resolve(&mut self, p: &Planner<'_>, e: &ast::Expr) -> Result<Option<Typed>, SqlError>;
}

/// Where an input-row expression appears; decides the message for misplaced aggregates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    Where,
    /// The SELECT list of a query without GROUP BY.
    Select,
    GroupBy,
    AggregateArg,
}

/// A function argument.
pub(super) enum Arg<'e> {
    Star,
    Expr(&'e ast::Expr),
}

pub(super) const AGGREGATES: [&str; 5] = ["COUNT", "SUM", "AVG", "MIN", "MAX"];
pub(super) const WINDOW_BOUNDS: [&str; 4] = ["TUMBLE_START", "TUMBLE_END", "HOP_START", "HOP_END"];

/// The upper-cased name of a called function.
pub(super) fn func_name(f: &ast::Function) -> String {
    f.name.to_string().to_ascii_uppercase()
}

/// Expressions over the input row: columns of the stream and `PROCTIME()`.
pub(super) struct RowScope {
    place: Place,
}

impl RowScope {
    pub fn at(place: Place) -> RowScope {
        RowScope { place }
    }
}

impl Scope for RowScope {
    fn resolve(&mut self, p: &Planner<'_>, e: &ast::Expr) -> Result<Option<Typed>, SqlError> {
        if let ast::Expr::Identifier(id) = e
            && p.schema.index_of(&id.value).is_none()
            && ["window_start", "window_end"].contains(&id.value.to_ascii_lowercase().as_str())
        {
            let msg = format!("`{}` needs a GROUP BY window", id.value);
            return Err(p.src.expr_error(msg, e));
        }
        if let Some(t) = p.column(e)? {
            return Ok(Some(t));
        }
        let ast::Expr::Function(f) = e else {
            return Ok(None);
        };
        let name = func_name(f);
        let text = p.src.expr_text(e);
        let msg = if name == "PROCTIME" {
            p.call_args(e, f, 0)?;
            return Ok(Some(Typed::new(Expr::Arrival, DataType::Timestamp)));
        } else if AGGREGATES.contains(&name.as_str()) {
            match self.place {
                Place::Where => {
                    format!("aggregate `{text}` is not allowed in WHERE: filter groups with HAVING")
                }
                Place::GroupBy => format!("aggregate `{text}` is not allowed in GROUP BY"),
                Place::AggregateArg => format!("aggregate `{text}` inside another aggregate"),
                Place::Select => format!(
                    "aggregate `{text}` needs a window: add GROUP BY {}",
                    window::suggestion(p.schema)
                ),
            }
        } else if window::is_window_call(&name) {
            format!("window `{text}` belongs in GROUP BY")
        } else if WINDOW_BOUNDS.contains(&name.as_str()) {
            format!("`{name}` needs a GROUP BY window")
        } else {
            return Ok(None);
        };
        Err(p.src.expr_error(msg, e))
    }
}

impl Planner<'_> {
    /// Resolves a (possibly stream-qualified) column name; `Ok(None)` if `e` is no name.
    pub fn column(&self, e: &ast::Expr) -> Result<Option<Typed>, SqlError> {
        let name = match e {
            ast::Expr::Identifier(id) => &id.value,
            ast::Expr::CompoundIdentifier(ids) if ids.len() == 2 => {
                let q = &ids[0].value;
                let known = q.eq_ignore_ascii_case(self.stream)
                    || self.alias.is_some_and(|a| a.eq_ignore_ascii_case(q));
                if !known {
                    let msg = format!("unknown stream or alias `{q}`");
                    return Err(self.src.expr_error(msg, e));
                }
                &ids[1].value
            }
            _ => return Ok(None),
        };
        match self.schema.index_of(name) {
            Some(i) => Ok(Some(Typed::new(Expr::Column(i), self.schema.fields[i].ty))),
            None => Err(self.src.expr_error(
                format!("unknown column `{name}` in stream `{}`", self.stream),
                e,
            )),
        }
    }

    /// The arguments of a plain call; rejects DISTINCT, FILTER, OVER and named arguments.
    /// With `want` set, the call must have exactly that many arguments.
    pub fn call_args<'e>(
        &self,
        e: &ast::Expr,
        f: &'e ast::Function,
        want: usize,
    ) -> Result<Vec<Arg<'e>>, SqlError> {
        let name = func_name(f);
        let list = match &f.args {
            ast::FunctionArguments::None => return self.arity(e, &name, want, Vec::new()),
            ast::FunctionArguments::List(l) => l,
            ast::FunctionArguments::Subquery(_) => {
                return Err(self.src.expr_error("unsupported: subquery", e));
            }
        };
        if matches!(
            list.duplicate_treatment,
            Some(ast::DuplicateTreatment::Distinct)
        ) {
            let msg = format!("unsupported: DISTINCT inside `{name}`");
            return Err(self.src.expr_error(msg, e));
        }
        if !list.clauses.is_empty() {
            let msg = format!("unsupported: clauses inside `{name}(...)`");
            return Err(self.src.expr_error(msg, e));
        }
        let mut args = Vec::with_capacity(list.args.len());
        for a in &list.args {
            args.push(match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => Arg::Expr(x),
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard) => Arg::Star,
                _ => {
                    let msg = format!("unsupported: this argument form in `{name}`");
                    return Err(self.src.expr_error(msg, e));
                }
            });
        }
        self.arity(e, &name, want, args)
    }

    fn arity<'e>(
        &self,
        e: &ast::Expr,
        name: &str,
        want: usize,
        args: Vec<Arg<'e>>,
    ) -> Result<Vec<Arg<'e>>, SqlError> {
        if args.len() == want {
            return Ok(args);
        }
        let msg = format!("`{name}` takes {want} argument(s), found {}", args.len());
        Err(self.src.expr_error(msg, e))
    }

    fn unsupported(&self, what: &str, e: &ast::Expr) -> SqlError {
        self.src.expr_error(format!("unsupported: {what}"), e)
    }

    /// Plans and type-checks `e`, resolving names and calls through `scope`.
    pub fn expr(&self, e: &ast::Expr, scope: &mut dyn Scope) -> Result<Typed, SqlError> {
        use ast::Expr as E;
        if let E::Function(f) = e {
            if f.over.is_some() {
                return Err(self.unsupported("window function (OVER)", e));
            }
            if f.filter.is_some() || !f.within_group.is_empty() || f.null_treatment.is_some() {
                return Err(self.unsupported("FILTER, WITHIN GROUP or NULLS clause", e));
            }
        }
        if let Some(t) = scope.resolve(self, e)? {
            return Ok(t);
        }
        match e {
            E::Nested(inner) => self.expr(inner, scope),
            E::Value(v) => types::literal(self.src, e, &v.value),
            E::Interval(iv) => {
                let nanos = window::interval_nanos(self.src, e, iv)?;
                Ok(Typed::new(Expr::Literal(Scalar::Int(nanos)), DataType::Int))
            }
            E::BinaryOp { left, op, right } => {
                let Some(op) = types::bin_op(op) else {
                    return Err(self.unsupported(&format!("operator {op}"), e));
                };
                let (l, r) = (self.expr(left, scope)?, self.expr(right, scope)?);
                types::binary(self.src, e, op, l, r)
            }
            E::UnaryOp { op, expr } => {
                let t = self.expr(expr, scope)?;
                match op {
                    ast::UnaryOperator::Minus => types::negate(self.src, e, t),
                    ast::UnaryOperator::Plus if matches!(t.ty, DataType::Int | DataType::Float) => {
                        Ok(t)
                    }
                    ast::UnaryOperator::Plus => types::negate(self.src, e, t),
                    ast::UnaryOperator::Not => {
                        types::need_bool(self.src, expr, &t, "NOT needs a bool operand")?;
                        Ok(Typed::new(Expr::Not(Box::new(t.expr)), DataType::Bool))
                    }
                    other => Err(self.unsupported(&format!("operator {other}"), e)),
                }
            }
            E::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let (x, lo, hi) = (
                    self.expr(expr, scope)?,
                    self.expr(low, scope)?,
                    self.expr(high, scope)?,
                );
                let (lo_op, hi_op, join) = match negated {
                    false => (BinOp::GtEq, BinOp::LtEq, BinOp::And),
                    true => (BinOp::Lt, BinOp::Gt, BinOp::Or),
                };
                let a = types::binary(self.src, e, lo_op, x.clone(), lo)?;
                let b = types::binary(self.src, e, hi_op, x, hi)?;
                Ok(Typed::new(
                    Expr::binary(join, a.expr, b.expr),
                    DataType::Bool,
                ))
            }
            E::In {
                expr,
                target: ast::InTarget::List(list),
                negated,
                ..
            } => self.in_list(e, expr, list, *negated, scope),
            E::In { .. } => Err(self.unsupported("IN with a subquery", e)),
            E::Case {
                operand,
                conditions,
                else_result,
                ..
            } => self.case(
                e,
                operand.as_deref(),
                conditions,
                else_result.as_deref(),
                scope,
            ),
            E::Identifier(_) | E::CompoundIdentifier(_) => Err(self.unsupported("name", e)),
            // A bare keyword such as `user` or `current_date`: the parser reads it as a
            // call, where the writer most likely meant a column of that name.
            E::Function(f) if matches!(f.args, ast::FunctionArguments::None) => {
                let word = f.name.to_string();
                Err(self.src.expr_error(
                    format!(
                        "`{word}` is an SQL keyword, read here as the function {}: to name a \
                         column `{word}`, quote it as \"{word}\"",
                        word.to_ascii_uppercase()
                    ),
                    e,
                ))
            }
            E::Function(f) => Err(self.unsupported(&format!("function `{}`", func_name(f)), e)),
            E::Subquery(_) | E::Exists { .. } => Err(self.unsupported("subquery", e)),
            E::Like { .. } | E::ILike { .. } => Err(self.unsupported("LIKE", e)),
            E::IsNull(_) | E::IsNotNull(_) => Err(self.unsupported("IS NULL", e)),
            E::Cast { .. } => Err(self.unsupported("CAST", e)),
            _ => Err(self.unsupported("expression", e)),
        }
    }

    fn in_list(
        &self,
        e: &ast::Expr,
        operand: &ast::Expr,
        list: &[ast::Expr],
        negated: bool,
        scope: &mut dyn Scope,
    ) -> Result<Typed, SqlError> {
        let mut x = self.expr(operand, scope)?;
        let mut values = Vec::with_capacity(list.len());
        for item in list {
            match self.expr(item, scope)?.expr {
                Expr::Literal(s) => values.push(s),
                _ => return Err(self.unsupported("IN with a non-constant value", item)),
            }
        }
        let any_float = values.iter().any(|v| v.data_type() == DataType::Float);
        if x.ty == DataType::Int && any_float {
            x = types::to_float(x);
        }
        let mut scalars = Vec::with_capacity(values.len());
        for v in values {
            let vt = v.data_type();
            match types::in_list_scalar(x.ty, v) {
                Some(s) => scalars.push(s),
                None => {
                    let text = self.src.expr_text(e);
                    let msg = format!("type mismatch: `{text}` compares {} with {vt}", x.ty);
                    return Err(self.src.expr_error(msg, e));
                }
            }
        }
        let expr = Expr::InList {
            expr: Box::new(x.expr),
            list: scalars,
            negated,
        };
        Ok(Typed::new(expr, DataType::Bool))
    }

    fn case(
        &self,
        e: &ast::Expr,
        operand: Option<&ast::Expr>,
        conditions: &[ast::CaseWhen],
        otherwise: Option<&ast::Expr>,
        scope: &mut dyn Scope,
    ) -> Result<Typed, SqlError> {
        let Some(otherwise) = otherwise else {
            return Err(self.unsupported("CASE without ELSE (values are never null)", e));
        };
        let operand = operand.map(|o| self.expr(o, scope)).transpose()?;
        let mut conds = Vec::with_capacity(conditions.len());
        let mut values = Vec::with_capacity(conditions.len() + 1);
        for w in conditions {
            let c = self.expr(&w.condition, scope)?;
            let c = match &operand {
                Some(x) => types::binary(self.src, &w.condition, BinOp::Eq, x.clone(), c)?,
                None => {
                    types::need_bool(self.src, &w.condition, &c, "WHEN needs a bool condition")?;
                    c
                }
            };
            conds.push(c.expr);
            values.push(self.expr(&w.result, scope)?);
        }
        values.push(self.expr(otherwise, scope)?);
        let shown: Vec<String> = values.iter().map(|v| v.ty.to_string()).collect();
        let Some((mut exprs, ty)) = types::unify(values) else {
            let msg = format!("type mismatch: CASE results mix {}", shown.join(", "));
            return Err(self.src.expr_error(msg, e));
        };
        let otherwise = Box::new(exprs.pop().expect("ELSE value"));
        let branches = conds.into_iter().zip(exprs).collect();
        Ok(Typed::new(
            Expr::Case {
                branches,
                otherwise,
            },
            ty,
        ))
    }
}
