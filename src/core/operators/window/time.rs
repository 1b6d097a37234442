//! Event time for the window operator: the watermark, what a filtered batch implies for it,
//! and which tuple made a window due (for latency). Invariant: the watermark only moves
//! forward, row by row in input order, whatever the batching.

use super::WindowAggregate;
use super::close::GroupSink;
use crate::core::batch::{Batch, Column};
use crate::core::plan::TimeSource;
use crate::core::rows::Rows;
use crate::core::schema::Nanos;

impl WindowAggregate {
    /// For each row of `all` named by `sel`, the largest time (and the arrival of the row
    /// holding it) among the rows of `all` up to and including it: what the watermark would
    /// be there had the filter removed nothing.
    pub fn prefix_watermarks(&self, all: &Batch, sel: &[u32], out: &mut Vec<(i64, Nanos)>) {
        self.prefix_watermarks_rows(Rows::all(all), sel, out);
    }

    /// `prefix_watermarks` where the unfiltered rows are those `all` sees (a drop point's
    /// selection); `sel` (batch row indices) is a subset of them.
    pub fn prefix_watermarks_rows(&self, all: Rows<'_>, sel: &[u32], out: &mut Vec<(i64, Nanos)>) {
        let batch = all.batch;
        let times = self.times(batch);
        out.clear();
        let mut best = (i64::MIN, 0);
        let mut next = 0usize;
        for &j in sel {
            let j = j as usize;
            while next < all.len() && all.row(next) <= j {
                let r = all.row(next);
                if times[r] > best.0 {
                    best = (times[r], batch.arrival[r]);
                }
                next += 1;
            }
            out.push(best);
        }
    }

    /// Moves the watermark to the latest time in `batch` without folding its tuples (they
    /// were filtered out, but their time still says the windows before it are complete),
    /// and closes what that completes.
    pub fn advance(&mut self, batch: &Batch, out: &mut impl GroupSink) {
        self.advance_rows(Rows::all(batch), out);
    }

    /// `advance` over the rows `rows` sees.
    pub fn advance_rows(&mut self, rows: Rows<'_>, out: &mut impl GroupSink) {
        if let Some((t, arrival)) = self.latest(rows) {
            self.advance_to(t, arrival, out);
        }
    }

    /// The largest time among `rows` and the arrival of the last row holding it (what
    /// `max_by_key` picks); `None` for no rows.
    pub fn latest(&self, rows: Rows<'_>) -> Option<(i64, Nanos)> {
        let times = self.times(rows.batch);
        let mut best: Option<(usize, i64)> = None;
        for pos in 0..rows.len() {
            let r = rows.row(pos);
            if best.is_none_or(|(_, t)| times[r] >= t) {
                best = Some((r, times[r]));
            }
        }
        best.map(|(row, t)| (t, rows.batch.arrival[row]))
    }

    /// Whether a window ends past what time `a` closes, up to what time `b` closes.
    pub fn crosses(&self, a: i64, b: i64) -> bool {
        let lateness = self.plan.lateness;
        self.next_end_after(a.saturating_sub(lateness)) <= b.saturating_sub(lateness)
    }

    /// The input column windows are assigned by (`None`: arrival time).
    pub fn event_time_column(&self) -> Option<usize> {
        match self.plan.time {
            TimeSource::Column(i) => Some(i),
            TimeSource::Arrival => None,
        }
    }

    /// Whether windows are assigned by a column of the input (event time), not arrival.
    pub fn by_event_time(&self) -> bool {
        self.plan.time != TimeSource::Arrival
    }

    /// The times windows are assigned by, one per row of `batch`.
    fn times<'b>(&self, batch: &'b Batch) -> &'b [i64] {
        match self.plan.time {
            TimeSource::Column(i) => match &batch.columns[i] {
                Column::Int(v) => v,
                other => unreachable!("time column {other:?}"),
            },
            TimeSource::Arrival => &batch.arrival,
        }
    }

    /// Moves the watermark to `t` (the time of a tuple that arrived at `arrival`, routed to
    /// another worker or filtered out) and closes what that completes.
    pub fn advance_to(&mut self, t: i64, arrival: Nanos, out: &mut impl GroupSink) {
        if t <= self.watermark {
            return;
        }
        self.watermark = t;
        let closed_to = t.saturating_sub(self.plan.lateness);
        if closed_to >= self.next_due {
            self.due.push_back((t, arrival));
            self.next_due = self.next_end_after(closed_to);
        }
        self.close(closed_to, None, out);
    }

    /// Every window ending at or before this has been emitted.
    pub fn closed(&self) -> i64 {
        self.closed
    }

    /// The smallest window end strictly greater than `t`.
    pub(super) fn next_end_after(&self, t: i64) -> i64 {
        let (size, slide) = (self.plan.window.size, self.plan.window.slide);
        // Ends are k*slide + size; find the smallest k with k*slide + size > t.
        let k = t.saturating_sub(size).div_euclid(slide).saturating_add(1);
        k.saturating_mul(slide).saturating_add(size)
    }

    /// The arrival of the first tuple whose time closed a window ending at `end`.
    pub(super) fn due_arrival(&self, end: i64) -> Nanos {
        let lateness = self.plan.lateness;
        self.due
            .iter()
            .find(|(wm, _)| wm.saturating_sub(lateness) >= end)
            .or(self.due.back())
            .map(|&(_, a)| a)
            .unwrap_or(0)
    }
}
