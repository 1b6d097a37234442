//! String interning for group keys: strings become small integer ids so a group key is a
//! fixed-size array. Invariant: an id stays valid while an open group holds it.

use std::sync::Arc;

use rustc_hash::FxHashMap;

/// Interns the strings of one key column. An id lives while an open group uses it: groups
/// retain and release their ids, and ids a batch created but no group took are swept after
/// the batch, so memory follows the open groups, not every key ever seen.
#[derive(Debug, Default)]
pub(super) struct Interner {
    ids: FxHashMap<Arc<str>, i64>,
    pub(super) names: Vec<Arc<str>>,
    /// Open groups using each id.
    refs: Vec<u32>,
    live: Vec<bool>,
    free: Vec<i64>,
    /// Ids created during the current batch.
    fresh: Vec<i64>,
}

impl Interner {
    pub(super) fn id(&mut self, s: &Arc<str>) -> i64 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = match self.free.pop() {
            Some(id) => {
                let i = id as usize;
                self.names[i] = s.clone();
                self.refs[i] = 0;
                self.live[i] = true;
                id
            }
            None => {
                self.names.push(s.clone());
                self.refs.push(0);
                self.live.push(true);
                (self.names.len() - 1) as i64
            }
        };
        self.ids.insert(s.clone(), id);
        self.fresh.push(id);
        id
    }

    pub(super) fn retain(&mut self, id: i64) {
        self.refs[id as usize] += 1;
    }

    pub(super) fn release(&mut self, id: i64) {
        let i = id as usize;
        self.refs[i] = self.refs[i].saturating_sub(1);
        if self.refs[i] == 0 {
            self.forget(id);
        }
    }

    fn forget(&mut self, id: i64) {
        let i = id as usize;
        if self.live[i] {
            self.live[i] = false;
            self.ids.remove(&self.names[i]);
            self.free.push(id);
        }
    }

    /// Forgets the ids this batch created that no group took (late or filtered tuples).
    pub(super) fn sweep(&mut self) {
        while let Some(id) = self.fresh.pop() {
            if self.refs[id as usize] == 0 {
                self.forget(id);
            }
        }
    }

    pub(super) fn len(&self) -> usize {
        self.ids.len()
    }
}
