//! Latency percentiles over the last N ticks: a ring of per-tick HDR histograms plus their
//! running sum. Invariant: the sum always equals the merge of the ring, because every value
//! is recorded into both and the expiring tick is subtracted before it is cleared.

use hdrhistogram::Histogram;

/// Lowest discernible value: 1 µs, the same bounds as the engine's latency histograms.
const LOW: u64 = 1_000;
/// Highest trackable value: one hour in nanoseconds.
const HIGH: u64 = 3_600_000_000_000;
const SIGFIG: u8 = 3;

fn empty() -> Histogram<u64> {
    Histogram::new_with_bounds(LOW, HIGH, SIGFIG).expect("static bounds are valid")
}

/// Percentiles of the values recorded during the last `ticks` ticks (the current one
/// included). Memory is about 200 KB per tick slot, so keep windows short (a few ticks).
///
/// Use per control tick: `record` during the tick, read `value_at_percentile`, then
/// `rotate`.
#[derive(Clone, Debug)]
pub struct SlidingHistogram {
    /// One histogram per tick; `ring[current]` receives new values.
    ring: Vec<Histogram<u64>>,
    current: usize,
    /// The merge of every histogram in `ring`, kept incrementally so a percentile costs one
    /// histogram scan instead of a merge of N.
    sum: Histogram<u64>,
}

impl SlidingHistogram {
    /// A window of `ticks` ticks (at least 1).
    pub fn new(ticks: usize) -> SlidingHistogram {
        SlidingHistogram {
            ring: (0..ticks.max(1)).map(|_| empty()).collect(),
            current: 0,
            sum: empty(),
        }
    }

    /// Records one value in nanoseconds; values outside 1 µs .. 1 h are clamped to it.
    /// Never allocates.
    pub fn record(&mut self, v: u64) {
        self.ring[self.current].saturating_record(v);
        self.sum.saturating_record(v);
    }

    /// Starts a new tick: the oldest tick leaves the window and the new one is empty.
    pub fn rotate(&mut self) {
        self.current = (self.current + 1) % self.ring.len();
        let expiring = &mut self.ring[self.current];
        if self.sum.subtract(&*expiring).is_err() {
            // Only reachable if a count saturated; rebuild the sum from the ring instead.
            expiring.reset();
            self.sum.reset();
            for h in &self.ring {
                // Same bounds on both sides, so adding cannot fail.
                let _ = self.sum.add(h);
            }
            return;
        }
        expiring.reset();
    }

    /// The value at percentile `p` (clamped to `0..=100`; NaN reads as 100) over the window;
    /// 0 when the window is empty.
    pub fn value_at_percentile(&self, p: f64) -> u64 {
        let p = if p.is_nan() {
            100.0
        } else {
            p.clamp(0.0, 100.0)
        };
        self.sum.value_at_percentile(p)
    }

    /// Number of values in the window.
    pub fn len(&self) -> u64 {
        self.sum.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sum.is_empty()
    }

    /// How many slots the window spans.
    pub fn ticks(&self) -> usize {
        self.ring.len()
    }

    /// Adds a whole histogram of values to the current slot (a tick's worth recorded
    /// elsewhere); values outside the bounds are clamped as `record` does.
    pub fn add(&mut self, h: &Histogram<u64>) {
        let current = self.current;
        for target in [&mut self.ring[current], &mut self.sum] {
            if target.add(h).is_err() {
                // Other bounds: record value by value, clamped.
                for v in h.iter_recorded() {
                    let x = v.value_iterated_to().clamp(LOW, HIGH);
                    let _ = target.record_n(x, v.count_at_value());
                }
            }
        }
    }

    /// The current slot (what was recorded since the last `rotate`).
    pub fn current(&self) -> &Histogram<u64> {
        &self.ring[self.current]
    }

    /// Merges the newest `slots` slots (the current one included) into `into`.
    pub fn recent(&self, slots: usize, into: &mut Histogram<u64>) {
        into.reset();
        let n = self.ring.len();
        for k in 0..slots.min(n) {
            let _ = into.add(&self.ring[(self.current + n - k) % n]);
        }
    }

    /// The merged histogram of the window, for other statistics (max, mean).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PERCENTILES: [f64; 7] = [0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 100.0];

    /// The window recomputed from the values of its last `ticks` ticks.
    fn recomputed(ticks: &[Vec<u64>]) -> Histogram<u64> {
        let mut h = empty();
        for v in ticks.iter().flatten() {
            h.saturating_record(*v);
        }
        h
    }

    #[test]
    fn old_ticks_leave_the_window() {
        let mut s = SlidingHistogram::new(2);
        s.record(5_000_000);
        s.rotate();
        s.record(1_000_000);
        assert_eq!(s.len(), 2);
        assert!(s.value_at_percentile(100.0) >= 5_000_000);
        s.rotate();
        assert_eq!(s.len(), 1);
        assert!(s.value_at_percentile(100.0) < 1_010_000);
        s.rotate();
        assert!(s.is_empty());
        assert_eq!(s.value_at_percentile(99.0), 0);
    }

    proptest! {
        // Each check scans ~24k buckets in a debug build; 64 cases cover the ring logic.
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn running_sum_matches_a_recomputation(
            window in 1usize..5,
            ops in prop::collection::vec(prop_oneof![
                3 => (0u64..10_000_000_000).prop_map(Some),
                1 => Just(None),
            ], 0..120),
        ) {
            let mut s = SlidingHistogram::new(window);
            // The model: values per tick, newest last.
            let mut ticks: Vec<Vec<u64>> = vec![Vec::new()];
            let n = ops.len();
            for (k, op) in ops.into_iter().enumerate() {
                match op {
                    Some(v) => {
                        s.record(v);
                        ticks.last_mut().unwrap().push(v);
                    }
                    None => {
                        s.rotate();
                        ticks.push(Vec::new());
                        if ticks.len() > window {
                            ticks.remove(0);
                        }
                    }
                }
                // Check at every tick boundary and at the end.
                if op.is_none() || k + 1 == n {
                    let want = recomputed(&ticks);
                    prop_assert_eq!(s.len(), want.len());
                    for p in PERCENTILES {
                        prop_assert_eq!(s.value_at_percentile(p), want.value_at_percentile(p));
                    }
                }
            }
        }
    }
}
