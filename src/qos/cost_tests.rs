//! The cost model's fits: which terms the data identify, and which they do not.

use super::*;

#[test]
fn a_pure_per_tuple_cost_is_found_with_or_without_rate_changes() {
    let mut m = CostModel::default();
    for _ in 0..20 {
        m.update(1000.0, 500_000.0, 0.1);
    }
    assert!((m.per_tuple() - 500.0).abs() < 1e-6);
    assert_eq!(m.fixed(), 0.0);
    for k in 0..20 {
        let n = 1000.0 + 100.0 * k as f64;
        m.update(n, 500.0 * n, 0.1);
    }
    assert!((m.per_tuple() - 500.0).abs() < 1e-3, "{}", m.per_tuple());
    assert!(m.fixed().abs() < 1.0, "{}", m.fixed());
}

#[test]
fn a_stale_fixed_part_is_dropped_not_kept_against_the_evidence() {
    let mut m = CostModel::default();
    for k in 0..20 {
        let n = 1000.0 + 100.0 * k as f64;
        m.update(n, 1e6 + 500.0 * n, 0.1);
    }
    assert!(m.fixed() > 0.0);
    // The window work disappears; the rate stays constant (no slope to fit).
    for _ in 0..60 {
        m.update(1000.0, 500.0 * 1000.0, 0.1);
    }
    // Never pinned at zero, and consistent with what is measured now (10k tuples/s,
    // 5 ms of work per second).
    assert!(m.per_tuple() > 100.0, "per-tuple cost {}", m.per_tuple());
    let predicted = m.fixed() + m.per_tuple() * 10_000.0;
    assert!(
        (predicted - 5e6).abs() < 0.05 * 5e6,
        "predicts {predicted} ns/s"
    );
}

#[test]
fn fixed_work_is_separated_when_shedding_thins_the_input() {
    // 200 ns per tuple plus 50 ms of work per second; input thinned step by step.
    let mut m = CostModel::default();
    for k in 0..30 {
        let rate = 1_000_000.0 / (1.0 + k as f64 * 0.3);
        let n = rate * 0.1;
        m.update(n, 200.0 * n + 5_000_000.0, 0.1);
    }
    assert!((m.per_tuple() - 200.0).abs() < 1.0, "{}", m.per_tuple());
    assert!((m.fixed() - 50_000_000.0).abs() < 1e6, "{}", m.fixed());
}

#[test]
fn per_row_work_is_separated_from_per_tuple_work() {
    // 100 ns per tuple, 2 us per emitted row, 1 ms/s fixed; rows move independently
    // of tuples (keys vanish from windows as shedding deepens, windows close in bursts).
    let mut m = CostModel::default();
    for k in 0..40 {
        let n = 100_000.0 * (1.0 + (k % 7) as f64 * 0.2);
        let r = 10_000.0 * (1.0 + (k % 5) as f64 * 0.3);
        m.update_with_rows(n, r, 100.0 * n + 2_000.0 * r + 1e6, 1.0);
    }
    assert!((m.per_tuple() - 100.0).abs() < 1.0, "{}", m.per_tuple());
    assert!((m.per_row() - 2_000.0).abs() < 20.0, "{}", m.per_row());
    assert!((m.fixed() - 1e6).abs() < 1e5, "{}", m.fixed());
}

#[test]
fn one_paused_tick_pulls_the_model_by_a_bounded_step() {
    let mut m = CostModel::default();
    for _ in 0..20 {
        m.update(1000.0, 500_000.0, 0.1);
    }
    // The engine thread was descheduled for a whole second inside one turn.
    m.update(1000.0, 1e9, 0.1);
    assert!(m.per_tuple() < 500.0 * 1.3, "{}", m.per_tuple());
}

