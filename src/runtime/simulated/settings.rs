//! A simulated run's settings, read from the workload and checked before the run: its
//! duration, each query's declared cost, the cores, and the disturbances that make the
//! virtual machine behave like a live one.

use crate::core::schema::Nanos;
use crate::spec::{Flow, Workload};

/// A simulated run's settings, checked by `SimSettings::from_workload`.
#[derive(Clone, Debug, PartialEq)]
pub struct SimSettings {
    /// Virtual run time; sources stop at it, then the queues drain.
    pub duration: Nanos,
    /// Per-query cost of one input tuple in virtual nanoseconds, in query order.
    pub costs: Vec<Nanos>,
    /// Processing capacity as a number of cores.
    pub cores: f64,
    /// True cost = declared cost x this (1 normally). Tests set it to make the declared
    /// costs, which a controller may use as its model, wrong on purpose.
    pub cost_scale: f64,
    /// What a live machine does to a run; none by default.
    pub disturbances: Disturbances,
}

/// Disturbances of a simulated run. Each is off at its default; all random draws come from
/// `seed`, so the same settings give the same run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Disturbances {
    /// Each turn's cost is the declared cost times a factor uniform in
    /// `[1 - jitter, 1 + jitter]`, `jitter` in `[0, 1)`.
    pub cost_jitter: f64,
    /// Every `pause_every` the engine thread stops for `pause` inside a turn (descheduled,
    /// a page fault storm, a GC in a neighbour): the time passes and counts as the turn's
    /// busy time, as it would live. 0 = never.
    pub pause_every: Nanos,
    pub pause: Nanos,
    /// A neighbour takes capacity in `[from, to)`: the engine runs at `share` of its speed
    /// there (0.5 halves capacity), so every turn takes `1 / share` as long.
    pub neighbour: Option<Neighbour>,
    /// Per query (in query order; missing = 0), work per result row it emits (window
    /// closing, sinks), charged to it: output-heavy windows, whose cost does not shrink
    /// with the input.
    pub row_costs: Vec<Nanos>,
    pub seed: u64,
}

/// A neighbour process taking part of the machine for a while.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Neighbour {
    pub from: Nanos,
    pub to: Nanos,
    /// Share of its speed the engine keeps, in `(0, 1]`.
    pub share: f64,
}

impl Disturbances {
    /// Speed factor at virtual time `t` (1 unless a neighbour is active).
    pub(super) fn share_at(&self, t: Nanos) -> f64 {
        match self.neighbour {
            Some(n) if t >= n.from && t < n.to => n.share.clamp(1e-3, 1.0),
            _ => 1.0,
        }
    }
}

impl SimSettings {
    /// Settings for `w`, or what is missing for simulated mode.
    pub fn from_workload(w: &Workload, duration: Option<Nanos>) -> Result<SimSettings, SimError> {
        // The first thing to fix: a stream simulated mode cannot run at all.
        if let Some(s) = w.streams.iter().find(|s| s.generator().is_none()) {
            return Err(SimError::NotGenerated(
                s.name.clone(),
                s.source.kind.label(),
            ));
        }
        let added = w.changes.iter().filter_map(|c| match &c.action {
            crate::spec::ChangeAction::Add(q) => Some(&**q),
            _ => None,
        });
        let missing: Vec<String> = w
            .queries
            .iter()
            .chain(added)
            .filter(|q| q.cost.is_none())
            .map(|q| q.name.clone())
            .collect();
        if !missing.is_empty() {
            return Err(SimError::MissingCost(missing.join(", ")));
        }
        if let Some(s) = w.streams.iter().find(|s| {
            s.generator().is_some_and(|g| g.rate.is_unlimited()) && s.source.flow == Flow::Push
        }) {
            return Err(SimError::UnlimitedRate(s.name.clone()));
        }
        let duration = duration.or(w.duration).ok_or(SimError::NoDuration)?;
        Ok(SimSettings {
            duration,
            costs: w.queries.iter().map(|q| q.cost.unwrap_or(0)).collect(),
            cores: w.engine.cores,
            cost_scale: 1.0,
            disturbances: Disturbances::default(),
        })
    }
}

impl SimError {
    /// The dotted path of the setting the refusal is about (`SpecError::located` finds
    /// its line and column), or `None` when it is about something not written.
    pub fn path(&self) -> Option<String> {
        match self {
            SimError::MissingCost(names) => {
                let first = names.split(", ").next().unwrap_or_default();
                Some(format!("queries.{first}"))
            }
            SimError::UnlimitedRate(s) => Some(format!("streams.{s}.source.generator.rate")),
            SimError::NotGenerated(s, _) => Some(format!("streams.{s}.source")),
            SimError::NoDuration => None,
        }
    }
}

/// Why a workload cannot run simulated.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SimError {
    #[error(
        "simulated mode needs a per-tuple `cost` (e.g. `cost: 200ns`) on every query; missing on: {0}; `spillway calibrate` measures them on this machine"
    )]
    MissingCost(String),
    #[error(
        "stream `{0}` has rate `unlimited` with `flow: push`, which has no meaning on virtual time; give it a rate, or `flow: pull` (it then offers what the engine takes)"
    )]
    UnlimitedRate(String),
    #[error(
        "stream `{0}` has a `{1}` source, which reads the outside world on the wall clock; simulated mode runs generated streams only: run it live, or give the stream a `generator`"
    )]
    NotGenerated(String, &'static str),
    #[error("simulated mode needs a `duration` (in the workload or --duration)")]
    NoDuration,
}
