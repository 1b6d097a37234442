//! Where to drop: moves random drops shared by every query of a stream up to the stream's
//! drop point (Aurora's drop merging at a split). Invariant: each query's effective keep,
//! stream keep times its own keep, equals the keep it was planned.

/// Drop-point keeps after merging.
#[derive(Clone, Debug, PartialEq)]
pub struct Merged {
    /// Keep at each stream drop point.
    pub streams: Vec<f64>,
    /// Keep left at each query drop point.
    pub queries: Vec<f64>,
}

/// Merges per-query keeps at their streams. A stream takes `k_up = max k_q` over its queries
/// only if every one of them has a random drop (`mergeable`) with `k_q < 1`; each of them
/// then keeps `k_q / k_up`. Otherwise nothing moves: a query without a drop must not lose
/// tuples, and semantic and window drops are not uniform, so a random drop cannot stand in
/// for part of them. Queries whose stream is out of range keep their own drop.
pub fn merge_at_streams(
    streams: usize,
    query_streams: &[usize],
    keeps: &[f64],
    mergeable: &[bool],
) -> Merged {
    // A missing or NaN keep reads as 1: no drop asked for.
    let keep = |i: usize| {
        let k = keeps.get(i).copied().unwrap_or(1.0);
        if k.is_nan() { 1.0 } else { k.clamp(0.0, 1.0) }
    };
    // Per stream: max keep so far, and whether every query seen so far can merge.
    let mut up = vec![(0.0f64, true, false); streams];
    for (i, &s) in query_streams.iter().enumerate() {
        if let Some((max, all, any)) = up.get_mut(s) {
            *max = max.max(keep(i));
            *all &= mergeable.get(i).copied().unwrap_or(false) && keep(i) < 1.0;
            *any = true;
        }
    }
    let stream_keeps: Vec<f64> = up
        .iter()
        .map(|&(max, all, any)| if all && any { max } else { 1.0 })
        .collect();
    let queries = query_streams
        .iter()
        .enumerate()
        .map(|(i, &s)| match stream_keeps.get(s) {
            Some(&k_up) if k_up < 1.0 => {
                if k_up > 0.0 {
                    (keep(i) / k_up).min(1.0)
                } else {
                    1.0
                }
            }
            _ => keep(i),
        })
        .collect();
    Merged {
        streams: stream_keeps,
        queries,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_random_drops_move_up_to_the_stream() {
        // load-shedding.md 1.4 / A8: keeps 0.6 and 0.8 at a shared stream become 0.8
        // upstream, 0.75 and 1.0 on the branches.
        let m = merge_at_streams(1, &[0, 0], &[0.6, 0.8], &[true, true]);
        assert_eq!(m.streams, vec![0.8]);
        assert!((m.queries[0] - 0.75).abs() < 1e-12);
        assert_eq!(m.queries[1], 1.0);
        for (q, k) in [0.6, 0.8].iter().enumerate() {
            assert!((m.streams[0] * m.queries[q] - k).abs() < 1e-12);
        }
    }

    #[test]
    fn a_query_without_a_drop_keeps_the_stream_whole() {
        let m = merge_at_streams(2, &[0, 0, 1], &[0.6, 1.0, 0.5], &[true, true, true]);
        assert_eq!(m.streams, vec![1.0, 0.5]);
        assert_eq!(m.queries, vec![0.6, 1.0, 1.0]);
    }

    #[test]
    fn non_random_drops_stay_at_their_query() {
        let m = merge_at_streams(1, &[0, 0], &[0.6, 0.8], &[true, false]);
        assert_eq!(m.streams, vec![1.0]);
        assert_eq!(m.queries, vec![0.6, 0.8]);
    }

    #[test]
    fn dropping_everything_happens_at_the_stream() {
        let m = merge_at_streams(1, &[0, 0], &[0.0, 0.0], &[true, true]);
        assert_eq!(m.streams, vec![0.0]);
        assert_eq!(m.queries, vec![1.0, 1.0]);
        let silent = merge_at_streams(1, &[4], &[0.3], &[true]);
        assert_eq!(silent.streams, vec![1.0]);
        assert_eq!(silent.queries, vec![0.3]);
    }
}
