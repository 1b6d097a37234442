//! What the windows of one aggregate lost before they were computed: tuples discarded for
//! the query at a drop point or a full queue never reach the window operator, so without
//! this a window that lost tuples to a keep fraction of 0 would look exact. Lost tuples
//! are counted per window at ingest, kept tuples per window as they are folded, and
//! when a window closes every one of its rows is qualified with the share it kept; a
//! window that kept nothing is counted as lost.
//!
//! Invariant: tallies exist only for open windows; every row of a window with a loss
//! carries `keep < 1`, and a row with loss its Horvitz-Thompson
//! state cannot scale carries no interval (its COUNT is a lower bound).

use std::collections::BTreeMap;

use super::approx::{ColumnApprox, Output};
use crate::core::batch::{Batch, Column};
use crate::core::plan::{AggregatePlan, TimeSource};
use crate::core::rows::Rows;

pub use super::loss_runs::TimeSpans;
use super::loss_runs::{Runs, times};

/// Why tuples were lost before reaching a window, which decides how its rows say so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossKind {
    /// Random drops of batches kept with probability in (0, 1): Horvitz-Thompson scaling
    /// of the groups that kept tuples accounts for them.
    Scaled,
    /// Lost where no estimator can account for them (keep 0, full queue, mixed causes).
    Unscaled,
    /// Whole (key, window) groups dropped by window-aware shedding: the kept groups are
    /// exact, so rows are not qualified; a window that lost every group is still counted.
    WholeGroups,
}

/// One slice's counts (a slice is `gcd(size, slide)` long, so every window is a whole
/// number of slices); lost counts are before the filter (scaled by its pass rate later).
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    kept: u64,
    /// Lost to random drops of batches kept with probability in (0, 1): the HT state of
    /// the groups that kept tuples already accounts for them.
    scaled: f64,
    /// Lost where no estimator can account for them (keep fraction 0, full queue,
    /// whole-window drops, mixed causes).
    unscaled: f64,
    /// Lost as whole groups (window-aware drops).
    whole: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.kept += o.kept;
        self.scaled += o.scaled;
        self.unscaled += o.unscaled;
        self.whole += o.whole;
    }

    fn lost_any(&self) -> bool {
        self.scaled + self.unscaled > 0.0 || self.whole > 0
    }
}

#[derive(Debug)]
pub struct WindowLoss {
    time: TimeSource,
    size: i64,
    slide: i64,
    /// Slice length: the gcd of size and slide.
    slice: i64,
    armed: bool,
    /// Per slice start: one map update per run of tuples in a slice, however many windows
    /// overlap it (a 10 ms slide over 1 s would otherwise touch 100 windows per run).
    tallies: BTreeMap<i64, Tally>,
    /// Every window ending at or before this has been judged (`apply`).
    judged: i64,
    /// Starts of the windows that emitted a row in the current `apply`.
    with_rows: Vec<i64>,
    /// Side-car kinds of the group-row columns, installed on the first qualified row.
    kinds: Vec<ColumnApprox>,
    start_col: usize,
    /// Rows the filter saw and passed: lost tuples count at the filter's pass rate.
    seen: u64,
    passed: u64,
    windows_lost: u64,
}

fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    i64::try_from(a).unwrap_or(i64::MAX).max(1)
}

impl WindowLoss {
    pub fn new(plan: &AggregatePlan) -> WindowLoss {
        let nkeys = plan.keys.len();
        let kinds = ColumnApprox::for_aggregate(plan);
        WindowLoss {
            time: plan.time,
            size: plan.window.size,
            slide: plan.window.slide,
            slice: gcd(plan.window.size, plan.window.slide),
            armed: false,
            tallies: BTreeMap::new(),
            judged: i64::MIN,
            with_rows: Vec::new(),
            kinds,
            start_col: nkeys + plan.aggs.len(),
            seen: 0,
            passed: 0,
            windows_lost: 0,
        }
    }

    /// Windows closed without a row because every tuple offered to them was lost.
    pub fn windows_lost(&self) -> u64 {
        self.windows_lost
    }

