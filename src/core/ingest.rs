//! What happens to a batch on its way in, apart from queueing: value observers count the
//! fields semantic shedding plans from, and the shedder's rules for every drop point arrive
//! as one `DropRules`. Also the small counting helpers the engine's ingest path uses.

use super::batch::{Batch, Column};
use super::drop::{DropCounts, DropReason, DropRule, bin_of};
use super::operators::LossKind;
use super::rows::Rows;

/// What the shedder installs: a rule per stream and per query drop point, and optionally
/// a new input queue bound (tail-drop).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DropRules {
    pub streams: Vec<DropRule>,
    pub queries: Vec<DropRule>,
    pub queue_capacity: Option<usize>,
}

/// Counts of one numeric field's values in fixed bins, taken at ingest before any drop
/// (the value histogram semantic shedding plans from). Bin layout as `ValueBins`.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueObserver {
    pub column: usize,
    pub lo: f64,
    pub hi: f64,
    pub width: f64,
    /// `n + 2` counts: underflow, `n` bins, overflow.
    pub counts: Vec<u64>,
}

pub(super) fn mix(seed: u64, i: u64) -> u64 {
    let mut z = seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub(super) fn diff(a: &DropCounts, b: &DropCounts) -> DropCounts {
    std::array::from_fn(|i| a[i] - b[i])
}

pub(super) fn add(a: &mut DropCounts, b: &DropCounts) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// The share of the tuples that reached a drop point's value test and passed it: of
/// `offered`, those it dropped for window decisions never reached the test.
pub(super) fn share_left(offered: u64, dropped: &DropCounts) -> f64 {
    let semantic = dropped[DropReason::ShedSemantic.index()];
    let reached = offered.saturating_sub(dropped[DropReason::ShedWindow.index()]);
    if semantic == 0 || reached == 0 {
        1.0
    } else {
        1.0 - semantic as f64 / reached as f64
    }
}

pub(super) fn observe(o: &mut ValueObserver, batch: &Batch) {
    observe_rows(o, Rows::all(batch));
}

/// `observe` of the rows `rows` sees.
pub(super) fn observe_rows(o: &mut ValueObserver, rows: Rows<'_>) {
    let n = o.counts.len() - 2;
    let (lo, hi, width) = (o.lo, o.hi, o.width);
    let mut count = |x: f64| o.counts[bin_of(lo, hi, width, n, x)] += 1;
    match (&rows.batch.columns[o.column], rows.sel) {
        (Column::Float(v), None) => v.iter().for_each(|&x| count(x)),
        (Column::Float(v), Some(sel)) => sel.iter().for_each(|&i| count(v[i as usize])),
        (Column::Int(v), None) => v.iter().for_each(|&x| count(x as f64)),
        (Column::Int(v), Some(sel)) => sel.iter().for_each(|&i| count(v[i as usize] as f64)),
        _ => {}
    }
}

/// How a drop point's discards of one batch (`shed`, by reason) bear on the windows: `None`
/// if only semantic drops did it (each group's value share already says so); random drops
/// alone at `keep` in (0, 1) are scaled; window-aware drops alone lose whole groups; any
/// other loss is unscaled.
pub(super) fn loss_kind(shed: &DropCounts, keep: f64) -> Option<LossKind> {
    let total: u64 = shed.iter().sum();
    let only = |r: DropReason| shed[r.index()] == total;
    if total == 0 || only(DropReason::ShedSemantic) {
        None
    } else if only(DropReason::ShedRandom) && keep > 0.0 && keep < 1.0 {
        Some(LossKind::Scaled)
    } else if only(DropReason::ShedWindow) {
        Some(LossKind::WholeGroups)
    } else {
        Some(LossKind::Unscaled)
    }
}
