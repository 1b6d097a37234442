//! One live engine worker thread (`workers::live`): it owns an `Engine`, a `Controller`
//! (one core, against the queries' shared targets) and a copy of the run's routing table
//! (for changes of the query set). It ingests its part of each batch of a routed stream
//! (split once by the coordinator) and every batch of any other stream whole (shared); the
//! drop decision comes there, before its queue. It runs turns, and sends back its result
//! rows and, at each in-band frontier marker, its tick's control report.
//!
//! Invariant: the worker ticks its engine at a marker only after every batch sent before
//! that marker has been ingested, so its frontier is exactly the coordinator's.

use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use hdrhistogram::Histogram;

use super::changes::{WorkerChange, apply_part};
use super::ingest_part;
use super::route::{Part, Router};
use crate::core::batch::Batch;
use crate::core::engine::{Engine, Removal};
use crate::core::operators::ResultApprox;
use crate::core::schema::Nanos;
use crate::core::shard::ShardMap;
use crate::runtime::clock::WallClock;
use crate::runtime::control::{ControlReport, Controller, RunHistory};
use crate::runtime::manage::ManageError;
use crate::runtime::stop::StopHandle;
use crate::spec::{Flow, Policy, Workload};

/// What the coordinator sends a worker, in order.
pub(super) enum ToWorker {
    /// A whole batch of a broadcast stream, shared by every worker.
    Batch(usize, Arc<Batch>),
    /// This worker's part of a batch of a routed stream.
    Part(usize, Box<Part>),
    Malformed(usize, u64),
    /// Frontier marker: tick at `at` with these per-stream frontiers.
    Tick {
        at: Nanos,
        frontiers: Arc<[Nanos]>,
    },
    /// Switch to this policy (the dashboard's switch), in band.
    Policy(Box<Policy>),
    /// A change of the query set (`workers::changes`), in band: applied after every
    /// batch sent before it, so at the same input position on every worker.
    Change(Arc<WorkerChange>),
    /// Drain, flush and return (or, aborting, return at once).
    Finish {
        abort: bool,
    },
}

/// What a worker sends the coordinator.
pub(super) enum FromWorker {
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
    /// The answer to a `Change`: this worker's final ledger of a query it removed (`None`
    /// for any other change, or a tombstone), or why it failed.
    Changed {
        worker: usize,
        removal: Result<Option<Removal>, ManageError>,
    },
}

/// What a worker hands back at the end.
pub(super) struct WorkerEnd {
    pub engine: Engine,
    pub report: ControlReport,
    pub latency: Vec<Histogram<u64>>,
    pub history: RunHistory,
    pub violations: u64,
    /// A second stop request cut its drain or its flush short.
    pub aborted: bool,
}

/// A worker's state, moved onto its thread.
pub(super) struct Worker<'a> {
    pub index: usize,
    pub workload: &'a Workload,
    pub engine: Engine,
    pub controller: Controller,
    /// The run's routing table (this copy never splits: the coordinator does).
    pub router: Router,
    /// The run's shard map (a query added while running keeps this worker's shards).
    pub map: ShardMap,
    pub rx: Receiver<ToWorker>,
    pub out: Sender<FromWorker>,
    pub clock: WallClock,
    /// The run's stop requests: a second one (abort) ends this worker's drain and its
    /// flush between two window ends, as it ends the single engine thread's.
    pub stop: StopHandle,
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

impl Worker<'_> {
    /// Ingests what arrives, runs turns, ticks at each frontier marker, until `Finish`.
    pub fn run(self) -> WorkerEnd {
        let Worker {
            index: k,
            workload: w,
            mut engine,
            mut controller,
            router,
            map,
            rx,
            out,
            clock,
            stop,
        } = self;
        let pull: Vec<usize> = (w.streams.iter().enumerate())
            .filter(|(_, s)| s.source.flow == Flow::Pull)
            .map(|(i, _)| i)
            .collect();
        let batch_size = w.engine.batch_size.max(1);
        // Windows that lost rows close are timed after each ingest and charged to their query.
        engine.set_lost_deferred(true);
        // A large window close is emitted over several turns, other queries running between.
        engine.set_close_step(w.engine.close_step);
        // Round robin shares engine time, not turns: a long turn is paid for by waiting.
        engine.set_turn_quantum(w.engine.turn_quantum);
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
                Some(ToWorker::Batch(s, b)) => {
                    engine.ingest_shared(s, b);
                    engine.close_lost(|| clock.now());
                }
                Some(ToWorker::Part(s, p)) => {
                    ingest_part(&mut engine, s, *p);
                    engine.close_lost(|| clock.now());
                }
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
                Some(ToWorker::Policy(p)) => controller.set_policy(&mut engine, *p),
                Some(ToWorker::Change(change)) => {
                    let now = clock.now();
                    let c = Some(&mut controller);
                    let mut rows = Vec::new();
                    let removal = apply_part(&change, k, &mut engine, c, &router, &map, now, |e| {
                        rows.push(FromWorker::Rows {
                            index: e.index,
                            rows: e.batch.clone(),
                            approx: e.approx.cloned(),
                            emitted_at: e.emitted_at,
                        })
                    });
                    for r in rows {
                        let _ = out.send(r);
                    }
                    let _ = out.send(FromWorker::Changed { worker: k, removal });
                }
                Some(ToWorker::Finish { abort }) => {
                    finishing = true;
                    aborted = abort;
                }
                None => {}
            }
            // A second stop request while draining: leave now, as the coordinator does.
            aborted |= finishing && stop.is_aborted();
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
            } else if engine.has_results() {
                // Results no turn handed out (windows the time of shed rows closed).
                send_rows(&out, &mut engine, clock.now());
            }
        }
        if !aborted {
            // A window end at a time, each step's rows sent before the next
            // (`Engine::flush_stepwise`): a huge final state is never held whole.
            let now = clock.now();
            aborted = !engine.flush_stepwise(
                now,
                |e| send_rows(&out, e, clock.now()),
                || !stop.is_aborted(),
            );
        }
        let report = controller.measure(&mut engine, clock.now());
        WorkerEnd {
            latency: tick_latency(&controller),
            history: controller.history().clone(),
            violations: controller.violations(),
            aborted,
            report,
            engine,
        }
    }
}
