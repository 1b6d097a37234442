//! The memory the engine's input queues hold, and its budget (`engine.queue_memory`).
//!
//! Queues share batches: one stream batch is queued for every query that reads it, and a
//! query whose drop point kept part of it queues the same batch with its own selection.
//! Counting queued tuples per query therefore says little about memory: nine queries
//! holding the same batch cost it once, nine holding nine different batches (each lagging
//! at its own place, or each with its own copy) cost it nine times. `Held` counts what is
//! really held: every distinct batch once, from the first queue that takes it to the last
//! that lets it go, plus each queued selection.
//!
//! Engine workers share one budget: each worker's `Held` counts its own queues, and adds
//! the same bytes to a total all of them read (`share`), so a hot worker may hold more than
//! its 1/N of `engine.queue_memory` while the others hold less. A batch two workers queue
//! is counted by each (they queue it separately), as it was against their shares.
//!
//! Invariant: `bytes` is the sum, over the distinct batches in any queue, of their
//! `Batch::heap_bytes` when first queued (plus what `regrow` added), plus 4 bytes per selected row of every queued
//! selection; an item is released exactly once for each time it was held.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustc_hash::FxHashMap;

use super::batch::Batch;
use super::queue::Queued;

/// The engine's queued-input memory: distinct batches held and their bytes.
#[derive(Debug)]
pub struct Held {
    /// Per held batch (by address; a held batch is alive, so its address is its own):
    /// how many queued items refer to it, and its bytes.
    batches: FxHashMap<usize, (u32, usize)>,
    bytes: usize,
    peak: usize,
    budget: usize,
    /// The bytes every worker sharing the budget holds (`share`), this one's included.
    shared: Option<Arc<AtomicUsize>>,
}

fn key(batch: &Arc<Batch>) -> usize {
    Arc::as_ptr(batch) as usize
}

/// What `item`'s selection adds to the account.
pub fn selection_bytes(item: &Queued) -> usize {
    item.sel
        .as_ref()
        .map_or(0, |s| s.len() * std::mem::size_of::<u32>())
}

impl Held {
    /// An empty account with `budget` bytes (`usize::MAX`: unbounded).
    pub fn new(budget: usize) -> Held {
        Held {
            batches: FxHashMap::default(),
            bytes: 0,
            peak: 0,
            budget: budget.max(1),
            shared: None,
        }
    }

    /// Makes this account one of several against the same budget: what it holds (now and
    /// later) is added to `total`, and the budget is checked against `total`.
    pub fn share(&mut self, total: Arc<AtomicUsize>) {
        total.fetch_add(self.bytes, Ordering::Relaxed);
        self.shared = Some(total);
    }

    /// The bytes the budget is checked against: this account's, or every sharer's.
    pub fn used(&self) -> usize {
        match &self.shared {
            Some(total) => total.load(Ordering::Relaxed),
            None => self.bytes,
        }
    }

    /// Takes `item` into account if the budget has room for what it adds (nothing for
    /// its batch when another queue already holds that batch), or whatever it adds when
    /// `force` (a lossless query, or a query whose queue is empty, so that no query is
    /// starved by the others' backlog). Returns whether it was taken; only then must it
    /// be `release`d later.
    pub fn hold(&mut self, item: &Queued, force: bool) -> bool {
        let sel = selection_bytes(item);
        let k = key(&item.batch);
        let used = self.used();
        if let Some((refs, _)) = self.batches.get_mut(&k) {
            if !force && used + sel > self.budget {
                return false;
            }
            *refs += 1;
            self.add(sel);
            return true;
        }
        let bytes = item.batch.heap_bytes();
        if !force && used + bytes + sel > self.budget {
            return false;
        }
        self.batches.insert(k, (1, bytes));
        self.add(bytes + sel);
        true
    }

    /// Lets go of an item `hold` took: its selection, and its batch when no other queued
    /// item refers to it.
    pub fn release(&mut self, item: &Queued) {
        let k = key(&item.batch);
        let Some((refs, bytes)) = self.batches.get_mut(&k) else {
            debug_assert!(false, "released a batch that was never held");
            return;
        };
        *refs -= 1;
        let mut freed = selection_bytes(item);
        if *refs == 0 {
            freed += *bytes;
            self.batches.remove(&k);
        }
        self.sub(freed);
    }

    /// Accounts for a held item whose selection changed in place (`InputQueue::thin`):
    /// from `before` to `after` bytes (`selection_bytes`).
    pub fn reselect(&mut self, before: usize, after: usize) {
        self.sub(before);
        self.add(after);
    }

    /// Accounts for a held batch that grew in place (`InputQueue::coalesce_rows`) by
    /// `grown` heap bytes: always taken, as the rows it gained were bound for the same
    /// queue, which a new item would have held (the caller checked the budget).
    pub fn regrow(&mut self, batch: &Arc<Batch>, grown: usize) {
        if let Some((_, bytes)) = self.batches.get_mut(&key(batch)) {
            *bytes += grown;
            self.add(grown);
        }
    }

