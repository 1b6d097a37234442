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
}

impl Scheduler {
    pub fn new(kind: SchedulerKind) -> Scheduler {
        Scheduler { kind, next: 0 }
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
    /// met without work are dropped from `queued`. `count`: queries in all.
    pub fn pick_round_robin(
        &mut self,
        queued: &mut IndexSet,
        count: usize,
        has_work: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        loop {
            let i = queued.next_from(self.next).or_else(|| queued.first())?;
            if has_work(i) {
                self.next = (i + 1) % count.max(1);
                return Some(i);
            }
            queued.remove(i);
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
