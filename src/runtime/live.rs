//! The live driver: sources produce on a tokio runtime, each over its own channel; the
//! engine runs on the calling thread, batch at a time, hands results to the sinks, and
//! every control tick hands the monitor's report to the observers. It prints nothing.
//!
//! Stopping (duration reached, sources exhausted, a reader closing stdout, or a first stop
//! request) stops the sources first, then drains every queue and flushes open windows and
//! sinks, so the summary accounts for every tuple. A second stop request aborts: the loop
//! ends at once and the observers still see the end of the run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::clock::WallClock;
use super::control::Controller;
use super::controls::PolicySwitch;
use super::frontier::stream_frontier;
use super::inbox::{Inbox, Site};
use super::manage::{Command, Manager, Outcome, Scripted};
use super::observe::{Event, Observers, RunInfo, RunMode, RunSummary, TickReport};
use super::outputs::Outputs;
use super::pump::{pump, wait_for_input};
use super::source::{Source, SourceLink, spawn};
use super::stop::StopHandle;
use crate::core::engine::Engine;
use crate::core::schema::Nanos;
use crate::spec::{Flow, Policy, Workload};

/// What a live run needs besides the engine and where results and reports go.
pub struct LiveRun<'a> {
    pub workload: &'a Workload,
    pub policy: Policy,
    /// One source per stream, in stream order.
    pub sources: Vec<Box<dyn Source>>,
    /// Overrides the workload's duration.
    pub duration: Option<Nanos>,
    pub stop: StopHandle,
    /// Policy changes asked for during the run (the dashboard), if any.
    pub policy_switch: Option<PolicySwitch>,
}

/// How often sinks are flushed.
const FLUSH_EVERY: Nanos = 1_000_000_000;

/// Runs on the wall clock until the duration, the sources' end or a stop request; sources
/// are spawned on `runtime`.
pub fn run_live(
    run: LiveRun<'_>,
    runtime: &tokio::runtime::Runtime,
    engine: Engine,
    outputs: &mut Outputs<'_>,
    observers: &mut Observers<'_>,
) -> RunSummary {
    let none = LiveChanges {
        script: Vec::new(),
        inbox: None,
    };
    run_live_managed(run, none, runtime, engine, outputs, observers)
}

/// Changes to the query set during a live run: scripted ones (due at times since the
/// start; their sinks already routed) and the control API's requests.
pub struct LiveChanges {
    pub script: Vec<Scripted>,
    pub inbox: Option<Inbox>,
}

