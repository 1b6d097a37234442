//! Latency percentiles over the last N ticks, stored sparsely: each tick keeps only the
//! `(value, count)` pairs its HDR histogram recorded, so a query costs memory in proportion
//! to the latencies it actually saw (nothing while idle), not N full histograms.
//!
//! Invariant: `ticks` holds only non-empty ticks, oldest first, none older than the window;
//! percentiles follow `hdrhistogram::Histogram::value_at_percentile` (the highest value
//! equivalent to the bucket that reaches the rank).

use std::collections::VecDeque;

use hdrhistogram::Histogram;

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
        self.now += 1;
        while let Some((t, _)) = self.ticks.front()
            && t + self.len <= self.now
        {
            let (_, mut v) = self.ticks.pop_front().expect("front exists");
            v.clear();
            self.spare.push(v);
        }
        if let Some(h) = tick.filter(|h| !h.is_empty()) {
            let mut v = self.spare.pop().unwrap_or_default();
            v.extend(h.iter_recorded().map(|x| {
                (
                    h.highest_equivalent(x.value_iterated_to()),
                    x.count_at_value(),
                )
            }));
            self.ticks.push_back((self.now, v));
        }
        if self.ticks.is_empty() {
            // An idle query gives its buffers back.
            self.spare = Vec::new();
        }
    }

    /// The `p`-th percentile (0..=100) of the latencies of the last `last` ticks (the whole
    /// window if `last` is larger); `None` if there were none. `scratch` is shared by the
    /// caller across queries.
    pub fn percentile(&self, p: f64, last: usize, scratch: &mut Vec<(u64, u64)>) -> Option<u64> {
        scratch.clear();
        let from = self.now.saturating_sub(last as u64);
        for (_, v) in self.ticks.iter().filter(|(t, _)| *t > from) {
            scratch.extend_from_slice(v);
        }
        if scratch.is_empty() {
            return None;
        }
        scratch.sort_unstable_by_key(|&(v, _)| v);
        let total: u64 = scratch.iter().map(|&(_, c)| c).sum();
        let rank = (((p.clamp(0.0, 100.0) / 100.0) * total as f64 + 0.5) as u64).max(1);
        let mut seen = 0;
        for &(v, c) in scratch.iter() {
            seen += c;
            if seen >= rank {
                return Some(v);
            }
        }
        scratch.last().map(|&(v, _)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::stats::latency_histogram;

    #[test]
    fn percentiles_match_a_merged_histogram_and_expire() {
        let mut w = LatencyWindow::new(3);
        let mut merged = latency_histogram();
        let mut scratch = Vec::new();
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
}
