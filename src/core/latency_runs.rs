//! Latencies as sparse runs: `(bucket value, count)` pairs, ascending, each bucket once, in
//! the buckets of `stats::latency_histogram`. A tick records a few runs per query (one per
//! batch of results), while a histogram's buckets number thousands: reading a tick's
//! latencies or a run's quantiles from the runs costs what was recorded, not a pass over
//! every bucket (with 1000 standing queries those passes took a sixth of the engine
//! thread).
//!
//! Invariant: a `Runs` value holds what the histogram it shadows holds: the same non-zero
//! buckets (by highest equivalent value) with the same counts, so a quantile read from the
//! runs equals `Histogram::value_at_quantile`.

use hdrhistogram::Histogram;

/// `(highest equivalent value of a bucket, count)`, ascending, each bucket once.
pub type Runs = Vec<(u64, u64)>;

/// Turns raw `(value, count)` records into runs in place: each value to the bucket `h` (a
/// histogram of the same bounds and precision) records it in, sorted, equal buckets summed.
/// Values must lie within `h`'s bounds (`stats` clamps latencies to them before recording:
/// a histogram clamps an out-of-range value by rules it does not expose).
pub fn bucketize(raw: &mut Runs, h: &Histogram<u64>) {
    for r in raw.iter_mut() {
        r.0 = h.highest_equivalent(r.0);
    }
    raw.sort_unstable_by_key(|r| r.0);
    raw.dedup_by(|next, kept| {
        let same = next.0 == kept.0;
        if same {
            kept.1 += next.1;
        }
        same
    });
}

/// Appends what `h` holds to `out` as runs (each recorded bucket's highest equivalent
/// value and count, ascending).
pub fn extend_from_histogram(out: &mut Runs, h: &Histogram<u64>) {
    out.extend(h.iter_recorded().map(|x| {
        (
            h.highest_equivalent(x.value_iterated_to()),
            x.count_at_value(),
        )
    }));
}

/// Whether `combine` adds or takes away.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Combine {
    Add,
    Subtract,
}

/// `out` = `whole` plus or minus `tick` (both runs; a subtracted tick is one that was
/// added): runs again, zero counts dropped.
pub fn combine(out: &mut Runs, whole: &[(u64, u64)], tick: &[(u64, u64)], op: Combine) {
    out.clear();
    let (mut i, mut j) = (0, 0);
    while j < tick.len() {
        let (v, c) = tick[j];
        while i < whole.len() && whole[i].0 < v {
            out.push(whole[i]);
            i += 1;
        }
        let mut sum = if i < whole.len() && whole[i].0 == v {
            i += 1;
            whole[i - 1].1
        } else {
            0
        };
        match op {
            Combine::Add => sum += c,
            Combine::Subtract => sum = sum.saturating_sub(c),
        }
        if sum > 0 {
            out.push((v, sum));
        }
        j += 1;
    }
    out.extend_from_slice(&whole[i..]);
}

/// The values at quantiles `qs` (each 0..=1, ascending) of `runs`, whose counts sum to
/// `total`, as `Histogram::value_at_quantile` reads them (the bucket where the count
/// reaches `ceil(q * total)`, at least 1); 0 for empty runs. One walk for all of them.
/// Quantile 0 is read as the smallest positive one (its bucket's highest value, where
/// the histogram gives the lowest).
pub fn quantiles<const N: usize>(runs: &[(u64, u64)], total: u64, qs: [f64; N]) -> [u64; N] {
    let mut out = [0; N];
    let (mut i, mut seen) = (0, 0u64);
    for (o, q) in out.iter_mut().zip(qs) {
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        while i < runs.len() && seen + runs[i].1 < rank {
            seen += runs[i].1;
            i += 1;
        }
        *o = runs.get(i).or(runs.last()).map_or(0, |r| r.0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::stats::{LATENCY_MAX, LATENCY_MIN, latency_histogram};

    proptest::proptest! {
        /// Runs built from raw records, tick by tick, hold what one histogram of every
        /// record holds: the same buckets and counts, the same p50, p99 and max.
        #[test]
        fn runs_read_as_the_histogram_reads(
            ticks in proptest::collection::vec(
                proptest::collection::vec((LATENCY_MIN..=LATENCY_MAX, 1u64..50), 0..30), 1..8),
        ) {
            let mut h = latency_histogram();
            let (mut run, mut buf) = (Runs::new(), Runs::new());
            for records in &ticks {
                let mut raw: Runs = records.clone();
                for &(v, n) in records {
                    h.saturating_record_n(v, n);
                }
                bucketize(&mut raw, &h);
                proptest::prop_assert!(raw.windows(2).all(|w| w[0].0 < w[1].0));
                combine(&mut buf, &run, &raw, Combine::Add);
                std::mem::swap(&mut run, &mut buf);
            }
            let from_hist: Runs = h
                .iter_recorded()
                .map(|x| (h.highest_equivalent(x.value_iterated_to()), x.count_at_value()))
                .collect();
            proptest::prop_assert_eq!(&run, &from_hist);
            let total = run.iter().map(|r| r.1).sum();
            let [p50, p99, max] = quantiles(&run, total, [0.5, 0.99, 1.0]);
            proptest::prop_assert_eq!(p50, h.value_at_quantile(0.5));
            proptest::prop_assert_eq!(p99, h.value_at_quantile(0.99));
            proptest::prop_assert_eq!(max, if total == 0 { 0 } else { h.max() });
        }
    }

    #[test]
    fn subtracting_a_tick_that_was_added_gives_the_runs_back() {
        let h = latency_histogram();
        let mut a: Runs = vec![(5_000, 2), (2_000_000, 1), (5_000, 1)];
        bucketize(&mut a, &h);
        assert_eq!(a.len(), 2, "{a:?}");
        assert_eq!(a[0].1, 3);
        let whole: Runs = vec![(h.highest_equivalent(7_000), 4)];
        let (mut sum, mut back) = (Runs::new(), Runs::new());
        combine(&mut sum, &whole, &a, Combine::Add);
        combine(&mut back, &sum, &a, Combine::Subtract);
        assert_eq!(back, whole);
        assert_eq!(quantiles(&[], 0, [0.5]), [0]);
    }
}
