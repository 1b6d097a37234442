//! Closing windows: which windows the watermark (or a tick, or the end of input) completes,
//! and the result rows they become. Invariant: every window is emitted once, in start
//! order, its rows in the order its keys were first seen, and each slot is freed once its
//! row is emitted; the sink hears of each window once all its rows are in its buffer
//! (`GroupSink`). A close may emit a few rows now and the rest later (`close_step`,
//! `resume`): a window closed is late for every tuple from then on, whether or not its
//! rows are all out, and no later window's row comes before its last.

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

/// Emptied slot lists kept (`spare`): one is enough while windows close one after another
/// (tumbling); each holds the capacity of the largest window it served.
const SPARE_SLOT_LISTS: usize = 2;

/// A window the watermark has closed whose rows are not all emitted yet: a close emits at
/// most `close_step` rows a call (tumbling and per-window operators; sliced sliding
/// windows close whole), so one window of a million groups is emitted over many calls and
/// the engine can run other queries in between (`WindowAggregate::resume`).
#[derive(Debug)]
pub(super) struct Closing {
    start: i64,
    end: i64,
    /// The arrival its rows carry, fixed when it closed.
    due: Nanos,
    /// Its slots in emission order, `slots[..next]` emitted and freed.
    pub(super) slots: Vec<u32>,
    pub(super) next: usize,
    /// Abandoned by window-aware shedding (`withhold`): closes without a row.
    withheld: bool,
}

impl WindowAggregate {
    /// Emits and forgets every window whose end is `<= closed_to`, at most `close_step`
    /// rows of them now and the rest by later calls (`resume`), in start order.
    pub(super) fn close(
        &mut self,
        closed_to: i64,
        due_override: Option<Due>,
        out: &mut impl GroupSink,
    ) {
        self.close_within(closed_to, due_override, self.close_step, out);
    }

    /// `close` emitting at most `budget` rows now (`usize::MAX`: all of them).
    pub(super) fn close_within(
        &mut self,
        closed_to: i64,
        due_override: Option<Due>,
        budget: usize,
        out: &mut impl GroupSink,
    ) {
        if self.slices.is_some() {
            self.close_sliced(closed_to, due_override, out);
            return;
        }
        self.closed = self.closed.max(closed_to);
        let size = self.plan.window.size;
        // Every window the watermark closed joins the queue now, with its due arrival:
        // its key map and cache go, and a tuple for it is late from here on.
        while let Some((&start, _)) = self.windows.first_key_value() {
            let end = start.saturating_add(size);
            if end > closed_to {
                break;
            }
            let slots = self.windows.pop_first().expect("checked non-empty").1;
            self.forget_start(start);
            if start == self.hot.0 {
                // Its slots are freed as they are emitted: the newest window's cache must
                // not name them.
                self.hot.1.clear();
            }
            let withheld = match self.withheld.iter().position(|&s| s == start) {
                Some(i) => {
                    self.withheld.swap_remove(i);
                    true
                }
                None => false,
            };
            let due = self.due_for(end, due_override);
            (self.closing).push_back(Closing {
                start,
                end,
                due,
                slots,
                next: 0,
                withheld,
            });
        }
        // A withheld window that never held a row leaves nothing to close.
        self.withheld
            .retain(|&s| s.saturating_add(size) > closed_to);
        self.emit_closing(budget, out);
        // Crossing records older than every open window's end are no longer needed (a
        // queued window's due arrival is already fixed).
        let first_open_end = self
            .windows
            .first_key_value()
            .map(|(s, _)| s.saturating_add(size))
            .unwrap_or(i64::MAX);
        self.prune_due(first_open_end);
    }

    /// Emits up to `close_step` more rows of the windows closed but not yet emitted whole.
    pub fn resume(&mut self, out: &mut impl GroupSink) {
        self.emit_closing(self.close_step, out);
    }

    /// Emits every row of the windows closed but not yet emitted whole.
    pub fn resume_all(&mut self, out: &mut impl GroupSink) {
        self.emit_closing(usize::MAX, out);
    }

    /// The arrival the rows of the earliest window still being emitted carry.
    pub fn closing_due(&self) -> Option<Nanos> {
        self.closing.front().map(|c| c.due)
    }

    /// Every window ending at or before this has been emitted whole (`closed` unless a
    /// closed window is still being emitted): what the loss accounting may judge.
    pub fn emitted_to(&self) -> i64 {
        self.closing.front().map_or(self.closed, |c| c.end - 1)
    }

    /// Rows at most a close emits in one call (`usize::MAX`, the default: all at once).
    pub fn set_close_step(&mut self, rows: usize) {
        self.close_step = rows.max(1);
    }

    /// Emits queued windows' rows in start order, up to `budget` rows (a withheld window
    /// costs none), telling `out` of each window emitted whole.
    fn emit_closing(&mut self, mut budget: usize, out: &mut impl GroupSink) {
        let nkeys = self.plan.keys.len();
        while let Some(mut c) = self.closing.pop_front() {
            if c.withheld {
                c.slots.iter().for_each(|&slot| self.forget(slot));
                out.window_closed(c.end);
                self.spare(c.slots);
                continue;
            }
            if budget == 0 && c.next < c.slots.len() {
                self.closing.push_front(c);
                break;
            }
            let n = (c.slots.len() - c.next).min(budget);
            let part = &c.slots[c.next..c.next + n];
            let buf = out.buffer();
            if self.state.emit_exact(part, nkeys, buf) {
                let key_of = |r: usize| &self.slot_keys[part[r] as usize].1;
                self.push_keys_and_bounds(n, key_of, (c.start, c.end), c.due, buf);
            } else {
                for &slot in part {
                    self.state.emit(slot as usize, nkeys, buf);
                    let gk = self.slot_keys[slot as usize];
                    self.push_key_and_bounds(&gk.1, c.start, c.end, c.due, buf);
                }
            }
            part.iter().for_each(|&slot| self.forget(slot));
            buf.approx.pad(buf.rows.len());
            c.next += n;
            budget -= n;
            if c.next < c.slots.len() {
                self.closing.push_front(c);
                break;
            }
            out.window_closed(c.end);
            self.spare(c.slots);
        }
        let buf = out.buffer();
        buf.approx.pad(buf.rows.len());
    }

    /// Keeps an emitted window's slot list for a later window.
    fn spare(&mut self, mut slots: Vec<u32>) {
        if self.spare_slots.len() < SPARE_SLOT_LISTS {
            slots.clear();
            self.spare_slots.push(slots);
        }
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
        if let Some(c) = self.closing.front() {
            return Some(c.end);
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
        self.close_within(end, Some(Due::At(now)), usize::MAX, out);
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
