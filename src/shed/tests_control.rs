//! Closed-loop test of the latency feedback: the planner drives a tiny simulated plant whose
//! true per-tuple cost is twice what the model is told, and must still bring latency under
//! its target with a keep fraction that settles.

use super::*;

/// One query on one stream, one core: queue `q(k+1) = max(0, q + arrivals * keep -
/// capacity_per_tick / true_cost)`, latency `q * true_cost`.
struct Plant {
    queue: f64,
    true_cost: f64,
    arrivals_per_tick: f64,
    work_per_tick: f64,
}

impl Plant {
    fn latency(&self) -> f64 {
        self.queue * self.true_cost
    }

    fn tick(&mut self, keep: f64) {
        self.queue = (self.queue + self.arrivals_per_tick * keep
            - self.work_per_tick / self.true_cost)
            .max(0.0);
    }
}

#[test]
fn feedback_holds_latency_under_target_when_the_model_is_2x_optimistic() {
    let tick = 0.1; // seconds
    let capacity = 1e9; // one core
    let rate = 750_000.0; // true load 1.5 cores; the model believes 0.75
    let (true_cost, model_cost) = (2000.0, 1000.0);
    let target = 50e6; // 50 ms
    let mut plant = Plant {
        queue: 0.0,
        true_cost,
        arrivals_per_tick: rate * tick,
        work_per_tick: capacity * tick,
    };
    let mut state = ShedState::new();
    let mut keeps = Vec::new();
    let mut latencies = Vec::new();
    for _ in 0..300 {
        let input = ShedInput {
            streams: vec![StreamInput::at(rate)],
            queries: vec![QueryInput {
                queued: plant.queue,
                latency: Some(LatencyInput {
                    target,
                    measured: Some(plant.latency()),
                }),
                ..QueryInput::new(0, model_cost)
            }],
            capacity,
            model_error: None,
            backlog: None,
            idle: 0.0,
            policy: PolicyParams::default(),
        };
        let p = plan(&input, &mut state);
        let keep = p.streams[0]
            * match p.queries[0] {
                QueryDrop::KeepAll => 1.0,
                QueryDrop::Random { keep } => keep,
                ref other => panic!("random policy gave {other:?}"),
            };
        plant.tick(keep);
        keeps.push(keep);
        latencies.push(plant.latency());
    }
    // Sustainable keep is 2/3 (true load 1.5 cores on 1).
    let tail = &keeps[keeps.len() - 20..];
    let (lo, hi) = tail
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &k| (lo.min(k), hi.max(k)));
    assert!(
        hi - lo < 0.05,
        "keep must settle: last 20 ticks span {lo}..{hi}"
    );
    assert!((0.55..0.75).contains(&lo), "keep near 2/3, got {lo}..{hi}");
    let worst = latencies[latencies.len() - 50..]
        .iter()
        .copied()
        .fold(0.0, f64::max);
    assert!(
        worst < target,
        "latency over the last 50 ticks peaks at {worst} ns"
    );
}

#[test]
fn an_accurate_model_needs_no_correction() {
    let capacity = 1e9;
    let rate = 1_500_000.0;
    let cost = 1000.0;
    let mut plant = Plant {
        queue: 0.0,
        true_cost: cost,
        arrivals_per_tick: rate * 0.1,
        work_per_tick: capacity * 0.1,
    };
    let mut state = ShedState::new();
    for _ in 0..100 {
        let input = ShedInput {
            streams: vec![StreamInput::at(rate)],
            queries: vec![QueryInput {
                queued: plant.queue,
                latency: Some(LatencyInput {
                    target: 50e6,
                    measured: Some(plant.latency()),
                }),
                ..QueryInput::new(0, cost)
            }],
            capacity,
            model_error: None,
            backlog: None,
            idle: 0.0,
            policy: PolicyParams::default(),
        };
        let p = plan(&input, &mut state);
        plant.tick(p.delivered[0]);
        assert!(plant.latency() < 50e6);
    }
    assert_eq!(state.correction(), 1.0);
}

