//! Results leaving the engine: closing windows as time passes (`tick`) and at the end of
//! input (`flush`, or `flush_stepwise` a window end at a time), and handing the buffered
//! results to the driver (`emit`), which is when their latency is recorded. Invariant: a
//! query's results leave in the order its pipeline produced them, and a query is visited
//! by `emit` only when it may have some (`unemitted`).

use super::{Emitted, Engine};
use crate::core::schema::Nanos;

impl Engine {
    /// Closes arrival-time windows that have ended by `now`. `frontier(stream)` is the
    /// driver's promise that every tuple of `stream` arriving before it has been ingested
    /// (sources may stamp tuples before the engine sees them); each query's windows wait
    /// only for its own stream.
    pub fn tick(&mut self, now: Nanos, frontier: impl Fn(usize) -> Nanos) {
        self.tick_timed(now, frontier, || 0);
    }

    /// `tick`, charging the work of closing each query's windows to that query's busy
    /// time (read from `clock`), so the load model sees it as query work that shedding
    /// reduces rather than as engine overhead. Returns the nanoseconds charged, which
    /// the driver leaves out of its overhead.
    ///
    /// The clock is read only after a query whose tick emitted rows (a few reads per tick
    /// even with thousands of queries): the cheap checks of the quiet queries before it
    /// are charged to it too.
    pub fn tick_timed(
        &mut self,
        now: Nanos,
        frontier: impl Fn(usize) -> Nanos,
        mut clock: impl FnMut() -> Nanos,
    ) -> Nanos {
        for r in self.streams.iter_mut().filter_map(|s| s.retained.as_mut()) {
            r.evict(Some(now));
        }
        let mut charged = self.close_lost(&mut clock);
        let mut last = clock();
        for qi in 0..self.queries.len() {
            let q = &mut self.queries[qi];
            if q.pipeline.is_windowed() && !q.removed {
                let now = now.min(frontier(q.stream));
                let bound = q.queue.oldest_arrival().map_or(now, |a| a.min(now));
                let before = q.out.len();
                q.pipeline.on_tick(bound, &mut q.out);
                if q.out.len() != before {
                    let at = clock();
                    let ns = (at - last).max(0);
                    q.stats.busy += ns as u64;
                    self.accounted += ns as u64;
                    self.scheduler.charge(qi, ns);
                    charged += ns;
                    last = at;
                }
                self.note_work(qi);
            }
        }
        charged
    }

    /// Live runtimes: lost times that find a query's queue empty wait for `close_lost`
    /// (called right after ingest, timed) instead of closing windows inside `ingest`,
    /// whose time is engine overhead: the closing is then the query's busy time, which
    /// the load model sees and shedding reduces.
    pub fn set_lost_deferred(&mut self, defer: bool) {
        self.defer_lost = defer;
    }

    /// Tells each query the lost times it holds back (`set_lost_deferred`), closing the
    /// windows they complete, and charges the work to that query's busy time (read from
    /// `clock`). Returns the nanoseconds charged, which the driver leaves out of its
    /// overhead. Costs nothing when no time is held back.
    pub fn close_lost(&mut self, mut clock: impl FnMut() -> Nanos) -> Nanos {
        if self.lost_pending.is_empty() {
            return 0;
        }
        let mut last = clock();
        let mut charged: Nanos = 0;
        while let Some(qi) = self.lost_pending.pop_first() {
            let q = &mut self.queries[qi];
            q.settle_pending();
            let at = clock();
            let ns = (at - last).max(0);
            q.stats.busy += ns as u64;
            self.accounted += ns as u64;
            self.scheduler.charge(qi, ns);
            charged += ns;
            last = at;
            self.note_work(qi);
        }
        charged
    }

    /// `flush`, a window end at a time so that a huge final state is emitted (and its
    /// rows handed on) in steps, and the driver can stop between them: after each step
    /// `emit` hands on that step's rows, and `keep_going` decides whether to go on (false:
    /// an abort; the rest is not emitted). Queries are flushed in index order, each whole
    /// before the next, so rows leave in the order `flush` gives them. True when every
    /// open window was emitted.
    pub fn flush_stepwise(
        &mut self,
        now: Nanos,
        mut emit: impl FnMut(&mut Engine),
        mut keep_going: impl FnMut() -> bool,
    ) -> bool {
        self.close_lost(|| 0);
        for qi in 0..self.queries.len() {
            loop {
                let q = &mut self.queries[qi];
                let more = q.pipeline.flush_step(now, &mut q.out);
                if !q.out.is_empty() {
                    self.unemitted.insert(qi);
                    emit(self);
                }
                if !keep_going() {
                    return false;
                }
                if !more {
                    break;
                }
            }
            let q = &mut self.queries[qi];
            q.pipeline.flush(now, &mut q.out);
            if !q.out.is_empty() {
                self.unemitted.insert(qi);
                emit(self);
            }
        }
        true
    }

    /// Emits every open window: call at end of input, after the queues are drained.
    pub fn flush(&mut self, now: Nanos) {
        self.close_lost(|| 0);
        for (qi, q) in self.queries.iter_mut().enumerate() {
            q.pipeline.flush(now, &mut q.out);
            if !q.out.is_empty() {
                self.unemitted.insert(qi);
            }
        }
    }

    /// Whether some query may hold results not yet emitted (a window closed by the time
    /// of shed rows has no turn of its own to hand them out after).
    pub fn has_results(&self) -> bool {
        !self.unemitted.is_empty()
    }

    /// Hands every pending result to `sink` as emitted at `now`, recording its latency,
    /// in query order. Visits only the queries that may have results.
    pub fn emit(&mut self, now: Nanos, mut sink: impl FnMut(&Emitted<'_>)) {
        while let Some(index) = self.unemitted.pop_first() {
            self.emit_one(index, now, &mut sink);
        }
    }

    /// `emit` for query `index` alone.
    pub(super) fn emit_one(
        &mut self,
        index: usize,
        now: Nanos,
        mut sink: impl FnMut(&Emitted<'_>),
    ) {
        let q = &mut self.queries[index];
        if q.pipeline.closing_due().is_some() {
            // Whatever closed it (a tick, a lost time), the rest is emitted by its turns.
            self.queued.insert(index);
        }
        if q.out.is_empty() {
            return;
        }
        q.stats.record_latencies(now, &q.out.rows.arrival);
        q.stats.results += q.out.len() as u64;
        q.out.approx.pad(q.out.len());
        sink(&Emitted {
            index,
            query: &q.def.name,
            names: &self.names[index],
            types: q.pipeline.output_types(),
            batch: &q.out.rows,
            approx: (!q.out.approx.is_exact()).then_some(&q.out.approx),
            emitted_at: now,
        });
        q.out.clear();
    }
}
