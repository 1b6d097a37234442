//! Value histograms for semantic shedding: one numeric field binned over the range of a
//! query's value-utility curve. Invariant: every value, NaN included, falls in exactly one
//! bin (bin 0 catches everything below the range and NaN, the last bin everything above),
//! and recording never allocates.

use crate::qos::UtilityCurve;

/// Equal-width bins over `[lo, hi)` plus an underflow bin (index 0, `(-inf, lo)` and NaN)
/// and an overflow bin (index `bins + 1`, `[hi, +inf)`). The drop point and the histogram
/// share one `Binning`, so a bin index means the same value range on both sides.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Binning {
    lo: f64,
    hi: f64,
    width: f64,
    /// Inner bins, at least 1.
    bins: usize,
}

impl Binning {
    /// `bins` (at least 1) equal-width bins over `[lo, hi)`. A range that is empty or not
    /// finite becomes `[lo - 0.5, lo + 0.5)` (or `[-0.5, 0.5)` when `lo` is not finite).
    pub fn new(lo: f64, hi: f64, bins: usize) -> Binning {
        let bins = bins.max(1);
        let (lo, hi) = if lo.is_finite() && hi.is_finite() && hi > lo {
            (lo, hi)
        } else {
            let c = if lo.is_finite() { lo } else { 0.0 };
            (c - 0.5, c + 0.5)
        };
        Binning {
            lo,
            hi,
            width: (hi - lo) / bins as f64,
            bins,
        }
    }

    /// `bins` bins between the curve's first and last x. A one-point curve has the same
    /// utility everywhere, so its range is a unit interval around the point: binning only
    /// matters where utility changes.
    pub fn for_curve(curve: &UtilityCurve, bins: usize) -> Binning {
        match (curve.points.first(), curve.points.last()) {
            (Some(&(lo, _)), Some(&(hi, _))) => Binning::new(lo, hi, bins),
            _ => Binning::new(0.0, 0.0, bins),
        }
    }

    /// Lower end of the inner range.
    pub fn lo(&self) -> f64 {
        self.lo
    }

    /// Upper end of the inner range (exclusive).
    pub fn hi(&self) -> f64 {
        self.hi
    }

    pub fn width(&self) -> f64 {
        self.width
    }

    /// Inner bins (without underflow and overflow).
    pub fn bins(&self) -> usize {
        self.bins
    }

    /// All bins: `bins + 2`.
    pub fn len(&self) -> usize {
        self.bins + 2
    }

    /// Never true: there is always an underflow and an overflow bin.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The bin of `v`, by arithmetic (O(1)). Values on an inner edge may land one bin off
    /// through rounding; the range ends are exact.
    #[inline]
    pub fn bin_of(&self, v: f64) -> usize {
        // NaN compares false with everything, so it lands here too.
        if v.is_nan() || v < self.lo {
            return 0;
        }
        if v >= self.hi {
            return self.bins + 1;
        }
        1 + (((v - self.lo) / self.width) as usize).min(self.bins - 1)
    }

    /// The value range of bin `i` as `[lo, hi)`: `-inf` / `+inf` for the outer bins.
    /// Indices past the overflow bin read as the overflow bin.
    pub fn bounds(&self, i: usize) -> (f64, f64) {
        if i == 0 {
            (f64::NEG_INFINITY, self.lo)
        } else if i > self.bins {
            (self.hi, f64::INFINITY)
        } else {
            let a = self.lo + (i - 1) as f64 * self.width;
            let b = if i == self.bins {
                self.hi
            } else {
                self.lo + i as f64 * self.width
            };
            (a, b)
        }
    }
}

/// A decaying histogram of one field's values, binned on a query's value-utility curve,
/// with each bin's utility. The runtime records every tuple offered at the stream (before
/// any drop point, so dropped ranges keep their frequencies) and calls `decay` once per tick.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueHistogram {
    binning: Binning,
    /// Utility of each bin: the curve at the bin centre; the outer bins take the curve's
    /// flat ends.
    utility: Vec<f64>,
    /// Decayed counts, which is why they are `f64`.
    counts: Vec<f64>,
}

impl ValueHistogram {
    /// `bins` inner bins over the curve's x range (see `Binning::for_curve`).
    pub fn new(curve: &UtilityCurve, bins: usize) -> ValueHistogram {
        let binning = Binning::for_curve(curve, bins);
        let utility = (0..binning.len())
            .map(|i| {
                let x = if i == 0 {
                    binning.lo
                } else if i > binning.bins {
                    binning.hi
                } else {
                    let (a, b) = binning.bounds(i);
                    0.5 * (a + b)
                };
                let u = curve.at(x);
                if u.is_finite() {
                    u.clamp(0.0, 1.0)
                } else {
                    0.0
                }
            })
            .collect();
        ValueHistogram {
            binning,
            utility,
            counts: vec![0.0; binning.len()],
        }
    }

    pub fn binning(&self) -> Binning {
        self.binning
    }

    /// Number of bins, underflow and overflow included.
    pub fn bin_count(&self) -> usize {
        self.counts.len()
    }

    #[inline]
    pub fn bin_of(&self, v: f64) -> usize {
        self.binning.bin_of(v)
    }

    /// Counts one value. Never allocates.
    #[inline]
    pub fn record(&mut self, v: f64) {
        let i = self.binning.bin_of(v);
        self.counts[i] += 1.0;
    }

