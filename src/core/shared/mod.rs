//! Shared evaluation of many queries on one stream: a predicate index per (stream, column)
//! evaluates one conjunct of every member query's WHERE clause for a whole batch at once.
//! Range conjuncts (`x > c`, `x >= c`, `x < c`, `x <= c`) are sorted thresholds, routed
//! member by member from the loosest (`ranges`). Equality conjuncts on int and string
//! columns are a hash map from constant to queries. A row costs a comparison per range
//! kind or a lookup, plus one step per query it matches, whatever the number of queries.
//!
//! Invariant: after `route`, `rows(slot)` holds, in ascending order, exactly the rows of the
//! batch for which that member's indexed conjunct is true (as `Expr::eval` computes it).

pub mod extract;
mod ranges;

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::batch::{Batch, Column};
pub use extract::{Cmp, Indexable, Key, indexable, split};
use ranges::RangeSet;

/// The index of one column.
#[derive(Debug)]
enum ColumnIndex {
    Float {
        column: usize,
        /// Int column compared as float (`ToFloat`).
        from_int: bool,
        ranges: RangeSet<f64>,
    },
    Int {
        column: usize,
        ranges: RangeSet<i64>,
        eq: FxHashMap<i64, Vec<u32>>,
    },
    Str {
        column: usize,
        eq: FxHashMap<Arc<str>, Vec<u32>>,
    },
}

impl ColumnIndex {
    /// Appends each row of `batch` to the members whose conjunct on this column it
    /// passes. `cand_f` and `cand_i` are scratch for range routing.
    fn route(
        &self,
        batch: &Batch,
        rows: &mut [Vec<u32>],
        cand_f: &mut Vec<(f64, u32)>,
        cand_i: &mut Vec<(i64, u32)>,
    ) {
        match self {
            ColumnIndex::Float {
                column,
                from_int,
                ranges,
            } => match (&batch.columns[*column], from_int) {
                (Column::Float(v), false) => ranges.route(v, |x| x, cand_f, rows),
                (Column::Int(v), true) => ranges.route(v, |x| x as f64, cand_f, rows),
                _ => unreachable!("index column type fixed at plan time"),
            },
            ColumnIndex::Int { column, ranges, eq } => {
                let Column::Int(v) = &batch.columns[*column] else {
                    unreachable!("index column type fixed at plan time")
                };
                ranges.route(v, |x| x, cand_i, rows);
                if !eq.is_empty() {
                    for (i, x) in v.iter().enumerate() {
                        if let Some(s) = eq.get(x) {
                            s.iter().for_each(|&s| rows[s as usize].push(i as u32));
                        }
                    }
                }
            }
            ColumnIndex::Str { column, eq } => {
                let Column::Str(v) = &batch.columns[*column] else {
                    unreachable!("index column type fixed at plan time")
                };
                // Each dictionary value is looked up once, then each row by its code.
                if v.per_value_pays(v.len()) {
                    let by_code: Vec<Option<&Vec<u32>>> =
                        v.dict().values().iter().map(|x| eq.get(x)).collect();
                    for (i, &c) in v.codes().iter().enumerate() {
                        if let Some(s) = by_code[c as usize] {
                            s.iter().for_each(|&s| rows[s as usize].push(i as u32));
                        }
                    }
                    return;
                }
                for (i, x) in v.iter().enumerate() {
                    if let Some(s) = eq.get(x) {
                        s.iter().for_each(|&s| rows[s as usize].push(i as u32));
                    }
                }
            }
        }
    }
}

/// The predicate index of one stream: its member queries (by slot) and, after `route`,
/// each member's matching rows of the last batch.
#[derive(Debug, Default)]
pub struct SharedIndex {
    columns: Vec<ColumnIndex>,
    /// Member query index by slot.
    members: Vec<usize>,
    /// Slot by query index (`NONE` for a query that is not a member).
    slot_of: Vec<u32>,
    /// Per slot: the rows of the last routed batch its conjunct passes.
    rows: Vec<Vec<u32>>,
    /// Scratch for range routing (`ranges`): candidate rows with their values.
    cand_f: Vec<(f64, u32)>,
    cand_i: Vec<(i64, u32)>,
}

