//! The schedulers' picks: round robin by turns and by time (deficit round robin), longest
//! queue, least slack, and the sparse views against a full scan.

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
