//! Ad-hoc queries (Aurora's connection points): a query added with its stream's retained
//! history replayed into it first, then either ended (its rows handed back) or left
//! running live like any continuous query. Pure: no clock, no I/O; both the control API's
//! inbox and tests drive it.
//!
//! Invariant: history is never shed (it skips every drop point and queue, see
//! `core::engine::history`); the live part is a query like any other.

use serde_json::Value;

use super::control::Controller;
use super::manage::{Command, ManageError, Manager, Outcome};
use super::observe::Observers;
use super::sink::write_rows;
use crate::core::engine::{Emitted, Engine, Removal, Replay};
use crate::core::schema::Nanos;
use crate::spec::QuerySpec;

/// Rows an ended ad-hoc query hands back at most; the rest are counted as truncated.
pub const MAX_ROWS: usize = 100_000;

/// What an ad-hoc query did.
#[derive(Debug, Default)]
pub struct AdHoc {
    pub index: usize,
    pub replay: Replay,
    /// The rows of an ended query, as JSON objects (field -> value, with the approximation
    /// side-car if any); empty when it continues live (its rows go to its sink).
    pub rows: Vec<Value>,
    /// Rows beyond `MAX_ROWS`, not returned.
    pub truncated: u64,
    /// The final ledger of an ended query.
    pub removal: Option<Removal>,
}

#[derive(Debug, thiserror::Error)]
pub enum AdHocError {
    #[error(
        "stream `{0}` keeps no history: give it `retain: {{last: 5s}}` (or `{{tuples: N}}`) in the workload"
    )]
    NoHistory(String),
    #[error(transparent)]
    Manage(#[from] ManageError),
}

/// Adds `spec` at elapsed `at` (engine time `now`), replays its stream's history into it,
/// and then, unless `continue_live`, removes it with its windows flushed. Rows of a query
/// that continues go to `live_sink`.
#[allow(clippy::too_many_arguments)]
pub fn run_adhoc(
    spec: QuerySpec,
    continue_live: bool,
    manager: &mut Manager,
    engine: &mut Engine,
    mut controller: Option<&mut Controller>,
    at: Nanos,
    now: Nanos,
    mut live_sink: impl FnMut(&Emitted<'_>),
    observers: &mut Observers<'_>,
) -> Result<AdHoc, AdHocError> {
    let keeps = manager
        .workload()
        .streams
        .iter()
        .any(|s| s.name.eq_ignore_ascii_case(&spec.plan.stream) && s.retain.is_some());
    if !keeps {
        return Err(AdHocError::NoHistory(spec.plan.stream.clone()));
    }
    let name = spec.name.clone();
    let Outcome::Added { index } = manager.apply(
        Command::Add(Box::new(spec)),
        engine,
        controller.as_deref_mut(),
        at,
        now,
        |_| {},
        observers,
    )?
    else {
        unreachable!("an add adds")
    };
    let mut out = AdHoc {
        index,
        ..AdHoc::default()
    };
    let mut collect = |e: &Emitted<'_>| collect_rows(e, &mut out.rows, &mut out.truncated);
    out.replay = if continue_live {
        engine.replay_history(index, now, &mut live_sink)
    } else {
        engine.replay_history(index, now, &mut collect)
    }
    .map_err(ManageError::from)?;
    if !continue_live {
        engine
            .flush_history(index, now, &mut collect)
            .map_err(ManageError::from)?;
        let removed = manager.apply(
            Command::Remove {
                query: name,
                flush: true,
            },
            engine,
            controller,
            at,
            now,
            &mut collect,
            observers,
        )?;
        if let Outcome::Removed { removal, .. } = removed {
            out.removal = Some(removal);
        }
    }
    Ok(out)
}

/// Appends the rows of `e` as JSON objects, as a JSON lines sink writes them but without
/// `query` and `latency_ms` (history has no live latency).
fn collect_rows(e: &Emitted<'_>, rows: &mut Vec<Value>, truncated: &mut u64) {
    let room = MAX_ROWS.saturating_sub(rows.len());
    if e.batch.len() > room {
        *truncated += (e.batch.len() - room) as u64;
    }
    if room == 0 {
        return;
    }
    let mut text = Vec::new();
    if write_rows(&mut text, e).is_err() {
        return;
    }
    for line in text
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .take(room)
    {
        if let Ok(Value::Object(mut m)) = serde_json::from_slice::<Value>(line) {
            m.remove("query");
            m.remove("latency_ms");
            rows.push(Value::Object(m));
        }
    }
}
