//! A pipeline's windows closing as time passes: at ticks, a close emitted in steps
//! (`set_close_step`, `resume_close`), and at the end of input. Invariant: whatever closes
//! them, a window's rows leave once, in window order, and the loss accounting judges only
//! windows emitted whole (`WindowAggregate::emitted_to`).

use super::aggregate::Chunks;
use super::{Body, Output, Pipeline, WindowAggregate};
use crate::core::schema::Nanos;

impl Pipeline {
    /// Runs `close` on the window operator with a sink into `out`, then tells the sink
    /// which windows are emitted whole (`WindowAggregate::emitted_to`), as every way of
    /// closing must; `None` for a query without windows.
    pub(super) fn closing<R>(
        &mut self,
        out: &mut Output,
        close: impl FnOnce(&mut WindowAggregate, &mut Chunks<'_>) -> R,
    ) -> Option<R> {
        let Body::Aggregate(a) = &mut self.body else {
            return None;
        };
        let (op, mut sink) = a.split(out);
        let r = close(op, &mut sink);
        let done = op.emitted_to();
        sink.done(done);
        Some(r)
    }

    /// Closes arrival-time windows ending by `bound`.
    pub fn on_tick(&mut self, bound: Nanos, out: &mut Output) {
        self.closing(out, |op, sink| op.on_tick(bound, sink));
    }

    /// Emits up to the close step's rows more of windows closed but not yet emitted whole
    /// (`WindowAggregate::resume`).
    pub fn resume_close(&mut self, out: &mut Output) {
        self.closing(out, |op, sink| op.resume(sink));
    }

    /// Emits every row of windows closed but not yet emitted whole (rows already due: a
    /// query removed without a flush, a history replay).
    pub fn drain_close(&mut self, out: &mut Output) {
        self.closing(out, |op, sink| op.resume_all(sink));
    }

    /// The arrival the rows of a window closed but not yet emitted whole carry (`None`:
    /// no such window, `resume_close` has nothing to do).
    pub fn closing_due(&self) -> Option<Nanos> {
        match &self.body {
            Body::Aggregate(a) => a.op.closing_due(),
            Body::Project(_) => None,
        }
    }

    /// Rows a window close emits in one call at most; the rest wait for `resume_close`
    /// (or the next batch, tick or flush). Unbounded by default.
    pub fn set_close_step(&mut self, rows: usize) {
        if let Body::Aggregate(a) = &mut self.body {
            a.op.set_close_step(rows);
        }
    }

    /// Whether a tick could emit anything (open arrival-time windows).
    pub fn awaits_tick(&self) -> bool {
        match &self.body {
            Body::Aggregate(a) => a.op.awaits_tick(),
            Body::Project(_) => false,
        }
    }

    /// Emits all remaining state (end of input).
    pub fn flush(&mut self, now: Nanos, out: &mut Output) {
        self.closing(out, |op, sink| op.flush(now, sink));
    }

    /// One step of `flush`: the windows ending at the earliest open window's end
    /// (`WindowAggregate::flush_step`). True while a later window is still open; `flush`
    /// emits whatever a step leaves.
    pub fn flush_step(&mut self, now: Nanos, out: &mut Output) -> bool {
        (self.closing(out, |op, sink| op.flush_step(now, sink))).unwrap_or(false)
    }
}
