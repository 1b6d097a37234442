//! The shape of a continuous query: exactly one `SELECT ... FROM stream [WHERE] [GROUP BY]
//! [HAVING]`. Every other clause sqlparser accepts is rejected here, quoting its text, so
//! the planner never silently ignores part of a query.

use std::ops::Range;

use sqlparser::ast::{self, Spanned};
use sqlparser::tokenizer::Span;

use super::SqlError;
use super::source::Source;

/// The parts of a supported query.
pub(super) struct SelectQuery<'q> {
    pub select: &'q ast::Select,
    /// The stream name as written (unquoted) and where it is.
    pub stream: String,
    pub stream_range: Range<usize>,
    pub alias: Option<&'q str>,
    pub group_by: &'q [ast::Expr],
}

/// Range of a clause from its keyword `kw` to the end of `span` (its contents).
fn clause(src: &Source<'_>, kw: &str, span: Span) -> Range<usize> {
    match src.range(span) {
        Some(r) => match src.keyword_before(r.end, kw) {
            Some(k) if k.start <= r.start => k.start..r.end,
            _ => r,
        },
        None => keyword(src, kw, 0),
    }
}

/// Range of the first keyword `kw` at or after `from`, else the query's first word.
fn keyword(src: &Source<'_>, kw: &str, from: usize) -> Range<usize> {
    src.keyword_after(from, kw)
        .unwrap_or_else(|| src.first_word())
}

fn unsupported(src: &Source<'_>, what: &str, at: Range<usize>) -> SqlError {
    src.error(format!("unsupported: {what}"), at)
}

/// Checks that `stmts` is one plain SELECT over one stream and returns its parts.
pub(super) fn select_of<'q>(
    src: &Source<'_>,
    stmts: &'q [ast::Statement],
) -> Result<SelectQuery<'q>, SqlError> {
    let stmt = match stmts {
        [one] => one,
        [] => return Err(src.error("empty query: expected one SELECT statement", 0..0)),
        [_, second, ..] => {
            let at = src.range(second.span()).unwrap_or_else(|| src.first_word());
            let msg = format!(
                "expected exactly one SELECT statement, found {}",
                stmts.len()
            );
            return Err(src.error(msg, at));
        }
    };
    let ast::Statement::Query(q) = stmt else {
        let at = src.first_word();
        return Err(unsupported(src, "statements other than SELECT", at));
    };
    if let Some(w) = &q.with {
        let at = src
            .range(w.with_token.0.span)
            .unwrap_or_else(|| keyword(src, "WITH", 0));
        return Err(unsupported(src, "WITH", at));
    }
    if let Some(o) = &q.order_by {
        return Err(unsupported(src, "ORDER BY", clause(src, "ORDER", o.span())));
    }
    if let Some(l) = &q.limit_clause {
        let kw = match l {
            ast::LimitClause::LimitOffset { limit: None, .. } => "OFFSET",
            _ => "LIMIT",
        };
        return Err(unsupported(src, kw, clause(src, kw, l.span())));
    }
    if let Some(f) = &q.fetch {
        return Err(unsupported(src, "FETCH", clause(src, "FETCH", f.span())));
    }
    let extras = [
        (!q.locks.is_empty(), "FOR UPDATE / FOR SHARE", "FOR"),
        (q.for_clause.is_some(), "FOR clause", "FOR"),
        (q.settings.is_some(), "SETTINGS", "SETTINGS"),
        (q.format_clause.is_some(), "FORMAT", "FORMAT"),
        (!q.pipe_operators.is_empty(), "pipe operators", "|>"),
    ];
    if let Some((_, what, kw)) = extras.iter().find(|x| x.0) {
        return Err(unsupported(src, what, keyword(src, kw, 0)));
    }
    let select = match q.body.as_ref() {
        ast::SetExpr::Select(s) => s.as_ref(),
        ast::SetExpr::SetOperation { op, left, .. } => {
            let after = src.range(left.span()).map_or(0, |r| r.end);
            let kw = op.to_string();
            return Err(unsupported(src, &kw, keyword(src, &kw, after)));
        }
        ast::SetExpr::Query(_) => {
            let at = src.range(q.body.span()).unwrap_or_else(|| src.first_word());
            return Err(unsupported(src, "parenthesized query", at));
        }
        ast::SetExpr::Values(_) => {
            return Err(unsupported(src, "VALUES", keyword(src, "VALUES", 0)));
        }
        _ => {
            return Err(unsupported(
                src,
                "statements other than SELECT",
                src.first_word(),
            ));
        }
    };
    check_select(src, select)?;
    from_item(src, select)
}

