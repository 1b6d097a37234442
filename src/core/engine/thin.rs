//! Shedding what is already queued (`Engine::thin_queue`): the inner guard's lever for a
//! backlog that built before any drop point could act (a surge's first tens of
//! milliseconds, a pause of the engine thread). Cutting new arrivals leaves the queued
//! tuples to wait behind each other for as long as the queue holds; a random cut of the
//! queue itself shortens every queued tuple's wait at once.
//!
//! Invariant: a cut is a random drop at the query's drop point, accounted as one: each
//! removed tuple counts `shed-random` in the query's ledger (queued falls by as much), the
//! item's keep is multiplied by the cut's keep (Horvitz-Thompson scaling stays unbiased),
//! and a windowed pipeline learns which rows it lost, as it does at ingest. Whole-window
//! and whole-key rules are never cut (their kept groups promise to be exact).

use super::Engine;
use crate::core::drop::{DropReason, DropRule};
use crate::core::operators::LossKind;
use crate::core::queue::Queued;

impl Engine {
    /// Keeps each tuple queued for query `q` with probability `keep` and drops the rest as
    /// `shed-random` at the query's drop point. Returns the tuples dropped (0 when `keep`
    /// is 1 or more, or the query's rule keeps whole windows or keys).
    pub fn thin_queue(&mut self, q: usize, keep: f64) -> u64 {
        let keep = keep.clamp(0.0, 1.0);
        let query = &mut self.queries[q];
        if keep >= 1.0
            || query.queue.is_empty()
            || matches!(
                query.drop.rule(),
                DropRule::Window(_) | DropRule::Keys { .. }
            )
        {
            return 0;
        }
        let kind = if keep > 0.0 {
            LossKind::Scaled
        } else {
            LossKind::Unscaled
        };
        let windowed = query.pipeline.is_windowed();
        let (positions, kept) = (&mut self.sel, &mut self.stream_sel);
        let (drop, pipeline) = (&mut query.drop, &mut query.pipeline);
        let removed = query.queue.thin(&mut self.held, |item| {
            drop.sample(keep, item.len(), positions);
            if positions.len() == item.len() {
                return;
            }
            if windowed {
                kept_rows(item, positions, kept);
                pipeline.note_lost(&item.batch, kept, kind);
            }
            // The positions become rows of the batch, in place.
            if let Some(sel) = &item.sel {
                for p in positions.iter_mut() {
                    *p = sel[*p as usize];
                }
            }
            let sel = item.sel.get_or_insert_with(Vec::new);
            sel.clear();
            sel.extend_from_slice(positions);
            item.keep *= keep;
        });
        query.stats.dropped[DropReason::ShedRandom.index()] += removed as u64;
        removed as u64
    }
}

/// The rows of `item.batch` not lost by keeping `positions` (ascending positions among the
/// item's rows): the kept ones, and the rows the item never held (not this query's, so
/// not lost to it), as `Pipeline::note_lost` reads them.
fn kept_rows(item: &Queued, positions: &[u32], out: &mut Vec<u32>) {
    out.clear();
    match &item.sel {
        None => out.extend_from_slice(positions),
        Some(sel) => {
            let mut next_sel = sel.iter().copied().enumerate().peekable();
            let mut next_kept = positions.iter().copied().peekable();
            for row in 0..item.batch.len() as u32 {
                match next_sel.next_if(|&(_, s)| s == row) {
                    // One of the item's rows: kept when its position was drawn.
                    Some((pos, _)) => {
                        if next_kept.next_if(|&p| p as usize == pos).is_some() {
                            out.push(row);
                        }
                    }
                    None => out.push(row),
                }
            }
        }
    }
}