    /// Counts one value whose bin is already known; an index out of range is ignored.
    #[inline]
    pub fn record_bin(&mut self, i: usize) {
        debug_assert!(i < self.counts.len(), "bin {i} out of range");
        if let Some(c) = self.counts.get_mut(i) {
            *c += 1.0;
        }
    }

    /// Adds `n` observations to bin `i` (the runtime folds an observer's per-tick counts).
    pub fn add_to_bin(&mut self, i: usize, n: f64) {
        if let Some(c) = self.counts.get_mut(i)
            && n.is_finite()
            && n > 0.0
        {
            *c += n;
        }
    }

    /// Exponential forgetting, once per tick: every count is multiplied by `factor`
    /// (clamped to `[0, 1]`; NaN means 1, keep everything).
    pub fn decay(&mut self, factor: f64) {
        let f = if factor.is_nan() {
            1.0
        } else {
            factor.clamp(0.0, 1.0)
        };
        for c in &mut self.counts {
            *c *= f;
        }
    }

    /// Forgets every count.
    pub fn clear(&mut self) {
        self.counts.fill(0.0);
    }

    /// The (decayed) counts per bin.
    pub fn counts(&self) -> &[f64] {
        &self.counts
    }

    /// Sum of the counts.
    pub fn total(&self) -> f64 {
        self.counts.iter().sum()
    }

    /// Relative frequency of each bin: sums to 1, or all 0 when nothing was counted.
    pub fn frequencies(&self) -> Vec<f64> {
        let total = self.total();
        if total > 0.0 && total.is_finite() {
            self.counts.iter().map(|c| c / total).collect()
        } else {
            vec![0.0; self.counts.len()]
        }
    }

    /// Utility of bin `i` in `[0, 1]`; 0 for an index out of range.
    pub fn bin_utility(&self, i: usize) -> f64 {
        self.utility.get(i).copied().unwrap_or(0.0)
    }

    /// Utility of every bin.
    pub fn utilities(&self) -> &[f64] {
        &self.utility
    }

    /// Value range of bin `i` (see `Binning::bounds`).
    pub fn bin_bounds(&self, i: usize) -> (f64, f64) {
        self.binning.bounds(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(points: &[(f64, f64)]) -> UtilityCurve {
        UtilityCurve {
            points: points.to_vec(),
        }
    }

    #[test]
    fn values_fall_in_one_bin_with_outer_bins_for_the_rest() {
        let h = ValueHistogram::new(&curve(&[(25.0, 0.1), (35.0, 1.0)]), 10);
        assert_eq!(h.bin_count(), 12);
        assert_eq!(h.bin_of(f64::NAN), 0);
        assert_eq!(h.bin_of(f64::NEG_INFINITY), 0);
        assert_eq!(h.bin_of(24.999), 0);
        assert_eq!(h.bin_of(25.0), 1);
        assert_eq!(h.bin_of(25.999), 1);
        assert_eq!(h.bin_of(26.0), 2);
        assert_eq!(h.bin_of(34.999), 10);
        assert_eq!(h.bin_of(35.0), 11);
        assert_eq!(h.bin_of(f64::INFINITY), 11);
        assert_eq!(h.bin_bounds(0), (f64::NEG_INFINITY, 25.0));
        assert_eq!(h.bin_bounds(1), (25.0, 26.0));
        assert_eq!(h.bin_bounds(10), (34.0, 35.0));
        assert_eq!(h.bin_bounds(11), (35.0, f64::INFINITY));
        for v in [25.0, 27.5, 30.1, 34.2] {
            let (a, b) = h.bin_bounds(h.bin_of(v));
            assert!(a <= v && v < b);
        }
    }

    #[test]
    fn utility_is_the_curve_at_bin_centres_with_flat_ends() {
        let h = ValueHistogram::new(&curve(&[(0.0, 0.0), (10.0, 1.0)]), 5);
        assert_eq!(h.bin_utility(0), 0.0);
        assert!((h.bin_utility(1) - 0.1).abs() < 1e-12);
        assert!((h.bin_utility(3) - 0.5).abs() < 1e-12);
        assert!((h.bin_utility(5) - 0.9).abs() < 1e-12);
        assert_eq!(h.bin_utility(6), 1.0);
        assert_eq!(h.bin_utility(99), 0.0);
    }

    #[test]
    fn a_one_point_curve_uses_a_unit_range_around_it() {
        let h = ValueHistogram::new(&curve(&[(5.0, 0.5)]), 4);
        assert_eq!(h.binning().lo(), 4.5);
        assert_eq!(h.binning().hi(), 5.5);
        assert!(h.utilities().iter().all(|&u| u == 0.5));
    }

    #[test]
    fn frequencies_sum_to_one_and_decay_forgets() {
        let mut h = ValueHistogram::new(&curve(&[(0.0, 0.0), (10.0, 1.0)]), 5);
        assert!(h.frequencies().iter().all(|&f| f == 0.0));
        h.record(1.0);
        h.record(1.5);
        h.record(9.0);
        h.record_bin(0);
        let f = h.frequencies();
        assert!((f.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(f[1], 0.5);
        h.decay(0.5);
        assert_eq!(h.total(), 2.0);
        assert_eq!(h.frequencies(), f);
        h.clear();
        assert_eq!(h.total(), 0.0);
        h.add_to_bin(2, 3.0);
        h.add_to_bin(2, f64::NAN);
        h.add_to_bin(2, -1.0);
        h.add_to_bin(99, 1.0);
        assert_eq!(h.counts()[2], 3.0);
        assert_eq!(h.total(), 3.0);
    }
}
