//! Dictionary-encoded string columns: a `StrColumn` is a `u32` code per row into a
//! dictionary of distinct `Arc<str>` values that the column shares by `Arc` with every
//! column gathered or projected from it. Copying rows copies codes; the dictionary's
//! reference count moves once per column, never once per row.
//!
//! Invariants: every code is below its dictionary's length, and a dictionary's values are
//! distinct (so within one dictionary, equal codes are equal strings and back). A dictionary
//! may hold values no row uses (rows were cut, or it was adopted from a larger column).
//!
//! Why per batch, shared by `Arc`, and not one dictionary per stream: a stream's strings
//! may be unbounded (ids, URLs), and a stream-wide dictionary would have to be appended to
//! from source threads and pruned while batches still point into it. A batch's dictionary
//! lives exactly as long as the columns that use it and needs no lock. A source whose values
//! are a fixed set (a generator's `choice`, Nexmark's pre-built strings) hands every batch
//! the same dictionary, so batches of one stream usually share one: appending across them
//! copies codes, and per value work (a hash, a comparison, a group id) is done once per
//! value, not per row. Appending rows from a column with another dictionary re-codes them:
//! one lookup per distinct value the rows use (at most per row), never a per-row reference
//! count. The cost: a column keeps its whole dictionary alive, however few rows it keeps
//! (a few rows gathered from a large batch hold all of its distinct values).

use std::fmt;
use std::sync::Arc;

use rustc_hash::FxHashMap;

/// The distinct values of one or more string columns, by code.
#[derive(Clone, Default)]
pub struct Dict {
    values: Vec<Arc<str>>,
    /// Code by value, for appending values and re-coding rows from another dictionary.
    index: FxHashMap<Arc<str>, u32>,
}

impl Dict {
    /// A dictionary of the distinct `values`, and the code of each value in order (a value
    /// given twice has one code).
    pub fn of(values: &[Arc<str>]) -> (Arc<Dict>, Vec<u32>) {
        let mut d = Dict::default();
        let codes = values.iter().map(|v| d.code(v)).collect();
        (Arc::new(d), codes)
    }

    /// The values, by code.
    pub fn values(&self) -> &[Arc<str>] {
        &self.values
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The code of `s`, added if new.
    fn code(&mut self, s: &Arc<str>) -> u32 {
        if let Some(&c) = self.index.get(s) {
            return c;
        }
        self.add(s.clone())
    }

    /// The code of `s`, added (as `make()`) if new.
    fn code_str(&mut self, s: &str, make: impl FnOnce() -> Arc<str>) -> u32 {
        if let Some(&c) = self.index.get(s) {
            return c;
        }
        self.add(make())
    }

    fn add(&mut self, s: Arc<str>) -> u32 {
        let c = u32::try_from(self.values.len()).expect("a dictionary of 2^32 strings");
        self.index.insert(s.clone(), c);
        self.values.push(s);
        c
    }

    fn clear(&mut self) {
        self.values.clear();
        self.index.clear();
    }
}

/// A string column: one code per row into a shared dictionary.
#[derive(Clone)]
pub struct StrColumn {
    dict: Arc<Dict>,
    codes: Vec<u32>,
}

/// No code yet in a re-coding table.
const UNSEEN: u32 = u32::MAX;

/// Dictionaries up to this many values are charged through a table on the stack.
const SMALL_DICT: usize = 256;

impl StrColumn {
    pub fn with_capacity(cap: usize) -> StrColumn {
        StrColumn {
            dict: Arc::new(Dict::default()),
            codes: Vec::with_capacity(cap),
        }
    }

    pub fn len(&self) -> usize {
        self.codes.len()
    }

    /// Makes room for `more` rows (no doubling past it).
    pub fn reserve_exact(&mut self, more: usize) {
        self.codes.reserve_exact(more);
    }

    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    /// The dictionary the codes point into.
    pub fn dict(&self) -> &Arc<Dict> {
        &self.dict
    }

    /// The code of each row.
    pub fn codes(&self) -> &[u32] {
        &self.codes
    }

    /// Whether work done once per dictionary value (then looked up per row) costs no more
    /// than doing it per row: the dictionary has at most `rows` values.
    pub fn per_value_pays(&self, rows: usize) -> bool {
        self.dict.len() <= rows
    }

    /// The values, row by row.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &Arc<str>> + '_ {
        let values = &self.dict.values;
        self.codes.iter().map(move |&c| &values[c as usize])
    }

    /// Empties the column and keeps its buffers; a dictionary no other column shares is
    /// emptied too (per batch), a shared one is let go.
    pub fn clear(&mut self) {
        self.codes.clear();
        match Arc::get_mut(&mut self.dict) {
            Some(d) => d.clear(),
            None => self.dict = Arc::new(Dict::default()),
        }
    }

    /// Cuts the column back to `rows` rows (the dictionary keeps its values).
    pub fn truncate(&mut self, rows: usize) {
        self.codes.truncate(rows);
    }

    /// The dictionary, to add values to: copied first if another column shares it.
    fn dict_mut(&mut self) -> &mut Dict {
        Arc::make_mut(&mut self.dict)
    }

    /// Appends one value.
    pub fn push(&mut self, s: &Arc<str>) {
        let c = self.dict_mut().code(s);
        self.codes.push(c);
    }

    /// Appends `n` rows of one value.
    pub fn push_repeat(&mut self, s: &Arc<str>, n: usize) {
        let c = self.dict_mut().code(s);
        self.codes.extend(std::iter::repeat_n(c, n));
    }

