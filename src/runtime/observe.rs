//! The observer seam: everything that watches a run (the status line, the Prometheus
//! exporter, the terminal dashboard, an experiment recorder, a test) is an `Observer`. The
//! drivers hand every observer the same per-tick report and the same discrete events, and
//! print nothing themselves; adding a way to watch never means editing a driver.
//!
//! Invariant: every control tick of a run reaches every observer exactly once, in order,
//! followed by one final tick (after the last flush, `TickReport::last`) and then
//! `Event::RunEnded`, whose summary is built from that final tick's figures.

use hdrhistogram::Histogram;

use super::control::{ControlReport, RunHistory};
use super::stop::StopReason;
use crate::core::schema::Nanos;
use crate::core::stats::{EngineSnapshot, QuerySnapshot};
use crate::shed::ShedKind;
use crate::spec::{Flow, Policy, QosSpec, QuerySpec, Workload};

/// Receives a run's ticks and events. Both methods default to doing nothing.
pub trait Observer {
    /// Every control tick, after the shedder installed its plan.
    fn on_tick(&mut self, _tick: &TickReport<'_>) {}
    /// A discrete event: run start and end, plan changes, QoS violations, malformed input.
    fn on_event(&mut self, _event: &Event) {}
}

/// Live (wall clock) or simulated (virtual time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunMode {
    Live,
    Simulated,
}

impl RunMode {
    pub fn label(self) -> &'static str {
        match self {
            RunMode::Live => "live",
            RunMode::Simulated => "simulated",
        }
    }
}

/// What a run is, sent once at its start.
#[derive(Clone, Debug, PartialEq)]
pub struct RunInfo {
    pub workload: String,
    pub mode: RunMode,
    pub policy: String,
    /// Whether the policy sheds at all (`none` does not).
    pub shedding_policy: bool,
    /// Planned length (run time for live, virtual time for simulated); `None`: until
    /// stopped or the sources end.
    pub duration: Option<Nanos>,
    /// Processing capacity in cores (live: one engine thread).
    pub cores: f64,
    pub streams: Vec<StreamInfo>,
    pub queries: Vec<QueryInfo>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StreamInfo {
    pub name: String,
    pub flow: Flow,
    /// `generator`, later `tcp`, `replay`, ...
    pub source: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct QueryInfo {
    pub name: String,
    pub stream: usize,
    /// The latency target and its percentile (e.g. 99.0), if the query declares one.
    pub target: Option<(Nanos, f64)>,
    pub weight: f64,
}

impl RunInfo {
    /// The description of a run of `w` under `policy`; `sources` names each stream's
    /// source kind.
    pub fn new(
        w: &Workload,
        mode: RunMode,
        policy: &Policy,
        cores: f64,
        duration: Option<Nanos>,
        sources: &[&str],
    ) -> RunInfo {
        RunInfo {
            workload: w.name.clone(),
            mode,
            policy: policy.name.clone(),
            shedding_policy: !matches!(policy.params.kind, ShedKind::None),
            duration,
            cores,
            streams: w
                .streams
                .iter()
                .enumerate()
                .map(|(i, s)| StreamInfo {
                    name: s.name.clone(),
                    flow: s.source.flow,
                    source: sources.get(i).copied().unwrap_or("generator").to_string(),
                })
                .collect(),
            queries: w
                .queries
                .iter()
                .map(|q| QueryInfo::of(w, q, q.qos.as_ref()))
                .collect(),
        }
    }
}

impl QueryInfo {
    /// How observers see query `q` of `w` under `qos`.
    pub fn of(w: &Workload, q: &QuerySpec, qos: Option<&QosSpec>) -> QueryInfo {
        QueryInfo {
            name: q.name.clone(),
            stream: w
                .streams
                .iter()
                .position(|s| s.name.eq_ignore_ascii_case(&q.plan.stream))
                .unwrap_or(0),
            target: qos
                .and_then(|s| s.latency)
                .map(|l| (l.target, l.percentile)),
            weight: qos.map_or(1.0, |s| s.weight),
        }
    }
}

/// One control tick as observers see it.
pub struct TickReport<'a> {
    /// Time since the run started (wall or virtual).
    pub elapsed: Nanos,
    /// The monitor's measurements, the plan in force and the installed keep fractions.
    pub control: &'a ControlReport,
    /// Per query: every result latency recorded during this tick (ns), a full HDR
    /// histogram; exporters fold these into their own buckets.
    pub tick_latency: &'a [&'a Histogram<u64>],
    /// True for the report taken after the run's final flush (no plan is made from it).
    pub last: bool,
}

