//! The runtime seams: observers see every tick and agree with the summary; pull sources
//! lose nothing; an idle source stops holding arrival-time windows back; the stop handle
//! stops and aborts.

mod support;

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spillway::core::engine::Emitted;
use spillway::core::schema::Nanos;
use spillway::runtime::assemble::{Sinks, engine_for, shell_runtime, sources_for};
use spillway::runtime::control::Controller;
use spillway::runtime::live::{LiveRun, run_live};
use spillway::runtime::observe::{Event, EventLog, Observers, OnTick, TickReport};
use spillway::runtime::outputs::Outputs;
use spillway::runtime::simulated::{SimControl, SimSettings, run_simulated};
use spillway::runtime::sink::Sink;
use spillway::runtime::source::{Source, SourceContext};
use spillway::runtime::stop::{StopHandle, StopReason};
use spillway::spec::{Flow, Policy};
use support::{MS, S, policy, workload};

const OVERLOAD: &str = r#"
name: obs
seed: 7
duration: 3s
engine: {tick: 100ms, batch_size: 256}
streams:
  s:
    schema: {k: int, v: float}
    source:
      generator:
        rate: {steps: [{at: 0s, rate: 20000}, {at: 1s, rate: 60000}, {at: 2s, rate: 20000}]}
        fields: {k: {uniform: {min: 0, max: 9}}, v: {uniform: {min: 0, max: 100}}}
queries:
  per_key:
    sql: SELECT k, COUNT(*) AS n FROM s GROUP BY k, TUMBLE(PROCTIME(), INTERVAL '500' MILLISECOND)
    qos: {latency: {p99: 50ms}}
    cost: 20us
  big:
    sql: SELECT k, v FROM s WHERE v > 90
    qos: {latency: {p99: 50ms}}
    cost: 5us
"#;

#[derive(Default, Clone, Copy, Debug, PartialEq)]
struct Totals {
    processed: u64,
    results: u64,
    shed: u64,
    queue_full: u64,
}

#[test]
fn an_observer_sees_every_tick_and_its_records_equal_the_summary() {
    let w = workload(OVERLOAD);
    let mut engine = engine_for(&w).unwrap();
    let settings = SimSettings::from_workload(&w, None).unwrap();
    let mut controller = Controller::new(&w, &mut engine, policy("random"), 1.0, w.engine.tick, 0);
    let mut ticks: Vec<(Nanos, bool, Vec<Totals>, u64)> = Vec::new();
    let mut recorder = OnTick(|t: &TickReport<'_>| {
        let totals = t
            .control
            .qos
            .engine
            .queries
            .iter()
            .map(|q| Totals {
                processed: q.processed,
                results: q.results,
                shed: q.shed(),
                queue_full: q.queue_full(),
            })
            .collect();
        let recorded: u64 = t.tick_latency.iter().map(|h| h.len()).sum();
        ticks.push((t.elapsed, t.last, totals, recorded));
    });
    let mut log = EventLog::default();
    let report = run_simulated(
        &w,
        engine,
        &settings,
        SimControl {
            controller: Some(&mut controller),
            stop: &StopHandle::new(),
        },
        |_| {},
        &mut Observers::new(vec![&mut recorder, &mut log]),
    );
    // One report per 100 ms tick of the 3 s run (draining may add a few), then the last.
    let regular: Vec<_> = ticks.iter().filter(|t| !t.1).collect();
    assert!(regular.len() >= 30, "{} ticks", regular.len());
    for (i, t) in regular.iter().enumerate() {
        assert_eq!(t.0, (i as i64 + 1) * 100 * MS, "tick {i} at {}", t.0);
    }
    let last = ticks.last().unwrap();
    assert!(last.1, "the final report comes last");
    // The final report's counters are the summary's, query by query.
    let summary = &report.summary;
    for (q, s) in last.2.iter().zip(&summary.snapshot.queries) {
        assert_eq!(q.processed, s.processed);
        assert_eq!(q.results, s.results);
        assert_eq!(q.shed, s.shed());
        assert_eq!(q.queue_full, s.queue_full());
        assert!(s.balances());
    }
    // Every result latency was seen by exactly one tick.
    let seen: u64 = ticks.iter().map(|t| t.3).sum();
    let results: u64 = summary.snapshot.queries.iter().map(|q| q.results).sum();
    assert_eq!(seen, results);
    // The overload made the shedder act, and the events say so, in order.
    assert!(matches!(log.0.first(), Some(Event::RunStarted(i)) if i.queries.len() == 2));
    assert!(matches!(log.0.last(), Some(Event::RunEnded(s)) if **s == *summary));
    assert!(
        log.0
            .iter()
            .any(|e| matches!(e, Event::PlanChanged { shedding: true, .. })),
        "{:?}",
        log.0
    );
    assert!(summary.snapshot.queries.iter().any(|q| q.shed() > 0));
}

