//! The QoS monitor: every control tick it reads the engine's counters (never a lock, never
//! a tuple), turns them into rates, per-tuple costs, selectivities, queueing delays,
//! latency percentiles over a sliding window, delivered fractions and utilities, checks the
//! conservation ledger, and publishes the result as a `QosSnapshot`.

use hdrhistogram::Histogram;

use crate::core::engine::{Engine, ValueObserver};
use crate::core::schema::Nanos;
use crate::core::stats::{EngineSnapshot, latency_histogram};
use crate::qos::{CostModel, Ewma, RobustRate, ValueHistogram, loss_utility};
use crate::spec::{QosSpec, Workload};

/// Bins of a value histogram between the first and last point of a value-utility curve.
pub const VALUE_BINS: usize = 32;
/// How much of the previous value histogram survives each tick.
const VALUE_DECAY: f64 = 0.8;
/// Smoothing of rates and costs (weight of the newest tick).
const ALPHA: f64 = 0.5;
/// Ticks of result latency the control signal is computed over.
const CONTROL_TICKS: usize = 2;

/// One query as the monitor sees it at a tick.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryQos {
    pub name: String,
    pub stream: usize,
    /// Tuples per second processed by the pipeline, over the sliding window.
    pub rate_in: f64,
    /// Result rows per second, over the sliding window.
    pub rate_out: f64,
    /// Queued tuples and the age of the oldest one (input queueing delay, ns).
    pub queued: usize,
    pub queue_delay: Nanos,
    /// Processing cost per input tuple, ns, and work per second independent of the input
    /// (closing windows), ns/s: a least-squares fit of busy time against tuples per tick.
    pub cost: f64,
    pub fixed_cost: f64,
    /// Work per emitted row beyond the per-tuple work (window closing, sinks), ns; 0 when
    /// the fit cannot tell rows from tuples.
    pub row_cost: f64,
    /// Result rows per second over the last ticks (robust: one odd tick does not move it).
    pub row_rate: f64,
    /// Results per processed tuple.
    pub selectivity: f64,
    /// Result latency percentiles over the sliding window (ns).
    pub p50: Nanos,
    pub p99: Nanos,
    /// Latency at the QoS target's percentile over the last two ticks, or the queueing
    /// delay of the oldest queued tuple if larger (a backlog shows before its results do):
    /// the shedder's feedback signal.
    pub latency: Option<Nanos>,
    pub target: Option<Nanos>,
    /// Share of offered tuples that reached the pipeline over the last tick (EWMA).
    pub delivered: f64,
    /// Utility from the loss-tolerance graph at `delivered` (1 without QoS).
    pub utility: f64,
    /// Tuples shed so far (all drop points and reasons, queue-full excluded).
    pub shed: u64,
    pub queue_full: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StreamQos {
    pub name: String,
    /// Offered tuples per second (before any drop).
    pub rate: f64,
}

/// Everything the monitor knows at one tick.
#[derive(Clone, Debug, PartialEq)]
pub struct QosSnapshot {
    pub at: Nanos,
    pub streams: Vec<StreamQos>,
    pub queries: Vec<QueryQos>,
    /// Busy share of the engine over the last tick, 0..1 (can exceed 1 with several cores).
    pub busy: f64,
    /// Engine work outside query turns (ingest), ns per second, smoothed.
    pub overhead: f64,
    /// Ticks whose ledger did not balance (0 unless there is a bug).
    pub violations: u64,
    /// The load model checked against what happened: `(measured - predicted) / predicted`
    /// query work over this tick, where the prediction is the previous plan's expected
    /// load (capped at capacity); `None` before the first plan or when nothing was
    /// predicted. Filled by the control loop, which owns the plan.
    pub model_error: Option<f64>,
    /// Mean of `|model_error|` over the run's shedding ticks so far.
    pub model_error_mean: Option<f64>,
    /// The engine counters this snapshot was computed from.
    pub engine: EngineSnapshot,
}

struct QueryTrack {
    qos: Option<QosSpec>,
    cost: CostModel,
    rows: RobustRate,
    delivered: Ewma,
    ring: Vec<Histogram<u64>>,
    sum: Histogram<u64>,
    /// Scratch for the control signal's short window (reused, not reallocated per tick).
    recent: Histogram<u64>,
    next: usize,
    /// (processed, results, seconds) of each tick in the window.
    counts: std::collections::VecDeque<(f64, f64, f64)>,
    /// Value histogram of the query's value-QoS field and its engine observer index.
    value: Option<(ValueHistogram, usize, usize)>,
}

pub struct Monitor {
    queries: Vec<QueryTrack>,
    rates: Vec<RobustRate>,
    prev: Option<EngineSnapshot>,
    prev_at: Nanos,
    violations: u64,
    overhead: Ewma,
}