    /// The filter saw `seen` rows of a batch and passed `passed`.
    pub fn note_filter(&mut self, seen: usize, passed: usize) {
        self.seen += seen as u64;
        self.passed += passed as u64;
    }

    fn runs(&self, closed: i64) -> Runs {
        Runs {
            slice: self.slice,
            slide: self.slide,
            size: self.size,
            closed,
            run: None,
        }
    }

    /// Counts the rows of `batch` not in `kept` (ascending row indices) as lost to the
    /// windows still open after `closed`, lost for reason `kind`.
    /// `spans` holds the batch's time range per time source, computed by the first reader
    /// that needs it: a batch shared by many windowed queries is scanned once, not once per
    /// query (that scan was most of the engine's ingest under a heavy stream drop).
    pub fn note_lost(
        &mut self,
        batch: &Batch,
        kept: &[u32],
        kind: LossKind,
        closed: i64,
        spans: &mut TimeSpans,
    ) {
        self.armed = true;
        let span = spans.of(self.time, batch);
        let mut runs = self.runs(closed);
        let tallies = &mut self.tallies;
        let mut add = |start: i64, n: u64| add_lost(tallies, kind, start, n);
        let ts = times(self.time, batch);
        let one_slice = span.and_then(|(lo, hi)| runs.one_slice_of([lo, hi].into_iter()));
        if let (true, Some(lo)) = (kept.is_empty(), one_slice) {
            // The whole batch was lost inside one slice (the usual case): one count.
            runs.push_run(lo, ts.len() as u64, &mut add);
        } else if kept.is_empty() {
            ts.iter().for_each(|&t| runs.push(t, &mut add));
        } else if let Some(lo) = one_slice {
            // A per-tuple drop inside one slice: one count, no walk over the rows.
            runs.push_run(lo, (ts.len() - kept.len()) as u64, &mut add);
        } else {
            let mut next = kept.iter().peekable();
            for (row, &t) in ts.iter().enumerate() {
                if next.next_if(|&&k| k as usize == row).is_none() {
                    runs.push(t, &mut add);
                }
            }
        }
        runs.finish(&mut add);
    }

    /// Counts the rows `lost` (ascending row indices of `batch`) as lost to the windows
    /// still open after `closed`, for reason `kind`: rows already queued for the query and
    /// then thinned there (`Engine::thin_queued`), whose batch's other rows were accounted
    /// for at ingest.
    pub fn note_lost_rows(
        &mut self,
        batch: &Batch,
        lost: impl Iterator<Item = u32> + Clone,
        kind: LossKind,
        closed: i64,
    ) {
        self.armed = true;
        let mut runs = self.runs(closed);
        let tallies = &mut self.tallies;
        let mut add = |start: i64, n: u64| add_lost(tallies, kind, start, n);
        let ts = times(self.time, batch);
        match runs.one_slice_of(lost.clone().map(|i| ts[i as usize])) {
            // All inside one slice (the usual case for a batch): one count.
            Some(lo) => runs.push_run(lo, lost.count() as u64, &mut add),
            None => lost.for_each(|i| runs.push(ts[i as usize], &mut add)),
        }
        runs.finish(&mut add);
    }

    /// Counts the rows `rows` sees (about to be folded) as kept by their windows: a few
    /// nanoseconds per run of tuples in one slice, no allocation per tuple.
    pub fn count_kept(&mut self, rows: Rows<'_>, closed: i64) {
        let mut runs = self.runs(closed);
        let tallies = &mut self.tallies;
        let mut add = |start: i64, n: u64| tallies.entry(start).or_default().kept += n;
        let ts = times(self.time, rows.batch);
        match rows.sel {
            None => runs.push_all(ts, &mut add),
            Some(sel) => match runs.one_slice_of(sel.iter().map(|&i| ts[i as usize])) {
                Some(lo) => runs.push_run(lo, sel.len() as u64, &mut add),
                None => sel
                    .iter()
                    .for_each(|&i| runs.push(ts[i as usize], &mut add)),
            },
        }
        runs.finish(&mut add);
    }

