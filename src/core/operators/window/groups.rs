//! Finding and creating a tuple's group slot. The newest tumbling window's groups are found
//! through its key cache (`hot`), the newest slice's through the key ids of `slices`, and
//! older starts through their key maps in `groups`. The newest start's groups are entered
//! in `hot` (or `slices`) only: a start's map in `groups` is made the first time a tuple
//! of it arrives once a later start is the newest (`map_start`), so a new key costs one
//! map's lookup and insert, not two maps' (with a million keys a window, each a cache
//! miss). Invariant: a (start, key) has at most one live slot, listed in `windows` under
//! its start in first-seen order; a start older than the newest has either no map or a
//! complete one.

use super::{GroupKey, WindowAggregate};
use crate::core::plan::MAX_GROUP_KEYS;
use crate::core::schema::DataType;

impl WindowAggregate {
    /// `slot_for` through the newest window's (sliding: slice's) cache.
    #[inline]
    pub(super) fn hot_slot_for(&mut self, start: i64, key: [i64; MAX_GROUP_KEYS]) -> u32 {
        if self.slices.is_some() {
            return self.sliced_slot_for(start, key);
        }
        if start > self.hot.0 {
            self.hot.0 = start;
            self.hot.1.clear();
        }
        if start != self.hot.0 {
            return self.slot_for((start, key));
        }
        if let Some(s) = self.hot.1.get(&key) {
            return s;
        }
        self.new_hot_key(start, key)
    }

    /// A new group of the newest tumbling window `start` (whose cache lacks `key`), entered
    /// in the cache only (`map_start` enters it in `groups` if an older start's lookup
    /// ever needs it).
    #[inline]
    pub(super) fn new_hot_key(&mut self, start: i64, key: [i64; MAX_GROUP_KEYS]) -> u32 {
        debug_assert!(self.slices.is_none() && start == self.hot.0);
        let (slot, _) = self.new_group((start, key), None);
        self.hot.1.insert(key, slot);
        slot
    }

    /// `slot_for` of a sliced operator: the newest slice's groups are found by key id
    /// (`Slices::hot`), and are not entered in `groups` until an older slice's lookup
    /// needs them (`slot_for`).
    #[inline]
    fn sliced_slot_for(&mut self, start: i64, key: [i64; MAX_GROUP_KEYS]) -> u32 {
        let sl = self.slices.as_deref_mut().expect("sliced operator");
        if start > self.hot.0 {
            self.hot.0 = start;
            sl.clear_hot();
        }
        if start != self.hot.0 {
            return self.slot_for((start, key));
        }
        let kid = sl.kid(&key);
        if let Some(s) = kid.and_then(|k| sl.hot(k)) {
            return s;
        }
        self.new_hot_group(start, key, kid)
    }

    /// `sliced_slot_for` of a one-column key `k` in the newest slice `start`.
    #[inline]
    pub(super) fn sliced_one(&mut self, start: i64, k: i64) -> u32 {
        let sl = self.slices.as_deref_mut().expect("sliced operator");
        let kid = sl.kid_one(k);
        if let Some(s) = kid.and_then(|k| sl.hot(k)) {
            return s;
        }
        let mut key = [0i64; MAX_GROUP_KEYS];
        key[0] = k;
        self.new_hot_group(start, key, kid)
    }

    /// A new group in the newest slice `start` (which has none for `key`).
    #[cold]
    fn new_hot_group(&mut self, start: i64, key: [i64; MAX_GROUP_KEYS], kid: Option<u32>) -> u32 {
        let (slot, kid) = self.new_group((start, key), kid);
        if let Some(sl) = self.slices.as_deref_mut() {
            sl.set_hot(kid, slot);
        }
        slot
    }

    pub(super) fn slot_for(&mut self, gk: GroupKey) -> u32 {
        // A start that was the newest has its groups in `hot` or `slices` only. (Sliding
        // windows without slices never use `hot`: its start stays `i64::MIN`.)
        if gk.0 < self.hot.0 && !self.groups.contains_key(&gk.0) {
            self.map_start(gk.0);
        }
        if let Some(&s) = self.groups.get(&gk.0).and_then(|m| m.get(&gk.1)) {
            return s;
        }
        let (slot, _) = self.new_group(gk, None);
        let spare = &mut self.spare;
        (self.groups.entry(gk.0))
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .insert(gk.1, slot);
        slot
    }

    /// Enters the groups of `start`, made while it was the newest window or slice, in
    /// `groups` (once, when an older start is first looked up by key).
    #[cold]
    fn map_start(&mut self, start: i64) {
        let Some(slots) = self.windows.get(&start) else {
            return;
        };
        let mut map = self.spare.pop().unwrap_or_default();
        map.extend(slots.iter().map(|&s| (self.slot_keys[s as usize].1, s)));
        self.groups.insert(start, map);
    }

    /// A new group `gk` (which has none): its slot, and (sliced) its key's id (`kid`,
    /// if known).
    fn new_group(&mut self, gk: GroupKey, kid: Option<u32>) -> (u32, u32) {
        let slot = match self.free.pop() {
            Some(s) => {
                self.slot_keys[s as usize] = gk;
                s
            }
            None => {
                self.slot_keys.push(gk);
                (self.slot_keys.len() - 1) as u32
            }
        };
        self.state.reset(slot as usize);
        let kid = match self.slices.as_deref_mut() {
            Some(sl) => sl.open(slot, &gk.1, kid),
            None => 0,
        };
        for (k, interner) in self.interners.iter_mut().enumerate() {
            if self.plan.key_types[k] == DataType::Str {
                interner.retain(gk.1[k]);
            }
        }
        let spare = &mut self.spare_slots;
        (self.windows.entry(gk.0))
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .push(slot);
        (slot, kid)
    }
}
