//! A query's bounded input queue. It holds shared batches (one stream batch is queued for
//! every query that reads it without copying; a query whose drop point kept part of it
//! queues the batch with its selection) and counts tuples, not batches: the bound
//! and the depth the monitor reports are both in tuples. What the queued batches hold in
//! memory is counted engine-wide (`Held`): a queue takes an item only when both its tuple
//! bound and the engine's memory budget have room, and lets go of it in `Held` on `pop`.

use std::collections::VecDeque;
use std::sync::Arc;

use super::batch::Batch;
use super::held::{Held, selection_bytes};
use super::rows::Rows;
use super::schema::Nanos;
use super::shard::RoutedTime;

pub use super::lost_time::LostTime;

/// A queued batch and the probability with which its tuples survived random drops (what
/// Horvitz-Thompson scaling divides by; 1 when nothing was dropped at random).
#[derive(Clone, Debug)]
pub struct Queued {
    pub batch: Arc<Batch>,
    /// The rows of `batch` a drop point kept for this query (ascending), when it kept part
    /// of a batch other queries share: read in place, not copied. `None`: every row.
    pub sel: Option<Vec<u32>>,
    pub keep: f64,
    /// Share of the offered batch that semantic drops left (1 when none dropped): results
    /// built from it are incomplete by design and say so, but are not scaled.
    pub value_keep: f64,
    /// For a batch split by shard before the workers: the stream's event time its rows
    /// cannot see (`RoutedTime`, one entry per row of `batch`, selected or not); `None`
    /// when the batch holds every row of the stream.
    pub time: Option<Arc<RoutedTime>>,
    /// Every row passed the query's indexed conjunct at ingest (shared evaluation): the
    /// pipeline runs only the rest of its filter (`Pipeline::set_residual`).
    pub prefiltered: bool,
    /// The event time of rows lost on the way to this query after this item's rows, shed
    /// or refused by a full queue (`Pipeline::lost_time`): the watermark moves by it once
    /// the item's rows are processed.
    pub advance: LostTime,
}

impl Queued {
    /// The queued tuples: the selected rows of the batch.
    pub fn len(&self) -> usize {
        self.sel.as_ref().map_or(self.batch.len(), Vec::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows a pipeline reads.
    pub fn rows(&self) -> Rows<'_> {
        match &self.sel {
            Some(sel) => Rows::selected(&self.batch, sel),
            None => Rows::all(&self.batch),
        }
    }
}

/// Queue slots an emptied queue keeps (a few batches' worth of headroom).
const SLOTS_KEPT: usize = 64;

#[derive(Debug)]
pub struct InputQueue {
    batches: VecDeque<Queued>,
    tuples: usize,
    capacity: usize,
}

/// The capacity, in rows, a coalescing tail first grows to (a quarter of the default
/// coalescing limit: about 8 KiB a column).
const COALESCE_FLOOR: usize = 256;

impl InputQueue {
    pub fn new(capacity: usize) -> InputQueue {
        InputQueue {
            batches: VecDeque::new(),
            tuples: 0,
            capacity: capacity.max(1),
        }
    }

    /// Queues `item` when the tuple bound has room for it and `held` (the engine's memory
    /// budget) takes it; hands it back otherwise: a full queue is an expected condition
    /// (queue-full), not an error, and none of its tuples were queued. An empty queue
    /// always takes one item, and an unbounded (lossless) one every item, past the
    /// memory budget too: no query is starved by the others' backlog. `paced`: the
    /// batch comes from a source that waits for room (pull), and only the tuple bound
    /// applies.
    pub fn offer(&mut self, item: Queued, held: &mut Held, paced: bool) -> Result<(), Queued> {
        let force = self.batches.is_empty() || self.capacity == usize::MAX;
        let fits = force || self.tuples + item.len() <= self.capacity;
        if !fits || !held.hold(&item, force || paced) {
            return Err(item);
        }
        self.tuples += item.len();
        self.batches.push_back(item);
        Ok(())
    }

