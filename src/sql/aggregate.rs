//! Windowed GROUP BY: plans the window and keys, collects each distinct aggregate call once,
//! and rewrites SELECT and HAVING over the group row `keys.., aggregates.., window_start,
//! window_end`, so no input column is read after grouping except through a key.

use std::ops::Range;

use sqlparser::ast;

use super::SqlError;
use super::expr::{AGGREGATES, Arg, Place, Planner, RowScope, Scope, WINDOW_BOUNDS, func_name};
use super::project::select_list;
use super::types::{self, Typed};
use super::window::{self, WindowCall};
use crate::core::expr::Expr;
use crate::core::plan::{AggCall, AggFunc, AggregatePlan, MAX_GROUP_KEYS};
use crate::core::schema::{DataType, Schema};

/// Placeholder columns for the window bounds while the number of aggregates is unknown;
/// `place_bounds` rewrites them once every aggregate has its slot.
const START: usize = usize::MAX - 1;
const END: usize = usize::MAX;

/// An unknown column in HAVING that is a SELECT alias gets told so: aliases are not in
/// scope there (as in standard SQL), the expression must be repeated.
fn alias_hint(mut e: SqlError, fields: &[crate::core::schema::Field]) -> SqlError {
    if e.message.starts_with("unknown column")
        && let Some(f) = fields
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(&e.snippet))
    {
        e.message = format!(
            "HAVING cannot use the SELECT alias `{}`: repeat its expression (e.g. COUNT(*) > 1)",
            f.name
        );
    }
    e
}

/// Plans GROUP BY, the SELECT list and HAVING of a windowed aggregation.
pub(super) fn plan_aggregate(
    p: &Planner<'_>,
    group_by: &[ast::Expr],
    group_range: Range<usize>,
    items: &[ast::SelectItem],
    having: Option<&ast::Expr>,
) -> Result<(AggregatePlan, Schema), SqlError> {
    let (window, keys) = plan_group_by(p, group_by, group_range)?;
    let mut scope = GroupScope {
        window,
        keys: &keys,
        aggs: Vec::new(),
    };
    let mut out = select_list(p, items, &mut scope, false)?;
    let having = match having {
        Some(h) => {
            let t = p
                .expr(h, &mut scope)
                .map_err(|e| alias_hint(e, &out.fields))?;
            types::need_bool(p.src, h, &t, "HAVING needs a bool condition")?;
            Some(t.expr)
        }
        None => None,
    };
    let aggs = scope.aggs;
    let start = keys.len() + aggs.len();
    let mut having = having;
    for e in out.exprs.iter_mut().chain(having.as_mut()) {
        place_bounds(e, start);
    }
    let event_time = out.exprs.iter().position(|e| *e == Expr::Column(start + 1));
    let plan = AggregatePlan {
        time: window.time,
        window: window.spec,
        lateness: 0,
        key_types: keys.iter().map(|k| k.ty).collect(),
        keys: keys.into_iter().map(|k| k.expr).collect(),
        aggs,
        having,
        project: out.exprs,
    };
    let schema = Schema {
        fields: std::mem::take(&mut out.fields),
        event_time,
    };
    Ok((plan, schema))
}

/// Splits GROUP BY into its one window and up to `MAX_GROUP_KEYS` distinct keys.
fn plan_group_by(
    p: &Planner<'_>,
    group_by: &[ast::Expr],
    group_range: Range<usize>,
) -> Result<(WindowCall, Vec<Typed>), SqlError> {
    let mut win = None;
    let mut keys: Vec<Typed> = Vec::new();
    for e in group_by {
        if let Some(w) = window::window_call(p, e)? {
            if win.is_some() {
                return Err(p.src.expr_error("GROUP BY has more than one window", e));
            }
            win = Some(w);
            continue;
        }
        let key = p.expr(e, &mut RowScope::at(Place::GroupBy))?;
        if matches!(key.expr, Expr::Literal(_)) {
            let msg =
                "unsupported: GROUP BY a constant (GROUP BY takes expressions, not positions)";
            return Err(p.src.expr_error(msg, e));
        }
        if keys.contains(&key) {
            continue;
        }
        if keys.len() == MAX_GROUP_KEYS {
            let msg =
                format!("too many GROUP BY keys: at most {MAX_GROUP_KEYS} besides the window");
            return Err(p.src.expr_error(msg, e));
        }
        keys.push(key);
    }
    match win {
        Some(w) => Ok((w, keys)),
        None => {
            let msg = format!(
                "GROUP BY needs a window: add {}",
                window::suggestion(p.schema)
            );
            Err(p.src.error(msg, group_range))
        }
    }
}

/// Expressions over the group row.
struct GroupScope<'k> {
    window: WindowCall,
    keys: &'k [Typed],
    /// Distinct aggregate calls in order of first use; slot `i` is group column `keys + i`.
    aggs: Vec<AggCall>,
}