    /// Appends one value given as text; `make` builds its `Arc` only if the dictionary
    /// does not hold it yet (a source's interner).
    pub fn push_str(&mut self, s: &str, make: impl FnOnce() -> Arc<str>) {
        let c = self.dict_mut().code_str(s, make);
        self.codes.push(c);
    }

    /// Appends rows given as `codes` into `dict` (a generator's fixed dictionary): the
    /// column adopts `dict` if it is empty or already uses it, else re-codes the rows.
    pub fn extend_coded(&mut self, dict: &Arc<Dict>, codes: impl ExactSizeIterator<Item = u32>) {
        if self.adopt(dict) {
            self.codes.extend(codes);
        } else {
            let n = codes.len();
            self.codes.reserve(n);
            for c in codes {
                self.push(&dict.values[c as usize]);
            }
        }
    }

    /// Appends one row given as its `code` in `dict` (a generator's fixed dictionary), as
    /// `extend_coded` does for many.
    pub fn push_coded(&mut self, dict: &Arc<Dict>, code: u32) {
        if self.adopt(dict) {
            self.codes.push(code);
        } else {
            self.push(&dict.values[code as usize]);
        }
    }

    /// Makes `dict` this column's dictionary if the codes can point into it as they are:
    /// it is already this column's, or the column has no rows.
    fn adopt(&mut self, dict: &Arc<Dict>) -> bool {
        if Arc::ptr_eq(&self.dict, dict) {
            return true;
        }
        if self.codes.is_empty() {
            self.dict = Arc::clone(dict);
            return true;
        }
        false
    }

    /// Appends the rows of `src` named by `sel`.
    pub fn gather_from(&mut self, src: &StrColumn, sel: &[u32]) {
        if self.adopt(&src.dict) {
            self.codes
                .extend(sel.iter().map(|&i| src.codes[i as usize]));
        } else {
            self.recode(src, sel.iter().map(|&i| src.codes[i as usize]));
        }
    }

    /// Appends all rows of `src`.
    pub fn extend_from(&mut self, src: &StrColumn) {
        if self.adopt(&src.dict) {
            self.codes.extend_from_slice(&src.codes);
        } else {
            self.recode(src, src.codes.iter().copied());
        }
    }

    /// Appends rows of `src` (by their codes in `src`'s dictionary) re-coded into this
    /// column's dictionary: one lookup per distinct value when the rows outnumber `src`'s
    /// values, else one per row.
    fn recode(&mut self, src: &StrColumn, codes: impl ExactSizeIterator<Item = u32>) {
        let n = codes.len();
        self.codes.reserve(n);
        let values = &src.dict.values;
        let dict = Arc::make_mut(&mut self.dict);
        if src.per_value_pays(n) {
            let mut table = vec![UNSEEN; values.len()];
            for c in codes {
                let t = &mut table[c as usize];
                if *t == UNSEEN {
                    *t = dict.code(&values[c as usize]);
                }
                self.codes.push(*t);
            }
        } else {
            for c in codes {
                self.codes.push(dict.code(&values[c as usize]));
            }
        }
    }

    /// The heap bytes the column is charged: as if each row held its own `Arc<str>` (a
    /// pointer and a length per row of capacity, and each row's text and reference counts).
    /// An upper bound on what the codes and dictionary hold, kept so queue memory budgets
    /// admit exactly what they admitted before strings were encoded.
    pub fn heap_bytes(&self) -> usize {
        self.capacity_bytes() + self.text_bytes_of(None)
    }

    /// The part of `heap_bytes` that follows the capacity: a pointer and a length per row.
    pub fn capacity_bytes(&self) -> usize {
        self.codes.capacity() * std::mem::size_of::<Arc<str>>()
    }

    /// The part of `heap_bytes` that follows the rows (`None`: every row): each row's
    /// text and reference counts. Appending rows adds their text bytes here, so a growing
    /// column's new charge is known without walking the rows it held before.
    pub fn text_bytes_of(&self, rows: Option<&[u32]>) -> usize {
        let values = &self.dict.values;
        let charge = |v: &Arc<str>| v.len() + 2 * std::mem::size_of::<usize>();
        if values.len() <= SMALL_DICT {
            // Each value's charge in a table indexed by code: a load per row, no bounds
            // check (a code masked to the table's size is itself, as codes < values).
            let mut table = [0usize; SMALL_DICT];
            table
                .iter_mut()
                .zip(values)
                .for_each(|(t, v)| *t = charge(v));
            self.sum_codes(rows, |c| table[c as usize % SMALL_DICT])
        } else {
            self.sum_codes(rows, |c| charge(&values[c as usize]))
        }
    }

    /// The sum of `at` over the codes of `rows` (`None`: every row).
    fn sum_codes(&self, rows: Option<&[u32]>, at: impl Fn(u32) -> usize) -> usize {
        match rows {
            None => self.codes.iter().map(|&c| at(c)).sum(),
            Some(r) => r.iter().map(|&i| at(self.codes[i as usize])).sum(),
        }
    }
}

impl std::ops::Index<usize> for StrColumn {
    type Output = Arc<str>;

    /// The value at row `row`.
    #[inline]
    fn index(&self, row: usize) -> &Arc<str> {
        &self.dict.values[self.codes[row] as usize]
    }
}

impl PartialEq for StrColumn {
    /// Equal values row by row, whatever the dictionaries.
    fn eq(&self, other: &StrColumn) -> bool {
        if self.len() != other.len() {
            return false;
        }
        if Arc::ptr_eq(&self.dict, &other.dict) {
            return self.codes == other.codes;
        }
        self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl fmt::Debug for StrColumn {
    /// The values, as a `Vec<Arc<str>>` prints them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl fmt::Debug for Dict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.values).finish()
    }
}

#[cfg(test)]
#[path = "strings_tests.rs"]
mod tests;