impl Monitor {
    /// Sets up tracking for `w`'s queries on `engine`, with a sliding latency window of
    /// `window_ticks` ticks, and registers value observers for value-QoS fields.
    pub fn new(w: &Workload, engine: &mut Engine, window_ticks: usize, start: Nanos) -> Monitor {
        let queries = w
            .queries
            .iter()
            .enumerate()
            .map(|(qi, q)| {
                let value = q.qos.as_ref().and_then(|qos| qos.value.as_ref()).map(|v| {
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
                    qos: q.qos.clone(),
                    cost: CostModel::default(),
                    rows: RobustRate::default(),
                    delivered: Ewma::new(ALPHA),
                    ring: (0..window_ticks.max(1))
                        .map(|_| latency_histogram())
                        .collect(),
                    sum: latency_histogram(),
                    recent: latency_histogram(),
                    next: 0,
                    counts: std::collections::VecDeque::new(),
                    value,
                }
            })
            .collect();
        Monitor {
            queries,
            rates: w.streams.iter().map(|_| RobustRate::default()).collect(),
            prev: None,
            prev_at: start,
            violations: 0,
            overhead: Ewma::new(ALPHA),
        }
    }

    /// The value histogram behind query `q`'s value QoS, if it has one.
    pub fn value_histogram(&self, q: usize) -> Option<&ValueHistogram> {
        self.queries[q].value.as_ref().map(|(h, _, _)| h)
    }

    pub fn violations(&self) -> u64 {
        self.violations
    }

    /// Result latencies of query `q` recorded during the last tick.
    pub fn tick_latency(&self, q: usize) -> &Histogram<u64> {
        let t = &self.queries[q];
        &t.ring[(t.next + t.ring.len() - 1) % t.ring.len()]
    }

    /// Result latencies of query `q` over the sliding window (the last second).
    pub fn window_latency(&self, q: usize) -> &Histogram<u64> {
        &self.queries[q].sum
    }

    /// Takes the measurements of the tick ending at `now`.
    pub fn tick(&mut self, engine: &mut Engine, now: Nanos) -> QosSnapshot {
        let snap = engine.snapshot(false);
        let dt = ((now - self.prev_at).max(1)) as f64 / 1e9;
        let prev = self.prev.take().unwrap_or_else(|| zeroed(&snap));
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
            t.cost.update_with_rows(processed, results, busy, dt);
            let row_rate = t.rows.update(results / dt);
            let offered = (q.offered - p.offered) as f64;
            let dropped: u64 = q.dropped.iter().sum::<u64>() - p.dropped.iter().sum::<u64>();
            if offered > 0.0 {
                t.delivered.update(1.0 - dropped as f64 / offered);
            }
            // Slide the latency window by one tick.
            let tick = engine.tick_latency(qi);
            let _ = t.sum.subtract(&t.ring[t.next]);
            t.ring[t.next].reset();
            let _ = t.ring[t.next].add(tick);
            let _ = t.sum.add(tick);
            t.next = (t.next + 1) % t.ring.len();
            if let Some((hist, stream, obs)) = &mut t.value {
                hist.decay(VALUE_DECAY);
                let counts = &engine.value_counts(*stream, *obs).counts;
                for (i, &c) in counts.iter().enumerate() {
                    hist.add_to_bin(i, c as f64);
                }
            }
            if t.counts.len() == t.ring.len() {
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
            // The control signal looks at the last `CONTROL_TICKS` ticks only: a longer
            // window would keep reporting a backlog long gone and make the loop overshoot.
            let latency = target.map(|l| {
                let n = t.ring.len();
                let recent = &mut t.recent;
                recent.reset();
                for k in 1..=CONTROL_TICKS.min(n) {
                    let _ = recent.add(&t.ring[(t.next + n - k) % n]);
                }
                let at = if recent.is_empty() {
                    0
                } else {
                    recent.value_at_percentile(l.percentile) as Nanos
                };
                at.max(queue_delay)
            });
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
                row_rate,
                selectivity: if processed > 0.0 {
                    (q.results - p.results) as f64 / processed
                } else {
                    0.0
                },
                p50: percentile(&t.sum, 50.0),
                p99: percentile(&t.sum, 99.0),
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
            });
        }
        engine.reset_tick_latency();
        engine.reset_value_counts();
        self.prev = Some(snap.clone());
        self.prev_at = now;
        QosSnapshot {
            at: now,
            streams,
            queries,
            busy: busy_total / (dt * 1e9),
            overhead: self
                .overhead
                .update((snap.overhead - prev.overhead) as f64 / dt)
                .unwrap_or(0.0),
            violations: self.violations,
            model_error: None,
            model_error_mean: None,
            engine: snap,
        }
    }
}

fn percentile(h: &Histogram<u64>, p: f64) -> Nanos {
    if h.is_empty() {
        0
    } else {
        h.value_at_percentile(p) as Nanos
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
    for q in &mut z.queries {
        q.offered = 0;
        q.dropped = [0; crate::core::drop::DropReason::COUNT];
        q.busy = 0;
        q.processed = 0;
        q.results = 0;
    }
    z
}