impl GroupScope<'_> {
    fn key_of(&self, t: &Typed) -> Option<Typed> {
        let k = self.keys.iter().position(|k| k.expr == t.expr)?;
        Some(Typed::new(Expr::Column(k), self.keys[k].ty))
    }

    fn aggregate(
        &mut self,
        p: &Planner<'_>,
        e: &ast::Expr,
        f: &ast::Function,
        name: &str,
    ) -> Result<Typed, SqlError> {
        let args = p.call_args(e, f, 1)?;
        let text = || p.src.expr_text(e);
        let (func, arg) = match (name, &args[0]) {
            ("COUNT", Arg::Star) => (AggFunc::CountStar, None),
            (_, Arg::Star) => {
                let msg = format!("only COUNT accepts *, not `{}`", text());
                return Err(p.src.expr_error(msg, e));
            }
            (name, Arg::Expr(x)) => {
                let t = p.expr(x, &mut RowScope::at(Place::AggregateArg))?;
                let func = match name {
                    "COUNT" => AggFunc::Count,
                    "SUM" => AggFunc::Sum,
                    "AVG" => AggFunc::Avg,
                    "MIN" => AggFunc::Min,
                    _ => AggFunc::Max,
                };
                let ok = match func {
                    AggFunc::Count | AggFunc::CountStar => true,
                    AggFunc::Sum | AggFunc::Avg => matches!(t.ty, DataType::Int | DataType::Float),
                    AggFunc::Min | AggFunc::Max => t.ty.is_numeric(),
                };
                if !ok {
                    let msg = format!(
                        "type mismatch: `{}` needs a numeric argument, found {}",
                        text(),
                        t.ty
                    );
                    return Err(p.src.expr_error(msg, e));
                }
                (func, Some(t))
            }
        };
        let call = AggCall {
            func,
            arg_type: arg.as_ref().map(|t| t.ty),
            arg: arg.map(|t| t.expr),
        };
        let ty = call.func.output_type(call.arg_type);
        let slot = match self.aggs.iter().position(|a| *a == call) {
            Some(s) => s,
            None => {
                self.aggs.push(call);
                self.aggs.len() - 1
            }
        };
        Ok(Typed::new(Expr::Column(self.keys.len() + slot), ty))
    }

    fn bound(&self, p: &Planner<'_>, e: &ast::Expr, name: &str) -> Result<Typed, SqlError> {
        let col = match name.strip_prefix(self.window.name) {
            Some("_START") => START,
            Some("_END") => END,
            _ => {
                let msg = format!(
                    "`{name}` does not match the GROUP BY window `{}`",
                    self.window.name
                );
                return Err(p.src.expr_error(msg, e));
            }
        };
        Ok(Typed::new(Expr::Column(col), DataType::Timestamp))
    }
}

impl Scope for GroupScope<'_> {
    fn resolve(&mut self, p: &Planner<'_>, e: &ast::Expr) -> Result<Option<Typed>, SqlError> {
        match e {
            ast::Expr::Function(f) => {
                let name = func_name(f);
                if AGGREGATES.contains(&name.as_str()) {
                    return self.aggregate(p, e, f, &name).map(Some);
                }
                if WINDOW_BOUNDS.contains(&name.as_str()) {
                    return self.bound(p, e, &name).map(Some);
                }
                if window::is_window_call(&name) {
                    let msg = format!(
                        "select window bounds with {0}_START(...) and {0}_END(...), or window_start and window_end",
                        self.window.name
                    );
                    return Err(p.src.expr_error(msg, e));
                }
            }
            ast::Expr::Identifier(id) if p.schema.index_of(&id.value).is_none() => {
                if id.value.eq_ignore_ascii_case("window_start") {
                    return Ok(Some(Typed::new(Expr::Column(START), DataType::Timestamp)));
                }
                if id.value.eq_ignore_ascii_case("window_end") {
                    return Ok(Some(Typed::new(Expr::Column(END), DataType::Timestamp)));
                }
            }
            _ => {}
        }
        if let Some(t) = p.column(e)? {
            return match self.key_of(&t) {
                Some(k) => Ok(Some(k)),
                None => {
                    let msg = format!(
                        "column `{}` must appear in GROUP BY or inside an aggregate",
                        p.src.expr_text(e)
                    );
                    Err(p.src.expr_error(msg, e))
                }
            };
        }
        // An expression over input columns means a key only if it is one.
        if let Ok(t) = p.expr(e, &mut RowScope::at(Place::Select)) {
            if let Some(k) = self.key_of(&t) {
                return Ok(Some(k));
            }
            if t.expr == Expr::Arrival {
                let msg = "`PROCTIME()` must appear in GROUP BY or inside an aggregate";
                return Err(p.src.expr_error(msg, e));
            }
        }
        Ok(None)
    }
}

/// Points the window-bound placeholders at their group-row columns.
fn place_bounds(e: &mut Expr, start: usize) {
    match e {
        Expr::Column(c) if *c == START => *c = start,
        Expr::Column(c) if *c == END => *c = start + 1,
        Expr::Column(_) | Expr::Arrival | Expr::Literal(_) => {}
        Expr::Binary { left, right, .. } => {
            place_bounds(left, start);
            place_bounds(right, start);
        }
        Expr::Not(x) | Expr::Neg(x) | Expr::ToFloat(x) => place_bounds(x, start),
        Expr::InList { expr, .. } => place_bounds(expr, start),
        Expr::Case {
            branches,
            otherwise,
        } => {
            for (c, v) in branches {
                place_bounds(c, start);
                place_bounds(v, start);
            }
            place_bounds(otherwise, start);
        }
    }
}