/// One tick of a plant whose model is 20x optimistic (the live failure of a sliding-window
/// query): the correction would sit at its floor for ever.
fn run_plant(
    ticks: usize,
    model_cost: f64,
    true_cost: f64,
    state: &mut ShedState,
) -> Vec<ShedPlan> {
    let capacity = 1e9;
    let rate = 1_500_000.0 / (true_cost / 1000.0);
    let mut plant = Plant {
        queue: 0.0,
        true_cost,
        arrivals_per_tick: rate * 0.1,
        work_per_tick: capacity * 0.1,
    };
    let mut plans = Vec::new();
    let mut model_error = None;
    for _ in 0..ticks {
        let input = ShedInput {
            streams: vec![StreamInput::at(rate)],
            queries: vec![QueryInput {
                queued: plant.queue,
                latency: Some(LatencyInput {
                    target: 200e6,
                    measured: Some(plant.latency()),
                }),
                ..QueryInput::new(0, model_cost)
            }],
            capacity,
            model_error,
            backlog: None,
            idle: 0.0,
            policy: PolicyParams::default(),
        };
        let p = plan(&input, state);
        plant.tick(p.delivered[0]);
        // What the monitor reports: the work that arrived (at the true cost) against the
        // plan's prediction of it.
        let arrived = rate * p.delivered[0] * true_cost;
        model_error = (p.expected_input > 0.0).then(|| arrived / p.expected_input - 1.0);
        plans.push(p);
    }
    plans
}

#[test]
fn a_correction_at_its_bound_refits_the_model_instead_of_staying_pinned() {
    let mut state = ShedState::new();
    // True cost 40x the model's: more than the correction's floor (0.05) can absorb.
    let plans = run_plant(300, 50.0, 2000.0, &mut state);
    let refits: Vec<f64> = plans.iter().filter_map(|p| p.refit).collect();
    assert!(!refits.is_empty(), "no refit");
    // The model and the correction together account for the error (a refit moves at most
    // 2x of it into the model, keeping the effective model, so the correction is off its
    // floor and free to move either way).
    let last = plans.last().unwrap();
    assert!(state.model_scale() >= 2.0, "scale {}", state.model_scale());
    assert!(
        state.model_scale() / last.correction > 10.0,
        "scale {} / m {}",
        state.model_scale(),
        last.correction
    );
    // Afterwards the correction is free: not at its floor over the last 50 ticks.
    let tail = &plans[250..];
    assert!(tail.iter().all(|p| p.correction > 0.05 + 1e-9));
    // ...and the keep fraction is near the sustainable 1/1.5 * H.
    let k = tail.last().unwrap().delivered[0];
    assert!(k > 0.4 && k < 0.8, "keep {k}");
}

#[test]
fn one_odd_tick_moves_the_correction_by_a_bounded_step_and_does_not_lift_shedding() {
    let mut state = ShedState::new();
    let plans = run_plant(100, 1000.0, 2000.0, &mut state);
    let before = plans.last().unwrap().clone();
    assert!(before.shedding);
    // One tick where the engine paused: a latency far above target, a rate of nothing.
    let odd = ShedInput {
        streams: vec![StreamInput::at(0.0)],
        queries: vec![QueryInput {
            latency: Some(LatencyInput {
                target: 200e6,
                measured: Some(5e9),
            }),
            ..QueryInput::new(0, 1000.0)
        }],
        capacity: 1e9,
        model_error: None,
        backlog: None,
        idle: 0.0,
        policy: PolicyParams::default(),
    };
    let p = plan(&odd, &mut state);
    assert!(p.shedding, "one calm-looking tick lifted shedding");
    assert!(
        (p.correction - before.correction).abs() <= MAX_STEP + 1e-12,
        "{} -> {}",
        before.correction,
        p.correction
    );
}

/// A steady 2x overload whose latencies still have room to spare, with the backlog's floor
/// as `backlog` says.
pub(super) fn backlogged(backlog: Option<BacklogInput>) -> ShedInput<'static> {
    ShedInput {
        streams: vec![StreamInput::at(2_000_000.0)],
        queries: vec![QueryInput {
            latency: Some(LatencyInput {
                target: 200e6,
                measured: Some(20e6),
            }),
            ..QueryInput::new(0, 1000.0)
        }],
        capacity: 1e9,
        model_error: None,
        backlog,
        idle: 0.0,
        policy: PolicyParams::default(),
    }
}

#[test]
fn a_growing_backlog_cuts_the_correction_by_its_growth_once_per_lag() {
    let mut state = ShedState::new();
    let growing = Some(BacklogInput {
        floor: 10e6,
        growth: 90e6,
    });
    let p = plan(&backlogged(growing), &mut state);
    assert!(p.shedding);
    // 9% of capacity admitted too much, at headroom 0.9: the correction loses 0.1.
    assert!((p.correction - 0.9).abs() < 1e-9, "{}", p.correction);
    assert_eq!(
        p.headroom, 0.9,
        "headroom does not rise on a growing backlog"
    );
    // The floors lag the cut: the next ticks hold (latencies with room do not push back up).
    for _ in 0..3 {
        let q = plan(&backlogged(growing), &mut state);
        assert_eq!(q.correction, p.correction);
    }
    let q = plan(&backlogged(growing), &mut state);
    assert!((q.correction - 0.8).abs() < 1e-9, "{}", q.correction);
}

