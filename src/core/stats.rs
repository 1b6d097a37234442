//! Per-query and per-stream counters and latency histograms, kept by the engine as plain
//! fields (no locks, no metrics calls on the hot path) and read through `EngineSnapshot`.
//!
//! Invariant (the conservation ledger): for each query,
//! `offered == processed + queued + dropped (every reason, queue-full included)`, and
//! `ingested` of a stream equals the `offered` of each query that reads it.

use hdrhistogram::Histogram;

use super::drop::{DropCounts, DropReason};
use super::latency_runs::{Combine, Runs, bucketize, combine, quantiles};
use super::schema::Nanos;

/// Latency histogram in nanoseconds: 1 µs .. 1 h at 2 significant digits (a value is
/// reported within 1% of what was recorded), about 27 KB. Three digits would cost 190 KB
/// per histogram, which thousands of standing queries cannot afford.
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(LATENCY_MIN, LATENCY_MAX, 2).expect("static bounds are valid")
}

/// `QueryStats` folds its raw latency records into runs once it holds this many, whether
/// or not a monitor asks (16 bytes each: 64 KB per query at most).
const FOLD_AT: usize = 4096;

/// The latency histogram's bounds (ns): a query's latencies are recorded clamped to them.
pub const LATENCY_MIN: u64 = 1_000;
pub const LATENCY_MAX: u64 = 3_600_000_000_000;

/// A latency histogram allocated at its first value, so a query that has produced no
/// result costs a null pointer, not a histogram.
#[derive(Debug, Default)]
pub struct LazyHistogram(Option<Box<Histogram<u64>>>);

impl LazyHistogram {
    pub fn record(&mut self, v: u64) {
        self.0
            .get_or_insert_with(|| Box::new(latency_histogram()))
            .saturating_record(v);
    }

    /// `record` of `v`, `n` times.
    pub fn record_n(&mut self, v: u64, n: u64) {
        self.0
            .get_or_insert_with(|| Box::new(latency_histogram()))
            .saturating_record_n(v, n);
    }

    /// The histogram, once something was recorded or one was swapped in (it may have been
    /// reset since, or hold what a swap brought until the next `reset`).
    pub fn get(&self) -> Option<&Histogram<u64>> {
        self.0.as_deref()
    }

    /// Exchanges the histogram with `other` (`None`: not allocated): a reader takes a
    /// tick's latencies without copying them, and hands back last tick's to be reset.
    pub fn swap(&mut self, other: &mut Option<Box<Histogram<u64>>>) {
        std::mem::swap(&mut self.0, other);
    }

    /// The value at quantile `q`, 0 while empty.
    pub fn quantile(&self, q: f64) -> u64 {
        self.get().map_or(0, |h| h.value_at_quantile(q))
    }

    pub fn max(&self) -> u64 {
        self.get().map_or(0, |h| h.max())
    }

    /// p50, p99 and max.
    pub fn quantiles(&self) -> [u64; 3] {
        [self.quantile(0.5), self.quantile(0.99), self.max()]
    }

    /// Forgets every value and keeps the allocation (an empty histogram is left as is:
    /// clearing costs a pass over every bucket).
    pub fn reset(&mut self) {
        if let Some(h) = &mut self.0
            && !h.is_empty()
        {
            h.reset();
        }
    }
}

#[derive(Debug, Default)]
pub struct QueryStats {
    /// Tuples offered to the query's input queue.
    pub offered: u64,
    /// Tuples dropped before reaching the pipeline, by reason: shed at the stream's or the
    /// query's drop point, or rejected by a full input queue.
    pub dropped: DropCounts,
    /// Nanoseconds spent processing (measured live, declared cost simulated).
    pub busy: u64,
    /// Tuples the pipeline has consumed.
    pub processed: u64,
    /// Result rows emitted.
    pub results: u64,
    /// Result latency since start.
    pub latency: LazyHistogram,
    /// Result latency since the last control tick (the QoS monitor's sliding window keeps
    /// what each tick recorded).
    pub latency_tick: LazyHistogram,
    /// p50, p99 and max of `latency`, kept by `Engine::refresh_quantiles` until the next
    /// value (a quantile is a pass over the buckets: thousands of queries, every tick).
    pub quantiles: Option<[u64; 3]>,
    /// The latency records since the last `fold_runs`, as recorded (`(value, count)`).
    tick_raw: Runs,
    /// What `latency_tick` holds, as runs (`core::latency_runs`), up to the last
    /// `fold_runs`.
    tick_runs: Runs,
    /// What `latency` holds, as runs, up to the last `fold_runs`, and their total count.
    run_runs: Runs,
    run_total: u64,
    /// Where `run_runs` is rebuilt.
    runs_buf: Runs,
}

impl QueryStats {
    pub fn record_latency(&mut self, latency: Nanos) {
        let v = (latency.max(0) as u64).clamp(LATENCY_MIN, LATENCY_MAX);
        self.quantiles = None;
        self.latency.record(v);
        self.latency_tick.record(v);
        self.tick_raw.push((v, 1));
        self.fold_if_full();
    }

