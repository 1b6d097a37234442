//! Continuous-query SQL: text -> sqlparser AST -> type-checked `QueryPlan`.
//! Every error quotes the offending SQL text and its position inside the query.

use crate::core::plan::QueryPlan;
use crate::core::schema::Schema;

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
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}: `{snippet}`")]
pub struct SqlError {
    pub message: String,
    pub snippet: String,
    pub line: usize,
    pub column: usize,
}

/// Parses and plans one continuous query against the catalog.
pub fn plan_query(_sql: &str, _catalog: &Catalog) -> Result<QueryPlan, SqlError> {
    todo!("sql planner")
}
