//! Shared helpers for simulated-mode tests: run a workload text under a policy text and
//! collect every control report and result row, deterministically.

#![allow(dead_code)]

use spillway::core::engine::Emitted;
use spillway::core::schema::Scalar;
use spillway::core::stats::EngineSnapshot;
use spillway::runtime::assemble::engine_for;
use spillway::runtime::control::{ControlReport, Controller};
use spillway::runtime::observe::{Observers, OnTick, TickReport};
use spillway::runtime::simulated::{Disturbances, SimControl, SimSettings, run_simulated};
use spillway::runtime::stop::StopHandle;
use spillway::spec::{self, Policy, Workload, parse_policy};

pub const MS: i64 = 1_000_000;
pub const S: i64 = 1_000_000_000;

/// One result row: query index, emission time, latency, values.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub query: usize,
    pub at: i64,
    pub latency: i64,
    pub values: Vec<Scalar>,
    /// Effective keep fraction of the row's input (1 when exact).
    pub keep: f64,
    /// 95% interval of each column, where the column is a scaled estimate.
    pub ci: Vec<Option<(f64, f64)>>,
}

pub struct Run {
    pub reports: Vec<ControlReport>,
    pub rows: Vec<Row>,
    pub snapshot: EngineSnapshot,
    pub violations: u64,
}

pub fn workload(text: &str) -> Workload {
    spec::parse(text, "test.yaml").unwrap_or_else(|e| panic!("{e}"))
}

pub fn policy(kind: &str) -> Policy {
    if kind == "none" {
        return Policy::none();
    }
    parse_policy(&format!("kind: {kind}\n"), kind).unwrap()
}

/// Runs `w` simulated under `policy`; `model_costs` makes the controller's load model use
/// these costs while the simulation charges `cost_scale` x the declared ones.
pub fn simulate(
    w: &Workload,
    policy: Policy,
    cost_scale: f64,
    model_costs: Option<Vec<f64>>,
) -> Run {
    simulate_disturbed(w, policy, cost_scale, model_costs, Disturbances::default())
}

/// `simulate` with disturbances (jitter, pauses, a neighbour, per-row work).
pub fn simulate_disturbed(
    w: &Workload,
    policy: Policy,
    cost_scale: f64,
    model_costs: Option<Vec<f64>>,
    disturbances: Disturbances,
) -> Run {
    let mut rows = Vec::new();
    let mut run = simulate_emitting(w, policy, cost_scale, model_costs, disturbances, |e| {
        for i in 0..e.batch.len() {
            rows.push(Row {
                query: e.index,
                at: e.emitted_at,
                latency: e.emitted_at - e.batch.arrival[i],
                values: e.batch.row(i, e.types),
                keep: e.approx.map_or(1.0, |a| a.keep[i]),
                ci: (0..e.types.len())
                    .map(|c| e.approx.and_then(|a| a.interval(c, i)))
                    .collect(),
            });
        }
    });
    run.rows = rows;
    run
}

/// `simulate_disturbed` handing each emitted batch to `emit` instead of keeping its rows
/// (`Run::rows` is empty): for runs too large to keep every row.
pub fn simulate_emitting(
    w: &Workload,
    policy: Policy,
    cost_scale: f64,
    model_costs: Option<Vec<f64>>,
    disturbances: Disturbances,
    emit: impl FnMut(&Emitted<'_>),
) -> Run {
    let mut engine = engine_for(w).unwrap();
    let mut settings = SimSettings::from_workload(w, None).unwrap();
    settings.cost_scale = cost_scale;
    settings.disturbances = disturbances;
    let mut controller = Controller::new(w, &mut engine, policy, settings.cores, w.engine.tick, 0);
    if let Some(c) = model_costs {
        controller = controller.with_model_costs(c);
    }
    let mut reports = Vec::new();
    let mut recorder = OnTick(|t: &TickReport<'_>| {
        if !t.last {
            reports.push(t.control.clone());
        }
    });
    let report = run_simulated(
        w,
        engine,
        &settings,
        SimControl {
            controller: Some(&mut controller),
            stop: &StopHandle::new(),
        },
        emit,
        &mut Observers::new(vec![&mut recorder]),
    );
    Run {
        reports,
        rows: Vec::new(),
        snapshot: report.snapshot,
        violations: controller.violations(),
    }
}

impl Run {
    /// p99 of result latency of query `q` for rows emitted in `[from, to)`.
    pub fn p99(&self, q: usize, from: i64, to: i64) -> i64 {
        let mut l: Vec<i64> = self
            .rows
            .iter()
            .filter(|r| r.query == q && r.at >= from && r.at < to)
            .map(|r| r.latency)
            .collect();
        if l.is_empty() {
            return 0;
        }
        l.sort_unstable();
        l[((l.len() as f64 * 0.99).ceil() as usize).clamp(1, l.len()) - 1]
    }

    /// The report of the tick at or just after `t`.
    pub fn at(&self, t: i64) -> &ControlReport {
        self.reports
            .iter()
            .find(|r| r.qos.at >= t)
            .unwrap_or_else(|| self.reports.last().unwrap())
    }
}
