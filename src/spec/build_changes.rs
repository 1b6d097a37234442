//! Validating `changes:`: each change is checked as the control API checks the same
//! request (an added query exactly as `queries:` entries are, with errors located in the
//! file), and names are resolved in time order against the queries running at that time.

use super::build_query::{Planner, build_qos_patch, build_query_at};
use super::build_stream::check_identifier;
use super::config_changes::ChangeConfig;
use super::error::{Diagnostics, join};
use super::workload::{Change, ChangeAction, QuerySpec, SinkSpec};
use crate::sql::Catalog;

/// The changes, sorted by time; `queries` are the workload's own.
pub(crate) fn build_changes(
    diag: &mut Diagnostics,
    changes: &[ChangeConfig],
    queries: &[QuerySpec],
    catalog: Option<&Catalog>,
    planner: Planner,
) -> Vec<Change> {
    let mut order: Vec<usize> = (0..changes.len()).collect();
    order.sort_by_key(|&i| changes[i].at.0);
    // The queries running at the time of the change being checked.
    let mut running: Vec<QuerySpec> = queries.to_vec();
    let mut out = Vec::new();
    for i in order {
        let c = &changes[i];
        let path = format!("changes[{i}]");
        if c.at.0 < 0 {
            diag.at(&join(&path, "at"), "at must not be negative");
        }
        let given = [
            c.add.is_some(),
            c.patch.is_some(),
            c.remove.is_some(),
            c.policy.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            diag.at(
                &path,
                "a change needs exactly one of `add`, `patch`, `remove` or `policy`",
            );
            continue;
        }
        if c.flush.is_some() && c.remove.is_none() {
            diag.at(&join(&path, "flush"), "`flush` goes with `remove`");
        }
        let find = |running: &[QuerySpec], name: &str| {
            running
                .iter()
                .position(|q| q.name.eq_ignore_ascii_case(name))
        };
        let action = if let Some(add) = &c.add {
            let p = join(&path, "add");
            check_identifier(diag, &join(&p, "name"), "query name", &add.name);
            if find(&running, &add.name).is_some() {
                diag.at(
                    &join(&p, "name"),
                    format!(
                        "a query named `{}` is already running at that time",
                        add.name
                    ),
                );
            }
            let Some(q) = build_query_at(diag, &p, &add.name, &add.query(), catalog, planner)
            else {
                continue;
            };
            if let SinkSpec::Jsonl(file) = &q.sink
                && let Some(other) = queries.iter().chain(&running).find(
                    |o| matches!(&o.sink, SinkSpec::Jsonl(f) if super::build::same_file(f, file)),
                )
            {
                diag.at(
                    &join(&p, "sink"),
                    format!(
                        "query `{}` writes to `{file}`, as query `{}` does: give each query its own file",
                        q.name, other.name
                    ),
                );
            }
            running.push(q.clone());
            ChangeAction::Add(Box::new(q))
        } else if let Some(patch) = &c.patch {
            let p = join(&path, "patch");
            let Some(qi) = find(&running, &patch.name) else {
                diag.at(&join(&p, "name"), not_running(&patch.name));
                continue;
            };
            let Some(input) = catalog.and_then(|c| c.get(&running[qi].plan.stream)) else {
                continue;
            };
            let qos = build_qos_patch(diag, &join(&p, "qos"), &patch.qos, input);
            ChangeAction::Patch {
                query: running[qi].name.clone(),
                qos,
            }
        } else if let Some(name) = &c.remove {
            let Some(qi) = find(&running, name) else {
                diag.at(&join(&path, "remove"), not_running(name));
                continue;
            };
            let q = running.remove(qi);
            ChangeAction::Remove {
                query: q.name,
                flush: c.flush.unwrap_or(true),
            }
        } else {
            let policy = c.policy.clone().unwrap_or_default();
            if policy.trim().is_empty() {
                diag.at(&join(&path, "policy"), "policy must name a policy file");
            }
            ChangeAction::Policy(policy)
        };
        out.push(Change { at: c.at.0, action });
    }
    out
}

fn not_running(name: &str) -> String {
    format!("no query named `{name}` is running at that time")
}
