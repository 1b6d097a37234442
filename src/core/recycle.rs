//! Batches a stream drop point builds from the rows it keeps, recycled once every reader
//! is done with them: a thinned batch costs a copy of its kept rows, not an allocation per
//! column and a free per column as well. Invariant: a batch is reused only when this ring
//! holds its last reference (no queue, worker or result can still see it).

use std::collections::VecDeque;
use std::sync::Arc;

use super::batch::Batch;
use super::schema::DataType;

/// How many recent batches are held for reuse: enough for the batches in flight between
/// ingest and the readers' turns when queues are short; under a backlog the oldest is let
/// go (its readers free it) and new ones are allocated.
const HELD: usize = 32;

#[derive(Debug, Default)]
pub struct BatchRing {
    ring: VecDeque<Arc<Batch>>,
}

impl BatchRing {
    pub fn new() -> BatchRing {
        BatchRing::default()
    }

    /// A batch of `types` filled by `fill`: the oldest held batch if nothing else refers
    /// to it any more (emptied first, its buffers kept), else a new one of capacity `cap`.
    pub fn filled(
        &mut self,
        types: &[DataType],
        cap: usize,
        fill: impl FnOnce(&mut Batch),
    ) -> Arc<Batch> {
        let free = self
            .ring
            .front_mut()
            .is_some_and(|b| Arc::get_mut(b).is_some());
        let mut out = free
            .then(|| self.ring.pop_front())
            .flatten()
            .unwrap_or_else(|| Arc::new(Batch::new(types, cap)));
        if let Some(b) = Arc::get_mut(&mut out) {
            b.clear();
            fill(b);
        }
        if self.ring.len() >= HELD {
            self.ring.pop_front();
        }
        self.ring.push_back(out.clone());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::batch::Column;

    fn fill_with(v: i64) -> impl FnOnce(&mut Batch) {
        move |b: &mut Batch| {
            b.arrival.push(v);
            if let Column::Int(c) = &mut b.columns[0] {
                c.push(v);
            }
        }
    }

    #[test]
    fn a_batch_is_reused_only_after_its_last_reader_let_it_go() {
        let types = [DataType::Int];
        let mut ring = BatchRing::new();
        let first = ring.filled(&types, 4, fill_with(1));
        let at = Arc::as_ptr(&first);
        // Still read: the next batch is a new one, and the first keeps its rows.
        let second = ring.filled(&types, 4, fill_with(2));
        assert_ne!(Arc::as_ptr(&second), at);
        assert_eq!(first.arrival, [1]);
        drop(first);
        drop(second);
        // Released by every reader: its buffers come back, emptied, with the new rows only.
        let third = ring.filled(&types, 4, fill_with(3));
        assert_eq!(Arc::as_ptr(&third), at);
        assert_eq!(third.arrival, [3]);
        assert_eq!(third.columns[0], Column::Int(vec![3]));
    }

    #[test]
    fn under_a_backlog_at_most_held_batches_are_kept() {
        let types = [DataType::Int];
        let mut ring = BatchRing::new();
        let readers: Vec<_> = (0..100)
            .map(|i| ring.filled(&types, 1, fill_with(i)))
            .collect();
        assert_eq!(ring.ring.len(), HELD);
        for (i, b) in readers.iter().enumerate() {
            assert_eq!(b.arrival, [i as i64], "a batch in use is never refilled");
        }
    }
}
