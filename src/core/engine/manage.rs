//! Changing the query set of a running engine: adding a query, changing its QoS, removing
//! it. Invariant: indices never move. A removed query stays as a tombstone (no input, never
//! scheduled, windows closed) whose ledger is final and balances: everything it was offered
//! was processed, shed, or (removed without flushing) counted as `Withdrawn`.

use super::snapshot::query_snapshot;
use super::{Emitted, Engine, EngineError, QueryDef};
use crate::core::drop::{DropReason, DropRule};
use crate::core::schema::Nanos;
use crate::core::stats::QuerySnapshot;

/// What removing a query left behind.
#[derive(Clone, Debug, PartialEq)]
pub struct Removal {
    /// The final counters: they balance, and never change again.
    pub ledger: QuerySnapshot,
    /// Result rows of open windows discarded by a removal without flush (0 with flush).
    pub rows_dropped: u64,
}

impl Engine {
    /// Registers `def` as a new query; it is offered input from the next `ingest` on, so
    /// its ledger starts now. Returns its index (the next free one; indices are never
    /// reused).
    pub fn add_query(&mut self, def: QueryDef) -> Result<usize, EngineError> {
        if self.query_index(&def.name).is_some() {
            return Err(EngineError::DuplicateQuery(def.name));
        }
        self.push_query(def)
    }

    /// The index of the running (not removed) query called `name` (ASCII case ignored).
    pub fn query_index(&self, name: &str) -> Option<usize> {
        self.queries
            .iter()
            .position(|q| !q.removed && q.def.name.eq_ignore_ascii_case(name))
    }

    /// Whether query `q` was removed.
    pub fn is_removed(&self, q: usize) -> bool {
        self.queries.get(q).is_none_or(|q| q.removed)
    }

    /// The definition of query `q` (its QoS as currently in force).
    pub fn query_def(&self, q: usize) -> &QueryDef {
        &self.queries[q].def
    }

    /// Changes the scheduling-relevant QoS of running query `q`: latency target, weight,
    /// and whether it is lossless (unbounded queue, never shed).
    pub fn patch_query(
        &mut self,
        q: usize,
        latency_target: Option<Nanos>,
        weight: f64,
        lossless: bool,
    ) -> Result<(), EngineError> {
        if self.is_removed(q) {
            return Err(EngineError::NoSuchQuery(q));
        }
        let capacity = self
            .installed_capacity
            .unwrap_or(self.config.queue_capacity);
        let st = &mut self.queries[q];
        st.def.latency_target = latency_target;
        st.def.weight = weight;
        if st.def.lossless != lossless {
            st.def.lossless = lossless;
            st.queue
                .set_capacity(if lossless { usize::MAX } else { capacity });
            let stream = st.stream;
            self.streams[stream].reader_bound = None;
            if lossless {
                st.drop.install(DropRule::KeepAll);
            }
        }
        Ok(())
    }

    /// Removes running query `q` at `now`: it gets no more input. With `flush`, its queued
    /// input is processed and its open windows are emitted (through `sink`, as `emit`
    /// does); without, queued input is counted as `Withdrawn` and open windows are
    /// discarded and counted. Returns the final ledger.
    pub fn remove_query(
        &mut self,
        q: usize,
        flush: bool,
        now: Nanos,
        sink: impl FnMut(&Emitted<'_>),
    ) -> Result<Removal, EngineError> {
        if self.is_removed(q) {
            return Err(EngineError::NoSuchQuery(q));
        }
        let stream = self.queries[q].stream;
        self.streams[stream].readers.retain(|&r| r != q);
        self.streams[stream].shared.invalidate();
        self.streams[stream].reader_bound = None;
        let st = &mut self.queries[q];
        let mut rows_dropped = 0;
        if flush {
            while let Some(mut item) = st.queue.pop(&mut self.held) {
                st.stats.processed += st.process(&mut item) as u64;
            }
            st.pipeline.flush(now, &mut st.out);
        } else {
            while let Some(item) = st.queue.pop(&mut self.held) {
                st.stats.dropped[DropReason::Withdrawn.index()] += item.len() as u64;
            }
            // Rows already due are delivered (a close part-emitted, too); what the open
            // windows would still give is counted, then discarded.
            st.pipeline.drain_close(&mut st.out);
            let mut discarded = st.pipeline.new_output();
            st.pipeline.flush(now, &mut discarded);
            rows_dropped = discarded.len() as u64;
        }
        st.drop.install(DropRule::KeepAll);
        self.emit_one(q, now, sink);
        self.queries[q].removed = true;
        Ok(Removal {
            ledger: query_snapshot(&self.queries[q]),
            rows_dropped,
        })
    }

    /// The counters of query `q`, running or removed.
    pub fn query_snapshot(&self, q: usize) -> QuerySnapshot {
        query_snapshot(&self.queries[q])
    }
}
