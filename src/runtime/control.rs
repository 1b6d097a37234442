//! The control loop: each tick the monitor measures, the shedder plans from the
//! measurements and the policy, and the plan is installed at the engine's drop points. The
//! loop only sets numbers; it never touches tuples.

use crate::core::drop::{DropRule, WindowRule};
use crate::core::engine::{DropRules, Engine};
use crate::core::schema::Nanos;
use crate::runtime::controls::PolicySwitch;
use crate::runtime::monitor::{Monitor, QosSnapshot};
use crate::shed::{IDLE_TARGET, QueryDrop, Rows, ShedKind, ShedPlan, ShedState, plan};
use crate::spec::{Policy, QosSpec, Workload};

mod apply;
mod backlog;
mod drain;
mod guard;
mod queries;
mod rest;
mod rows_memory;
mod shed_input;
mod templates;
mod thin;

use crate::qos::non_negative;
use guard::{hold_guard_cuts, streams_of};
use shed_input::Sources;
use templates::{key_columns, rows_shape, window_rule};

pub use guard::GUARD;

/// Measurements plus the plan in force, published every tick.
#[derive(Clone, Debug)]
pub struct ControlReport {
    pub qos: QosSnapshot,
    pub plan: ShedPlan,
    /// Keep fraction per stream drop point and per query drop point as installed
    /// (1 = keeps everything; semantic drops report their expected delivered share).
    pub stream_keep: Vec<f64>,
    pub query_keep: Vec<f64>,
    /// Queued tuples thinned to this plan's keep when it was installed (`thin.rs`).
    pub thinned: u64,
    /// The same per query (empty when none were): counted as dropped in the next tick's
    /// ledger, though offered at earlier ticks.
    pub thinned_queries: Vec<u64>,
}

pub struct Controller {
    policy: Policy,
    state: ShedState,
    monitor: Monitor,
    /// `C`: ns of processing per second.
    capacity: f64,
    /// Per-query cost the load model assumes; `None` uses the measured cost.
    /// NaN for a query added without a declared cost (its measured cost is used).
    model_costs: Option<Vec<f64>>,
    /// Per query, the QoS in force (patched live); `None` for a query without QoS.
    qos: Vec<Option<QosSpec>>,
    /// Per query: left the run (its slot stays; indices match the engine's).
    removed: Vec<bool>,
    window_rules: Vec<Option<WindowRule>>,
    /// How each query's emitted rows follow its input (from its plan).
    rows_shapes: Vec<Rows>,
    /// The key columns of each grouped aggregate over plain columns (for key drops).
    key_columns: Vec<Option<Vec<usize>>>,
    /// The work per second the last plan predicted its admitted input to bring.
    predicted: Option<f64>,
    /// Queue depths and time of the last tick, for the work that arrived since.
    prev_queued: Vec<f64>,
    /// The queued work's floor and growth over the last ticks, for the planner.
    backlog: backlog::BacklogTrend,
    prev_at: Nanos,
    /// Over shedding ticks: the sum of |arrived - predicted| work and of predicted work.
    error_sum: f64,
    error_weight: f64,
    /// Per query: its latency target (ns), for the inner guard.
    targets: Vec<Option<Nanos>>,
    /// Per query: the backlog (ns of queued work) when the inner guard last cut it in
    /// this control tick, and how often it did; cleared by `tick` (`guard.rs`).
    guard_cut: Vec<(f64, u32)>,
    /// Cuts the inner guard made so far.
    guard_cuts: u64,
    /// Queued tuples thinned to a plan's keep so far (`thin.rs`).
    thinned: u64,
    /// Per query: ns of work per queued tuple as last measured (the guard's backlog).
    guard_costs: Vec<f64>,
    /// Per query: tuples/s it processed over the last second (the guard's Little's law).
    guard_rates: Vec<f64>,
    /// The queries one guard check cuts (scratch, reused).
    guard_late: Vec<usize>,
    installed_queue: bool,
    history: RunHistory,
    /// The last report, whose plan a final `measure` repeats.
    last: Option<ControlReport>,
    /// Where a policy change asked for during the run (the dashboard's `s`) comes from.
    switch: Option<PolicySwitch>,
    /// Consecutive ticks that changed nothing but the time, and the planner state before
    /// the last one (`rest.rs`).
    rest: rest::Rest,
    /// Each grouped window's last informative emission (`rows_memory.rs`).
    rows_memory: rows_memory::RowsMemory,
    /// Per query, a ceiling on its keep from its own queue's growth (`drain.rs`).
    ceilings: drain::Ceilings,
}

