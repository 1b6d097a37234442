//! Times grouped by window slice for loss accounting: a batch's time range per time
//! source, found once and shared by every reader of the batch (`TimeSpans`), and runs of
//! consecutive times in one slice (`Runs`), so tallies are touched once per run, not per
//! tuple. Invariant: a span is only ever used for the batch it was computed on.

use crate::core::batch::{Batch, Column};
use crate::core::plan::TimeSource;

/// The smallest and largest time of one batch per time source, computed once per batch
/// and shared by every reader that accounts loss for it. Valid for one batch only: the
/// caller makes a new one for the next.
#[derive(Debug, Default)]
pub struct TimeSpans {
    known: [(Option<TimeSource>, i64, i64); 4],
}

impl TimeSpans {
    pub fn new() -> TimeSpans {
        TimeSpans::default()
    }

    /// Takes `(lo, hi)` as the span of `time` in the batch these spans are for (as its
    /// source computed it), so that `of` need not read the batch.
    pub fn seed(&mut self, time: TimeSource, lo: i64, hi: i64) {
        if lo > hi || self.known.iter().any(|k| k.0 == Some(time)) {
            return;
        }
        if let Some(slot) = self.known.iter_mut().find(|k| k.0.is_none()) {
            *slot = (Some(time), lo, hi);
        }
    }

    /// `(min, max)` of `batch`'s times from `time`, uncached (what a source computes to
    /// `seed` spans with); `None` for an empty batch.
    pub fn span(time: TimeSource, batch: &Batch) -> Option<(i64, i64)> {
        let ts = times(time, batch);
        (!ts.is_empty()).then(|| min_max(ts.iter().copied()))
    }

    /// `(min, max)` of `batch`'s times from `time`; `None` for an empty batch.
    pub(super) fn of(&mut self, time: TimeSource, batch: &Batch) -> Option<(i64, i64)> {
        if let Some(&(_, lo, hi)) = self.known.iter().find(|k| k.0 == Some(time)) {
            return Some((lo, hi));
        }
        let ts = times(time, batch);
        if ts.is_empty() {
            return None;
        }
        let (lo, hi) = min_max(ts.iter().copied());
        if let Some(slot) = self.known.iter_mut().find(|k| k.0.is_none()) {
            *slot = (Some(time), lo, hi);
        }
        Some((lo, hi))
    }
}

/// The smallest and largest of `ts` (`(i64::MAX, i64::MIN)` when empty). Branch-free: no
/// early exit, a compare and a move per time.
fn min_max(ts: impl Iterator<Item = i64>) -> (i64, i64) {
    ts.fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)))
}

pub(super) fn times(time: TimeSource, batch: &Batch) -> &[i64] {
    match time {
        TimeSource::Column(i) => match &batch.columns[i] {
            Column::Int(v) => v,
            other => unreachable!("time column {other:?}"),
        },
        TimeSource::Arrival => &batch.arrival,
    }
}

/// Groups consecutive times of the same slice, so the tallies are touched once per run
/// rather than once per tuple; a slice no open window holds (a late time) is skipped.
pub(super) struct Runs {
    pub(super) slice: i64,
    pub(super) slide: i64,
    pub(super) size: i64,
    pub(super) closed: i64,
    pub(super) run: Option<(i64, u64)>,
}

impl Runs {
    pub(super) fn slice_of(&self, t: i64) -> Option<i64> {
        t.div_euclid(self.slice).checked_mul(self.slice)
    }

    pub(super) fn push(&mut self, t: i64, add: &mut impl FnMut(i64, u64)) {
        if let Some(key) = self.slice_of(t) {
            self.push_run(key, 1, add);
        }
    }

    pub(super) fn push_run(&mut self, key: i64, n: u64, add: &mut impl FnMut(i64, u64)) {
        match &mut self.run {
            Some((k, m)) if *k == key => *m += n,
            run => {
                if let Some((k, m)) = run.replace((key, n)) {
                    self.flush(k, m, add);
                }
            }
        }
    }

    pub(super) fn flush(&self, key: i64, n: u64, add: &mut impl FnMut(i64, u64)) {
        // The last window holding this slice starts at its slide boundary.
        let last = key.div_euclid(self.slide).saturating_mul(self.slide);
        if n > 0 && last.saturating_add(self.size) > self.closed {
            add(key, n);
        }
    }

    /// The slice every time of `ts` falls in, if there is one (two comparisons per time).
    pub(super) fn one_slice(&self, ts: &[i64]) -> Option<i64> {
        self.one_slice_of(ts.iter().copied())
    }

    /// `one_slice` of times given one by one (a selection's): the slice of the smallest
    /// time, when the largest falls in it too.
    pub(super) fn one_slice_of(&self, ts: impl Iterator<Item = i64>) -> Option<i64> {
        let (min, max) = min_max(ts);
        if min > max {
            return None;
        }
        let lo = self.slice_of(min)?;
        (max < lo.checked_add(self.slice)?).then_some(lo)
    }

    /// `push` of every time in `ts`: a batch inside one slice (the usual case) costs two
    /// comparisons per tuple and one division in all.
    pub(super) fn push_all(&mut self, ts: &[i64], add: &mut impl FnMut(i64, u64)) {
        if let Some(lo) = self.one_slice(ts) {
            self.push_run(lo, ts.len() as u64, add);
            return;
        }
        for &t in ts {
            self.push(t, add);
        }
    }

    pub(super) fn finish(&mut self, add: &mut impl FnMut(i64, u64)) {
        if let Some((k, n)) = self.run.take() {
            self.flush(k, n, add);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::schema::DataType;

    #[test]
    fn time_spans_give_each_sources_min_and_max_once_per_batch() {
        let mut b = Batch::new(&[DataType::Timestamp], 4);
        for (arrival, t) in [(5, 40), (6, 10), (7, 30)] {
            b.arrival.push(arrival);
            if let Column::Int(v) = &mut b.columns[0] {
                v.push(t);
            }
        }
        let mut spans = TimeSpans::new();
        assert_eq!(spans.of(TimeSource::Column(0), &b), Some((10, 40)));
        assert_eq!(spans.of(TimeSource::Arrival, &b), Some((5, 7)));
        // Kept for the batch it was computed on: another reader of it scans nothing.
        b.arrival[0] = 0;
        assert_eq!(spans.of(TimeSource::Arrival, &b), Some((5, 7)));
        assert_eq!(TimeSpans::new().of(TimeSource::Arrival, &b), Some((0, 7)));
        let empty = Batch::new(&[], 0);
        assert_eq!(TimeSpans::new().of(TimeSource::Arrival, &empty), None);
    }

    #[test]
    fn one_slice_is_found_from_the_smallest_and_largest_time_in_any_order() {
        let runs = Runs {
            slice: 10,
            slide: 10,
            size: 10,
            closed: i64::MIN,
            run: None,
        };
        assert_eq!(runs.one_slice(&[17, 11, 19, 10]), Some(10));
        assert_eq!(runs.one_slice(&[-3, -10, -1]), Some(-10));
        // The first time's slice holds all but one, which falls in the next slice.
        assert_eq!(runs.one_slice(&[11, 12, 20]), None);
        assert_eq!(runs.one_slice(&[20, 19]), None);
        assert_eq!(runs.one_slice(&[]), None);
        assert_eq!(runs.one_slice_of([5, 5].into_iter()), Some(0));
    }
}
