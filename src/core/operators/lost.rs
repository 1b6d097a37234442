//! What rows lost before they reached a pipeline tell it: the event time of rows shed,
//! refused by a full queue or thinned (`LostTime`) still moves the watermark of an
//! event-time window, so the windows those rows complete close when the rows queued
//! before them are done. Invariant: only a pipeline windowed by event time moves;
//! any other ignores lost time (arrival-time windows close on ticks).

use super::{Body, Output, Pipeline};
use crate::core::queue::LostTime;
use crate::core::rows::Rows;
use crate::core::schema::Nanos;

impl Pipeline {
    /// For a pipeline windowed by event time: the latest time among `rows` (and the
    /// arrival of the row holding it), rows a drop or a full queue took away before they
    /// reached it. They still tell the time: the windows they complete must close when
    /// the rows before them are done, not when the next kept row arrives (a window whose
    /// later rows were all shed would otherwise wait, and its latency would count from
    /// that row). `None` for any other pipeline (arrival-time windows close on ticks).
    pub fn lost_time(&self, rows: Rows<'_>) -> Option<(i64, Nanos)> {
        match &self.body {
            Body::Aggregate(a) if a.op.by_event_time() => a.op.latest(rows),
            _ => None,
        }
    }

    /// The input column an event-time window reads its time from (`None`: no such
    /// window). Pipelines on one stream that read the same column learn the same time
    /// from a batch's lost rows (`lost_time`), so it is found once per batch for all.
    pub fn event_time_column(&self) -> Option<usize> {
        match &self.body {
            Body::Aggregate(a) => a.op.event_time_column(),
            Body::Project(_) => None,
        }
    }

    /// Whether windows are assigned by an input column (event time), not by arrival.
    pub fn by_event_time(&self) -> bool {
        matches!(&self.body, Body::Aggregate(a) if a.op.by_event_time())
    }

    /// Whether a window closes past event time `a`, up to `b` (`LostTime::push`).
    pub fn crosses(&self, a: i64, b: i64) -> bool {
        match &self.body {
            Body::Aggregate(w) => w.op.crosses(a, b),
            Body::Project(_) => false,
        }
    }

    /// Moves the watermark by each time `lost` holds (what rows lost before they
    /// reached the pipeline tell, `Queued::advance`), closing what that completes.
    pub fn advance_lost(&mut self, lost: &LostTime, out: &mut Output) {
        for time in lost.times() {
            self.advance_time(time, out);
        }
    }

    /// Moves the watermark to `time` (from `lost_time`) and closes what that completes.
    pub fn advance_time(&mut self, time: (i64, Nanos), out: &mut Output) {
        self.closing(out, |op, sink| op.advance_to(time.0, time.1, sink));
    }
}