/// What the control loop saw over a whole run, for the summary.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunHistory {
    pub ticks: u64,
    /// Ticks in the shedding state.
    pub shedding_ticks: u64,
    /// Per stream drop point: the lowest keep fraction installed.
    pub stream_min_keep: Vec<f64>,
    /// Per query drop point: the lowest keep fraction installed.
    pub query_min_keep: Vec<f64>,
    /// Per query: utility summed over ticks (for the mean) and its minimum.
    pub utility_sum: Vec<f64>,
    pub utility_min: Vec<f64>,
    /// Per query: ticks it was controlled for (from its start or addition to its removal),
    /// what its utility mean divides by.
    pub utility_ticks: Vec<u64>,
    /// Times the policy was changed during the run (the dashboard's `s` key).
    pub policy_switches: u64,
}

impl Controller {
    /// A controller for `w` on `engine`; `cores` sets the capacity, `tick` the control
    /// period (the latency window spans one second of ticks).
    pub fn new(
        w: &Workload,
        engine: &mut Engine,
        policy: Policy,
        cores: f64,
        tick: Nanos,
        start: Nanos,
    ) -> Controller {
        let window_ticks = (1_000_000_000 / tick.max(1)).max(1) as usize;
        let window_rules = (0..engine.query_count())
            .map(|q| window_rule(engine, q))
            .collect();
        Controller {
            policy,
            state: ShedState::new(),
            monitor: Monitor::new(w, engine, window_ticks, start),
            capacity: cores * 1e9,
            model_costs: None,
            qos: w.queries.iter().map(|q| q.qos.clone()).collect(),
            removed: vec![false; w.queries.len()],
            window_rules,
            rows_shapes: (0..engine.query_count())
                .map(|q| rows_shape(engine, q))
                .collect(),
            key_columns: (0..engine.query_count())
                .map(|q| key_columns(engine, q))
                .collect(),
            predicted: None,
            prev_queued: vec![0.0; engine.query_count()],
            backlog: backlog::BacklogTrend::default(),
            prev_at: start,
            error_sum: 0.0,
            error_weight: 0.0,
            targets: w
                .queries
                .iter()
                .map(|q| q.qos.as_ref().and_then(|s| s.latency).map(|l| l.target))
                .collect(),
            guard_cut: Vec::new(),
            guard_cuts: 0,
            thinned: 0,
            guard_costs: Vec::new(),
            guard_rates: Vec::new(),
            guard_late: Vec::new(),
            installed_queue: false,
            last: None,
            switch: None,
            rest: rest::Rest::default(),
            rows_memory: rows_memory::RowsMemory::default(),
            ceilings: drain::Ceilings::default(),
            history: RunHistory {
                stream_min_keep: vec![1.0; engine.stream_count()],
                query_min_keep: vec![1.0; engine.query_count()],
                utility_sum: vec![0.0; engine.query_count()],
                utility_min: vec![1.0; engine.query_count()],
                utility_ticks: vec![0; engine.query_count()],
                ..RunHistory::default()
            },
        }
    }

    /// Makes the load model use these per-query costs (ns/tuple) instead of measured ones.
    pub fn with_model_costs(mut self, costs: Vec<f64>) -> Controller {
        self.model_costs = Some(costs);
        self
    }

