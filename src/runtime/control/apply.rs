//! Applying a plan and checking the model that made it: the engine rules that realise a
//! plan, the run's history of keeps and utilities, and each tick's check of the last
//! prediction against the work that arrived. Invariant: the history counts every tick once
//! and a removed query's figures end with it.

use super::{ControlReport, Controller};
use crate::core::drop::{DropRule, ValueBins, WindowRule};
use crate::core::engine::DropRules;
use crate::core::schema::Nanos;
use crate::runtime::monitor::QosSnapshot;
use crate::shed::{QueryDrop, ShedPlan};

impl Controller {
    /// Checks the last plan's prediction against the tick ending at `now`, into
    /// `qos.model_error` and its load-weighted mean over shedding ticks.
    pub(super) fn check_model(&mut self, qos: &mut QosSnapshot, now: Nanos) {
        // The model checked against what happened: the work that arrived over this tick
        // (work done, plus the growth of the backlog at the measured costs) against what
        // the last plan predicted for it.
        let dt = ((now - self.prev_at).max(1)) as f64 / 1e9;
        let backlog: f64 = qos
            .queries
            .iter()
            .zip(&self.prev_queued)
            .map(|(q, &before)| (q.queued as f64 - before) * q.cost)
            .sum();
        self.prev_queued = qos.queries.iter().map(|q| q.queued as f64).collect();
        self.prev_at = now;
        if let Some(predicted) = self.predicted.filter(|p| *p > 0.01 * self.capacity) {
            let arrived = (qos.busy * 1e9 + backlog / dt).max(0.0);
            let e = (arrived - predicted) / predicted;
            qos.model_error = Some(e);
            // Weighted by the predicted load (the sum of misses over the sum of
            // predictions): a tick predicted at 1% of capacity cannot blow the figure up
            // to 1e4 % the way a mean of relative errors lets it.
            if self.state.shedding() {
                self.error_sum += (arrived - predicted).abs();
                self.error_weight += predicted;
            }
        }
        qos.model_error_mean =
            (self.error_weight > 0.0).then(|| self.error_sum / self.error_weight);
    }

    /// Notes the installed plan in the run's history and publishes the tick's report.
    pub(super) fn record(
        &mut self,
        mut qos: QosSnapshot,
        p: ShedPlan,
        stream_keep: Vec<f64>,
        query_keep: Vec<f64>,
    ) -> ControlReport {
        let h = &mut self.history;
        h.ticks += 1;
        h.shedding_ticks += p.shedding as u64;
        for (m, k) in h.stream_min_keep.iter_mut().zip(&stream_keep) {
            *m = m.min(*k);
        }
        for (m, k) in h.query_min_keep.iter_mut().zip(&query_keep) {
            *m = m.min(*k);
        }
        // A semantic drop sheds the least valuable tuples first: its utility is the share
        // of value kept (from the plan), not the loss-tolerance graph at the share of
        // tuples kept. On the tick a plan stops being semantic, the tick just measured ran
        // under the semantic one: its utility is that plan's (the graph at the share of
        // tuples it kept read 0.03 for a query that kept 98% of its value).
        let before = self.last.as_ref().map(|r| &r.plan);
        for (i, (q, d)) in qos.queries.iter_mut().zip(&p.queries).enumerate() {
            if matches!(d, QueryDrop::Semantic(_)) {
                q.utility = p.utility[i];
            } else if let Some(b) = before
                && matches!(b.queries.get(i), Some(QueryDrop::Semantic(_)))
                && let Some(&u) = b.utility.get(i)
            {
                q.utility = u;
            }
        }
        for (i, q) in qos.queries.iter().enumerate() {
            // A removed query's figures end with it.
            if self.removed.get(i).copied().unwrap_or(false) {
                continue;
            }
            h.utility_sum[i] += q.utility;
            h.utility_min[i] = h.utility_min[i].min(q.utility);
            h.utility_ticks[i] += 1;
        }
        let report = ControlReport {
            thinned: 0,
            thinned_queries: Vec::new(),
            qos,
            plan: p,
            stream_keep,
            query_keep,
        };
        self.note_rest(&report);
        self.last = Some(report.clone());
        report
    }

    /// The engine rules that realise `p`.
    pub(super) fn rules(&self, p: &ShedPlan) -> DropRules {
        DropRules {
            streams: p
                .streams
                .iter()
                .map(|&k| {
                    if k >= 1.0 {
                        DropRule::KeepAll
                    } else {
                        DropRule::Random { keep: k }
                    }
                })
                .collect(),
            queries: p
                .queries
                .iter()
                .enumerate()
                .map(|(qi, d)| match d {
                    QueryDrop::KeepAll => DropRule::KeepAll,
                    QueryDrop::Random { keep } => DropRule::Random { keep: *keep },
                    QueryDrop::Semantic(s) => DropRule::Semantic(ValueBins {
                        column: s.column,
                        lo: s.binning.lo(),
                        hi: s.binning.hi(),
                        width: s.binning.width(),
                        keep: s.keep.clone(),
                    }),
                    // Window-aware needs a tumbling window over column keys; other
                    // queries get the same keep fraction at random.
                    QueryDrop::Keys { keep } => match &self.key_columns[qi] {
                        Some(k) => DropRule::Keys {
                            keep: *keep,
                            key_columns: k.clone(),
                        },
                        None => DropRule::Random { keep: *keep },
                    },
                    QueryDrop::Window { keep } => match &self.window_rules[qi] {
                        Some(r) => DropRule::Window(WindowRule {
                            keep: *keep,
                            ..r.clone()
                        }),
                        None => DropRule::Random { keep: *keep },
                    },
                })
                .collect(),
            queue_capacity: None,
        }
    }
}

/// Query `qi`'s cost per tuple as the load model plans with it: declared (`declared`), or
/// else `measured`.
pub(super) fn model_cost(declared: Option<&[f64]>, qi: usize, measured: f64) -> f64 {
    declared
        .and_then(|c| c.get(qi).copied())
        .filter(|c| c.is_finite())
        .unwrap_or(measured)
}
