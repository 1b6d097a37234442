//! Sliding windows by slices. A HOP window of size S and slide L is S/L consecutive slices
//! of length L, and the slice of a tuple is the latest window it belongs to, so each tuple
//! updates one (slice, key) group instead of S/L (window, key) groups. When a window
//! closes, its slices are queued, the older ones evicted, and its rows read from the
//! two-stacks queue (`stacks`); a slice is freed once its last window has closed.
//!
//! Invariant: a window's rows are those the per-window path gives: a tuple lands in its
//! slice iff one of its windows is still open, windows already emitted never read it, and
//! a window's keys come out in the order the window first saw them (the smallest
//! first-seen sequence number over its slices). Counts, integer sums, MIN and MAX combine
//! exactly; float sums are grouped by slices (see `stacks`).

use super::super::approx::Output;
use super::WindowAggregate;
use super::close::{Due, GroupSink};
use super::hot::HotKeys;
use super::stacks::{Stacks, Table};
use crate::core::plan::{AggregatePlan, MAX_GROUP_KEYS};

type Key = [i64; MAX_GROUP_KEYS];

/// What combines slices into windows: a dense id per key of an open slice group (so tables
/// are indexed by arrays, not hashed), each group's first-seen sequence number, the
/// two-stacks queue of slices and the table of the window being closed. It also finds the
/// newest slice's groups by key id (`hot_slot`), so in-order input finds its group with one
/// lookup in a map that does not change from slice to slice.
#[derive(Debug)]
pub(super) struct Slices {
    /// Key -> dense id, for the keys of open slice groups.
    ids: HotKeys,
    /// Per dense id: its key, and how many open slice groups have it.
    kid_key: Vec<Key>,
    kid_groups: Vec<u32>,
    free_kids: Vec<u32>,
    /// Per dense id: its group's slot in the newest slice, current only if it carries
    /// `hot_generation` (bumped instead of clearing every entry).
    hot_slot: Vec<(u32, u32)>,
    hot_generation: u32,
    /// Per slot: its key's dense id and its creation number (first-seen order).
    slot_kid: Vec<u32>,
    slot_seq: Vec<u64>,
    seq: u64,
    stacks: Stacks,
    /// The window being closed, and its emission order.
    window: Table,
    order: Vec<u32>,
}

impl Slices {
    pub(super) fn new(plan: &AggregatePlan) -> Slices {
        Slices {
            ids: HotKeys::new(plan.keys.len()),
            kid_key: Vec::new(),
            kid_groups: Vec::new(),
            free_kids: Vec::new(),
            hot_slot: Vec::new(),
            hot_generation: 1,
            slot_kid: Vec::new(),
            slot_seq: Vec::new(),
            seq: 0,
            stacks: Stacks::new(plan),
            window: Table::new(plan),
            order: Vec::new(),
        }
    }

    /// A tuple is about to be folded into the slice starting at `start`.
    #[inline]
    pub(super) fn touch(&mut self, start: i64) {
        self.stacks.touch(start);
    }

    /// Key groups held in the two-stacks queue's tables.
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.stacks.held()
    }

    /// The dense id of `key`, if an open slice group has it.
    #[inline]
    pub(super) fn kid(&mut self, key: &Key) -> Option<u32> {
        self.ids.get(key)
    }

    /// `kid` of a one-column key.
    #[inline]
    pub(super) fn kid_one(&mut self, k: i64) -> Option<u32> {
        self.ids.get_one(k)
    }

    /// The newest slice's group of key id `kid`, if it has one.
    #[inline]
    pub(super) fn hot(&self, kid: u32) -> Option<u32> {
        match self.hot_slot.get(kid as usize) {
            Some(&(slot, g)) if g == self.hot_generation => Some(slot),
            _ => None,
        }
    }

    /// Records `slot` as the newest slice's group of key id `kid`.
    pub(super) fn set_hot(&mut self, kid: u32, slot: u32) {
        let k = kid as usize;
        if k >= self.hot_slot.len() {
            self.hot_slot.resize(k + 1, (0, 0));
        }
        self.hot_slot[k] = (slot, self.hot_generation);
    }

    /// Forgets the newest slice's groups (it changed, or its slots are being freed).
    pub(super) fn clear_hot(&mut self) {
        self.hot_generation = self.hot_generation.wrapping_add(1);
        if self.hot_generation == 0 {
            // Wrapped: old entries could look current again.
            self.hot_slot.fill((0, 0));
            self.hot_generation = 1;
        }
    }

    /// Records a new slice group `slot` with `key`, whose id is `kid` if known (once per
    /// group, not per tuple). Returns the key's id.
    pub(super) fn open(&mut self, slot: u32, key: &Key, kid: Option<u32>) -> u32 {
        let kid = match kid.or_else(|| self.ids.get(key)) {
            Some(k) => k,
            None => {
                let k = match self.free_kids.pop() {
                    Some(k) => k,
                    None => {
                        self.kid_key.push(*key);
                        self.kid_groups.push(0);
                        (self.kid_key.len() - 1) as u32
                    }
                };
                self.kid_key[k as usize] = *key;
                self.ids.insert(*key, k);
                k
            }
        };
        self.kid_groups[kid as usize] += 1;
        let s = slot as usize;
        if s >= self.slot_kid.len() {
            self.slot_kid.resize(s + 1, 0);
            self.slot_seq.resize(s + 1, 0);
        }
        self.slot_kid[s] = kid;
        self.slot_seq[s] = self.seq;
        self.seq += 1;
        kid
    }

    /// Forgets slice group `slot`; its key's id is reused once no group has it.
    pub(super) fn release(&mut self, slot: u32) {
        let kid = self.slot_kid[slot as usize] as usize;
        self.kid_groups[kid] -= 1;
        if self.kid_groups[kid] == 0 {
            self.ids.remove(&self.kid_key[kid]);
            self.free_kids.push(kid as u32);
        }
    }
}

