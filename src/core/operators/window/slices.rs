//! Sliding windows by slices. A HOP window of size S and slide L is S/L consecutive slices
//! of length L, and the slice of a tuple is the latest window it belongs to, so each tuple
//! updates one (slice, key) group instead of S/L (window, key) groups. When a window
//! closes, its rows are combined from the groups of its slices, and a slice is freed once
//! its last window has closed.
//!
//! Invariant: a window's rows are those the per-window path gives: a tuple lands in its
//! slice iff one of its windows is still open, windows already emitted never read it, and
//! a window's keys come out in the order the window first saw them (the smallest
//! first-seen sequence number over its slices). Counts, integer sums, MIN and MAX combine
//! exactly; float sums add slice sums (see `Acc::combine`).

use rustc_hash::FxHashMap;

use super::super::approx::Output;
use super::WindowAggregate;
use super::close::Due;
use super::state::GroupState;
use crate::core::plan::{AggregatePlan, MAX_GROUP_KEYS};

/// No window slot yet for this key.
const NONE: u32 = u32::MAX;

type Key = [i64; MAX_GROUP_KEYS];

/// What combines slices into windows: a dense id per key of an open slice group (so a
/// window is combined by indexing arrays, not by hashing), each group's first-seen
/// sequence number, and scratch for the window being closed.
#[derive(Debug)]
pub(super) struct Slices {
    /// Key -> (dense id, open slice groups with this key).
    kids: FxHashMap<Key, (u32, u32)>,
    free_kids: Vec<u32>,
    /// Per slot: its key's dense id and its creation number (first-seen order).
    slot_kid: Vec<u32>,
    slot_seq: Vec<u64>,
    seq: u64,
    /// The window being closed: one slot per key, in `window`.
    window: GroupState,
    /// Per dense key id: its slot in `window`, or `NONE`.
    wpos: Vec<u32>,
    /// Per window slot: the key's dense id, its first-seen number, and a source slot
    /// holding the key.
    wkid: Vec<u32>,
    wseq: Vec<u64>,
    wsrc: Vec<u32>,
    /// Per window slot: the first lossy tuple's number and its slice slot.
    wlossy: Vec<(u64, u32)>,
    /// `(window slot, slice slot)` pairs to combine, the first lossy slice of each lossy
    /// window slot, and the emission order.
    pairs: Vec<(u32, u32)>,
    firsts: Vec<(u32, u32)>,
    order: Vec<u32>,
}

impl Slices {
    pub(super) fn new(plan: &AggregatePlan) -> Slices {
        Slices {
            kids: FxHashMap::default(),
            free_kids: Vec::new(),
            slot_kid: Vec::new(),
            slot_seq: Vec::new(),
            seq: 0,
            window: GroupState::new(plan),
            wpos: Vec::new(),
            wkid: Vec::new(),
            wseq: Vec::new(),
            wsrc: Vec::new(),
            wlossy: Vec::new(),
            pairs: Vec::new(),
            firsts: Vec::new(),
            order: Vec::new(),
        }
    }

    /// Records a new slice group `slot` with `key` (once per group, not per tuple).
    pub(super) fn open(&mut self, slot: u32, key: &Key) {
        let next = self.kids.len() as u32 + self.free_kids.len() as u32;
        let entry = self.kids.entry(*key).or_insert_with(|| {
            let id = self.free_kids.pop().unwrap_or(next);
            (id, 0)
        });
        entry.1 += 1;
        let kid = entry.0;
        if kid as usize >= self.wpos.len() {
            self.wpos.resize(kid as usize + 1, NONE);
        }
        let s = slot as usize;
        if s >= self.slot_kid.len() {
            self.slot_kid.resize(s + 1, 0);
            self.slot_seq.resize(s + 1, 0);
        }
        self.slot_kid[s] = kid;
        self.slot_seq[s] = self.seq;
        self.seq += 1;
    }

    /// Forgets slice group `slot` with `key`; the key's id is reused once no group has it.
    pub(super) fn release(&mut self, key: &Key) {
        if let Some(e) = self.kids.get_mut(key) {
            e.1 -= 1;
            if e.1 == 0 {
                self.free_kids.push(e.0);
                self.kids.remove(key);
            }
        }
    }
}

/// The smallest window start (a multiple of `slide`) whose window ends after `t`.
fn first_start_ending_after(t: i64, size: i64, slide: i64) -> i64 {
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
        out: &mut Output,
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
                self.emit_window(s, end, due_override, out);
                match s.checked_add(slide) {
                    Some(next) => s = next,
                    None => break,
                }
            }
            while let Some((&a, _)) = self.windows.first_key_value() {
                if a.saturating_add(size) > closed_to {
                    break;
                }
                let slots = self.windows.pop_first().expect("checked non-empty").1;
                for slot in slots {
                    self.forget(slot);
                }
            }
        }
        out.approx.pad(out.rows.len());
        // Crossing records older than every open window's end are no longer needed.
        let first_open_end = match self.windows.first_key_value() {
            Some((&a, _)) => first_start_ending_after(a, size, slide)
                .max(first_start_ending_after(self.closed, size, slide))
                .saturating_add(size),
            None => i64::MAX,
        };
        self.prune_due(first_open_end);
    }

    /// Combines the slices of window `[start, end)` and appends its rows to `out`.
    fn emit_window(&mut self, start: i64, end: i64, due_override: Option<Due>, out: &mut Output) {
        let due = self.due_for(end, due_override);
        let mut sl = self.slices.take().expect("sliced operator");
        sl.pairs.clear();
        for (_, slots) in self.windows.range(start..end) {
            for &slot in slots {
                let kid = sl.slot_kid[slot as usize];
                let seq = sl.slot_seq[slot as usize];
                let lossy = self.state.lossy_seq(slot as usize);
                let mut w = sl.wpos[kid as usize];
                if w == NONE {
                    w = sl.wkid.len() as u32;
                    sl.wpos[kid as usize] = w;
                    sl.wkid.push(kid);
                    sl.wseq.push(seq);
                    sl.wsrc.push(slot);
                    sl.wlossy.push((lossy, slot));
                    sl.window.reset(w as usize);
                } else {
                    let w = w as usize;
                    sl.wseq[w] = sl.wseq[w].min(seq);
                    sl.wlossy[w] = sl.wlossy[w].min((lossy, slot));
                }
                sl.pairs.push((w, slot));
            }
        }
        sl.firsts.clear();
        for (w, &(lossy, slot)) in sl.wlossy.iter().enumerate() {
            if lossy != u64::MAX {
                sl.firsts.push((w as u32, slot));
            }
        }
        sl.window.combine(&self.state, &sl.pairs, &sl.firsts);
        let Slices {
            window,
            wpos,
            wkid,
            wseq,
            wsrc,
            order,
            ..
        } = &mut *sl;
        order.clear();
        order.extend(0..wkid.len() as u32);
        order.sort_unstable_by_key(|&w| wseq[w as usize]);
        let nkeys = self.plan.keys.len();
        for &w in order.iter() {
            window.emit(w as usize, nkeys, out);
            let key = self.slot_keys[wsrc[w as usize] as usize].1;
            self.push_key_and_bounds(&key, start, end, due, out);
        }
        for &kid in wkid.iter() {
            wpos[kid as usize] = NONE;
        }
        wkid.clear();
        wseq.clear();
        wsrc.clear();
        sl.wlossy.clear();
        self.slices = Some(sl);
    }
}
