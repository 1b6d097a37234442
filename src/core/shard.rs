//! Key shards: a tuple's shard is a hash of one key column masked to a power-of-two
//! number of virtual shards, and a `ShardFilter` keeps the rows of the shards one worker
//! owns. The hash depends only on the value (never on the worker count), so a key lands on
//! the same shard at any number of workers and every group lives on exactly one worker.

use super::batch::{Batch, Column};
use super::datum::float_key_bits;
use super::schema::Nanos;

/// The default number of virtual shards (a power of two).
pub const DEFAULT_SHARDS: usize = 64;

/// Mixes 64 bits (splitmix64's finaliser): neighbouring keys spread over all shards.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// FNV-1a over the bytes of a string key, then mixed.
fn hash_str(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    mix(h)
}

/// The hash of an integer (or boolean) key; its shard is the low bits.
#[inline]
pub fn key_hash_int(x: i64) -> u64 {
    mix(x as u64)
}

/// The hash of a float key: equal keys as the window operator groups them (-0.0 with
/// 0.0, every NaN together) hash alike.
#[inline]
pub fn key_hash_float(x: f64) -> u64 {
    mix(float_key_bits(x))
}

/// The hash of a string key.
#[inline]
pub fn key_hash_str(s: &str) -> u64 {
    hash_str(s)
}

/// Writes the shard (in `0..shards`, `shards` a power of two) of every row's value of
/// `column` into `out`. Floats hash as the window operator groups them (-0.0 with 0.0,
/// every NaN together), so one group never spans two shards.
pub fn shards_of(batch: &Batch, column: usize, shards: usize, out: &mut Vec<u32>) {
    debug_assert!(shards.is_power_of_two());
    let mask = (shards - 1) as u64;
    out.clear();
    match &batch.columns[column] {
        Column::Int(v) => out.extend(v.iter().map(|&x| (mix(x as u64) & mask) as u32)),
        Column::Float(v) => out.extend(v.iter().map(|&x| (mix(float_key_bits(x)) & mask) as u32)),
        Column::Bool(v) => out.extend(v.iter().map(|&x| (mix(x as u64) & mask) as u32)),
        // A string is hashed once per dictionary value, then looked up per row by code.
        Column::Str(v) if v.per_value_pays(v.len()) => {
            let by_code: Vec<u32> = (v.dict().values().iter())
                .map(|x| (hash_str(x) & mask) as u32)
                .collect();
            out.extend(v.codes().iter().map(|&c| by_code[c as usize]))
        }
        Column::Str(v) => out.extend(v.iter().map(|x| (hash_str(x) & mask) as u32)),
    }
}

/// Which worker owns each virtual shard: shard `s` belongs to worker `s % workers` unless
/// moved. Fixed for a run (rebalancing would move whole shards at window boundaries).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardMap {
    owner: Vec<u16>,
}

impl ShardMap {
    /// `shards` virtual shards (a power of two, at least `workers`) spread round-robin over
    /// `workers` workers.
    pub fn new(shards: usize, workers: usize) -> ShardMap {
        assert!(shards.is_power_of_two() && workers >= 1 && workers <= shards);
        ShardMap {
            owner: (0..shards).map(|s| (s % workers) as u16).collect(),
        }
    }

    pub fn shards(&self) -> usize {
        self.owner.len()
    }

    pub fn owner(&self, shard: usize) -> usize {
        self.owner[shard] as usize
    }

    /// The filter keeping the rows of `worker`'s shards, keyed on `column`.
    pub fn filter(&self, column: usize, worker: usize) -> ShardFilter {
        ShardFilter {
            column,
            owned: self.owner.iter().map(|&o| o as usize == worker).collect(),
        }
    }
}

/// Keeps the rows whose key column hashes to an owned shard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardFilter {
    /// The key column hashed (the query's first plain-column GROUP BY key).
    pub column: usize,
    /// Per virtual shard: whether this worker owns it.
    pub owned: Vec<bool>,
}