const FIREHOSE: &str = r#"
name: firehose
duration: 2s
engine: {tick: 100ms, batch_size: 500, queue_capacity: 2000}
streams:
  s:
    schema: {k: int}
    source: {generator: {rate: unlimited, count: 50000}}
queries:
  q:
    sql: SELECT k, COUNT(*) AS n FROM s GROUP BY k, TUMBLE(PROCTIME(), INTERVAL '100' MILLISECOND)
    cost: 10us
"#;

#[test]
fn a_pull_source_loses_nothing_where_push_overflows() {
    let w = workload(FIREHOSE);
    assert_eq!(
        w.streams[0].source.flow,
        Flow::Pull,
        "unlimited defaults to pull"
    );
    let run = support::simulate(&w, Policy::none(), 1.0, None);
    let q = &run.snapshot.queries[0];
    // 10 us a tuple: 2 s of virtual time process 200k, so all 50k arrive and are processed.
    assert_eq!(q.offered, 50_000);
    assert_eq!(q.processed, 50_000);
    assert_eq!(q.queue_full(), 0);
    // Queues never held more than their bound.
    assert!(run.reports.iter().all(|r| r.qos.queries[0].queued <= 2000));

    // The same tuples pushed at a paced 1 M/s overflow the same queue.
    let push = FIREHOSE.replace(
        "source: {generator: {rate: unlimited, count: 50000}}",
        "source: {generator: {rate: 1000000, count: 50000}, flow: push}",
    );
    let w = workload(&push);
    let run = support::simulate(&w, Policy::none(), 1.0, None);
    let q = &run.snapshot.queries[0];
    assert_eq!(q.offered, 50_000);
    assert!(q.queue_full() > 40_000, "queue-full {}", q.queue_full());
    assert!(q.balances());
}

/// A source that sends one batch, then stays silent (its frontier never moves) until the
/// run stops: a quiet socket.
struct Silent;

impl Source for Silent {
    fn kind(&self) -> &'static str {
        "silent"
    }

    fn run(self: Box<Self>, ctx: SourceContext) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            let mut b =
                spillway::core::batch::Batch::new(&[spillway::core::schema::DataType::Int], 1);
            b.push_row(ctx.clock.now(), &[spillway::core::schema::Scalar::Int(1)]);
            let _ = ctx.send(b).await;
            while !ctx.stopped() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    }
}

/// Records when each result row was emitted.
struct Times(Arc<Mutex<Vec<Nanos>>>);