#[test]
fn work_per_passed_tuple_is_not_charged_to_the_kept_ones() {
    // 20 ns per processed tuple plus 8 ns for every tuple that reached the query,
    // kept or not (its loss accounting), as the query's own keep falls from 1 to 0.01
    // while the stream's own keep moves the tuples that reach it between 10 and 20 M/s.
    let mut m = CostModel::default();
    for k in 0..40 {
        let keep = [1.0, 0.5, 0.2, 0.05, 0.01][k % 5];
        let passed = 1e6 * (1.0 + 0.5 * (k % 3) as f64);
        let tuples = passed * keep;
        m.update_full(passed, tuples, 0.0, 8.0 * passed + 20.0 * tuples, 0.1);
    }
    // Within 3%: the first ticks, before the terms were identified, were bounded
    // against a cruder model, and forgetting takes a while to wash them out.
    assert!((m.per_tuple() - 20.0).abs() < 0.6, "{}", m.per_tuple());
    assert!((m.per_passed() - 8.0).abs() < 0.25, "{}", m.per_passed());
    // The plain ratio at keep 0.01 would say 820 ns per tuple.
    assert!(m.predict_full(1e7, 1e5, 0.0) < 1.05 * (8e7 + 2e6));
    // Without the passed counts the kept tuples carry it all.
    let mut plain = CostModel::default();
    for k in 0..40 {
        let keep = [1.0, 0.5, 0.2, 0.05, 0.01][k % 5];
        let tuples = 1e6 * keep;
        plain.update(tuples, 8.0 * 1e6 + 20.0 * tuples, 0.1);
    }
    assert_eq!(plain.per_passed(), 0.0);
}

#[test]
fn a_query_keeping_little_holds_its_per_tuple_cost() {
    // 20 ns per processed tuple and 2 ns per passed one, at keep 1 ...
    let mut m = CostModel::default();
    for _ in 0..20 {
        m.update_full(1e6, 1e6, 0.0, 22.0 * 1e6, 0.1);
    }
    assert!((m.per_tuple() - 22.0).abs() < 1e-6);
    // ... then paused or keeping 1%: the ratio would read 220 or more per tuple.
    for k in 0..30 {
        let tuples = if k % 2 == 0 { 0.0 } else { 1e4 };
        m.update_full(1e6, tuples, 0.0, 2.0 * 1e6 + 20.0 * tuples, 0.1);
    }
    assert!(m.per_tuple() <= 22.0 + 1e-6, "{}", m.per_tuple());
    // What it spends at any keep is read as work its own drop cannot save (fixed at
    // this rate, here).
    let at_full = m.predict_full(1e7, 1e7, 0.0);
    assert!(at_full > 0.2e9 && at_full < 0.3e9, "{at_full}");
    // Paused outright: what it still spends is no reason to think tuples cost more.
    for _ in 0..30 {
        m.update_full(1e6, 0.0, 0.0, 2.0 * 1e6, 0.1);
    }
    assert!(m.per_tuple() <= 22.0 + 1e-6, "{}", m.per_tuple());
    let paused = m.predict_full(1e7, 0.0, 0.0);
    assert!((paused - 2e7).abs() < 0.1 * 2e7, "{paused}");
}

#[test]
fn a_cost_read_dear_in_a_warm_up_falls_while_the_query_keeps_little() {
    // Live: the first tick of a run read a grouped query at 4954 ns a tuple (its groups
    // were being created); it was then kept under a quarter of its input at 40 ns a
    // tuple, and the sparse rule held the first figure for 30 s.
    let mut m = CostModel::default();
    m.update_full(2e5, 2e5, 0.0, 5000.0 * 2e5, 0.05);
    for _ in 0..100 {
        m.update_full(1.5e5, 0.2 * 1.5e5, 0.0, 40.0 * 0.2 * 1.5e5, 0.05);
    }
    assert!(m.per_tuple() < 100.0, "{}", m.per_tuple());
    // Bounded like any other tick: it falls over seconds, not in one tick.
    let mut one = CostModel::default();
    one.update_full(2e5, 2e5, 0.0, 5000.0 * 2e5, 0.05);
    for _ in 0..3 {
        one.update_full(1.5e5, 0.2 * 1.5e5, 0.0, 40.0 * 0.2 * 1.5e5, 0.05);
    }
    assert!(one.per_tuple() > 500.0, "{}", one.per_tuple());
}

