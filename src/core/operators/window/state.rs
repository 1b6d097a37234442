//! The aggregate state of a set of group slots: the accumulators, the Horvitz-Thompson
//! sums and the semantic-drop share, stored column-wise by slot, and how one slot becomes
//! the aggregate columns and side-car row of a result. Invariant: every slot between
//! `reset` and its emission holds exactly what the tuples folded (or slots combined) into
//! it contributed, whether it stands for a whole window or for one slice of windows.

use super::super::accumulators::{Acc, emit_all_of, emit_of};
use super::super::approx::Output;
use super::super::scaling::Scaling;
use crate::core::expr::Datum;
use crate::core::plan::{AggFunc, AggregatePlan};
use crate::core::schema::DataType;

#[derive(Debug)]
pub(super) struct GroupState {
    /// One per aggregate call, then a hidden COUNT if no call counts tuples: the scaled
    /// row needs each group's kept count.
    accs: Vec<Acc>,
    /// The accumulator that counts each group's tuples.
    count_acc: usize,
    /// The aggregate calls: `accs[..naggs]` are emitted.
    naggs: usize,
    /// Horvitz-Thompson sums of the groups that lost input.
    scaling: Scaling,
    /// Per slot: the lowest share semantic drops left of any batch that fed it (1: none).
    value_keep: Vec<f64>,
    /// Per slot: the number of its first tuple from a lossy batch (`u64::MAX`: none), so
    /// that a window combined from slices takes the scaling shift of its first such tuple.
    lossy_seq: Vec<u64>,
    /// Lossy tuples folded so far.
    lossy_count: u64,
}

impl GroupState {
    pub(super) fn new(plan: &AggregatePlan) -> GroupState {
        let mut accs: Vec<Acc> = plan
            .aggs
            .iter()
            .map(|a| Acc::new(a.func, a.arg_type))
            .collect();
        let counts = |f: &[AggFunc]| plan.aggs.iter().position(|a| f.contains(&a.func));
        let count_acc = match counts(&[AggFunc::CountStar, AggFunc::Count])
            .or_else(|| counts(&[AggFunc::Avg]))
        {
            Some(i) => i,
            None => {
                accs.push(Acc::new(AggFunc::CountStar, None));
                accs.len() - 1
            }
        };
        share_sums(plan, &mut accs, count_acc);
        GroupState {
            accs,
            count_acc,
            naggs: plan.aggs.len(),
            scaling: Scaling::new(plan),
            value_keep: Vec::new(),
            lossy_seq: Vec::new(),
            lossy_count: 0,
        }
    }

    /// Makes `slot` exist and hold the identity of every aggregate, exact and complete.
    pub(super) fn reset(&mut self, slot: usize) {
        self.reset_range(slot, slot + 1);
    }

    /// `reset` of every slot in `from..to` (a table's new slots, which are contiguous).
    pub(super) fn reset_range(&mut self, from: usize, to: usize) {
        if from >= to {
            return;
        }
        for acc in &mut self.accs {
            acc.reset_range(from, to);
        }
        self.scaling.reset_range(from, to);
        let v = &mut self.value_keep;
        if to > v.len() {
            v.resize(to, 1.0);
        }
        v[from..to].fill(1.0);
        let l = &mut self.lossy_seq;
        if to > l.len() {
            l.resize(to, u64::MAX);
        }
        l[from..to].fill(u64::MAX);
    }

