//! The QoS monitor: every control tick it reads the engine's counters (never a lock, never
//! a tuple), turns them into rates, per-tuple costs, selectivities, queueing delays,
//! latency percentiles over a sliding window, delivered fractions and utilities, checks the
//! conservation ledger, and publishes the result as a `QosSnapshot`.

use hdrhistogram::Histogram;

use crate::core::engine::{Engine, ValueObserver};
use crate::core::schema::Nanos;
use crate::core::stats::EngineSnapshot;
use crate::qos::{
    CostModel, Ewma, LatencyWindow, MergeScratch, RobustRate, RowRate, ValueHistogram, loss_utility,
};
use crate::spec::{QosSpec, Workload};

mod snapshot;
pub use snapshot::{QosSnapshot, QueryQos, StreamQos};

/// Bins of a value histogram between the first and last point of a value-utility curve.
pub const VALUE_BINS: usize = 32;
/// How much of the previous value histogram survives each tick.
const VALUE_DECAY: f64 = 0.8;
/// Smoothing of rates and costs (weight of the newest tick).
const ALPHA: f64 = 0.5;
/// Ticks of result latency the control signal is computed over.
pub const CONTROL_TICKS: usize = 2;

struct QueryTrack {
    qos: Option<QosSpec>,
    cost: CostModel,
    rows: RowRate,
    delivered: Ewma,
    /// Queued tuples thinned since the last tick (`note_thinned`): dropped, but admitted
    /// at earlier ticks, so no share of this tick's offered input.
    thinned: u64,
    /// Latencies of the last `window_ticks` ticks, sparse (an idle query holds nothing).
    latency: LatencyWindow,
    /// The last tick's result latencies (what observers fold into their own buckets),
    /// taken from the engine by a swap each tick: `None` after a tick without results.
    last_tick: Option<Box<Histogram<u64>>>,
    /// (processed, results, seconds) of each tick in the window.
    counts: std::collections::VecDeque<(f64, f64, f64)>,
    /// Value histogram of the query's value-QoS field and its engine observer index.
    value: Option<(ValueHistogram, usize, usize)>,
    /// The query left the run (its slot stays, so indices keep matching the engine's).
    removed: bool,
}

/// A fresh track for query `qi` of `engine` under `qos`, registering its value observer.
fn track(engine: &mut Engine, qi: usize, qos: Option<QosSpec>, window_ticks: usize) -> QueryTrack {
    let value = qos.as_ref().and_then(|qos| qos.value.as_ref()).map(|v| {
        let hist = ValueHistogram::new(&v.curve, VALUE_BINS);
        let b = hist.binning();
        let stream = engine.query_stream(qi);
        let obs = engine.observe_values(
            stream,
            ValueObserver {
                column: v.column,
                lo: b.lo(),
                hi: b.hi(),
                width: b.width(),
                counts: vec![0; b.len()],
            },
        );
        (hist, stream, obs)
    });
    QueryTrack {
        qos,
        cost: CostModel::default(),
        // Rows come as the window slides: per close when that is longer than a few ticks.
        rows: RowRate::new(match &engine.query_plan(qi).body {
            crate::core::plan::PlanBody::Aggregate(a) => a.window.slide as f64 / 1e9,
            _ => 0.0,
        }),
        delivered: Ewma::new(ALPHA),
        thinned: 0,
        latency: LatencyWindow::new(window_ticks),
        last_tick: None,
        counts: std::collections::VecDeque::new(),
        value,
        removed: false,
    }
}

pub struct Monitor {
    queries: Vec<QueryTrack>,
    /// Ticks in the latency and rate windows (one second of ticks).
    window_ticks: usize,
    /// What `tick_latency` shows for a query that has no result yet.
    empty: Histogram<u64>,
    rates: Vec<RobustRate>,
    prev: Option<EngineSnapshot>,
    prev_at: Nanos,
    violations: u64,
    overhead: Ewma,
    /// Offered tuples per second (all streams) over the ticks `overhead` averages: ingest
    /// and fan-out scale with the offered input, so a surge raises them before the
    /// average sees it.
    overhead_rate: Ewma,
    /// Engine work outside query turns fitted as fixed plus per tuple passing the stream
    /// drop points (the fan-out a stream drop saves).
    fan_out: CostModel,
    /// Percentile scratch shared by every query.
    scratch: MergeScratch,
}