    /// The counts of the window starting at `start`: the sum of its slices.
    fn window(&self, start: i64) -> Tally {
        let mut t = Tally::default();
        for (_, s) in self.tallies.range(start..start.saturating_add(self.size)) {
            t.add(s);
        }
        t
    }

    /// Qualifies the group rows in `groups` of windows that lost tuples, then judges the
    /// windows ending by `closed` (counting those that lost tuples and emitted no row) and
    /// forgets the slices no open window holds.
    pub fn apply(&mut self, groups: &mut Output, closed: i64) {
        let pass = if self.seen > 0 {
            self.passed as f64 / self.seen as f64
        } else {
            1.0
        };
        self.with_rows.clear();
        if let (true, Column::Int(starts)) = (self.armed, &groups.rows.columns[self.start_col]) {
            let mut current: Option<(i64, Tally)> = None;
            for (row, &start) in starts.iter().enumerate() {
                let t = match current {
                    Some((s, t)) if s == start => t,
                    _ => {
                        let t = self.window(start);
                        current = Some((start, t));
                        self.with_rows.push(start);
                        t
                    }
                };
                let (scaled, unscaled) = (t.scaled * pass, t.unscaled * pass);
                if scaled + unscaled <= 0.0 {
                    continue;
                }
                let k = (t.kept as f64).max(1.0);
                let approximate = groups.approx.keep.get(row).is_some_and(|&x| x < 1.0);
                // A row the HT state scaled only misses the unscaled loss; an exact-looking
                // row misses both.
                let lost = if approximate {
                    unscaled
                } else {
                    scaled + unscaled
                };
                if lost > 0.0 {
                    groups
                        .approx
                        .qualify(row, k / (k + lost), unscaled > 0.0, &self.kinds);
                }
            }
        }
        groups.approx.pad(groups.rows.len());
        if closed > self.judged {
            if self.armed {
                self.judge(closed);
            }
            self.judged = closed;
        }
        // A slice is forgotten once the last window holding it (the one starting at its
        // slide boundary) has closed.
        while let Some((&start, _)) = self.tallies.first_key_value() {
            let last = start.div_euclid(self.slide).saturating_mul(self.slide);
            if last.saturating_add(self.size) > closed {
                break;
            }
            self.tallies.pop_first();
        }
    }

    /// Counts the windows ending in `(judged, closed]` that lost tuples and emitted no row
    /// now. Only windows reaching a tallied slice are looked at.
    fn judge(&mut self, closed: i64) {
        let (Some((&first, _)), Some((&last, _))) = (
            self.tallies.first_key_value(),
            self.tallies.last_key_value(),
        ) else {
            return;
        };
        let (size, slide) = (self.size as i128, self.slide as i128);
        let lo = (self.judged as i128 - size + 1).max(first as i128 - size + 1);
        let lo = -(-lo).div_euclid(slide) * slide;
        let hi = (closed as i128 - size).min(last as i128);
        let mut w = lo;
        while w <= hi {
            let start = w as i64;
            if self.window(start).lost_any() && !self.with_rows.contains(&start) {
                self.windows_lost += 1;
            }
            w += slide;
        }
    }
}

