//! The batch-at-once placement: when every row of a batch falls in one slice (tumbling: one
//! window) that is still open, and no row moves the watermark past a window end, the rows
//! are placed without the per-row watermark and window work of the general loop. Invariant:
//! it either places every row exactly as the general loop would (same slots, same order,
//! same watermark, nothing late, nothing due) or changes nothing and says so.

use super::{WindowAggregate, packed_key};
use crate::core::plan::MAX_GROUP_KEYS;
use crate::core::rows::Rows;
use crate::core::schema::Nanos;

impl WindowAggregate {
    /// Places every row `rows` sees (times `times`, watermarks `prefix` when a filter removed
    /// rows) if they all belong to one open slice and none makes a window due: appends their
    /// `(slot, row)` pairs to `pairs` and moves the watermark. Returns false, having changed
    /// nothing, otherwise. For tumbling windows and sliced sliding windows only.
    pub(super) fn place_in_one_slice(
        &mut self,
        rows: Rows<'_>,
        times: &[i64],
        prefix: Option<&[(i64, Nanos)]>,
        pairs: &mut Vec<(u32, u32)>,
    ) -> bool {
        let (size, slide, lateness) = (
            self.plan.window.size,
            self.plan.window.slide,
            self.plan.lateness,
        );
        debug_assert!(self.slices.is_some() || size == slide);
        let (lo, hi) = match rows.sel {
            None => min_max(times[..rows.batch.len()].iter().copied()),
            Some(sel) => min_max(sel.iter().map(|&i| times[i as usize])),
        };
        let Some(start) = lo.div_euclid(slide).checked_mul(slide) else {
            return false;
        };
        if hi >= start.saturating_add(slide) || start < self.hot.0 {
            return false;
        }
        // The watermark each row sees is at most the batch's largest. A prefix (a filtered
        // or routed batch's) is a running maximum that includes the row itself: its largest
        // is its last, read without a pass over the rows' entries.
        debug_assert!(prefix.is_none_or(|p| p.windows(2).all(|w| w[0].0 <= w[1].0)));
        let most = prefix.and_then(|p| p.last()).map_or(hi, |e| e.0.max(hi));
        let watermark = self.watermark.max(most);
        let closed_to = watermark.saturating_sub(lateness);
        // A window would become due (general loop), or the slice's last window has closed
        // for some row (late).
        if closed_to >= self.next_due || start.saturating_add(size) <= closed_to.max(self.closed) {
            return false;
        }
        if start > self.hot.0 {
            self.hot.0 = start;
            self.hot.1.clear();
            if let Some(sl) = self.slices.as_deref_mut() {
                sl.clear_hot();
            }
        }
        let sliced = match self.slices.as_deref_mut() {
            Some(sl) => {
                sl.touch(start);
                true
            }
            None => false,
        };
        let encoded = std::mem::take(&mut self.encoded);
        if let [one] = encoded.as_slice() {
            if sliced {
                place_one(pairs, rows.sel, one, |k| self.sliced_one(start, k));
            } else {
                place_one(pairs, rows.sel, one, |k| self.one_key_slot(start, k));
            }
        } else {
            pairs.reserve(rows.len());
            for pos in 0..rows.len() {
                let key = packed_key(&encoded, pos);
                pairs.push((self.hot_slot_for(start, key), rows.row(pos) as u32));
            }
        }
        self.encoded = encoded;
        self.watermark = watermark;
        true
    }

    /// `hot_slot_for` of a one-column key in the hot slice `start`.
    #[inline]
    fn one_key_slot(&mut self, start: i64, k: i64) -> u32 {
        if let Some(s) = self.hot.1.get_one(k) {
            return s;
        }
        let mut key = [0i64; MAX_GROUP_KEYS];
        key[0] = k;
        self.new_hot_key(start, key)
    }
}

/// Appends `(slot(key), row)` for every row seen of a one-column key `one` (`sel`: the
/// rows seen, all when `None`). Extended from exact-size iterators: no capacity check per
/// pair.
#[inline]
fn place_one(
    pairs: &mut Vec<(u32, u32)>,
    sel: Option<&[u32]>,
    one: &[i64],
    mut slot: impl FnMut(i64) -> u32,
) {
    match sel {
        None => pairs.extend((one.iter().enumerate()).map(|(row, &k)| (slot(k), row as u32))),
        Some(sel) => pairs.extend((sel.iter().zip(one)).map(|(&row, &k)| (slot(k), row))),
    }
}

/// The smallest and largest of `times` (not empty).
#[inline]
fn min_max(times: impl Iterator<Item = i64>) -> (i64, i64) {
    times.fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)))
}
