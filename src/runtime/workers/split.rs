//! One stream batch as every worker receives it (`Dispatched`): the batch, shared, and
//! its split by shard (`Split`), computed once per batch by the first worker to read it
//! (without a lock: workers that reach it together each compute it, never wait) and then
//! read by every worker. Each row's key is hashed once per batch, not once per
//! worker, the stream's time prefix is built once, and no worker copies rows: each
//! queues the shared batch with its own rows as a selection (`Engine::ingest_selected`).
//!
//! Invariant: a split's row lists partition the batch's rows among the workers, each list
//! ascending; its time prefix is, at each row, the stream's largest time so far (from the
//! largest time before the batch), exactly what one engine reading every row would see.

use std::sync::{Arc, OnceLock};

use crate::core::batch::{Batch, Column};
use crate::core::plan::TimeSource;
use crate::core::schema::Nanos;
use crate::core::shard::{RoutedTime, key_hash_float, key_hash_int, key_hash_str};

/// A batch of one stream on its way to every worker. Make a fresh one per batch sent:
/// its split is computed once, for the stream state of the first worker that reads it.
#[derive(Debug)]
pub struct Dispatched {
    pub batch: Arc<Batch>,
    split: OnceLock<Split>,
}

/// A routed batch's rows per worker and the stream's event time at each row.
#[derive(Debug)]
pub struct Split {
    /// The batch's row indices grouped by owner worker, ascending within each group.
    rows: Vec<u32>,
    /// Worker `w`'s rows are `rows[starts[w]..starts[w + 1]]`.
    starts: Vec<u32>,
    /// Per row of the batch (every worker's), the stream's largest time so far and its
    /// arrival; at the end, the batch's. Shared by every worker's queued item.
    time: Arc<RoutedTime>,
}

/// Where a routed stream's rows go: its key column, the time its windows read, and the
/// owner worker of each virtual shard (a power of two of them).
#[derive(Clone, Copy, Debug)]
pub struct SplitBy<'a> {
    pub column: usize,
    pub time: TimeSource,
    pub owner: &'a [u16],
    pub workers: usize,
}

impl Dispatched {
    pub fn new(batch: Arc<Batch>) -> Dispatched {
        Dispatched {
            batch,
            split: OnceLock::new(),
        }
    }

    /// The batch's split, computed by `make` if no worker has yet. Nobody waits: two
    /// workers that reach a batch together both compute it (the same split, from the same
    /// stream state) and the first one stored is kept.
    pub fn split_with(&self, make: impl FnOnce() -> Split) -> &Split {
        if let Some(split) = self.split.get() {
            return split;
        }
        let _ = self.split.set(make());
        self.split.get().expect("a split was just stored")
    }
}

impl From<Batch> for Dispatched {
    fn from(batch: Batch) -> Dispatched {
        Dispatched::new(Arc::new(batch))
    }
}

impl Split {
    /// Splits `batch` as `by` says, the stream's largest time before it being `high`.
    /// `owners` is scratch space (one entry per row), kept by the caller between batches.
    pub fn compute(
        batch: &Batch,
        by: SplitBy<'_>,
        high: (i64, Nanos),
        owners: &mut Vec<u16>,
    ) -> Split {
        let times: &[i64] = match by.time {
            TimeSource::Column(c) => match &batch.columns[c] {
                Column::Int(v) => v,
                other => unreachable!("time column {other:?}"),
            },
            TimeSource::Arrival => &batch.arrival,
        };
        // An in-order batch (times rising strictly from above the stream's largest so
        // far) needs no prefix: each row's own time is the largest so far.
        let rising =
            times.first().is_some_and(|&t| t > high.0) && times.windows(2).all(|w| w[0] < w[1]);
        let mut prefix = Vec::new();
        let mut h = high;
        if rising {
            let last = times.len() - 1;
            h = (times[last], batch.arrival[last]);
        } else {
            prefix.reserve_exact(times.len());
            for (&t, &a) in times.iter().zip(&batch.arrival) {
                if t > h.0 {
                    h = (t, a);
                }
                prefix.push(h);
            }
        }
        let mask = (by.owner.len() - 1) as u64;
        // Each row's owner, counted per worker as it goes (for the counting sort below).
        let mut starts = vec![0u32; by.workers + 1];
        owners.clear();
        let mut put = |x: u64| {
            let o = by.owner[(x & mask) as usize];
            starts[o as usize + 1] += 1;
            owners.push(o);
        };
        match &batch.columns[by.column] {
            Column::Int(v) => v.iter().for_each(|&x| put(key_hash_int(x))),
            Column::Float(v) => v.iter().for_each(|&x| put(key_hash_float(x))),
            Column::Bool(v) => v.iter().for_each(|&x| put(key_hash_int(i64::from(x)))),
            Column::Str(v) => v.iter().for_each(|x| put(key_hash_str(x))),
        }
        // A counting sort by owner: stable, so each worker's rows stay ascending.
        for w in 0..by.workers {
            starts[w + 1] += starts[w];
        }
        let mut next = starts.clone();
        let mut rows = vec![0u32; owners.len()];
        for (i, &o) in owners.iter().enumerate() {
            let at = &mut next[o as usize];
            rows[*at as usize] = i as u32;
            *at += 1;
        }
        Split {
            rows,
            starts,
            time: Arc::new(RoutedTime { prefix, tail: h }),
        }
    }

