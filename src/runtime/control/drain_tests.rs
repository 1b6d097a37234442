//! Queue ceilings: when one is set, how it is released, what it removes.

use super::*;

/// 50 ms tick, 200 ms target, 900k tuples offered (18 M/s).
fn tick(served: f64, before: f64, after: f64) -> QueueTick {
    QueueTick {
        served,
        before,
        after,
        thinned: 0.0,
        offered: 900e3,
        secs: 0.05,
        target: 0.2,
    }
}

#[test]
fn a_late_growing_queue_is_held_to_what_drains_it() {
    // Served 340k of 900k offered in 50 ms (6.8 M/s), admitted 450k: the queue went
    // 531k -> 641k, its newest tuple waits 94 ms (over a quarter of 200 ms). It stays
    // held to the 340k it was served; draining to 40 ms of wait (272k) over the next
    // tick leaves 6.8 M - 7.38 M/s: nothing to admit for that tick.
    let a = ceiling_of(tick(340e3, 531e3, 641e3)).unwrap();
    assert!((a.sustained - 340e3 / 900e3).abs() < 1e-12);
    assert_eq!(a.now, 0.0);
    // A queue growing slower, from 350k to 400k (59 ms of wait): draining it to 40 ms
    // takes 128k of the 340k served; 212k of the 900k offered fit.
    let a = ceiling_of(tick(340e3, 350e3, 400e3)).unwrap();
    assert!((a.now - 212e3 / 900e3).abs() < 1e-9, "{a:?}");
}

#[test]
fn a_ceiling_rises_back_a_step_a_tick_from_nothing() {
    let mut c = 0.0;
    let mut ticks = 0;
    while c < 1.0 {
        c = relaxed(c);
        ticks += 1;
    }
    assert_eq!(ticks, 18);
}

#[test]
fn a_queue_that_drains_or_waits_little_asks_for_nothing() {
    // Shrinking, however deep.
    assert_eq!(ceiling_of(tick(340e3, 700e3, 650e3)), None);
    // Growing, but its newest waits 15 ms of 200.
    assert_eq!(ceiling_of(tick(340e3, 50e3, 100e3)), None);
    // Nothing served (a paused query) or no time elapsed: no rate to read.
    assert_eq!(ceiling_of(tick(0.0, 50e3, 100e3)), None);
    // Thinned from 700k to 200k, then grown to 400k (59 ms of wait): it grew.
    let grown = QueueTick {
        thinned: 500e3,
        ..tick(340e3, 700e3, 400e3)
    };
    assert!(ceiling_of(grown).is_some());
    assert_eq!(
        ceiling_of(QueueTick {
            secs: 0.0,
            ..tick(340e3, 250e3, 300e3)
        }),
        None
    );
}

/// Query 0 sheddable with a 200 ms target, query 1 without one (lossless), both on
/// stream 0 at 18 M tuples/s, 50 ns a tuple; a shedding plan keeping half of each.
fn plan() -> ShedPlan {
    let mut p = ShedPlan::keep_all(1, 2);
    p.shedding = true;
    p.queries = vec![QueryDrop::Random { keep: 0.5 }; 2];
    p.delivered = vec![0.5, 0.5];
    p
}

fn counters(offered: u64, processed: u64, queued: u64) -> [Counters; 2] {
    let c = Counters {
        offered,
        processed,
        queued,
        thinned: 0,
        stream: 0,
        stream_rate: 18e6,
        cost: 50.0,
        target: Some(200_000_000),
    };
    [c, Counters { target: None, ..c }]
}

const TICK: i64 = 50_000_000;

#[test]
fn a_late_growing_queue_caps_the_plan_until_it_stops_growing() {
    let mut c = Ceilings::default();
    let specs = [None, None];
    // First tick: nothing to compare with.
    let mut p = plan();
    assert_eq!(
        c.apply_counters(&counters(0, 0, 0), &specs, 0, false, &mut p),
        0.0
    );
    assert_eq!(p.delivered, [0.5, 0.5]);
    // 900k offered, 450k admitted, 340k served: the queue grew to 110k. Its newest
    // waits 16 ms: not late, nothing asked.
    let mut p = plan();
    c.apply_counters(
        &counters(900e3 as u64, 340e3 as u64, 110e3 as u64),
        &specs,
        TICK,
        false,
        &mut p,
    );
    assert_eq!(p.delivered, [0.5, 0.5]);
    // Three more such ticks: 440k queued, 65 ms of wait. Held to the 340k of 900k it
    // was served, less the drain of 440k down to 40 ms of wait (272k) this tick.
    for k in 2..=4u64 {
        let mut p = plan();
        let removed = c.apply_counters(
            &counters(k * 900_000, k * 340_000, k * 110_000),
            &specs,
            k as i64 * TICK,
            false,
            &mut p,
        );
        if k < 4 {
            assert_eq!(p.delivered, [0.5, 0.5], "tick {k}");
            continue;
        }
        let now = (6.8e6 - (440e3 - 272e3) / 0.05) / 18e6;
        assert!((p.delivered[0] - now).abs() < 1e-9, "{:?}", p.delivered);
        assert!(matches!(p.queries[0], QueryDrop::Random { keep } if (keep - now).abs() < 1e-9));
        // The query without a target (lossless) is never capped.
        assert_eq!(p.delivered[1], 0.5);
        // The plan's weighted utility counts the cut.
        assert!(p.weighted_utility < plan().weighted_utility);
        assert!(
            (removed - (0.5 - now) * 18e6 * 50.0).abs() < 1e-3,
            "{removed}"
        );
    }
    // The queue drains: the ceiling is the share it was served at, relaxed a tick.
    let served = 340e3 / 900e3;
    let mut p = plan();
    c.apply_counters(
        &counters(5 * 900_000, 5 * 340_000 + 400_000, 40_000),
        &specs,
        5 * TICK,
        false,
        &mut p,
    );
    assert!(
        (p.delivered[0] - relaxed(served)).abs() < 1e-9,
        "{:?}",
        p.delivered
    );
    // A tick the engine waited for input through takes the ceiling away at once.
    let mut waited = c.clone();
    let mut p = plan();
    waited.apply_counters(
        &counters(6 * 900_000, 5 * 340_000 + 850_000, 40_000),
        &specs,
        6 * TICK,
        true,
        &mut p,
    );
    assert_eq!(p.delivered, [0.5, 0.5]);
    assert!(waited.ceiling.iter().all(Option::is_none));
    // Otherwise it keeps rising while nothing grows, and stops biting once the plan's
    // keep is under it.
    let mut p = plan();
    c.apply_counters(
        &counters(6 * 900_000, 5 * 340_000 + 850_000, 40_000),
        &specs,
        6 * TICK,
        false,
        &mut p,
    );
    assert_eq!(p.delivered[0], 0.5);
    assert!(c.ceiling[0].is_some_and(|x| x > 0.5));
    // A plan that stops shedding clears every ceiling.
    let mut p = ShedPlan::keep_all(1, 2);
    c.apply_counters(
        &counters(7 * 900_000, 5 * 340_000 + 1_300_000, 40_000),
        &specs,
        7 * TICK,
        false,
        &mut p,
    );
    assert_eq!(p.queries, [QueryDrop::KeepAll, QueryDrop::KeepAll]);
    assert!(c.ceiling.iter().all(Option::is_none));
}
