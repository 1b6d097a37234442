//! Idle stretches of a simulated run: where nothing is queued, the clock jumps to the next
//! event (a slice that brings a tuple, a tick that is not at rest, a scripted change, the
//! end of input) instead of stepping every slice and tick. The invariant: a jump lands
//! where stepping would have been, in the same state, so results are bit for bit the same.

use super::SLICE;
use crate::core::schema::Nanos;
use crate::generator::RateProfile;

/// Farthest virtual time a search for the next tuple looks at (about 146 years).
const HORIZON: Nanos = Nanos::MAX / 2;

/// The start of the first slice, from slice start `from` on, in which a source that has
/// sent `sent` of at most `limit` tuples at `rate` has a tuple due; `Nanos::MAX` if none
/// ever is. `count_until` is non-decreasing, so this is a search.
pub(super) fn next_due_slice(rate: &RateProfile, limit: u64, sent: u64, from: Nanos) -> Nanos {
    if sent >= limit {
        return Nanos::MAX;
    }
    // Whether slice `k` (1-based: it ends at `from + k * SLICE`) brings a tuple.
    let due = |k: Nanos| rate.count_until(from + k * SLICE).min(limit) > sent;
    if due(1) {
        return from;
    }
    let (mut lo, mut hi) = (1, 2);
    loop {
        if hi > (HORIZON - from) / SLICE {
            return Nanos::MAX;
        }
        if due(hi) {
            break;
        }
        (lo, hi) = (hi, hi * 2);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if due(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    from + (hi - 1) * SLICE
}

/// The first slice start at or after `from` whose slice ends at or after `t`: where the
/// driver stands (clock at the slice's end) when it first reaches `t`.
pub(super) fn slice_reaching(t: Nanos, from: Nanos) -> Nanos {
    let end = t.saturating_add(SLICE - 1) / SLICE * SLICE;
    from.max(end - SLICE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_slice_of_the_next_tuple() {
        // One tuple every 10 s: after the first, the next is due in the slice ending at 20 s.
        let r = RateProfile::Constant(0.1);
        let s = 1_000_000_000;
        assert_eq!(next_due_slice(&r, u64::MAX, 0, 0), 10 * s - SLICE);
        assert_eq!(next_due_slice(&r, u64::MAX, 1, 10 * s), 20 * s - SLICE);
        assert_eq!(next_due_slice(&r, 1, 1, 10 * s), Nanos::MAX);
        assert_eq!(
            next_due_slice(&RateProfile::Constant(0.0), u64::MAX, 0, 0),
            Nanos::MAX
        );
        assert_eq!(next_due_slice(&RateProfile::Constant(1e6), 10, 0, 0), 0);
    }

    #[test]
    fn slices_reaching_a_time() {
        assert_eq!(slice_reaching(100 * SLICE, 0), 99 * SLICE);
        assert_eq!(slice_reaching(100 * SLICE + 1, 0), 100 * SLICE);
        assert_eq!(slice_reaching(5 * SLICE, 10 * SLICE), 10 * SLICE);
    }
}
