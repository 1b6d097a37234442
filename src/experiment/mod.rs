//! `spillway experiment`: one workload, the same seeded input, run under every policy side
//! by side, against two references: the exact run (no capacity limit, no shedding: its
//! rows are the ground truth) and the offline optimum (`optimum`: the most utility the
//! declared capacity allows, with hindsight).
//!
//! ```text
//!  for each repeat r (seed + r):
//!    exact run (simulated, zero cost, `none`) ──▶ ExactAnswers + per-tick offered values
//!                                              ──▶ optimum (knapsack per tick)
//!    exact run again, checked against itself  ──▶ the `exact` rows (error 0)
//!    each policy (simulated, or live)         ──▶ Recorder (an Observer) + AnswerCheck
//!  figures (per run) ─▶ report (mean and spread over repeats): summary.md, CSV, SVG + PNG plots
//! ```
//!
//! Invariant: every run of one repeat sees the same input (same seed, push sources follow
//! their schedule), so differences between rows are the policies' doing.

pub mod answers;
pub mod figures;
pub mod font;
pub mod optimum;
pub mod plots;
pub mod recorder;
pub mod report;

use std::sync::{Arc, Mutex};

use answers::{AnswerCheck, AnswerError, ExactAnswers, TimeBase, widen};
use figures::{Context, Row, optimum_rows, run_rows, value_processed};
use optimum::{KnapsackQuery, optimum};
use recorder::{Recorder, TickRow};

use crate::core::engine::{Emitted, Engine, EngineError, ValueObserver};
use crate::core::schema::Nanos;
use crate::generator::mix_seed;
use crate::qos::ValueHistogram;
use crate::runtime::assemble::{Sinks, engine_for, shell_runtime, sources_for};
use crate::runtime::control::Controller;
use crate::runtime::live::{LiveRun, run_live};
use crate::runtime::observe::Observers;
use crate::runtime::outputs::Outputs;
use crate::runtime::simulated::{SimControl, SimError, SimSettings, run_simulated};
use crate::runtime::sink::Sink;
use crate::runtime::stop::StopHandle;
use crate::spec::{Policy, SourceKind, Workload};

/// Value bins the delivered and offered value utility is counted in: finer than the
/// shedder's own histogram, so the optimum is not limited to the shedder's resolution.
pub const VALUE_BINS: usize = 128;

