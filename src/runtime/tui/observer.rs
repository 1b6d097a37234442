//! The dashboard's observer: on the engine thread it turns each tick report and event into
//! a small owned `Msg` and hands it to the render thread over an unbounded channel. It
//! never draws and never waits: a send is a queue push; only `RunEnded` joins the render
//! thread, so the terminal is restored before the caller prints the summary.

use crossbeam_channel::Sender;
use hdrhistogram::Histogram;

use super::msg::{DropDesc, Msg, Percentiles, QueryRow, StreamRow, TickMsg};
use crate::core::drop::DropReason;
use crate::core::schema::Nanos;
use crate::core::stats::latency_histogram;
use crate::runtime::observe::{Event, Observer, TickReport};
use crate::shed::QueryDrop;

/// Percentiles of the details pane cover this much run time.
const PERCENTILE_EVERY: Nanos = 1_000_000_000;

/// Feeds a dashboard; see `Dashboard::observer`.
pub struct TuiObserver {
    pub(super) tx: Sender<Msg>,
    pub(super) columns: Vec<Vec<String>>,
    /// Capacity in ns of work per second (cores x 1e9), from `RunStarted`.
    capacity: f64,
    /// Per query: result latencies since the last percentile message.
    latency: Vec<Histogram<u64>>,
    next_percentiles: Nanos,
    /// Called once the run ended and the render thread was told (joins it).
    pub(super) on_end: Option<Box<dyn FnOnce() + Send>>,
}

impl TuiObserver {
    pub(super) fn new(
        tx: Sender<Msg>,
        columns: Vec<Vec<String>>,
        on_end: Box<dyn FnOnce() + Send>,
    ) -> TuiObserver {
        TuiObserver {
            tx,
            columns,
            capacity: 1e9,
            latency: Vec::new(),
            next_percentiles: PERCENTILE_EVERY,
            on_end: Some(on_end),
        }
    }

    fn send(&self, m: Msg) {
        // A render thread that is gone (terminal error) must not stop the run.
        let _ = self.tx.send(m);
    }

    /// Folds this tick's latencies in; once a second, the percentiles of what was folded.
    fn percentiles(&mut self, t: &TickReport<'_>) -> Option<Vec<Percentiles>> {
        if self.latency.len() != t.tick_latency.len() {
            self.latency = t.tick_latency.iter().map(|_| latency_histogram()).collect();
        }
        // `add` walks every bucket: skip the ticks without results.
        for (acc, h) in self.latency.iter_mut().zip(t.tick_latency) {
            if !h.is_empty() {
                let _ = acc.add(*h);
            }
        }
        if t.elapsed < self.next_percentiles && !t.last {
            return None;
        }
        self.next_percentiles = t.elapsed + PERCENTILE_EVERY;
        Some(
            self.latency
                .iter_mut()
                .map(|h| {
                    let p = percentiles_of(h);
                    h.reset();
                    p
                })
                .collect(),
        )
    }
}

/// The percentiles of `h` (all 0 when it is empty).
pub fn percentiles_of(h: &Histogram<u64>) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    let at = |q: f64| h.value_at_quantile(q) as Nanos;
    Percentiles {
        count: h.len(),
        p50: at(0.5),
        p90: at(0.9),
        p99: at(0.99),
        p999: at(0.999),
        max: h.max() as Nanos,
    }
}

/// The dashboard's view of one tick report (`capacity` in ns of work per second).
pub fn tick_msg(t: &TickReport<'_>, capacity: f64) -> TickMsg {
    let r = t.control;
    let snap = &r.qos.engine;
    let mut dropped = [0u64; DropReason::COUNT];
    for counts in snap
        .streams
        .iter()
        .map(|s| &s.dropped)
        .chain(snap.queries.iter().map(|q| &q.dropped))
    {
        for (d, c) in dropped.iter_mut().zip(counts) {
            *d += c;
        }
    }
    let capacity = capacity.max(1.0);
    TickMsg {
        elapsed: t.elapsed,
        demand: r.plan.load / capacity,
        target: r.plan.target / capacity,
        busy: r.qos.busy,
        shedding: r.plan.shedding,
        utility: r.plan.weighted_utility,
        streams: r
            .qos
            .streams
            .iter()
            .enumerate()
            .map(|(i, s)| StreamRow {
                name: s.name.clone(),
                rate: s.rate,
                keep: r.stream_keep.get(i).copied().unwrap_or(1.0),
            })
            .collect(),
        queries: r
            .qos
            .queries
            .iter()
            .enumerate()
            .map(|(i, q)| QueryRow {
                rate_in: q.rate_in,
                rate_out: q.rate_out,
                queued: q.queued,
                queue_delay: q.queue_delay,
                p50: q.p50,
                p99: q.p99,
                target: q.target,
                latency: q.latency,
                keep: r.stream_keep.get(q.stream).copied().unwrap_or(1.0)
                    * r.query_keep.get(i).copied().unwrap_or(1.0),
                utility: q.utility,
                offered: snap.queries.get(i).map_or(0, |s| s.offered),
                lost: q.shed + q.queue_full,
                drop: match r.plan.queries.get(i) {
                    None | Some(QueryDrop::KeepAll) => DropDesc::KeepAll,
                    Some(QueryDrop::Random { keep }) => DropDesc::Random { keep: *keep },
                    Some(QueryDrop::Window { keep }) => DropDesc::Window { keep: *keep },
                    // Whole keys: shown as what it keeps, like whole windows.
                    Some(QueryDrop::Keys { keep }) => DropDesc::Window { keep: *keep },
                    Some(QueryDrop::Semantic(s)) => DropDesc::Semantic {
                        column: s.column,
                        binning: s.binning,
                        keep: s.keep.clone(),
                    },
                },
                values: q.values.clone(),
            })
            .collect(),
        dropped,
        percentiles: None,
    }
}

impl Observer for TuiObserver {
    fn on_tick(&mut self, t: &TickReport<'_>) {
        let mut m = tick_msg(t, self.capacity);
        m.percentiles = self.percentiles(t);
        self.send(Msg::Tick(Box::new(m)));
    }

    fn on_event(&mut self, e: &Event) {
        match e {
            Event::RunStarted(info) => {
                self.capacity = info.cores * 1e9;
                self.send(Msg::Started {
                    info: Box::new(info.clone()),
                    columns: self.columns.clone(),
                });
            }
            Event::RunEnded(_) => {
                self.send(Msg::Ended);
                if let Some(f) = self.on_end.take() {
                    f();
                }
            }
            other => self.send(Msg::Event(other.clone())),
        }
    }
}

impl Drop for TuiObserver {
    fn drop(&mut self) {
        // A run that ended without `RunEnded` (a panic unwinding): still restore.
        self.send(Msg::Ended);
        if let Some(f) = self.on_end.take() {
            f();
        }
    }
}