#[test]
fn headroom_rises_only_while_the_engine_keeps_up() {
    let mut state = ShedState::new();
    let deep = Some(BacklogInput {
        floor: 10e6,
        growth: 0.0,
    });
    for _ in 0..5 {
        assert_eq!(plan(&backlogged(deep), &mut state).headroom, 0.9);
    }
    let empty = Some(BacklogInput {
        floor: 0.0,
        growth: 0.0,
    });
    let mut h = 0.9;
    for _ in 0..5 {
        let p = plan(&backlogged(empty), &mut state);
        assert!(p.headroom > h, "{} after {h}", p.headroom);
        h = p.headroom;
    }
    // Without a measured backlog (the first ticks of a run) it does not rise either.
    let mut fresh = ShedState::new();
    for _ in 0..5 {
        assert_eq!(plan(&backlogged(None), &mut fresh).headroom, 0.9);
    }
}

/// `backlogged` with the engine idle `idle` of the tick and the latency measured at
/// `measured` ns (target 200 ms).
fn idling(idle: f64, measured: f64) -> ShedInput<'static> {
    let mut input = backlogged(Some(BacklogInput {
        floor: 0.0,
        growth: 0.0,
    }));
    input.idle = idle * input.capacity;
    input.queries[0].latency = Some(LatencyInput {
        target: 200e6,
        measured: Some(measured),
    });
    input
}

#[test]
fn idle_time_under_a_shedding_plan_lifts_the_target_a_bounded_step_a_tick() {
    let mut state = ShedState::new();
    // The first plan sheds; nothing was measured under a shedding plan yet.
    let p = plan(&idling(0.3, 20e6), &mut state);
    assert!(p.shedding && p.drops_any());
    assert_eq!(p.lift, 1.0);
    // A third of each tick idle with ample slack: at most +10% a tick, the target with it.
    let mut lift = 1.0;
    for _ in 0..5 {
        let p = plan(&idling(0.3, 20e6), &mut state);
        assert!(
            p.lift > lift && p.lift <= lift * 1.1 + 1e-12,
            "{lift} -> {}",
            p.lift
        );
        assert!((p.target - p.headroom * 1e9 * p.correction * p.lift).abs() < 1e-3);
        lift = p.lift;
    }
    // Idle under `IDLE_TARGET`: the lift holds.
    assert_eq!(plan(&idling(0.04, 20e6), &mut state).lift, lift);
    // A latency above its setpoint (0.8 x 200 ms) takes it down at once, to 1 at least.
    let p = plan(&idling(0.3, 170e6), &mut state);
    assert!((p.lift - lift * 0.8).abs() < 1e-9, "{}", p.lift);
    for _ in 0..10 {
        plan(&idling(0.0, 170e6), &mut state);
    }
    assert_eq!(state.lift, 1.0);
}

#[test]
fn idle_time_without_latency_slack_or_under_a_plan_short_of_its_target_lifts_nothing() {
    // Latency at 65% of target: slack 0.15, not ample.
    let mut state = ShedState::new();
    for _ in 0..5 {
        assert_eq!(plan(&idling(0.5, 130e6), &mut state).lift, 1.0);
    }
    // No latency measured: nothing to judge the slack by.
    let mut state = ShedState::new();
    let mut input = idling(0.5, 20e6);
    input.queries[0].latency = None;
    for _ in 0..5 {
        assert_eq!(plan(&input, &mut state).lift, 1.0);
    }
    // A plan that handed out less than its target (keeps rising a step a tick): its idle
    // time does not wind the lift up.
    let mut state = ShedState::new();
    let mut short = plan(&idling(0.5, 20e6), &mut state);
    short.expected_load = 0.5 * short.target;
    state.last = Some(short);
    assert_eq!(plan(&idling(0.5, 20e6), &mut state).lift, 1.0);
    // A plan whose query received nothing of its keep (a window-aware drop withheld the
    // whole window): the idle time is the withheld window's, not the model's.
    let mut state = ShedState::new();
    plan(&idling(0.5, 20e6), &mut state);
    let mut withheld = idling(0.5, 20e6);
    withheld.queries[0].keep_now = 0.0;
    assert_eq!(plan(&withheld, &mut state).lift, 1.0);
    // The same tick with the keep received lifts.
    assert!(plan(&idling(0.5, 20e6), &mut state).lift > 1.0);
    // A plan whose keep the rise limit held back (keeps climbing a step a tick after a
    // burst, priced as if they used the target): its idle time does not lift.
    let mut state = ShedState::new();
    let mut climbing = plan(&idling(0.5, 20e6), &mut state);
    climbing.rising = true;
    state.last = Some(climbing);
    assert_eq!(plan(&idling(0.5, 20e6), &mut state).lift, 1.0);
}
