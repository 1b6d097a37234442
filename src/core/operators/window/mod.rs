//! The windowed GROUP BY operator. It owns every open (window, key) group and guarantees
//! that a window is emitted exactly once, after the watermark passes its end, and that a
//! tuple is either folded into each of its open windows or counted as late.
//!
//! Lateness is decided per tuple against the running watermark (the largest time seen
//! before it), so results do not depend on how the input was cut into batches.
//!
//! A group that folded tuples of a batch that lost input to random shedding (keep < 1) is
//! emitted scaled (`scaling`): COUNT, SUM and AVG as Horvitz-Thompson estimates with 95%
//! intervals, MIN and MAX as observed and flagged as bounds, and the row's keep fraction
//! `kept / estimated count`. Groups that saw only exact batches are emitted as observed.

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap;

use super::accumulators::Acc;
use super::approx::Output;
use super::interner::Interner;

mod time;
use super::scaling::Scaling;
use crate::core::batch::{Batch, Column};
use crate::core::expr::{Datum, Storage};
use crate::core::plan::{AggFunc, AggregatePlan, MAX_GROUP_KEYS, TimeSource};
use crate::core::schema::{DataType, Nanos};

/// A group: window start plus the key values packed into integers (strings interned,
/// floats as bits), so lookups hash a fixed-size value and never allocate.
type GroupKey = (i64, [i64; MAX_GROUP_KEYS]);

#[derive(Debug)]
pub struct WindowAggregate {
    plan: AggregatePlan,
    groups: FxHashMap<GroupKey, u32>,
    slot_keys: Vec<GroupKey>,
    free: Vec<u32>,
    /// Open windows by start, each with its slots in first-seen order (the emission order).
    windows: BTreeMap<i64, Vec<u32>>,
    /// One per aggregate call, then a hidden COUNT if no call counts tuples: the scaled
    /// row needs each group's kept count.
    accs: Vec<Acc>,
    /// The accumulator that counts each group's tuples.
    count_acc: usize,
    /// Horvitz-Thompson sums of the groups that lost input.
    scaling: Scaling,
    interners: Vec<Interner>,
    /// Largest time seen; `i64::MIN` before the first tuple.
    watermark: i64,
    /// Per slot: the lowest share semantic drops left of any batch that fed it (1: none).
    value_keep: Vec<f64>,
    /// Every window ending at or before this has been emitted and may never reopen: a tuple
    /// that only belongs to such windows is late.
    closed: i64,
    /// `(watermark, arrival)` each time the watermark crossed a window end: the arrival of
    /// the tuple that made those windows due, for latency.
    due: VecDeque<(i64, Nanos)>,
    next_due: i64,
    late: u64,
    // Scratch reused across batches.
    pairs: Vec<(u32, u32)>,
    encoded: Vec<Vec<i64>>,
}

impl WindowAggregate {
    pub fn new(plan: &AggregatePlan) -> WindowAggregate {
        assert!(plan.keys.len() <= MAX_GROUP_KEYS, "planner bounds the keys");
        let mut accs: Vec<Acc> = plan
            .aggs
            .iter()
            .map(|a| Acc::new(a.func, a.arg_type))
            .collect();
        let count_acc = match plan
            .aggs
            .iter()
            .position(|a| matches!(a.func, AggFunc::CountStar | AggFunc::Count | AggFunc::Avg))
        {
            Some(i) => i,
            None => {
                accs.push(Acc::new(AggFunc::CountStar, None));
                accs.len() - 1
            }
        };
        WindowAggregate {
            plan: plan.clone(),
            groups: FxHashMap::default(),
            slot_keys: Vec::new(),
            free: Vec::new(),
            windows: BTreeMap::new(),
            accs,
            count_acc,
            scaling: Scaling::new(plan),
            interners: plan.keys.iter().map(|_| Interner::default()).collect(),
            watermark: i64::MIN,
            closed: i64::MIN,
            value_keep: Vec::new(),
            due: VecDeque::new(),
            next_due: i64::MIN,
            late: 0,
            pairs: Vec::new(),
            encoded: vec![Vec::new(); plan.keys.len()],
        }
    }

    /// Tuples that arrived after all their windows had closed.
    pub fn late(&self) -> u64 {
        self.late
    }

    /// Groups currently open (state size).
    pub fn open_groups(&self) -> usize {
        self.groups.len()
    }

    /// Strings interned for open groups' keys, over all key columns.
    pub fn interned(&self) -> usize {
        self.interners.iter().map(Interner::len).sum()
    }

