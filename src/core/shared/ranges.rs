//! Range conjuncts over one column (`x > c`, `x >= c`, `x < c`, `x <= c`): the members of
//! each comparison kind sorted by threshold, and their routing. A batch is routed member by
//! member: the rows that pass the loosest threshold are gathered once (value and row),
//! then each member, from the loosest threshold to the strictest, keeps those of them that
//! pass its own and takes them in one sequential write. A row that passes a threshold
//! passes every looser one, so each member's rows are found among its looser neighbour's:
//! a batch costs one comparison per row plus one step per (member, matching row), and each
//! member's row list is written at once instead of every list row by row (with a thousand
//! members, a thousand scattered tails per row).
//!
//! Invariant: `route` appends to each member's row list, in ascending order, exactly the
//! rows whose value passes its comparison (a NaN passes none).

use super::extract::Cmp;

/// Member queries of one comparison kind, sorted by threshold (ascending).
#[derive(Debug, Default)]
struct Ranges<T> {
    keys: Vec<T>,
    slots: Vec<u32>,
}

impl<T: PartialOrd + Copy> Ranges<T> {
    fn build(mut v: Vec<(T, u32)>) -> Ranges<T> {
        // Keys are never NaN (`extract` keeps NaN constants out), so this order is total.
        v.sort_by(|a, b| a.0.partial_cmp(&b.0).expect("no NaN thresholds"));
        Ranges {
            keys: v.iter().map(|p| p.0).collect(),
            slots: v.iter().map(|p| p.1).collect(),
        }
    }

    /// Appends to each member's list the rows of `values` (read through `conv`) for which
    /// `holds(value, threshold)`. `ascending`: the thresholds go from loosest to strictest
    /// in ascending order (`>`, `>=`), else in descending order (`<`, `<=`). `cand` is
    /// scratch.
    fn route<S: Copy>(
        &self,
        values: &[S],
        conv: impl Fn(S) -> T,
        holds: impl Fn(T, T) -> bool,
        ascending: bool,
        cand: &mut Vec<(T, u32)>,
        rows: &mut [Vec<u32>],
    ) {
        let (Some(&lo), Some(&hi)) = (self.keys.first(), self.keys.last()) else {
            return;
        };
        let loosest = if ascending { lo } else { hi };
        cand.clear();
        cand.extend(values.iter().enumerate().filter_map(|(i, &v)| {
            let x = conv(v);
            holds(x, loosest).then_some((x, i as u32))
        }));
        let n = self.keys.len();
        for j in 0..n {
            if cand.is_empty() {
                break;
            }
            let j = if ascending { j } else { n - 1 - j };
            let c = self.keys[j];
            cand.retain(|&(x, _)| holds(x, c));
            rows[self.slots[j] as usize].extend(cand.iter().map(|p| p.1));
        }
    }
}

/// The four range kinds over one column.
#[derive(Debug, Default)]
pub(super) struct RangeSet<T> {
    gt: Ranges<T>,
    ge: Ranges<T>,
    lt: Ranges<T>,
    le: Ranges<T>,
}

impl<T: PartialOrd + Copy> RangeSet<T> {
    pub(super) fn build(members: &[(Cmp, T, u32)]) -> RangeSet<T> {
        let of = |k: Cmp| {
            Ranges::build(
                members
                    .iter()
                    .filter(|m| m.0 == k)
                    .map(|m| (m.1, m.2))
                    .collect(),
            )
        };
        RangeSet {
            gt: of(Cmp::Gt),
            ge: of(Cmp::Ge),
            lt: of(Cmp::Lt),
            le: of(Cmp::Le),
        }
    }

    /// Appends each row of `values` (read through `conv`) to every member whose range
    /// holds it. `cand` is scratch.
    pub(super) fn route<S: Copy>(
        &self,
        values: &[S],
        conv: impl Fn(S) -> T + Copy,
        cand: &mut Vec<(T, u32)>,
        rows: &mut [Vec<u32>],
    ) {
        self.gt.route(values, conv, |x, c| x > c, true, cand, rows);
        self.ge.route(values, conv, |x, c| x >= c, true, cand, rows);
        self.lt.route(values, conv, |x, c| x < c, false, cand, rows);
        self.le
            .route(values, conv, |x, c| x <= c, false, cand, rows);
    }
}