/// `run_live` with the query set changing as `changes` says, between scheduler turns.
pub fn run_live_managed(
    run: LiveRun<'_>,
    changes: LiveChanges,
    runtime: &tokio::runtime::Runtime,
    mut engine: Engine,
    outputs: &mut Outputs<'_>,
    observers: &mut Observers<'_>,
) -> RunSummary {
    let LiveChanges {
        mut script,
        mut inbox,
    } = changes;
    script.sort_by_key(|c| c.at);
    let mut script = script.into_iter().peekable();
    let LiveRun {
        workload,
        policy,
        sources,
        duration,
        stop,
        policy_switch,
    } = run;
    let clock = WallClock::start();
    let duration = duration.or(workload.duration);
    let kinds: Vec<&str> = sources.iter().map(|s| s.kind()).collect();
    let info = RunInfo::new(workload, RunMode::Live, &policy, 1.0, duration, &kinds);
    let shedding_policy = info.shedding_policy;
    let mut manager = Manager::new(workload, &policy);
    observers.event(Event::RunStarted(info));
    // Windows that lost rows close are timed after each ingest and charged to their query.
    engine.set_lost_deferred(true);
    // A large window close is emitted over several turns, other queries running between.
    engine.set_close_step(workload.engine.close_step);
    // Round robin shares engine time, not turns: a long turn is paid for by waiting.
    engine.set_turn_quantum(workload.engine.turn_quantum);
    // Live capacity: one engine thread.
    let mut controller = Controller::new(
        workload,
        &mut engine,
        policy,
        1.0,
        workload.engine.tick,
        clock.now(),
    )
    .with_switch(policy_switch);
    let batch_size = workload.engine.batch_size.max(1);
    let tick = workload.engine.tick.max(1_000_000);
    let sources_stop = Arc::new(AtomicBool::new(false));
    let mut links: Vec<SourceLink> = sources
        .into_iter()
        .zip(&workload.streams)
        .enumerate()
        .map(|(i, (src, spec))| {
            spawn(
                runtime,
                src,
                i,
                spec,
                batch_size,
                clock,
                sources_stop.clone(),
            )
        })
        .collect();

    let mut next_tick = tick;
    let mut next_flush = FLUSH_EVERY;
    let mut announced = StopNotice::default();
    let mut spent = Vec::new();
    let mut frontiers: Vec<Nanos> = Vec::with_capacity(links.len());
    loop {
        // What this pass does not record as busy, overhead or idle (the inner guard, the
        // control API, publishing keeps to the sources) is overhead too: engine time no
        // query can have.
        let pass = (clock.now(), engine.accounted());
        let since = clock.since_start();
        if announced.check(&stop, since, observers) {
            break;
        }
        if !sources_stop.load(Ordering::Relaxed)
            && (duration.is_some_and(|d| since >= d) || stop.is_stopping() || outputs.closed)
        {
            sources_stop.store(true, Ordering::Relaxed);
        }
        let t0 = clock.now();
        let all_done = pump(
            &mut links,
            &mut engine,
            &clock,
            batch_size,
            observers,
            since,
        );
        let closing = engine.close_lost(|| clock.now());
        engine.record_overhead(clock.now() - t0 - closing);
        while let Some(c) = script.next_if(|c| c.at <= since) {
            let now = clock.now();
            let added = match &c.command {
                Command::Add(q) => Some(q.name.clone()),
                _ => None,
            };
            let outcome = manager.apply(
                c.command,
                &mut engine,
                Some(&mut controller),
                since,
                now,
                |e| outputs.write(e),
                observers,
            );
            // Its sink was opened at start; its index is the one it got now.
            if let (Some(name), Ok(Outcome::Added { index })) = (added, outcome) {
                outputs.claim_scripted(index, &name);
            }
        }
        if let Some(inbox) = &mut inbox {
            inbox.serve(&mut Site {
                engine: &mut engine,
                controller: &mut controller,
                manager: &mut manager,
                outputs,
                observers,
                clock: &clock,
            });
        }
        // Push sources apply their stream's keep themselves (`source_shed`): published
        // every pass, so a plan, a policy or a query change between ticks (script,
        // control API) reaches them at once.
        for (s, l) in links.iter().enumerate() {
            l.keep.set(engine.stream_random_keep(s));
        }
        if engine.has_work() {
            let start = clock.now();
            if let Some(turn) = engine.run_turn(start) {
                let end = clock.now();
                engine.record_busy(turn.query, end - start);
                emit(&mut engine, outputs, &clock, &mut spent, observers, since);
                // The inner guard: a backlog near its target is cut now, not next tick.
                controller.guard(&mut engine, clock.now());
            }
        } else if all_done {
            break;
        } else {
            // Results no turn handed out (windows the time of shed rows closed): now.
            if engine.has_results() {
                emit(&mut engine, outputs, &clock, &mut spent, observers, since);
            }
            let idle_from = clock.now();
            wait_for_input(&links, Duration::from_millis(1));
            engine.record_idle(clock.now() - idle_from);
        }
        if since >= next_tick {
            let t0 = clock.now();
            // Frontier first, then drain: everything stamped below it is then ingested.
            // Pull batches are stamped as they are taken, after the frontier was read.
            frontiers.clear();
            frontiers.extend(links.iter().map(|l| match l.flow {
                Flow::Push => stream_frontier(t0, [l.frontier.view()]),
                Flow::Pull => t0,
            }));
            pump(
                &mut links,
                &mut engine,
                &clock,
                batch_size,
                observers,
                since,
            );
            let closing = engine.tick_timed(t0, |s| frontiers[s], || clock.now())
                + emit(&mut engine, outputs, &clock, &mut spent, observers, since);
            let report = controller.tick(&mut engine, clock.now(), workload);
            observers.tick(&TickReport {
                elapsed: since,
                control: &report,
                tick_latency: &controller.tick_latency(),
                last: false,
            });
            if since >= next_flush {
                outputs.flush();
                next_flush = since + FLUSH_EVERY;
            }
            // Closing windows and their sinks' work were charged to the queries they
            // belong to.
            engine.record_overhead(clock.now() - t0 - closing);
            next_tick = since + tick;
        }
        let recorded = engine.accounted().saturating_sub(pass.1) as Nanos;
        engine.record_overhead(clock.now() - pass.0 - recorded);
    }
    sources_stop.store(true, Ordering::Relaxed);
    let mut aborted = stop.is_aborted();
    if !aborted {
        // A window end at a time, each step's rows to the sinks before the next: a huge
        // final state is never held whole, and a second stop request cuts it short.
        let now = clock.now();
        let done = engine.flush_stepwise(
            now,
            |e| {
                emit(
                    e,
                    outputs,
                    &clock,
                    &mut spent,
                    observers,
                    clock.since_start(),
                );
            },
            || !stop.is_aborted(),
        );
        aborted = !done;
        if aborted {
            announced.check(&stop, clock.since_start(), observers);
        }
    }
    outputs.close();
    let elapsed = clock.since_start();
    let report = controller.measure(&mut engine, clock.now());
    observers.tick(&TickReport {
        elapsed,
        control: &report,
        tick_latency: &controller.tick_latency(),
        last: true,
    });
    // Closing the channels tells sources still blocked in `send` to return.
    drop(links);
    let summary = RunSummary {
        workload: workload.name.clone(),
        mode: RunMode::Live,
        elapsed,
        wall: elapsed,
        snapshot: report.qos.engine.clone(),
        history: controller.history().clone(),
        shedding_policy,
        stopped: stop.reason(),
        aborted,
        ledger_violations: controller.violations(),
        undelivered: outputs.undelivered.clone(),
    };
    observers.event(Event::RunEnded(Box::new(summary.clone())));
    summary
}

