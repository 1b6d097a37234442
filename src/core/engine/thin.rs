//! Thinning what is already queued for a query. A plan's keep applies to what arrives
//! next; a backlog admitted under a higher keep (the first ticks of a surge, before any
//! plan) would still be processed whole, every tuple of it ahead of the new ones. Thinning
//! brings it to the plan's keep at once: each queued tuple stays with probability the new
//! keep over the keep it was admitted at, so a kept tuple has survived with the new keep
//! in all, as if the plan had been in force when it arrived.
//!
//! Invariant: a thinned tuple is counted once, as shed at random by the query's drop point
//! (the ledger balances: offered = processed + queued + dropped); a kept item's
//! Horvitz-Thompson keep is the product of every keep its tuples survived; the windows
//! that lost tuples are told (`Pipeline::note_lost_rows`). Items split by shard (routed
//! time) or narrowed by shared evaluation are left whole, and so are lossless queries.

use super::{Engine, SPARE_SELS};
use crate::core::drop::DropReason;
use crate::core::operators::LossKind;

impl Engine {
    /// Brings query `q`'s queued tuples to keep `goal` (the share of the offered input the
    /// plan now keeps, stream and query drop points together): an item admitted at keep
    /// `k` keeps each of its tuples with probability `goal / k`, when that is at most
    /// `least_cut` (a small cut is not worth a pass over the rows). Returns the tuples
    /// thinned away. Costs a draw per kept tuple below a keep of 0.1 (one per tuple
    /// above), and nothing per tuple for an item dropped whole (`goal` 0).
    pub fn thin_queued(&mut self, q: usize, goal: f64, least_cut: f64) -> u64 {
        let Some(st) = self.queries.get_mut(q) else {
            return 0;
        };
        if st.def.lossless || st.removed || st.queue.is_empty() {
            return 0;
        }
        let goal = goal.clamp(0.0, 1.0);
        let (drop, pipeline) = (&mut st.drop, &mut st.pipeline);
        let (scratch, spare) = (&mut self.sel, &mut self.spare_sels);
        let windowed = pipeline.is_windowed();
        let (gone, left) = st.queue.thin(&mut self.held, |item| {
            if item.time.is_some() || item.prefiltered || item.keep <= 0.0 {
                return;
            }
            let f = goal / item.keep;
            if f > least_cut {
                return;
            }
            let n = item.len();
            // Positions kept among the item's rows.
            drop.sample(f, n, scratch);
            if scratch.len() == n {
                return;
            }
            if windowed {
                if let Some(t) = pipeline.lost_time(item.rows()) {
                    item.advance.push(t, |a, b| pipeline.crosses(a, b));
                }
                let kind = if f > 0.0 && item.value_keep >= 1.0 {
                    LossKind::Scaled
                } else {
                    LossKind::Unscaled
                };
                match (&item.sel, scratch.is_empty()) {
                    // A whole batch dropped: counted per slice, not per row.
                    (None, true) => pipeline.note_lost(&item.batch, &[], kind),
                    (Some(rows), true) => {
                        pipeline.note_lost_rows(&item.batch, rows.iter().copied(), kind)
                    }
                    (rows, false) => {
                        let rows = rows.as_deref();
                        let kept: &[u32] = scratch;
                        let lost = Lost {
                            n: n as u32,
                            next: 0,
                            kept,
                            rows,
                        };
                        pipeline.note_lost_rows(&item.batch, lost, kind);
                    }
                }
            }
            let mut sel = spare.pop().unwrap_or_default();
            sel.clear();
            match &item.sel {
                Some(s) => sel.extend(scratch.iter().map(|&p| s[p as usize])),
                None => sel.extend_from_slice(scratch),
            }
            if let Some(old) = item.sel.replace(sel)
                && spare.len() < SPARE_SELS
            {
                spare.push(old);
            }
            item.keep *= f;
        });
        // Every queued item thinned away: the time they told moves the watermark now.
        if !left.is_none() {
            st.settle_pending();
            st.pipeline.advance_lost(&left, &mut st.out);
            self.unemitted.insert(q);
            if st.pipeline.closing_due().is_some() {
                self.queued.insert(q);
            }
        }
        st.stats.dropped[DropReason::ShedRandom.index()] += gone as u64;
        gone as u64
    }
}

/// The rows of a thinned item that were not kept: positions `0..n` of the item's rows
/// missing from `kept` (ascending), as rows of its batch (through `rows`, its selection).
#[derive(Clone)]
struct Lost<'a> {
    n: u32,
    next: u32,
    kept: &'a [u32],
    rows: Option<&'a [u32]>,
}

impl Iterator for Lost<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        while self.next < self.n {
            let p = self.next;
            self.next += 1;
            if self.kept.first() == Some(&p) {
                self.kept = &self.kept[1..];
                continue;
            }
            return Some(self.rows.map_or(p, |s| s[p as usize]));
        }
        None
    }
}
