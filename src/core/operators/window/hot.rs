//! A map from packed keys to `u32`s, fast for one key column: the newest tumbling window's
//! key cache (key to group slot for the groups of that one start, so in-order input finds
//! its group in a map of one window's keys that stays in cache), and the sliced windows'
//! key ids (`slices`). Invariant, as a window cache: it names only live slots of the start
//! it was filled for; whoever frees that start's slots clears it first.

use rustc_hash::FxHashMap;

use crate::core::plan::MAX_GROUP_KEYS;

/// The direct-mapped front's largest size (entries of 16 bytes).
const DIRECT_MAX: usize = 4096;

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
}

impl HotKeys {
    pub(super) fn new(keys: usize) -> HotKeys {
        HotKeys {
            single: keys == 1,
            generation: 1,
            ..HotKeys::default()
        }
    }

    pub(super) fn clear(&mut self) {
        self.one.clear();
        self.many.clear();
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // Wrapped: old entries could look current again.
            self.direct.fill((0, 0, 0));
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
        self.one.remove(&key[0]);
        if !self.direct.is_empty() {
            let i = self.index(key[0]);
            if self.direct[i].0 == key[0] {
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
        self.one.insert(key[0], slot);
        let want = (2 * self.one.len())
            .next_power_of_two()
            .clamp(64, DIRECT_MAX);
        if self.direct.len() < want {
            // Grown: start empty at a new size (entries refill from `one` on a miss).
            self.direct = vec![(0, 0, 0); want];
            self.generation = 1;
        }
        let i = self.index(key[0]);
        self.direct[i] = (key[0], slot, self.generation);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: i64) -> [i64; MAX_GROUP_KEYS] {
        [k, 0, 0, 0]
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
