//! Fan-out in the load model: work per tuple past a stream's drop point that only a stream
//! drop saves. The planner must count it in the load, hand it to the greedy as the gain of
//! lowering a stream's highest keep, and never treat it as sheddable where the stream's drop
//! point cannot take the drops.

use crate::qos::UtilityCurve;

use super::greedy::tests::query;
use super::*;

fn slides_curve() -> UtilityCurve {
    UtilityCurve {
        points: vec![(0.0, 0.0), (50.0, 0.8), (100.0, 1.0)],
    }
}

#[test]
fn lowering_a_streams_highest_cursor_gains_its_shared_work() {
    // Two linear queries on one stream, 1 ns/s per percent each, weights 1 and 10; the
    // stream's fan-out saves 100 per percent of its highest cursor. Moving both together
    // (loss 0.11 for gain 102) beats moving the cheap one alone (loss 0.01 for gain 1).
    let qs = [query(0, 1.0, 1.0), query(0, 1.0, 10.0)];
    let cov = cover_shared(&qs, 1, &[100.0], 1000.0, 1.0);
    assert_eq!(cov.cursors, vec![90.0, 90.0]);
    assert!(cov.moves.iter().all(|m| m.target == MoveTarget::Stream(0)));
    assert!((cov.gained - 1020.0).abs() < 1e-9);
    // Without the shared gain, the cheap query goes first and all the way, and query work
    // alone cannot cover the excess.
    let alone = cover_shared(&qs, 1, &[], 150.0, 1.0);
    assert_eq!(alone.cursors, vec![0.0, 50.0]);
    assert_eq!(cover_shared(&qs, 1, &[], 1000.0, 1.0).gained, 200.0);
}

#[test]
fn a_paused_query_never_holds_up_its_stream_and_the_last_one_gains_alone() {
    let qs = [
        query(0, 1.0, 1.0),
        GreedyQuery {
            movable: false,
            paused: true,
            ..query(0, 5.0, 1.0)
        },
    ];
    let cov = cover_shared(&qs, 1, &[100.0], 505.0, 1.0);
    // Each step of the one running query saves its own 1 and the stream's 100.
    assert_eq!(cov.cursors[0], 95.0);
    assert!((cov.gained - 505.0).abs() < 1e-9);
    // A query that cannot move (lossless, not paused) keeps the stream's cursor at 100:
    // no step gains the shared work.
    let held = [
        query(0, 1.0, 1.0),
        GreedyQuery {
            movable: false,
            ..query(0, 5.0, 1.0)
        },
    ];
    let cov = cover_shared(&held, 1, &[100.0], 1e9, 1.0);
    assert_eq!(cov.cursors, vec![0.0, 100.0]);
    assert!((cov.gained - 100.0).abs() < 1e-9);
}

/// The soak's shape in miniature: one stream at 10 M tuples/s whose fan-out costs 60 ns a
/// tuple (60% of a core), four concave aggregates at 20 ns and a cheap weighted alert.
fn fan_out_heavy(curve: &UtilityCurve, lossless_alert: bool) -> ShedInput<'_> {
    let agg = QueryInput {
        loss: Some(curve),
        ..QueryInput::new(0, 20.0)
    };
    let alert = QueryInput {
        weight: 2.0,
        lossless: lossless_alert,
        ..QueryInput::new(0, 5.0)
    };
    ShedInput {
        streams: vec![StreamInput {
            rate: 1e7,
            ingest: 60.0,
        }],
        queries: vec![agg, agg, agg, agg, alert],
        capacity: 1e9,
        model_error: None,
        backlog: None,
        idle: 0.0,
        policy: PolicyParams {
            kind: ShedKind::Random,
            adaptive_headroom: false,
            ..PolicyParams::default()
        },
    }
}

#[test]
fn fan_out_counts_in_the_load_and_a_stream_drop_sheds_it() {
    let curve = slides_curve();
    let input = fan_out_heavy(&curve, false);
    let p = plan(&input, &mut ShedState::new());
    // Demand: 10 M/s x (60 + 4 x 20 + 5) ns = 1.45 s of work per second.
    assert!((p.load - 1.45e9).abs() < 1.0, "load {}", p.load);
    assert!(p.shedding);
    // The stream drop point takes the cut, so the fan-out shrinks with it, and no query is
    // paused: query drops alone could not cover 0.55 s/s beside 0.6 s/s of fan-out.
    let k = p.streams[0];
    assert!(k < 1.0, "stream keep {k}");
    assert!(p.paused.is_empty(), "paused {:?}", p.paused);
    // The prediction is the model at the installed keeps, and it meets the target.
    let keep_of = |q: usize| {
        k * match &p.queries[q] {
            QueryDrop::KeepAll => 1.0,
            QueryDrop::Random { keep } => *keep,
            other => panic!("{other:?}"),
        }
    };
    let work: f64 = (0..5)
        .map(|q| 1e7 * keep_of(q) * input.queries[q].cost)
        .sum();
    let fan_out = 1e7 * 60.0 * k;
    assert!(
        (p.ingest - fan_out).abs() < 1e-3 * fan_out,
        "{} vs {fan_out}",
        p.ingest
    );
    assert!((p.expected_load - (work + fan_out)).abs() < 1e-6 * p.expected_load);
    assert!(
        p.expected_load <= 1.02 * p.target,
        "{} > {}",
        p.expected_load,
        p.target
    );
    assert!(p.expected_load > 0.9 * p.target, "enough, not more");
    assert!(p.weighted_utility > 0.5, "utility {}", p.weighted_utility);
}

#[test]
fn fan_out_a_stream_drop_cannot_take_stays_in_the_load() {
    // With the alert lossless, the stream drop point must keep everything: the fan-out is
    // all there, and only the aggregates' own work can go.
    let curve = slides_curve();
    let input = fan_out_heavy(&curve, true);
    let p = plan(&input, &mut ShedState::new());
    assert_eq!(p.streams, vec![1.0]);
    assert!((p.ingest - 6e8).abs() < 1.0);
    assert!(p.expected_load >= 6e8 + 5e7);
    assert_eq!(p.queries[4], QueryDrop::KeepAll);
}
