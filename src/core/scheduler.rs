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
mod tests {
    use super::*;

    /// Views of queries 0, 1, ... in order.
    fn indexed<const N: usize>(mut qs: [QueueView; N]) -> [QueueView; N] {
        for (i, q) in qs.iter_mut().enumerate() {
            q.index = i;
        }
        qs
    }

    fn view(depth: usize, oldest: Nanos, target: Nanos, weight: f64) -> QueueView {
        QueueView {
            index: 0,
            depth,
            oldest_arrival: Some(oldest),
            latency_target: Some(target),
            weight,
        }
    }

    #[test]
    fn round_robin_skips_empty_queues_and_rotates() {
        let qs = indexed([
            view(1, 0, 10, 1.0),
            view(0, 0, 10, 1.0),
            view(5, 0, 10, 1.0),
        ]);
        let mut s = Scheduler::new(SchedulerKind::RoundRobin);
        let picks: Vec<_> = (0..4).map(|_| s.pick(&qs, qs.len(), 0).unwrap()).collect();
        assert_eq!(picks, [0, 2, 0, 2]);
    }

    /// Picks of round robin over two queries that always have work, each turn charged
    /// `cost[q]`; returns the engine time each got.
    fn shares(quantum: Nanos, cost: [Nanos; 2], turns: usize) -> [Nanos; 2] {
        let mut s = Scheduler::new(SchedulerKind::RoundRobin);
        s.set_quantum(quantum);
        let mut queued: IndexSet = (0..2).collect();
        let mut used = [0; 2];
        for _ in 0..turns {
            let q = s.pick_round_robin(&mut queued, 2, |_| true).unwrap();
            s.charge(q, cost[q]);
            used[q] += cost[q];
        }
        used
    }

    #[test]
    fn deficit_round_robin_shares_time_not_turns() {
        // A turn a round: the query of long turns takes 10 of every 11 ns.
        let by_turns = shares(0, [10, 1], 200);
        assert_eq!(by_turns, [1000, 100]);
        // Time shared: each gets half, give or take one long turn.
        let [long, short] = shares(4, [10, 1], 2000);
        assert!((long - short).abs() <= 10, "{long} vs {short}");
        assert!(long + short > 1000);
    }

    #[test]
    fn deficit_round_robin_serves_a_query_in_debt_when_it_is_alone() {
        let mut s = Scheduler::new(SchedulerKind::RoundRobin);
        s.set_quantum(5);
        let mut queued: IndexSet = [0, 1].into_iter().collect();
        assert_eq!(s.pick_round_robin(&mut queued, 2, |_| true), Some(0));
        // A turn of a thousand quanta; the other query has no work.
        s.charge(0, 5_000);
        assert_eq!(s.pick_round_robin(&mut queued, 2, |q| q == 0), Some(0));
        // ... and query 1, met without work, was dropped.
        assert_eq!(queued.iter().collect::<Vec<_>>(), [0]);
        s.charge(0, i64::MAX / 2);
        assert_eq!(s.pick_round_robin(&mut queued, 2, |_| true), Some(0));
    }

    /// A debt is repaid within `DEBT_ROUNDS` rounds however long the turn that made it.
    #[test]
    fn a_debt_is_bounded() {
        let mut s = Scheduler::new(SchedulerKind::RoundRobin);
        s.set_quantum(10);
        let mut queued: IndexSet = (0..2).collect();
        assert_eq!(s.pick_round_robin(&mut queued, 2, |_| true), Some(0));
        // A turn of a paused thread: a million quanta.
        s.charge(0, 10_000_000);
        let mut waited = 0;
        loop {
            let q = s.pick_round_robin(&mut queued, 2, |_| true).unwrap();
            if q == 0 {
                break;
            }
            s.charge(q, 10);
            waited += 1;
        }
        assert_eq!(waited, DEBT_ROUNDS + 1, "rounds query 0 waited");
    }

    /// A costly query whose input comes a batch at a time keeps the debt of its turn's
    /// overrun although its queue ran dry after the turn: forgiven, it would take every
    /// overrun for free and most of the engine from a query with a backlog.
    #[test]
    fn a_debt_outlives_an_empty_queue() {
        use std::cell::Cell;
        let mut s = Scheduler::new(SchedulerKind::RoundRobin);
        s.set_quantum(10);
        let mut queued: IndexSet = (0..2).collect();
        let arrived = Cell::new(true);
        let has_work = |q: usize| q == 1 || arrived.get();
        assert_eq!(s.pick_round_robin(&mut queued, 2, has_work), Some(0));
        // Two and a half quanta, and its queue is empty.
        s.charge(0, 25);
        arrived.set(false);
        assert_eq!(s.pick_round_robin(&mut queued, 2, has_work), Some(1));
        s.charge(1, 10);
        // Its next batch: one quantum more leaves it 5 ns in debt, so query 1 goes on.
        arrived.set(true);
        queued.insert(0);
        assert_eq!(s.pick_round_robin(&mut queued, 2, has_work), Some(1));
        s.charge(1, 10);
        assert_eq!(s.pick_round_robin(&mut queued, 2, has_work), Some(0));
    }

