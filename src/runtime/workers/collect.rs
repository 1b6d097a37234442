//! The coordinator's side of the workers' messages (`workers::live`): result rows go to the
//! sinks (one thread writes each sink), and each worker's tick report waits until every
//! worker has sent its report of the same tick; then the observers get one merged report,
//! whose latency percentiles are read from the workers' histograms added
//! (`report::MergedLatency`).
//!
//! Invariant: reports are merged tick by tick in order, one from every worker, so the
//! merged view of a tick covers the same tick on every worker.

use std::collections::VecDeque;

use super::Sharded;
use super::changes::ShardedManager;
use super::publish::{Part, Publisher};
use super::worker::FromWorker;
use crate::core::engine::{Emitted, Engine, Removal};
use crate::core::schema::{DataType, Nanos};
use crate::core::stats::EngineSnapshot;
use crate::runtime::control::ControlReport;
use crate::runtime::inbox::{Reply, ledger};
use crate::runtime::observe::{Event, Observers};
use crate::runtime::outputs::Outputs;
use crate::spec::{Policy, QuerySpec, Workload};
use serde_json::json;
use tokio::sync::oneshot;

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

/// A change sent to every worker: the removed query's index (for a removal), when it was
/// sent, and the control API's reply waiting for its final ledger (with `flush`).
pub(super) struct Sent {
    pub removes: Option<usize>,
    pub at: Nanos,
    pub reply: Option<(oneshot::Sender<Reply>, bool)>,
}

/// Collects the workers' messages and publishes the merged view.
pub(super) struct Collector {
    shapes: Shapes,
    /// Per worker, its reports not yet published, oldest first.
    pending: Vec<VecDeque<Part>>,
    publisher: Publisher,
    /// The run's query table (scripted changes).
    pub manager: ShardedManager,
    /// Changes sent to the workers and not answered by all yet, oldest first.
    changes: VecDeque<Sent>,
    /// Per worker, its answers to those changes, oldest first.
    answers: Vec<VecDeque<Option<Removal>>>,
}

impl Collector {
    /// For the workers of `sharded` (their engines still in place), ticking every `tick`.
    pub fn new(sharded: &Sharded, w: &Workload, policy: &Policy, tick: Nanos) -> Collector {
        Collector {
            shapes: shapes(&sharded.engines[0]),
            pending: vec![VecDeque::new(); sharded.workers()],
            publisher: Publisher::new(w, tick),
            manager: ShardedManager::new(w).with_policy(policy),
            changes: VecDeque::new(),
            answers: vec![VecDeque::new(); sharded.workers()],
        }
    }

    /// Query `spec` was just added: its rows' shape and its latency target.
    pub fn added(&mut self, spec: &QuerySpec) {
        let out = &spec.plan.output;
        (self.shapes.names).push(out.fields.iter().map(|f| f.name.clone()).collect());
        self.shapes.types.push(out.types());
        self.shapes.queries.push(spec.name.clone());
        let latency = spec.qos.as_ref().and_then(|s| s.latency);
        self.publisher.add_query(latency.map(|l| l.percentile));
    }

    /// A change was sent to every worker.
    pub fn sent(&mut self, sent: Sent) {
        self.changes.push_back(sent);
    }

    /// The last merged report published, if any.
    pub fn last(&self) -> Option<&ControlReport> {
        self.publisher.last.as_ref()
    }

    pub fn take(
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
                    let parts: Vec<Part> = (self.pending.iter_mut())
                        .map(|p| p.pop_front().expect("checked"))
                        .collect();
                    self.publish(&parts, sharded, observers, since, false, None);
                }
            }
            FromWorker::Changed { worker, removal } => {
                // Scripted changes were checked before the run; a failure changes nothing.
                self.answers[worker].push_back(removal.ok().flatten());
                while self.answers.iter().all(|a| !a.is_empty()) {
                    let parts: Vec<Removal> = (self.answers.iter_mut())
                        .filter_map(|a| a.pop_front().expect("checked"))
                        .collect();
                    let Some(sent) = self.changes.pop_front() else {
                        break;
                    };
                    let Some(index) = sent.removes.filter(|_| !parts.is_empty()) else {
                        continue;
                    };
                    let removal = self.manager.removed(index, &parts, sent.at, observers);
                    if let Some((reply, flush)) = sent.reply {
                        let name = &self.manager.queries()[index].name;
                        let _ = reply.send(Ok(json!({
                            "removed": name,
                            "flushed": flush,
                            "rows_dropped": removal.rows_dropped,
                            "ledger": ledger(&removal.ledger),
                        })));
                    }
                }
            }
        }
    }

    /// Hands one merged report to the observers (`publish::Publisher::publish`).
    pub fn publish(
        &mut self,
        parts: &[Part],
        sharded: &Sharded,
        observers: &mut Observers<'_>,
        elapsed: Nanos,
        last: bool,
        engine: Option<EngineSnapshot>,
    ) {
        (self.publisher).publish(parts, sharded, observers, elapsed, last, engine);
    }
}
