//! Ticks at rest: a run with no input to process reaches a fixed point where every tick
//! reports the same as the last one, time aside. Simulated mode folds such ticks
//! (`fold_ticks`) instead of running them one by one; the invariant is that the run
//! summary and every later tick are exactly what running them would have given.

use super::{ControlReport, Controller};
use crate::core::schema::Nanos;
use crate::core::stats::EngineSnapshot;
use crate::runtime::monitor::QosSnapshot;
use crate::shed::ShedState;

/// Ticks of identical reports beyond the monitor's window before ticks fold: every
/// sliding window has then seen only idle ticks.
const MARGIN: usize = 3;

#[derive(Default)]
pub(super) struct Rest {
    ticks: usize,
    state: Option<ShedState>,
}

impl Controller {
    /// Counts `report` towards rest when it repeats the last one (time aside), the planner
    /// state did not move, nothing is shed, and every utility is 0 or 1 (so the summary's
    /// sums of utility over folded ticks stay exact).
    pub(super) fn note_rest(&mut self, report: &ControlReport) {
        let same = self
            .last
            .as_ref()
            .is_some_and(|last| same_but_time(last, report))
            && self.rest.state.as_ref() == Some(&self.state)
            && !report.plan.shedding
            && report
                .qos
                .queries
                .iter()
                .all(|q| q.utility == 1.0 || q.utility == 0.0)
            && self.monitor.settled();
        self.rest.ticks = if same { self.rest.ticks + 1 } else { 0 };
        match &mut self.rest.state {
            Some(s) => s.clone_from(&self.state),
            None => self.rest.state = Some(self.state.clone()),
        }
    }

    /// Whether the next ticks, if the engine stays idle, would repeat the last report:
    /// enough identical ticks ran for every sliding window to hold idle ticks only.
    pub fn at_rest(&self) -> bool {
        self.switch.is_none() && self.rest.ticks >= self.monitor.window_ticks() + MARGIN
    }

    /// Accounts for `n` ticks at rest, the last at `last_at`, as if each had run: the
    /// history counts them, and the next tick measures from `last_at`. Only when
    /// `at_rest` and the engine was idle over them.
    pub fn fold_ticks(&mut self, n: u64, last_at: Nanos) {
        debug_assert!(self.at_rest());
        // The backlog's trend starts afresh: its windows would span the folded ticks (at
        // rest nothing is queued, so a run that did not fold sees no growth either).
        self.backlog.clear();
        let h = &mut self.history;
        h.ticks += n;
        if let Some(last) = &mut self.last {
            for (i, q) in last.qos.queries.iter().enumerate() {
                if self.removed.get(i).copied().unwrap_or(false) {
                    continue;
                }
                // 0 or 1 (`note_rest`): exact as long as the sums are below 2^53.
                h.utility_sum[i] += q.utility * n as f64;
                h.utility_ticks[i] += n;
            }
            last.qos.at = last_at;
        }
        self.prev_at = last_at;
        self.monitor.fold(last_at);
    }
}

/// Whether two reports are equal but for the time they were taken at.
fn same_but_time(a: &ControlReport, b: &ControlReport) -> bool {
    let QosSnapshot {
        at: _,
        streams,
        queries,
        busy,
        overhead,
        ingest_cost,
        fan_out_cost,
        overhead_fixed,
        // Idle time at rest is the tick itself, up to where its slices fell.
        idle: _,
        violations,
        model_error,
        model_error_mean,
        engine,
    } = &a.qos;
    a.plan == b.plan
        && a.stream_keep == b.stream_keep
        && a.query_keep == b.query_keep
        && *streams == b.qos.streams
        && *queries == b.qos.queries
        && *busy == b.qos.busy
        && *overhead == b.qos.overhead
        && *ingest_cost == b.qos.ingest_cost
        && *fan_out_cost == b.qos.fan_out_cost
        && *overhead_fixed == b.qos.overhead_fixed
        && *violations == b.qos.violations
        && *model_error == b.qos.model_error
        && *model_error_mean == b.qos.model_error_mean
        && same_but_idle(engine, &b.qos.engine)
}

/// Whether two engine snapshots are equal but for the idle time counted so far (which
/// grows at rest).
fn same_but_idle(a: &EngineSnapshot, b: &EngineSnapshot) -> bool {
    let EngineSnapshot {
        streams,
        queries,
        overhead,
        idle: _,
        queued_bytes,
        queued_bytes_peak,
    } = a;
    *streams == b.streams
        && *queries == b.queries
        && *overhead == b.overhead
        && *queued_bytes == b.queued_bytes
        && *queued_bytes_peak == b.queued_bytes_peak
}