    /// A query that drains its queue at every visit does not bank the rest of its
    /// quanta: once it has a backlog it gets a quantum a round like any other.
    #[test]
    fn a_queue_that_runs_dry_banks_no_credit() {
        use std::cell::Cell;
        let mut s = Scheduler::new(SchedulerKind::RoundRobin);
        s.set_quantum(10);
        let mut queued: IndexSet = (0..2).collect();
        let work = Cell::new(true);
        let has_work = |q: usize| q == 0 || work.get();
        // Query 1 drains with one turn of 1 ns and has input again after query 0's turn
        // of a quantum: it leaves 9 ns of each visit's quantum unused.
        for _ in 0..100 {
            let q = s.pick_round_robin(&mut queued, 2, has_work).unwrap();
            s.charge(q, if q == 0 { 10 } else { 1 });
            work.set(q == 0);
            queued.insert(1);
        }
        work.set(true);
        let mut run = 0;
        let mut longest = 0;
        for _ in 0..300 {
            let q = s.pick_round_robin(&mut queued, 2, has_work).unwrap();
            s.charge(q, if q == 0 { 10 } else { 1 });
            run = if q == 1 { run + 1 } else { 0 };
            longest = longest.max(run);
        }
        // A quantum a round: 10 turns. Banked, the unused 9 ns of 50 visits would hold
        // the engine for some 450 turns.
        assert_eq!(longest, 10);
    }

    #[test]
    fn the_query_served_keeps_the_turn_while_its_credit_lasts() {
        let mut s = Scheduler::new(SchedulerKind::RoundRobin);
        s.set_quantum(10);
        let mut queued: IndexSet = (0..3).collect();
        let mut picks = Vec::new();
        for _ in 0..9 {
            let q = s.pick_round_robin(&mut queued, 3, |_| true).unwrap();
            s.charge(q, 4);
            picks.push(q);
        }
        // 10 ns of credit a visit, 4 a turn: three turns each (the third overdraws).
        assert_eq!(picks, [0, 0, 0, 1, 1, 1, 2, 2, 2]);
    }

    #[test]
    fn longest_queue_picks_the_deepest() {
        let qs = indexed([
            view(3, 0, 10, 1.0),
            view(9, 0, 10, 1.0),
            view(9, 0, 10, 1.0),
        ]);
        assert_eq!(
            Scheduler::new(SchedulerKind::LongestQueue).pick(&qs, qs.len(), 0),
            Some(1)
        );
    }

    #[test]
    fn qos_picks_least_slack() {
        // Query 0: 100 ms target, oldest 20 ms old -> 80 ms slack.
        // Query 1: 50 ms target, oldest 10 ms old -> 40 ms slack.
        let ms = 1_000_000;
        let qs = indexed([
            view(1, 80 * ms, 100 * ms, 1.0),
            view(1, 90 * ms, 50 * ms, 1.0),
        ]);
        assert_eq!(
            Scheduler::new(SchedulerKind::Qos).pick(&qs, qs.len(), 100 * ms),
            Some(1)
        );
    }

    #[test]
    fn nothing_to_do_picks_none() {
        let qs = indexed([view(0, 0, 10, 1.0)]);
        assert_eq!(
            Scheduler::new(SchedulerKind::Qos).pick(&qs, qs.len(), 0),
            None
        );
        assert_eq!(
            Scheduler::new(SchedulerKind::RoundRobin).pick(&[], 0, 0),
            None
        );
    }

    /// The sparse forms (only queries with work; the ordered set for round-robin) pick
    /// exactly what a full scan of every query picks, turn after turn.
    #[test]
    fn sparse_views_pick_what_the_full_scan_picks() {
        let depths = [0usize, 3, 0, 0, 1, 2, 0, 5];
        for kind in [
            SchedulerKind::RoundRobin,
            SchedulerKind::LongestQueue,
            SchedulerKind::Qos,
        ] {
            let mut d = depths;
            let (mut full, mut sparse, mut set) = (
                Scheduler::new(kind),
                Scheduler::new(kind),
                Scheduler::new(kind),
            );
            let mut queued: IndexSet = (0..d.len()).collect();
            loop {
                let views = |all: bool| -> Vec<QueueView> {
                    (0..d.len())
                        .filter(|&i| all || d[i] > 0)
                        .map(|i| QueueView {
                            index: i,
                            ..view(d[i], i as Nanos, 100, 1.0 + i as f64)
                        })
                        .collect()
                };
                let a = full.pick(&views(true), d.len(), 50);
                let b = sparse.pick(&views(false), d.len(), 50);
                assert_eq!(a, b, "{kind:?}");
                if kind == SchedulerKind::RoundRobin {
                    let c = set.pick_round_robin(&mut queued, d.len(), |i| d[i] > 0);
                    assert_eq!(a, c);
                }
                let Some(i) = a else { break };
                d[i] -= 1;
            }
        }
    }
}