    /// Takes policy changes from `switch` at the start of each tick.
    pub fn with_switch(mut self, switch: Option<PolicySwitch>) -> Controller {
        self.switch = switch;
        self
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The report of the last tick, if there was one.
    pub fn last_report(&self) -> Option<&ControlReport> {
        self.last.as_ref()
    }

    /// The run so far, as the summary reports it.
    pub fn history(&self) -> &RunHistory {
        &self.history
    }

    pub fn violations(&self) -> u64 {
        self.monitor.violations()
    }

    /// Per query, the result latencies recorded during the last tick.
    pub fn tick_latency(&self) -> Vec<&hdrhistogram::Histogram<u64>> {
        (0..self.qos.len())
            .map(|q| self.monitor.tick_latency(q))
            .collect()
    }

    /// Cuts the inner guard made so far.
    pub fn guard_cuts(&self) -> u64 {
        self.guard_cuts
    }

    /// Queued tuples thinned to a plan's keep so far (counted as shed at random).
    pub fn thinned(&self) -> u64 {
        self.thinned
    }

    /// Measures the tick ending at `now` without planning (the run's last report, after
    /// the final flush): the plan in force is repeated and the history is unchanged.
    pub fn measure(&mut self, engine: &mut Engine, now: Nanos) -> ControlReport {
        let qos = self.monitor.tick(engine, now);
        match self.last.take() {
            Some(mut r) => {
                r.qos = qos;
                r.thinned = 0;
                r.thinned_queries.clear();
                r
            }
            None => ControlReport {
                thinned: 0,
                thinned_queries: Vec::new(),
                plan: ShedPlan::keep_all(engine.stream_count(), engine.query_count()),
                stream_keep: vec![1.0; engine.stream_count()],
                query_keep: vec![1.0; engine.query_count()],
                qos,
            },
        }
    }

    /// Measures the tick ending at `now`, plans, installs, and reports. The query set and
    /// QoS are the controller's own (as added, patched and removed since `new`); `_w` is
    /// kept for callers written before queries could change.
    pub fn tick(&mut self, engine: &mut Engine, now: Nanos, _w: &Workload) -> ControlReport {
        if let Some(p) = self.switch.as_ref().and_then(PolicySwitch::take) {
            self.set_policy(engine, p);
        }
        let mut qos = self.monitor.tick(engine, now);
        // The queries the inner guard cut since the last tick: this plan keeps them cut.
        let guarded = std::mem::take(&mut self.guard_cut);
        // What the guard reads between ticks: finite and non-negative, 0 when unknown.
        self.guard_rates.clear();
        self.guard_rates
            .extend(qos.queries.iter().map(|q| non_negative(q.rate_in)));
        self.guard_costs.clear();
        self.guard_costs
            .extend(qos.queries.iter().map(|q| non_negative(q.cost)));
        if !self.installed_queue {
            if let Some(c) = self.policy.queue_capacity {
                engine.install(&DropRules {
                    streams: vec![DropRule::KeepAll; engine.stream_count()],
                    queries: vec![DropRule::KeepAll; engine.query_count()],
                    queue_capacity: Some(c),
                });
            }
            self.installed_queue = true;
        }
        let fixed: f64 = if self.model_costs.is_some() {
            0.0
        } else {
            qos.queries.iter().map(|q| q.fixed_cost).sum()
        };
        self.check_model(&mut qos, now);
        let sources = Sources {
            model_costs: self.model_costs.as_deref(),
            removed: &self.removed,
            specs: &self.qos,
            key_columns: &self.key_columns,
            rows_shapes: &self.rows_shapes,
            window_rules: &self.window_rules,
            monitor: &self.monitor,
            capacity: self.capacity,
            policy: self.policy.params,
        };
        let backlog = self.backlog.note(now, sources.queued_work(&qos));
        let remembered = sources.remembered(&qos, &mut self.rows_memory);
        let input = sources.input(&qos, backlog, &remembered);
        let mut p = plan(&input, &mut self.state);
        hold_guard_cuts(engine, &mut p, &guarded, &streams_of(&qos));
        if !matches!(self.policy.params.kind, ShedKind::None | ShedKind::TailDrop) {
            let thinned = self
                .last
                .as_ref()
                .map(|r| r.thinned_queries.as_slice())
                .unwrap_or_default();
            // At the model's scale, as the plan's loads are.
            let removed = self.ceilings.apply(
                &qos,
                &self.qos,
                self.model_costs.as_deref(),
                thinned,
                qos.idle > IDLE_TARGET * self.capacity,
                &mut p,
            ) * p.model_scale;
            p.expected_input = (p.expected_input - removed).max(0.0);
            p.expected_load = (p.expected_load - removed).max(0.0);
            // What the ceilings took out, the model under-priced: the next target is lower
            // by it, a small step a tick (`drain::HAND_BACK`), and the feedback carries on
            // from there.
            if p.target > 0.0 {
                self.state.lower_correction(
                    removed / p.target,
                    drain::HAND_BACK,
                    self.policy.params.correction_min,
                );
            }
        }
        // Work the admitted input is predicted to bring over the next tick, with the fixed
        // work the capacity was reduced by.
        self.predicted = Some(p.expected_input + fixed);
        let rules = self.rules(&p);
        let stream_keep = p.streams.clone();
        let query_keep: Vec<f64> = p
            .queries
            .iter()
            .map(|d| match d {
                QueryDrop::KeepAll => 1.0,
                QueryDrop::Random { keep }
                | QueryDrop::Window { keep }
                | QueryDrop::Keys { keep } => *keep,
                QueryDrop::Semantic(s) => s.delivered,
            })
            .collect();
        let mut by_query = Vec::new();
        if !matches!(self.policy.params.kind, ShedKind::None | ShedKind::TailDrop) {
            engine.install(&rules);
            by_query = self.thin_backlog(engine, &p, &streams_of(&qos), now);
        }
        let thinned = by_query.iter().sum();
        let mut report = self.record(qos, p, stream_keep, query_keep);
        report.thinned = thinned;
        if let Some(last) = self.last.as_mut() {
            last.thinned = thinned;
            last.thinned_queries.clone_from(&by_query);
        }
        report.thinned_queries = by_query;
        report
    }
}
