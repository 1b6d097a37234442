//! String interning for group keys: strings become small integer ids so a group key is a
//! fixed-size array. Invariant: an id stays valid while an open group holds it.
//!
//! A dictionary-encoded column is interned once per dictionary value its rows use, not once
//! per row (`encode`): ids are handed out in the order rows first use a value, as per row.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::core::batch::StrColumn;
use crate::core::rows::Rows;

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
    /// `encode`'s id by dictionary code (`NO_ID` until a row uses the code); valid during
    /// one `encode` only, as ids may be released between batches.
    by_code: Vec<i64>,
}

/// No id yet for a dictionary code.
const NO_ID: i64 = -1;

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

    /// Appends to `enc` the id of the value of `col` at each row of `rows`: one lookup per
    /// distinct value when the dictionary has no more values than `rows`, else per row.
    pub(super) fn encode(&mut self, col: &StrColumn, rows: &Rows<'_>, enc: &mut Vec<i64>) {
        let n = rows.len();
        if !col.per_value_pays(n) {
            for pos in 0..n {
                let id = self.id(&col[rows.row(pos)]);
                enc.push(id);
            }
            return;
        }
        let mut by_code = std::mem::take(&mut self.by_code);
        by_code.clear();
        by_code.resize(col.dict().len(), NO_ID);
        let (codes, values) = (col.codes(), col.dict().values());
        for pos in 0..n {
            let c = codes[rows.row(pos)] as usize;
            let mut id = by_code[c];
            if id == NO_ID {
                id = self.id(&values[c]);
                by_code[c] = id;
            }
            enc.push(id);
        }
        self.by_code = by_code;
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
