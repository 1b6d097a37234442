//! Semantic drop: realise a delivered percentage by dropping a value histogram's
//! lowest-utility bins first (free bins, of utility 0, before any other), with one partial
//! keep fraction at the boundary. Invariant: no bin loses any tuple while a bin of lower
//! utility keeps any, and the expected delivered share equals the target.

use crate::qos::UtilityCurve;
use crate::qos::ValueHistogram;

use super::plan::SemanticDrop;

/// Utilities closer than this are one group: they share one keep fraction, so equal-value
/// ranges are thinned evenly rather than one after another by index.
const TIE: f64 = 1e-12;
/// A residual drop share below this is rounding, not a request to drop.
const EPS: f64 = 1e-12;

/// Bins in ascending utility (ties by index), cut into groups of equal utility:
/// `(first position, end position)` into the returned order.
fn groups(hist: &ValueHistogram) -> (Vec<usize>, Vec<(usize, usize)>) {
    let u = hist.utilities();
    let mut order: Vec<usize> = (0..u.len()).collect();
    order.sort_by(|&a, &b| u[a].total_cmp(&u[b]).then(a.cmp(&b)));
    let mut spans = Vec::new();
    let mut i = 0;
    while i < order.len() {
        let u0 = u[order[i]];
        let mut j = i + 1;
        while j < order.len() && u[order[j]] - u0 <= TIE {
            j += 1;
        }
        spans.push((i, j));
        i = j;
    }
    (order, spans)
}

/// Keep probability per bin that delivers `delivered_percent` (clamped to `[0, 100]`) of
/// the histogram's tuples, dropping lowest utility first. With no counts at all every bin
/// keeps `delivered_percent / 100`: nothing is known about the values, so drop uniformly.
pub fn semantic_keeps(hist: &ValueHistogram, delivered_percent: f64) -> Vec<f64> {
    let target = if delivered_percent.is_nan() {
        0.0
    } else {
        delivered_percent.clamp(0.0, 100.0) / 100.0
    };
    let freq = hist.frequencies();
    if freq.iter().all(|&f| f == 0.0) {
        return vec![target; freq.len()];
    }
    let (order, spans) = groups(hist);
    let mut keep = vec![1.0; freq.len()];
    let mut to_drop = 1.0 - target;
    for (a, b) in spans {
        let members = &order[a..b];
        let f: f64 = members.iter().map(|&i| freq[i]).sum();
        let k = if to_drop <= EPS {
            1.0
        } else if f <= to_drop {
            to_drop -= f;
            0.0
        } else {
            let k = 1.0 - to_drop / f;
            to_drop = 0.0;
            k
        };
        for &i in members {
            keep[i] = k;
        }
    }
    keep
}

/// The loss-tolerance graph a semantic drop induces (points ascending in percent
/// delivered): utility delivered at `x` % is `sum u_k f_k k_k / sum u_k f_k` with the keeps
/// of `semantic_keeps(x)`. It is flat where free bins go, then steepens. `None` when the
/// histogram has no counts; constant 1 when every counted tuple has utility 0 (nothing of
/// value can be lost).
pub fn derived_curve(hist: &ValueHistogram) -> Option<UtilityCurve> {
    let freq = hist.frequencies();
    if freq.iter().all(|&f| f == 0.0) {
        return None;
    }
    let u = hist.utilities();
    let worth: f64 = freq.iter().zip(u).map(|(f, u)| f * u).sum();
    if worth <= 0.0 {
        return Some(UtilityCurve {
            points: vec![(100.0, 1.0)],
        });
    }
    let (order, spans) = groups(hist);
    // Walk down from everything delivered, removing groups lowest utility first.
    let mut points = vec![(100.0, 1.0)];
    let (mut x, mut util) = (100.0, 1.0);
    for (a, b) in spans {
        let members = &order[a..b];
        let f: f64 = members.iter().map(|&i| freq[i]).sum();
        if f <= 0.0 {
            continue;
        }
        x -= 100.0 * f;
        util -= u[order[a]] * f / worth;
        points.push((x.max(0.0), util.clamp(0.0, 1.0)));
    }
    // Everything removed: nothing delivered, no utility; pin the end against rounding.
    if let Some(last) = points.last_mut() {
        *last = (0.0, 0.0);
    }
    points.reverse();
    // x must strictly increase; rounding can make tiny groups collapse onto a neighbour.
    points.dedup_by(|b, a| b.0 <= a.0);
    Some(UtilityCurve { points })
}

