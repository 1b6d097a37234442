//! Latency percentiles over the last N ticks, stored sparsely: each tick keeps only the
//! `(value, count)` pairs its HDR histogram recorded, so a query costs memory in proportion
//! to the latencies it actually saw (nothing while idle), not N full histograms.
//!
//! Invariant: `ticks` holds only non-empty ticks, oldest first, none older than the window;
//! `whole` is their sum (each value once, ascending, no zero count), kept as ticks come and
//! go so the whole window's percentiles are one walk, not a merge per query per tick;
//! percentiles follow `hdrhistogram::Histogram::value_at_percentile` (the highest value
//! equivalent to the bucket that reaches the rank).

use std::collections::VecDeque;

use hdrhistogram::Histogram;

use crate::core::latency_runs::{Combine, combine, extend_from_histogram};

/// One tick's recorded latencies: `(highest equivalent value, count)`, ascending.
type Tick = Vec<(u64, u64)>;

#[derive(Debug, Default)]
pub struct LatencyWindow {
    /// Window length in ticks (at least 1).
    len: u64,
    /// Ticks pushed so far.
    now: u64,
    /// `(tick number, values)` of the non-empty ticks in the window.
    ticks: VecDeque<(u64, Tick)>,
    /// Buffers of expired ticks, reused so a busy query does not allocate per tick.
    spare: Vec<Tick>,
    /// The sum of `ticks`: each value once with its total count, ascending.
    whole: Tick,
    /// Where `whole` is rebuilt when a tick comes or goes.
    buf: Tick,
}

impl LatencyWindow {
    /// A window of the last `len` ticks.
    pub fn new(len: usize) -> LatencyWindow {
        LatencyWindow {
            len: len.max(1) as u64,
            ..LatencyWindow::default()
        }
    }

    /// Ends a tick whose latencies are `tick` (`None`: nothing recorded).
    pub fn push(&mut self, tick: Option<&Histogram<u64>>) {
        self.expire();
        if let Some(h) = tick.filter(|h| !h.is_empty()) {
            let mut v = self.spare.pop().unwrap_or_default();
            extend_from_histogram(&mut v, h);
            self.add(v);
        }
        self.end_tick();
    }

    /// Starts a tick: the ticks it pushes out of the window leave `whole`.
    fn expire(&mut self) {
        self.now += 1;
        while let Some((t, _)) = self.ticks.front()
            && t + self.len <= self.now
        {
            let (_, mut v) = self.ticks.pop_front().expect("front exists");
            combine(&mut self.buf, &self.whole, &v, Combine::Subtract);
            std::mem::swap(&mut self.whole, &mut self.buf);
            v.clear();
            self.spare.push(v);
        }
    }

    /// `push` of a tick whose latencies are `runs` (`core::latency_runs`: what its
    /// histogram holds, read without a pass over every bucket; empty: nothing recorded).
    pub fn push_runs(&mut self, runs: &[(u64, u64)]) {
        self.expire();
        if !runs.is_empty() {
            let mut v = self.spare.pop().unwrap_or_default();
            v.extend_from_slice(runs);
            self.add(v);
        }
        self.end_tick();
    }

    /// Adds the tick `v` (runs) as the newest.
    fn add(&mut self, v: Tick) {
        combine(&mut self.buf, &self.whole, &v, Combine::Add);
        std::mem::swap(&mut self.whole, &mut self.buf);
        self.ticks.push_back((self.now, v));
    }

    /// Gives an idle query's buffers back.
    fn end_tick(&mut self) {
        if self.ticks.is_empty() {
            self.spare = Vec::new();
            self.whole = Vec::new();
            self.buf = Vec::new();
        }
    }

    /// The `p`-th percentile (0..=100) of the latencies of the last `last` ticks (the whole
    /// window if `last` is larger); `None` if there were none. `scratch` is shared by the
    /// caller across queries.
    pub fn percentile(&self, p: f64, last: usize, scratch: &mut MergeScratch) -> Option<u64> {
        self.percentiles([p], last, scratch).map(|[v]| v)
    }

    /// The percentiles `ps` (each 0..=100) of the latencies of the last `last` ticks; `None`
    /// if there were none. The whole window reads the kept sum (`whole`, no merge); a
    /// shorter span merges its ticks, already ascending, pairwise (a pass per doubling).
    pub fn percentiles<const N: usize>(
        &self,
        ps: [f64; N],
        last: usize,
        scratch: &mut MergeScratch,
    ) -> Option<[u64; N]> {
        let from = self.now.saturating_sub(last as u64);
        let merged = if last as u64 >= self.len {
            &self.whole
        } else {
            scratch.merge(
                self.ticks
                    .iter()
                    .filter(|(t, _)| *t > from)
                    .map(|(_, v)| v.as_slice()),
            )
        };
        let (&(highest, _), total) = (merged.last()?, merged.iter().map(|&(_, c)| c).sum::<u64>());
        Some(ps.map(|p| {
            // As `value_at_quantile`: the rank is the fractional count rounded up.
            let rank = (((p.clamp(0.0, 100.0) / 100.0) * total as f64).ceil() as u64).max(1);
            let mut seen = 0;
            merged
                .iter()
                .find(|&&(_, c)| {
                    seen += c;
                    seen >= rank
                })
                .map_or(highest, |&(v, _)| v)
        }))
    }
}

/// Buffers for merging ascending runs of `(value, count)`, reused across queries and ticks.
#[derive(Debug, Default)]
pub struct MergeScratch {
    a: Vec<(u64, u64)>,
    b: Vec<(u64, u64)>,
    /// Run boundaries in `a` (run `i` is `a[ends[i - 1]..ends[i]]`, starting at 0).
    ends: Vec<usize>,
    next: Vec<usize>,
}