/// Adds `n` tuples lost for reason `kind` to the slice starting at `start`.
fn add_lost(tallies: &mut BTreeMap<i64, Tally>, kind: LossKind, start: i64, n: u64) {
    let e = tallies.entry(start).or_default();
    match kind {
        LossKind::Scaled => e.scaled += n as f64,
        LossKind::Unscaled => e.unscaled += n as f64,
        LossKind::WholeGroups => e.whole += n,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::core::schema::{DataType, Scalar};

    fn loss(size: i64, slide: i64) -> WindowLoss {
        WindowLoss {
            time: TimeSource::Arrival,
            size,
            slide,
            slice: gcd(size, slide),
            armed: false,
            tallies: BTreeMap::new(),
            judged: i64::MIN,
            with_rows: Vec::new(),
            kinds: Vec::new(),
            start_col: 0,
            seen: 0,
            passed: 0,
            windows_lost: 0,
        }
    }

    fn batch(ts: &[i64]) -> Batch {
        let mut b = Batch::new(&[DataType::Int], ts.len());
        for &t in ts {
            b.push_row(t, &[Scalar::Int(0)]);
        }
        b
    }

    /// The per-window oracle: (kept, lost, emitted a row) of every window a tuple reached
    /// while the window was open.
    #[derive(Default)]
    struct Naive {
        windows: BTreeMap<i64, (u64, u64, bool)>,
        lost: u64,
    }

    impl Naive {
        fn note(&mut self, t: i64, size: i64, slide: i64, closed: i64, lost: bool) {
            let mut w = t.div_euclid(slide) * slide;
            while w + size > t {
                if w + size > closed {
                    let e = self.windows.entry(w).or_default();
                    if lost { e.1 += 1 } else { e.0 += 1 }
                }
                w -= slide;
            }
        }
    }

    proptest::proptest! {
        /// Tallies by slice give every window the counts, the row qualifications and the
        /// lost-window count of tallying each window on its own, for slides that divide
        /// the size and slides that do not.
        #[test]
        fn slices_agree_with_windows_tallied_one_by_one(
            shape in proptest::sample::select(vec![(10i64, 10i64), (10, 5), (10, 4), (9, 6), (12, 1), (6, 9)]),
            steps in proptest::collection::vec(
                (proptest::collection::vec((0i64..60, proptest::bool::ANY), 1..20),
                 proptest::bool::ANY, 0i64..8, proptest::bool::ANY),
                1..25,
            ),
        ) {
            let (size, slide) = shape;
            let mut l = loss(size, slide);
            let mut naive = Naive::default();
            let mut closed = i64::MIN;
            let mut now = 0i64;
            for (rows, per_row, advance, emit) in steps {
                let ts: Vec<i64> = rows.iter().map(|(t, _)| now.saturating_sub(10) + t).collect();
                let b = batch(&ts);
                let kept: Vec<u32> = if per_row {
                    rows.iter().enumerate().filter(|(_, r)| r.1).map(|(i, _)| i as u32).collect()
                } else {
                    Vec::new()
                };
                for (i, &t) in ts.iter().enumerate() {
                    naive.note(t, size, slide, closed, !kept.contains(&(i as u32)));
                }
                l.note_lost(&b, &kept, LossKind::Unscaled, closed, &mut TimeSpans::new());
                let kb = batch(&kept.iter().map(|&i| ts[i as usize]).collect::<Vec<_>>());
                l.count_kept(Rows::all(&kb), closed);
                now += advance * 3;
                let to = now - size;
                let mut groups = Output::new(&[DataType::Int]);
                let from = closed;
                for (&w, e) in naive.windows.range_mut(..) {
                    if w + size > from && w + size <= to && emit && e.0 > 0 {
                        e.2 = true;
                        groups.rows.push_row(0, &[Scalar::Int(w)]);
                    }
                }
                l.apply(&mut groups, to.max(closed));
                let Column::Int(starts) = &groups.rows.columns[0] else { unreachable!() };
                for (row, w) in starts.iter().enumerate() {
                    let (k, lost, _) = naive.windows[w];
                    let want = if lost > 0 { (k.max(1) as f64) / (k.max(1) + lost) as f64 } else { 1.0 };
                    let got = groups.approx.keep.get(row).copied().unwrap_or(1.0);
                    proptest::prop_assert!((got - want).abs() < 1e-12, "window {w}: keep {got}, want {want}");
                }
                closed = to.max(closed);
                let done: Vec<i64> = naive.windows.range(..).filter(|(w, _)| *w + size <= closed).map(|(w, _)| *w).collect();
                for w in done {
                    let (_, lost, rows) = naive.windows.remove(&w).unwrap();
                    if lost > 0 && !rows {
                        naive.lost += 1;
                    }
                }
                proptest::prop_assert_eq!(l.windows_lost(), naive.lost);
            }
        }
    }
}
