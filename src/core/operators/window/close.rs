//! Closing windows: which windows the watermark (or a tick, or the end of input) completes,
//! and the result rows they become. Invariant: every window is emitted once, in start
//! order, its rows in the order its keys were first seen, and its slots are freed after;
//! the sink hears of each window once all its rows are in its buffer (`GroupSink`).

use super::super::approx::Output;
use super::WindowAggregate;
use crate::core::batch::Column;
use crate::core::plan::MAX_GROUP_KEYS;
use crate::core::schema::{DataType, Nanos};

/// Where a window operator puts the group rows of the windows it closes. A close may
/// complete many windows at once (the end of input, a frontier jump): a sink that consumes
/// the buffer as windows complete (`window_closed`) holds the rows of a few windows at a
/// time, not of all of them.
pub trait GroupSink {
    /// The buffer the next group rows are appended to.
    fn buffer(&mut self) -> &mut Output;

    /// Every window ending at or before `closed` has now been emitted whole: the buffer
    /// holds no row of a later window, and may be consumed.
    fn window_closed(&mut self, _closed: i64) {}
}

/// A plain buffer keeps every row until its owner reads it.
impl GroupSink for Output {
    fn buffer(&mut self) -> &mut Output {
        self
    }
}

/// Which arrival a closed window's rows carry (for latency).
#[derive(Clone, Copy, Debug)]
pub(super) enum Due {
    At(Nanos),
    WindowEnd,
}

impl WindowAggregate {
    /// Emits and forgets every window whose end is `<= closed_to`.
    pub(super) fn close(
        &mut self,
        closed_to: i64,
        due_override: Option<Due>,
        out: &mut impl GroupSink,
    ) {
        if self.slices.is_some() {
            self.close_sliced(closed_to, due_override, out);
            return;
        }
        self.closed = self.closed.max(closed_to);
        let size = self.plan.window.size;
        while let Some((&start, _)) = self.windows.first_key_value() {
            let end = start.saturating_add(size);
            if end > closed_to {
                break;
            }
            let slots = self.windows.pop_first().expect("checked non-empty").1;
            self.forget_start(start);
            if start == self.hot.0 {
                // Its slots are freed below: the newest window's cache must not name them.
                self.hot.1.clear();
            }
            if let Some(i) = self.withheld.iter().position(|&s| s == start) {
                self.withheld.swap_remove(i);
                slots.iter().for_each(|&slot| self.forget(slot));
                out.window_closed(end);
                continue;
            }
            let due = self.due_for(end, due_override);
            let buf = out.buffer();
            let nkeys = self.plan.keys.len();
            if self.state.emit_exact(&slots, nkeys, buf) {
                let key_of = |r: usize| &self.slot_keys[slots[r] as usize].1;
                self.push_keys_and_bounds(slots.len(), key_of, (start, end), due, buf);
            } else {
                for &slot in &slots {
                    self.state.emit(slot as usize, nkeys, buf);
                    let gk = self.slot_keys[slot as usize];
                    self.push_key_and_bounds(&gk.1, start, end, due, buf);
                }
            }
            slots.iter().for_each(|&slot| self.forget(slot));
            buf.approx.pad(buf.rows.len());
            out.window_closed(end);
        }
        // A withheld window that never held a row leaves nothing to close.
        self.withheld
            .retain(|&s| s.saturating_add(size) > closed_to);
        let buf = out.buffer();
        buf.approx.pad(buf.rows.len());
        // Crossing records older than every open window's end are no longer needed.
        let first_open_end = self
            .windows
            .first_key_value()
            .map(|(s, _)| s.saturating_add(size))
            .unwrap_or(i64::MAX);
        self.prune_due(first_open_end);
    }

    /// Withholds the tumbling window starting at `start` (abandoned by window-aware
    /// shedding, `drop::ABANDON_BELOW`): it closes without a row, since the rows it kept
    /// are only part of those it should have. Nothing for a window already closed.
    pub fn withhold(&mut self, start: i64) {
        let end = start.saturating_add(self.plan.window.size);
        if end > self.closed && !self.withheld.contains(&start) {
            self.withheld.push(start);
            self.windows_withheld += 1;
        }
    }

    /// Windows withheld whole (`withhold`).
    pub fn windows_withheld(&self) -> u64 {
        self.windows_withheld
    }

