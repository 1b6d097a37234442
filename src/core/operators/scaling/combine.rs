//! Merging the Horvitz-Thompson sums of slots: how a sliding window's scaling state is
//! made from the slices it covers. Invariant: a merged slot is lossy iff one of its sources
//! is, and each of its sums is the sum of the sources' (AVG's shifted sums re-centred on
//! the merged slot's shift), so the estimate and interval are those of the union of the
//! sources' lossy tuples.

use super::Scaling;

impl Scaling {
    /// Makes slot `d` lossy and centred on the shift of lossy slot `s` of `src`: the part
    /// holding a window's first lossy tuple gives the window the shift the per-window path
    /// would have taken. Sums `d` already holds are re-centred on the new shift.
    pub fn adopt_shift(&mut self, d: usize, src: &Scaling, s: usize) {
        if !self.lossy[d] {
            self.start(d);
        }
        let c = self.var[d];
        for (a, b) in self.args.iter_mut().zip(&src.args) {
            let (old, new) = (a.shift[d], b.shift[s]);
            // sum c (v - new) = sum c (v - old) + (old - new) sum c, and likewise squared.
            let delta = old - new;
            if !old.is_nan() && delta != 0.0 {
                a.d2[d] += 2.0 * delta * a.d1[d] + delta * delta * c;
                a.d1[d] += delta * c;
            }
            a.shift[d] = new;
        }
    }

    /// Folds slot `s` of `src` (state for the same calls) into slot `d` for every `(d, s)`
    /// pair; sources that saw only exact input cost one flag test.
    pub fn combine(&mut self, src: &Scaling, pairs: &[(u32, u32)]) {
        for &(d, s) in pairs {
            let (d, s) = (d as usize, s as usize);
            if !src.lossy[s] {
                continue;
            }
            if !self.lossy[d] {
                self.start(d);
            }
            self.excess[d] += src.excess[s];
            self.var[d] += src.var[s];
            // The source's `sum c` re-centres its shifted sums.
            let c = src.var[s];
            for (a, b) in self.args.iter_mut().zip(&src.args) {
                a.excess[d] += b.excess[s];
                a.sq[d] += b.sq[s];
                if a.shift[d].is_nan() {
                    a.shift[d] = b.shift[s];
                }
                // sum c (v - A) = sum c (v - B) + (B - A) sum c, and likewise squared.
                let delta = b.shift[s] - a.shift[d];
                if delta == 0.0 {
                    a.d1[d] += b.d1[s];
                    a.d2[d] += b.d2[s];
                } else {
                    a.d1[d] += b.d1[s] + delta * c;
                    a.d2[d] += b.d2[s] + 2.0 * delta * b.d1[s] + delta * delta * c;
                }
            }
        }
    }
}
