//! Drop points: the only place tuples are discarded for load, before they are queued or
//! copied; every discard is counted with its reason. A drop point holds a rule the shedder
//! installs (numbers only) and a seeded RNG, so decisions are a few nanoseconds per tuple,
//! allocate nothing, and repeat exactly for the same seed.

use std::collections::BTreeMap;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

mod reason;
mod window;

pub use reason::{DropCounts, DropReason};
pub use window::WindowRule;

use super::batch::{Batch, Column};

/// The bin of `v` among `n` equal bins of `width` over `[lo, hi)`, with an underflow bin 0
/// (below `lo`, and NaN) and an overflow bin `n + 1` (`hi` and above). The one binning
/// arithmetic of the crate: value observers, semantic drop points and `qos::Binning` all
/// use it, so a bin index means the same value range everywhere.
#[inline]
pub fn bin_of(lo: f64, hi: f64, width: f64, n: usize, v: f64) -> usize {
    if v.is_nan() || v < lo {
        return 0;
    }
    if v >= hi {
        return n + 1;
    }
    1 + (((v - lo) / width) as usize).min(n.saturating_sub(1))
}

/// Keep probability per value bin (layout as `bin_of`).
#[derive(Clone, Debug, PartialEq)]
pub struct ValueBins {
    pub column: usize,
    pub lo: f64,
    pub hi: f64,
    pub width: f64,
    /// `n + 2` keep probabilities.
    pub keep: Vec<f64>,
}

impl ValueBins {
    #[inline]
    pub fn bin(&self, v: f64) -> usize {
        bin_of(self.lo, self.hi, self.width, self.keep.len() - 2, v)
    }
}

/// What a drop point does.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum DropRule {
    #[default]
    KeepAll,
    /// Keep each tuple with probability `keep`.
    Random {
        keep: f64,
    },
    /// Keep by value bin (drop the lowest-utility bins first).
    Semantic(ValueBins),
    Window(WindowRule),
    /// Keep the tuples of a stable subset of keys (a seeded hash of the key columns below
    /// `keep`): a key is kept whole or not at all, so the windows of a kept key are exact
    /// while `keep` holds, and subsets nest (raising `keep` only adds keys). For sliding
    /// windows, whose rows do not shrink with a random drop.
    Keys {
        keep: f64,
        key_columns: Vec<usize>,
    },
}

#[derive(Debug)]
pub struct DropPoint {
    rule: DropRule,
    rng: SmallRng,
    seed: u64,
    /// The window rule whose decisions still bind: the installed one, or the last one
    /// while windows it thinned are open (dropping their groups must go on after the rule
    /// is lifted, or those groups would be emitted inexact).
    window: Option<WindowRule>,
    /// Keep fraction of each window at its opening under `window`.
    opened: BTreeMap<i64, f64>,
    /// The window of the first tuple seen under `window`: it and earlier windows may hold
    /// tuples admitted before the rule, so they are kept whole.
    first_window: Option<i64>,
    /// Windows abandoned while open (`window::ABANDON_BELOW`), not yet taken by the engine
    /// (`take_abandoned`), which tells the query's window operator to withhold them.
    abandoned: Vec<i64>,
    /// Per value bin of a semantic rule, its keep probability as an RNG threshold
    /// (computed once at install, not per tuple).
    thresholds: Vec<u64>,
    pub dropped: DropCounts,
}

/// Below this keep fraction a random drop draws the gaps between kept rows (one draw and
/// a logarithm per kept row) instead of one draw per row.
const SKIP_BELOW: f64 = 0.1;

/// `p` as a threshold on a uniform u64: keep iff `next_u64() < threshold`.
fn threshold(p: f64) -> u64 {
    if p >= 1.0 {
        u64::MAX
    } else if p <= 0.0 {
        0
    } else {
        (p * u64::MAX as f64) as u64
    }
}

/// Fills `sel` with the rows of `0..n` kept with probability `keep` each, ascending: two
/// decisions per draw, each half of a u64 against a 32-bit threshold (a keep resolved to
/// 2^-32, far below any sampling error), half the draws of one per row, and no branch on
/// a draw (a row is written, and counted only if kept). Shared by the engine's drop points
/// and a push source's cut of its stream (`runtime::source_shed`).
pub fn sample_rows(rng: &mut SmallRng, keep: f64, n: usize, sel: &mut Vec<u32>) {
    let t = (keep.clamp(0.0, 1.0) * 4_294_967_296.0) as u64;
    sel.clear();
    sel.resize(n, 0);
    let mut len = 0;
    let mut i = 0;
    while i + 1 < n {
        let r = rng.next_u64();
        sel[len] = i as u32;
        len += usize::from((r as u32 as u64) < t);
        sel[len] = (i + 1) as u32;
        len += usize::from((r >> 32) < t);
        i += 2;
    }
    if i < n {
        sel[len] = i as u32;
        len += usize::from((rng.next_u64() >> 32) < t);
    }
    sel.truncate(len);
}

impl DropRule {
    /// Whether the rule itself drops no row (keep everything, or random at keep 1).
    fn drops_nothing(&self) -> bool {
        match self {
            DropRule::KeepAll => true,
            DropRule::Random { keep } => *keep >= 1.0,
            _ => false,
        }
    }
}

