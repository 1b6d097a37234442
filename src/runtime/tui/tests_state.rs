//! Reducer tests: reports, events and keys change the dashboard state as documented.

use super::msg::{Command, DropDesc, Key, Msg, Percentiles, QueryRow, StreamRow, TickMsg};
use super::state::{HISTORY, Health, LogKind, State};
use crate::core::drop::DropReason;
use crate::qos::Binning;
use crate::runtime::observe::{Event, QueryInfo, RunInfo, RunMode, StreamInfo};
use crate::runtime::stop::StopReason;
use crate::spec::Flow;

const S: i64 = 1_000_000_000;
const MS: i64 = 1_000_000;

pub(super) fn info() -> RunInfo {
    RunInfo {
        workload: "sensors".into(),
        mode: RunMode::Live,
        policy: "semantic".into(),
        shedding_policy: true,
        duration: Some(20 * S),
        cores: 1.0,
        streams: vec![StreamInfo {
            name: "readings".into(),
            flow: Flow::Push,
            source: "generator".into(),
        }],
        queries: vec![
            QueryInfo {
                name: "hot".into(),
                stream: 0,
                target: Some((100 * MS, 99.0)),
                weight: 2.0,
            },
            QueryInfo {
                name: "per_city".into(),
                stream: 0,
                target: Some((1500 * MS, 99.0)),
                weight: 1.0,
            },
        ],
    }
}

pub(super) fn started() -> State {
    let mut s = State::new();
    s.apply(Msg::Started {
        info: Box::new(info()),
        columns: vec![vec!["sensor".into(), "temp".into(), "ts".into()]],
    });
    s
}

fn row(p99: i64, keep: f64, drop: DropDesc) -> QueryRow {
    QueryRow {
        rate_in: 50_000.0,
        rate_out: 120.0,
        queued: 4096,
        queue_delay: 3 * MS,
        p50: p99 / 4,
        p99,
        target: Some(100 * MS),
        latency: Some(p99),
        keep,
        utility: 0.8,
        offered: 1000,
        lost: 250,
        drop,
        values: None,
    }
}

/// A tick at `secs` with demand `demand` x capacity; shedding when demand > 0.9.
pub(super) fn tick(secs: f64, demand: f64, dropped: u64) -> TickMsg {
    let shedding = demand > 0.9;
    let binning = Binning::new(20.0, 40.0, 4);
    let semantic = DropDesc::Semantic {
        column: 1,
        binning,
        keep: vec![0.0, 0.0, 0.0, 0.4, 1.0, 1.0],
    };
    let mut hot = row(
        if shedding { 80 * MS } else { 20 * MS },
        if shedding { 0.3 } else { 1.0 },
        if shedding {
            semantic
        } else {
            DropDesc::KeepAll
        },
    );
    hot.values = Some((binning, vec![5.0, 40.0, 80.0, 30.0, 8.0, 1.0]));
    let mut city = row(900 * MS, 1.0, DropDesc::KeepAll);
    city.target = Some(1500 * MS);
    let mut d = [0u64; DropReason::COUNT];
    d[DropReason::ShedSemantic.index()] = dropped;
    TickMsg {
        elapsed: (secs * 1e9) as i64,
        demand,
        target: 0.9,
        busy: demand.min(1.0),
        shedding,
        utility: 0.85,
        streams: vec![StreamRow {
            name: "readings".into(),
            rate: 50_000.0,
            keep: 1.0,
        }],
        queries: vec![hot, city],
        dropped: d,
        percentiles: Some(vec![
            Percentiles {
                count: 120,
                p50: 11 * MS,
                p90: 30 * MS,
                p99: 42 * MS,
                p999: 55 * MS,
                max: 61 * MS,
            },
            Percentiles::default(),
        ]),
    }
}

#[test]
fn start_sets_policy_and_per_query_slots_and_logs() {
    let s = started();
    assert_eq!(s.policy, "semantic");
    assert_eq!(s.query_names(), ["hot", "per_city"]);
    assert_eq!(s.violating_since, [None, None]);
    assert_eq!(s.log.len(), 1);
    assert_eq!(s.health(), Health::Ok);
}

#[test]
fn ticks_build_a_minute_of_history_with_shed_rates() {
    let mut s = started();
    s.apply(Msg::Tick(Box::new(tick(1.0, 0.5, 0))));
    s.apply(Msg::Tick(Box::new(tick(1.5, 2.0, 1000))));
    assert_eq!(s.history.len(), 2);
    // 1000 tuples in half a second.
    assert_eq!(
        s.history[1].shed_rate[DropReason::ShedSemantic.index()],
        2000.0
    );
    assert_eq!(s.history[1].p99_ms[0], Some(80.0));
    assert_eq!(s.health(), Health::Shedding);
    assert_eq!(s.percentiles[0].p99, 42 * MS);
    // Older than a minute falls off.
    s.apply(Msg::Tick(Box::new(tick(
        1.5 + HISTORY as f64 / 1e9 + 1.0,
        0.5,
        1000,
    ))));
    assert_eq!(s.history.len(), 1);
}

