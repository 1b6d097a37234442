//! Changes of the query set (add, patch, remove, switch policy) on N workers: the Manager's
//! job (`runtime::manage`) for a run over key shards. One table of queries for the run
//! (`ShardedManager`, on the driver's thread) resolves a command into a `WorkerChange`
//! (names to indices, the new query's placement); each worker applies its part
//! (`apply_part`) between turns, at the same input position on every worker (the
//! simulated driver ingests each slice on all of them at once; the live coordinator sends
//! the change in band with the batches). Observers hear one event per command, a removal's
//! with the workers' final ledgers added.
//!
//! Invariant: every worker's engine and controller keep the same query indices; a query's
//! placement is fixed when it is added (sharded by its key, or whole on one owner, a
//! tombstone elsewhere), and a query that cannot be placed on its stream's route is
//! refused before any worker changes.

use super::merge::add_ledger;
use super::route::{Route, Router};
use super::{Placement, Sharded};
use crate::core::engine::{Emitted, Engine, QueryDef, Removal, shard_column};
use crate::core::plan::PlanBody;
use crate::core::schema::Nanos;
use crate::core::shard::ShardMap;
use crate::runtime::control::Controller;
use crate::runtime::manage::{Command, ManageError, Outcome, query_def};
use crate::runtime::observe::{Event, Observers, QueryInfo};
use crate::shed::ShedKind;
use crate::spec::{Policy, QosSpec, QuerySpec, Workload};

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

/// Where query `spec` of workload `w`, added as index `q`, runs on `workers` workers whose
/// streams are routed as `router` says, or why it cannot be added there.
pub fn place_on(
    w: &Workload,
    router: &Router,
    workers: usize,
    spec: &QuerySpec,
    q: usize,
) -> Result<Placement, ChangeError> {
    let placement = match shard_column(&spec.plan.body) {
        Some(column) if workers > 1 => Placement::Sharded { column },
        _ => Placement::Owner(q % workers.max(1)),
    };
    let by_name = |s: &crate::spec::StreamSpec| s.name.eq_ignore_ascii_case(&spec.plan.stream);
    let Some(stream) = w.streams.iter().position(by_name) else {
        // An unknown stream is the engine's error to report.
        return Ok(placement);
    };
    let Route::Split { column, time } = router.route(stream) else {
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
        workers,
        column: w.streams[stream].schema.fields[column].name.clone(),
        why,
    })
}

/// `place_on` for the workers of `sharded`.
pub fn place(
    w: &Workload,
    sharded: &Sharded,
    spec: &QuerySpec,
    q: usize,
) -> Result<Placement, ChangeError> {
    place_on(w, &sharded.router, sharded.workers(), spec, q)
}

/// A command resolved for the workers: what each applies (`apply_part`).
#[derive(Clone, Debug)]
pub enum WorkerChange {
    Add {
        index: usize,
        def: Box<QueryDef>,
        qos: Option<QosSpec>,
        cost: Option<Nanos>,
        placement: Placement,
    },
    Patch {
        index: usize,
        qos: QosSpec,
    },
    Remove {
        index: usize,
        flush: bool,
    },
    Policy(Policy),
}

