//! The live driver for N engine workers: this thread is the coordinator. It pumps the
//! sources, splits each batch of a routed stream by shard (`workers::route`) and sends
//! each worker its rows, or puts a batch of any other stream in an `Arc` and sends it to
//! every worker, over bounded channels, followed in band, every tick, by a frontier marker (`Tick`): a worker ticks
//! its engine only with every batch sent before the marker already ingested. Each worker
//! thread owns an `Engine` and a `Controller` (one core each, against the queries' shared
//! targets), runs turns, and sends back its result rows (the coordinator writes the sinks)
//! and its tick's control report. The coordinator publishes one merged report per tick
//! (`workers::report`) once every worker has sent it: observers see one QoS view.
//!
//! Stopping works as in `live.rs`: sources stop, then every worker drains its queues,
//! flushes and returns its engine, whose counters are merged into the summary.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use hdrhistogram::Histogram;

use super::Sharded;
use super::merge::merge;
use super::report::{merge_history, merge_reports};
use crate::core::batch::Batch;
use crate::core::engine::{Emitted, Engine};
use crate::core::operators::ResultApprox;
use crate::core::schema::{DataType, Nanos};
use crate::core::shard::RoutedTime;
use crate::runtime::clock::WallClock;
use crate::runtime::control::{ControlReport, Controller, RunHistory};
use crate::runtime::frontier::stream_frontier;
use crate::runtime::live::LiveRun;
use crate::runtime::observe::{Event, Observers, RunInfo, RunMode, RunSummary, TickReport};
use crate::runtime::outputs::Outputs;
use crate::runtime::source::{SourceLink, SourceMsg, spawn};
use crate::spec::{Flow, Workload};

/// Batches in flight to one worker before the coordinator waits.
const WORKER_CHANNEL: usize = 64;
const FLUSH_EVERY: Nanos = 1_000_000_000;

enum ToWorker {
    /// A batch of a stream: the whole batch, or (with its `RoutedTime`) this worker's rows
    /// of a batch split by shard.
    Batch(usize, Arc<Batch>, Option<Arc<RoutedTime>>),
    Malformed(usize, u64),
    /// Frontier marker: tick at `at` with these per-stream frontiers.
    Tick {
        at: Nanos,
        frontiers: Arc<[Nanos]>,
    },
    /// Drain, flush and return (or, aborting, return at once).
    Finish {
        abort: bool,
    },
}

enum FromWorker {
    Rows {
        index: usize,
        rows: Batch,
        approx: Option<ResultApprox>,
        emitted_at: Nanos,
    },
    Report {
        worker: usize,
        report: Box<ControlReport>,
        latency: Vec<Histogram<u64>>,
    },
}

/// What a worker hands back at the end.
struct WorkerEnd {
    engine: Engine,
    report: ControlReport,
    latency: Vec<Histogram<u64>>,
    history: RunHistory,
    violations: u64,
}

fn send_rows(out: &Sender<FromWorker>, engine: &mut Engine, now: Nanos) {
    engine.emit(now, |e| {
        let _ = out.send(FromWorker::Rows {
            index: e.index,
            rows: e.batch.clone(),
            approx: e.approx.cloned(),
            emitted_at: e.emitted_at,
        });
    });
}

fn tick_latency(c: &Controller) -> Vec<Histogram<u64>> {
    c.tick_latency().into_iter().cloned().collect()
}

/// One worker: ingest what arrives, run turns, tick at each frontier marker.
fn worker(
    k: usize,
    w: &Workload,
    mut engine: Engine,
    mut controller: Controller,
    rx: Receiver<ToWorker>,
    out: Sender<FromWorker>,
    clock: WallClock,
) -> WorkerEnd {
    let pull: Vec<usize> = (w.streams.iter().enumerate())
        .filter(|(_, s)| s.source.flow == Flow::Pull)
        .map(|(i, _)| i)
        .collect();
    let batch_size = w.engine.batch_size.max(1);
    let mut finishing = false;
    let mut aborted = false;
    loop {
        // A pull stream's queues bound what is read: the channel, then the source, wait.
        let room = pull
            .iter()
            .all(|&s| engine.stream_room(s) >= batch_size || engine.stream_drained(s));
        let msg = if finishing || !room {
            None
        } else if engine.has_work() {
            match rx.try_recv() {
                Ok(m) => Some(m),
                Err(TryRecvError::Empty) => None,
                Err(TryRecvError::Disconnected) => Some(ToWorker::Finish { abort: false }),
            }
        } else {
            match rx.recv_timeout(Duration::from_millis(1)) {
                Ok(m) => Some(m),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
                Err(_) => Some(ToWorker::Finish { abort: false }),
            }
        };
        match msg {
            Some(ToWorker::Batch(s, b, t)) => engine.ingest_routed(s, b, t),
            Some(ToWorker::Malformed(s, n)) => engine.record_malformed(s, n),
            Some(ToWorker::Tick { at, frontiers }) => {
                engine.tick_timed(at, |s| frontiers[s], || clock.now());
                send_rows(&out, &mut engine, clock.now());
                let report = controller.tick(&mut engine, clock.now(), w);
                let _ = out.send(FromWorker::Report {
                    worker: k,
                    report: Box::new(report),
                    latency: tick_latency(&controller),
                });
            }
            Some(ToWorker::Finish { abort }) => {
                finishing = true;
                aborted = abort;
            }
            None => {}
        }
        if aborted {
            break;
        }
        if engine.has_work() {
            let start = clock.now();
            if let Some(turn) = engine.run_turn(start) {
                engine.record_busy(turn.query, clock.now() - start);
                send_rows(&out, &mut engine, clock.now());
                controller.guard(&mut engine, clock.now());
            }
        } else if finishing {
            break;
        }
    }
    if !aborted {
        engine.flush(clock.now());
        send_rows(&out, &mut engine, clock.now());
    }
    let report = controller.measure(&mut engine, clock.now());
    WorkerEnd {
        latency: tick_latency(&controller),
        history: controller.history().clone(),
        violations: controller.violations(),
        report,
        engine,
    }
}