    /// Folds a batch whose tuples each survived random shedding with probability `keep`
    /// into the open groups, then closes the windows the watermark passed, appending their
    /// group rows to `out` (typed by `AggregatePlan::group_row_types`).
    /// `prefix`, when the filter removed rows, gives for each row of `batch` the largest
    /// time (and its arrival) among the unfiltered rows up to it, so the watermark moves
    /// exactly as if every row had been seen in order.
    pub fn process(
        &mut self,
        batch: &Batch,
        keep: f64,
        value_keep: f64,
        prefix: Option<&[(i64, Nanos)]>,
        out: &mut Output,
    ) {
        let n = batch.len();
        if n == 0 {
            return;
        }
        let keys: Vec<Datum<'_>> = self.plan.keys.iter().map(|k| k.eval(batch)).collect();
        for (k, d) in keys.iter().enumerate() {
            let enc = &mut self.encoded[k];
            enc.clear();
            match d.storage() {
                Storage::Int => enc.extend((0..n).map(|i| d.ints().at(i))),
                // -0.0 groups with 0.0 and every NaN with every other NaN, as SQL expects.
                Storage::Float => enc.extend((0..n).map(|i| {
                    let x = d.floats().at(i);
                    let x = if x == 0.0 {
                        0.0
                    } else if x.is_nan() {
                        f64::NAN
                    } else {
                        x
                    };
                    x.to_bits() as i64
                })),
                Storage::Bool => enc.extend((0..n).map(|i| d.bools().at(i) as i64)),
                Storage::Str => {
                    let interner = &mut self.interners[k];
                    for i in 0..n {
                        let id = match d {
                            Datum::Strs(v) => interner.id(&v[i]),
                            Datum::Owned(Column::Str(v)) => interner.id(&v[i]),
                            Datum::Str(s) => interner.id(s),
                            _ => unreachable!("string key"),
                        };
                        enc.push(id);
                    }
                }
            }
        }
        let times: &[i64] = match self.plan.time {
            TimeSource::Column(i) => match &batch.columns[i] {
                Column::Int(v) => v,
                other => unreachable!("time column {other:?}"),
            },
            TimeSource::Arrival => &batch.arrival,
        };
        let (size, slide, lateness) = (
            self.plan.window.size,
            self.plan.window.slide,
            self.plan.lateness,
        );
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.clear();
        for (row, &t) in times.iter().enumerate() {
            let (w, a) = prefix.map_or((t, batch.arrival[row]), |p| p[row]);
            if w > self.watermark {
                self.watermark = w;
                let closed_to = w.saturating_sub(lateness);
                if closed_to >= self.next_due {
                    self.due.push_back((w, a));
                    self.next_due = self.next_end_after(closed_to);
                }
            }
            let closed_to = self.watermark.saturating_sub(lateness).max(self.closed);
            let mut key = [0i64; MAX_GROUP_KEYS];
            for (k, enc) in self.encoded.iter().enumerate() {
                key[k] = enc[row];
            }
            // Checked: a time near the 64-bit bounds has no window and is late.
            let Some(mut start) = t.div_euclid(slide).checked_mul(slide) else {
                self.late += 1;
                continue;
            };
            let mut placed = false;
            while start.saturating_add(size) > t {
                if start.saturating_add(size) > closed_to {
                    let slot = self.slot_for((start, key));
                    pairs.push((slot, row as u32));
                    placed = true;
                }
                match start.checked_sub(slide) {
                    Some(s) => start = s,
                    None => break,
                }
            }
            if !placed {
                self.late += 1;
            }
        }
        // A group fed by a batch that semantic drops thinned is incomplete (not scaled).
        if value_keep < 1.0 {
            for &(slot, _) in &pairs {
                let v = &mut self.value_keep[slot as usize];
                *v = v.min(value_keep);
            }
        }
        // Only a batch that lost tuples at random touches the scaling state.
        let lossy = keep > 0.0 && keep < 1.0;
        if lossy {
            self.scaling.update(&pairs, keep);
        }
        for (i, acc) in self.accs.iter_mut().enumerate() {
            match self.plan.aggs.get(i).and_then(|c| c.arg.as_ref()) {
                Some(e) => {
                    let arg = e.eval(batch);
                    acc.update(&pairs, Some(&arg));
                    if lossy {
                        self.scaling.update_call(i, &pairs, &arg, keep);
                    }
                }
                None => acc.update(&pairs, None),
            }
        }
        self.pairs = pairs;
        let closed_to = self.watermark.saturating_sub(lateness);
        self.close(closed_to, None, out);
        for interner in &mut self.interners {
            interner.sweep();
        }
    }

