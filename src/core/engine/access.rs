//! Read access to the engine for drivers and the QoS monitor (indices, plans, queues,
//! histograms, value observers), the few counters drivers feed in (busy time,
//! overhead) and the close step they set. Nothing here touches tuples.

use super::{Engine, ValueObserver};
use crate::core::plan::QueryPlan;
use crate::core::schema::{Nanos, Schema};

impl Engine {
    /// Whether any query has queued input, or a closed window still being emitted
    /// (`set_close_step`).
    pub fn has_work(&self) -> bool {
        self.queued.iter().any(|q| self.queries[q].has_work())
    }

    /// The queries with queued input, in index order.
    pub fn queued_queries(&self) -> impl Iterator<Item = usize> + '_ {
        self.queued
            .iter()
            .filter(|&q| !self.queries[q].queue.is_empty())
    }

    /// Rows a query's window close emits in one turn at most: the rest of a large close is
    /// emitted by later turns of that query, scheduled like queued input (its rows' due
    /// arrival counts as the oldest queued), so a query with a tighter target can run in
    /// between. Unbounded by default; applies to the queries added later too.
    pub fn set_close_step(&mut self, rows: usize) {
        self.close_step = rows.max(1);
        for q in &mut self.queries {
            q.pipeline.set_close_step(self.close_step);
        }
    }

    /// Makes the round-robin scheduler share engine time rather than turns: a query with
    /// work gets `quantum` ns of turns a round, as measured by `record_busy` (deficit
    /// round robin), so a query whose turns are long (a close step, a batch of a costly
    /// aggregate) does not hold back a cheap query to one batch a round. `0`, the
    /// default, goes back to a turn a round; other schedulers are not affected.
    pub fn set_turn_quantum(&mut self, quantum: Nanos) {
        self.scheduler.set_quantum(quantum);
    }

    /// Whether a `tick` could emit a row: some query has an open arrival-time window.
    /// When it cannot, and no query has queued input, a tick changes nothing that shows.
    pub fn awaits_tick(&self) -> bool {
        self.queries
            .iter()
            .any(|q| !q.removed && q.pipeline.awaits_tick())
    }

    pub fn stream_schema(&self, stream: usize) -> &Schema {
        &self.streams[stream].def.schema
    }

    /// Starts counting the values of `observer.column` of `stream` at ingest; returns its
    /// index for `value_counts`.
    pub fn observe_values(&mut self, stream: usize, observer: ValueObserver) -> usize {
        let obs = &mut self.streams[stream].observers;
        obs.push(observer);
        obs.len() - 1
    }

    /// Starts counting the values of `observer.column` of every tuple query `q` processes
    /// (replacing any earlier such observer); `QuerySnapshot::processed_values` reports them.
    pub fn observe_processed_values(&mut self, q: usize, observer: ValueObserver) {
        self.queries[q].processed_values = Some(observer);
        let stream = self.queries[q].stream;
        self.streams[stream].shared.invalidate();
    }

    /// Retires a value observer (its query left): it counts nothing from now on, and its
    /// index stays valid.
    pub fn stop_observing(&mut self, stream: usize, observer: usize) {
        self.streams[stream].observers[observer].counts = Vec::new();
    }

    /// The counts of a value observer, to read and then age (`decay_values`).
    pub fn value_counts(&self, stream: usize, observer: usize) -> &ValueObserver {
        &self.streams[stream].observers[observer]
    }

    /// Resets the counts of every value observer (the monitor folds them into its own
    /// decaying histograms each tick).
    pub fn reset_value_counts(&mut self) {
        for s in &mut self.streams {
            for o in &mut s.observers {
                o.counts.iter_mut().for_each(|c| *c = 0);
            }
        }
    }

    /// Adds `busy` nanoseconds of processing to `query` (the driver times each turn: on the
    /// wall clock live, by declared cost simulated).
    pub fn record_busy(&mut self, query: usize, busy: Nanos) {
        self.queries[query].stats.busy += busy.max(0) as u64;
        self.accounted += busy.max(0) as u64;
        self.scheduler.charge(query, busy);
    }

    /// Adds engine-thread time spent outside query turns (ingest): work the shedder cannot
    /// hand to queries.
    pub fn record_overhead(&mut self, ns: Nanos) {
        self.overhead += ns.max(0) as u64;
        self.accounted += ns.max(0) as u64;
    }

    /// Adds engine-thread time spent waiting for input with nothing to do (live runs):
    /// capacity no plan used.
    pub fn record_idle(&mut self, ns: Nanos) {
        self.idle += ns.max(0) as u64;
        self.accounted += ns.max(0) as u64;
    }

    /// Engine-thread time recorded so far as busy, overhead or idle (ns).
    pub fn accounted(&self) -> u64 {
        self.accounted
    }

    pub fn query_count(&self) -> usize {
        self.queries.len()
    }

    pub fn stream_count(&self) -> usize {
        self.streams.len()
    }

    /// The stream query `q` reads.
    pub fn query_stream(&self, q: usize) -> usize {
        self.queries[q].stream
    }

    pub fn query_plan(&self, q: usize) -> &QueryPlan {
        &self.queries[q].def.plan
    }

    /// Result latencies of query `q` since `reset_tick_latency`. `None` while the query
    /// holds no histogram: before its first result, or after a quiet tick's
    /// `swap_tick_latency` handed the monitor nothing and took nothing back.
    pub fn tick_latency(&self, q: usize) -> Option<&hdrhistogram::Histogram<u64>> {
        self.queries[q].stats.latency_tick.get()
    }

    /// Takes query `q`'s tick histogram into `h` and leaves `h`'s in its place (emptied by
    /// the next `reset_tick_latency`): the monitor reads a tick without copying it.
    pub fn swap_tick_latency(
        &mut self,
        q: usize,
        h: &mut Option<Box<hdrhistogram::Histogram<u64>>>,
    ) {
        self.queries[q].stats.latency_tick.swap(h);
    }

    /// Query `q`'s latencies of this tick as runs (`core::latency_runs`), as of the last
    /// `refresh_quantiles`: what its tick histogram holds, without a pass over its buckets.
    pub fn tick_runs(&self, q: usize) -> &[(u64, u64)] {
        self.queries[q].stats.tick_runs()
    }

    /// Empties every query's tick histogram. An empty one is left alone (clearing one costs
    /// a pass over its buckets, and most of many queries record nothing in a tick).
    pub fn reset_tick_latency(&mut self) {
        for q in &mut self.queries {
            q.stats.reset_tick();
        }
    }

    /// Folds each query's latencies recorded since the last call into its runs
    /// (`tick_runs`) and caches its run-long quantiles where new values came in since: a
    /// `snapshot` every tick then costs no query a pass over its histograms.
    pub fn refresh_quantiles(&mut self) {
        for q in &mut self.queries {
            q.stats.fold_runs();
        }
    }

    /// How many queries read `stream` (removed ones included).
    pub fn stream_readers(&self, stream: usize) -> usize {
        self.streams[stream].readers.len()
    }

    /// Arrival time of the oldest tuple waiting in query `q`'s input queue.
    pub fn oldest_queued(&self, q: usize) -> Option<Nanos> {
        self.queries[q].queue.oldest_arrival()
    }

    /// Tuples queued for query `q`.
    pub fn queue_depth(&self, q: usize) -> usize {
        self.queries[q].queue.depth()
    }

    /// Tuples queued over all queries.
    pub fn queued(&self) -> usize {
        self.queries.iter().map(|q| q.queue.depth()).sum()
    }

    /// Tuples stream `stream` may still offer before a query reading it would have a full
    /// queue, or the queues together their memory budget (at the most bytes a row of the
    /// stream has taken so far): what a `pull` source may send now. A lossless query's
    /// unbounded queue counts as `pull_bound` tuples, so pull sources keep memory bounded
    /// for it too.
    pub fn stream_room(&self, stream: usize) -> usize {
        let s = &self.streams[stream];
        s.readers
            .iter()
            .map(|&q| {
                self.reader_bound(q)
                    .saturating_sub(self.queries[q].queue.depth())
            })
            .min()
            .unwrap_or(usize::MAX)
            .min(self.memory_room(stream, self.held.used()))
    }

    /// Whether `stream_room(stream) >= rows`, the memory budget looked at first (with
    /// many readers the budget is what binds, and it costs no walk over them).
    pub fn stream_has_room(&self, stream: usize, rows: usize) -> bool {
        self.memory_room(stream, self.held.used()) >= rows
            && self.streams[stream]
                .readers
                .iter()
                .all(|&q| self.reader_bound(q) >= self.queries[q].queue.depth() + rows)
    }

    /// `stream_room` once every queue reading `stream` has drained: the most a pull
    /// source could ever send at once (the readers' bounds are walked once, then kept
    /// until a reader or a bound changes).
    pub fn stream_room_empty(&mut self, stream: usize) -> usize {
        let s = &self.streams[stream];
        let bound = s.reader_bound.unwrap_or_else(|| {
            s.readers
                .iter()
                .map(|&q| self.reader_bound(q))
                .min()
                .unwrap_or(usize::MAX)
        });
        self.streams[stream].reader_bound = Some(bound);
        bound.min(self.memory_room(stream, 0))
    }

    /// The most tuples query `q`'s queue may hold for a pull source.
    fn reader_bound(&self, q: usize) -> usize {
        self.queries[q].queue.capacity().min(self.pull_bound)
    }

    /// Rows of `stream` the memory budget still has room for with `held` bytes queued (at
    /// the most bytes a row of the stream has taken so far).
    fn memory_room(&self, stream: usize, held: usize) -> usize {
        self.held.budget().saturating_sub(held) / self.streams[stream].row_bytes.max(1)
    }

    /// Marks `stream` as paced by its source's waiting for room (`Flow::Pull`): the
    /// memory budget never refuses its batches (`stream_room` counts the budget instead),
    /// so a pull source loses nothing to it.
    pub fn set_pulled(&mut self, stream: usize) {
        self.streams[stream].pulled = true;
    }

    /// Makes this engine one of several workers holding queued input against one budget
    /// (`config.queue_memory`, the whole of it): `total` counts what all of them hold
    /// (`Held::share`), so a hot worker is not refused input while the others have room.
    pub fn share_queue_memory(&mut self, total: std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        self.held.share(total);
    }

    /// Whether every query reading `stream` has an empty input queue (a queue always
    /// admits a batch when empty, whatever its bound).
    pub fn stream_drained(&self, stream: usize) -> bool {
        self.streams[stream]
            .readers
            .iter()
            .all(|&q| self.queries[q].queue.is_empty())
    }

    /// Counts `n` malformed inputs of `stream` (a source could not parse them); they never
    /// become tuples, so no query is offered them.
    pub fn record_malformed(&mut self, stream: usize, n: u64) {
        self.streams[stream].malformed += n;
    }

    /// The keep of stream `stream`'s drop point when it is a plain random drop (what a
    /// source may apply itself, `ingest_pre_shed`); 1 for any other rule or stream.
    pub fn stream_random_keep(&self, stream: usize) -> f64 {
        match self.streams.get(stream).map(|s| s.drop.rule()) {
            Some(crate::core::drop::DropRule::Random { keep }) if keep.is_finite() => {
                keep.clamp(0.0, 1.0)
            }
            _ => 1.0,
        }
    }

    /// The rule each drop point applies now: streams then queries.
    pub fn drop_rules(&self) -> crate::core::engine::DropRules {
        crate::core::engine::DropRules {
            streams: self.streams.iter().map(|s| s.drop.rule().clone()).collect(),
            queries: self.queries.iter().map(|q| q.drop.rule().clone()).collect(),
            queue_capacity: None,
        }
    }

    /// The input queue bound the engine was configured with (what a policy without its own
    /// bound goes back to).
    pub fn configured_queue_capacity(&self) -> usize {
        self.config.queue_capacity
    }
}