/// Something that happened at a moment of the run; `at` is the elapsed time.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    RunStarted(RunInfo),
    /// A stop was requested; `abort` when it was the second request.
    StopRequested {
        at: Nanos,
        reason: StopReason,
        abort: bool,
    },
    /// The shedder started or stopped shedding, or moved a keep fraction by more than
    /// `PLAN_STEP`.
    PlanChanged {
        at: Nanos,
        shedding: bool,
        stream_keep: Vec<f64>,
        query_keep: Vec<f64>,
    },
    /// Query `query`'s latency (at its target's percentile, over the last ticks) went over
    /// its target.
    ViolationBegan {
        at: Nanos,
        query: usize,
        latency: Nanos,
        target: Nanos,
    },
    ViolationEnded {
        at: Nanos,
        query: usize,
        lasted: Nanos,
    },
    /// Input of `stream` a source could not parse: `count` more since the last such
    /// event, and one sample reason (naming the connection or line where there is one).
    Malformed {
        at: Nanos,
        stream: usize,
        count: u64,
        sample: String,
    },
    /// A query's sink failed; its later rows are counted as undelivered.
    SinkFailed {
        at: Nanos,
        query: usize,
        message: String,
    },
    /// A query joined the running instance; its index is the next free one.
    QueryAdded {
        at: Nanos,
        query: usize,
        info: QueryInfo,
    },
    /// A query's QoS changed (the shedder replans with it at the next tick).
    QueryChanged {
        at: Nanos,
        query: usize,
        info: QueryInfo,
    },
    /// A query left the running instance with this final, balanced ledger; `rows_dropped`
    /// counts result rows of open windows discarded (removal without flush).
    QueryRemoved {
        at: Nanos,
        query: usize,
        ledger: Box<QuerySnapshot>,
        rows_dropped: u64,
    },
    /// The shedding policy was switched to `policy` (its name).
    PolicyChanged {
        at: Nanos,
        policy: String,
        shedding_policy: bool,
    },
    /// The load model was refitted: the feedback correction had sat at a bound, so the
    /// model's costs are now multiplied by `scale` and the correction restarts at 1.
    ModelRefit {
        at: Nanos,
        scale: f64,
    },
    /// Dropping input tuples cannot bring the load under the target (work that does not
    /// shrink with the input, like emitting window rows, is too large); the shedder drops
    /// whole windows and pauses `paused` (query indices). `InputDropsSufficient` ends it.
    InputDropsInsufficient {
        at: Nanos,
        paused: Vec<usize>,
    },
    InputDropsSufficient {
        at: Nanos,
    },
    RunEnded(Box<RunSummary>),
}

/// How a run ended: what the summary prints and the CLI's exit code follows.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    pub workload: String,
    pub mode: RunMode,
    /// Run time (virtual for simulated runs).
    pub elapsed: Nanos,
    /// Wall time the run took (equal to `elapsed` live).
    pub wall: Nanos,
    /// The engine's counters after the final flush.
    pub snapshot: EngineSnapshot,
    /// The control loop's view of the run; shown when the policy sheds.
    pub history: RunHistory,
    pub shedding_policy: bool,
    /// Why the run stopped early, if it did.
    pub stopped: Option<StopReason>,
    /// Left without draining (a second stop request).
    pub aborted: bool,
    /// Control ticks whose conservation ledger did not balance (0 unless there is a bug).
    pub ledger_violations: u64,
    /// Rows each query's sink failed to write (`SinkFailed`), by query.
    pub undelivered: Vec<u64>,
}

/// Keep fractions that move by less than this are not announced as a plan change.
pub const PLAN_STEP: f64 = 0.05;

/// Turns successive control reports into discrete events: plan changes and QoS violations.
#[derive(Debug, Default)]
pub struct EventTracker {
    shedding: bool,
    stream_keep: Vec<f64>,
    query_keep: Vec<f64>,
    /// Per query: when its current violation began.
    violating: Vec<Option<Nanos>>,
    /// Whether input drops were last reported insufficient, and what was paused.
    insufficient: Option<Vec<usize>>,
}