/// Rejects SELECT clauses other than the projection, FROM, WHERE, GROUP BY and HAVING.
fn check_select(src: &Source<'_>, s: &ast::Select) -> Result<(), SqlError> {
    let start = src.range(s.select_token.0.span).map_or(0, |r| r.end);
    if matches!(
        s.distinct,
        Some(ast::Distinct::Distinct | ast::Distinct::On(_))
    ) {
        return Err(unsupported(
            src,
            "DISTINCT",
            keyword(src, "DISTINCT", start),
        ));
    }
    let clauses = [
        (s.top.is_some(), "TOP", "TOP"),
        (s.select_modifiers.is_some(), "SELECT modifiers", "SELECT"),
        (s.into.is_some(), "SELECT INTO", "INTO"),
        (s.exclude.is_some(), "EXCLUDE", "EXCLUDE"),
        (!s.lateral_views.is_empty(), "LATERAL VIEW", "LATERAL"),
        (s.prewhere.is_some(), "PREWHERE", "PREWHERE"),
        (!s.connect_by.is_empty(), "CONNECT BY", "CONNECT"),
        (!s.cluster_by.is_empty(), "CLUSTER BY", "CLUSTER"),
        (!s.distribute_by.is_empty(), "DISTRIBUTE BY", "DISTRIBUTE"),
        (!s.sort_by.is_empty(), "SORT BY", "SORT"),
        (!s.named_window.is_empty(), "WINDOW clause", "WINDOW"),
        (s.qualify.is_some(), "QUALIFY", "QUALIFY"),
        (
            s.value_table_mode.is_some(),
            "SELECT AS STRUCT / VALUE",
            "AS",
        ),
    ];
    if let Some((_, what, kw)) = clauses.iter().find(|c| c.0) {
        return Err(unsupported(src, what, keyword(src, kw, start)));
    }
    match &s.group_by {
        ast::GroupByExpr::All(_) => Err(unsupported(src, "GROUP BY ALL", keyword(src, "GROUP", 0))),
        ast::GroupByExpr::Expressions(_, mods) if !mods.is_empty() => Err(unsupported(
            src,
            "GROUP BY modifiers",
            keyword(src, "GROUP", 0),
        )),
        _ => Ok(()),
    }
}

/// The single stream in FROM, with its alias.
fn from_item<'q>(src: &Source<'_>, s: &'q ast::Select) -> Result<SelectQuery<'q>, SqlError> {
    let group_by = match &s.group_by {
        ast::GroupByExpr::Expressions(exprs, _) => exprs.as_slice(),
        ast::GroupByExpr::All(_) => &[],
    };
    let first = match s.from.as_slice() {
        [] => {
            let at = src
                .range(s.select_token.0.span)
                .unwrap_or_else(|| src.first_word());
            return Err(src.error("missing FROM: name the input stream", at));
        }
        [first] => first,
        [_, second, ..] => {
            let at = src
                .range(second.span())
                .unwrap_or_else(|| keyword(src, "FROM", 0));
            return Err(unsupported(src, "JOIN (more than one stream in FROM)", at));
        }
    };
    if let Some(join) = first.joins.first() {
        let at = match src.range(join.span()) {
            Some(r) => match src.keyword_before(r.start, "JOIN") {
                Some(k) => k.start..r.end,
                None => r,
            },
            None => keyword(src, "JOIN", 0),
        };
        return Err(unsupported(src, "JOIN", at));
    }
    let rel = &first.relation;
    let rel_range = src
        .range(rel.span())
        .unwrap_or_else(|| keyword(src, "FROM", 0));
    let ast::TableFactor::Table {
        name,
        alias,
        args,
        with_hints,
        version,
        with_ordinality,
        partitions,
        json_path,
        sample,
        index_directives,
        inheritance,
    } = rel
    else {
        let what = match rel {
            ast::TableFactor::Derived { .. } => {
                let at = src.parenthesized(rel_range);
                return Err(unsupported(src, "subquery in FROM", at));
            }
            _ => "this kind of FROM item",
        };
        return Err(unsupported(src, what, rel_range));
    };
    let plain = args.is_none()
        && with_hints.is_empty()
        && version.is_none()
        && !with_ordinality
        && partitions.is_empty()
        && json_path.is_none()
        && sample.is_none()
        && index_directives.is_empty()
        && inheritance.is_none()
        && alias.as_ref().is_none_or(|a| a.columns.is_empty());
    if !plain {
        return Err(unsupported(
            src,
            "table functions and table options in FROM",
            rel_range,
        ));
    }
    let stream = match name.0.as_slice() {
        [ast::ObjectNamePart::Identifier(id)] => id.value.clone(),
        _ => name.to_string(),
    };
    let stream_range = src.range(name.span()).unwrap_or(rel_range);
    Ok(SelectQuery {
        select: s,
        stream,
        stream_range,
        alias: alias.as_ref().map(|a| a.name.value.as_str()),
        group_by,
    })
}
