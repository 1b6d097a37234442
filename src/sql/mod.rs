//! Continuous-query SQL: text -> sqlparser AST -> type-checked `QueryPlan`.
//! Every error quotes the offending SQL text and its position inside the query.
//!
//! `query` checks the statement's shape, `expr` and `types` plan expressions, `window`
//! reads TUMBLE/HOP, `project` the SELECT list and `aggregate` the windowed GROUP BY;
//! `source` maps positions and builds every error.

mod aggregate;
mod expr;
mod project;
mod query;
mod source;
mod types;
mod window;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_errors;
#[cfg(test)]
mod tests_robust;

use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;

use crate::core::plan::{PlanBody, QueryPlan};
use crate::core::schema::Schema;
use expr::{Place, Planner, RowScope};
use source::Source;

/// The streams a query may read, by name.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    pub streams: Vec<(String, Schema)>,
}

impl Catalog {
    pub fn get(&self, name: &str) -> Option<&Schema> {
        self.streams
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, s)| s)
    }
}

/// A planning failure: what went wrong, the SQL text it concerns, and where that text
/// starts inside the query (1-based line and column).
/// Displays as the message, followed by the quoted snippet unless the message quotes it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub struct SqlError {
    pub message: String,
    pub snippet: String,
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for SqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.snippet.is_empty() || self.message.contains(&format!("`{}`", self.snippet)) {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: `{}`", self.message, self.snippet)
        }
    }
}

impl SqlError {
    /// The error with the query line it points at and a caret under the snippet, in the
    /// style of rustc, for terminals:
    ///
    /// ```text
    /// error: unknown column `tmp` in stream `readings`
    ///  --> 2:8
    ///   |
    /// 2 |        tmp
    ///   |        ^^^
    /// ```
    pub fn render(&self, sql: &str) -> String {
        let mut out = format!(
            "error: {}\n --> {}:{}\n",
            self.message, self.line, self.column
        );
        let Some(text) = sql.split('\n').nth(self.line.saturating_sub(1)) else {
            return out;
        };
        let text = text.trim_end_matches('\r');
        let num = self.line.to_string();
        let pad = " ".repeat(num.len());
        let indent: String = text
            .chars()
            .take(self.column.saturating_sub(1))
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        let rest = text
            .chars()
            .count()
            .saturating_sub(self.column.saturating_sub(1));
        let rest = rest.max(1);
        let width = self.snippet.lines().next().map_or(1, |l| l.chars().count());
        let carets = "^".repeat(width.clamp(1, rest));
        out.push_str(&format!(
            "{pad} |\n{num} | {text}\n{pad} | {indent}{carets}\n"
        ));
        out
    }
}

/// The deepest expression or subquery nesting a query may use.
pub const MAX_SQL_DEPTH: usize = 50;

/// Parses and plans one continuous query against the catalog.
///
/// A query without GROUP BY becomes `PlanBody::Project`; one with GROUP BY needs exactly
/// one `TUMBLE`/`HOP` window there and becomes `PlanBody::Aggregate`.
pub fn plan_query(sql: &str, catalog: &Catalog) -> Result<QueryPlan, SqlError> {
    let src = Source::new(sql);
    // A bounded recursion depth: deeply nested text fails fast with a located error.
    let stmts = Parser::new(&GenericDialect {})
        .with_recursion_limit(MAX_SQL_DEPTH)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| src.parse_error(&e))?;
    let q = query::select_of(&src, &stmts)?;
    let Some((stream, schema)) = catalog
        .streams
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(&q.stream))
    else {
        let known: Vec<&str> = catalog.streams.iter().map(|(n, _)| n.as_str()).collect();
        let mut msg = format!("unknown stream `{}`", q.stream);
        if !known.is_empty() {
            msg.push_str(&format!(" (known streams: {})", known.join(", ")));
        }
        return Err(src.error(msg, q.stream_range));
    };
    let p = Planner {
        src: &src,
        stream,
        alias: q.alias,
        schema,
    };
    let select = q.select;
    let filter = match &select.selection {
        Some(w) => {
            let t = p.expr(w, &mut RowScope::at(Place::Where))?;
            types::need_bool(&src, w, &t, "WHERE needs a bool condition")?;
            Some(t.expr)
        }
        None => None,
    };
    let (body, output) = match (q.group_by, &select.having) {
        ([], None) => {
            let (exprs, output) = project::plan_project(&p, &select.projection)?;
            (PlanBody::Project(exprs), output)
        }
        ([], Some(h)) => {
            let at = match src.expr_range(h) {
                Some(r) => src
                    .keyword_before(r.start, "HAVING")
                    .map_or(r.clone(), |k| k.start..r.end),
                None => src.first_word(),
            };
            let msg = format!(
                "HAVING needs a window: add GROUP BY {}",
                window::suggestion(schema)
            );
            return Err(src.error(msg, at));
        }
        (group_by, having) => {
            let first = src.expr_range(&group_by[0]);
            let last = src.expr_range(&group_by[group_by.len() - 1]);
            let range = match (first, last) {
                (Some(f), Some(l)) => {
                    let kw = src.keyword_before(f.start, "GROUP");
                    kw.map_or(f.start, |k| k.start)..l.end
                }
                _ => src.first_word(),
            };
            let (plan, output) = aggregate::plan_aggregate(
                &p,
                group_by,
                range,
                &select.projection,
                having.as_ref(),
            )?;
            (PlanBody::Aggregate(plan), output)
        }
    };
    Ok(QueryPlan {
        stream: stream.clone(),
        filter,
        body,
        output,
    })
}