impl MergeScratch {
    /// The runs merged into one ascending slice (by value; equal values in any order).
    fn merge<'a>(&mut self, runs: impl Iterator<Item = &'a [(u64, u64)]>) -> &[(u64, u64)] {
        self.a.clear();
        self.ends.clear();
        for r in runs.filter(|r| !r.is_empty()) {
            self.a.extend_from_slice(r);
            self.ends.push(self.a.len());
        }
        while self.ends.len() > 1 {
            self.b.clear();
            self.next.clear();
            let mut start = 0;
            for pair in self.ends.chunks(2) {
                match *pair {
                    [mid, end] => merge_into(&mut self.b, &self.a[start..mid], &self.a[mid..end]),
                    [end] => self.b.extend_from_slice(&self.a[start..end]),
                    _ => unreachable!("chunks of two"),
                }
                start = pair[pair.len() - 1];
                self.next.push(self.b.len());
            }
            std::mem::swap(&mut self.a, &mut self.b);
            std::mem::swap(&mut self.ends, &mut self.next);
        }
        &self.a
    }
}

/// Appends the ascending `x` and `y` to `out`, merged.
fn merge_into(out: &mut Vec<(u64, u64)>, x: &[(u64, u64)], y: &[(u64, u64)]) {
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        if y[j].0 < x[i].0 {
            out.push(y[j]);
            j += 1;
        } else {
            out.push(x[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&x[i..]);
    out.extend_from_slice(&y[j..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::stats::latency_histogram;

    #[test]
    fn percentiles_match_a_merged_histogram_and_expire() {
        let mut w = LatencyWindow::new(3);
        let mut merged = latency_histogram();
        let mut scratch = MergeScratch::default();
        for tick in 0..5u64 {
            let mut h = latency_histogram();
            for i in 0..100 {
                h.record(1_000_000 * (tick + 1) + 37 * i).unwrap();
            }
            if tick >= 2 {
                merged.add(&h).unwrap();
            }
            w.push(Some(&h));
        }
        for p in [50.0, 90.0, 99.0, 100.0] {
            assert_eq!(
                w.percentile(p, 10, &mut scratch),
                Some(merged.value_at_percentile(p))
            );
        }
        // The last tick alone.
        let last = w.percentile(50.0, 1, &mut scratch).unwrap();
        assert!((5_000_000..5_100_000).contains(&last), "{last}");
        for _ in 0..3 {
            w.push(None);
        }
        assert_eq!(w.percentile(50.0, 10, &mut scratch), None);
        assert!(w.ticks.is_empty() && w.spare.capacity() == 0);
    }

    proptest::proptest! {
        /// The merged percentiles are those of all the ticks' values sorted together (the
        /// rule before the merge), and those of one histogram of the same ticks, for any
        /// number of ticks, windows and percentiles.
        #[test]
        fn merged_percentiles_match_a_sort(
            ticks in proptest::collection::vec(
                proptest::collection::vec(1u64..5_000_000, 0..40), 0..14),
            last in 1usize..16,
            ps in proptest::collection::vec(0.0f64..=100.0, 1..4),
        ) {
            let mut w = LatencyWindow::new(10);
            let mut scratch = MergeScratch::default();
            let mut hists = Vec::new();
            for values in &ticks {
                let mut h = latency_histogram();
                for &v in values {
                    h.record(v).unwrap();
                }
                w.push(Some(&h));
                hists.push(h);
            }
            // The reference: every pair of the ticks in range, sorted, walked to the rank.
            let from = w.now.saturating_sub(last as u64);
            let mut all: Vec<(u64, u64)> = w
                .ticks
                .iter()
                .filter(|(t, _)| *t > from)
                .flat_map(|(_, v)| v.iter().copied())
                .collect();
            all.sort_unstable_by_key(|&(v, _)| v);
            let total: u64 = all.iter().map(|&(_, c)| c).sum();
            for &p in &ps {
                let expected = (!all.is_empty()).then(|| {
                    let rank = (((p / 100.0) * total as f64).ceil() as u64).max(1);
                    let mut seen = 0;
                    all.iter()
                        .find(|&&(_, c)| {
                            seen += c;
                            seen >= rank
                        })
                        .map_or(all[all.len() - 1].0, |&(v, _)| v)
                });
                proptest::prop_assert_eq!(w.percentile(p, last, &mut scratch), expected);
            }
            // And those of one histogram of the same ticks, as the module promises.
            let mut hsum = latency_histogram();
            for h in hists.iter().rev().take(last.min(10)) {
                hsum.add(h).unwrap();
            }
            for &p in ps.iter().filter(|&&p| p > 0.0 && !hsum.is_empty()) {
                proptest::prop_assert_eq!(
                    w.percentile(p, last, &mut scratch),
                    Some(hsum.value_at_percentile(p))
                );
            }
            // The kept sum is the window's ticks added up, value by value.
            let mut sum = std::collections::BTreeMap::new();
            for (_, v) in &w.ticks {
                for &(value, c) in v {
                    *sum.entry(value).or_insert(0u64) += c;
                }
            }
            proptest::prop_assert_eq!(&w.whole, &sum.into_iter().collect::<Vec<_>>());
            let both = w.percentiles([50.0, 99.0], last, &mut scratch);
            proptest::prop_assert_eq!(
                both,
                w.percentile(50.0, last, &mut scratch).zip(w.percentile(99.0, last, &mut scratch)).map(|(a, b)| [a, b])
            );
        }
    }
}