    /// Worker `w`'s rows of the batch, ascending.
    pub fn rows_of(&self, w: usize) -> &[u32] {
        &self.rows[self.starts[w] as usize..self.starts[w + 1] as usize]
    }

    /// The stream's event time at each row of the batch and at its end.
    pub fn time(&self) -> &Arc<RoutedTime> {
        &self.time
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::schema::{DataType, Scalar};
    use crate::core::shard::{ShardMap, shards_of};

    fn batch(keys: &[i64], times: &[i64]) -> Batch {
        let mut b = Batch::new(&[DataType::Int, DataType::Int], 0);
        for (i, (&k, &t)) in keys.iter().zip(times).enumerate() {
            b.push_row(100 + i as i64, &[Scalar::Int(k), Scalar::Int(t)]);
        }
        b
    }

    #[test]
    fn rows_are_partitioned_by_owner_in_order() {
        let keys: Vec<i64> = (0..500).map(|i| (i * 7919) % 113).collect();
        let times: Vec<i64> = (0..500).collect();
        let b = batch(&keys, &times);
        for workers in [2, 3, 4] {
            let map = ShardMap::new(64, workers);
            let owner: Vec<u16> = (0..64).map(|s| map.owner(s) as u16).collect();
            let by = SplitBy {
                column: 0,
                time: TimeSource::Column(1),
                owner: &owner,
                workers,
            };
            let split = Split::compute(&b, by, (i64::MIN, 0), &mut Vec::new());
            let mut shards = Vec::new();
            shards_of(&b, 0, 64, &mut shards);
            let mut seen = vec![0; 500];
            for w in 0..workers {
                let rows = split.rows_of(w);
                assert!(rows.windows(2).all(|p| p[0] < p[1]), "ascending");
                for &r in rows {
                    assert_eq!(map.owner(shards[r as usize] as usize), w);
                    seen[r as usize] += 1;
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "each row once");
        }
    }

    #[test]
    fn the_time_prefix_runs_over_every_row_from_the_last_batch() {
        let b = batch(&[1, 2, 3, 4], &[5, 3, 9, 7]);
        let owner = vec![0u16, 1];
        let by = SplitBy {
            column: 0,
            time: TimeSource::Column(1),
            owner: &owner,
            workers: 2,
        };
        let split = Split::compute(&b, by, (6, 42), &mut Vec::new());
        let p: Vec<(i64, Nanos)> = split.time().prefix.clone();
        assert_eq!(p, vec![(6, 42), (6, 42), (9, 102), (9, 102)]);
        assert_eq!(split.time().tail, (9, 102));
        // In order, from above the stream's time so far: no prefix, each row's own time.
        let b = batch(&[1, 2, 3], &[7, 8, 10]);
        let split = Split::compute(&b, by, (6, 42), &mut Vec::new());
        assert!(split.time().prefix.is_empty());
        assert_eq!(split.time().tail, (10, 102));
        // A tie, or a time not above the stream's, needs the prefix.
        for (times, high) in [([7, 7, 10], (6, 42)), ([7, 8, 10], (7, 42))] {
            let split = Split::compute(&batch(&[1, 2, 3], &times), by, high, &mut Vec::new());
            assert_eq!(split.time().prefix.len(), 3);
        }
    }
}
