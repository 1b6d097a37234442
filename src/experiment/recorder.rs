//! The experiment recorder: an `Observer` that keeps, per tick and per query, the figures
//! an experiment reports (latency, keep fraction, delivered share, processed value
//! counts), and over the run each query's latency histogram and seconds over target.
//!
//! Invariant: it only reads the tick reports the driver hands every observer; it never
//! touches the engine, so a recorded run is the same run as an unrecorded one.

use hdrhistogram::Histogram;

use crate::core::schema::Nanos;
use crate::core::stats::{EngineSnapshot, latency_histogram};
use crate::runtime::observe::{Event, Observer, RunInfo, TickReport};

const SECOND: Nanos = 1_000_000_000;

/// One query at one tick.
#[derive(Clone, Debug, PartialEq)]
pub struct TickRow {
    /// End of the tick, ns since the run started.
    pub at: Nanos,
    pub query: usize,
    /// Tuples offered to the query's stream per second during the tick (the final, short
    /// tick counts as a full one).
    pub input_rate: f64,
    /// Result latency at the target's percentile (p99 without a target) during the tick,
    /// ns; `None` when no result left during it.
    pub latency: Option<Nanos>,
    /// Keep fraction installed at the stream and query drop points, multiplied.
    pub keep: f64,
    /// Share of the tuples offered during the tick that were not dropped.
    pub delivered: f64,
    pub queued: u64,
    /// Tuples processed and their value counts during the tick (for the optimum).
    pub processed: u64,
    pub processed_values: Vec<u64>,
}

/// Per query over the run.
#[derive(Debug)]
pub struct QueryRecord {
    pub latency: Histogram<u64>,
    /// Target and its percentile, from `RunStarted`.
    pub target: Option<(Nanos, f64)>,
    /// One entry per second of the run: was the latency at the target's percentile over it?
    pub seconds_over: Vec<bool>,
    second: Histogram<u64>,
    second_index: i64,
}

/// Everything one run leaves behind for the figures.
#[derive(Debug, Default)]
pub struct Recorder {
    pub info: Option<RunInfo>,
    pub queries: Vec<QueryRecord>,
    pub ticks: Vec<TickRow>,
    /// Counters after the final flush.
    pub last: Option<EngineSnapshot>,
    /// Run time at the final tick.
    pub elapsed: Nanos,
    prev: Option<EngineSnapshot>,
    prev_at: Nanos,
    /// Per query: tuples the last tick's plan thinned from its queue, which this tick's
    /// ledger counts as dropped though they were offered before.
    prev_thinned: Vec<u64>,
    /// Length of the first tick: rates of the short final tick are taken over this much.
    period: Nanos,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder::default()
    }

    fn close_second(q: &mut QueryRecord) {
        let over = match q.target {
            Some((target, pct)) if !q.second.is_empty() => {
                q.second.value_at_percentile(pct) as Nanos > target
            }
            _ => false,
        };
        let i = q.second_index.max(0) as usize;
        if q.seconds_over.len() <= i {
            q.seconds_over.resize(i + 1, false);
        }
        q.seconds_over[i] |= over;
        q.second.reset();
    }
}

impl Observer for Recorder {
    fn on_event(&mut self, event: &Event) {
        if let Event::RunStarted(info) = event {
            self.queries = info
                .queries
                .iter()
                .map(|q| QueryRecord {
                    latency: latency_histogram(),
                    target: q.target,
                    seconds_over: Vec::new(),
                    second: latency_histogram(),
                    second_index: 0,
                })
                .collect();
            self.info = Some(info.clone());
        }
    }

    fn on_tick(&mut self, tick: &TickReport<'_>) {
        let r = tick.control;
        let snap = &r.qos.engine;
        if self.period == 0 {
            self.period = tick.elapsed.max(1);
        }
        let dt = ((tick.elapsed - self.prev_at).max(self.period)) as f64 / 1e9;
        let second = (tick.elapsed - 1).max(0) / SECOND;
        for (qi, rec) in self.queries.iter_mut().enumerate() {
            let h = tick.tick_latency[qi];
            if second != rec.second_index {
                Recorder::close_second(rec);
                rec.second_index = second;
            }
            let _ = rec.latency.add(h);
            let _ = rec.second.add(h);
            if tick.last {
                Recorder::close_second(rec);
            }
            let q = &snap.queries[qi];
            let stream = r.qos.queries[qi].stream;
            let (offered0, dropped0, processed0, ingested0, values0) = match &self.prev {
                Some(p) => (
                    p.queries[qi].offered,
                    p.queries[qi].dropped.iter().sum::<u64>(),
                    p.queries[qi].processed,
                    p.streams[stream].ingested,
                    Some(&p.queries[qi].processed_values),
                ),
                None => (0, 0, 0, 0, None),
            };
            let offered = q.offered - offered0;
            let thinned = self.prev_thinned.get(qi).copied().unwrap_or(0);
            let dropped = (q.dropped.iter().sum::<u64>() - dropped0).saturating_sub(thinned);
            let pct = rec.target.map_or(99.0, |t| t.1);
            self.ticks.push(TickRow {
                at: tick.elapsed,
                query: qi,
                input_rate: (snap.streams[stream].ingested - ingested0) as f64 / dt,
                latency: (!h.is_empty()).then(|| h.value_at_percentile(pct) as Nanos),
                keep: r.stream_keep.get(stream).copied().unwrap_or(1.0)
                    * r.query_keep.get(qi).copied().unwrap_or(1.0),
                delivered: if offered > 0 {
                    1.0 - dropped as f64 / offered as f64
                } else {
                    1.0
                },
                queued: q.queued,
                processed: q.processed - processed0,
                processed_values: match values0 {
                    Some(v) if v.len() == q.processed_values.len() => q
                        .processed_values
                        .iter()
                        .zip(v)
                        .map(|(a, b)| a - b)
                        .collect(),
                    _ => q.processed_values.clone(),
                },
            });
        }
        self.prev = Some(snap.clone());
        self.prev_at = tick.elapsed;
        self.prev_thinned.clone_from(&r.thinned_queries);
        if tick.last {
            self.last = Some(snap.clone());
            self.elapsed = tick.elapsed;
        }
    }
}
