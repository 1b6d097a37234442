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
use super::publish::{Part, Publisher};
use super::worker::FromWorker;
use crate::core::engine::{Emitted, Engine};
use crate::core::schema::{DataType, Nanos};
use crate::core::stats::EngineSnapshot;
use crate::runtime::observe::{Event, Observers};
use crate::runtime::outputs::Outputs;

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

/// Collects the workers' messages and publishes the merged view.
pub(super) struct Collector {
    shapes: Shapes,
    /// Per worker, its reports not yet published, oldest first.
    pending: Vec<VecDeque<Part>>,
    publisher: Publisher,
}

impl Collector {
    /// For the workers of `sharded` (their engines still in place), ticking every `tick`.
    pub fn new(sharded: &Sharded, w: &crate::spec::Workload, tick: Nanos) -> Collector {
        Collector {
            shapes: shapes(&sharded.engines[0]),
            pending: vec![VecDeque::new(); sharded.workers()],
            publisher: Publisher::new(w, tick),
        }
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
