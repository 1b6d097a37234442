//! Changes of the query set (add, patch, remove, switch policy) on N workers: the Manager's
//! job (`runtime::manage`) for a `Sharded` run. One table of queries for the run; each
//! command goes to every worker that runs the query, between turns, at the same input
//! position on every worker (the simulated driver ingests each slice on all of them at
//! once). Observers hear one event per command, with the merged removal ledger.
//!
//! Invariant: every worker's engine and controller keep the same query indices; a query's
//! placement is fixed when it is added (sharded by its key, or whole on one owner, a
//! tombstone elsewhere), and a query that cannot be placed on its stream's route is
//! refused before any worker changes.

use super::merge::merge;
use super::route::Route;
use super::{Placement, Sharded};
use crate::core::engine::{Emitted, Removal, shard_column};
use crate::core::plan::PlanBody;
use crate::core::schema::Nanos;
use crate::runtime::control::Controller;
use crate::runtime::manage::{Command, ManageError, Outcome, query_def};
use crate::runtime::observe::{Event, Observers, QueryInfo};
use crate::shed::ShedKind;
use crate::spec::{QuerySpec, Workload};

/// Why a change cannot be made on N workers.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ChangeError {
    #[error(transparent)]
    Manage(#[from] ManageError),
    #[error(
        "query `{query}` cannot be added to stream `{stream}` on {workers} workers: the stream is split by its key column `{column}` (every query on it groups by it first), so each worker sees only its own keys, and `{query}` {why}; declare it in `queries:` from the start (the stream is then offered whole to every worker), or run with engine.workers: 1"
    )]
    Unroutable {
        query: String,
        stream: String,
        workers: usize,
        column: String,
        why: &'static str,
    },
}

/// Where query `spec` of workload `w`, added as index `q`, runs on the workers of
/// `sharded`, or why it cannot be added there.
pub fn place(
    w: &Workload,
    sharded: &Sharded,
    spec: &QuerySpec,
    q: usize,
) -> Result<Placement, ChangeError> {
    let n = sharded.workers();
    let placement = match shard_column(&spec.plan.body) {
        Some(column) if n > 1 => Placement::Sharded { column },
        _ => Placement::Owner(q % n),
    };
    let e = &sharded.engines[0];
    let by_name = |s: &crate::spec::StreamSpec| s.name.eq_ignore_ascii_case(&spec.plan.stream);
    let Some(stream) = w.streams.iter().position(by_name) else {
        // An unknown stream is the engine's error to report.
        return Ok(placement);
    };
    let Route::Split { column, time } = sharded.routers[0].route(stream) else {
        return Ok(placement);
    };
    let why = match (placement, &spec.plan.body) {
        (Placement::Sharded { column: c }, PlanBody::Aggregate(a)) if c == column => {
            if a.time == time {
                return Ok(placement);
            }
            "reads another time for its windows"
        }
        (Placement::Sharded { .. }, _) => "groups by another column",
        _ => "has no key column to group by (it would need every row)",
    };
    Err(ChangeError::Unroutable {
        query: spec.name.clone(),
        stream: spec.plan.stream.clone(),
        workers: n,
        column: e.stream_schema(stream).fields[column].name.clone(),
        why,
    })
}

/// The query table of a run on N workers.
#[derive(Clone, Debug)]
pub struct ShardedManager {
    workload: Workload,
    queries: Vec<QuerySpec>,
    removed: Vec<bool>,
}

impl ShardedManager {
    pub fn new(w: &Workload) -> ShardedManager {
        ShardedManager {
            queries: w.queries.clone(),
            removed: vec![false; w.queries.len()],
            workload: w.clone(),
        }
    }

    /// Every query by index, removed ones included.
    pub fn queries(&self) -> &[QuerySpec] {
        &self.queries
    }

    fn index_of(&self, name: &str) -> Result<usize, ManageError> {
        (0..self.queries.len())
            .find(|&i| !self.removed[i] && self.queries[i].name.eq_ignore_ascii_case(name))
            .ok_or_else(|| ManageError::NoSuchQuery(name.to_string()))
    }