impl Monitor {
    /// Sets up tracking for `w`'s queries on `engine`, with a sliding latency window of
    /// `window_ticks` ticks, and registers value observers for value-QoS fields.
    pub fn new(w: &Workload, engine: &mut Engine, window_ticks: usize, start: Nanos) -> Monitor {
        let window_ticks = window_ticks.max(1);
        let queries = w
            .queries
            .iter()
            .enumerate()
            .map(|(qi, q)| track(engine, qi, q.qos.clone(), window_ticks))
            .collect();
        Monitor {
            queries,
            window_ticks,
            empty: crate::core::stats::latency_histogram(),
            rates: w.streams.iter().map(|_| RobustRate::default()).collect(),
            prev: None,
            prev_at: start,
            violations: 0,
            overhead: Ewma::new(ALPHA),
            overhead_rate: Ewma::new(ALPHA),
            fan_out: CostModel::default(),
            scratch: MergeScratch::default(),
        }
    }

    /// Starts tracking query `q`, just added to `engine`, under `qos`.
    pub fn add_query(&mut self, engine: &mut Engine, q: usize, qos: Option<QosSpec>) {
        debug_assert_eq!(q, self.queries.len(), "queries are added in index order");
        let t = track(engine, q, qos, self.window_ticks);
        self.queries.push(t);
    }

    /// Changes the QoS query `q` is judged by (its value histogram restarts if the value
    /// graph changed).
    pub fn set_qos(&mut self, engine: &mut Engine, q: usize, qos: Option<QosSpec>) {
        let value = |s: &Option<QosSpec>| s.as_ref().and_then(|s| s.value.clone());
        if value(&self.queries[q].qos) != value(&qos) {
            self.retire_value(engine, q);
            let fresh = track(engine, q, qos.clone(), 1);
            self.queries[q].value = fresh.value;
        }
        self.queries[q].qos = qos;
    }

    /// Stops judging query `q` (removed): no target, no value observer.
    pub fn remove_query(&mut self, engine: &mut Engine, q: usize) {
        self.retire_value(engine, q);
        self.queries[q].qos = None;
        self.queries[q].removed = true;
    }

    fn retire_value(&mut self, engine: &mut Engine, q: usize) {
        if let Some((_, stream, obs)) = self.queries[q].value.take() {
            engine.stop_observing(stream, obs);
        }
    }

    /// The value histogram behind query `q`'s value QoS, if it has one.
    pub fn value_histogram(&self, q: usize) -> Option<&ValueHistogram> {
        self.queries[q].value.as_ref().map(|(h, _, _)| h)
    }

    /// Ticks in the sliding windows.
    pub fn window_ticks(&self) -> usize {
        self.window_ticks
    }

    /// Whether state the snapshot does not show has settled: every value histogram has
    /// decayed to zero (with no input, each tick multiplies it by `VALUE_DECAY`).
    pub fn settled(&self) -> bool {
        self.queries.iter().all(|t| {
            t.value
                .as_ref()
                .is_none_or(|(h, _, _)| h.counts().iter().all(|&c| c == 0.0))
        })
    }

    /// Records that identical idle ticks ran up to `last_at` (`Controller::fold_ticks`):
    /// the next tick measures from there.
    pub fn fold(&mut self, last_at: Nanos) {
        self.prev_at = last_at;
    }

    pub fn violations(&self) -> u64 {
        self.violations
    }

    /// Notes that `n` tuples queued for query `q` were thinned since the last tick.
    pub fn note_thinned(&mut self, q: usize, n: u64) {
        if let Some(t) = self.queries.get_mut(q) {
            t.thinned += n;
        }
    }

    /// Result latencies of query `q` recorded during the last tick.
    pub fn tick_latency(&self, q: usize) -> &Histogram<u64> {
        self.queries[q].last_tick.as_deref().unwrap_or(&self.empty)
    }

