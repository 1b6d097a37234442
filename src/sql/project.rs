//! The SELECT list: expands `*`, plans each item in its scope and names the output columns
//! (alias, else column name, else `window_start`/`window_end`, else the expression text),
//! keeping names unique so that every result column can be addressed by name.

use sqlparser::ast;

use super::SqlError;
use super::expr::{Place, Planner, RowScope, Scope, WINDOW_BOUNDS, func_name};
use crate::core::expr::Expr;
use crate::core::schema::{Field, Schema};

/// Planned result columns.
pub(super) struct Output {
    pub exprs: Vec<Expr>,
    pub fields: Vec<Field>,
}

/// Plans a query without GROUP BY: one output row per input row that passes the filter.
/// The output keeps the input's event-time column as its event time if it is projected.
pub(super) fn plan_project(
    p: &Planner<'_>,
    items: &[ast::SelectItem],
) -> Result<(Vec<Expr>, Schema), SqlError> {
    let out = select_list(p, items, &mut RowScope::at(Place::Select), true)?;
    let event_time = p
        .schema
        .event_time
        .and_then(|t| out.exprs.iter().position(|e| *e == Expr::Column(t)));
    let schema = Schema {
        fields: out.fields,
        event_time,
    };
    Ok((out.exprs, schema))
}

/// Plans the SELECT list in `scope`; `star` says whether `*` may be expanded.
pub(super) fn select_list(
    p: &Planner<'_>,
    items: &[ast::SelectItem],
    scope: &mut dyn Scope,
    star: bool,
) -> Result<Output, SqlError> {
    if items.is_empty() {
        return Err(p.src.error(
            "empty SELECT list: name the columns or expressions to return",
            p.src.first_word(),
        ));
    }
    let mut out = Output {
        exprs: Vec::with_capacity(items.len()),
        fields: Vec::with_capacity(items.len()),
    };
    for item in items {
        let (e, alias) = match item {
            ast::SelectItem::UnnamedExpr(e) => (e, None),
            ast::SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias)),
            ast::SelectItem::ExprWithAliases { expr, .. } => {
                return Err(p
                    .src
                    .expr_error("unsupported: several aliases for one item", expr));
            }
            ast::SelectItem::Wildcard(opts) => {
                wildcard(p, opts, star)?;
                expand_star(p, &mut out)?;
                continue;
            }
            ast::SelectItem::QualifiedWildcard(kind, opts) => {
                let known = match kind {
                    ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                        let n = n.to_string();
                        n.eq_ignore_ascii_case(p.stream)
                            || p.alias.is_some_and(|a| a.eq_ignore_ascii_case(&n))
                    }
                    ast::SelectItemQualifiedWildcardKind::Expr(_) => false,
                };
                wildcard(p, opts, star)?;
                if !known {
                    return Err(p
                        .src
                        .shown_error("unknown stream or alias before `.*`", &kind.to_string()));
                }
                expand_star(p, &mut out)?;
                continue;
            }
        };
        let t = p.expr(e, scope)?;
        let name = output_name(p, e, alias);
        if let Some(r) = reserved(&name) {
            let msg = format!(
                "output column `{name}` would clash with the `{r}` field every result row carries: rename it with AS"
            );
            return Err(p.src.expr_error(msg, e));
        }
        if out
            .fields
            .iter()
            .any(|f| f.name.eq_ignore_ascii_case(&name))
        {
            let msg = format!("duplicate output column `{name}`: rename one with AS");
            return Err(p.src.expr_error(msg, e));
        }
        out.exprs.push(t.expr);
        out.fields.push(Field { name, ty: t.ty });
    }
    Ok(out)
}

/// Checks that `*` is allowed here and carries no EXCLUDE/REPLACE-style options.
fn wildcard(
    p: &Planner<'_>,
    opts: &ast::WildcardAdditionalOptions,
    star: bool,
) -> Result<(), SqlError> {
    let at = p
        .src
        .range(opts.wildcard_token.0.span)
        .unwrap_or_else(|| p.src.first_word());
    if !star {
        let msg = "SELECT * is not allowed with GROUP BY: list the keys and aggregates";
        return Err(p.src.error(msg, at));
    }
    let plain = opts.opt_ilike.is_none()
        && opts.opt_exclude.is_none()
        && opts.opt_except.is_none()
        && opts.opt_replace.is_none()
        && opts.opt_rename.is_none()
        && opts.opt_alias.is_none();
    if !plain {
        return Err(p.src.error("unsupported: options after *", at));
    }
    Ok(())
}

fn expand_star(p: &Planner<'_>, out: &mut Output) -> Result<(), SqlError> {
    for (i, f) in p.schema.fields.iter().enumerate() {
        if let Some(r) = reserved(&f.name) {
            let msg = format!(
                "column `{}` would clash with the `{r}` field every result row carries: select it with an alias",
                f.name
            );
            return Err(p.src.shown_error(msg, "*"));
        }
        if out
            .fields
            .iter()
            .any(|o| o.name.eq_ignore_ascii_case(&f.name))
        {
            let msg = format!("duplicate output column `{}`: rename one with AS", f.name);
            return Err(p.src.shown_error(msg, "*"));
        }
        out.exprs.push(Expr::Column(i));
        out.fields.push(f.clone());
    }
    Ok(())
}

/// The name of a result column.
fn output_name(p: &Planner<'_>, e: &ast::Expr, alias: Option<&ast::Ident>) -> String {
    if let Some(a) = alias {
        return a.value.clone();
    }
    match e {
        ast::Expr::Identifier(_) | ast::Expr::CompoundIdentifier(_) => match p.column(e) {
            Ok(Some(t)) => match t.expr {
                Expr::Column(i) => p.schema.fields[i].name.clone(),
                _ => e.to_string(),
            },
            _ => match e {
                ast::Expr::Identifier(id) => id.value.to_ascii_lowercase(),
                _ => e.to_string(),
            },
        },
        ast::Expr::Function(f) if WINDOW_BOUNDS.contains(&func_name(f).as_str()) => {
            if func_name(f).ends_with("_START") {
                "window_start".to_string()
            } else {
                "window_end".to_string()
            }
        }
        _ => e.to_string(),
    }
}

/// The JSON fields sinks add to every result row, which a result column must not shadow.
fn reserved(name: &str) -> Option<&'static str> {
    ["query", "latency_ms", "keep"]
        .into_iter()
        .find(|r| r.eq_ignore_ascii_case(name))
}