    /// Applies `cmd` at elapsed time `at` (engine time `now`) to every worker of `sharded`
    /// that runs the query, and to its controller (`controllers[k]`, if the run has one);
    /// results a removal flushes go to `sink(worker, rows)`. Observers get one event.
    #[allow(clippy::too_many_arguments)]
    pub fn apply(
        &mut self,
        cmd: Command,
        sharded: &mut Sharded,
        controllers: &mut [Option<Controller>],
        at: Nanos,
        now: Nanos,
        mut sink: impl FnMut(usize, &Emitted<'_>),
        observers: &mut Observers<'_>,
    ) -> Result<Outcome, ChangeError> {
        match cmd {
            Command::Add(spec) => {
                let index = sharded.engines[0].query_count();
                let placement = place(&self.workload, sharded, &spec, index)?;
                let def = query_def(&spec, spec.qos.as_ref());
                let map = sharded.map.clone();
                sharded.placement.push(placement);
                for (k, e) in sharded.engines.iter_mut().enumerate() {
                    let q = e.add_query(def.clone()).map_err(ManageError::from)?;
                    debug_assert_eq!(q, index);
                    let c = controllers.get_mut(k).and_then(Option::as_mut);
                    let routed = sharded.routers[k].route(e.query_stream(q)) != Route::Broadcast;
                    match placement {
                        Placement::Sharded { .. } if routed => {}
                        Placement::Sharded { column } => e.set_shard(q, map.filter(column, k)),
                        Placement::Owner(o) if o != k => {
                            // Before any input reaches it: an empty, balanced tombstone.
                            e.remove_query(q, false, now, |_| {})
                                .map_err(ManageError::from)?;
                            if let Some(c) = c {
                                c.add_query(e, q, spec.qos.clone(), spec.cost);
                                c.remove_query(e, q);
                            }
                            continue;
                        }
                        Placement::Owner(_) => {}
                    }
                    if let Some(c) = c {
                        c.add_query(e, q, spec.qos.clone(), spec.cost);
                    }
                }
                let info = QueryInfo::of(&self.workload, &spec, spec.qos.as_ref());
                self.queries.push(*spec);
                self.removed.push(false);
                observers.event(Event::QueryAdded {
                    at,
                    query: index,
                    info,
                });
                Ok(Outcome::Added { index })
            }
            Command::Patch { query, qos } => {
                let index = self.index_of(&query)?;
                let new = qos.apply(self.queries[index].qos.as_ref());
                for k in 0..sharded.workers() {
                    if !sharded.runs(k, index) {
                        continue;
                    }
                    let e = &mut sharded.engines[k];
                    e.patch_query(index, new.latency_target(), new.weight, new.lossless)
                        .map_err(ManageError::from)?;
                    if let Some(c) = controllers.get_mut(k).and_then(Option::as_mut) {
                        c.set_qos(e, index, Some(new.clone()));
                    }
                }
                self.queries[index].qos = Some(new.clone());
                let info = QueryInfo::of(&self.workload, &self.queries[index], Some(&new));
                observers.event(Event::QueryChanged {
                    at,
                    query: index,
                    info,
                });
                Ok(Outcome::Patched { index, qos: new })
            }
            Command::Remove { query, flush } => {
                let index = self.index_of(&query)?;
                let mut rows_dropped = 0;
                let mut ledgers = Vec::new();
                let mut snaps = Vec::new();
                for k in 0..sharded.workers() {
                    let runs = sharded.runs(k, index);
                    let e = &mut sharded.engines[k];
                    if runs {
                        let r = e
                            .remove_query(index, flush, now, |x| sink(k, x))
                            .map_err(ManageError::from)?;
                        if let Some(c) = controllers.get_mut(k).and_then(Option::as_mut) {
                            c.remove_query(e, index);
                        }
                        rows_dropped += r.rows_dropped;
                        ledgers.push(r.ledger);
                    }
                    snaps.push(e.snapshot());
                }
                // The merged final ledger: the workers' parts added, as in the run's view.
                let mut merged = merge(
                    &snaps,
                    &[],
                    |w, q| sharded.runs(w, q),
                    |s| sharded.routed(s),
                );
                let ledger = merged.queries.swap_remove(index);
                debug_assert_eq!(
                    ledger.offered,
                    ledgers.iter().map(|l| l.offered).sum::<u64>()
                );
                self.removed[index] = true;
                observers.event(Event::QueryRemoved {
                    at,
                    query: index,
                    ledger: Box::new(ledger.clone()),
                    rows_dropped,
                });
                Ok(Outcome::Removed {
                    index,
                    removal: Removal {
                        ledger,
                        rows_dropped,
                    },
                })
            }
            Command::Policy(policy) => {
                let name = policy.name.clone();
                let shedding_policy = !matches!(policy.params.kind, ShedKind::None);
                for (e, c) in sharded.engines.iter_mut().zip(controllers.iter_mut()) {
                    if let Some(c) = c {
                        c.set_policy(e, policy.clone());
                    }
                }
                observers.event(Event::PolicyChanged {
                    at,
                    policy: name.clone(),
                    shedding_policy,
                });
                Ok(Outcome::PolicySet { name })
            }
        }
    }
}
