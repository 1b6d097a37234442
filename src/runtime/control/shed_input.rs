//! What the planner reads each tick: the monitor's snapshot turned into a `ShedInput`
//! (stream rates and fan-out, each query's costs, rows, keep, latency and value histogram,
//! the capacity the model may hand out). Declared costs stand for all of a query's work, so
//! with them the measured row, fixed and per-passed work is left out.
//!
//! Invariant: one `QueryInput` per engine query, in the engine's order; a removed query
//! reads a silent stream, carries no load and is never shed.

use super::apply::model_cost;
use super::rows_memory::{Emission, RowsMemory};
use crate::core::drop::WindowRule;
use crate::qos::non_negative;
use crate::runtime::monitor::{Monitor, QosSnapshot};
use crate::shed::{
    BacklogInput, LatencyInput, PolicyParams, QueryInput, Rows, ShedInput, StreamInput, ValueQos,
};
use crate::spec::QosSpec;

/// The controller's per-query state the input is read with (borrowed field by field, so
/// the planner's own state stays free to borrow mutably beside it).
pub(super) struct Sources<'a> {
    /// Declared per-query costs, if the model uses them (`Controller::with_model_costs`).
    pub model_costs: Option<&'a [f64]>,
    pub removed: &'a [bool],
    pub specs: &'a [Option<QosSpec>],
    pub key_columns: &'a [Option<Vec<usize>>],
    pub rows_shapes: &'a [Rows],
    pub window_rules: &'a [Option<WindowRule>],
    pub monitor: &'a Monitor,
    /// `C`: ns of processing per second.
    pub capacity: f64,
    pub policy: PolicyParams,
}

impl<'a> Sources<'a> {
    /// The queued work at the costs the model plans with (declared or measured).
    pub(super) fn queued_work(&self, qos: &QosSnapshot) -> f64 {
        qos.queries
            .iter()
            .enumerate()
            .filter(|(qi, _)| !self.removed[*qi])
            .map(|(qi, q)| q.queued as f64 * non_negative(model_cost(self.model_costs, qi, q.cost)))
            .sum()
    }

    /// Per query: a grouped window shed to nothing has its last measured emission noted,
    /// for pricing its re-admission (`rows_memory.rs`); `None` where the query's own
    /// figures stand.
    pub(super) fn remembered(
        &self,
        qos: &QosSnapshot,
        memory: &mut RowsMemory,
    ) -> Vec<Option<Emission>> {
        qos.queries
            .iter()
            .enumerate()
            .map(|(qi, q)| {
                let rate = qos.streams.get(q.stream).map_or(0.0, |s| s.rate);
                let grouped = matches!(self.rows_shapes.get(qi), Some(Rows::Grouped { .. }));
                let now = Emission {
                    rows: q.row_rate,
                    keep: q.delivered,
                    row_cost: q.row_cost,
                };
                let e = memory.note(qi, grouped, rate, now);
                (e != now && self.model_costs.is_none()).then_some(e)
            })
            .collect()
    }

    /// The planner's input for this tick.
    pub(super) fn input(
        &self,
        qos: &'a QosSnapshot,
        backlog: Option<BacklogInput>,
        remembered: &[Option<Emission>],
    ) -> ShedInput<'a> {
        let declared = self.model_costs.is_some();
        ShedInput {
            model_error: qos.model_error,
            backlog,
            idle: qos.idle,
            streams: qos
                .streams
                .iter()
                .enumerate()
                .map(|(si, s)| StreamInput {
                    rate: s.rate,
                    // The engine's fan-out and what each reader pays per tuple reaching
                    // it.
                    ingest: if declared {
                        0.0
                    } else {
                        qos.fan_out_cost
                            + qos
                                .queries
                                .iter()
                                .enumerate()
                                .filter(|(qi, q)| q.stream == si && !self.removed[*qi])
                                .map(|(_, q)| q.passed_cost)
                                .sum::<f64>()
                    },
                })
                .collect(),
            queries: (0..qos.queries.len())
                .map(|qi| self.query(qos, qi, remembered[qi]))
                .collect(),
            // Work that does not shrink with shedding (closing windows) is not capacity the
            // load model can hand out, nor is the engine's fixed work outside query turns
            // (control ticks). Fan-out is in the model (`StreamInput::ingest`): a stream
            // drop saves it.
            capacity: (self.capacity
                - qos.overhead_fixed
                - if declared {
                    0.0
                } else {
                    qos.queries.iter().map(|q| q.fixed_cost).sum::<f64>()
                })
            .max(0.0),
            policy: self.policy,
        }
    }

    fn query(
        &self,
        qos: &'a QosSnapshot,
        qi: usize,
        remembered: Option<Emission>,
    ) -> QueryInput<'a> {
        let q = &qos.queries[qi];
        if self.removed[qi] {
            // Out of range: a silent stream, no load, never shed.
            let mut gone = QueryInput::new(usize::MAX, 0.0);
            gone.lossless = true;
            return gone;
        }
        let declared = self.model_costs.is_some();
        let specs = self.specs;
        let spec = specs[qi].as_ref();
        QueryInput {
            stream: q.stream,
            cost: model_cost(self.model_costs, qi, q.cost),
            queued: q.queued as f64,
            row_cost: if declared { 0.0 } else { q.row_cost },
            fixed: if declared { 0.0 } else { q.fixed_cost },
            rows: q.row_rate,
            keys: self.key_columns[qi].is_some(),
            keep_now: q.delivered,
            rows_shape: self.rows_shapes[qi],
            loss: spec.and_then(|s| s.loss_tolerance.as_ref()),
            weight: spec.map_or(1.0, |s| s.weight),
            lossless: spec.is_some_and(|s| s.lossless),
            value: spec.and_then(|s| s.value.as_ref()).and_then(|v| {
                self.monitor.value_histogram(qi).map(|h| ValueQos {
                    column: v.column,
                    histogram: h,
                })
            }),
            windowed: self.window_rules[qi].is_some(),
            latency: q.target.map(|t| LatencyInput {
                target: t as f64,
                measured: q.latency.map(|l| l as f64),
            }),
            remembered,
        }
    }
}
