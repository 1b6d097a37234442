//! Drop point tests: decisions, counts, seeds and the sampling kernels.

use super::*;
use crate::core::plan::WindowSpec;
use crate::core::schema::{DataType, Scalar};

fn ints(vals: &[i64]) -> Batch {
    let mut b = Batch::new(&[DataType::Int], vals.len());
    for (i, v) in vals.iter().enumerate() {
        b.push_row(i as i64, &[Scalar::Int(*v)]);
    }
    b
}

proptest::proptest! {
    /// A random drop point keeps each tuple with probability `keep`: over 20,000
    /// tuples the kept share is within 5 standard deviations of it, and every drop is
    /// counted.
    #[test]
    fn random_drop_keeps_the_asked_share(keep in 0.0f64..=1.0, seed in 0u64..1000) {
        let vals: Vec<i64> = (0..20_000).collect();
        let mut p = DropPoint::new(seed);
        p.install(DropRule::Random { keep });
        let mut kept = 0usize;
        let mut sel = Vec::new();
        for chunk in vals.chunks(1000) {
            let b = ints(chunk);
            kept += match p.apply(&b, &mut sel) {
                None => b.len(),
                Some(()) => sel.len(),
            };
        }
        let n = vals.len() as f64;
        let sd = (n * keep * (1.0 - keep)).sqrt();
        proptest::prop_assert!((kept as f64 - n * keep).abs() <= 5.0 * sd + 1.0,
            "kept {} of {} at keep {}", kept, n, keep);
        proptest::prop_assert_eq!(p.dropped[DropReason::ShedRandom.index()], vals.len() as u64 - kept as u64);
    }
}

/// Below `SKIP_BELOW` the kept rows come from drawn gaps: every position of a batch
/// is kept at the asked rate (the first and last rows too), and keep 0 keeps nothing.
#[test]
fn gap_drawn_drops_keep_every_position_at_the_asked_rate() {
    let b = ints(&(0..512).collect::<Vec<_>>());
    let keep = 0.05;
    let mut p = DropPoint::new(7);
    p.install(DropRule::Random { keep });
    let mut sel = Vec::new();
    let mut by_eighth = [0u64; 8];
    let batches = 4000;
    for _ in 0..batches {
        p.apply(&b, &mut sel).expect("some rows dropped");
        assert!(sel.windows(2).all(|w| w[0] < w[1]), "ascending rows");
        for &i in &sel {
            by_eighth[i as usize / 64] += 1;
        }
    }
    let per = batches as f64 * 64.0;
    let sd = (per * keep * (1.0 - keep)).sqrt();
    for (e, &k) in by_eighth.iter().enumerate() {
        assert!(
            (k as f64 - per * keep).abs() < 5.0 * sd,
            "eighth {e}: {k} kept"
        );
    }
    let kept: u64 = by_eighth.iter().sum();
    assert_eq!(
        p.dropped[DropReason::ShedRandom.index()],
        batches * 512 - kept
    );
    p.install(DropRule::Random { keep: 0.0 });
    assert_eq!(p.apply(&b, &mut sel), Some(()));
    assert!(sel.is_empty());
}

#[test]
fn keep_all_and_full_keep_select_nothing() {
    let b = ints(&[1, 2, 3]);
    let mut sel = Vec::new();
    let mut p = DropPoint::new(1);
    assert!(p.apply(&b, &mut sel).is_none());
    p.install(DropRule::Random { keep: 1.0 });
    assert!(p.apply(&b, &mut sel).is_none());
    assert_eq!(p.dropped, [0; DropReason::COUNT]);
}

#[test]
fn key_rule_keeps_a_stable_nested_subset_of_keys() {
    let keys: Vec<i64> = (0..1000).collect();
    let kept_at = |keep: f64| -> Vec<i64> {
        let mut p = DropPoint::new(9);
        p.install(DropRule::Keys {
            keep,
            key_columns: vec![0],
        });
        let b = ints(&keys);
        let mut sel = Vec::new();
        match p.apply(&b, &mut sel) {
            None => keys.clone(),
            Some(()) => sel.iter().map(|&i| keys[i as usize]).collect(),
        }
    };
    let (small, large) = (kept_at(0.2), kept_at(0.5));
    // About the asked share of keys, every tuple of a kept key kept...
    assert!((150..250).contains(&small.len()), "{}", small.len());
    assert_eq!(kept_at(0.2), small, "the same keys every time");
    // ...and raising the keep only adds keys.
    assert!(small.iter().all(|k| large.contains(k)));
}

#[test]
fn semantic_bins_keep_by_value() {
    let b = ints(&[-5, 0, 5, 15, 25]);
    let mut p = DropPoint::new(1);
    // Bins: (-inf,0) [0,10) [10,20) [20,inf)
    p.install(DropRule::Semantic(ValueBins {
        column: 0,
        lo: 0.0,
        hi: 20.0,
        width: 10.0,
        keep: vec![0.0, 0.0, 1.0, 1.0],
    }));
    let mut sel = Vec::new();
    assert!(p.apply(&b, &mut sel).is_some());
    assert_eq!(sel, [3, 4]);
    assert_eq!(p.dropped[DropReason::ShedSemantic.index()], 3);
}

#[test]
fn window_rule_keeps_whole_groups() {
    // key = value % 4, time = arrival (row index ns); one window of 1000 ns.
    let vals: Vec<i64> = (0..400).map(|i| i % 4).collect();
    let b = ints(&vals);
    let mut p = DropPoint::new(9);
    p.install(DropRule::Window(WindowRule {
        keep: 0.5,
        time_column: None,
        window: WindowSpec::tumbling(1000),
        key_columns: vec![0],
    }));
    let mut sel = Vec::new();
    p.apply(&b, &mut sel);
    let kept_keys: std::collections::BTreeSet<i64> =
        sel.iter().map(|&i| vals[i as usize]).collect();
    for k in &kept_keys {
        assert_eq!(sel.iter().filter(|&&i| vals[i as usize] == *k).count(), 100);
    }
}

#[test]
fn window_rule_never_splits_a_float_group_the_window_operator_joins() {
    // 0.0 and -0.0 are one SQL group, and so are all NaNs: each pair is kept or
    // dropped together, whatever the seed (windows open after the first one).
    use crate::core::schema::{DataType, Scalar};
    let types = [DataType::Float];
    for seed in 0..64 {
        let mut b = Batch::new(&types, 8);
        let keys = [0.0, -0.0, f64::NAN, -f64::NAN, 1.5, 2.5];
        for (i, k) in keys.iter().enumerate() {
            b.push_row(1000 + i as i64, &[Scalar::Float(*k)]);
        }
        let mut p = DropPoint::new(seed);
        p.install(DropRule::Window(WindowRule {
            keep: 0.5,
            time_column: None,
            window: WindowSpec::tumbling(1000),
            key_columns: vec![0],
        }));
        // The first window is always kept whole; decide in the next one.
        let mut warm = Batch::new(&types, 1);
        warm.push_row(0, &[Scalar::Float(9.0)]);
        let mut sel = Vec::new();
        p.apply(&warm, &mut sel);
        let kept = match p.apply(&b, &mut sel) {
            None => vec![true; keys.len()],
            Some(()) => (0..keys.len()).map(|i| sel.contains(&(i as u32))).collect(),
        };
        assert_eq!(kept[0], kept[1], "seed {seed}: 0.0 and -0.0 split");
        assert_eq!(kept[2], kept[3], "seed {seed}: NaNs split");
    }
}