#[test]
fn violations_are_timed_and_logged_red_then_green() {
    let mut s = started();
    s.apply(Msg::Tick(Box::new(tick(2.0, 2.0, 0))));
    s.apply(Msg::Event(Event::ViolationBegan {
        at: 2 * S,
        query: 0,
        latency: 180 * MS,
        target: 100 * MS,
    }));
    assert_eq!(s.health(), Health::Violating);
    s.apply(Msg::Tick(Box::new(tick(3.0, 2.0, 0))));
    assert_eq!(s.violation_secs(0), 1.0);
    s.apply(Msg::Event(Event::ViolationEnded {
        at: 4 * S,
        query: 0,
        lasted: 2 * S,
    }));
    s.apply(Msg::Tick(Box::new(tick(5.0, 0.5, 0))));
    assert_eq!(s.violation_secs(0), 2.0);
    assert_eq!(s.health(), Health::Ok);
    let kinds: Vec<LogKind> = s.log.iter().map(|l| l.kind).collect();
    assert_eq!(kinds, [LogKind::Info, LogKind::Bad, LogKind::Good]);
    assert!(s.log[1].text.contains("hot: 180 ms > target 100 ms"));
    assert!(s.log[2].text.contains("recovered after 2.0 s"));
}

#[test]
fn plan_changes_malformed_and_stops_are_logged() {
    let mut s = started();
    s.apply(Msg::Event(Event::PlanChanged {
        at: S,
        shedding: true,
        stream_keep: vec![1.0],
        query_keep: vec![0.42, 1.0],
    }));
    s.apply(Msg::Event(Event::PlanChanged {
        at: S,
        shedding: true,
        stream_keep: vec![1.0],
        query_keep: vec![0.30, 1.0],
    }));
    s.apply(Msg::Event(Event::Malformed {
        at: S,
        stream: 0,
        count: 3,
        sample: "line 7: not a number".into(),
    }));
    s.apply(Msg::Event(Event::StopRequested {
        at: 2 * S,
        reason: StopReason::Requested,
        abort: false,
    }));
    let texts: Vec<&str> = s.log.iter().map(|l| l.text.as_str()).collect();
    // Consecutive plan changes share one line: the latest, counted.
    assert_eq!(texts[1], "plan: shedding, keep hot 0.30 (2 changes)");
    assert_eq!(texts[2], "readings: 3 malformed, e.g. line 7: not a number");
    assert!(texts[3].starts_with("stop requested: draining"));
    assert!(s.stopping);
}

#[test]
fn keys_select_pause_help_and_ask_the_run() {
    let mut s = started();
    assert_eq!(s.apply(Msg::Key(Key::Down)), None);
    assert_eq!(s.selected, 1);
    s.apply(Msg::Key(Key::Down));
    assert_eq!(s.selected, 0, "selection wraps");
    s.apply(Msg::Key(Key::Up));
    assert_eq!(s.selected, 1);

    // Pause freezes what is shown; the state underneath goes on.
    s.apply(Msg::Tick(Box::new(tick(1.0, 0.5, 0))));
    s.apply(Msg::Key(Key::Pause));
    s.apply(Msg::Tick(Box::new(tick(2.0, 2.0, 0))));
    assert_eq!(s.shown().elapsed(), S);
    assert_eq!(s.elapsed(), 2 * S);
    s.apply(Msg::Key(Key::Pause));
    assert_eq!(s.shown().elapsed(), 2 * S);

    s.apply(Msg::Key(Key::Help));
    assert!(s.help);
    s.apply(Msg::Key(Key::Escape));
    assert!(!s.help);

    assert_eq!(
        s.apply(Msg::Key(Key::Faster)),
        Some(Command::ScaleRate(1.25))
    );
    assert_eq!(
        s.apply(Msg::Key(Key::Faster)),
        Some(Command::ScaleRate(1.25))
    );
    assert!((s.rate_scale - 1.5625).abs() < 1e-12);
    // The header shows the scale sources use: clamped as the shared scale is.
    let mut capped = started();
    let shared = crate::runtime::controls::RateScale::new();
    for _ in 0..100 {
        if let Some(Command::ScaleRate(f)) = capped.apply(Msg::Key(Key::Faster)) {
            shared.scale_by(f);
        }
    }
    assert_eq!(capped.rate_scale, shared.get());
    assert_eq!(capped.rate_scale, crate::runtime::controls::SCALE_BOUNDS.1);
    assert_eq!(
        s.apply(Msg::Key(Key::Slower)),
        Some(Command::ScaleRate(0.8))
    );
    assert_eq!(
        s.apply(Msg::Key(Key::CyclePolicy)),
        Some(Command::CyclePolicy)
    );
    s.apply(Msg::PolicyRequested("random".into()));
    assert_eq!(s.policy, "random");
    assert_eq!(
        s.apply(Msg::Key(Key::Quit)),
        Some(Command::Stop { interrupt: false })
    );
    assert_eq!(
        s.apply(Msg::Key(Key::Interrupt)),
        Some(Command::Stop { interrupt: true })
    );
    assert!(s.stopping);
}

#[test]
fn terminal_keys_decode() {
    use super::app::key_of;
    use crossterm::event::{KeyCode, KeyModifiers};
    let none = KeyModifiers::NONE;
    assert_eq!(key_of(KeyCode::Char('q'), none), Some(Key::Quit));
    assert_eq!(
        key_of(KeyCode::Char('c'), KeyModifiers::CONTROL),
        Some(Key::Interrupt)
    );
    assert_eq!(key_of(KeyCode::Char('c'), none), None);
    assert_eq!(key_of(KeyCode::Char('+'), none), Some(Key::Faster));
    assert_eq!(key_of(KeyCode::Up, none), Some(Key::Up));
    assert_eq!(key_of(KeyCode::Char('s'), none), Some(Key::CyclePolicy));
}
