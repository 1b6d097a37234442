//! Changing the shedding policy during a run (the dashboard's `s` key): the controller
//! takes a requested policy at its next tick, drop points start again from keep-all, and
//! the run's history counts the change. On virtual time, so deterministic.

mod support;

use spillway::runtime::assemble::engine_for;
use spillway::runtime::control::Controller;
use spillway::runtime::controls::{PolicySwitch, next_policy};
use spillway::runtime::observe::{Observers, OnTick, TickReport};
use spillway::runtime::simulated::{SimControl, SimSettings, run_simulated};
use spillway::runtime::stop::StopHandle;
use spillway::spec::Policy;
use support::*;

/// 3x overload from 1 s on (capacity 100k tuples/s).
const OVERLOAD: &str = r#"
name: switch
seed: 5
duration: 6s
engine: {mode: simulated, batch_size: 100, tick: 50ms}
streams:
  s:
    schema: {k: int, v: float, ts: timestamp}
    event_time: ts
    rate: {steps: [{at: 0s, rate: 50000}, {at: 1s, rate: 300000}]}
    fields:
      k: {uniform: {min: 0, max: 99}}
      v: {normal: {mean: 20, stddev: 6}}
      ts: now
queries:
  q:
    sql: SELECT k, v FROM s WHERE v > 25
    qos:
      latency: {p99: 100ms}
      loss_tolerance: [[100, 1.0], [0, 0.0]]
    cost: 10us
"#;

#[test]
fn a_requested_policy_takes_over_at_the_next_tick_and_is_counted() {
    let w = workload(OVERLOAD);
    let mut engine = engine_for(&w).unwrap();
    let settings = SimSettings::from_workload(&w, None).unwrap();
    let switch = PolicySwitch::new();
    let mut controller = Controller::new(
        &w,
        &mut engine,
        Policy::none(),
        settings.cores,
        w.engine.tick,
        0,
    )
    .with_switch(Some(switch.clone()));
    // none -> tail-drop -> random at 2 s, back to none at 4 s.
    let mut keeps: Vec<(i64, f64)> = Vec::new();
    let (mut at2, mut at4) = (false, false);
    let mut recorder = OnTick(|t: &TickReport<'_>| {
        if t.last {
            return;
        }
        keeps.push((
            t.elapsed,
            t.control.query_keep[0] * t.control.stream_keep[0],
        ));
        if t.elapsed >= 2 * S && !at2 {
            at2 = true;
            switch.request(next_policy(&next_policy(&Policy::none())));
        }
        if t.elapsed >= 4 * S && !at4 {
            at4 = true;
            switch.request(Policy::none());
        }
    });
    let report = run_simulated(
        &w,
        engine,
        &settings,
        SimControl {
            controller: Some(&mut controller),
            stop: &StopHandle::new(),
        },
        |_| {},
        &mut Observers::new(vec![&mut recorder]),
    );
    let min_keep = |from: i64, to: i64| {
        keeps
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .map(|(_, k)| *k)
            .fold(1.0f64, f64::min)
    };
    assert_eq!(min_keep(0, 2 * S + 1), 1.0, "none never sheds");
    assert!(
        min_keep(2 * S + 100 * MS, 4 * S) < 0.6,
        "random sheds the 3x overload"
    );
    assert_eq!(
        min_keep(4 * S + 1, 6 * S),
        1.0,
        "back to none: keep-all at once"
    );
    assert_eq!(report.summary.history.policy_switches, 2);
    assert_eq!(controller.policy().name, "none");
}