    /// Folds the rows of a batch into their slots (`pairs` of `(slot, row)`), `args` being
    /// each call's argument evaluated over the batch; its tuples each survived random
    /// shedding with probability `keep` and semantic drops left `value_keep` of it.
    pub(super) fn update(
        &mut self,
        pairs: &[(u32, u32)],
        args: &[Option<Datum<'_>>],
        keep: f64,
        value_keep: f64,
    ) {
        if pairs.is_empty() {
            return;
        }
        // A group fed by a batch that semantic drops thinned is incomplete (not scaled).
        if value_keep < 1.0 {
            for &(slot, _) in pairs {
                let v = &mut self.value_keep[slot as usize];
                *v = v.min(value_keep);
            }
        }
        // Only a batch that lost tuples at random touches the scaling state.
        let lossy = keep > 0.0 && keep < 1.0;
        if lossy {
            self.scaling.update(pairs, keep);
            for &(slot, _) in pairs {
                let first = &mut self.lossy_seq[slot as usize];
                if *first == u64::MAX {
                    *first = self.lossy_count;
                }
                self.lossy_count += 1;
            }
        }
        for (i, acc) in self.accs.iter_mut().enumerate() {
            match args.get(i).and_then(Option::as_ref) {
                Some(arg) => {
                    acc.update(pairs, Some(arg));
                    if lossy {
                        self.scaling.update_call(i, pairs, arg, keep);
                    }
                }
                None => acc.update(pairs, None),
            }
        }
    }

    /// Folds slot `s` of `src` into slot `d` of `self` for every `(d, s)` pair, in order:
    /// the state of `d` becomes that of a slot fed every tuple `d` and the sources were
    /// fed. Associative, so partial windows (a slice, a run of slices) combine in any
    /// grouping: a slot takes the scaling shift of whichever part holds its first lossy
    /// tuple, the one the per-window path would have centred on.
    pub(super) fn combine(&mut self, src: &GroupState, pairs: &[(u32, u32)]) {
        for &(d, s) in pairs {
            let (d, s) = (d as usize, s as usize);
            let first = src.lossy_seq[s];
            if first < self.lossy_seq[d] {
                self.scaling.adopt_shift(d, &src.scaling, s);
                self.lossy_seq[d] = first;
            }
        }
        for (acc, from) in self.accs.iter_mut().zip(&src.accs) {
            acc.combine(from, pairs);
        }
        self.scaling.combine(&src.scaling, pairs);
        for &(d, s) in pairs {
            let v = &mut self.value_keep[d as usize];
            *v = v.min(src.value_keep[s as usize]);
        }
    }

    /// `emit` of every slot of `slots`, in order, column by column, if every one of them
    /// is exact and complete (no side-car row): true if it appended them, false (nothing
    /// appended) if one is scaled or incomplete.
    pub(super) fn emit_exact(&self, slots: &[u32], nkeys: usize, out: &mut Output) -> bool {
        let approx = |s: &u32| {
            let s = *s as usize;
            self.scaling.is_lossy(s) || self.value_keep[s] < 1.0
        };
        if slots.iter().any(approx) {
            return false;
        }
        for i in 0..self.naggs {
            emit_all_of(&self.accs, i, slots, &mut out.rows.columns[nkeys + i]);
        }
        true
    }

    /// Appends the aggregate columns of `slot` (after `nkeys` key columns) to the group
    /// row being built in `out`, with its side-car row if it is scaled or incomplete.
    pub(super) fn emit(&mut self, slot: usize, nkeys: usize, out: &mut Output) {
        let naggs = self.naggs;
        let value_keep = self.value_keep[slot];
        if self.scaling.is_lossy(slot) {
            let kept = self.accs[self.count_acc]
                .kept_count(slot)
                .expect("the count accumulator counts");
            self.scaling.emit(slot, kept, &self.accs, out);
            if let Some(k) = out.approx.keep.last_mut() {
                *k *= value_keep;
            }
        } else {
            for i in 0..naggs {
                emit_of(&self.accs, i, slot, &mut out.rows.columns[nkeys + i]);
            }
            if value_keep < 1.0 {
                // Incomplete but not scaled: keep fraction, no intervals, bounds flagged.
                self.scaling
                    .mark_incomplete(out.rows.len(), value_keep, out);
            }
        }
    }
}

/// Makes every AVG of a float argument that a SUM call of the same argument adds up, in a
/// query with a COUNT (`accs[count]`), read that SUM and that COUNT instead of keeping its
/// own (`Acc::AvgOf`): one pass over a batch's rows fewer, the same bits emitted. Every
/// tuple folded adds one to every counting accumulator (there are no NULLs), so the COUNT
/// holds AVG's own count.
fn share_sums(plan: &AggregatePlan, accs: &mut [Acc], count: usize) {
    if !matches!(accs[count], Acc::Count(_)) {
        return;
    }
    for (i, call) in plan.aggs.iter().enumerate() {
        if call.func != AggFunc::Avg || call.arg_type != Some(DataType::Float) {
            continue;
        }
        let sum = plan.aggs.iter().position(|c| {
            c.func == AggFunc::Sum && c.arg == call.arg && c.arg_type == Some(DataType::Float)
        });
        if let Some(sum) = sum {
            accs[i] = Acc::AvgOf { sum, count };
        }
    }
}