/// Hands pending results to the sinks, charging each query the time its sink took (sink
/// work is query work the shedder must see), and reports sink failures.
fn emit(
    engine: &mut Engine,
    outputs: &mut Outputs<'_>,
    clock: &WallClock,
    spent: &mut Vec<(usize, Nanos)>,
    observers: &mut Observers<'_>,
    since: Nanos,
) -> Nanos {
    spent.clear();
    engine.emit(clock.now(), |e| {
        let t0 = clock.now();
        outputs.write(e);
        spent.push((e.index, clock.now() - t0));
    });
    for &(q, ns) in spent.iter() {
        engine.record_busy(q, ns);
    }
    for (query, message) in outputs.failures.drain(..) {
        observers.event(Event::SinkFailed {
            at: since,
            query,
            message,
        });
    }
    spent.iter().map(|&(_, ns)| ns).sum()
}

/// Tells observers of a requested stop once, and once more if it turns into an abort; shared
/// by the one-engine and the N-worker live drivers.
#[derive(Default)]
pub(crate) struct StopNotice {
    told: bool,
    told_abort: bool,
}

impl StopNotice {
    /// Announces a pending stop at `at`; true when the run must abort now.
    pub(crate) fn check(
        &mut self,
        stop: &StopHandle,
        at: Nanos,
        observers: &mut Observers,
    ) -> bool {
        let Some(reason) = stop.reason() else {
            return false;
        };
        let abort = stop.is_aborted();
        if !self.told || (abort && !self.told_abort) {
            (self.told, self.told_abort) = (true, abort);
            observers.event(Event::StopRequested { at, reason, abort });
        }
        abort
    }
}
