//! Event time for the window operator: the watermark, what a filtered batch implies for it,
//! and which tuple made a window due (for latency). Invariant: the watermark only moves
//! forward, row by row in input order, whatever the batching.

use super::WindowAggregate;
use crate::core::batch::{Batch, Column};
use crate::core::operators::Output;
use crate::core::plan::TimeSource;
use crate::core::schema::Nanos;

impl WindowAggregate {
    /// For each row of `all` named by `sel`, the largest time (and the arrival of the row
    /// holding it) among the rows of `all` up to and including it: what the watermark would
    /// be there had the filter removed nothing.
    pub fn prefix_watermarks(&self, all: &Batch, sel: &[u32], out: &mut Vec<(i64, Nanos)>) {
        let times: &[i64] = match self.plan.time {
            TimeSource::Column(i) => match &all.columns[i] {
                Column::Int(v) => v,
                other => unreachable!("time column {other:?}"),
            },
            TimeSource::Arrival => &all.arrival,
        };
        out.clear();
        let mut best = (i64::MIN, 0);
        let mut next = 0usize;
        for &j in sel {
            let j = j as usize;
            while next <= j {
                if times[next] > best.0 {
                    best = (times[next], all.arrival[next]);
                }
                next += 1;
            }
            out.push(best);
        }
    }

    /// Moves the watermark to the latest time in `batch` without folding its tuples (they
    /// were filtered out, but their time still says the windows before it are complete),
    /// and closes what that completes.
    pub fn advance(&mut self, batch: &Batch, out: &mut Output) {
        let times: &[i64] = match self.plan.time {
            TimeSource::Column(i) => match &batch.columns[i] {
                Column::Int(v) => v,
                other => unreachable!("time column {other:?}"),
            },
            TimeSource::Arrival => &batch.arrival,
        };
        let Some((row, &t)) = times.iter().enumerate().max_by_key(|(_, t)| **t) else {
            return;
        };
        self.advance_to(t, batch.arrival[row], out);
    }

    /// Moves the watermark to `t` (the time of a tuple that arrived at `arrival`, routed to
    /// another worker or filtered out) and closes what that completes.
    pub fn advance_to(&mut self, t: i64, arrival: Nanos, out: &mut Output) {
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
