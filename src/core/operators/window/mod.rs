//! The windowed GROUP BY operator. It owns every open (window, key) group and guarantees
//! that a window is emitted exactly once, after the watermark passes its end, and that a
//! tuple is either folded into each of its open windows or counted as late.
//!
//! Lateness is decided per tuple against the running watermark (the largest time seen
//! before it), so results do not depend on how the input was cut into batches.
//!
//! A group that folded tuples of a batch that lost input to random shedding (keep < 1) is
//! emitted scaled (`scaling`): COUNT, SUM and AVG as Horvitz-Thompson estimates with 95%
//! intervals, MIN and MAX as observed and flagged as bounds, and the row's keep fraction
//! `kept / estimated count`. Groups that saw only exact batches are emitted as observed.
//!
//! Tumbling windows keep one group per (window, key). Sliding windows (`size > slide`)
//! keep one group per (slice, key), a slice being one slide long: each tuple updates one
//! slice, and a window's rows are combined from its `size / slide` slices when it closes
//! (`slices`) through a two-stacks queue of slices (`stacks`), so each slice is combined a
//! few times over its life, not once per window. Both give the same rows (float sums up to
//! rounding, see `stacks`); the per-window path stays as the reference.

use crate::core::datum::float_key_bits;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::interner::Interner;

mod close;
mod fast;
mod groups;
mod hot;
mod slices;
mod stacks;
mod state;
mod time;
use crate::core::batch::{Batch, Column};
use crate::core::expr::{Datum, Expr, Storage};
use crate::core::plan::{AggregatePlan, MAX_GROUP_KEYS, TimeSource};
use crate::core::rows::Rows;
use crate::core::schema::Nanos;
use close::Due;
pub use close::GroupSink;
use hot::HotKeys;
use slices::Slices;
use state::GroupState;

/// A group: window (or slice) start plus the key values packed into integers (strings interned,
/// floats as bits), so lookups hash a fixed-size value and never allocate.
type GroupKey = (i64, [i64; MAX_GROUP_KEYS]);

/// The groups of one window (or slice) start: packed key to slot.
type KeyMap = FxHashMap<[i64; MAX_GROUP_KEYS], u32>;

/// Emptied `KeyMap`s kept for the next start (each keeps its table's capacity).
const SPARE_MAPS: usize = 4;

#[derive(Debug)]
pub struct WindowAggregate {
    plan: AggregatePlan,
    /// Per open start, its groups: a start's keys are looked up in a map of that start's
    /// keys only (in cache while the start is written), and closing a start drops its map
    /// whole instead of removing each group from one map of every open group. The newest
    /// tumbling window or slice has none (its groups are in `hot` or `slices`); an older
    /// one has a map once an out-of-order tuple looked it up (`groups.rs`).
    groups: BTreeMap<i64, KeyMap>,
    spare: Vec<KeyMap>,
    slot_keys: Vec<GroupKey>,
    free: Vec<u32>,
    /// Open windows (sliding: slices) by start, each with its slots in first-seen order
    /// (the emission order).
    windows: BTreeMap<i64, Vec<u32>>,
    /// Closed windows whose rows are still being emitted, in start order (`close`).
    closing: VecDeque<close::Closing>,
    /// Rows a close emits in one call at most (`set_close_step`).
    close_step: usize,
    /// Emptied slot lists of emitted windows, for the next windows (a million-group
    /// window's list, grown anew each window, cost page faults and copies).
    spare_slots: Vec<Vec<u32>>,
    /// The aggregate state of every slot.
    state: GroupState,
    /// Each aggregate call's argument, shared so a batch's evaluated arguments may borrow
    /// them while the operator changes.
    arg_exprs: Arc<[Option<Expr>]>,
    /// Sliding windows only: what combines slices into windows.
    slices: Option<Box<Slices>>,
    interners: Vec<Interner>,
    /// Largest time seen; `i64::MIN` before the first tuple.
    watermark: i64,
    /// Every window ending at or before this has been emitted and may never reopen: a tuple
    /// that only belongs to such windows is late.
    closed: i64,
    /// `(watermark, arrival)` each time the watermark crossed a window end: the arrival of
    /// the tuple that made those windows due, for latency.
    due: VecDeque<(i64, Nanos)>,
    next_due: i64,
    late: u64,
    /// Starts of open tumbling windows to close without a row (`withhold`), and how many
    /// windows were withheld so.
    withheld: Vec<i64>,
    windows_withheld: u64,
    /// The newest start (window, or slice of sliding windows) and, tumbling, its keys'
    /// slots: in-order input lands there, and a map of one window's keys stays in cache.
    /// A sliced operator finds the newest slice's slots by key id instead (`Slices::hot`).
    /// Emptied when that start is freed.
    hot: (i64, HotKeys),
    // Scratch reused across batches.
    pairs: Vec<(u32, u32)>,
    encoded: Vec<Vec<i64>>,
    /// Whether a batch in one open slice is placed at once (`fast`); off only in tests,
    /// which check it against the general loop.
    batch_placement: bool,
}

