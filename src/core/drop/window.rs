//! Window-aware dropping at a drop point: the keep fraction of each window is fixed when
//! the window opens, and a (key, window) group is kept or dropped whole by a seeded hash,
//! so every emitted window is exact. Decisions keep binding until their window is long
//! closed, even after the rule is lifted.

use std::hash::{Hash, Hasher};

use rustc_hash::FxHasher;

use super::{DropPoint, DropReason, DropRule, threshold};
use crate::core::batch::{Batch, Column};
use crate::core::datum::float_key_bits;
use crate::core::plan::WindowSpec;

/// Window-aware dropping: whole (key, window) groups are kept or dropped, with the keep
/// fraction in force when the window opened, so every emitted window result is exact.
/// Only tumbling windows (a tuple belongs to one window) over column keys qualify.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowRule {
    pub keep: f64,
    /// Column holding the window time, or `None` for arrival time.
    pub time_column: Option<usize>,
    pub window: WindowSpec,
    pub key_columns: Vec<usize>,
}

/// The seeded hash of row `i`'s key columns, mixed so every bit is usable: the same key
/// always draws the same number.
pub(super) fn key_hash(seed: u64, batch: &Batch, i: usize, key_columns: &[usize]) -> u64 {
    let mut h = FxHasher::default();
    seed.hash(&mut h);
    for &c in key_columns {
        match &batch.columns[c] {
            Column::Int(v) => v[i].hash(&mut h),
            Column::Float(v) => v[i].to_bits().hash(&mut h),
            Column::Str(v) => v[i].hash(&mut h),
            Column::Bool(v) => v[i].hash(&mut h),
        }
    }
    h.finish()
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .rotate_left(29)
}

/// A window open when the plan's keep falls below this share of the keep it opened with
/// (1 for the first window under the rule, which may hold tuples admitted before it) is
/// abandoned: its remaining rows are dropped and its window operator withholds it whole
/// (`WindowAggregate::withhold`), so no emitted window is inexact and none holds the
/// surge's backlog. Half: a window keeping twice what the machine can take now would
/// come out a window late or more.
pub const ABANDON_BELOW: f64 = 0.5;

impl DropPoint {
    /// The windows abandoned since the last call (`ABANDON_BELOW`), by start: the
    /// query's window operator must withhold them.
    pub fn take_abandoned(&mut self, mut each: impl FnMut(i64)) {
        for start in self.abandoned.drain(..) {
            each(start);
        }
    }

    /// Whether window decisions made earlier still bind some open window.
    pub(super) fn window_binding(&self) -> bool {
        self.window.is_some() && self.opened.values().any(|&k| k < 1.0)
    }

    /// The window-aware decision for row `i`: keep iff its (key, window) group was drawn
    /// with the keep fraction in force when that window opened.
    pub(super) fn window_keeps(&mut self, batch: &Batch, i: usize, keep_now: f64) -> bool {
        let Some(w) = &self.window else {
            return true;
        };
        let t = match w.time_column.map(|c| &batch.columns[c]) {
            Some(Column::Int(v)) => v[i],
            Some(_) => return true,
            None => batch.arrival[i],
        };
        let size = w.window.size.max(1);
        let start = t.div_euclid(size) * size;
        let keep = self.window_keep(start, keep_now);
        keep >= 1.0 || (keep > 0.0 && self.group_kept(start, keep, batch, i))
    }

