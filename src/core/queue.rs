//! A query's bounded input queue. It holds shared batches (one stream batch is queued for
//! every query that reads it without copying) and counts tuples, not batches: the bound
//! and the depth the monitor reports are both in tuples.

use std::collections::VecDeque;
use std::sync::Arc;

use super::batch::Batch;
use super::schema::Nanos;

/// Outcome of offering a batch: a full queue is an expected condition, not an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    Queued,
    /// The batch would exceed the bound; none of its tuples were queued.
    Full,
}

#[derive(Debug)]
pub struct InputQueue {
    batches: VecDeque<Arc<Batch>>,
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

    pub fn push(&mut self, batch: Arc<Batch>) -> Admit {
        if self.tuples + batch.len() > self.capacity && !self.batches.is_empty() {
            return Admit::Full;
        }
        self.tuples += batch.len();
        self.batches.push_back(batch);
        Admit::Queued
    }

    pub fn pop(&mut self) -> Option<Arc<Batch>> {
        let b = self.batches.pop_front()?;
        self.tuples -= b.len();
        Some(b)
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
            .and_then(|b| b.arrival.first().copied())
    }
}
