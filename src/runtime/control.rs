//! The control loop: each tick the monitor measures, the shedder plans from the
//! measurements and the policy, and the plan is installed at the engine's drop points. The
//! loop only sets numbers; it never touches tuples.

use crate::core::drop::{DropRule, ValueBins, WindowRule};
use crate::core::engine::{DropRules, Engine};
use crate::core::expr::Expr;
use crate::core::plan::{PlanBody, TimeSource};
use crate::core::schema::Nanos;
use crate::runtime::monitor::{Monitor, QosSnapshot};
use crate::shed::{
    LatencyInput, QueryDrop, QueryInput, ShedInput, ShedKind, ShedPlan, ShedState, StreamInput,
    ValueQos, plan,
};
use crate::spec::{Policy, Workload};

/// Measurements plus the plan in force, published every tick.
#[derive(Clone, Debug)]
pub struct ControlReport {
    pub qos: QosSnapshot,
    pub plan: ShedPlan,
    /// Keep fraction per stream drop point and per query drop point as installed
    /// (1 = keeps everything; semantic drops report their expected delivered share).
    pub stream_keep: Vec<f64>,
    pub query_keep: Vec<f64>,
}

pub struct Controller {
    policy: Policy,
    state: ShedState,
    monitor: Monitor,
    /// `C`: ns of processing per second.
    capacity: f64,
    /// Per-query cost the load model assumes; `None` uses the measured cost.
    model_costs: Option<Vec<f64>>,
    lossless: Vec<bool>,
    window_rules: Vec<Option<WindowRule>>,
    installed_queue: bool,
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
            lossless: w
                .queries
                .iter()
                .map(|q| q.qos.as_ref().is_some_and(|s| s.lossless))
                .collect(),
            window_rules,
            installed_queue: false,
        }
    }

    /// Makes the load model use these per-query costs (ns/tuple) instead of measured ones.
    pub fn with_model_costs(mut self, costs: Vec<f64>) -> Controller {
        self.model_costs = Some(costs);
        self
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn violations(&self) -> u64 {
        self.monitor.violations()
    }

    /// Measures the tick ending at `now`, plans, installs, and reports.
    pub fn tick(&mut self, engine: &mut Engine, now: Nanos, w: &Workload) -> ControlReport {
        let qos = self.monitor.tick(engine, now);
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
        let input = ShedInput {
            streams: qos
                .streams
                .iter()
                .map(|s| StreamInput { rate: s.rate })
                .collect(),
            queries: qos
                .queries
                .iter()
                .enumerate()
                .map(|(qi, q)| {
                    let spec = w.queries[qi].qos.as_ref();
                    let cost = self
                        .model_costs
                        .as_ref()
                        .and_then(|c| c.get(qi).copied())
                        .unwrap_or(q.cost);
                    QueryInput {
                        stream: q.stream,
                        cost,
                        queued: q.queued as f64,
                        loss: spec.and_then(|s| s.loss_tolerance.as_ref()),
                        weight: spec.map_or(1.0, |s| s.weight),
                        lossless: self.lossless[qi],
                        value: spec.and_then(|s| s.value.as_ref()).and_then(|v| {
                            self.monitor.value_histogram(qi).map(|h| ValueQos {
                                column: v.column,
                                histogram: h,
                            })
                        }),
                        windowed: self.window_rules[qi].is_some(),
                        latency: q.target.map(|t| LatencyInput {
                            target: t as f64,
                            measured: q.latency.map(|l| l as f64),
                        }),
                    }
                })
                .collect(),
            capacity: self.capacity,
            policy: self.policy.params,
        };
        let p = plan(&input, &mut self.state);
        let rules = self.rules(&p);
        let stream_keep = p.streams.clone();
        let query_keep = p
            .queries
            .iter()
            .map(|d| match d {
                QueryDrop::KeepAll => 1.0,
                QueryDrop::Random { keep } | QueryDrop::Window { keep } => *keep,
                QueryDrop::Semantic(s) => s.delivered,
            })
            .collect();
        if !matches!(self.policy.params.kind, ShedKind::None | ShedKind::TailDrop) {
            engine.install(&rules);
        }
        ControlReport {
            qos,
            plan: p,
            stream_keep,
            query_keep,
        }
    }

    /// The engine rules that realise `p`.
    fn rules(&self, p: &ShedPlan) -> DropRules {
        DropRules {
            streams: p
                .streams
                .iter()
                .map(|&k| {
                    if k >= 1.0 {
                        DropRule::KeepAll
                    } else {
                        DropRule::Random { keep: k }
                    }
                })
                .collect(),
            queries: p
                .queries
                .iter()
                .enumerate()
                .map(|(qi, d)| match d {
                    QueryDrop::KeepAll => DropRule::KeepAll,
                    QueryDrop::Random { keep } => DropRule::Random { keep: *keep },
                    QueryDrop::Semantic(s) => DropRule::Semantic(ValueBins {
                        column: s.column,
                        lo: s.binning.lo(),
                        width: s.binning.width(),
                        keep: s.keep.clone(),
                    }),
                    // Window-aware needs a tumbling window over column keys; other
                    // queries get the same keep fraction at random.
                    QueryDrop::Window { keep } => match &self.window_rules[qi] {
                        Some(r) => DropRule::Window(WindowRule {
                            keep: *keep,
                            ..r.clone()
                        }),
                        None => DropRule::Random { keep: *keep },
                    },
                })
                .collect(),
            queue_capacity: None,
        }
    }
}

/// The window rule template of query `q`, if it is a tumbling aggregate over column keys.
fn window_rule(engine: &Engine, q: usize) -> Option<WindowRule> {
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