    /// Appends the rows of `item` to the newest queued item instead of queuing it, when
    /// that saves a batch without changing what the query computes (`coalesce_rows`):
    /// `item` was narrowed for this query by shared evaluation (`prefiltered`) and carries
    /// no routed time. True when the rows were taken (the caller may reuse `item`'s
    /// buffers); otherwise the caller queues `item` with `offer`.
    pub fn coalesce(&mut self, item: &Queued, held: &mut Held, limit: usize, paced: bool) -> bool {
        item.prefiltered
            && item.time.is_none()
            && item.advance.is_none()
            && self.coalesce_rows(
                &item.batch,
                item.sel.as_deref(),
                (item.keep, item.value_keep),
                held,
                limit,
                paced,
            )
    }

    /// Appends `rows` of `src` (all of them for `None`; ascending), rows that passed this
    /// query's indexed conjunct, to the newest queued item, when that is a batch narrowed
    /// for this query alone (`prefiltered`, held by nothing but this queue, read whole, no
    /// routed time), kept with the same probabilities `keeps` (random, value), and both
    /// together hold at most `limit` rows. A backlogged member query then runs its
    /// matching rows in a few batches, not in one batch of a few rows per ingested batch;
    /// a query that keeps up (an empty queue) is handed each batch as before, so
    /// coalescing adds no wait. Rows and arrival times move unchanged, so the ledger, the
    /// order of rows and every latency stay the same. `paced` as for `offer`: otherwise
    /// the memory budget must have room for the rows. True when they were taken.
    pub fn coalesce_rows(
        &mut self,
        src: &Batch,
        rows: Option<&[u32]>,
        keeps: (f64, f64),
        held: &mut Held,
        limit: usize,
        paced: bool,
    ) -> bool {
        let n = rows.map_or(src.len(), <[u32]>::len);
        // A row's bytes, about: 8 per column and its arrival time.
        let bytes = n * 8 * (src.columns.len() + 1);
        let fits =
            self.tuples + n <= self.capacity && (paced || held.used() + bytes <= held.budget());
        let Some(tail) = self.batches.back_mut().filter(|t| {
            fits && t.prefiltered
                && t.sel.is_none()
                && t.time.is_none()
                && (t.keep, t.value_keep) == keeps
                && t.batch.len() + n <= limit
        }) else {
            return false;
        };
        let Some(batch) = Arc::get_mut(&mut tail.batch) else {
            return false;
        };
        // What the rows add to the batch's bytes: the capacity it grows by and their text
        // (`Batch::text_bytes_of`), without walking the rows it already holds.
        let before = batch.capacity_bytes();
        // A tail that takes rows is behind and grows a few rows at a time: its first growth
        // goes to `COALESCE_FLOOR` rows, then doubles (charged as any capacity is).
        batch.grow_for(n, COALESCE_FLOOR, limit);
        match rows {
            Some(rows) => batch.gather_from(src, rows),
            None => batch.extend_from(src),
        }
        let grown = batch.capacity_bytes().saturating_sub(before) + src.text_bytes_of(rows);
        if grown > 0 {
            held.regrow(&tail.batch, grown);
        }
        self.tuples += n;
        true
    }

    /// The oldest item, released from `held`. A queue that a backlog grew gives its
    /// slots back once it drains.
    pub fn pop(&mut self, held: &mut Held) -> Option<Queued> {
        let q = self.batches.pop_front()?;
        self.tuples -= q.len();
        held.release(&q);
        if self.batches.is_empty() && self.batches.capacity() > SLOTS_KEPT * 16 {
            self.batches.shrink_to(SLOTS_KEPT);
        }
        Some(q)
    }