    /// Folds once `tick_raw` holds `FOLD_AT` records: an engine without a monitor (a
    /// bench, a library user) never calls `fold_runs`, and its records must not pile up.
    fn fold_if_full(&mut self) {
        if self.tick_raw.len() >= FOLD_AT {
            self.fold_raw();
        }
    }

    /// Folds the latencies recorded since the last call into the runs of this tick and of
    /// the whole run, and caches the whole run's p50, p99 and max from them: work in
    /// proportion to what was recorded, not to the histograms' buckets.
    pub fn fold_runs(&mut self) {
        self.fold_raw();
        if self.quantiles.is_none()
            && let Some(h) = self.latency.get()
        {
            let [p50, p99] = quantiles(&self.run_runs, self.run_total, [0.5, 0.99]);
            self.quantiles = Some([p50, p99, h.max()]);
        }
    }

    /// The runs part of `fold_runs`, without the quantiles: what a recording in progress
    /// may call (its cache is stale until it is done).
    fn fold_raw(&mut self) {
        let Some(h) = self.latency.get() else {
            return;
        };
        if self.tick_raw.is_empty() {
            return;
        }
        bucketize(&mut self.tick_raw, h);
        self.run_total += self.tick_raw.iter().map(|r| r.1).sum::<u64>();
        combine(
            &mut self.runs_buf,
            &self.run_runs,
            &self.tick_raw,
            Combine::Add,
        );
        std::mem::swap(&mut self.run_runs, &mut self.runs_buf);
        combine(
            &mut self.runs_buf,
            &self.tick_runs,
            &self.tick_raw,
            Combine::Add,
        );
        std::mem::swap(&mut self.tick_runs, &mut self.runs_buf);
        self.tick_raw.clear();
    }

    /// This tick's latencies as runs, as of the last `fold_runs`.
    pub fn tick_runs(&self) -> &[(u64, u64)] {
        &self.tick_runs
    }

    /// Empties the tick's latencies (histogram and runs), folding what was recorded since
    /// the last `fold_runs` into the whole run's runs first.
    pub fn reset_tick(&mut self) {
        self.fold_runs();
        self.latency_tick.reset();
        self.tick_runs.clear();
    }

    /// The latencies of rows emitted at `now` that arrived at `arrivals`: runs of one
    /// latency (rows of one source batch share an arrival) are recorded at once.
    pub fn record_latencies(&mut self, now: Nanos, arrivals: &[Nanos]) {
        if arrivals.is_empty() {
            return;
        }
        self.quantiles = None;
        let latency = |a: Nanos| ((now - a).max(0) as u64).clamp(LATENCY_MIN, LATENCY_MAX);
        let mut i = 0;
        while i < arrivals.len() {
            // A run of one latency; a row that arrived with the one before it (the common
            // case) joins it without its latency being worked out.
            let v = latency(arrivals[i]);
            let mut j = i + 1;
            while j < arrivals.len()
                && (arrivals[j] == arrivals[j - 1] || latency(arrivals[j]) == v)
            {
                j += 1;
            }
            let n = (j - i) as u64;
            self.latency.record_n(v, n);
            self.latency_tick.record_n(v, n);
            self.tick_raw.push((v, n));
            // Inside the loop: one call may bring a merged batch's rows, each with its
            // own latency.
            self.fold_if_full();
            i = j;
        }
    }
}

/// A consistent view of one query, taken between turns.
#[derive(Clone, Debug, PartialEq)]
pub struct QuerySnapshot {
    pub name: String,
    pub stream: String,
    pub offered: u64,
    /// By `DropReason::index`.
    pub dropped: DropCounts,
    /// Processing time so far (ns).
    pub busy: u64,
    pub processed: u64,
    pub queued: u64,
    pub late: u64,
    /// Windows that closed without a row because every tuple offered to them was lost
    /// (shed or queue-full): they are missing from the output, not empty.
    pub windows_lost: u64,
    /// Windows window-aware shedding abandoned while open (a surge began): closed without
    /// a row, since they kept only part of their rows (`drop::ABANDON_BELOW`). Counted in
    /// `windows_lost` too.
    pub windows_withheld: u64,
    pub results: u64,
    /// p50 and p99 result latency over the whole run (ns).
    pub p50: Nanos,
    pub p99: Nanos,
    pub max: Nanos,
    /// Counts of the processed-value observer (`Engine::observe_processed_values`), in its
    /// bins; empty without one.
    pub processed_values: Vec<u64>,
    /// The query was removed from the run: these are its final counters.
    pub removed: bool,
}

impl QuerySnapshot {
    /// Whether the conservation ledger balances for this query.
    pub fn balances(&self) -> bool {
        self.offered == self.processed + self.queued + self.dropped.iter().sum::<u64>()
    }

    /// Tuples shed by drop points (every reason but queue-full).
    pub fn shed(&self) -> u64 {
        self.dropped.iter().sum::<u64>() - self.queue_full()
    }