impl WindowAggregate {
    /// Key groups held by the sliding-window queue's tables (0 without slices).
    #[cfg(test)]
    pub(crate) fn slice_groups_held(&self) -> usize {
        self.slices.as_ref().map_or(0, |s| s.held())
    }

    /// The operator for `plan`: sliding windows are computed by slices.
    pub fn new(plan: &AggregatePlan) -> WindowAggregate {
        let mut op = WindowAggregate::per_window(plan);
        if plan.window.size > plan.window.slide {
            op.slices = Some(Box::new(Slices::new(plan)));
        }
        op
    }

    /// The operator for `plan` with one group per (window, key) even for sliding windows:
    /// each tuple updates every window it belongs to. The reference the sliced path is
    /// tested against.
    pub fn per_window(plan: &AggregatePlan) -> WindowAggregate {
        assert!(plan.keys.len() <= MAX_GROUP_KEYS, "planner bounds the keys");
        WindowAggregate {
            plan: plan.clone(),
            groups: BTreeMap::new(),
            spare: Vec::new(),
            slot_keys: Vec::new(),
            free: Vec::new(),
            windows: BTreeMap::new(),
            closing: VecDeque::new(),
            close_step: usize::MAX,
            spare_slots: Vec::new(),
            state: GroupState::new(plan),
            arg_exprs: plan.aggs.iter().map(|c| c.arg.clone()).collect(),
            slices: None,
            interners: plan.keys.iter().map(|_| Interner::default()).collect(),
            watermark: i64::MIN,
            closed: i64::MIN,
            due: VecDeque::new(),
            next_due: i64::MIN,
            late: 0,
            withheld: Vec::new(),
            windows_withheld: 0,
            hot: (i64::MIN, HotKeys::new(plan.keys.len())),
            pairs: Vec::new(),
            encoded: vec![Vec::new(); plan.keys.len()],
            batch_placement: true,
        }
    }

    /// Places every batch row by row (the general loop), the reference for `fast`.
    #[cfg(test)]
    pub(crate) fn without_batch_placement(mut self) -> WindowAggregate {
        self.batch_placement = false;
        self
    }

    /// Tuples that arrived after all their windows had closed.
    pub fn late(&self) -> u64 {
        self.late
    }

    /// Groups currently open (state size): (slice, key) groups for sliding windows.
    pub fn open_groups(&self) -> usize {
        let closing: usize = self.closing.iter().map(|c| c.slots.len() - c.next).sum();
        self.windows.values().map(Vec::len).sum::<usize>() + closing
    }

    /// Strings interned for open groups' keys, over all key columns.
    pub fn interned(&self) -> usize {
        self.interners.iter().map(Interner::len).sum()
    }