    /// The end of the earliest open window that holds a tuple (`None`: none is open):
    /// what the next step of a stepwise flush closes to.
    pub(super) fn next_end(&self) -> Option<i64> {
        let (size, slide) = (self.plan.window.size, self.plan.window.slide);
        if self.slices.is_some() {
            // As `close_sliced` walks: the first window ending after `closed` that a
            // slice reaches into.
            let s = super::slices::first_start_ending_after(self.closed, size, slide);
            let (&a, _) = self.windows.range(s..).next()?;
            let s = s.max(super::slices::first_start_ending_after(a, size, slide));
            return Some(s.saturating_add(size));
        }
        let (&start, _) = self.windows.first_key_value()?;
        Some(start.saturating_add(size))
    }

    /// One step of the end of input: emits the windows ending at the earliest open
    /// window's end, their latency counted from `now`. True when it emitted and a later
    /// window is still open; false when nothing is open (or a step would not advance:
    /// `flush` then emits the rest at once).
    pub fn flush_step(&mut self, now: Nanos, out: &mut impl GroupSink) -> bool {
        let Some(end) = self.next_end() else {
            return false;
        };
        self.close(end, Some(Due::At(now)), out);
        self.next_end().is_some_and(|next| next > end)
    }

    /// The arrival the rows of a window ending at `end` carry.
    pub(super) fn due_for(&self, end: i64, due_override: Option<Due>) -> Nanos {
        match due_override {
            Some(Due::At(t)) => t,
            Some(Due::WindowEnd) => end,
            None => self.due_arrival(end),
        }
    }

    /// Forgets the watermark crossings no window ending at `first_open_end` or later needs.
    pub(super) fn prune_due(&mut self, first_open_end: i64) {
        while self
            .due
            .front()
            .is_some_and(|(wm, _)| wm.saturating_sub(self.plan.lateness) < first_open_end)
        {
            self.due.pop_front();
        }
    }

    /// Forgets the groups of `start`, whose slots have all been (or are being) freed
    /// (`forget`).
    pub(super) fn forget_start(&mut self, start: i64) {
        if let Some(mut map) = self.groups.remove(&start)
            && self.spare.len() < super::SPARE_MAPS
        {
            map.clear();
            self.spare.push(map);
        }
    }

    /// Frees `slot` and the key strings only it held (its start's groups are forgotten
    /// whole, `forget_start`).
    pub(super) fn forget(&mut self, slot: u32) {
        let gk = self.slot_keys[slot as usize];
        for (k, interner) in self.interners.iter_mut().enumerate() {
            if self.plan.key_types[k] == DataType::Str {
                interner.release(gk.1[k]);
            }
        }
        if let Some(sl) = self.slices.as_deref_mut() {
            sl.release(slot);
        }
        self.free.push(slot);
    }

    /// `push_key_and_bounds` of `rows` rows at once, column by column, row `r` having key
    /// `key_of(r)`: completes the rows whose aggregate columns `emit_exact` just appended.
    pub(super) fn push_keys_and_bounds<'k>(
        &self,
        rows: usize,
        key_of: impl Fn(usize) -> &'k [i64; MAX_GROUP_KEYS],
        (start, end): (i64, i64),
        due: Nanos,
        out: &mut Output,
    ) {
        let (nkeys, naggs) = (self.plan.keys.len(), self.plan.aggs.len());
        let out = &mut out.rows;
        for k in 0..nkeys {
            let vals = (0..rows).map(|r| key_of(r)[k]);
            match (&mut out.columns[k], self.plan.key_types[k]) {
                (Column::Int(o), _) => o.extend(vals),
                (Column::Float(o), _) => o.extend(vals.map(|v| f64::from_bits(v as u64))),
                (Column::Bool(o), _) => o.extend(vals.map(|v| v != 0)),
                (Column::Str(o), DataType::Str) => {
                    let names = &self.interners[k].names;
                    vals.for_each(|v| o.push(&names[v as usize]));
                }
                (c, t) => unreachable!("key column {c:?} of type {t}"),
            }
        }
        let base = nkeys + naggs;
        for (i, v) in [(base, start), (base + 1, end)] {
            match &mut out.columns[i] {
                Column::Int(o) => o.resize(o.len() + rows, v),
                c => unreachable!("window bound column {c:?}"),
            }
        }
        out.arrival.resize(out.arrival.len() + rows, due);
    }

    /// Completes the group row whose aggregate columns were just appended: the `key`
    /// columns, the window bounds and the arrival that made it due.
    pub(super) fn push_key_and_bounds(
        &self,
        key: &[i64; MAX_GROUP_KEYS],
        start: i64,
        end: i64,
        due: Nanos,
        out: &mut Output,
    ) {
        self.push_keys_and_bounds(1, |_| key, (start, end), due, out);
    }
}
