//! One stream batch as every worker receives it (`Dispatched`): the batch, shared, and
//! its split by shard (`Split`), computed once per batch by the first worker to read it
//! (without a lock: workers that reach it together each compute it, never wait) and then
//! read by every worker. Each row's key is hashed once per batch, not once per worker,
//! into the shard column's owners; the stream's time prefix is built once (not at all for
//! an in-order batch); each worker picks its rows from the owners (one branch-free pass)
//! and ingests them (`workers::offer`).
//!
//! Invariant: every row has exactly one owner, so the workers' selections partition the
//! batch, each ascending; the time prefix is, at each row, the stream's largest time so
//! far (from the largest time before the batch), exactly what one engine reading every
//! row would see.

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

/// A routed batch's owner worker of each row and the stream's event time at each row.
#[derive(Debug)]
pub struct Split {
    /// Per row of the batch, the worker that owns its key's shard: each worker builds its
    /// own selection from it (`rows_of`), in parallel, without hashing again.
    owners: Vec<u16>,
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
    pub fn compute(batch: &Batch, by: SplitBy<'_>, high: (i64, Nanos)) -> Split {
        let times: &[i64] = match by.time {
            TimeSource::Column(c) => match &batch.columns[c] {
                Column::Int(v) => v,
                other => unreachable!("time column {other:?}"),
            },
            TimeSource::Arrival => &batch.arrival,
        };
        // An in-order batch (times rising strictly from above the stream's largest so
        // far) needs no prefix: each row's own time is the largest so far.
        let rising = times.first().is_some_and(|&t| t > high.0)
            && (times.iter().zip(&times[1..])).fold(true, |ok, (a, b)| ok & (a < b));
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
        let owner = |x: u64| by.owner[(x & mask) as usize];
        let owners = match &batch.columns[by.column] {
            Column::Int(v) => v.iter().map(|&x| owner(key_hash_int(x))).collect(),
            Column::Float(v) => v.iter().map(|&x| owner(key_hash_float(x))).collect(),
            Column::Bool(v) => v
                .iter()
                .map(|&x| owner(key_hash_int(i64::from(x))))
                .collect(),
            Column::Str(v) => v.iter().map(|x| owner(key_hash_str(x))).collect(),
        };
        Split {
            owners,
            time: Arc::new(RoutedTime { prefix, tail: h }),
        }
    }

    /// Writes worker `w`'s rows of the batch, ascending, into `sel` (branch-free: which
    /// worker owns a row is a coin toss the branch predictor cannot learn).
    pub fn rows_of(&self, w: usize, sel: &mut Vec<u32>) {
        sel.clear();
        sel.resize(self.owners.len() + 1, 0);
        let mut j = 0;
        for (i, &o) in self.owners.iter().enumerate() {
            sel[j] = i as u32;
            j += usize::from(o as usize == w);
        }
        sel.truncate(j);
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
            };
            let split = Split::compute(&b, by, (i64::MIN, 0));
            let mut shards = Vec::new();
            shards_of(&b, 0, 64, &mut shards);
            let mut seen = vec![0; 500];
            let mut rows = Vec::new();
            for w in 0..workers {
                split.rows_of(w, &mut rows);
                assert!(rows.windows(2).all(|p| p[0] < p[1]), "ascending");
                for &r in &rows {
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
        };
        let split = Split::compute(&b, by, (6, 42));
        let p: Vec<(i64, Nanos)> = split.time().prefix.clone();
        assert_eq!(p, vec![(6, 42), (6, 42), (9, 102), (9, 102)]);
        assert_eq!(split.time().tail, (9, 102));
        // In order, from above the stream's time so far: no prefix, each row's own time.
        let b = batch(&[1, 2, 3], &[7, 8, 10]);
        let split = Split::compute(&b, by, (6, 42));
        assert!(split.time().prefix.is_empty());
        assert_eq!(split.time().tail, (10, 102));
        // A tie, or a time not above the stream's, needs the prefix.
        for (times, high) in [([7, 7, 10], (6, 42)), ([7, 8, 10], (7, 42))] {
            let split = Split::compute(&batch(&[1, 2, 3], &times), by, high);
            assert_eq!(split.time().prefix.len(), 3);
        }
    }
}
