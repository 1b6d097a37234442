//! What the controller derives once from each query's plan: how its emitted rows follow
//! its input, its key columns, and its window-aware drop template. Pure functions of the
//! plan, so an added query gets the same treatment as one registered at start.

use crate::core::drop::WindowRule;
use crate::core::engine::Engine;
use crate::core::expr::Expr;
use crate::core::plan::{PlanBody, TimeSource};
use crate::shed::Rows;

/// How query `q`'s emitted rows follow its input: a grouped window aggregate emits a row
/// per non-empty (key, window), each tuple lying in `size / slide` windows.
pub(super) fn rows_shape(engine: &Engine, q: usize) -> Rows {
    match &engine.query_plan(q).body {
        PlanBody::Aggregate(a) => Rows::Grouped {
            overlap: (a.window.size as f64 / a.window.slide.max(1) as f64).max(1.0),
        },
        _ => Rows::Linear,
    }
}

/// The key columns of query `q`, if it is a grouped aggregate over plain columns.
pub(super) fn key_columns(engine: &Engine, q: usize) -> Option<Vec<usize>> {
    let PlanBody::Aggregate(a) = &engine.query_plan(q).body else {
        return None;
    };
    if a.keys.is_empty() {
        return None;
    }
    a.keys
        .iter()
        .map(|k| match k {
            Expr::Column(c) => Some(*c),
            _ => None,
        })
        .collect()
}

/// The window rule template of query `q`, if it is a tumbling aggregate over column keys.
pub(super) fn window_rule(engine: &Engine, q: usize) -> Option<WindowRule> {
    let PlanBody::Aggregate(a) = &engine.query_plan(q).body else {
        return None;
    };
    if a.window.size != a.window.slide {
        return None;
    }
    let key_columns = a
        .keys
        .iter()
        .map(|k| match k {
            Expr::Column(c) => Some(*c),
            _ => None,
        })
        .collect::<Option<Vec<usize>>>()?;
    Some(WindowRule {
        keep: 1.0,
        time_column: match a.time {
            TimeSource::Column(c) => Some(c),
            TimeSource::Arrival => None,
        },
        window: a.window,
        key_columns,
    })
}
