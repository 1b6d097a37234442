//! Ingest of one worker's rows of a batch every worker shares (`ingest_selected`): while
//! nothing at ingest would cut rows out (every drop point keeps every row, no predicate
//! index, no retained history), the shared batch is queued for each reader with the
//! worker's rows as a selection, read in place and never copied, as the engine's own
//! fan-out queues a drop point's selection. Otherwise the rows are first gathered into a
//! batch of their own and take `ingest_routed`, the path of a copy.
//!
//! Invariant: either way the ledgers, the queued rows, their order and their time are
//! exactly those of ingesting the gathered rows with `ingest_routed`.
//!
//! The workers do not use it yet: routing through it measured no faster than a worker's
//! copy of its rows (docs/workers.md, "Round 5"); `tests/workers_selected.rs` keeps it
//! exact for the next attempt.

use std::sync::Arc;

use super::Engine;
use super::fanout::enqueue;
use crate::core::batch::Batch;
use crate::core::ingest::observe_rows;
use crate::core::queue::Queued;
use crate::core::rows::{Rows, is_selection};
use crate::core::shard::RoutedTime;

impl Engine {
    /// Ingests the rows `sel` (ascending) of a `batch` of `stream` other workers share,
    /// with `time`, the stream's event time at every row of `batch` (`RoutedTime`).
    pub fn ingest_selected(
        &mut self,
        stream: usize,
        batch: &Arc<Batch>,
        sel: &[u32],
        time: &Arc<RoutedTime>,
    ) {
        debug_assert!(is_selection(sel, batch.len()));
        debug_assert_eq!(time.prefix.len(), batch.len());
        if sel.is_empty() {
            return;
        }
        self.refresh_shared(stream);
        if !self.keeps_every_row(stream) {
            self.ingest_gathered(stream, batch, sel, time);
            return;
        }
        let n = sel.len() as u64;
        let s = &mut self.streams[stream];
        s.ingested += n;
        for o in s.observers.iter_mut().filter(|o| !o.counts.is_empty()) {
            observe_rows(o, Rows::selected(batch, sel));
        }
        let stream_keep = s.drop.random_keep();
        for &qi in &s.readers {
            let q = &mut self.queries[qi];
            q.stats.offered += n;
            let mut own = self.spare_sels.pop().unwrap_or_default();
            own.clear();
            own.extend_from_slice(sel);
            let item = Queued {
                batch: Arc::clone(batch),
                sel: Some(own),
                keep: stream_keep * q.drop.random_keep(),
                value_keep: 1.0,
                time: Some(Arc::clone(time)),
                prefiltered: false,
                advance: Default::default(),
            };
            if enqueue(q, item, &mut self.held, s.pulled) {
                self.queued.insert(qi);
            }
        }
    }

    /// `ingest_selected` by way of a copy: the rows `sel` of `batch` gathered into a batch
    /// of their own (and their time), ingested with `ingest_routed`.
    pub fn ingest_gathered(
        &mut self,
        stream: usize,
        batch: &Batch,
        sel: &[u32],
        time: &RoutedTime,
    ) {
        if sel.is_empty() {
            return;
        }
        let mut own = Batch::new(&self.streams[stream].types, sel.len());
        own.gather_from(batch, sel);
        let t = Arc::new(time.gather(sel));
        self.ingest_routed(stream, Arc::new(own), Some(t));
    }

    /// Whether ingest would keep every row of `stream` for every reader, reading the batch
    /// as it is (so a selection of it can be queued in place).
    fn keeps_every_row(&self, stream: usize) -> bool {
        let s = &self.streams[stream];
        s.retained.is_none()
            && s.shared.is_idle()
            && s.drop.keeps_every_row()
            && (s.readers.iter()).all(|&q| self.queries[q].drop.keeps_every_row())
    }
}
