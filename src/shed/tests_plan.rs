//! Planner tests: each policy kind end to end on hand-sized snapshots; the plan's drops must
//! deliver exactly the planned fractions and shed enough, not more.

use crate::qos::UtilityCurve;
use crate::qos::ValueHistogram;

use super::*;

fn policy(kind: ShedKind) -> PolicyParams {
    PolicyParams {
        kind,
        ..PolicyParams::default()
    }
}

fn snapshot<'a>(
    rates: &[f64],
    queries: Vec<QueryInput<'a>>,
    capacity: f64,
    kind: ShedKind,
) -> ShedInput<'a> {
    ShedInput {
        streams: rates.iter().map(|&rate| StreamInput::at(rate)).collect(),
        queries,
        capacity,
        model_error: None,
        backlog: None,
        idle: 0.0,
        policy: policy(kind),
    }
}

fn slides_curve() -> UtilityCurve {
    UtilityCurve {
        points: vec![(0.0, 0.0), (50.0, 0.7), (100.0, 1.0)],
    }
}

/// The share of its stream a query receives under the plan, as the drop points apply it.
fn effective_keep(plan: &ShedPlan, input: &ShedInput, q: usize) -> f64 {
    let at_query = match &plan.queries[q] {
        QueryDrop::KeepAll => 1.0,
        QueryDrop::Random { keep } | QueryDrop::Window { keep } | QueryDrop::Keys { keep } => *keep,
        QueryDrop::Semantic(d) => d.delivered,
    };
    plan.streams[input.queries[q].stream] * at_query
}

#[test]
fn none_never_sheds_and_tail_drop_only_reports() {
    let qs = vec![QueryInput::new(0, 1000.0)];
    let over = snapshot(&[1e7], qs, 1e9, ShedKind::None);
    let mut state = ShedState::new();
    for _ in 0..3 {
        let p = plan(&over, &mut state);
        assert!(!p.shedding && !p.drops_any());
        assert!(p.excess > 0.0);
    }
    let tail = ShedInput {
        model_error: None,
        backlog: None,
        idle: 0.0,
        policy: policy(ShedKind::TailDrop),
        ..over
    };
    let p = plan(&tail, &mut ShedState::new());
    assert!(p.shedding && !p.drops_any());
}

#[test]
fn random_sheds_enough_not_more_and_drops_deliver_the_plan() {
    let c = slides_curve();
    let qs = vec![
        QueryInput::new(0, 2000.0),
        QueryInput {
            loss: Some(&c),
            ..QueryInput::new(0, 1000.0)
        },
        QueryInput {
            weight: 2.0,
            queued: 10_000.0,
            ..QueryInput::new(1, 4000.0)
        },
    ];
    // S = 1e5 * 3000 + 5e4 * 4000 = 5e8; Q = 2 (default melt) * 4000 * 1e4 = 8e7.
    let input = snapshot(&[1e5, 5e4], qs, 4e8, ShedKind::Random);
    let p = plan(&input, &mut ShedState::new());
    assert!(p.shedding);
    assert!((p.load - 5.8e8).abs() < 1e-3);
    assert!((p.target - 3.6e8).abs() < 1e-3);
    assert_eq!(p.unmet, 0.0);
    // The largest single move saves 1e5 * 3000 / 100 (both queries of stream 0).
    assert!(p.expected_load <= p.target * (1.0 + 1e-12));
    assert!(p.expected_load > p.target - 3e6);
    for q in 0..3 {
        assert!((effective_keep(&p, &input, q) - p.delivered[q]).abs() < 1e-12);
    }
    let by_hand: f64 = (0..3)
        .map(|q| {
            input.streams[input.queries[q].stream].rate * input.queries[q].cost * p.delivered[q]
        })
        .sum::<f64>()
        + 8e7;
    assert!((p.expected_load - by_hand).abs() < 1e-3);
    assert!(p.weighted_utility < 1.0 && p.weighted_utility > 0.0);
}