    /// Thins the queued items in place: `f` may narrow an item's selection (to none)
    /// and lower its keep; an item left empty leaves the queue. The tuple count and
    /// `held` stay exact. Returns the tuples that left.
    /// The time an item left empty must tell (`Queued::advance`) goes to the next item
    /// kept (after its rows: they are not judged late by it), or after the newest when
    /// none follows; with no item left it is returned, for the caller to move the
    /// watermark at once.
    pub fn thin(&mut self, held: &mut Held, mut f: impl FnMut(&mut Queued)) -> (usize, LostTime) {
        let before = self.tuples;
        let mut tuples = 0;
        let mut carry = LostTime::default();
        self.batches.retain_mut(|item| {
            let bytes = selection_bytes(item);
            f(item);
            held.reselect(bytes, selection_bytes(item));
            if item.is_empty() {
                carry.append(std::mem::take(&mut item.advance));
                held.release(item);
                return false;
            }
            if !carry.is_none() {
                carry.append(std::mem::take(&mut item.advance));
                item.advance = std::mem::take(&mut carry);
            }
            tuples += item.len();
            true
        });
        if let Some(newest) = self.batches.back_mut() {
            newest.advance.append(std::mem::take(&mut carry));
        }
        self.tuples = tuples;
        (before - tuples, carry)
    }

    /// Adds `time` to what the newest queued item tells (`Queued::advance`); hands it back
    /// when the queue is empty (nothing waits to be processed before it: the caller moves
    /// the watermark at once). `crosses` as for `LostTime::push`.
    pub fn advance_newest(
        &mut self,
        time: (i64, Nanos),
        crosses: impl Fn(i64, i64) -> bool,
    ) -> Option<(i64, Nanos)> {
        match self.batches.back_mut() {
            Some(newest) => {
                newest.advance.push(time, crosses);
                None
            }
            None => Some(time),
        }
    }

    /// Changes the bound (tail-drop policies use a small one); queued tuples stay.
    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity.max(1);
    }

