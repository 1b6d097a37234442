//! A pipeline's windows closing as time passes: at ticks, a close emitted in steps
//! (`set_close_step`, `resume_close`), and at the end of input. Invariant: whatever closes
//! them, a window's rows leave once, in window order, and the loss accounting judges only
//! windows emitted whole (`WindowAggregate::emitted_to`).

use super::{Body, Output, Pipeline};
use crate::core::schema::Nanos;

impl Pipeline {
    /// Closes arrival-time windows ending by `bound`.
    pub fn on_tick(&mut self, bound: Nanos, out: &mut Output) {
        if let Body::Aggregate(a) = &mut self.body {
            let (op, mut sink) = a.split(out);
            op.on_tick(bound, &mut sink);
            let done = op.emitted_to();
            sink.done(done);
        }
    }

    /// Emits up to the close step's rows more of windows closed but not yet emitted whole
    /// (`WindowAggregate::resume`).
    pub fn resume_close(&mut self, out: &mut Output) {
        self.emit_closed(false, out);
    }

    /// Emits every row of windows closed but not yet emitted whole (rows already due: a
    /// query removed without a flush, a history replay).
    pub fn drain_close(&mut self, out: &mut Output) {
        self.emit_closed(true, out);
    }

    /// `resume_close`, or with `all` `drain_close`.
    fn emit_closed(&mut self, all: bool, out: &mut Output) {
        if let Body::Aggregate(a) = &mut self.body {
            let (op, mut sink) = a.split(out);
            if all {
                op.resume_all(&mut sink);
            } else {
                op.resume(&mut sink);
            }
            let done = op.emitted_to();
            sink.done(done);
        }
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
        if let Body::Aggregate(a) = &mut self.body {
            let (op, mut sink) = a.split(out);
            op.flush(now, &mut sink);
            let done = op.emitted_to();
            sink.done(done);
        }
    }

    /// One step of `flush`: the windows ending at the earliest open window's end
    /// (`WindowAggregate::flush_step`). True while a later window is still open; `flush`
    /// emits whatever a step leaves.
    pub fn flush_step(&mut self, now: Nanos, out: &mut Output) -> bool {
        let Body::Aggregate(a) = &mut self.body else {
            return false;
        };
        let (op, mut sink) = a.split(out);
        let more = op.flush_step(now, &mut sink);
        let done = op.emitted_to();
        sink.done(done);
        more
    }
}