    /// `window_keeps` for every row of `batch` under the installed rule (`keep_now`): the
    /// kept rows into `sel`, the others counted. A window's keep is looked up once per run
    /// of rows in it, not per row (the map lookup cost as much as the rest of the
    /// decision), and a window kept whole or dropped whole costs no hash.
    pub(super) fn apply_window(&mut self, batch: &Batch, keep_now: f64, sel: &mut Vec<u32>) {
        let Some(w) = &self.window else {
            sel.extend(0..batch.len() as u32);
            return;
        };
        let size = w.window.size.max(1);
        let times: &[i64] = match w.time_column.map(|c| &batch.columns[c]) {
            Some(Column::Int(v)) => v,
            Some(_) => {
                sel.extend(0..batch.len() as u32);
                return;
            }
            None => &batch.arrival,
        };
        let (mut start, mut end, mut keep) = (0, i64::MIN, 1.0);
        let mut dropped = 0;
        for (i, &t) in times.iter().enumerate() {
            if t < start || t >= end {
                start = t.div_euclid(size) * size;
                end = start.saturating_add(size);
                keep = self.window_keep(start, keep_now);
            }
            if keep >= 1.0 || (keep > 0.0 && self.group_kept(start, keep, batch, i)) {
                sel.push(i as u32);
            } else {
                dropped += 1;
            }
        }
        self.dropped[DropReason::ShedWindow.index()] += dropped;
    }

    /// The keep fraction of the window starting at `start`: the one in force when it
    /// opened (`keep_now` if it opens now), 1 before the first window under the rule, 0
    /// once abandoned (`ABANDON_BELOW`, which this decides).
    fn window_keep(&mut self, start: i64, keep_now: f64) -> f64 {
        let first = *self.first_window.get_or_insert(start);
        let keep = if start < first {
            1.0
        } else if start == first {
            // It may hold tuples admitted before the rule: kept whole, unless abandoned.
            *self.opened.get(&start).unwrap_or(&1.0)
        } else {
            *self.opened.entry(start).or_insert(keep_now)
        };
        if start >= first && keep > 0.0 && keep_now < keep * ABANDON_BELOW {
            // Its keep at opening is far more than the machine can take now (a surge
            // began while it was open): abandoned whole rather than processed late.
            self.opened.insert(start, 0.0);
            self.abandoned.push(start);
            return 0.0;
        }
        keep
    }

    /// Whether row `i`'s (key, window) group is kept in the window starting at `start`
    /// at `keep` (strictly between 0 and 1): a seeded hash of window and key.
    fn group_kept(&self, start: i64, keep: f64, batch: &Batch, i: usize) -> bool {
        let Some(w) = &self.window else {
            return true;
        };
        let mut h = FxHasher::default();
        (self.seed, start).hash(&mut h);
        for &c in &w.key_columns {
            match &batch.columns[c] {
                Column::Int(v) => v[i].hash(&mut h),
                Column::Float(v) => float_key_bits(v[i]).hash(&mut h),
                Column::Str(v) => v[i].hash(&mut h),
                Column::Bool(v) => v[i].hash(&mut h),
            }
        }
        // FxHash's low bits are weak; mix before comparing.
        let x = h
            .finish()
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29);
        x < threshold(keep)
    }

    /// Forgets windows that ended well before the newest time in `batch`, and the window
    /// rule itself once no decision of it binds any more.
    pub(super) fn prune_windows(&mut self, batch: &Batch) {
        let Some(w) = &self.window else { return };
        let times: &[i64] = match w.time_column.map(|c| &batch.columns[c]) {
            Some(Column::Int(v)) => v,
            Some(_) => return,
            None => &batch.arrival,
        };
        let size = w.window.size.max(1);
        if let Some(&last) = times.iter().max() {
            // A generous margin for late tuples.
            let horizon = last - 4 * size;
            while self
                .opened
                .first_key_value()
                .is_some_and(|(&s, _)| s < horizon)
            {
                self.opened.pop_first();
            }
        }
        if !matches!(self.rule, DropRule::Window(_)) && !self.window_binding() {
            self.window = None;
            self.opened.clear();
            self.first_window = None;
        }
    }

    /// The random keep probability this point applies (1 for other rules): what
    /// Horvitz-Thompson scaling divides by.
    pub fn random_keep(&self) -> f64 {
        match &self.rule {
            DropRule::Random { keep } => keep.clamp(0.0, 1.0),
            _ => 1.0,
        }
    }

    /// Whether `apply` would keep every row and change nothing (no draw, no window to
    /// track): a batch may then skip it and be read as it is.
    pub fn keeps_every_row(&self) -> bool {
        self.window.is_none() && self.rule.drops_nothing()
    }
}