impl EventTracker {
    /// The events `r`, reported at `at`, implies since the previous report.
    pub fn events(&mut self, r: &ControlReport, at: Nanos, out: &mut Vec<Event>) {
        let moved = |a: &[f64], b: &[f64]| {
            a.len() != b.len() || a.iter().zip(b).any(|(x, y)| (x - y).abs() > PLAN_STEP)
        };
        if r.plan.shedding != self.shedding
            || moved(&r.stream_keep, &self.stream_keep)
            || moved(&r.query_keep, &self.query_keep)
        {
            let first = self.stream_keep.is_empty() && self.query_keep.is_empty();
            self.shedding = r.plan.shedding;
            self.stream_keep = r.stream_keep.clone();
            self.query_keep = r.query_keep.clone();
            // The initial keep-everything plan is not a change.
            let keeps_all = r.stream_keep.iter().chain(&r.query_keep).all(|k| *k >= 1.0);
            if !(first && keeps_all && !r.plan.shedding) {
                out.push(Event::PlanChanged {
                    at,
                    shedding: r.plan.shedding,
                    stream_keep: r.stream_keep.clone(),
                    query_keep: r.query_keep.clone(),
                });
            }
        }
        if let Some(scale) = r.plan.refit {
            out.push(Event::ModelRefit { at, scale });
        }
        let short = r.plan.shedding && r.plan.input_insufficient;
        match (&self.insufficient, short) {
            (None, true) => {
                self.insufficient = Some(r.plan.paused.clone());
                out.push(Event::InputDropsInsufficient {
                    at,
                    paused: r.plan.paused.clone(),
                });
            }
            (Some(was), true) if *was != r.plan.paused => {
                self.insufficient = Some(r.plan.paused.clone());
                out.push(Event::InputDropsInsufficient {
                    at,
                    paused: r.plan.paused.clone(),
                });
            }
            (Some(_), false) => {
                self.insufficient = None;
                out.push(Event::InputDropsSufficient { at });
            }
            _ => {}
        }
        self.violating.resize(r.qos.queries.len(), None);
        for (qi, q) in r.qos.queries.iter().enumerate() {
            let (Some(target), Some(latency)) = (q.target, q.latency) else {
                continue;
            };
            match (self.violating[qi], latency > target) {
                (None, true) => {
                    self.violating[qi] = Some(at);
                    out.push(Event::ViolationBegan {
                        at,
                        query: qi,
                        latency,
                        target,
                    });
                }
                (Some(since), false) => {
                    self.violating[qi] = None;
                    out.push(Event::ViolationEnded {
                        at,
                        query: qi,
                        lasted: at - since,
                    });
                }
                _ => {}
            }
        }
    }
}

/// The observers of one run, fanned out to in order.
#[derive(Default)]
pub struct Observers<'a> {
    list: Vec<&'a mut dyn Observer>,
    tracker: EventTracker,
    scratch: Vec<Event>,
}

impl<'a> Observers<'a> {
    pub fn new(list: Vec<&'a mut dyn Observer>) -> Observers<'a> {
        Observers {
            list,
            tracker: EventTracker::default(),
            scratch: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn event(&mut self, e: Event) {
        for o in &mut self.list {
            o.on_event(&e);
        }
    }

    /// Hands `tick` to every observer, then the events it implies.
    pub fn tick(&mut self, tick: &TickReport<'_>) {
        for o in &mut self.list {
            o.on_tick(tick);
        }
        if tick.last {
            return;
        }
        self.tracker
            .events(tick.control, tick.elapsed, &mut self.scratch);
        for e in self.scratch.drain(..) {
            for o in &mut self.list {
                o.on_event(&e);
            }
        }
    }
}

/// A group of observers is one observer: it fans out (and derives events from ticks).
impl Observer for Observers<'_> {
    fn on_tick(&mut self, tick: &TickReport<'_>) {
        self.tick(tick);
    }

    fn on_event(&mut self, event: &Event) {
        self.event(event.clone());
    }
}

/// An observer made of a closure over ticks (tests, small tools).
pub struct OnTick<F>(pub F);

impl<F: FnMut(&TickReport<'_>)> Observer for OnTick<F> {
    fn on_tick(&mut self, tick: &TickReport<'_>) {
        (self.0)(tick)
    }
}

/// An observer that keeps every event (tests, the experiment recorder).
#[derive(Debug, Default)]
pub struct EventLog(pub Vec<Event>);

impl Observer for EventLog {
    fn on_event(&mut self, event: &Event) {
        self.0.push(event.clone());
    }
}