/// The drop for `column` that delivers `delivered_percent` of the histogram's tuples.
pub fn semantic_drop(column: usize, hist: &ValueHistogram, delivered_percent: f64) -> SemanticDrop {
    let keep = semantic_keeps(hist, delivered_percent);
    let freq = hist.frequencies();
    let delivered = if freq.iter().all(|&f| f == 0.0) {
        keep.first().copied().unwrap_or(1.0)
    } else {
        freq.iter().zip(&keep).map(|(f, k)| f * k).sum()
    };
    SemanticDrop {
        column,
        binning: hist.binning(),
        keep,
        delivered,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hist(points: &[(f64, f64)], bins: usize, counts: &[u32]) -> ValueHistogram {
        let mut h = ValueHistogram::new(
            &UtilityCurve {
                points: points.to_vec(),
            },
            bins,
        );
        for (i, &c) in counts.iter().enumerate() {
            for _ in 0..c {
                h.record_bin(i);
            }
        }
        h
    }

    #[test]
    fn free_bins_go_first_then_the_boundary_is_partial() {
        // Utility 0 below 10, rising to 1 at 20; bins: under, [10,15), [15,20), over.
        let h = hist(&[(10.0, 0.0), (20.0, 1.0)], 2, &[4, 2, 2, 2]);
        assert_eq!(h.utilities(), &[0.0, 0.25, 0.75, 1.0]);
        // 40 % of tuples are free: delivering 60 % drops exactly the free bin.
        assert_eq!(semantic_keeps(&h, 60.0), vec![0.0, 1.0, 1.0, 1.0]);
        // Delivering 50 % also drops half of the next bin.
        let k = semantic_keeps(&h, 50.0);
        assert_eq!(k[0], 0.0);
        assert!((k[1] - 0.5).abs() < 1e-12);
        assert_eq!(&k[2..], &[1.0, 1.0]);
        let d = semantic_drop(3, &h, 50.0);
        assert!((d.delivered - 0.5).abs() < 1e-12);
        assert_eq!(d.keep_probability(f64::NAN), 0.0);
        assert_eq!(d.keep_probability(25.0), 1.0);
    }

    #[test]
    fn derived_curve_is_flat_over_free_bins() {
        let h = hist(&[(10.0, 0.0), (20.0, 1.0)], 2, &[4, 2, 2, 2]);
        let c = derived_curve(&h).unwrap();
        // worth = 0.2 * (0.25 + 0.75 + 1) = 0.4.
        assert_eq!(c.at(100.0), 1.0);
        assert!((c.at(60.0) - 1.0).abs() < 1e-12);
        assert!((c.at(40.0) - (1.0 - 0.05 / 0.4)).abs() < 1e-12);
        assert!((c.at(20.0) - 0.2 / 0.4).abs() < 1e-12);
        assert_eq!(c.at(0.0), 0.0);
    }

    #[test]
    fn without_counts_the_drop_is_uniform_and_there_is_no_curve() {
        let h = hist(&[(10.0, 0.0), (20.0, 1.0)], 2, &[]);
        assert_eq!(semantic_keeps(&h, 30.0), vec![0.3; 4]);
        assert!(derived_curve(&h).is_none());
        assert!((semantic_drop(0, &h, 30.0).delivered - 0.3).abs() < 1e-12);
    }

    #[test]
    fn equal_utilities_are_thinned_together() {
        let h = hist(&[(5.0, 0.5)], 3, &[1, 1, 1, 1, 1]);
        assert!(
            semantic_keeps(&h, 40.0)
                .iter()
                .all(|&k| (k - 0.4).abs() < 1e-12)
        );
    }

    /// Curves with flat stretches and zeros, so ties and free bins are common.
    fn curves() -> impl Strategy<Value = Vec<(f64, f64)>> {
        prop::collection::vec(
            (
                0.1f64..10.0,
                prop_oneof![Just(0.0), Just(0.5), Just(1.0), 0.0f64..=1.0],
            ),
            1..6,
        )
        .prop_map(|steps| {
            let mut x = -5.0;
            steps
                .into_iter()
                .map(|(dx, u)| {
                    x += dx;
                    (x, u)
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn never_drops_higher_utility_while_keeping_lower(
            points in curves(),
            bins in 1usize..12,
            counts in prop::collection::vec(0u32..20, 14),
            cursor in 0.0f64..=100.0,
        ) {
            // With no counts at all the keeps are uniform by design (`semantic_keeps`):
            // nothing is known about the values. The order by utility applies once some are.
            prop_assume!(counts[..bins + 2].iter().any(|&c| c > 0));
            let h = hist(&points, bins, &counts[..bins + 2]);
            let keep = semantic_keeps(&h, cursor);
            let u = h.utilities();
            for a in 0..keep.len() {
                for b in 0..keep.len() {
                    if u[a] < u[b] - TIE && keep[b] < 1.0 {
                        prop_assert!(
                            keep[a] == 0.0,
                            "bin {b} (u={}) loses tuples while bin {a} (u={}) keeps {}",
                            u[b], u[a], keep[a]
                        );
                    }
                }
            }
            prop_assert!(keep.iter().all(|&k| (0.0..=1.0).contains(&k)));
            let freq = h.frequencies();
            if freq.iter().any(|&f| f > 0.0) {
                let delivered: f64 = freq.iter().zip(&keep).map(|(f, k)| f * k).sum();
                prop_assert!((delivered - cursor / 100.0).abs() < 1e-9);
                // The derived curve is the utility share the keeps deliver.
                let worth: f64 = freq.iter().zip(u).map(|(f, u)| f * u).sum();
                if worth > 0.0 {
                    let kept: f64 =
                        freq.iter().zip(u).zip(&keep).map(|((f, u), k)| f * u * k).sum();
                    let curve = derived_curve(&h).unwrap();
                    prop_assert!((curve.at(cursor) - kept / worth).abs() < 1e-9);
                }
            }
        }
    }
}