    /// Takes the measurements of the tick ending at `now`.
    pub fn tick(&mut self, engine: &mut Engine, now: Nanos) -> QosSnapshot {
        engine.refresh_quantiles();
        let snap = engine.snapshot();
        let dt = ((now - self.prev_at).max(1)) as f64 / 1e9;
        let mut prev = self.prev.take().unwrap_or_else(|| zeroed(&snap));
        // Queries added since the last tick start from zero (their ledger starts at
        // registration).
        if prev.queries.len() < snap.queries.len() {
            let fresh = zeroed(&snap).queries.split_off(prev.queries.len());
            prev.queries.extend(fresh);
        }
        if !snap.queries.iter().all(|q| q.balances()) {
            self.violations += 1;
            debug_assert!(false, "conservation ledger violated: {:?}", snap.queries);
        }
        let streams: Vec<StreamQos> = snap
            .streams
            .iter()
            .zip(&prev.streams)
            .zip(&mut self.rates)
            .map(|((s, p), est)| StreamQos {
                name: s.name.clone(),
                // The median of the last ticks, raised at once when two ticks agree: a surge
                // is met within two ticks, and one odd tick (an engine pause, a stalled
                // source, a catch-up burst) moves nothing.
                rate: est.update((s.ingested - p.ingested) as f64 / dt),
            })
            .collect();
        // Tuples past each stream's drop point this tick (offered, less shed there; inputs
        // that never parsed were never offered).
        let passed_of = |s: &crate::core::stats::StreamSnapshot| {
            let shed: u64 = s.dropped.iter().sum::<u64>()
                - s.dropped[crate::core::drop::DropReason::Malformed.index()];
            s.ingested.saturating_sub(shed)
        };
        let passed: Vec<f64> = snap
            .streams
            .iter()
            .zip(&prev.streams)
            .map(|(s, p)| passed_of(s).saturating_sub(passed_of(p)) as f64)
            .collect();
        let mut busy_total = 0.0;
        let mut queries = Vec::with_capacity(snap.queries.len());
        for (qi, ((q, p), t)) in snap
            .queries
            .iter()
            .zip(&prev.queries)
            .zip(&mut self.queries)
            .enumerate()
        {
            let processed = (q.processed - p.processed) as f64;
            let busy = (q.busy - p.busy) as f64;
            busy_total += busy;
            let results = (q.results - p.results) as f64;
            let reached = passed
                .get(engine.query_stream(qi))
                .copied()
                .unwrap_or(processed);
            t.cost.update_full(reached, processed, results, busy, dt);
            let row_rate = t.rows.update(results, dt);
            let offered = (q.offered - p.offered) as f64;
            // Tuples a plan thinned from the queue count in `dropped` (the ledger), but
            // they were offered at earlier ticks: they are no part of what this tick's
            // input delivered (a tick that thinned three times its input would read -2).
            let dropped: u64 = (q.dropped.iter().sum::<u64>() - p.dropped.iter().sum::<u64>())
                .saturating_sub(std::mem::take(&mut t.thinned));
            if offered > 0.0 {
                t.delivered.update(1.0 - dropped as f64 / offered);
            }
            // Slide the latency window by one tick. The tick's histogram is taken from the
            // engine, which gets the last one back to empty (`reset_tick_latency` below).
            // Its latencies are read as runs (`refresh_quantiles` above folded them).
            engine.swap_tick_latency(qi, &mut t.last_tick);
            t.latency.push_runs(engine.tick_runs(qi));
            if let Some((hist, stream, obs)) = &mut t.value {
                hist.decay(VALUE_DECAY);
                let counts = &engine.value_counts(*stream, *obs).counts;
                for (i, &c) in counts.iter().enumerate() {
                    hist.add_to_bin(i, c as f64);
                }
            }
            if t.counts.len() == self.window_ticks {
                t.counts.pop_front();
            }
            t.counts
                .push_back((processed, (q.results - p.results) as f64, dt));
            let (win_in, win_out, win_secs) = t
                .counts
                .iter()
                .fold((0.0, 0.0, 0.0), |a, c| (a.0 + c.0, a.1 + c.1, a.2 + c.2));
            let queue_delay = engine.oldest_queued(qi).map_or(0, |a| (now - a).max(0));
            let target = t.qos.as_ref().and_then(|s| s.latency);
            // The control signal looks at the last `CONTROL_SLOTS` slots only: a longer
            // window would keep reporting a backlog long gone and make the loop overshoot.
            let scratch = &mut self.scratch;
            let latency = target.map(|l| {
                let at = t.latency.percentile(l.percentile, CONTROL_TICKS, scratch);
                (at.unwrap_or(0) as Nanos).max(queue_delay)
            });
            let [p50, p99] = t
                .latency
                .percentiles([50.0, 99.0], self.window_ticks, scratch)
                .unwrap_or([0, 0]);
            let delivered = t.delivered.value().unwrap_or(1.0);
            let curve = t.qos.as_ref().and_then(|s| s.loss_tolerance.as_ref());
            queries.push(QueryQos {
                name: q.name.clone(),
                stream: engine.query_stream(qi),
                rate_in: win_in / win_secs,
                rate_out: win_out / win_secs,
                queued: q.queued as usize,
                queue_delay,
                cost: t.cost.per_tuple(),
                fixed_cost: t.cost.fixed(),
                row_cost: t.cost.per_row(),
                passed_cost: t.cost.per_passed(),
                row_rate,
                selectivity: if processed > 0.0 {
                    (q.results - p.results) as f64 / processed
                } else {
                    0.0
                },
                p50: p50 as Nanos,
                p99: p99 as Nanos,
                latency,
                target: target.map(|l| l.target),
                delivered,
                utility: if t.qos.is_some() {
                    loss_utility(curve, 100.0 * delivered)
                } else {
                    1.0
                },
                shed: q.shed(),
                queue_full: q.queue_full(),
                removed: t.removed,
                values: t
                    .value
                    .as_ref()
                    .map(|(h, _, _)| (h.binning(), h.counts().to_vec())),
            });
        }
        engine.reset_tick_latency();
        engine.reset_value_counts();
        self.prev = Some(snap.clone());
        self.prev_at = now;
        let offered: u64 = snap
            .streams
            .iter()
            .map(|s| s.ingested)
            .sum::<u64>()
            .saturating_sub(prev.streams.iter().map(|s| s.ingested).sum::<u64>());
        let smoothed_rate = self
            .overhead_rate
            .update(offered as f64 / dt)
            .unwrap_or(0.0);
        let rate_now: f64 = streams.iter().map(|s| s.rate).sum();
        let smoothed_overhead = self
            .overhead
            .update((snap.overhead - prev.overhead) as f64 / dt)
            .unwrap_or(0.0);
        let ingest_cost = if smoothed_rate > 0.0 {
            smoothed_overhead / smoothed_rate
        } else {
            0.0
        };
        // Ingest follows the offered input: a rise the average has not caught up with
        // raises it at once (never lowered: the average follows falls by itself).
        let overhead = smoothed_overhead
            * if smoothed_rate > 0.0 {
                (rate_now / smoothed_rate).clamp(1.0, 4.0)
            } else {
                1.0
            };
        // Ingest per tuple past the stream drop points (fan-out: what a stream drop saves),
        // per tuple offered (the stream drop decision itself, which no drop saves) and
        // fixed: with every stream keeping little, charging it all to the tuples passed
        // would make each look ever dearer.
        self.fan_out.update_full(
            offered as f64,
            passed.iter().sum::<f64>(),
            0.0,
            snap.overhead.saturating_sub(prev.overhead) as f64,
            dt,
        );
        QosSnapshot {
            at: now,
            fan_out_cost: self.fan_out.per_tuple(),
            // The model's "passed" slot holds the tuples offered (above).
            overhead_fixed: self.fan_out.fixed() + self.fan_out.per_passed() * rate_now,
            streams,
            queries,
            busy: busy_total / (dt * 1e9),
            idle: snap.idle.saturating_sub(prev.idle) as f64 / dt,
            overhead,
            ingest_cost,
            violations: self.violations,
            model_error: None,
            model_error_mean: None,
            engine: snap,
        }
    }
}

/// A snapshot with every counter at zero: the baseline before the first tick.
pub fn zeroed(s: &EngineSnapshot) -> EngineSnapshot {
    let mut z = s.clone();
    for st in &mut z.streams {
        st.ingested = 0;
        st.dropped = [0; crate::core::drop::DropReason::COUNT];
    }
    z.overhead = 0;
    z.idle = 0;
    for q in &mut z.queries {
        q.offered = 0;
        q.dropped = [0; crate::core::drop::DropReason::COUNT];
        q.busy = 0;
        q.processed = 0;
        q.results = 0;
        q.processed_values.iter_mut().for_each(|c| *c = 0);
    }
    z
}
