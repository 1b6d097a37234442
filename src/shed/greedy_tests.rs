//! The loss/gain walk's tests: order by loss over gain, enough not more, lossless queries,
//! steps that do not divide 100, and the hysteresis of `HOLD_PREMIUM`.

use super::*;

/// `[[100, 1.0], [50, 0.7], [0, 0.0]]`, stored ascending.
fn slides_curve() -> UtilityCurve {
    UtilityCurve {
        points: vec![(0.0, 0.0), (50.0, 0.7), (100.0, 1.0)],
    }
}

/// A movable query with no curve and nothing held (also the fan-out tests').
pub(in crate::shed) fn query(
    stream: usize,
    gain_per_percent: f64,
    weight: f64,
) -> GreedyQuery<'static> {
    GreedyQuery {
        stream,
        gain_per_percent,
        weight,
        curve: None,
        movable: true,
        paused: false,
        held: 0.0,
    }
}

#[test]
fn candidates_are_taken_by_loss_over_gain() {
    // By hand, 1 % steps:
    // q0: r = 1000/s, c = 100 ns -> gain 1000 ns/s per step; slides curve, weight 1:
    //     loss 0.006 per step down to 50 % (ratio 6e-6), then 0.014 (ratio 1.4e-5).
    // q1: r = 1000/s, c = 300 ns -> gain 3000; linear curve, weight 2.5:
    //     loss 0.025 per step (ratio 8.33e-6).
    // Order: q0 to 50 %, then q1 to 0 %, then q0 to 0 %.
    let c = slides_curve();
    let qs = [
        GreedyQuery {
            curve: Some(&c),
            ..query(0, 1000.0, 1.0)
        },
        query(1, 3000.0, 2.5),
    ];
    // 60 000 ns/s: q0's first piece saves 50 000, then four steps of q1.
    let cov = cover(&qs, 2, 60_000.0, 1.0);
    assert_eq!(cov.cursors, vec![50.0, 96.0]);
    assert_eq!(cov.gained, 62_000.0);
    let order: Vec<_> = cov.moves.iter().map(|m| m.target).collect();
    let mut want = vec![MoveTarget::Query(0); 50];
    want.extend([MoveTarget::Query(1); 4]);
    assert_eq!(order, want);
    assert!((cov.moves[0].loss - 0.006).abs() < 1e-12);
    assert!((cov.moves[50].loss - 0.025).abs() < 1e-12);

    // Asking for everything walks the whole road map in that order.
    let all = cover(&qs, 2, 1e12, 1.0);
    assert_eq!(all.cursors, vec![0.0, 0.0]);
    assert!((all.gained - 400_000.0).abs() < 1e-6);
    let firsts: Vec<_> = [0, 49, 50, 149, 150, 199]
        .iter()
        .map(|&k| all.moves[k].target)
        .collect();
    use MoveTarget::Query as Q;
    assert_eq!(firsts, vec![Q(0), Q(0), Q(1), Q(1), Q(0), Q(0)]);
    assert!((all.moves[150].loss - 0.014).abs() < 1e-12);
}

#[test]
fn enough_not_more() {
    let qs = [query(0, 1234.5, 1.0), query(1, 777.0, 1.3)];
    for excess in [1.0, 5_000.0, 33_333.3, 100_000.0] {
        let cov = cover(&qs, 2, excess, 1.0);
        let last = cov.moves.last().unwrap().gain;
        assert!(cov.gained >= excess);
        assert!(cov.gained - last < excess, "one step fewer would not do");
    }
    assert!(cover(&qs, 2, 0.0, 1.0).moves.is_empty());
    assert!(cover(&qs, 2, -5.0, 1.0).moves.is_empty());
}

#[test]
fn identical_queries_on_a_stream_move_together() {
    let qs = [query(0, 1000.0, 1.0), query(0, 1000.0, 1.0)];
    let cov = cover(&qs, 1, 10_000.0, 1.0);
    assert_eq!(cov.cursors, vec![95.0, 95.0]);
    assert!(cov.moves.iter().all(|m| m.target == MoveTarget::Stream(0)));
}

#[test]
fn lossless_queries_never_move_and_the_shortfall_shows() {
    let qs = [
        query(0, 1000.0, 1.0),
        GreedyQuery {
            movable: false,
            ..query(0, 5000.0, 1.0)
        },
    ];
    let cov = cover(&qs, 1, 1e9, 1.0);
    assert_eq!(cov.cursors, vec![0.0, 100.0]);
    assert_eq!(cov.gained, 100_000.0);
    assert!(cov.moves.iter().all(|m| m.target == MoveTarget::Query(0)));
}

#[test]
fn a_plan_swaps_the_query_it_cuts_only_for_a_clear_gain() {
    // Same curve and weight; q1's work is 10% dearer, so from scratch it goes first.
    let fresh = [query(0, 1000.0, 1.0), query(1, 1100.0, 1.0)];
    assert_eq!(cover(&fresh, 2, 55_000.0, 1.0).cursors, vec![100.0, 50.0]);
    // The last plan cut q0 to 50% and kept q1: 10% is noise, the cut stays on q0.
    let held = |g1: f64| {
        [
            GreedyQuery {
                held: 50.0,
                ..query(0, 1000.0, 1.0)
            },
            GreedyQuery {
                held: 100.0,
                ..query(1, g1, 1.0)
            },
        ]
    };
    assert_eq!(
        cover(&held(1100.0), 2, 50_000.0, 1.0).cursors,
        vec![50.0, 100.0]
    );
    // Past what the last plan cut, both cuts take held work: the dearer q1 goes first,
    // as from scratch.
    assert_eq!(
        cover(&held(1100.0), 2, 60_000.0, 1.0).cursors,
        vec![50.0, 90.0]
    );
    // Twice as dear is a clear gain: the cut moves to q1.
    assert_eq!(
        cover(&held(2000.0), 2, 50_000.0, 1.0).cursors,
        vec![100.0, 75.0]
    );
}

#[test]
fn a_step_that_does_not_divide_100_ends_at_0() {
    let cov = cover(&[query(0, 10.0, 1.0)], 1, 1e9, 3.0);
    assert_eq!(cov.cursors, vec![0.0]);
    assert_eq!(cov.moves.len(), 34);
    assert!((cov.gained - 1000.0).abs() < 1e-9);
}