/// A deterministic noise factor in `1 +- amp` for tick `k`.
fn wobble(k: usize, amp: f64) -> f64 {
    // splitmix64's finaliser: neighbouring ticks get unrelated draws.
    let mut x = (k as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    1.0 + amp * (((x >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0)
}

#[test]
fn noisy_busy_time_at_a_steady_rate_is_not_split_into_fixed_and_per_tuple_work() {
    // Live, a query kept whole sees its input move by up to a quarter from tick to tick and
    // its busy time by more (scheduling, caches). All of it is per tuple: 30 ns.
    let mut m = CostModel::default();
    for k in 0..200 {
        let n = 500_000.0 * wobble(k, 0.25);
        m.update(n, 30.0 * n * wobble(k + 1000, 0.3), 0.05);
        if k > 10 {
            assert_eq!(m.fixed(), 0.0, "tick {k}: fixed {}", m.fixed());
            let c = m.per_tuple();
            assert!((c - 30.0).abs() < 0.2 * 30.0, "tick {k}: per tuple {c}");
        }
    }
}

#[test]
fn a_real_fixed_part_still_stands_out_when_the_input_moves() {
    // 50 ms/s of work whatever the input and 100 ns a tuple, with noise, while shedding
    // moves the input over a factor of four.
    let mut m = CostModel::default();
    for k in 0..60 {
        let n = 1_000_000.0 * [1.0, 0.6, 0.25, 0.8, 0.4][k % 5];
        let busy = (50e6 + 100.0 * n) * wobble(k, 0.05);
        m.update(n * 0.1, busy * 0.1, 0.1);
    }
    assert!((m.fixed() - 50e6).abs() < 0.2 * 50e6, "fixed {}", m.fixed());
    assert!((m.per_tuple() - 100.0).abs() < 15.0, "{}", m.per_tuple());
}

#[test]
fn work_per_offered_tuple_keeps_the_passed_cost_bounded_as_a_stream_keep_falls() {
    // Ingest: 4 ns per offered tuple (the stream drop decision) and 30 ns per tuple past
    // it (fan-out), as the stream's keep falls from 1 to 0.001 at 20 M tuples/s offered.
    let mut m = CostModel::default();
    for k in 0..80 {
        let keep = [1.0, 0.5, 0.2, 0.05, 0.01, 0.001][(k / 4) % 6];
        let offered = 20e6 * 0.05;
        let passed = offered * keep;
        let busy = (4.0 * offered + 30.0 * passed) * wobble(k, 0.03);
        m.update_full(offered, passed, 0.0, busy, 0.05);
        assert!(
            m.per_tuple() < 60.0,
            "tick {k}: {} ns per passed tuple",
            m.per_tuple()
        );
    }
    // At keep 0.001 all of the work is the offered tuples': predicted within 10%.
    let predicted = m.predict_full(20e6, 20e3, 0.0);
    assert!((predicted - 80.6e6).abs() < 0.1 * 80.6e6, "{predicted}");
}

#[test]
fn a_pause_does_not_forget_the_running_cost_so_a_warm_up_tick_cannot_replace_it() {
    // 20 ns a tuple at 2 M tuples/s; then paused 5 s (nothing reaches the query, a little
    // busy time from its timers); then re-admitted at a twentieth of its input, its first
    // ticks paying 1000 ns a tuple (groups being created).
    for idle in [0.0, 1e3, 1e5] {
        let mut m = CostModel::default();
        for _ in 0..30 {
            m.update_full(1e5, 1e5, 0.0, 2e6, 0.05);
        }
        for _ in 0..100 {
            m.update_full(0.0, 0.0, 0.0, idle, 0.05);
        }
        assert!((m.per_tuple() - 20.0).abs() < 0.5, "{}", m.per_tuple());
        for _ in 0..4 {
            m.update_full(5e3, 5e3, 0.0, 5e6, 0.05);
            // Before, the forgotten evidence left these ticks alone: 59 -> 330 ns (idle
            // 0), 1229 ns (idle 1e5), which kept the query paused for good.
            assert!(m.per_tuple() < 60.0, "idle {idle}: {}", m.per_tuple());
            // Its whole input (2 M tuples/s, 40 ms/s of work when it ran) priced at under
            // 2.5 times that; before, at 16 times (idle 0) to 60 times (idle 1e5).
            let work = m.predict(2e6, 0.0);
            assert!(
                work < 100e6,
                "idle {idle}: predicts {work} ns/s for its input"
            );
        }
    }
}
