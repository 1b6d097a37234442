//! The rise limits seen through whole plans: keeps climbing a step a tick after a surge,
//! a plan `rising` only while no keep a larger target could raise is free, and the climb
//! at a high overload bounded by a share of the target in load (`rise.rs`).

use super::rise::{KEEP_RISE, LOAD_RISE};
use super::tests_control::backlogged;
use super::*;

/// `backlogged` with its one stream offered `rate` tuples/s.
fn at(rate: f64) -> ShedInput<'static> {
    ShedInput {
        streams: vec![StreamInput::at(rate)],
        ..backlogged(None)
    }
}

#[test]
fn keeps_rise_a_step_a_tick_while_an_excess_is_shed_and_at_once_when_none_is_left() {
    let mut state = ShedState::new();
    let low = plan(&at(10_000_000.0), &mut state).delivered[0];
    assert!(low < 0.15, "{low}");
    // 1.2x: the greedy wants about 0.75 at once; the keep climbs 0.1 a tick.
    let mut was = low;
    for _ in 0..4 {
        let p = plan(&at(1_200_000.0), &mut state);
        let d = p.delivered[0];
        assert!(d <= was + KEEP_RISE + 1e-9 && d > was, "{d} after {was}");
        assert!(p.rising, "a keep held back by the rise limit is said so");
        was = d;
    }
    for _ in 0..10 {
        was = plan(&at(1_200_000.0), &mut state).delivered[0];
    }
    assert!((0.6..0.9).contains(&was), "{was}");
    // Half capacity: nothing to shed, every keep back at 1 while the trigger still holds.
    let p = plan(&at(500_000.0), &mut state);
    assert!(p.shedding);
    assert_eq!(p.delivered[0], 1.0);
    assert!(!p.rising);
}

#[test]
fn a_plan_is_rising_only_while_no_keep_a_larger_target_could_raise_is_free() {
    // Two queries on one stream at 1.2x their joint capacity, the first climbing from a
    // low keep; the second's last keep was 0.9, which it keeps (cutting held work costs
    // `HOLD_PREMIUM` more), so no rise limit holds it, and it is under 1: a larger target
    // would raise it.
    let mut input = backlogged(None);
    input.streams[0] = StreamInput::at(10_000_000.0);
    input.queries.push(input.queries[0]);
    let mut state = ShedState::new();
    let low = plan(&input, &mut state).delivered[0];
    assert!(low < 0.15, "{low}");
    input.streams[0] = StreamInput::at(600_000.0);
    // The same tick with both climbing: both held, the plan is rising.
    let mut both = state.clone();
    let p = plan(&input, &mut both);
    assert!(p.rising, "{:?}", p.delivered);
    state.last.as_mut().unwrap().delivered[1] = 0.9;
    let p = plan(&input, &mut state);
    // The first is held by the rise limit, the second is free of it.
    assert!(
        (p.delivered[0] - (low + KEEP_RISE)).abs() < 1e-9,
        "{:?}",
        p.delivered
    );
    assert!(p.delivered[1] < 1.0, "{:?}", p.delivered);
    assert!(!p.rising, "{:?}", p.delivered);
}

#[test]
fn at_a_high_overload_keeps_rise_by_a_share_of_the_target_in_load_a_tick() {
    // 7x: one keep step of 0.1 would add 70% of the machine's work in one tick.
    let mut state = ShedState::new();
    let mut was = plan(&at(50_000_000.0), &mut state).delivered[0];
    assert!(was < 0.03, "{was}");
    let mut ticks = 0;
    loop {
        let p = plan(&at(7_000_000.0), &mut state);
        let d = p.delivered[0];
        let added = (d - was) * 7_000_000.0 * 1000.0;
        assert!(
            added <= LOAD_RISE * p.target * (1.0 + 1e-9),
            "{d} after {was}"
        );
        ticks += 1;
        assert!(d > was - 1e-9, "{d} after {was}");
        was = d;
        if !p.rising {
            break;
        }
        assert!(ticks < 20, "{d} after {was}");
    }
    // Settled where the allocation wants it.
    assert_eq!(plan(&at(7_000_000.0), &mut state).delivered[0], was);
    // Several ticks to climb to what the allocation wants (about 0.9 / 7), not one or two.
    assert!(ticks >= 5, "{ticks}");
    assert!((0.11..0.14).contains(&was), "{was}");
}
