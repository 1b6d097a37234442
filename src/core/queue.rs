//! A query's bounded input queue. It holds shared batches (one stream batch is queued for
//! every query that reads it without copying; a query whose drop point kept part of it
//! queues the batch with its selection) and counts tuples, not batches: the bound
//! and the depth the monitor reports are both in tuples. What the queued batches hold in
//! memory is counted engine-wide (`Held`): a queue takes an item only when both its tuple
//! bound and the engine's memory budget have room, and lets go of it in `Held` on `pop`.

use std::collections::VecDeque;
use std::sync::Arc;

use super::batch::Batch;
use super::held::Held;
use super::rows::Rows;
use super::schema::Nanos;
use super::shard::RoutedTime;

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