    /// Folds a batch whose tuples each survived random shedding with probability `keep`
    /// into the open groups, then closes the windows the watermark passed, appending their
    /// group rows to `out` (typed by `AggregatePlan::group_row_types`).
    /// `prefix`, when the filter removed rows, gives for each row of `batch` the largest
    /// time (and its arrival) among the unfiltered rows up to it, so the watermark moves
    /// exactly as if every row had been seen in order.
    pub fn process(
        &mut self,
        batch: &Batch,
        keep: f64,
        value_keep: f64,
        prefix: Option<&[(i64, Nanos)]>,
        out: &mut impl GroupSink,
    ) {
        self.process_rows(Rows::all(batch), keep, value_keep, prefix, out);
    }

    /// `process` of the rows of a batch that `rows` sees (a filter's or a drop point's
    /// selection, read in place); `prefix` then has one entry per row seen.
    pub fn process_rows(
        &mut self,
        rows: Rows<'_>,
        keep: f64,
        value_keep: f64,
        prefix: Option<&[(i64, Nanos)]>,
        out: &mut impl GroupSink,
    ) {
        let n = rows.len();
        if n == 0 {
            return;
        }
        let batch = rows.batch;
        let keys: Vec<Datum<'_>> = self.plan.keys.iter().map(|k| k.eval(batch)).collect();
        // Keys packed per row seen (by position in `rows`).
        for (k, d) in keys.iter().enumerate() {
            let enc = &mut self.encoded[k];
            enc.clear();
            match d.storage() {
                Storage::Int => {
                    let v = d.ints();
                    encode(enc, rows, |i| v.at(i));
                }
                // -0.0 groups with 0.0 and every NaN with every other NaN, as SQL expects.
                Storage::Float => {
                    let v = d.floats();
                    encode(enc, rows, |i| float_key_bits(v.at(i)) as i64);
                }
                Storage::Bool => {
                    let v = d.bools();
                    encode(enc, rows, |i| v.at(i) as i64);
                }
                Storage::Str => {
                    let interner = &mut self.interners[k];
                    match d {
                        Datum::Strs(v) => interner.encode(v, &rows, enc),
                        Datum::Owned(Column::Str(v)) => interner.encode(v, &rows, enc),
                        Datum::Str(s) => {
                            let id = interner.id(s);
                            enc.extend(std::iter::repeat_n(id, n));
                        }
                        _ => unreachable!("string key"),
                    }
                }
            }
        }
        let times: &[i64] = match self.plan.time {
            TimeSource::Column(i) => match &batch.columns[i] {
                Column::Int(v) => v,
                other => unreachable!("time column {other:?}"),
            },
            TimeSource::Arrival => &batch.arrival,
        };
        let (size, slide, lateness) = (
            self.plan.window.size,
            self.plan.window.slide,
            self.plan.lateness,
        );
        let tumbling = self.slices.is_none() && size == slide;
        // Tumbling: the window of the previous row, `(start, end)`, reused while rows fall
        // in it (no division per row).
        let mut current = (i64::MAX, i64::MIN);
        // Evaluated once per batch, however often the batch is folded in parts.
        let arg_exprs = Arc::clone(&self.arg_exprs);
        let args: Vec<Option<Datum<'_>>> = (arg_exprs.iter())
            .map(|e| e.as_ref().map(|e| e.eval(batch)))
            .collect();
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.clear();
        pairs.reserve(n);
        // What has closed for the row at hand; moves only with the watermark (below).
        let mut row_closed = self.watermark.saturating_sub(lateness).max(self.closed);
        // Most batches lie in one open slice and close nothing: placed at once.
        let placed = (self.slices.is_some() || tumbling)
            && self.batch_placement
            && self.place_in_one_slice(rows, times, prefix, &mut pairs);
        let general = if placed { 0 } else { n };
        for pos in 0..general {
            let row = rows.row(pos);
            let t = times[row];
            let (w, a) = prefix.map_or((t, batch.arrival[row]), |p| p[pos]);
            if w > self.watermark {
                self.watermark = w;
                let closed_to = w.saturating_sub(lateness);
                if closed_to >= self.next_due {
                    self.due.push_back((w, a));
                    self.next_due = self.next_end_after(closed_to);
                    if self.slices.is_some() {
                        // Windows this row completes close before it is placed: their
                        // slices must not see it or any later row. Fold the rows so far.
                        self.state.update(&pairs, &args, keep, value_keep);
                        pairs.clear();
                        self.close(closed_to, None, out);
                    }
                }
                // `closed` moves only when windows close (above): recomputed here.
                row_closed = w.saturating_sub(lateness).max(self.closed);
            }
            let closed_to = row_closed;
            let key = packed_key(&self.encoded, pos);
            if tumbling {
                // `t`'s only window; placed unless it has closed. The same decisions as
                // the general loop below, which runs once for a tumbling window.
                if !(current.0 <= t && t < current.1) {
                    let Some(start) = t.div_euclid(slide).checked_mul(slide) else {
                        self.late += 1;
                        continue;
                    };
                    current = (start, start.saturating_add(size));
                }
                if current.1 > t && current.1 > closed_to {
                    let slot = self.hot_slot_for(current.0, key);
                    pairs.push((slot, row as u32));
                } else {
                    self.late += 1;
                }
                continue;
            }
            // The latest window holding `t` starts at `start`; it is also `t`'s slice.
            // Checked: a time near the 64-bit bounds has no window and is late.
            let Some(mut start) = t.div_euclid(slide).checked_mul(slide) else {
                self.late += 1;
                continue;
            };
            if self.slices.is_some() {
                // Some window of the slice is open iff its latest one is.
                if start.saturating_add(size) > closed_to {
                    if let Some(sl) = self.slices.as_deref_mut() {
                        sl.touch(start);
                    }
                    let slot = self.hot_slot_for(start, key);
                    pairs.push((slot, row as u32));
                } else {
                    self.late += 1;
                }
                continue;
            }
            let mut placed = false;
            while start.saturating_add(size) > t {
                if start.saturating_add(size) > closed_to {
                    let slot = self.slot_for((start, key));
                    pairs.push((slot, row as u32));
                    placed = true;
                }
                match start.checked_sub(slide) {
                    Some(s) => start = s,
                    None => break,
                }
            }
            if !placed {
                self.late += 1;
            }
        }
        self.state.update(&pairs, &args, keep, value_keep);
        self.pairs = pairs;
        let closed_to = self.watermark.saturating_sub(lateness);
        self.close(closed_to, None, out);
        for interner in &mut self.interners {
            interner.sweep();
        }
    }