    /// Closes arrival-time windows that ended by `bound` (the engine passes the earliest of
    /// now, the ingest frontier and the oldest queued arrival, so no tuple still on its way
    /// can belong to them).
    pub fn on_tick(&mut self, bound: Nanos, out: &mut Output) {
        if self.plan.time == TimeSource::Arrival {
            self.close(bound, Some(Due::WindowEnd), out);
        }
    }

    /// Emits every open window (end of input); their latency counts from `now`.
    pub fn flush(&mut self, now: Nanos, out: &mut Output) {
        self.close(i64::MAX, Some(Due::At(now)), out);
    }

    fn slot_for(&mut self, gk: GroupKey) -> u32 {
        if let Some(&s) = self.groups.get(&gk) {
            return s;
        }
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
        for acc in &mut self.accs {
            acc.reset(slot as usize);
        }
        self.scaling.reset(slot as usize);
        let v = &mut self.value_keep;
        if slot as usize >= v.len() {
            v.resize(slot as usize + 1, 1.0);
        }
        v[slot as usize] = 1.0;
        self.groups.insert(gk, slot);
        for (k, interner) in self.interners.iter_mut().enumerate() {
            if self.plan.key_types[k] == DataType::Str {
                interner.retain(gk.1[k]);
            }
        }
        self.windows.entry(gk.0).or_default().push(slot);
        slot
    }

    /// Emits and forgets every window whose end is `<= closed_to`.
    fn close(&mut self, closed_to: i64, due_override: Option<Due>, out: &mut Output) {
        self.closed = self.closed.max(closed_to);
        let size = self.plan.window.size;
        while let Some((&start, _)) = self.windows.first_key_value() {
            let end = start.saturating_add(size);
            if end > closed_to {
                break;
            }
            let slots = self.windows.pop_first().expect("checked non-empty").1;
            let due = match due_override {
                Some(Due::At(t)) => t,
                Some(Due::WindowEnd) => end,
                None => self.due_arrival(end),
            };
            for &slot in &slots {
                self.emit_row(slot as usize, start, end, due, out);
                let gk = self.slot_keys[slot as usize];
                self.groups.remove(&gk);
                for (k, interner) in self.interners.iter_mut().enumerate() {
                    if self.plan.key_types[k] == DataType::Str {
                        interner.release(gk.1[k]);
                    }
                }
                self.free.push(slot);
            }
        }
        out.approx.pad(out.rows.len());
        // Crossing records older than every open window's end are no longer needed.
        let first_open_end = self
            .windows
            .first_key_value()
            .map(|(s, _)| s.saturating_add(size))
            .unwrap_or(i64::MAX);
        while self
            .due
            .front()
            .is_some_and(|(wm, _)| wm.saturating_sub(self.plan.lateness) < first_open_end)
        {
            self.due.pop_front();
        }
    }

    fn emit_row(&mut self, slot: usize, start: i64, end: i64, due: Nanos, out: &mut Output) {
        let (nkeys, naggs) = (self.plan.keys.len(), self.plan.aggs.len());
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
            for (i, acc) in self.accs[..naggs].iter().enumerate() {
                acc.emit(slot, &mut out.rows.columns[nkeys + i]);
            }
            if value_keep < 1.0 {
                // Incomplete but not scaled: keep fraction, no intervals, bounds flagged.
                self.scaling
                    .mark_incomplete(out.rows.len(), value_keep, out);
            }
        }
        let out = &mut out.rows;
        let gk = &self.slot_keys[slot];
        for k in 0..nkeys {
            let v = gk.1[k];
            match (&mut out.columns[k], self.plan.key_types[k]) {
                (Column::Int(o), _) => o.push(v),
                (Column::Float(o), _) => o.push(f64::from_bits(v as u64)),
                (Column::Bool(o), _) => o.push(v != 0),
                (Column::Str(o), DataType::Str) => {
                    o.push(self.interners[k].names[v as usize].clone())
                }
                (c, t) => unreachable!("key column {c:?} of type {t}"),
            }
        }
        let base = nkeys + naggs;
        for (i, v) in [(base, start), (base + 1, end)] {
            match &mut out.columns[i] {
                Column::Int(o) => o.push(v),
                c => unreachable!("window bound column {c:?}"),
            }
        }
        out.arrival.push(due);
    }
}

#[derive(Clone, Copy, Debug)]
enum Due {
    At(Nanos),
    WindowEnd,
}
