//! A map from packed keys to `u32`s, fast for one key column: the newest tumbling window's
//! key cache (key to group slot for the groups of that one start, so in-order input finds
//! its group in a map of one window's keys that stays in cache), and the sliced windows'
//! key ids (`slices`). Invariant, as a window cache: it names only live slots of the start
//! it was filled for; whoever frees that start's slots clears it first.
//!
//! One int key column whose keys lie close together (user ids 1..1M, say) gets an array
//! indexed by key minus a base (`Dense`): a lookup is one read there, where a hash map of
//! a million keys costs two or three cache misses (a fifth of the engine thread on a
//! 1 M-key tumble). Keys outside the array's range stay in the map.

use rustc_hash::FxHashMap;

use crate::core::plan::MAX_GROUP_KEYS;

/// The direct-mapped front's largest size (entries of 16 bytes).
const DIRECT_MAX: usize = 4096;

/// Keys in the map before a dense array is considered (the direct front covers fewer).
const DENSE_FROM: usize = DIRECT_MAX / 2;

/// A dense array spans at most this many times the keys it holds (plus `DENSE_SLACK`):
/// 8 bytes an entry, against about 32 a key in the map.
const DENSE_SPAN: i128 = 3;
const DENSE_SLACK: i128 = 4096;

/// Entries a dense array may have at most (128 MB).
const DENSE_MAX: i128 = 1 << 24;

/// Keys `base..base + entries.len()`: each entry `(value, generation)`, present only with
/// the map's current generation (as the direct front's entries).
#[derive(Debug, Default)]
struct Dense {
    base: i64,
    entries: Vec<(u32, u32)>,
    /// Entries present.
    live: usize,
}

impl Dense {
    /// The entry index of `k`, if the array covers it.
    #[inline]
    fn at(&self, k: i64) -> Option<usize> {
        let i = (k as u64).wrapping_sub(self.base as u64);
        (i < self.entries.len() as u64).then_some(i as usize)
    }
}

#[derive(Debug, Default)]
pub(super) struct HotKeys {
    /// One key column (the common case): the key itself, hashed with one multiply.
    one: FxHashMap<i64, u32>,
    /// Several key columns: the packed key.
    many: FxHashMap<[i64; MAX_GROUP_KEYS], u32>,
    single: bool,
    /// One key column: a direct-mapped front of `one`, `(key, slot, generation)`, so a
    /// hit costs a multiply and two compares. An entry counts only if it carries the
    /// current generation: clearing bumps it instead of writing every entry. Sized to
    /// about twice `one`'s keys (at most `DIRECT_MAX`), so idle operators stay small.
    direct: Vec<(i64, u32, u32)>,
    generation: u32,
    /// One key column, keys close together: the array that holds the keys it covers.
    dense: Dense,
    /// The least and greatest key in `one` since it was last emptied.
    span: (i64, i64),
}

impl HotKeys {
    pub(super) fn new(keys: usize) -> HotKeys {
        HotKeys {
            single: keys == 1,
            generation: 1,
            span: (i64::MAX, i64::MIN),
            ..HotKeys::default()
        }
    }

