//! The merged QoS view of one tick, from every worker's report of that tick: what the
//! observers of a run on N workers see, live (`workers::collect`) and simulated
//! (`workers::sim`). Pure: no clock, no channel.
//!
//! Invariant: one merged report per tick, made from exactly one report of every worker
//! for that tick; latency percentiles are read from the workers' histograms added.

use hdrhistogram::Histogram;

use super::Sharded;
use super::merge::merge;
use super::report::{MergedLatency, merge_reports};
use crate::core::schema::Nanos;
use crate::core::stats::EngineSnapshot;
use crate::runtime::control::{ControlReport, Controller};
use crate::runtime::observe::{Observers, TickReport};
use crate::spec::Workload;

/// One worker's report of a tick and its per-query tick latencies.
pub type Part = (ControlReport, Vec<Histogram<u64>>);

/// Worker `c`'s part of the tick it just reported.
pub fn part(report: ControlReport, c: &Controller) -> Part {
    (report, c.tick_latency().into_iter().cloned().collect())
}

/// Publishes merged reports, keeping the summed latency window across ticks.
#[derive(Debug)]
pub struct Publisher {
    latency: MergedLatency,
    /// The last merged report published (what the control API answers from).
    pub last: Option<ControlReport>,
}

impl Publisher {
    /// For `w`'s queries, ticking every `tick`.
    pub fn new(w: &Workload, tick: Nanos) -> Publisher {
        Publisher {
            latency: MergedLatency::new(w, tick),
            last: None,
        }
    }

    /// A query added while running: its latency target's percentile, if it has one.
    pub fn add_query(&mut self, percentile: Option<f64>) {
        self.latency.add_target(percentile);
    }

    /// Hands one merged report of `parts` (one per worker, in worker order) to the
    /// observers: `engine` is the merged engine snapshot when known (the final one), else
    /// merged from the reports'.
    pub fn publish(
        &mut self,
        parts: &[Part],
        sharded: &Sharded,
        observers: &mut Observers<'_>,
        elapsed: Nanos,
        last: bool,
        engine: Option<EngineSnapshot>,
    ) {
        let reports: Vec<&ControlReport> = parts.iter().map(|p| &p.0).collect();
        let engine = engine.unwrap_or_else(|| {
            let snaps: Vec<_> = reports.iter().map(|r| r.qos.engine.clone()).collect();
            merge(
                &snaps,
                &[],
                |w, q| sharded.runs(w, q),
                |s| sharded.routed(s),
            )
        });
        let mut merged = merge_reports(&reports, |w, q| sharded.runs(w, q), engine);
        let latency = add_latency(parts);
        self.latency.push(&latency);
        self.latency.apply(&mut merged.qos.queries);
        let refs: Vec<&Histogram<u64>> = latency.iter().collect();
        observers.tick(&TickReport {
            elapsed,
            control: &merged,
            tick_latency: &refs,
            last,
        });
        self.last = Some(merged);
    }
}

/// The workers' per-query tick latencies added.
fn add_latency(parts: &[Part]) -> Vec<Histogram<u64>> {
    let mut latency = parts[0].1.clone();
    for p in &parts[1..] {
        for (a, b) in latency.iter_mut().zip(&p.1) {
            let _ = a.add(b);
        }
    }
    latency
}