/// Worker `k`'s part of `change`, on its `engine` and `controller` (if the run has one),
/// its router and the run's shard `map`; results a flushed removal emits go to `sink`.
/// Returns the worker's final ledger of a query it removed.
#[allow(clippy::too_many_arguments)]
pub fn apply_part(
    change: &WorkerChange,
    k: usize,
    engine: &mut Engine,
    mut controller: Option<&mut Controller>,
    router: &Router,
    map: &ShardMap,
    now: Nanos,
    sink: impl FnMut(&Emitted<'_>),
) -> Result<Option<Removal>, ManageError> {
    match change {
        WorkerChange::Add {
            index,
            def,
            qos,
            cost,
            placement,
        } => {
            let q = engine.add_query((**def).clone())?;
            debug_assert_eq!(q, *index);
            if let Some(c) = controller.as_deref_mut() {
                c.add_query(engine, q, qos.clone(), *cost);
            }
            let routed = router.route(engine.query_stream(q)) != Route::Broadcast;
            match *placement {
                Placement::Sharded { .. } if routed => {}
                Placement::Sharded { column } => engine.set_shard(q, map.filter(column, k)),
                Placement::Owner(o) if o != k => {
                    // Before any input reaches it: an empty, balanced tombstone.
                    engine.remove_query(q, false, now, |_| {})?;
                    if let Some(c) = controller {
                        c.remove_query(engine, q);
                    }
                }
                Placement::Owner(_) => {}
            }
            Ok(None)
        }
        WorkerChange::Patch { index, qos } => {
            if !engine.is_removed(*index) {
                engine.patch_query(*index, qos.latency_target(), qos.weight, qos.lossless)?;
                if let Some(c) = controller {
                    c.set_qos(engine, *index, Some(qos.clone()));
                }
            }
            Ok(None)
        }
        WorkerChange::Remove { index, flush } => {
            // A tombstone (the query runs on another owner) has nothing to remove.
            if engine.is_removed(*index) {
                return Ok(None);
            }
            let removal = engine.remove_query(*index, *flush, now, sink)?;
            if let Some(c) = controller {
                c.remove_query(engine, *index);
            }
            Ok(Some(removal))
        }
        WorkerChange::Policy(policy) => {
            if let Some(c) = controller {
                c.set_policy(engine, policy.clone());
            }
            Ok(None)
        }
    }
}

/// The query table of a run on N workers.
#[derive(Clone, Debug)]
pub struct ShardedManager {
    workload: Workload,
    queries: Vec<QuerySpec>,
    removed: Vec<bool>,
    /// The policy in force (its name).
    policy: String,
}

impl ShardedManager {
    pub fn new(w: &Workload) -> ShardedManager {
        ShardedManager {
            queries: w.queries.clone(),
            removed: vec![false; w.queries.len()],
            workload: w.clone(),
            policy: String::new(),
        }
    }

    /// The table of a run that starts under `policy`.
    pub fn with_policy(mut self, policy: &Policy) -> ShardedManager {
        self.policy = policy.name.clone();
        self
    }

    /// The policy in force (its name).
    pub fn policy(&self) -> &str {
        &self.policy
    }

    /// The workload the run started from (its streams are the catalog of new queries).
    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    /// The queries running now.
    pub fn running(&self) -> Vec<&QuerySpec> {
        (self.queries.iter().zip(&self.removed))
            .filter(|(_, r)| !**r)
            .map(|(q, _)| q)
            .collect()
    }

    /// Whether query `i` was removed.
    pub fn is_removed(&self, i: usize) -> bool {
        self.removed.get(i).copied().unwrap_or(false)
    }

    /// The index of the running query `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.index_of(name).ok()
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

    /// Resolves `cmd` for `workers` workers routed as `router` says, and records it in the
    /// table (a removal is complete with `removed`); observers hear an add, a patch or a
    /// policy switch at `at` now.
    pub fn plan(
        &mut self,
        cmd: Command,
        router: &Router,
        workers: usize,
        at: Nanos,
        observers: &mut Observers<'_>,
    ) -> Result<WorkerChange, ChangeError> {
        Ok(match cmd {
            Command::Add(spec) => {
                let index = self.queries.len();
                let placement = place_on(&self.workload, router, workers, &spec, index)?;
                if self.index_of(&spec.name).is_ok() {
                    let name = spec.name.clone();
                    return Err(ManageError::Engine(
                        crate::core::engine::EngineError::DuplicateQuery(name),
                    )
                    .into());
                }
                let info = QueryInfo::of(&self.workload, &spec, spec.qos.as_ref());
                let change = WorkerChange::Add {
                    index,
                    def: Box::new(query_def(&spec, spec.qos.as_ref())),
                    qos: spec.qos.clone(),
                    cost: spec.cost,
                    placement,
                };
                self.queries.push(*spec);
                self.removed.push(false);
                let query = index;
                observers.event(Event::QueryAdded { at, query, info });
                change
            }
            Command::Patch { query, qos } => {
                let index = self.index_of(&query)?;
                let new = qos.apply(self.queries[index].qos.as_ref());
                self.queries[index].qos = Some(new.clone());
                let info = QueryInfo::of(&self.workload, &self.queries[index], Some(&new));
                observers.event(Event::QueryChanged {
                    at,
                    query: index,
                    info,
                });
                WorkerChange::Patch { index, qos: new }
            }
            Command::Remove { query, flush } => {
                let index = self.index_of(&query)?;
                self.removed[index] = true;
                WorkerChange::Remove { index, flush }
            }
            Command::Policy(policy) => {
                self.policy = policy.name.clone();
                let shedding_policy = !matches!(policy.params.kind, ShedKind::None);
                observers.event(Event::PolicyChanged {
                    at,
                    policy: policy.name.clone(),
                    shedding_policy,
                });
                WorkerChange::Policy(policy)
            }
        })
    }

    /// Completes the removal of query `index` with the workers' final ledgers (one per
    /// worker that ran it): observers hear it once, with the ledgers added.
    pub fn removed(
        &self,
        index: usize,
        parts: &[Removal],
        at: Nanos,
        observers: &mut Observers<'_>,
    ) -> Removal {
        let mut ledger = parts[0].ledger.clone();
        for p in &parts[1..] {
            add_ledger(&mut ledger, &p.ledger);
        }
        let rows_dropped = parts.iter().map(|p| p.rows_dropped).sum();
        observers.event(Event::QueryRemoved {
            at,
            query: index,
            ledger: Box::new(ledger.clone()),
            rows_dropped,
        });
        Removal {
            ledger,
            rows_dropped,
        }
    }

    /// Applies `cmd` at elapsed time `at` (engine time `now`) to every worker of `sharded`
    /// and its controller (`controllers[k]`, if the run has one); results a removal
    /// flushes go to `sink(worker, rows)`. Observers get one event.
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
        let n = sharded.workers();
        let change = self.plan(cmd, &sharded.router, n, at, observers)?;
        if let WorkerChange::Add { placement, .. } = &change {
            sharded.placement.push(*placement);
        }
        let mut removals = Vec::new();
        for (k, e) in sharded.engines.iter_mut().enumerate() {
            let c = controllers.get_mut(k).and_then(Option::as_mut);
            let (router, map) = (&sharded.router, &sharded.map);
            let part = apply_part(&change, k, e, c, router, map, now, |x| sink(k, x))?;
            removals.extend(part);
        }
        Ok(match change {
            WorkerChange::Add { index, .. } => Outcome::Added { index },
            WorkerChange::Patch { index, qos } => Outcome::Patched { index, qos },
            WorkerChange::Remove { index, .. } => {
                let removal = self.removed(index, &removals, at, observers);
                Outcome::Removed { index, removal }
            }
            WorkerChange::Policy(p) => Outcome::PolicySet { name: p.name },
        })
    }
}