    pub(super) fn clear(&mut self) {
        self.one.clear();
        self.many.clear();
        self.span = (i64::MAX, i64::MIN);
        self.dense.live = 0;
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // Wrapped: old entries could look current again.
            self.direct.fill((0, 0, 0));
            self.dense.entries.fill((0, 0));
            self.generation = 1;
        }
    }

    #[inline]
    fn index(&self, key: i64) -> usize {
        let bits = self.direct.len().trailing_zeros();
        ((key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
    }

    #[inline]
    pub(super) fn get(&mut self, key: &[i64; MAX_GROUP_KEYS]) -> Option<u32> {
        if !self.single {
            return self.many.get(key).copied();
        }
        self.get_one(key[0])
    }

    /// `get` of a one-column key.
    #[inline]
    pub(super) fn get_one(&mut self, k: i64) -> Option<u32> {
        debug_assert!(self.single);
        if let Some(i) = self.dense.at(k) {
            let (slot, generation) = self.dense.entries[i];
            return (generation == self.generation).then_some(slot);
        }
        if self.direct.is_empty() {
            return self.one.get(&k).copied();
        }
        let i = self.index(k);
        let (dk, slot, generation) = self.direct[i];
        if generation == self.generation && dk == k {
            return Some(slot);
        }
        let slot = self.one.get(&k).copied()?;
        self.direct[i] = (k, slot, self.generation);
        Some(slot)
    }

    /// Forgets `key` (a no-op when it is absent).
    pub(super) fn remove(&mut self, key: &[i64; MAX_GROUP_KEYS]) {
        if !self.single {
            self.many.remove(key);
            return;
        }
        if let Some(i) = self.dense.at(key[0]) {
            let e = &mut self.dense.entries[i];
            if e.1 == self.generation {
                // Generation 0 is never current.
                e.1 = 0;
                self.dense.live -= 1;
            }
            self.forget_direct(key[0]);
            return;
        }
        self.one.remove(&key[0]);
        self.forget_direct(key[0]);
    }

    /// Drops `k`'s entry of the direct front, if it has one.
    fn forget_direct(&mut self, k: i64) {
        if !self.direct.is_empty() {
            let i = self.index(k);
            if self.direct[i].0 == k {
                // Generation 0 is never current.
                self.direct[i].2 = 0;
            }
        }
    }

    pub(super) fn insert(&mut self, key: [i64; MAX_GROUP_KEYS], slot: u32) {
        if !self.single {
            self.many.insert(key, slot);
            return;
        }
        let k = key[0];
        if let Some(i) = self.dense.at(k) {
            let e = &mut self.dense.entries[i];
            self.dense.live += (e.1 != self.generation) as usize;
            *e = (slot, self.generation);
            return;
        }
        self.one.insert(k, slot);
        self.span = (self.span.0.min(k), self.span.1.max(k));
        if self.one.len() >= DENSE_FROM && self.one.len().is_power_of_two() {
            self.densify();
        }
        let want = (2 * self.one.len())
            .next_power_of_two()
            .clamp(64, DIRECT_MAX);
        if self.direct.len() < want {
            // Grown: start empty at a new size (entries refill from `one` on a miss).
            self.direct = vec![(0, 0, 0); want];
            self.generation = 1;
        }
        if let Some(i) = (!self.direct.is_empty()).then(|| self.index(k)) {
            self.direct[i] = (k, slot, self.generation);
        }
    }

    /// Moves the map's keys into a dense array if, with the keys one holds already, they
    /// lie close enough together (`DENSE_SPAN`); checked as the map doubles.
    fn densify(&mut self) {
        let d = &self.dense;
        let (mut lo, mut hi) = (i128::from(self.span.0), i128::from(self.span.1));
        // An array holding no key (keys moved on, as rising ids do) is rebuilt where the
        // keys are now.
        if d.live > 0 {
            lo = lo.min(i128::from(d.base));
            hi = hi.max(i128::from(d.base) + d.entries.len() as i128 - 1);
        }
        let keys = (self.one.len() + d.live) as i128;
        let want = hi - lo + 1 + (hi - lo + 1) / 8;
        if want > DENSE_SPAN * keys + DENSE_SLACK || want > DENSE_MAX {
            return;
        }
        let base = lo as i64;
        let mut entries = vec![(0u32, 0u32); want as usize];
        let generation = self.generation;
        let old = std::mem::take(&mut self.dense);
        for (i, &e) in old.entries.iter().enumerate() {
            if e.1 == generation {
                let k = old.base.wrapping_add(i as i64);
                entries[(k as u64).wrapping_sub(base as u64) as usize] = e;
            }
        }
        for (&k, &slot) in &self.one {
            entries[(k as u64).wrapping_sub(base as u64) as usize] = (slot, generation);
        }
        self.dense = Dense {
            base,
            entries,
            live: old.live + self.one.len(),
        };
        self.one.clear();
        self.span = (i64::MAX, i64::MIN);
        // The front named keys that now live in the array: should the array move on
        // (`live` 0), they must not be found there.
        self.direct.iter_mut().for_each(|e| e.2 = 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Random inserts, lookups, removals and clears agree with a plain map, for keys close
    /// together (a dense array is built, and grown), far apart (it is not), moving on
    /// (rebuilt), and mixed (a tenth of them far apart).
    #[test]
    fn dense_keys_agree_with_a_map() {
        for (case, seed) in [(0u8, 1u64), (1, 2), (2, 3), (3, 4), (0, 5), (3, 6)] {
            let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut next = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let mut h = HotKeys::new(1);
            let mut want: HashMap<i64, u32> = HashMap::new();
            let mut moved = 0i64;
            for step in 0..200_000u32 {
                let r = next();
                let k = match case {
                    0 => -7_000 + (r % 9_000) as i64,
                    1 => r as i64,
                    2 => moved + (r % 5_000) as i64,
                    _ if r % 10 == 0 => (r >> 3) as i64,
                    _ => 40_000 + (r % 20_000) as i64,
                };
                match r >> 60 {
                    0 => assert_eq!(h.get(&key(k)), want.get(&k).copied(), "case {case}"),
                    1 => {
                        h.remove(&key(k));
                        want.remove(&k);
                    }
                    _ if step % 30_000 == 29_999 => {
                        h.clear();
                        want.clear();
                        moved += 1_000_000;
                    }
                    _ => {
                        if h.get(&key(k)).is_none() {
                            h.insert(key(k), step);
                            want.insert(k, step);
                        }
                    }
                }
            }
            for (&k, &v) in &want {
                assert_eq!(h.get(&key(k)), Some(v), "case {case} key {k}");
            }
            // Mixed keys keep to the map: a tenth far apart make the span too wide.
            let dense = !h.dense.entries.is_empty();
            if case != 3 {
                assert_eq!(dense, case != 1, "case {case}: dense array {dense}");
            }
            if case == 2 {
                assert!(h.dense.base >= moved, "rebuilt where the keys went");
            }
        }
    }

    fn key(k: i64) -> [i64; MAX_GROUP_KEYS] {
        [k, 0, 0, 0]
    }

    /// Key ids of sliced windows are never cleared, only removed: keys that left before the
    /// array moved on to where new keys are must not be found again (not through the
    /// direct front either).
    #[test]
    fn keys_removed_before_the_array_moved_on_stay_gone() {
        let mut h = HotKeys::new(1);
        for k in 0..2048i64 {
            h.insert(key(k), k as u32);
        }
        assert!(!h.dense.entries.is_empty(), "a dense array over 0..2048");
        for k in 0..2048i64 {
            h.remove(&key(k));
        }
        for k in 0..4096i64 {
            h.insert(key(1_000_000 + k), 7);
        }
        assert!(h.dense.base >= 1_000_000, "the array moved on");
        for k in 0..2048i64 {
            assert_eq!(h.get(&key(k)), None, "key {k} was removed");
        }
        // Without removing: an array moved on leaves none behind either.
        let mut h = HotKeys::new(1);
        for k in 0..2048i64 {
            h.insert(key(k), k as u32);
        }
        for k in 0..2048i64 {
            assert_eq!(h.get(&key(k)), Some(k as u32));
        }
    }

    #[test]
    fn the_direct_front_agrees_with_the_map_through_growth_collisions_and_clears() {
        let mut h = HotKeys::new(1);
        for round in 0..3u32 {
            for k in 0..3000i64 {
                let k = k * 7919 - 1_000_000;
                assert_eq!(h.get(&key(k)), None, "round {round} key {k}");
                h.insert(key(k), (k as u32) ^ round);
            }
            for k in (0..3000i64).rev() {
                let k = k * 7919 - 1_000_000;
                assert_eq!(h.get(&key(k)), Some((k as u32) ^ round));
            }
            h.clear();
        }
        let mut m = HotKeys::new(2);
        m.insert([1, 2, 0, 0], 5);
        assert_eq!(
            (m.get(&[1, 2, 0, 0]), m.get(&[1, 3, 0, 0])),
            (Some(5), None)
        );
    }
}
