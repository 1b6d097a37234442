//! Two-stacks sliding aggregation over slices (the "two stacks" queue of functional
//! programming, as used for sliding-window aggregation by Tangwongsan, Hirzel and Schneider,
//! DEBS 2017): the slices of the windows being closed form a queue; the back stack keeps one
//! running aggregate of its slices, the front stack keeps, for each of its slices, the
//! aggregate of it and every newer front slice. A window is then the front's top combined
//! with the back, and evicting the oldest slice pops the front; when the front is empty the
//! back is flipped onto it. Each slice is combined about three times over its life instead
//! of once per window (`size / slide` times).
//!
//! Invariant: every table here holds, per dense key id, exactly the combination of the
//! queued slices it stands for. A tuple folded into a slice after the slice was queued
//! (a late tuple) breaks that; the owner then calls `invalidate` and the next window
//! rebuilds the queue from the slices themselves. Combination is associative (see
//! `GroupState::combine`), so the rows equal the per-window path's wherever arithmetic is
//! exact; float sums may round differently (they are grouped differently), but the same
//! input always gives the same bits, whatever its batching.

use super::state::GroupState;
use crate::core::plan::AggregatePlan;

/// No slot for this key id.
pub(super) const NONE: u32 = u32::MAX;

/// One aggregate per dense key id, held in the slots of a `GroupState`.
#[derive(Debug)]
pub(super) struct Table {
    pub(super) state: GroupState,
    /// Per key id: its slot here, or `NONE`.
    slot_of: Vec<u32>,
    /// Per slot: its key id and the smallest first-seen number of its parts.
    pub(super) kids: Vec<u32>,
    pub(super) seq: Vec<u64>,
}

impl Table {
    pub(super) fn new(plan: &AggregatePlan) -> Table {
        Table {
            state: GroupState::new(plan),
            slot_of: Vec::new(),
            kids: Vec::new(),
            seq: Vec::new(),
        }
    }

    /// Forgets every key (slots are reset when reused).
    pub(super) fn clear(&mut self) {
        for &k in &self.kids {
            self.slot_of[k as usize] = NONE;
        }
        self.kids.clear();
        self.seq.clear();
    }

    /// Folds the slots of `src` named by `parts` of `(key id, slot, first-seen number)`
    /// into this table's slots for those keys, creating them as needed; `pairs` is scratch.
    pub(super) fn absorb(
        &mut self,
        src: &GroupState,
        parts: impl Iterator<Item = (u32, u32, u64)>,
        pairs: &mut Vec<(u32, u32)>,
    ) {
        pairs.clear();
        let fresh = self.kids.len();
        for (kid, slot, seq) in parts {
            let k = kid as usize;
            if k >= self.slot_of.len() {
                self.slot_of.resize(k + 1, NONE);
            }
            let mut d = self.slot_of[k];
            if d == NONE {
                d = self.kids.len() as u32;
                self.slot_of[k] = d;
                self.kids.push(kid);
                self.seq.push(seq);
            } else {
                let q = &mut self.seq[d as usize];
                *q = (*q).min(seq);
            }
            pairs.push((d, slot));
        }
        // New slots are numbered on from the old ones: reset them in one pass.
        self.state.reset_range(fresh, self.kids.len());
        self.state.combine(src, pairs);
    }

    /// Folds every slot of `other` into this table.
    pub(super) fn absorb_table(&mut self, other: &Table, pairs: &mut Vec<(u32, u32)>) {
        let parts = (other.kids.iter().zip(&other.seq))
            .enumerate()
            .map(|(s, (&k, &q))| (k, s as u32, q));
        self.absorb(&other.state, parts, pairs);
    }
}

/// Direct mode is taken when the front's tables would hold more than this many times the
/// entries of the slices they stand for (see `Stacks::direct`).
const DIRECT_RATIO: usize = 4;

/// The queue of slices feeding the windows being closed.
#[derive(Debug)]
pub(super) struct Stacks {
    /// Front: `(slice start, aggregate of it and every newer front slice)`, oldest last.
    front: Vec<(i64, Table)>,
    /// Back: the starts of its slices, oldest first, and their running aggregate.
    back: Vec<i64>,
    back_agg: Table,
    /// Slices starting before this have been queued (or evicted).
    pub(super) queued_to: i64,
    /// A queued slice changed: rebuild before the next window.
    stale: bool,
    /// Tables not in use, and scratch.
    pool: Vec<Table>,
    pairs: Vec<(u32, u32)>,
    /// Direct mode: no aggregates are kept, `back` lists every queued slice and each window
    /// combines them itself. Two stacks pay off when keys repeat across slices; when they
    /// do not (a key per tuple, say), the front's suffix tables hold each key once per
    /// older slice, quadratic in the slices per window (1.7 GB for 200k tuples of distinct
    /// keys over four HOP queries), while combining a window from its slices costs what
    /// the front saves. The mode is chosen from the queue's own figures at each flip and
    /// window (`DIRECT_RATIO`).
    direct: bool,
    /// Slice entries (key groups) absorbed into `back_agg` since the last flip.
    entries: usize,
}

impl Stacks {
    pub(super) fn new(plan: &AggregatePlan) -> Stacks {
        Stacks {
            front: Vec::new(),
            back: Vec::new(),
            back_agg: Table::new(plan),
            queued_to: i64::MIN,
            stale: false,
            pool: Vec::new(),
            pairs: Vec::new(),
            direct: false,
            entries: 0,
        }
    }