    pub fn queue_full(&self) -> u64 {
        self.dropped[DropReason::QueueFull.index()]
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct StreamSnapshot {
    pub name: String,
    /// Well-formed tuples offered to the stream's queries.
    pub ingested: u64,
    /// Shed at the stream's drop point, by reason; `Malformed` counts inputs a source
    /// could not parse (never part of `ingested`).
    pub dropped: DropCounts,
    /// The recent history the stream retains for ad-hoc queries, if it keeps one.
    pub retained: Option<super::retain::RetainSnapshot>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EngineSnapshot {
    pub streams: Vec<StreamSnapshot>,
    pub queries: Vec<QuerySnapshot>,
    /// Engine-thread time outside query turns so far (ns).
    pub overhead: u64,
    /// Engine-thread time spent waiting for input with nothing to do so far (ns; live
    /// runs with one engine thread only, 0 otherwise).
    pub idle: u64,
    /// What the input queues hold in memory now, every shared batch once (bytes; `Held`).
    pub queued_bytes: u64,
    /// The most they held at once so far (bytes).
    pub queued_bytes_peak: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cached whole-run quantiles are dropped by every way of recording a latency: a
    /// stale cache once made every summary print its first result's latency as p99.
    #[test]
    fn every_recorded_latency_invalidates_the_cached_quantiles() {
        let mut s = QueryStats::default();
        s.record_latency(1_000_000);
        s.quantiles = Some(s.latency.quantiles());
        s.record_latencies(500_000_000, &[0, 0, 0]);
        assert_eq!(s.quantiles, None, "record_latencies keeps a stale cache");
        assert!(s.latency.quantiles()[2] >= 499_000_000);
        s.quantiles = Some(s.latency.quantiles());
        s.record_latency(2_000_000);
        assert_eq!(s.quantiles, None);
        // Nothing recorded, nothing invalidated.
        s.quantiles = Some([1, 2, 3]);
        s.record_latencies(0, &[]);
        assert_eq!(s.quantiles, Some([1, 2, 3]));
    }

    /// Folded runs read as the histograms do, tick after tick, whether a tick is folded
    /// once or several times, and latencies beyond the bounds are clamped alike.
    #[test]
    fn folded_runs_hold_what_the_histograms_hold() {
        let runs_of = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
            h.iter_recorded()
                .map(|x| {
                    (
                        h.highest_equivalent(x.value_iterated_to()),
                        x.count_at_value(),
                    )
                })
                .collect()
        };
        let mut s = QueryStats::default();
        let mut now: Nanos = 10_000_000_000_000; // beyond the 1 h bound from 0
        for tick in 0..6i64 {
            for b in 0..40i64 {
                now += 1_000_000;
                let arrivals: Vec<Nanos> = (0..(b % 7)).map(|i| now - i * 3_701 * tick).collect();
                s.record_latencies(now, &arrivals);
                s.record_latency(b * 999_983 - 5);
                if b == 20 {
                    s.fold_runs(); // a fold mid-tick (a snapshot) changes nothing
                }
            }
            s.record_latencies(now, &[0]);
            s.fold_runs();
            assert_eq!(s.tick_runs(), runs_of(s.latency_tick.get().unwrap()));
            assert_eq!(s.quantiles, Some(s.latency.quantiles()), "tick {tick}");
            s.reset_tick();
            assert!(s.tick_runs().is_empty() && s.latency_tick.get().unwrap().is_empty());
        }
    }

    /// Without a monitor nobody calls `fold_runs`: the raw records stay bounded, and what
    /// they fold into still reads as the histograms do.
    #[test]
    fn raw_records_stay_bounded_without_a_monitor() {
        let mut s = QueryStats::default();
        for i in 0..50_000i64 {
            s.record_latency(1_000 + (i * 7_919) % 5_000_000);
            assert!(s.tick_raw.len() < FOLD_AT);
        }
        // One call with 20,000 rows of distinct latencies (a merged batch).
        let arrivals: Vec<Nanos> = (0..20_000i64).map(|i| i * 1_013).collect();
        s.record_latencies(40_000_000, &arrivals);
        assert!(s.tick_raw.len() < FOLD_AT && s.tick_raw.capacity() <= 2 * FOLD_AT);
        s.fold_runs();
        assert_eq!(s.run_total, 70_000);
        assert_eq!(s.quantiles, Some(s.latency.quantiles()));
    }

    #[test]
    fn an_idle_query_holds_no_histogram() {
        let mut s = QueryStats::default();
        assert!(s.latency.get().is_none() && s.latency_tick.get().is_none());
        assert!(std::mem::size_of::<QueryStats>() < 256);
        assert_eq!(s.latency.quantile(0.99), 0);
        s.record_latency(2_000_000);
        let p99 = s.latency.quantile(0.99);
        assert!((2_000_000..2_020_000).contains(&p99), "{p99}");
        s.latency_tick.reset();
        assert!(s.latency_tick.get().is_some_and(|h| h.is_empty()));
    }

    #[test]
    fn a_latency_histogram_is_small() {
        // 8 bytes per counter; well under 50 KB for the whole 1 µs .. 1 h range.
        let h = latency_histogram();
        assert!(
            h.distinct_values() * 8 < 32 * 1024,
            "{}",
            h.distinct_values()
        );
    }
}