/// The smallest window start (a multiple of `slide`) whose window ends after `t`.
pub(super) fn first_start_ending_after(t: i64, size: i64, slide: i64) -> i64 {
    t.saturating_sub(size)
        .div_euclid(slide)
        .saturating_add(1)
        .saturating_mul(slide)
}

impl WindowAggregate {
    /// Emits every window ending in `(closed, closed_to]` that holds a tuple, combined from
    /// its slices, then frees the slices whose last window has closed.
    pub(super) fn close_sliced(
        &mut self,
        closed_to: i64,
        due_override: Option<Due>,
        out: &mut impl GroupSink,
    ) {
        let before = self.closed;
        self.closed = before.max(closed_to);
        let (size, slide) = (self.plan.window.size, self.plan.window.slide);
        if closed_to > before {
            let mut s = first_start_ending_after(before, size, slide);
            while let Some((&a, _)) = self.windows.range(s..).next() {
                // Skip the windows no slice reaches into.
                s = s.max(first_start_ending_after(a, size, slide));
                let end = s.saturating_add(size);
                if end > closed_to {
                    break;
                }
                self.emit_window(s, end, due_override, out.buffer());
                out.window_closed(end);
                match s.checked_add(slide) {
                    Some(next) => s = next,
                    None => break,
                }
            }
            while let Some((&a, _)) = self.windows.first_key_value() {
                if a.saturating_add(size) > closed_to {
                    break;
                }
                if let Some(mut sl) = self.slices.take() {
                    self.evict_before(a.saturating_add(1), &mut sl);
                    self.slices = Some(sl);
                }
                if a == self.hot.0 {
                    self.hot.1.clear();
                    if let Some(sl) = self.slices.as_deref_mut() {
                        sl.clear_hot();
                    }
                }
                let slots = self.windows.pop_first().expect("checked non-empty").1;
                self.forget_start(a);
                for slot in slots {
                    self.forget(slot);
                }
            }
        }
        let buf = out.buffer();
        buf.approx.pad(buf.rows.len());
        // Crossing records older than every open window's end are no longer needed.
        let first_open_end = match self.windows.first_key_value() {
            Some((&a, _)) => first_start_ending_after(a, size, slide)
                .max(first_start_ending_after(self.closed, size, slide))
                .saturating_add(size),
            None => i64::MAX,
        };
        self.prune_due(first_open_end);
    }

    /// Drops the slices starting before `start` from the queue (before they are freed).
    fn evict_before(&mut self, start: i64, sl: &mut Slices) {
        let Slices {
            slot_kid,
            slot_seq,
            stacks,
            ..
        } = sl;
        let windows = &self.windows;
        let parts = |s: i64| {
            let slots = windows.get(&s).map_or(&[][..], Vec::as_slice);
            slots
                .iter()
                .map(|&slot| (slot_kid[slot as usize], slot, slot_seq[slot as usize]))
        };
        stacks.evict_before(start, &self.plan, &self.state, parts);
    }

    /// Combines the slices of window `[start, end)` and appends its rows to `out`.
    fn emit_window(&mut self, start: i64, end: i64, due_override: Option<Due>, out: &mut Output) {
        let due = self.due_for(end, due_override);
        let mut sl = self.slices.take().expect("sliced operator");
        sl.stacks.refresh(start);
        self.evict_before(start, &mut sl);
        let from = sl.stacks.queued_to.max(start);
        if from < end {
            for (&s, slots) in self.windows.range(from..end) {
                let parts = slots
                    .iter()
                    .map(|&slot| (sl.slot_kid[slot as usize], slot, sl.slot_seq[slot as usize]));
                sl.stacks.push(s, &self.state, parts);
            }
        }
        sl.stacks.queued_to = sl.stacks.queued_to.max(end);
        let Slices {
            window,
            order,
            stacks,
            kid_key,
            slot_kid,
            slot_seq,
            ..
        } = &mut *sl;
        let windows = &self.windows;
        let parts = |s: i64| {
            let slots = windows.get(&s).map_or(&[][..], Vec::as_slice);
            slots
                .iter()
                .map(|&slot| (slot_kid[slot as usize], slot, slot_seq[slot as usize]))
        };
        let next_start = start.saturating_add(self.plan.window.slide);
        stacks.window(window, &self.state, parts, next_start);
        order.clear();
        order.extend(0..window.kids.len() as u32);
        let seq = &window.seq;
        order.sort_unstable_by_key(|&w| seq[w as usize]);
        let nkeys = self.plan.keys.len();
        if window.state.emit_exact(order, nkeys, out) {
            let key_of = |r: usize| &kid_key[window.kids[order[r] as usize] as usize];
            self.push_keys_and_bounds(order.len(), key_of, (start, end), due, out);
        } else {
            for &w in order.iter() {
                window.state.emit(w as usize, nkeys, out);
                let key = kid_key[window.kids[w as usize] as usize];
                self.push_key_and_bounds(&key, start, end, due, out);
            }
        }
        out.approx.pad(out.rows.len());
        self.slices = Some(sl);
    }
}
