//! The newest window's (or, sliding, the newest slice's) key cache: packed key to group
//! slot for the groups of that one start, so in-order input finds its group in a map of
//! one window's keys that stays in cache. Invariant: it names only live slots of the
//! start it was filled for; whoever frees that start's slots clears it first.

use rustc_hash::FxHashMap;

use crate::core::plan::MAX_GROUP_KEYS;

#[derive(Debug, Default)]
pub(super) struct HotKeys {
    /// One key column (the common case): the key itself, hashed with one multiply.
    one: FxHashMap<i64, u32>,
    /// Several key columns: the packed key.
    many: FxHashMap<[i64; MAX_GROUP_KEYS], u32>,
    single: bool,
}

impl HotKeys {
    pub(super) fn new(keys: usize) -> HotKeys {
        HotKeys {
            single: keys == 1,
            ..HotKeys::default()
        }
    }

    pub(super) fn clear(&mut self) {
        self.one.clear();
        self.many.clear();
    }

    #[inline]
    pub(super) fn get(&self, key: &[i64; MAX_GROUP_KEYS]) -> Option<u32> {
        if self.single {
            self.one.get(&key[0]).copied()
        } else {
            self.many.get(key).copied()
        }
    }

    pub(super) fn insert(&mut self, key: [i64; MAX_GROUP_KEYS], slot: u32) {
        if self.single {
            self.one.insert(key[0], slot);
        } else {
            self.many.insert(key, slot);
        }
    }
}