    /// The bound in tuples (`usize::MAX`: unbounded).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Queued tuples.
    pub fn depth(&self) -> usize {
        self.tuples
    }

    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// Arrival time of the oldest queued tuple.
    pub fn oldest_arrival(&self) -> Option<Nanos> {
        self.batches
            .front()
            .map(|q| q.rows())
            .filter(|r| !r.is_empty())
            .map(|r| r.arrival(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::schema::{DataType, Scalar};

    fn batch(rows: std::ops::Range<i64>) -> Batch {
        let mut b = Batch::new(&[DataType::Int], rows.clone().count());
        for i in rows {
            b.push_row(i, &[Scalar::Int(i)]);
        }
        b
    }

    fn narrowed(b: Batch) -> Queued {
        Queued {
            batch: Arc::new(b),
            sel: None,
            keep: 1.0,
            value_keep: 1.0,
            time: None,
            prefiltered: true,
            advance: LostTime::default(),
        }
    }

    fn ints(q: &Queued) -> Vec<i64> {
        let r = q.rows();
        (0..r.len()).map(|i| r.arrival(i)).collect()
    }

    #[test]
    fn coalescing_appends_to_the_newest_batch_of_this_query_alone() {
        let mut held = Held::new(usize::MAX);
        let mut q = InputQueue::new(1000);
        // Nothing queued: nothing to join; the caller queues the item.
        assert!(!q.coalesce(&narrowed(batch(0..3)), &mut held, 8, false));
        q.offer(narrowed(batch(0..3)), &mut held, false).unwrap();
        // Selected rows of another batch join it, in order.
        let src = batch(10..20);
        assert!(q.coalesce_rows(&src, Some(&[1, 4]), (1.0, 1.0), &mut held, 8, false));
        assert_eq!(q.depth(), 5);
        // Different keeps, or past the limit: not taken.
        assert!(!q.coalesce_rows(&src, Some(&[0]), (0.5, 1.0), &mut held, 8, false));
        assert!(!q.coalesce_rows(&src, Some(&[0, 1, 2, 3]), (1.0, 1.0), &mut held, 8, false));
        let bytes = held.bytes();
        let item = q.pop(&mut held).unwrap();
        assert_eq!(ints(&item), vec![0, 1, 2, 11, 14]);
        assert!(item.batch.is_consistent());
        assert!(
            held.bytes() < bytes && held.batches() == 0,
            "released in full"
        );
        // A batch another holder shares, or one read through a selection, is not touched.
        let shared = narrowed(batch(0..2));
        q.offer(shared.clone(), &mut held, false).unwrap();
        assert!(!q.coalesce_rows(&src, None, (1.0, 1.0), &mut held, 64, false));
        drop(shared);
        assert!(q.coalesce_rows(&src, None, (1.0, 1.0), &mut held, 64, false));
        assert_eq!(q.depth(), 12);
        let mut partial = narrowed(batch(0..4));
        partial.sel = Some(vec![1]);
        q.offer(partial, &mut held, false).unwrap();
        assert!(!q.coalesce_rows(&src, None, (1.0, 1.0), &mut held, 64, false));
        // Nor one that is not a member's narrowed batch.
        let mut whole = narrowed(batch(0..1));
        whole.prefiltered = false;
        let mut other = InputQueue::new(1000);
        other.offer(whole, &mut held, false).unwrap();
        assert!(!other.coalesce_rows(&src, None, (1.0, 1.0), &mut held, 64, false));
    }

    #[test]
    fn coalesced_rows_are_charged_what_they_add_to_the_batch() {
        // Strings of different lengths, from a dictionary larger than the small-table one
        // and from a small one: the charge after each append is the batch's whole
        // `heap_bytes`, though only the appended rows were read.
        let strings = |n: usize, distinct: usize| {
            let mut b = Batch::new(&[DataType::Int, DataType::Str], n);
            for i in 0..n {
                let text: Arc<str> = "x".repeat(i % distinct).into();
                b.push_row(i as i64, &[Scalar::Int(i as i64), Scalar::Str(text)]);
            }
            b
        };
        for distinct in [3, 300] {
            let mut held = Held::new(usize::MAX);
            let mut q = InputQueue::new(100_000);
            q.offer(narrowed(strings(5, distinct)), &mut held, false)
                .unwrap();
            let src = strings(1000, distinct);
            let sel: Vec<u32> = (0..1000).step_by(7).collect();
            for k in 0..20 {
                let rows = &sel[k * 5..k * 5 + 5];
                assert!(q.coalesce_rows(&src, Some(rows), (1.0, 1.0), &mut held, 4096, false));
                let tail = q.batches.back().unwrap();
                assert_eq!(
                    held.bytes(),
                    tail.batch.heap_bytes(),
                    "{distinct} values, append {k}"
                );
            }
            assert!(q.coalesce_rows(&src, None, (1.0, 1.0), &mut held, 4096, false));
            assert_eq!(held.bytes(), q.batches.back().unwrap().batch.heap_bytes());
            q.pop(&mut held).unwrap();
            assert_eq!((held.bytes(), held.batches()), (0, 0), "released in full");
        }
    }

    #[test]
    fn coalescing_respects_the_tuple_bound_and_the_memory_budget() {
        let mut held = Held::new(usize::MAX);
        let mut q = InputQueue::new(4);
        q.offer(narrowed(batch(0..3)), &mut held, false).unwrap();
        let src = batch(0..2);
        assert!(!q.coalesce_rows(&src, None, (1.0, 1.0), &mut held, 64, false));
        assert!(q.coalesce_rows(&src, Some(&[0]), (1.0, 1.0), &mut held, 64, false));
        let mut tight = Held::new(1);
        let mut r = InputQueue::new(1000);
        r.offer(narrowed(batch(0..3)), &mut tight, false).unwrap();
        assert!(!r.coalesce_rows(&src, None, (1.0, 1.0), &mut tight, 64, false));
        // A paced (pull) stream waits for room itself: only the tuple bound applies.
        assert!(r.coalesce_rows(&src, None, (1.0, 1.0), &mut tight, 64, true));
    }
}