    /// A tuple is about to be folded into the slice starting at `start`.
    #[inline]
    pub(super) fn touch(&mut self, start: i64) {
        if start < self.queued_to {
            self.stale = true;
        }
    }

    /// Empties the queue if a queued slice changed since it was queued; slices from
    /// `from` on will be queued again.
    pub(super) fn refresh(&mut self, from: i64) {
        if self.stale {
            self.stale = false;
            self.clear();
            self.queued_to = from;
        }
    }

    fn clear(&mut self) {
        for (_, mut t) in self.front.drain(..) {
            t.clear();
            self.pool.push(t);
        }
        self.back.clear();
        self.back_agg.clear();
        self.entries = 0;
    }

    fn table(&mut self, plan: &AggregatePlan) -> Table {
        self.pool.pop().unwrap_or_else(|| Table::new(plan))
    }

    /// Appends the slice starting at `start` (newer than every queued one), whose slots are
    /// `parts` of `src`.
    pub(super) fn push(
        &mut self,
        start: i64,
        src: &GroupState,
        parts: impl Iterator<Item = (u32, u32, u64)>,
    ) {
        self.back.push(start);
        if !self.direct {
            self.back_agg.absorb(src, parts, &mut self.pairs);
            self.entries += self.pairs.len();
        }
    }

    /// Drops every queued slice starting before `start`; `slice(s)` gives the parts of the
    /// live slice starting at `s` (read when the back is flipped).
    pub(super) fn evict_before<I>(
        &mut self,
        start: i64,
        plan: &AggregatePlan,
        src: &GroupState,
        slice: impl Fn(i64) -> I,
    ) where
        I: Iterator<Item = (u32, u32, u64)>,
    {
        if self.direct {
            let old = self.back.partition_point(|&s| s < start);
            self.back.drain(..old);
            return;
        }
        loop {
            if let Some((s, _)) = self.front.last() {
                if *s >= start {
                    return;
                }
                let (_, mut t) = self.front.pop().expect("checked non-empty");
                t.clear();
                self.pool.push(t);
                continue;
            }
            match self.back.first() {
                Some(&s) if s < start => {
                    // The front would hold about `slices x keys` entries: against the
                    // slices' own entries that says whether keys repeat.
                    let n = self.back.len();
                    if n > 2 && n * self.back_agg.kids.len() > DIRECT_RATIO * self.entries {
                        self.direct = true;
                        self.back_agg.clear();
                        self.entries = 0;
                        return self.evict_before(start, plan, src, slice);
                    }
                    self.flip(plan, src, &slice);
                }
                _ => return,
            }
        }
    }

    /// Moves the back onto the front, newest first, each entry aggregating its slice and
    /// the newer ones.
    fn flip<I>(&mut self, plan: &AggregatePlan, src: &GroupState, slice: &impl Fn(i64) -> I)
    where
        I: Iterator<Item = (u32, u32, u64)>,
    {
        let back = std::mem::take(&mut self.back);
        for &s in back.iter().rev() {
            let mut t = self.table(plan);
            t.absorb(src, slice(s), &mut self.pairs);
            if let Some((_, newer)) = self.front.last() {
                t.absorb_table(newer, &mut self.pairs);
            }
            self.front.push((s, t));
        }
        self.back = back;
        self.back.clear();
        self.back_agg.clear();
        self.entries = 0;
    }

    /// Key groups held in the queue's aggregate tables (the front's and the back's).
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.front.iter().map(|(_, t)| t.kids.len()).sum::<usize>() + self.back_agg.kids.len()
    }

    /// Makes `window` the combination of every queued slice; `slice(s)` gives the parts of
    /// the live slice starting at `s` (read in direct mode). No later window reads a slice
    /// starting before `next_start` (the next window's start): when the front's top is
    /// such a slice, it is evicted next anyway, so the back is folded into it and it
    /// becomes the window, instead of both being copied into `window`.
    pub(super) fn window<I>(
        &mut self,
        window: &mut Table,
        src: &GroupState,
        slice: impl Fn(i64) -> I,
        next_start: i64,
    ) where
        I: Iterator<Item = (u32, u32, u64)>,
    {
        window.clear();
        if self.direct {
            let mut entries = 0;
            for &s in &self.back {
                window.absorb(src, slice(s), &mut self.pairs);
                entries += self.pairs.len();
            }
            // Keys repeat again: back to two stacks, rebuilt from the slices (half the
            // ratio, so that a workload near the boundary does not switch every window).
            if self.back.len() * window.kids.len() * 2 <= DIRECT_RATIO * entries {
                self.direct = false;
                self.stale = true;
            }
            return;
        }
        if self.front.last().is_some_and(|&(s, _)| s < next_start) {
            let (_, mut top) = self.front.pop().expect("checked non-empty");
            top.absorb_table(&self.back_agg, &mut self.pairs);
            std::mem::swap(window, &mut top);
            self.pool.push(top);
            return;
        }
        if let Some((_, t)) = self.front.last() {
            window.absorb_table(t, &mut self.pairs);
        }
        window.absorb_table(&self.back_agg, &mut self.pairs);
    }
}