const NONE: u32 = u32::MAX;

impl SharedIndex {
    /// An index over `members`: (query index, its indexed conjunct).
    pub fn build(members: &[(usize, Indexable)]) -> SharedIndex {
        let mut slot_of = Vec::new();
        for (slot, (q, _)) in members.iter().enumerate() {
            if slot_of.len() <= *q {
                slot_of.resize(q + 1, NONE);
            }
            slot_of[*q] = slot as u32;
        }
        let mut columns: Vec<usize> = members.iter().map(|m| m.1.column).collect();
        columns.sort_unstable();
        columns.dedup();
        let mut out = Vec::new();
        for c in columns {
            let col: Vec<(u32, &Indexable)> = members
                .iter()
                .enumerate()
                .filter(|(_, m)| m.1.column == c)
                .map(|(s, m)| (s as u32, &m.1))
                .collect();
            let floats: Vec<(Cmp, f64, u32, bool)> = col
                .iter()
                .filter_map(|&(s, m)| match m.key {
                    Key::Float { c, from_int } => Some((m.cmp, c, s, from_int)),
                    _ => None,
                })
                .collect();
            // One column compares either as floats or as ints: its type decides.
            for from_int in [false, true] {
                let f: Vec<(Cmp, f64, u32)> = floats
                    .iter()
                    .filter(|m| m.3 == from_int)
                    .map(|m| (m.0, m.1, m.2))
                    .collect();
                if !f.is_empty() {
                    out.push(ColumnIndex::Float {
                        column: c,
                        from_int,
                        ranges: RangeSet::build(&f),
                    });
                }
            }
            let ints: Vec<(Cmp, i64, u32)> = col
                .iter()
                .filter_map(|&(s, m)| match m.key {
                    Key::Int(v) => Some((m.cmp, v, s)),
                    _ => None,
                })
                .collect();
            if !ints.is_empty() {
                let mut eq: FxHashMap<i64, Vec<u32>> = FxHashMap::default();
                for &(_, v, s) in ints.iter().filter(|m| m.0 == Cmp::Eq) {
                    eq.entry(v).or_default().push(s);
                }
                out.push(ColumnIndex::Int {
                    column: c,
                    ranges: RangeSet::build(&ints),
                    eq,
                });
            }
            let mut eq: FxHashMap<Arc<str>, Vec<u32>> = FxHashMap::default();
            for &(s, m) in &col {
                if let Key::Str(v) = &m.key {
                    eq.entry(v.clone()).or_default().push(s);
                }
            }
            if !eq.is_empty() {
                out.push(ColumnIndex::Str { column: c, eq });
            }
        }
        SharedIndex {
            columns: out,
            members: members.iter().map(|m| m.0).collect(),
            slot_of,
            rows: vec![Vec::new(); members.len()],
            cand_f: Vec::new(),
            cand_i: Vec::new(),
        }
    }

    /// Whether the index has no members (routing is then skipped).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The member queries, by slot.
    pub fn members(&self) -> &[usize] {
        &self.members
    }

    /// Evaluates every member's indexed conjunct over `batch`.
    pub fn route(&mut self, batch: &Batch) {
        self.rows.iter_mut().for_each(Vec::clear);
        for c in &self.columns {
            c.route(batch, &mut self.rows, &mut self.cand_f, &mut self.cand_i);
        }
    }

    /// Query `q`'s matching rows of the last routed batch (ascending), or `None` if `q` is
    /// not a member.
    pub fn rows_of(&self, q: usize) -> Option<&[u32]> {
        match self.slot_of.get(q) {
            Some(&s) if s != NONE => Some(&self.rows[s as usize]),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
