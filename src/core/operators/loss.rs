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

/// One window's counts; lost counts are before the filter (scaled by its pass rate later).
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
    /// Whether a row of this window was emitted.
    rows: bool,
}

#[derive(Debug)]
pub struct WindowLoss {
    time: TimeSource,
    size: i64,
    slide: i64,
    armed: bool,
    tallies: BTreeMap<i64, Tally>,
    /// Side-car kinds of the group-row columns, installed on the first qualified row.
    kinds: Vec<ColumnApprox>,
    start_col: usize,
    /// Rows the filter saw and passed: lost tuples count at the filter's pass rate.
    seen: u64,
    passed: u64,
    windows_lost: u64,
}

impl WindowLoss {
    pub fn new(plan: &AggregatePlan) -> WindowLoss {
        let nkeys = plan.keys.len();
        let kinds = ColumnApprox::for_aggregate(plan);
        WindowLoss {
            time: plan.time,
            size: plan.window.size,
            slide: plan.window.slide,
            armed: false,
            tallies: BTreeMap::new(),
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

    /// Counts the rows of `batch` not in `kept` (ascending row indices) as lost to the
    /// windows still open after `closed`, lost for reason `kind`.
    pub fn note_lost(&mut self, batch: &Batch, kept: &[u32], kind: LossKind, closed: i64) {
        self.armed = true;
        let mut next = kept.iter().peekable();
        let mut runs = Runs::new(self.size, self.slide, closed);
        let tallies = &mut self.tallies;
        let mut add = |start: i64, n: u64| {
            let e = tallies.entry(start).or_default();
            match kind {
                LossKind::Scaled => e.scaled += n as f64,
                LossKind::Unscaled => e.unscaled += n as f64,
                LossKind::WholeGroups => e.whole += n,
            }
        };
        let ts = times(self.time, batch);
        if kept.is_empty() {
            // The whole batch was lost (the usual case: drop points drop whole batches).
            runs.push_all(ts, &mut add);
        } else {
            for (row, &t) in ts.iter().enumerate() {
                if next.next_if(|&&k| k as usize == row).is_none() {
                    runs.push(t, &mut add);
                }
            }
        }
        runs.finish(&mut add);
    }

    /// Counts the rows of `batch` (about to be folded) as kept by their windows: a few
    /// nanoseconds per run of tuples in one window slice, no allocation per tuple.
    pub fn count_kept(&mut self, batch: &Batch, closed: i64) {
        let mut runs = Runs::new(self.size, self.slide, closed);
        let tallies = &mut self.tallies;
        let mut add = |start: i64, n: u64| tallies.entry(start).or_default().kept += n;
        runs.push_all(times(self.time, batch), &mut add);
        runs.finish(&mut add);
    }

    /// Qualifies the group rows in `groups` of windows that lost tuples, then forgets the
    /// windows ending by `closed`, counting those that emitted no row.
    pub fn apply(&mut self, groups: &mut Output, closed: i64) {
        let pass = if self.seen > 0 {
            self.passed as f64 / self.seen as f64
        } else {
            1.0
        };
        if let (true, Column::Int(starts)) = (self.armed, &groups.rows.columns[self.start_col]) {
            for (row, start) in starts.iter().enumerate() {
                let Some(t) = self.tallies.get_mut(start) else {
                    continue;
                };
                t.rows = true;
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
        while let Some((&start, t)) = self.tallies.first_key_value() {
            if start.saturating_add(self.size) > closed {
                break;
            }
            if !t.rows && (t.scaled + t.unscaled > 0.0 || t.whole > 0) {
                self.windows_lost += 1;
            }
            self.tallies.pop_first();
        }
    }
}

fn times(time: TimeSource, batch: &Batch) -> &[i64] {
    match time {
        TimeSource::Column(i) => match &batch.columns[i] {
            Column::Int(v) => v,
            other => unreachable!("time column {other:?}"),
        },
        TimeSource::Arrival => &batch.arrival,
    }
}

/// Groups consecutive times that belong to the same windows, so the tallies are touched
/// once per run rather than once per tuple and window.
struct Runs {
    size: i64,
    slide: i64,
    closed: i64,
    /// Whether every time of one slide-long slice has the same windows (size a multiple
    /// of the slide); otherwise only equal times are grouped.
    by_slice: bool,
    run: Option<(i64, u64)>,
}

impl Runs {
    fn new(size: i64, slide: i64, closed: i64) -> Runs {
        Runs {
            size,
            slide,
            closed,
            by_slice: size % slide == 0,
            run: None,
        }
    }

    fn push(&mut self, t: i64, add: &mut impl FnMut(i64, u64)) {
        let key = if self.by_slice {
            match t.div_euclid(self.slide).checked_mul(self.slide) {
                Some(k) => k,
                None => return,
            }
        } else {
            t
        };
        match &mut self.run {
            Some((k, n)) if *k == key => *n += 1,
            run => {
                if let Some((k, n)) = run.replace((key, 1)) {
                    each_window(k, self.size, self.slide, self.closed, |s| add(s, n));
                }
            }
        }
    }

    /// `push` of every time in `ts`. A batch inside one slice (the usual case) costs two
    /// comparisons per tuple and one division in all, instead of a division per tuple.
    fn push_all(&mut self, ts: &[i64], add: &mut impl FnMut(i64, u64)) {
        if let (true, Some(&first)) = (self.by_slice, ts.first())
            && let Some(lo) = first.div_euclid(self.slide).checked_mul(self.slide)
            && let Some(hi) = lo.checked_add(self.slide)
            && ts.iter().all(|&t| lo <= t && t < hi)
        {
            match &mut self.run {
                Some((k, n)) if *k == lo => *n += ts.len() as u64,
                run => {
                    if let Some((k, n)) = run.replace((lo, ts.len() as u64)) {
                        each_window(k, self.size, self.slide, self.closed, |s| add(s, n));
                    }
                }
            }
            return;
        }
        for &t in ts {
            self.push(t, add);
        }
    }

    fn finish(&mut self, add: &mut impl FnMut(i64, u64)) {
        if let Some((k, n)) = self.run.take() {
            each_window(k, self.size, self.slide, self.closed, |s| add(s, n));
        }
    }
}

/// Calls `f` with the start of every window holding time `t` that ends after `closed`,
/// latest first (the window operator's arithmetic, checked).
fn each_window(t: i64, size: i64, slide: i64, closed: i64, mut f: impl FnMut(i64)) {
    let Some(mut start) = t.div_euclid(slide).checked_mul(slide) else {
        return;
    };
    while start.saturating_add(size) > t && start.saturating_add(size) > closed {
        f(start);
        match start.checked_sub(slide) {
            Some(s) => start = s,
            None => break,
        }
    }
}