impl DropPoint {
    pub fn new(seed: u64) -> DropPoint {
        DropPoint {
            rule: DropRule::KeepAll,
            rng: SmallRng::seed_from_u64(seed),
            seed,
            window: None,
            opened: BTreeMap::new(),
            first_window: None,
            abandoned: Vec::new(),
            thresholds: Vec::new(),
            dropped: [0; DropReason::COUNT],
        }
    }

    /// Fills `sel` with the rows of `0..n` kept with probability `keep` each, ascending,
    /// from this drop point's random stream: nothing drawn at keep 0, the gaps between
    /// kept rows drawn below `SKIP_BELOW` (one draw per kept row), else `sample_rows`.
    /// What a random rule keeps of a batch, and what thinning a queued batch keeps of it
    /// (`Engine::thin_queued`).
    pub fn sample(&mut self, keep: f64, n: usize, sel: &mut Vec<u32>) {
        sel.clear();
        let keep = keep.clamp(0.0, 1.0);
        if keep <= 0.0 {
            // Nothing is kept: no draws at all.
        } else if keep < SKIP_BELOW {
            // Few rows are kept: draw the gaps between kept rows (geometric, so a fresh
            // gap at each batch is the same process), one draw per kept row.
            let ln_drop = (-keep).ln_1p();
            let mut i = 0usize;
            loop {
                let u = ((self.rng.next_u64() >> 11) as f64 + 1.0) * (1.0 / (1u64 << 53) as f64);
                let gap = (u.ln() / ln_drop).floor();
                if gap >= (n - i) as f64 {
                    break;
                }
                i += gap as usize;
                sel.push(i as u32);
                i += 1;
            }
        } else {
            sample_rows(&mut self.rng, keep, n, sel);
        }
    }

    pub fn rule(&self) -> &DropRule {
        &self.rule
    }

    pub fn install(&mut self, rule: DropRule) {
        if let DropRule::Semantic(bins) = &rule {
            self.thresholds = bins.keep.iter().map(|&k| threshold(k)).collect();
        }
        if let DropRule::Window(w) = &rule {
            if self.window.is_none() {
                self.opened.clear();
                self.first_window = None;
            }
            self.window = Some(w.clone());
        }
        self.rule = rule;
    }

    /// Decides each row of `batch`. Returns `None` when every row is kept (the common,
    /// allocation-free case), else fills `sel` with the kept rows and returns `Some(())`.
    pub fn apply(&mut self, batch: &Batch, sel: &mut Vec<u32>) -> Option<()> {
        sel.clear();
        let n = batch.len();
        let binding = self.window_binding() && !matches!(self.rule, DropRule::Window(_));
        let rule = std::mem::take(&mut self.rule);
        let fast = !binding && rule.drops_nothing();
        match &rule {
            _ if fast => {}
            DropRule::Random { keep } if !binding => {
                // The hot case while shedding: one draw per row as below, but no branch
                // on the draw (a kept row is written, and counted only if kept).
                self.sample(*keep, n, sel);
                let len = sel.len();
                self.dropped[DropReason::ShedRandom.index()] += (n - len) as u64;
            }
            DropRule::KeepAll | DropRule::Random { .. } => {
                let t = threshold(self.random_keep_of(&rule));
                for i in 0..n {
                    if binding && !self.window_keeps(batch, i, 1.0) {
                        self.dropped[DropReason::ShedWindow.index()] += 1;
                    } else if t == u64::MAX || self.rng.next_u64() < t {
                        sel.push(i as u32);
                    } else {
                        self.dropped[DropReason::ShedRandom.index()] += 1;
                    }
                }
            }
            DropRule::Semantic(bins) => {
                let mut decide = |i: usize, v: f64, this: &mut DropPoint| {
                    let t = this.thresholds[bins.bin(v)];
                    if binding && !this.window_keeps(batch, i, 1.0) {
                        this.dropped[DropReason::ShedWindow.index()] += 1;
                    } else if t == u64::MAX || (t > 0 && this.rng.next_u64() < t) {
                        sel.push(i as u32);
                    } else {
                        this.dropped[DropReason::ShedSemantic.index()] += 1;
                    }
                };
                match &batch.columns[bins.column] {
                    Column::Float(v) => {
                        for (i, &x) in v.iter().enumerate() {
                            decide(i, x, self);
                        }
                    }
                    Column::Int(v) => {
                        for (i, &x) in v.iter().enumerate() {
                            decide(i, x as f64, self);
                        }
                    }
                    _ => (0..n).for_each(|i| decide(i, f64::NAN, self)),
                }
            }
            DropRule::Keys { keep, key_columns } => {
                let t = threshold(*keep);
                for i in 0..n {
                    if binding && !self.window_keeps(batch, i, 1.0) {
                        self.dropped[DropReason::ShedWindow.index()] += 1;
                    } else if window::key_hash(self.seed, batch, i, key_columns) < t {
                        sel.push(i as u32);
                    } else {
                        self.dropped[DropReason::ShedWindow.index()] += 1;
                    }
                }
            }
            DropRule::Window(w) => self.apply_window(batch, w.keep, sel),
        }
        self.rule = rule;
        if self.window.is_some() {
            self.prune_windows(batch);
        }
        if fast || sel.len() == n {
            sel.clear();
            return None;
        }
        Some(())
    }

    fn random_keep_of(&self, rule: &DropRule) -> f64 {
        match rule {
            DropRule::Random { keep } => keep.clamp(0.0, 1.0),
            _ => 1.0,
        }
    }
}

#[cfg(test)]
mod tests;
