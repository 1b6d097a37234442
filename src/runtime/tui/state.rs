//! The dashboard's state and its reducer: `apply(msg)` is the only way the state changes,
//! from run messages and keys alike, and it returns what a key asks of the run. The view
//! draws a state and nothing else, so both are tested without a terminal.

use std::collections::VecDeque;

use super::msg::{Command, FASTER, Key, Msg, Percentiles, SLOWER, TickMsg};
use super::words::ms;
use crate::core::drop::DropReason;
use crate::core::schema::Nanos;
use crate::runtime::observe::{Event, RunInfo};
use crate::runtime::stop::StopReason;

/// Charts cover this much run time.
pub const HISTORY: Nanos = 60_000_000_000;
/// Event log lines kept.
pub const LOG_LINES: usize = 200;

/// The overall state shown in the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Health {
    Ok,
    Shedding,
    /// Some query's latency is over its target.
    Violating,
}

/// One point of the charts.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub at: Nanos,
    pub demand: f64,
    pub target: f64,
    /// Per query, p99 over the last second in ms (`None`: no results).
    pub p99_ms: Vec<Option<f64>>,
    /// Tuples dropped per second since the previous sample, by reason.
    pub shed_rate: [f64; DropReason::COUNT],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogKind {
    Info,
    Bad,
    Good,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LogLine {
    pub at: Nanos,
    pub kind: LogKind,
    pub text: String,
}

/// Everything the view draws.
#[derive(Clone, Debug, Default)]
pub struct State {
    pub info: Option<RunInfo>,
    /// Field names of each stream.
    pub columns: Vec<Vec<String>>,
    pub latest: Option<TickMsg>,
    pub history: VecDeque<Sample>,
    /// Per query: when its current violation began, and violation time before it.
    pub violating_since: Vec<Option<Nanos>>,
    pub violated: Vec<Nanos>,
    /// Per query: the latest second's latency percentiles.
    pub percentiles: Vec<Percentiles>,
    pub log: VecDeque<LogLine>,
    pub selected: usize,
    /// The view as it was when `p` froze it; the run and this state go on.
    pub frozen: Option<Box<State>>,
    pub help: bool,
    /// Product of the `+`/`-` presses.
    pub rate_scale: f64,
    /// The policy in force or asked for last (`s`).
    pub policy: String,
    pub stopping: bool,
    pub ended: bool,
    /// How many plan changes the last log line stands for.
    plan_run: u32,
}

impl State {
    pub fn new() -> State {
        State {
            rate_scale: 1.0,
            ..State::default()
        }
    }

    /// The state the view should draw: the frozen one while paused.
    pub fn shown(&self) -> &State {
        self.frozen.as_deref().unwrap_or(self)
    }

    pub fn query_names(&self) -> Vec<&str> {
        self.info
            .as_ref()
            .map(|i| i.queries.iter().map(|q| q.name.as_str()).collect())
            .unwrap_or_default()
    }

    pub fn elapsed(&self) -> Nanos {
        self.latest.as_ref().map_or(0, |t| t.elapsed)
    }

    /// Seconds query `q` has spent over its latency target so far.
    pub fn violation_secs(&self, q: usize) -> f64 {
        let ongoing = self
            .violating_since
            .get(q)
            .copied()
            .flatten()
            .map_or(0, |s| (self.elapsed() - s).max(0));
        (self.violated.get(q).copied().unwrap_or(0) + ongoing) as f64 / 1e9
    }

    pub fn health(&self) -> Health {
        if self.violating_since.iter().any(Option::is_some) {
            Health::Violating
        } else if self.latest.as_ref().is_some_and(|t| t.shedding) {
            Health::Shedding
        } else {
            Health::Ok
        }
    }

    /// A line in the event log, at the current run time.
    pub fn note(&mut self, text: &str) {
        self.log(self.elapsed(), LogKind::Info, text.to_string());
    }

    fn log(&mut self, at: Nanos, kind: LogKind, text: String) {
        if self.log.len() == LOG_LINES {
            self.log.pop_front();
        }
        self.log.push_back(LogLine { at, kind, text });
    }

    fn query_name(&self, q: usize) -> String {
        self.query_names()
            .get(q)
            .map_or_else(|| format!("#{q}"), |s| s.to_string())
    }

    /// Applies one message; a key may ask something of the run.
    pub fn apply(&mut self, msg: Msg) -> Option<Command> {
        match msg {
            Msg::Started { info, columns } => {
                let n = info.queries.len();
                self.policy = info.policy.clone();
                self.violating_since = vec![None; n];
                self.violated = vec![0; n];
                self.percentiles = vec![Percentiles::default(); n];
                self.columns = columns;
                self.log(
                    0,
                    LogKind::Info,
                    format!("run started, policy {}", info.policy),
                );
                self.info = Some(*info);
            }
            Msg::Tick(t) => self.tick(*t),
            Msg::Event(e) => self.event(e),
            Msg::Ended => self.ended = true,
            Msg::PolicyRequested(name) => {
                self.log(
                    self.elapsed(),
                    LogKind::Info,
                    format!("policy -> {name} (by hand)"),
                );
                self.policy = name;
            }
            Msg::Key(k) => return self.key(k),
        }
        None
    }

    fn tick(&mut self, t: TickMsg) {
        if let Some(p) = &t.percentiles {
            self.percentiles = p.clone();
        }
        let shed_rate = match (&self.latest, self.history.back()) {
            (Some(prev), Some(_)) if t.elapsed > prev.elapsed => {
                let dt = (t.elapsed - prev.elapsed) as f64 / 1e9;
                std::array::from_fn(|i| t.dropped[i].saturating_sub(prev.dropped[i]) as f64 / dt)
            }
            (Some(_), Some(last)) => last.shed_rate,
            _ => [0.0; DropReason::COUNT],
        };
        self.history.push_back(Sample {
            at: t.elapsed,
            demand: t.demand,
            target: t.target,
            p99_ms: t
                .queries
                .iter()
                .map(|q| (q.p99 > 0).then(|| q.p99 as f64 / 1e6))
                .collect(),
            shed_rate,
        });
        while self
            .history
            .front()
            .is_some_and(|s| s.at < t.elapsed - HISTORY)
        {
            self.history.pop_front();
        }
        self.latest = Some(t);
    }

    fn event(&mut self, e: Event) {
        match e {
            Event::StopRequested { at, reason, abort } => {
                self.stopping = true;
                let who = match reason {
                    StopReason::Interrupt => "interrupt",
                    StopReason::Terminate => "SIGTERM",
                    StopReason::Requested => "stop requested",
                };
                let text = if abort {
                    format!("{who} again: aborting")
                } else {
                    format!("{who}: draining (again to abort)")
                };
                self.log(at, LogKind::Info, text);
            }
            Event::PlanChanged {
                at,
                shedding,
                stream_keep,
                query_keep,
            } => {
                let names = self.query_names();
                let keeps: Vec<String> = query_keep
                    .iter()
                    .zip(&names)
                    .filter(|(k, _)| **k < 1.0)
                    .map(|(k, n)| format!("{n} {k:.2}"))
                    .chain(
                        stream_keep
                            .iter()
                            .enumerate()
                            .filter(|(_, k)| **k < 1.0)
                            .map(|(i, k)| format!("stream#{i} {k:.2}")),
                    )
                    .collect();
                let mut text = match (shedding, keeps.is_empty()) {
                    (false, _) => "plan: not shedding".to_string(),
                    (true, true) => "plan: shedding, keeping all".to_string(),
                    (true, false) => format!("plan: shedding, keep {}", keeps.join(", ")),
                };
                // A run of plan changes is one line, the latest, with how many it stands for.
                if let Some(last) = self.log.back()
                    && last.text.starts_with("plan: ")
                {
                    self.plan_run += 1;
                    text.push_str(&format!(" ({} changes)", self.plan_run));
                    self.log.pop_back();
                } else {
                    self.plan_run = 1;
                }
                self.log(at, LogKind::Info, text);
            }
            Event::ModelRefit { at, scale } => {
                self.log(
                    at,
                    LogKind::Info,
                    format!("load model refitted: costs x{scale:.2}"),
                );
            }
            Event::InputDropsInsufficient { at, paused } => {
                let names: Vec<String> = paused.iter().map(|q| self.query_name(*q)).collect();
                let text = if names.is_empty() {
                    "input drops cannot cover the load: dropping whole windows".to_string()
                } else {
                    format!(
                        "input drops cannot cover the load: pausing {}",
                        names.join(", ")
                    )
                };
                self.log(at, LogKind::Bad, text);
            }
            Event::InputDropsSufficient { at } => {
                self.log(at, LogKind::Good, "input drops cover the load again".into());
            }
            Event::QueryAdded { at, query, info } => {
                if let Some(i) = &mut self.info
                    && query == i.queries.len()
                {
                    i.queries.push(info.clone());
                }
                self.violating_since.resize(query + 1, None);
                self.violated.resize(query + 1, 0);
                self.percentiles.resize(query + 1, Percentiles::default());
                self.log(at, LogKind::Info, format!("query {} added", info.name));
            }
            Event::QueryChanged { at, query, info } => {
                if let Some(q) = self.info.as_mut().and_then(|i| i.queries.get_mut(query)) {
                    *q = info.clone();
                }
                self.log(
                    at,
                    LogKind::Info,
                    format!("query {}: QoS changed", info.name),
                );
            }
            Event::QueryRemoved { at, query, .. } => {
                let text = format!("query {} removed", self.query_name(query));
                self.log(at, LogKind::Info, text);
            }
            Event::PolicyChanged { at, policy, .. } => {
                self.policy = policy.clone();
                self.log(at, LogKind::Info, format!("policy switched to {policy}"));
            }
            Event::ViolationBegan {
                at,
                query,
                latency,
                target,
            } => {
                if let Some(s) = self.violating_since.get_mut(query) {
                    *s = Some(at);
                }
                let text = format!(
                    "{}: {} ms > target {} ms",
                    self.query_name(query),
                    ms(latency),
                    ms(target)
                );
                self.log(at, LogKind::Bad, text);
            }
            Event::ViolationEnded { at, query, lasted } => {
                if let Some(s) = self.violating_since.get_mut(query) {
                    *s = None;
                }
                if let Some(v) = self.violated.get_mut(query) {
                    *v += lasted;
                }
                let text = format!(
                    "{}: recovered after {:.1} s",
                    self.query_name(query),
                    lasted as f64 / 1e9
                );
                self.log(at, LogKind::Good, text);
            }
            Event::Malformed {
                at,
                stream,
                count,
                sample,
            } => {
                let name = self
                    .info
                    .as_ref()
                    .and_then(|i| i.streams.get(stream))
                    .map_or_else(|| format!("#{stream}"), |s| s.name.clone());
                self.log(
                    at,
                    LogKind::Bad,
                    format!("{name}: {count} malformed, e.g. {sample}"),
                );
            }
            Event::SinkFailed { at, query, message } => {
                let text = format!("{}: sink failed: {message}", self.query_name(query));
                self.log(at, LogKind::Bad, text);
            }
            Event::RunStarted(_) | Event::RunEnded(_) => {}
        }
    }

    fn key(&mut self, k: Key) -> Option<Command> {
        let n = self.info.as_ref().map_or(0, |i| i.queries.len());
        match k {
            Key::Quit | Key::Interrupt => {
                self.stopping = true;
                return Some(Command::Stop {
                    interrupt: k == Key::Interrupt,
                });
            }
            Key::Pause => {
                self.frozen = match self.frozen.take() {
                    Some(_) => None,
                    None => {
                        let mut snap = self.clone();
                        snap.frozen = None;
                        Some(Box::new(snap))
                    }
                };
            }
            Key::Up | Key::Down if n > 0 => {
                self.selected = match k {
                    Key::Up => (self.selected + n - 1) % n,
                    _ => (self.selected + 1) % n,
                };
                if let Some(f) = &mut self.frozen {
                    f.selected = self.selected;
                }
            }
            Key::Faster | Key::Slower => {
                let f = if k == Key::Faster { FASTER } else { SLOWER };
                // The same clamp as the shared scale, so the header shows what sources use.
                let (lo, hi) = crate::runtime::controls::SCALE_BOUNDS;
                self.rate_scale = (self.rate_scale * f).clamp(lo, hi);
                let text = format!("rate x{:.2} (by hand)", self.rate_scale);
                self.log(self.elapsed(), LogKind::Info, text);
                return Some(Command::ScaleRate(f));
            }
            Key::CyclePolicy => return Some(Command::CyclePolicy),
            Key::Help => self.help = !self.help,
            Key::Escape => self.help = false,
            Key::Up | Key::Down => {}
        }
        None
    }
}
