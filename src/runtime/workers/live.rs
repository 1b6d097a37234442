//! The live driver for N engine workers: this thread is the coordinator. It pumps the
//! sources, splits each batch of a routed stream once into a part per worker (`route`:
//! one hash and one copy per tuple, whatever the number of workers) and puts each batch of
//! any other stream in an `Arc` that every worker shares (`workers::worker`). The batches
//! and parts go over bounded channels, followed
//! in band, every tick, by a frontier marker (`Tick`): a worker ticks its engine only with
//! every batch sent before the marker already ingested. The workers send back their result
//! rows (the coordinator writes the sinks) and their tick's control report; the coordinator
//! publishes one merged report per tick once every worker has sent it
//! (`workers::collect`): observers see one QoS view.
//!
//! Scripted `changes:` go to every worker in band when due (`workers::changes`); the
//! coordinator keeps the query table and tells the observers, a removal once every
//! worker has sent its final ledger.
//!
//! Stopping works as in `live.rs`: sources stop, then every worker drains its queues,
//! flushes and returns its engine, whose counters are merged into the summary.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossbeam_channel::{Sender, TryRecvError};

use super::Sharded;
use super::collect::Collector;
use super::inbox::{Coordinator, send_change, serve};
use super::report::merge_history;
use super::route::{Coalesce, Part, Route};
use super::worker::{FromWorker, ToWorker, Worker, WorkerEnd};
use crate::core::schema::Nanos;
use crate::runtime::clock::WallClock;
use crate::runtime::control::Controller;
use crate::runtime::controls::PolicySwitch;
use crate::runtime::frontier::stream_frontier;
use crate::runtime::live::{LiveChanges, LiveRun};
use crate::runtime::observe::{Event, Observers, RunInfo, RunMode, RunSummary};
use crate::runtime::outputs::Outputs;
use crate::runtime::source::{SourceLink, SourceMsg, spawn};
use crate::spec::Flow;

/// Batches in flight to one worker before the coordinator waits.
const WORKER_CHANNEL: usize = 64;
const FLUSH_EVERY: Nanos = 1_000_000_000;

