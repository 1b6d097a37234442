//! The Manager: applies changes of the query set (add, patch, remove, switch policy) to a
//! running engine and its control loop, between scheduler turns, and tells the observers.
//! Both drivers use it: the simulated one for scripted changes at virtual times, the live
//! one for scripted changes and the control API's commands. Pure: no clock, no I/O.
//!
//! Invariant: the Manager's table, the engine, the controller and the monitor always have
//! the same query indices; a removed query keeps its slot (see `core::engine::manage`).

use super::control::Controller;
use super::observe::{Event, Observers, QueryInfo};
use crate::core::engine::{Emitted, Engine, EngineError, QueryDef, Removal};
use crate::core::schema::Nanos;
use crate::shed::ShedKind;
use crate::spec::{ChangeAction, Policy, QosPatch, QosSpec, QuerySpec, Workload};

/// A change to apply.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// A validated query (`spec::parse_query_request`, or a workload's `changes:`).
    Add(Box<QuerySpec>),
    Patch {
        query: String,
        qos: QosPatch,
    },
    Remove {
        query: String,
        flush: bool,
    },
    Policy(Policy),
}

/// What a command did.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Added { index: usize },
    Patched { index: usize, qos: QosSpec },
    Removed { index: usize, removal: Removal },
    PolicySet { name: String },
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ManageError {
    #[error("no query named `{0}` is running")]
    NoSuchQuery(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// The engine's view of query `q`.
pub fn query_def(q: &QuerySpec, qos: Option<&QosSpec>) -> QueryDef {
    QueryDef {
        name: q.name.clone(),
        plan: q.plan.clone(),
        latency_target: qos.and_then(|s| s.latency_target()),
        weight: qos.map_or(1.0, |s| s.weight),
        lossless: qos.is_some_and(|s| s.lossless),
    }
}

/// The query table of a run: every query ever registered, by index.
#[derive(Clone, Debug)]
pub struct Manager {
    workload: Workload,
    /// By index; `qos` is kept current (patches applied).
    queries: Vec<QuerySpec>,
    removed: Vec<Option<Removal>>,
    policy: String,
}

impl Manager {
    pub fn new(w: &Workload, policy: &Policy) -> Manager {
        Manager {
            queries: w.queries.clone(),
            removed: vec![None; w.queries.len()],
            workload: w.clone(),
            policy: policy.name.clone(),
        }
    }

    /// Every query by index, removed ones included.
    pub fn queries(&self) -> &[QuerySpec] {
        &self.queries
    }

    /// The final ledger of query `q`, if it was removed.
    pub fn removal(&self, q: usize) -> Option<&Removal> {
        self.removed.get(q).and_then(|r| r.as_ref())
    }

    /// The queries running now.
    pub fn running(&self) -> Vec<&QuerySpec> {
        self.queries
            .iter()
            .zip(&self.removed)
            .filter(|(_, r)| r.is_none())
            .map(|(q, _)| q)
            .collect()
    }

    /// The index of the running query `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        (0..self.queries.len())
            .find(|&i| self.removed[i].is_none() && self.queries[i].name.eq_ignore_ascii_case(name))
    }

    /// The workload the run started from (its streams are the catalog of new queries).
    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    /// The policy in force (its name).
    pub fn policy(&self) -> &str {
        &self.policy
    }

    /// Applies `cmd` at elapsed time `at` (engine time `now`) to `engine` and, if the run
    /// has one, its control loop; results a removal flushes go to `sink`. Observers get the
    /// matching event.
    #[allow(clippy::too_many_arguments)]
    pub fn apply(
        &mut self,
        cmd: Command,
        engine: &mut Engine,
        mut controller: Option<&mut Controller>,
        at: Nanos,
        now: Nanos,
        sink: impl FnMut(&Emitted<'_>),
        observers: &mut Observers<'_>,
    ) -> Result<Outcome, ManageError> {
        match cmd {
            Command::Add(spec) => {
                let index = engine.add_query(query_def(&spec, spec.qos.as_ref()))?;
                if let Some(c) = controller.as_deref_mut() {
                    c.add_query(engine, index, spec.qos.clone(), spec.cost);
                }
                let info = QueryInfo::of(&self.workload, &spec, spec.qos.as_ref());
                self.queries.push(*spec);
                self.removed.push(None);
                observers.event(Event::QueryAdded {
                    at,
                    query: index,
                    info,
                });
                Ok(Outcome::Added { index })
            }
            Command::Patch { query, qos } => {
                let index = self
                    .index_of(&query)
                    .ok_or(ManageError::NoSuchQuery(query))?;
                let spec = &mut self.queries[index];
                let new = qos.apply(spec.qos.as_ref());
                engine.patch_query(index, new.latency_target(), new.weight, new.lossless)?;
                if let Some(c) = controller.as_deref_mut() {
                    c.set_qos(engine, index, Some(new.clone()));
                }
                spec.qos = Some(new.clone());
                let info = QueryInfo::of(&self.workload, spec, Some(&new));
                observers.event(Event::QueryChanged {
                    at,
                    query: index,
                    info,
                });
                Ok(Outcome::Patched { index, qos: new })
            }
            Command::Remove { query, flush } => {
                let index = self
                    .index_of(&query)
                    .ok_or(ManageError::NoSuchQuery(query))?;
                let removal = engine.remove_query(index, flush, now, sink)?;
                if let Some(c) = controller.as_deref_mut() {
                    c.remove_query(engine, index);
                }
                self.removed[index] = Some(removal.clone());
                observers.event(Event::QueryRemoved {
                    at,
                    query: index,
                    ledger: Box::new(removal.ledger.clone()),
                    rows_dropped: removal.rows_dropped,
                });
                Ok(Outcome::Removed { index, removal })
            }
            Command::Policy(policy) => {
                let name = policy.name.clone();
                let shedding_policy = !matches!(policy.params.kind, ShedKind::None);
                if let Some(c) = controller {
                    c.set_policy(engine, policy);
                }
                self.policy = name.clone();
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

/// A change due at a time.
#[derive(Clone, Debug, PartialEq)]
pub struct Scripted {
    pub at: Nanos,
    pub command: Command,
}

/// The commands of `w`'s `changes:`, in time order; `policy` loads a policy file named
/// in a change (as written in the workload).
pub fn script<E>(
    w: &Workload,
    mut policy: impl FnMut(&str) -> Result<Policy, E>,
) -> Result<Vec<Scripted>, E> {
    w.changes
        .iter()
        .map(|c| {
            let command = match &c.action {
                ChangeAction::Add(q) => Command::Add(q.clone()),
                ChangeAction::Patch { query, qos } => Command::Patch {
                    query: query.clone(),
                    qos: qos.clone(),
                },
                ChangeAction::Remove { query, flush } => Command::Remove {
                    query: query.clone(),
                    flush: *flush,
                },
                ChangeAction::Policy(p) => Command::Policy(policy(p)?),
            };
            Ok(Scripted { at: c.at, command })
        })
        .collect()
}
