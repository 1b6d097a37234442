//! Retained history on the engine: which streams keep their recent past (`core::retain`),
//! and replaying it into a query just added (an ad-hoc query). Invariant: history goes
//! straight into the query's pipeline, never through a drop point or a queue (it is
//! never shed), and is counted in the query's ledger as offered and processed, so the
//! ledger still balances.

use std::sync::Arc;

use super::{Emitted, Engine, EngineError};
use crate::core::retain::{RetainLimit, RetainSnapshot, Retained};
use crate::core::schema::Nanos;

/// What replaying history into a query did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Replay {
    /// History rows fed to the query.
    pub tuples: u64,
    /// Result rows the history completed (emitted through the sink, no latency recorded:
    /// they answer the past, not a live arrival).
    pub rows: u64,
    /// Arrival span of the rows fed, if any.
    pub from: Option<Nanos>,
    pub to: Option<Nanos>,
}

impl Engine {
    /// Makes `stream` retain its recent history, as `limit` says, from the next `ingest`.
    pub fn retain(&mut self, stream: usize, limit: RetainLimit) {
        let s = &mut self.streams[stream];
        s.retained = Some(Retained::new(limit, &s.types));
    }

    /// The retained history of `stream`, if it keeps one.
    pub fn retention(&self, stream: usize) -> Option<RetainSnapshot> {
        self.streams[stream].retained.as_ref().map(|r| r.snapshot())
    }

    /// The limit `stream` retains by, if any.
    pub fn retain_limit(&self, stream: usize) -> Option<RetainLimit> {
        self.streams[stream].retained.as_ref().map(|r| r.limit())
    }

    /// Feeds query `q` the retained history of its stream that arrived at or after
    /// `now - last` (all of it with a tuple bound), as if it had been running then: rows
    /// the history completes (closed windows up to the newest history arrival, and every
    /// row of a query without windows) go to `sink` now. Open windows stay open for live
    /// input, or for `remove_query(.., flush)`. Call right after `add_query`.
    pub fn replay_history(
        &mut self,
        q: usize,
        now: Nanos,
        mut sink: impl FnMut(&Emitted<'_>),
    ) -> Result<Replay, EngineError> {
        if self.is_removed(q) {
            return Err(EngineError::NoSuchQuery(q));
        }
        let si = self.queries[q].stream;
        let s = &self.streams[si];
        let Some(r) = &s.retained else {
            return Ok(Replay::default());
        };
        let batches: Vec<Arc<_>> = r.history(r.window_start(now), &s.types);
        let st = &mut self.queries[q];
        let mut replay = Replay::default();
        for b in &batches {
            let n = b.len() as u64;
            replay.tuples += n;
            replay.from = replay.from.or(b.arrival.first().copied());
            replay.to = b.arrival.iter().copied().max().max(replay.to);
            st.pipeline.process(b, 1.0, 1.0, &mut st.out);
        }
        if let Some(to) = replay.to {
            st.pipeline.on_tick(to, &mut st.out);
        }
        // Every window the history closed answers the past now, whatever the close step.
        st.pipeline.drain_close(&mut st.out);
        replay.rows = self.emit_past(q, now, &mut sink);
        Ok(replay)
    }

    /// Emits the open windows of query `q` (an ad-hoc query that ends with its history)
    /// to `sink`, as `replay_history` emits: no latency, no live results. Returns the rows.
    pub fn flush_history(
        &mut self,
        q: usize,
        now: Nanos,
        sink: impl FnMut(&Emitted<'_>),
    ) -> Result<u64, EngineError> {
        if self.is_removed(q) {
            return Err(EngineError::NoSuchQuery(q));
        }
        let st = &mut self.queries[q];
        st.pipeline.flush(now, &mut st.out);
        Ok(self.emit_past(q, now, sink))
    }

    /// Hands query `q`'s pending rows to `sink` without recording latency or results:
    /// they answer the past.
    fn emit_past(&mut self, q: usize, now: Nanos, mut sink: impl FnMut(&Emitted<'_>)) -> u64 {
        let st = &mut self.queries[q];
        let rows = st.out.len() as u64;
        if rows > 0 {
            st.out.approx.pad(st.out.len());
            sink(&Emitted {
                index: q,
                query: &st.def.name,
                names: &self.names[q],
                types: st.pipeline.output_types(),
                batch: &st.out.rows,
                approx: (!st.out.approx.is_exact()).then_some(&st.out.approx),
                emitted_at: now,
            });
            st.out.clear();
        }
        rows
    }
}