impl Sink for Times {
    fn write(&mut self, r: &Emitted<'_>) -> io::Result<()> {
        let mut t = self.0.lock().unwrap();
        t.extend(std::iter::repeat_n(r.emitted_at, r.batch.len()));
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Runs a live stream `a` beside a silent stream `b` whose idle timeout is `idle`; returns
/// the emission times of the window rows of the query on `a` and of the one on `b`.
fn windows_beside_a_silent_source(idle: &str) -> (Vec<Nanos>, Vec<Nanos>) {
    let text = format!(
        r#"
name: idle
duration: 1500ms
engine: {{tick: 20ms}}
streams:
  a:
    schema: {{x: int}}
    source: {{generator: {{rate: 2000}}}}
  b:
    schema: {{y: int}}
    source: {{generator: {{rate: 1}}, idle_timeout: {idle}}}
queries:
  on_a:
    sql: SELECT COUNT(*) AS n FROM a GROUP BY TUMBLE(PROCTIME(), INTERVAL '100' MILLISECOND)
  on_b:
    sql: SELECT COUNT(*) AS n FROM b GROUP BY TUMBLE(PROCTIME(), INTERVAL '100' MILLISECOND)
"#
    );
    let w = workload(&text);
    let engine = engine_for(&w).unwrap();
    let (on_a, on_b) = (
        Arc::new(Mutex::new(Vec::new())),
        Arc::new(Mutex::new(Vec::new())),
    );
    let mut sinks = Sinks {
        sinks: vec![Box::new(Times(on_a.clone())), Box::new(Times(on_b.clone()))],
        route: vec![Some(0), Some(1)],
        files: Vec::new(),
    };
    let mut sources = sources_for(&w).unwrap();
    sources[1] = Box::new(Silent);
    let runtime = shell_runtime().unwrap();
    let mut outputs = Outputs::new(&mut sinks, 2);
    let summary = run_live(
        LiveRun {
            policy_switch: None,
            workload: &w,
            policy: Policy::none(),
            sources,
            duration: None,
            stop: StopHandle::new(),
        },
        &runtime,
        engine,
        &mut outputs,
        &mut Observers::default(),
    );
    assert!(summary.snapshot.queries.iter().all(|q| q.balances()));
    assert_eq!(summary.snapshot.queries[1].processed, 1);
    let a = on_a.lock().unwrap().clone();
    let b = on_b.lock().unwrap().clone();
    (a, b)
}

#[test]
fn an_idle_source_stops_holding_back_its_windows_and_never_holds_other_streams() {
    let (a_held, b_held) = windows_beside_a_silent_source("1h");
    let (a_freed, b_freed) = windows_beside_a_silent_source("200ms");
    // The silent source's one tuple: its window closes only at the final flush while the
    // source counts as active, and during the run once it is idle.
    assert_eq!(b_held.len(), 1);
    assert_eq!(b_freed.len(), 1);
    let a_end = |a: &[Nanos]| *a.iter().max().unwrap();
    assert!(
        b_held[0] >= a_end(&a_held) - 50 * MS,
        "closed before the end: {b_held:?} vs {a_held:?}"
    );
    assert!(
        b_freed[0] < a_end(&a_freed) - 500 * MS,
        "still held back: {b_freed:?} vs {a_freed:?}"
    );
    // Stream `a` never waits for `b`: its 100 ms windows close during the run either way
    // (about 14 of them before the end; generous margins for a busy machine).
    for a in [&a_held, &a_freed] {
        let early = a.iter().filter(|&&t| t < a_end(a) - 300 * MS).count();
        assert!(early >= 4, "{a:?}");
    }
}

#[test]
fn a_second_stop_request_aborts_a_simulated_run_without_draining() {
    let w = workload(&OVERLOAD.replace("duration: 3s", "duration: 1h"));
    let mut engine = engine_for(&w).unwrap();
    let settings = SimSettings::from_workload(&w, None).unwrap();
    let mut controller = Controller::new(&w, &mut engine, policy("none"), 1.0, w.engine.tick, 0);
    let stop = StopHandle::new();
    let mut log = EventLog::default();
    let handle = stop.clone();
    // Ctrl-C twice in quick succession at 2 s.
    let mut at_2s = OnTick(move |t: &TickReport<'_>| {
        if t.elapsed == 2 * S {
            handle.request(StopReason::Interrupt);
            handle.request(StopReason::Interrupt);
        }
    });
    let report = run_simulated(
        &w,
        engine,
        &settings,
        SimControl {
            controller: Some(&mut controller),
            stop: &stop,
        },
        |_| {},
        &mut Observers::new(vec![&mut at_2s, &mut log]),
    );
    assert!(report.summary.aborted);
    assert_eq!(report.summary.stopped, Some(StopReason::Interrupt));
    assert!(report.virtual_end < 3 * S);
    let stops: Vec<bool> = log
        .0
        .iter()
        .filter_map(|e| match e {
            Event::StopRequested { abort, .. } => Some(*abort),
            _ => None,
        })
        .collect();
    assert_eq!(stops, [false, true]);
    assert!(matches!(log.0.last(), Some(Event::RunEnded(_))));
}
