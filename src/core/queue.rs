//! A query's bounded input queue. It holds shared batches (one stream batch is queued for
//! every query that reads it without copying; a query whose drop point kept part of it
//! queues the batch with its selection) and counts tuples, not batches: the bound
//! and the depth the monitor reports are both in tuples.

use std::collections::VecDeque;
use std::sync::Arc;

use super::batch::Batch;
use super::rows::Rows;
use super::schema::Nanos;
use super::shard::RoutedTime;

/// Outcome of offering a batch: a full queue is an expected condition, not an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    Queued,
    /// The batch would exceed the bound; none of its tuples were queued.
    Full,
}

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

    pub fn push(&mut self, item: Queued) -> Admit {
        if !self.admits(item.len()) {
            return Admit::Full;
        }
        self.tuples += item.len();
        self.batches.push_back(item);
        Admit::Queued
    }

    /// Whether `push` would queue a batch of `tuples` tuples now.
    pub fn admits(&self, tuples: usize) -> bool {
        self.tuples + tuples <= self.capacity || self.batches.is_empty()
    }

    pub fn pop(&mut self) -> Option<Queued> {
        let q = self.batches.pop_front()?;
        self.tuples -= q.len();
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