/// Runs `run` live on the workers of `sharded` until the duration, the sources' end or a
/// stop request; scripted `changes` (checked before the run: `workers::changes::place`)
/// and the control API's requests go to every worker in band (`workers::inbox`).
pub fn run_live_workers(
    run: LiveRun<'_>,
    changes: LiveChanges,
    runtime: &tokio::runtime::Runtime,
    mut sharded: Sharded,
    outputs: &mut Outputs<'_>,
    observers: &mut Observers<'_>,
) -> RunSummary {
    let LiveRun {
        workload,
        policy,
        sources,
        duration,
        stop,
        policy_switch,
    } = run;
    let n = sharded.workers();
    let clock = WallClock::start();
    let duration = duration.or(workload.duration);
    let kinds: Vec<&str> = sources.iter().map(|s| s.kind()).collect();
    let info = RunInfo::new(workload, RunMode::Live, &policy, n as f64, duration, &kinds);
    let shedding_policy = info.shedding_policy;
    observers.event(Event::RunStarted(info));
    let batch_size = workload.engine.batch_size.max(1);
    let tick = workload.engine.tick.max(1_000_000);
    let sources_stop = Arc::new(AtomicBool::new(false));
    let mut links: Vec<SourceLink> = (sources.into_iter().zip(&workload.streams).enumerate())
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
    let mut collector = Collector::new(&sharded, workload, &policy, workload.engine.tick);
    // Per routed stream: each worker's parts of the batches the sources had ready, joined
    // into batches (`Coalesce`); sent when full, and whole once a source has none ready.
    let mut joins: Vec<Option<Coalesce>> = (0..links.len())
        .map(|s| {
            (sharded.router.route(s) != Route::Broadcast)
                .then(|| Coalesce::new(&sharded.router, s, batch_size))
        })
        .collect();
    let LiveChanges { mut script, inbox } = changes;
    let mut inbox = inbox;
    script.sort_by_key(|c| c.at);
    let mut script = script.into_iter().peekable();
    let (out_tx, out_rx) = crossbeam_channel::unbounded::<FromWorker>();
    let engines = std::mem::take(&mut sharded.engines);
    let mut aborted = false;
    let ends: Vec<WorkerEnd> = std::thread::scope(|scope| {
        let mut txs: Vec<Sender<ToWorker>> = Vec::with_capacity(n);
        let mut handles = Vec::with_capacity(n);
        for (k, mut engine) in engines.into_iter().enumerate() {
            let mut controller = Controller::new(
                workload,
                &mut engine,
                policy.clone(),
                1.0,
                workload.engine.tick,
                clock.now(),
            );
            for q in 0..engine.query_count() {
                if engine.is_removed(q) {
                    controller.remove_query(&mut engine, q);
                }
            }
            let (tx, rx) = crossbeam_channel::bounded(WORKER_CHANNEL);
            txs.push(tx);
            let worker = Worker {
                index: k,
                workload,
                engine,
                controller,
                router: sharded.router.clone(),
                map: sharded.map.clone(),
                rx,
                out: out_tx.clone(),
                clock,
                stop: stop.clone(),
            };
            handles.push(
                std::thread::Builder::new()
                    .name(format!("spillway-worker-{k}"))
                    .spawn_scoped(scope, move || worker.run())
                    .expect("a worker thread starts"),
            );
        }
        drop(out_tx);
        let broadcast = |txs: &[Sender<ToWorker>], m: &dyn Fn() -> ToWorker| {
            for tx in txs {
                let _ = tx.send(m());
            }
        };
        let mut next_tick = tick;
        let mut next_flush = FLUSH_EVERY;
        let mut announced = crate::runtime::live::StopNotice::default();
        loop {
            let since = clock.since_start();
            if announced.check(&stop, since, observers) {
                aborted = true;
                break;
            }
            if !sources_stop.load(Ordering::Relaxed)
                && (duration.is_some_and(|d| since >= d) || stop.is_stopping() || outputs.closed)
            {
                sources_stop.store(true, Ordering::Relaxed);
            }
            // Due changes and the control API's requests, in band: after every batch
            // sent so far, on every worker.
            let mut co = Coordinator {
                collector: &mut collector,
                sharded: &mut sharded,
                outputs,
                observers,
                txs: &txs,
                workers: n,
                since,
            };
            while let Some(c) = script.next_if(|c| c.at <= since) {
                // Scripted changes were checked before the run; one that still fails
                // (a name removed over the API) changes nothing.
                let _ = send_change(c.command, true, None, &mut co);
            }
            if let Some(inbox) = &mut inbox {
                serve(inbox, &mut co);
            }
            let mut all_done = true;
            let mut moved = false;
            for (stream, link) in links.iter_mut().enumerate() {
                while !link.done {
                    // Workers keep their stream drop points at 1 for the sources (each
                    // worker's plan is its own): a cut batch would be an old one, whole.
                    let msg = match link.rx.try_recv() {
                        Ok(SourceMsg::Shed(cut)) => Ok(SourceMsg::Batch(cut.offered)),
                        other => other,
                    };
                    match msg {
                        Ok(SourceMsg::Batch(mut b)) => {
                            if link.flow == Flow::Pull {
                                let now = clock.now();
                                b.arrival.iter_mut().for_each(|a| *a = now);
                            }
                            match &mut joins[stream] {
                                Some(join) => {
                                    join.add(&mut sharded.router, &b, send_part(&txs, stream));
                                }
                                None => {
                                    let b = Arc::new(b);
                                    broadcast(&txs, &|| ToWorker::Batch(stream, Arc::clone(&b)));
                                }
                            }
                            moved = true;
                        }
                        // Taken whole above.
                        Ok(SourceMsg::Shed(_)) => {}
                        Ok(SourceMsg::Malformed { count, sample }) => {
                            let _ = txs[0].send(ToWorker::Malformed(stream, count));
                            observers.event(Event::Malformed {
                                at: since,
                                stream,
                                count,
                                sample,
                            });
                        }
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => link.done = true,
                    }
                    // Results and reports keep flowing while a source is busy.
                    while let Ok(m) = out_rx.try_recv() {
                        collector.take(m, &sharded, outputs, observers, since);
                    }
                }
                // The source has nothing ready: what was joined goes out now, before any
                // marker, change or other stream's batch.
                if let Some(join) = &mut joins[stream] {
                    join.drain(&sharded.router, send_part(&txs, stream));
                }
                all_done &= link.done;
            }
            while let Ok(m) = out_rx.try_recv() {
                collector.take(m, &sharded, outputs, observers, since);
                moved = true;
            }
            if all_done {
                break;
            }
            if since >= next_tick {
                // The dashboard's switch reaches every worker before the tick's marker.
                if let Some(p) = policy_switch.as_ref().and_then(PolicySwitch::take) {
                    broadcast(&txs, &|| ToWorker::Policy(Box::new(p.clone())));
                }
                let t0 = clock.now();
                let frontiers: Arc<[Nanos]> = links
                    .iter()
                    .map(|l| match l.flow {
                        Flow::Push => stream_frontier(t0, [l.frontier.view()]),
                        Flow::Pull => t0,
                    })
                    .collect();
                broadcast(&txs, &|| ToWorker::Tick {
                    at: t0,
                    frontiers: Arc::clone(&frontiers),
                });
                if since >= next_flush {
                    outputs.flush();
                    next_flush = since + FLUSH_EVERY;
                }
                next_tick = since + tick;
            }
            if !moved {
                let mut sel = crossbeam_channel::Select::new();
                for l in links.iter().filter(|l| !l.done) {
                    sel.recv(&l.rx);
                }
                sel.recv(&out_rx);
                let _ = sel.ready_timeout(Duration::from_millis(1));
            }
        }
        sources_stop.store(true, Ordering::Relaxed);
        broadcast(&txs, &|| ToWorker::Finish { abort: aborted });
        drop(txs);
        // Rows and reports until every worker has returned.
        let since = clock.since_start();
        while handles.iter().any(|h| !h.is_finished()) {
            // A second stop request while the workers drain and flush: they see it
            // themselves (`Worker::stop`); the notice goes out at once.
            announced.check(&stop, clock.since_start(), observers);
            if let Ok(m) = out_rx.recv_timeout(Duration::from_millis(1)) {
                collector.take(m, &sharded, outputs, observers, since);
            }
        }
        // A second request the workers saw and ended on before the loop above looked
        // again is still told.
        announced.check(&stop, clock.since_start(), observers);
        while let Ok(m) = out_rx.try_recv() {
            collector.take(m, &sharded, outputs, observers, since);
        }
        handles
            .into_iter()
            .map(|h| h.join().expect("a worker does not panic"))
            .collect()
    });
    outputs.flush();
    drop(links);
    let elapsed = clock.since_start();
    let mut parts = Vec::with_capacity(n);
    let mut histories = Vec::with_capacity(n);
    let mut violations = 0;
    for end in ends {
        sharded.engines.push(end.engine);
        parts.push((end.report, end.latency));
        histories.push(end.history);
        violations += end.violations;
        aborted |= end.aborted;
    }
    let snapshot = sharded.snapshot();
    collector.publish(
        &parts,
        &sharded,
        observers,
        elapsed,
        true,
        Some(snapshot.clone()),
    );
    let summary = RunSummary {
        workload: workload.name.clone(),
        mode: RunMode::Live,
        elapsed,
        wall: elapsed,
        snapshot,
        history: merge_history(&histories),
        shedding_policy,
        stopped: stop.reason(),
        aborted,
        ledger_violations: violations,
        undelivered: outputs.undelivered.clone(),
    };
    observers.event(Event::RunEnded(Box::new(summary.clone())));
    summary
}

/// Sends worker `k` its part of a batch of `stream` (a worker that has gone is told nothing).
fn send_part(txs: &[Sender<ToWorker>], stream: usize) -> impl FnMut(usize, Part) + '_ {
    move |k, p| {
        let _ = txs[k].send(ToWorker::Part(stream, Box::new(p)));
    }
}