/// Output names and types of every query, for the sinks.
struct Shapes {
    names: Vec<Vec<String>>,
    types: Vec<Vec<DataType>>,
    queries: Vec<String>,
}

fn shapes(e: &Engine) -> Shapes {
    let n = e.query_count();
    Shapes {
        names: (0..n)
            .map(|q| {
                let f = &e.query_plan(q).output.fields;
                f.iter().map(|f| f.name.clone()).collect()
            })
            .collect(),
        types: (0..n).map(|q| e.query_plan(q).output.types()).collect(),
        queries: (0..n).map(|q| e.query_def(q).name.clone()).collect(),
    }
}

/// Collects the workers' messages: rows go to the sinks, reports wait until every worker
/// has sent its report of the same tick, then go to the observers merged.
struct Collector {
    shapes: Shapes,
    /// Per worker, its reports not yet published, oldest first.
    pending: Vec<std::collections::VecDeque<(ControlReport, Vec<Histogram<u64>>)>>,
}

impl Collector {
    fn take(
        &mut self,
        msg: FromWorker,
        sharded: &Sharded,
        outputs: &mut Outputs<'_>,
        observers: &mut Observers<'_>,
        since: Nanos,
    ) {
        match msg {
            FromWorker::Rows {
                index,
                rows,
                approx,
                emitted_at,
            } => {
                outputs.write(&Emitted {
                    index,
                    query: &self.shapes.queries[index],
                    names: &self.shapes.names[index],
                    types: &self.shapes.types[index],
                    batch: &rows,
                    approx: approx.as_ref(),
                    emitted_at,
                });
                for (query, message) in outputs.failures.drain(..) {
                    observers.event(Event::SinkFailed {
                        at: since,
                        query,
                        message,
                    });
                }
            }
            FromWorker::Report {
                worker,
                report,
                latency,
            } => {
                self.pending[worker].push_back((*report, latency));
                while self.pending.iter().all(|p| !p.is_empty()) {
                    let parts: Vec<_> = self
                        .pending
                        .iter_mut()
                        .map(|p| p.pop_front().expect("checked"))
                        .collect();
                    publish(&parts, sharded, observers, since, false, None);
                }
            }
        }
    }
}

/// Hands one merged report to the observers.
fn publish(
    parts: &[(ControlReport, Vec<Histogram<u64>>)],
    sharded: &Sharded,
    observers: &mut Observers<'_>,
    elapsed: Nanos,
    last: bool,
    engine: Option<crate::core::stats::EngineSnapshot>,
) {
    let reports: Vec<&ControlReport> = parts.iter().map(|p| &p.0).collect();
    let snaps: Vec<_> = reports.iter().map(|r| r.qos.engine.clone()).collect();
    let engine = engine.unwrap_or_else(|| {
        merge(
            &snaps,
            &[],
            |w, q| sharded.runs(w, q),
            |s| sharded.routed(s),
        )
    });
    let merged = merge_reports(&reports, |w, q| sharded.runs(w, q), engine);
    let mut latency = parts[0].1.clone();
    for p in &parts[1..] {
        for (a, b) in latency.iter_mut().zip(&p.1) {
            let _ = a.add(b);
        }
    }
    let refs: Vec<&Histogram<u64>> = latency.iter().collect();
    observers.tick(&TickReport {
        elapsed,
        control: &merged,
        tick_latency: &refs,
        last,
    });
}

/// Runs `run` live on the workers of `sharded` until the duration, the sources' end or a
/// stop request.
pub fn run_live_workers(
    run: LiveRun<'_>,
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
        policy_switch: _,
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
    let mut collector = Collector {
        shapes: shapes(&sharded.engines[0]),
        pending: vec![Default::default(); n],
    };
    let (out_tx, out_rx) = crossbeam_channel::unbounded::<FromWorker>();
    let engines = std::mem::take(&mut sharded.engines);
    let mut router = sharded.router.clone();
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
            let out = out_tx.clone();
            handles.push(
                std::thread::Builder::new()
                    .name(format!("spillway-worker-{k}"))
                    .spawn_scoped(scope, move || {
                        worker(k, workload, engine, controller, rx, out, clock)
                    })
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
            let mut all_done = true;
            let mut moved = false;
            for (stream, link) in links.iter_mut().enumerate() {
                while !link.done {
                    match link.rx.try_recv() {
                        Ok(SourceMsg::Batch(mut b)) => {
                            if link.flow == Flow::Pull {
                                let now = clock.now();
                                b.arrival.iter_mut().for_each(|a| *a = now);
                            }
                            if let Some(parts) = router.split(stream, &b) {
                                for (tx, (b, t)) in txs.iter().zip(parts) {
                                    if !b.is_empty() {
                                        let m =
                                            ToWorker::Batch(stream, Arc::new(b), Some(Arc::new(t)));
                                        let _ = tx.send(m);
                                    }
                                }
                            } else {
                                let b = Arc::new(b);
                                broadcast(&txs, &|| ToWorker::Batch(stream, Arc::clone(&b), None));
                            }
                            moved = true;
                        }
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
            if let Ok(m) = out_rx.recv_timeout(Duration::from_millis(1)) {
                collector.take(m, &sharded, outputs, observers, since);
            }
        }
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
    }
    let snapshot = sharded.snapshot();
    publish(
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