    /// Closes arrival-time windows that ended by `bound` (the engine passes the earliest of
    /// now, the ingest frontier and the oldest queued arrival, so no tuple still on its way
    /// can belong to them).
    pub fn on_tick(&mut self, bound: Nanos, out: &mut impl GroupSink) {
        if self.plan.time == TimeSource::Arrival {
            self.close(bound, Some(Due::WindowEnd), out);
        }
    }

    /// Whether a tick could close a window: arrival-time windows are open. Event-time
    /// windows close on their input's watermark only, never on a tick.
    pub fn awaits_tick(&self) -> bool {
        self.plan.time == TimeSource::Arrival && !self.windows.is_empty()
    }

    /// Emits every open window (end of input); their latency counts from `now`.
    pub fn flush(&mut self, now: Nanos, out: &mut impl GroupSink) {
        self.close_within(i64::MAX, Some(Due::At(now)), usize::MAX, out);
    }
}

/// The packed group key of the `pos`-th row seen, from its encoded key columns.
#[inline]
fn packed_key(encoded: &[Vec<i64>], pos: usize) -> [i64; MAX_GROUP_KEYS] {
    let mut key = [0i64; MAX_GROUP_KEYS];
    for (k, enc) in encoded.iter().enumerate() {
        key[k] = enc[pos];
    }
    key
}

/// Appends `f(row)` for every batch row `rows` sees, in order.
#[inline]
fn encode(enc: &mut Vec<i64>, rows: Rows<'_>, f: impl Fn(usize) -> i64) {
    match rows.sel {
        None => enc.extend((0..rows.batch.len()).map(f)),
        Some(sel) => enc.extend(sel.iter().map(|&i| f(i as usize))),
    }
}