    fn add(&mut self, bytes: usize) {
        self.bytes += bytes;
        self.peak = self.peak.max(self.bytes);
        if let Some(total) = &self.shared {
            total.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    fn sub(&mut self, bytes: usize) {
        self.bytes -= bytes;
        if let Some(total) = &self.shared {
            total.fetch_sub(bytes, Ordering::Relaxed);
        }
    }

    /// Bytes this account holds now (not its sharers').
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The most bytes held at once so far.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// The budget in bytes.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Distinct batches held now.
    pub fn batches(&self) -> usize {
        self.batches.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::schema::{DataType, Scalar};

    fn batch(rows: usize) -> Arc<Batch> {
        let mut b = Batch::new(&[DataType::Int, DataType::Float], rows);
        for i in 0..rows {
            b.push_row(i as i64, &[Scalar::Int(i as i64), Scalar::Float(0.5)]);
        }
        Arc::new(b)
    }

    fn queued(batch: &Arc<Batch>, sel: Option<Vec<u32>>) -> Queued {
        Queued {
            batch: batch.clone(),
            sel,
            keep: 1.0,
            value_keep: 1.0,
            time: None,
            prefiltered: false,
            advance: Default::default(),
        }
    }

    #[test]
    fn a_batch_shared_by_many_queues_is_counted_once() {
        let b = batch(100);
        let bytes = b.heap_bytes();
        assert_eq!(bytes, 100 * 8 * 3);
        let mut held = Held::new(usize::MAX);
        let items: Vec<Queued> = (0..9).map(|_| queued(&b, None)).collect();
        for it in &items {
            assert!(held.hold(it, false));
        }
        assert_eq!((held.bytes(), held.batches()), (bytes, 1));
        for it in &items[..8] {
            held.release(it);
        }
        assert_eq!(held.bytes(), bytes);
        held.release(&items[8]);
        assert_eq!((held.bytes(), held.batches(), held.peak()), (0, 0, bytes));
    }

    #[test]
    fn selections_count_four_bytes_a_row_and_go_with_their_item() {
        let b = batch(100);
        let mut held = Held::new(usize::MAX);
        let whole = queued(&b, None);
        let part = queued(&b, Some((0..10).collect()));
        assert!(held.hold(&whole, false));
        assert!(held.hold(&part, false));
        assert_eq!(held.bytes(), b.heap_bytes() + 40);
        held.release(&part);
        assert_eq!(held.bytes(), b.heap_bytes());
        held.release(&whole);
        assert_eq!(held.bytes(), 0);
    }

    #[test]
    fn the_budget_refuses_new_batches_but_not_forced_ones_or_shared_ones() {
        let (a, b) = (batch(100), batch(100));
        let one = a.heap_bytes();
        let mut held = Held::new(one + 10);
        assert!(held.hold(&queued(&a, None), false));
        // A second distinct batch would pass the budget: refused, nothing counted.
        assert!(!held.hold(&queued(&b, None), false));
        assert_eq!((held.bytes(), held.batches()), (one, 1));
        // Another queue taking the batch already held costs nothing: admitted.
        assert!(held.hold(&queued(&a, None), false));
        // A selection of 3 rows (12 bytes) on it would pass the budget by 2.
        assert!(!held.hold(&queued(&a, Some(vec![0, 1, 2])), false));
        assert!(held.hold(&queued(&a, Some(vec![0, 1])), false));
        // Forced (an empty queue, a lossless query): admitted over the budget.
        assert!(held.hold(&queued(&b, None), true));
        assert_eq!(held.bytes(), 2 * one + 8);
        assert_eq!(held.batches(), 2);
    }

    #[test]
    fn sharers_check_one_budget_and_each_counts_its_own() {
        let (a, b, c) = (batch(100), batch(100), batch(100));
        let one = a.heap_bytes();
        let total = Arc::new(AtomicUsize::new(0));
        let (mut hot, mut cold) = (Held::new(2 * one + 10), Held::new(2 * one + 10));
        hot.share(total.clone());
        cold.share(total.clone());
        // The hot account may take the whole budget while the cold one holds nothing.
        assert!(hot.hold(&queued(&a, None), false));
        assert!(hot.hold(&queued(&b, None), false));
        assert_eq!(
            (hot.bytes(), cold.bytes(), hot.used()),
            (2 * one, 0, 2 * one)
        );
        // Then the cold one is refused what it alone would have had room for...
        let item = queued(&c, None);
        assert!(!cold.hold(&item, false));
        assert_eq!(total.load(Ordering::Relaxed), 2 * one);
        // ...until the hot one lets go.
        hot.release(&queued(&a, None));
        assert!(cold.hold(&item, false));
        assert_eq!(
            (hot.bytes(), cold.bytes(), cold.used()),
            (one, one, 2 * one)
        );
        hot.reselect(0, 8);
        assert_eq!(total.load(Ordering::Relaxed), 2 * one + 8);
        hot.reselect(8, 0);
        hot.release(&queued(&b, None));
        cold.release(&item);
        assert_eq!(total.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn string_columns_count_their_text() {
        let mut b = Batch::new(&[DataType::Str], 2);
        b.push_row(0, &[Scalar::Str("oslo".into())]);
        b.push_row(1, &[Scalar::Str("rome!".into())]);
        let ptr = std::mem::size_of::<Arc<str>>();
        let word = std::mem::size_of::<usize>();
        assert_eq!(b.heap_bytes(), 2 * 8 + 2 * ptr + 9 + 4 * word);
    }
}