/// A policy under the name the report gives it.
#[derive(Clone, Debug)]
pub struct NamedPolicy {
    pub label: String,
    pub policy: Policy,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Setup {
    pub policies: Vec<NamedPolicy>,
    /// Runs per policy, seeds `seed`, `seed + 1`, ...
    pub repeat: u32,
    pub seed: u64,
    /// Run the policies on the wall clock (the references stay simulated).
    pub live: bool,
    /// Overrides the workload's duration.
    pub duration: Option<Nanos>,
}

/// Why an experiment could not run.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error("{0}")]
    Sim(#[from] SimError),
    #[error("{0}")]
    Engine(#[from] EngineError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The ticks of one run, for the time series and plots.
#[derive(Debug)]
pub struct Trace {
    pub policy: String,
    pub repeat: u32,
    pub ticks: Vec<TickRow>,
}

/// Everything an experiment produced.
#[derive(Debug, Default)]
pub struct Outcome {
    pub workload: String,
    /// Policy labels in report order: `exact`, the policies, `optimum`.
    pub labels: Vec<String>,
    /// Query names, in workload order.
    pub queries: Vec<String>,
    pub repeat: u32,
    pub live: bool,
    /// One row per run and query, plus `all` per run.
    pub rows: Vec<Row>,
    pub traces: Vec<Trace>,
    /// Per policy label: every relative error of every repeat and query (error CDF).
    pub errors: Vec<(String, Vec<f64>)>,
}

/// The workload with every generator and drop point seeded from `seed`.
pub fn reseed(w: &Workload, seed: u64) -> Workload {
    let mut w = w.clone();
    w.seed = seed;
    for (i, s) in w.streams.iter_mut().enumerate() {
        match &mut s.source.kind {
            SourceKind::Generator(g) => g.seed = mix_seed(seed, i as u64),
            SourceKind::Nexmark(n) => n.seed = mix_seed(seed, i as u64),
            // Outside input is what it is; experiments on it need `--live` anyway.
            SourceKind::Tcp(_) | SourceKind::Replay(_) => {}
        }
    }
    w
}

/// Per query: value-bin utilities, cost, weight, lossless (`costs` in query order).
fn knapsack_queries(w: &Workload, costs: &[Nanos]) -> Vec<KnapsackQuery> {
    w.queries
        .iter()
        .zip(costs)
        .map(|(q, &cost)| {
            let qos = q.qos.as_ref();
            KnapsackQuery {
                bin_utility: qos.and_then(|s| s.value.as_ref()).map_or(vec![1.0], |v| {
                    ValueHistogram::new(&v.curve, VALUE_BINS)
                        .utilities()
                        .to_vec()
                }),
                cost: cost as f64,
                weight: qos.map_or(1.0, |s| s.weight),
                lossless: qos.is_some_and(|s| s.lossless),
            }
        })
        .collect()
}

/// Counts every processed tuple's value-QoS field, in the bins of `VALUE_BINS`.
fn observe_processed(w: &Workload, engine: &mut Engine) {
    for (qi, q) in w.queries.iter().enumerate() {
        if let Some(v) = q.qos.as_ref().and_then(|s| s.value.as_ref()) {
            let b = ValueHistogram::new(&v.curve, VALUE_BINS).binning();
            engine.observe_processed_values(
                qi,
                ValueObserver {
                    column: v.column,
                    lo: b.lo(),
                    hi: b.hi(),
                    width: b.width(),
                    counts: vec![0; b.len()],
                },
            );
        }
    }
}

/// One simulated run of `w` under `policy`.
fn simulate(
    w: &Workload,
    policy: Policy,
    settings: &SimSettings,
    on_emit: impl FnMut(&Emitted<'_>),
) -> Result<Recorder, ExperimentError> {
    let mut engine = engine_for(w)?;
    observe_processed(w, &mut engine);
    let stop = StopHandle::new();
    let mut controller = Controller::new(w, &mut engine, policy, settings.cores, w.engine.tick, 0);
    let mut rec = Recorder::new();
    let mut observers = Observers::new(vec![&mut rec]);
    run_simulated(
        w,
        engine,
        settings,
        SimControl {
            controller: Some(&mut controller),
            stop: &stop,
        },
        on_emit,
        &mut observers,
    );
    drop(observers);
    Ok(rec)
}

/// A sink that checks a live run's rows against the exact answers.
struct CheckSink(Arc<Mutex<AnswerCheck>>);

impl Sink for CheckSink {
    fn write(&mut self, results: &Emitted<'_>) -> std::io::Result<()> {
        if let Ok(mut c) = self.0.lock() {
            c.record(results);
        }
        Ok(())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One live run of `w` under `policy`, its rows checked against `exact`.
fn live(
    w: &Workload,
    policy: Policy,
    duration: Option<Nanos>,
    exact: Arc<ExactAnswers>,
) -> Result<(Recorder, Vec<AnswerError>), ExperimentError> {
    let mut engine = engine_for(w)?;
    observe_processed(w, &mut engine);
    let check = Arc::new(Mutex::new(AnswerCheck::new(exact, TimeBase::FirstWindow)));
    let runtime = shell_runtime()?;
    let mut sinks = Sinks {
        sinks: vec![Box::new(CheckSink(check.clone()))],
        route: vec![Some(0); w.queries.len()],
        files: Vec::new(),
    };
    let mut outputs = Outputs::new(&mut sinks, w.queries.len());
    let mut rec = Recorder::new();
    let mut observers = Observers::new(vec![&mut rec]);
    let run = LiveRun {
        policy_switch: None,
        workload: w,
        policy,
        sources: sources_for(w)?,
        duration,
        stop: StopHandle::new(),
    };
    run_live(run, &runtime, engine, &mut outputs, &mut observers);
    drop(observers);
    drop(outputs);
    drop(sinks);
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    let check = Arc::try_unwrap(check)
        .ok()
        .and_then(|m| m.into_inner().ok())
        .expect("the sink was dropped with the run");
    Ok((rec, check.finish()))
}

/// Runs the experiment; `progress` hears the label of each run as it starts.
pub fn run(
    workload: &Workload,
    setup: &Setup,
    progress: &mut dyn FnMut(&str),
) -> Result<Outcome, ExperimentError> {
    let mut base = workload.clone();
    let matching = widen(&mut base);
    let duration = setup
        .duration
        .or(base.duration)
        .ok_or(SimError::NoDuration)?;
    // The exact reference needs no declared cost: it runs at zero cost.
    let exact_settings = SimSettings {
        duration,
        costs: vec![0; base.queries.len()],
        cores: base.engine.cores,
        cost_scale: 1.0,
        disturbances: Default::default(),
    };
    let policy_settings = if setup.live {
        None
    } else {
        Some(SimSettings::from_workload(&base, Some(duration))?)
    };
    let declared: Option<Vec<Nanos>> = base.queries.iter().map(|q| q.cost).collect();
    let cores = if setup.live { 1.0 } else { base.engine.cores };
    let mut out = Outcome {
        workload: base.name.clone(),
        queries: base.queries.iter().map(|q| q.name.clone()).collect(),
        repeat: setup.repeat,
        live: setup.live,
        ..Outcome::default()
    };
    out.labels.push("exact".into());
    out.labels
        .extend(setup.policies.iter().map(|p| p.label.clone()));
    out.labels.push("optimum".into());
    out.errors = out.labels.iter().map(|l| (l.clone(), Vec::new())).collect();
    for r in 0..setup.repeat.max(1) {
        let w = reseed(&base, setup.seed.wrapping_add(r as u64));
        progress(&format!("exact (seed {})", w.seed));
        let mut exact = ExactAnswers::new(matching.clone());
        let exact_rec = simulate(&w, Policy::none(), &exact_settings, |e| exact.record(e))?;
        let exact = Arc::new(exact);
        let costs = declared.clone().unwrap_or_else(|| vec![0; w.queries.len()]);
        let knapsack = knapsack_queries(&w, &costs);
        let offered_value = value_processed(&exact_rec, &knapsack);
        let opt = declared
            .is_some()
            .then(|| optimum(&exact_rec.ticks, &knapsack, cores));
        let ctx = Context {
            workload: &w,
            knapsack: &knapsack,
            optimum: opt.as_ref(),
            offered_value: &offered_value,
            cores: base.engine.cores,
        };
        // The exact run again, checked against the first: error 0 unless the run is not
        // deterministic or the matching is wrong.
        let mut check = AnswerCheck::new(exact.clone(), TimeBase::Absolute);
        let again = simulate(&w, Policy::none(), &exact_settings, |e| check.record(e))?;
        let push = |label: &str, rec: &Recorder, errors: Vec<AnswerError>, out: &mut Outcome| {
            let pooled = out.errors.iter_mut().find(|(l, _)| l == label);
            if let Some((_, v)) = pooled {
                v.extend(errors.iter().flat_map(|e| e.errors.iter().copied()));
            }
            let mut rows = run_rows(label, rec, &errors, &ctx);
            if label == "exact" {
                // Its figures describe an unlimited machine: no share of capacity.
                rows.iter_mut()
                    .for_each(|row| row.values[figures::metric("busy_share")] = f64::NAN);
            }
            rows.iter_mut().for_each(|row| row.repeat = r);
            out.rows.extend(rows);
            out.traces.push(Trace {
                policy: label.into(),
                repeat: r,
                ticks: rec.ticks.clone(),
            });
        };
        push("exact", &again, check.finish(), &mut out);
        for p in &setup.policies {
            progress(&format!("{} (seed {})", p.label, w.seed));
            let (rec, errors) = match &policy_settings {
                Some(settings) => {
                    let mut check = AnswerCheck::new(exact.clone(), TimeBase::Absolute);
                    let rec = simulate(&w, p.policy.clone(), settings, |e| check.record(e))?;
                    (rec, check.finish())
                }
                None => live(&w, p.policy.clone(), Some(duration), exact.clone())?,
            };
            push(&p.label, &rec, errors, &mut out);
        }
        if let Some(o) = &opt {
            let mut rows = optimum_rows(&ctx, o);
            rows.iter_mut().for_each(|row| row.repeat = r);
            out.rows.extend(rows);
        }
    }
    Ok(out)
}