#[test]
fn queries_of_one_stream_share_a_stream_drop() {
    let qs = vec![QueryInput::new(0, 1000.0), QueryInput::new(0, 1000.0)];
    // Demand 2e9 against 0.9e9: both queries drop together at the stream.
    let input = snapshot(&[1e6], qs, 1e9, ShedKind::Random);
    let p = plan(&input, &mut ShedState::new());
    assert!(p.streams[0] < 1.0);
    assert_eq!(p.queries, vec![QueryDrop::KeepAll, QueryDrop::KeepAll]);
    assert_eq!(p.delivered[0], p.delivered[1]);
    assert!((p.streams[0] - p.delivered[0]).abs() < 1e-12);
}

#[test]
fn lossless_queries_keep_everything_and_the_shortfall_is_reported() {
    let qs = vec![
        QueryInput {
            lossless: true,
            ..QueryInput::new(0, 2000.0)
        },
        QueryInput::new(0, 500.0),
    ];
    let input = snapshot(&[1e6], qs, 1e9, ShedKind::Random);
    let p = plan(&input, &mut ShedState::new());
    assert_eq!(p.queries[0], QueryDrop::KeepAll);
    assert_eq!(p.streams[0], 1.0);
    assert_eq!(p.delivered[1], 0.0);
    // Demand 2.5e9, target 0.9e9, the sheddable query saves 0.5e9 at most.
    assert!((p.unmet - 1.1e9).abs() < 1.0);
}

#[test]
fn semantic_drops_free_values_first() {
    // Utility 0 below 10, 1 at 20; 40 % of tuples are free.
    let curve = UtilityCurve {
        points: vec![(10.0, 0.0), (20.0, 1.0)],
    };
    let mut h = ValueHistogram::new(&curve, 2);
    for (bin, n) in [(0, 4), (1, 2), (2, 2), (3, 2)] {
        for _ in 0..n {
            h.record_bin(bin);
        }
    }
    let qs = vec![
        QueryInput {
            value: Some(ValueQos {
                column: 2,
                histogram: &h,
            }),
            ..QueryInput::new(0, 1000.0)
        },
        QueryInput::new(0, 1000.0),
    ];
    // Demand 2e9, target 0.9e9: shed 1.1e9 of which the free 40 % of q0 gives 0.4e9.
    let input = snapshot(&[1e6], qs, 1e9, ShedKind::Semantic);
    let p = plan(&input, &mut ShedState::new());
    let QueryDrop::Semantic(d) = &p.queries[0] else {
        panic!("q0 has a value QoS: {:?}", p.queries[0]);
    };
    assert_eq!(d.column, 2);
    assert!((d.delivered - p.delivered[0]).abs() < 1e-9);
    assert_eq!(d.keep[0], 0.0, "the free bin goes first");
    assert!(p.delivered[0] < 0.6);
    assert!(matches!(
        p.queries[1],
        QueryDrop::Random { .. } | QueryDrop::KeepAll
    ));
    assert_eq!(p.streams[0], 1.0, "a semantic drop is not merged upstream");
    assert!(p.utility[0] < 1.0);
    assert!(p.expected_load <= p.target * (1.0 + 1e-12));
}

#[test]
fn window_aware_drops_windows_of_windowed_queries_only() {
    let qs = vec![
        QueryInput {
            windowed: true,
            ..QueryInput::new(0, 1000.0)
        },
        QueryInput::new(0, 1000.0),
    ];
    let input = snapshot(&[1e6], qs, 1e9, ShedKind::WindowAware);
    let p = plan(&input, &mut ShedState::new());
    let QueryDrop::Window { keep } = p.queries[0] else {
        panic!("{:?}", p.queries[0]);
    };
    assert!((keep - p.delivered[0]).abs() < 1e-12);
    assert_eq!(p.streams[0], 1.0);
    assert!(matches!(p.queries[1], QueryDrop::Random { .. }));
    assert!((effective_keep(&p, &input, 1) - p.delivered[1]).abs() < 1e-12);
}

#[test]
fn plans_do_not_flap_on_a_load_hovering_at_the_threshold() {
    let mut state = ShedState::new();
    let mut flips = 0;
    let mut was = false;
    for k in 0..100 {
        // Demand 0.9e9 +- 1 %: right at H * C.
        let rate = if k % 2 == 0 { 0.909e6 } else { 0.891e6 };
        let input = snapshot(
            &[rate],
            vec![QueryInput::new(0, 1000.0)],
            1e9,
            ShedKind::Random,
        );
        let p = plan(&input, &mut state);
        flips += usize::from(p.shedding != was);
        was = p.shedding;
        assert!(p.expected_load <= p.target * (1.0 + 1e-12));
    }
    assert_eq!(flips, 1);
}

