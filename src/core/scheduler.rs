//! Chooses which query with queued input runs the next batch. Closed set of policies,
//! dispatched with `match`; the scheduler reads queue views and never touches tuples.

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

    /// The index of the query to run next, or `None` when no queue has work.
    pub fn pick(&mut self, queues: &[QueueView], now: Nanos) -> Option<usize> {
        let n = queues.len();
        let ready = |i: &usize| queues[*i].depth > 0;
        match self.kind {
            SchedulerKind::RoundRobin => {
                let i = (0..n).map(|k| (self.next + k) % n).find(ready)?;
                self.next = (i + 1) % n;
                Some(i)
            }
            SchedulerKind::LongestQueue => (0..n)
                .filter(ready)
                .max_by_key(|&i| (queues[i].depth, std::cmp::Reverse(i))),
            SchedulerKind::Qos => (0..n).filter(ready).min_by(|&a, &b| {
                let slack = |i: usize| {
                    let q = &queues[i];
                    let age = now - q.oldest_arrival.unwrap_or(now);
                    let s = (q.latency_target.unwrap_or(DEFAULT_TARGET) - age) as f64;
                    // Negative slack (already late) grows more urgent with weight too.
                    if s >= 0.0 {
                        s / q.weight.max(1e-9)
                    } else {
                        s * q.weight.max(1e-9)
                    }
                };
                slack(a).total_cmp(&slack(b)).then(a.cmp(&b))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(depth: usize, oldest: Nanos, target: Nanos, weight: f64) -> QueueView {
        QueueView {
            depth,
            oldest_arrival: Some(oldest),
            latency_target: Some(target),
            weight,
        }
    }

    #[test]
    fn round_robin_skips_empty_queues_and_rotates() {
        let qs = [
            view(1, 0, 10, 1.0),
            view(0, 0, 10, 1.0),
            view(5, 0, 10, 1.0),
        ];
        let mut s = Scheduler::new(SchedulerKind::RoundRobin);
        let picks: Vec<_> = (0..4).map(|_| s.pick(&qs, 0).unwrap()).collect();
        assert_eq!(picks, [0, 2, 0, 2]);
    }

    #[test]
    fn longest_queue_picks_the_deepest() {
        let qs = [
            view(3, 0, 10, 1.0),
            view(9, 0, 10, 1.0),
            view(9, 0, 10, 1.0),
        ];
        assert_eq!(
            Scheduler::new(SchedulerKind::LongestQueue).pick(&qs, 0),
            Some(1)
        );
    }

    #[test]
    fn qos_picks_least_slack() {
        // Query 0: 100 ms target, oldest 20 ms old -> 80 ms slack.
        // Query 1: 50 ms target, oldest 10 ms old -> 40 ms slack.
        let ms = 1_000_000;
        let qs = [
            view(1, 80 * ms, 100 * ms, 1.0),
            view(1, 90 * ms, 50 * ms, 1.0),
        ];
        assert_eq!(
            Scheduler::new(SchedulerKind::Qos).pick(&qs, 100 * ms),
            Some(1)
        );
    }

    #[test]
    fn nothing_to_do_picks_none() {
        let qs = [view(0, 0, 10, 1.0)];
        assert_eq!(Scheduler::new(SchedulerKind::Qos).pick(&qs, 0), None);
        assert_eq!(Scheduler::new(SchedulerKind::RoundRobin).pick(&[], 0), None);
    }
}