impl ShardFilter {
    /// Keeps in `sel` (ascending row indices of `batch`) the rows this worker owns. Only
    /// the rows in `sel` are hashed. Branch-free: which worker owns a row is a coin toss
    /// the branch predictor cannot learn.
    pub fn retain(&self, batch: &Batch, sel: &mut Vec<u32>) {
        let mask = (self.owned.len() - 1) as u64;
        let owned = &self.owned;
        fn compact(sel: &mut Vec<u32>, mut keep: impl FnMut(usize) -> bool) {
            let mut j = 0;
            for k in 0..sel.len() {
                let i = sel[k];
                sel[j] = i;
                j += keep(i as usize) as usize;
            }
            sel.truncate(j);
        }
        let own = |h: u64| owned[(h & mask) as usize];
        match &batch.columns[self.column] {
            Column::Int(v) => compact(sel, |i| own(mix(v[i] as u64))),
            Column::Float(v) => compact(sel, |i| own(mix(float_key_bits(v[i])))),
            Column::Bool(v) => compact(sel, |i| own(mix(v[i] as u64))),
            Column::Str(v) if v.per_value_pays(sel.len()) => {
                let by_code: Vec<bool> = (v.dict().values().iter())
                    .map(|x| own(hash_str(x)))
                    .collect();
                let codes = v.codes();
                compact(sel, |i| by_code[codes[i] as usize])
            }
            Column::Str(v) => compact(sel, |i| own(hash_str(&v[i]))),
        }
    }
}

/// The event time a worker's rows of a routed batch cannot see: routed by shard, a
/// worker keeps only its rows, and with them, per row, the largest time (and its
/// arrival) among all the stream's rows up to it, whichever worker got them, and `tail`,
/// that largest time at the end of the batch. The window operator moves its watermark by
/// these, so windows close and rows are late exactly as on one worker.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoutedTime {
    /// Per row of the routed batch: (largest time so far, its arrival).
    pub prefix: Vec<(i64, Nanos)>,
    /// The largest time over the stream at the end of the batch, and its arrival.
    pub tail: (i64, Nanos),
}

impl RoutedTime {
    /// The entries of the rows `sel` (ascending) keep, for a batch a drop point cut.
    pub fn gather(&self, sel: &[u32]) -> RoutedTime {
        RoutedTime {
            prefix: sel.iter().map(|&i| self.prefix[i as usize]).collect(),
            tail: self.tail,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::schema::DataType;

    #[test]
    fn every_row_is_owned_by_exactly_one_worker() {
        let mut b = Batch::new(&[DataType::Int], 0);
        for k in 0..1000i64 {
            b.push_row(0, &[crate::core::schema::Scalar::Int(k)]);
        }
        for workers in [1, 2, 3, 4] {
            let map = ShardMap::new(64, workers);
            let mut seen = vec![0u32; 1000];
            let mut total = 0;
            for w in 0..workers {
                let mut sel: Vec<u32> = (0..1000).collect();
                map.filter(0, w).retain(&b, &mut sel);
                let mut shards = Vec::new();
                shards_of(&b, 0, 64, &mut shards);
                assert!(
                    sel.iter()
                        .all(|&i| map.owner(shards[i as usize] as usize) == w)
                );
                total += sel.len();
                sel.iter().for_each(|&i| seen[i as usize] += 1);
            }
            assert_eq!(total, 1000);
            assert!(seen.iter().all(|&n| n == 1));
        }
        // Keys spread: with 2 workers neither gets less than 40 %.
        let mut sel: Vec<u32> = (0..1000).collect();
        ShardMap::new(64, 2).filter(0, 0).retain(&b, &mut sel);
        assert!((400..=600).contains(&sel.len()), "{}", sel.len());
    }

    #[test]
    fn equal_floats_share_a_shard() {
        let mut b = Batch::new(&[DataType::Float], 0);
        for x in [0.0, -0.0, f64::NAN, -f64::NAN] {
            b.push_row(0, &[crate::core::schema::Scalar::Float(x)]);
        }
        let mut s = Vec::new();
        shards_of(&b, 0, 64, &mut s);
        assert_eq!(s[0], s[1]);
        assert_eq!(s[2], s[3]);
    }
}
