//! Chooses which query with queued input runs the next batch. Closed set of policies,
//! dispatched with `match`; the scheduler reads queue views and never touches tuples.

use super::indexset::IndexSet;

use super::schema::Nanos;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SchedulerKind {
    /// Each query with work in turn.
    #[default]
    RoundRobin,
    /// The query with the most queued tuples.
    LongestQueue,
    /// The query with the least latency slack (target minus the age of its oldest queued
    /// tuple), divided by its weight: tight and important queries go first.
    Qos,
}

/// What the scheduler may know of a query.
#[derive(Clone, Copy, Debug)]
pub struct QueueView {
    /// The query's index in the engine.
    pub index: usize,
    pub depth: usize,
    pub oldest_arrival: Option<Nanos>,
    pub latency_target: Option<Nanos>,
    pub weight: f64,
}

/// Latency target assumed for queries that declare none, for `qos` scheduling.
const DEFAULT_TARGET: Nanos = 1_000_000_000;

#[derive(Debug, Default)]
pub struct Scheduler {
    kind: SchedulerKind,
    next: usize,
    /// Round robin by engine time instead of by turns (`set_quantum`), if set.
    fair: Option<Deficits>,
}

/// Deficit round robin (Shreedhar and Varghese, 1995) over engine time: each visit of a
/// query with work adds a quantum of ns to its credit, each of its turns takes what it
/// cost (`Scheduler::charge`), and it keeps the turn while its credit lasts. A query
/// whose turns are long (a window close's step, a batch of a costly aggregate) then waits
/// while queries with short turns drain their queues, instead of each getting one batch
/// per round. Turns are paid after they ran, so credit goes negative: that debt carries
/// over, also when the queue runs dry (a costly query whose input comes a batch at a time
/// must not take a turn's overrun for free), down to `DEBT_ROUNDS` quanta. Invariant: a
/// query holds positive credit only while it is being served (at most a quantum); one
/// whose queue runs dry, or met without work, gives up what credit it has left.
#[derive(Debug)]
struct Deficits {
    quantum: i64,
    credit: Vec<i64>,
    serving: Option<usize>,
}

/// A query's debt is at most this many quanta: a turn that ran for seconds (a paused
/// engine thread, a whole sliding-window close) is repaid within this many rounds, not
/// by starving the query for as long as the pause lasted.
const DEBT_ROUNDS: i64 = 50;

impl Deficits {
    fn credit(&mut self, i: usize) -> &mut i64 {
        if self.credit.len() <= i {
            self.credit.resize(i + 1, 0);
        }
        &mut self.credit[i]
    }
}

impl Scheduler {
    pub fn new(kind: SchedulerKind) -> Scheduler {
        Scheduler {
            kind,
            next: 0,
            fair: None,
        }
    }

    /// Makes round robin share engine time, `quantum` ns a visit (deficit round robin),
    /// instead of a turn a visit; `0` goes back to turns. Other kinds are not affected.
    pub fn set_quantum(&mut self, quantum: Nanos) {
        self.fair = (quantum > 0).then(|| Deficits {
            quantum,
            credit: Vec::new(),
            serving: None,
        });
    }

    /// Takes `ns` of engine time spent on query `query` off its credit (no-op unless
    /// round robin shares time, `set_quantum`).
    pub fn charge(&mut self, query: usize, ns: Nanos) {
        if let Some(f) = &mut self.fair {
            let floor = -DEBT_ROUNDS * f.quantum;
            let c = f.credit(query);
            *c = c.saturating_sub(ns.max(0)).max(floor);
        }
    }

    pub fn kind(&self) -> SchedulerKind {
        self.kind
    }

    /// The index of the query to run next, or `None` when no queue has work. `queues`
    /// may list only the queries with work, in index order; `count` is the number of
    /// queries in all.
    pub fn pick(&mut self, queues: &[QueueView], count: usize, now: Nanos) -> Option<usize> {
        let ready = |q: &&QueueView| q.depth > 0;
        match self.kind {
            SchedulerKind::RoundRobin => {
                let q = (queues.iter().filter(ready).find(|q| q.index >= self.next))
                    .or_else(|| queues.iter().find(ready))?;
                self.next = (q.index + 1) % count.max(1);
                Some(q.index)
            }
            SchedulerKind::LongestQueue => queues
                .iter()
                .filter(ready)
                .max_by_key(|q| (q.depth, std::cmp::Reverse(q.index)))
                .map(|q| q.index),
            SchedulerKind::Qos => queues
                .iter()
                .filter(ready)
                .min_by(|a, b| {
                    let slack = |q: &QueueView| {
                        let age = now - q.oldest_arrival.unwrap_or(now);
                        let s = (q.latency_target.unwrap_or(DEFAULT_TARGET) - age) as f64;
                        // Negative slack (already late) grows more urgent with weight too.
                        if s >= 0.0 {
                            s / q.weight.max(1e-9)
                        } else {
                            s * q.weight.max(1e-9)
                        }
                    };
                    slack(a).total_cmp(&slack(b)).then(a.index.cmp(&b.index))
                })
                .map(|q| q.index),
        }
    }

    /// Round-robin over `queued`, the queries that may have work (in index order):
    /// the first from where the last turn left off for which `has_work` holds. Those
    /// met without work are dropped from `queued`. `count`: queries in all. Sharing time
    /// (`set_quantum`), the query being served keeps the turn while it has credit, and a
    /// query in debt is passed over (a quantum added per visit) while another has work.
    pub fn pick_round_robin(
        &mut self,
        queued: &mut IndexSet,
        count: usize,
        has_work: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        if let Some(f) = &mut self.fair
            && let Some(i) = f.serving.take()
        {
            if !has_work(i) {
                // Its queue ran dry: what is left of its quantum is not banked (a query
                // that drains at every visit would otherwise gain a quantum a round, and
                // hold the engine for seconds once a backlog came).
                let c = f.credit(i);
                *c = (*c).min(0);
            } else if *f.credit(i) > 0 {
                f.serving = Some(i);
                return Some(i);
            }
        }
        let mut visits = 0;
        loop {
            let i = queued.next_from(self.next).or_else(|| queued.first())?;
            if !has_work(i) {
                queued.remove(i);
                if let Some(f) = &mut self.fair {
                    let c = f.credit(i);
                    *c = (*c).min(0);
                }
                continue;
            }
            self.next = (i + 1) % count.max(1);
            let Some(f) = &mut self.fair else {
                return Some(i);
            };
            let quantum = f.quantum;
            let c = f.credit(i);
            *c = c.saturating_add(quantum);
            if *c > 0 {
                f.serving = Some(i);
                return Some(i);
            }
            visits += 1;
            if visits >= queued.len() {
                // A whole round and every query with work still in debt: the rounds until
                // the least indebted is owed a turn, added at once rather than visit by
                // visit (each query's debt falls by the same quanta).
                let rounds = (queued.iter().filter(|&q| has_work(q)))
                    .map(|q| -*f.credit(q) / quantum)
                    .min()
                    .unwrap_or(0);
                for q in queued.iter().filter(|&q| has_work(q)) {
                    let c = f.credit(q);
                    *c = c.saturating_add(rounds * quantum);
                }
                visits = 0;
            }
        }
    }
}

#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod tests;