#[test]
fn a_latency_miss_starts_shedding_before_the_model_sees_overload() {
    let qs = vec![QueryInput {
        latency: Some(LatencyInput {
            target: 1e8,
            measured: Some(3e8),
        }),
        ..QueryInput::new(0, 1000.0)
    }];
    let input = snapshot(&[5e5], qs, 1e9, ShedKind::Random);
    let mut state = ShedState::new();
    let p = plan(&input, &mut state);
    assert!(p.shedding);
    assert!(p.correction < 1.0);
    // Feedback keeps lowering m until the model sheds.
    let mut last = p;
    for _ in 0..30 {
        last = plan(&input, &mut state);
    }
    assert!(last.drops_any());
    assert_eq!(state.last_plan(), Some(&last));
}

#[test]
fn garbage_in_does_not_panic() {
    let qs = vec![
        QueryInput {
            weight: f64::NAN,
            queued: -4.0,
            latency: Some(LatencyInput {
                target: -1.0,
                measured: Some(f64::NAN),
            }),
            ..QueryInput::new(7, f64::INFINITY)
        },
        QueryInput::new(0, f64::NAN),
    ];
    let mut input = snapshot(&[f64::NAN], qs, f64::NAN, ShedKind::Semantic);
    input.policy.step = 0.0;
    input.policy.headroom = f64::NAN;
    input.policy.correction_min = 5.0;
    let p = plan(&input, &mut ShedState::new());
    assert_eq!(p.queries.len(), 2);
    assert!(p.delivered.iter().all(|d| (0.0..=1.0).contains(d)));
}

#[test]
fn a_sliding_window_whose_rows_take_the_machine_drops_whole_keys() {
    // 2.4 M tuples/s at 500 ns each (1.2 cores), and 0.6 core of window work that does
    // not shrink with the input (taken off the capacity, as the runtime does).
    let q = QueryInput {
        fixed: 6e8,
        rows: 100_000.0,
        keep_now: 1.0,
        rows_shape: crate::shed::Rows::Grouped { overlap: 100.0 },
        keys: true,
        windowed: false,
        ..QueryInput::new(0, 500.0)
    };
    let input = snapshot(&[2.4e6], vec![q], 1e9 - 6e8 - 3.5e8, ShedKind::Random);
    let mut state = ShedState::new();
    let p = plan(&input, &mut state);
    assert!(p.shedding);
    assert!(p.input_insufficient, "said out loud");
    let QueryDrop::Keys { keep } = p.queries[0] else {
        panic!("{:?}", p.queries[0]);
    };
    assert!(keep > 0.0 && keep < 0.5, "keep {keep}");
    // The choice holds while shedding lasts.
    let p = plan(&input, &mut state);
    assert!(matches!(p.queries[0], QueryDrop::Keys { .. }));
}

#[test]
fn pauses_are_decided_afresh_once_the_idle_lift_has_doubled_the_target() {
    // The sliding window above without whole-key drops: paused.
    let q = QueryInput {
        fixed: 6e8,
        rows: 100_000.0,
        keep_now: 1.0,
        rows_shape: crate::shed::Rows::Grouped { overlap: 100.0 },
        keys: false,
        windowed: false,
        ..QueryInput::new(0, 500.0)
    };
    let input = snapshot(&[2.4e6], vec![q], 1e9 - 6e8 - 3.5e8, ShedKind::Random);
    let mut state = ShedState::new();
    let p = plan(&input, &mut state);
    assert_eq!(p.paused, vec![0]);
    assert_eq!(plan(&input, &mut state).paused, vec![0], "the pause holds");
    // The engine idled under the pause and the lift rose to 4: the pause was chosen
    // against a quarter of today's target, so the next plan decides afresh and admits
    // some of the query's input.
    state.lift = 4.0;
    let p = plan(&input, &mut state);
    assert!(p.paused.is_empty(), "paused {:?}", p.paused);
    assert!(p.delivered[0] > 0.0, "{:?}", p.delivered);
}
