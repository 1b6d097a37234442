//! What `spillway soak` measures of one shape's live run, as an observer of its ticks:
//! per query the latencies of each second and of the whole run, the seconds over target
//! (skipping every second that overlaps a surge's first), busy, ingest and idle shares and the delivered
//! keep over ticks that drop something, utility, model error, refits, and an optional
//! line per tick (`--trace`). Invariant: a second is counted once, when the first tick
//! of a later second (or the run's end) closes it.

use hdrhistogram::Histogram;

use crate::core::schema::Nanos;
use crate::runtime::observe::{Event, Observer, TickReport};

/// What one shape's run measured.
#[derive(Default)]
pub(super) struct Measured {
    pub(super) targets: Vec<Option<Nanos>>,
    pub(super) surges: Vec<Nanos>,
    /// Per query: latencies of the current second, and the whole run.
    pub(super) second: Vec<Histogram<u64>>,
    pub(super) whole: Vec<Histogram<u64>>,
    pub(super) current: i64,
    /// (seconds in which some query's p99 was over its target, seconds counted).
    pub(super) over: (u64, u64),
    /// Query turns' busy share, summed over shedding ticks that drop something.
    pub(super) busy_sum: f64,
    /// Engine work outside query turns (ingest, fan-out, control), share of the tick,
    /// summed over shedding ticks; and the counter and time it was last read at.
    pub(super) ingest_sum: f64,
    pub(super) prev_overhead: (u64, Nanos),
    /// The engine thread's time waiting for input with nothing to do, share of the tick,
    /// summed over the same ticks; and the counter it was last read at.
    pub(super) idle_sum: f64,
    pub(super) prev_idle: u64,
    pub(super) shedding_ticks: u64,
    /// Mean share of its input each query is delivered (stream and query drop points
    /// together), summed over shedding ticks that drop something.
    pub(super) keep_sum: f64,
    pub(super) utility_sum: f64,
    pub(super) ticks: u64,
    pub(super) model_error: Option<f64>,
    pub(super) refits: u64,
    pub(super) insufficient: u64,
    pub(super) trace: Option<std::io::BufWriter<std::fs::File>>,
}

impl Measured {
    /// What a run of `w` will measure: its queries' targets, the surges starting at
    /// `surges` (ns), and a line per tick into `trace`, if given.
    pub(super) fn for_workload(
        w: &crate::spec::Workload,
        surges: Vec<Nanos>,
        trace: Option<std::io::BufWriter<std::fs::File>>,
    ) -> Measured {
        use crate::core::stats::latency_histogram;
        Measured {
            targets: w
                .queries
                .iter()
                .map(|q| q.qos.as_ref().and_then(|s| s.latency).map(|l| l.target))
                .collect(),
            surges,
            second: w.queries.iter().map(|_| latency_histogram()).collect(),
            whole: w.queries.iter().map(|_| latency_histogram()).collect(),
            trace,
            ..Measured::default()
        }
    }

    pub(super) fn close_second(&mut self) {
        let k = self.current;
        let start = k * 1_000_000_000;
        let skipped = self
            .surges
            .iter()
            .any(|&s| start < s + 1_000_000_000 && start + 1_000_000_000 > s);
        let (mut counted, mut over) = (false, false);
        for (q, h) in self.second.iter_mut().enumerate() {
            if let (Some(t), false) = (self.targets[q], h.is_empty() || skipped) {
                counted = true;
                over |= h.value_at_percentile(99.0) as Nanos > t;
            }
            h.reset();
        }
        self.over.0 += over as u64;
        self.over.1 += counted as u64;
    }
}

impl Observer for Measured {
    fn on_tick(&mut self, t: &TickReport<'_>) {
        let sec = t.elapsed / 1_000_000_000;
        while sec > self.current {
            self.close_second();
            self.current += 1;
        }
        for (q, h) in t.tick_latency.iter().enumerate() {
            let _ = self.second[q].add(*h);
            let _ = self.whole[q].add(*h);
        }
        if t.last {
            return;
        }
        let c = t.control;
        let (before, at) = self.prev_overhead;
        let overhead = c.qos.engine.overhead;
        let ingest = overhead.saturating_sub(before) as f64 / (t.elapsed - at).max(1) as f64;
        self.prev_overhead = (overhead, t.elapsed);
        let idle = c.qos.engine.idle.saturating_sub(self.prev_idle) as f64
            / (t.elapsed - at).max(1) as f64;
        self.prev_idle = c.qos.engine.idle;
        // Ticks that drop something: a tick held in the shedding state with every keep
        // back at 1 (the trigger's calm ticks after a burst) loses nothing, whatever the
        // engine's busy share (the simulated checks count the same ticks).
        if c.plan.shedding && c.plan.drops_any() {
            self.busy_sum += c.qos.busy;
            self.ingest_sum += ingest;
            self.idle_sum += idle;
            let d = &c.plan.delivered;
            self.keep_sum += d.iter().sum::<f64>() / d.len().max(1) as f64;
            self.shedding_ticks += 1;
        }
        let w: f64 = c.plan.utility.len() as f64;
        self.utility_sum += c.qos.queries.iter().map(|q| q.utility).sum::<f64>() / w.max(1.0);
        self.ticks += 1;
        self.model_error = c.qos.model_error_mean;
        if let Some(out) = self.trace.as_mut() {
            use std::fmt::Write as _;
            let p = &c.plan;
            let mut line = format!(
                "{:.2} {}{} demand {:.2} used {:.2} m {:.2} h {:.2} lift {:.2} busy {:.2} ingest {:.2} idle {:.2} min-keep {:.4} |",
                t.elapsed as f64 / 1e9,
                if p.shedding { "S" } else { "-" },
                if p.rising { "r" } else { "" },
                p.load / p.target.max(1.0),
                p.expected_load / p.target.max(1.0),
                p.correction,
                p.headroom,
                p.lift,
                c.qos.busy,
                ingest,
                idle,
                p.streams
                    .iter()
                    .copied()
                    .chain(c.query_keep.iter().copied())
                    .fold(1.0, f64::min)
            );
            for (q, qq) in c.qos.queries.iter().enumerate() {
                let h = t.tick_latency.get(q).map_or(0, |h| h.max());
                let keep = p.delivered.get(q).copied().unwrap_or(1.0);
                let _ = write!(
                    line,
                    " {} {:.2}/{}/{:.0} [{:.3} c{:.0} p{:.0} r{:.0}x{:.0} f{:.0}]",
                    qq.name,
                    keep,
                    qq.queued,
                    h as f64 / 1e6,
                    qq.delivered,
                    qq.cost,
                    qq.passed_cost,
                    qq.row_rate,
                    qq.row_cost,
                    qq.fixed_cost / 1e6
                );
            }
            if c.thinned > 0 {
                let _ = write!(line, " | thinned {}", c.thinned);
            }
            let _ = std::io::Write::write_all(out, line.as_bytes());
            let _ = std::io::Write::write_all(out, b"\n");
        }
    }

    fn on_event(&mut self, e: &Event) {
        match e {
            Event::ModelRefit { .. } => self.refits += 1,
            Event::InputDropsInsufficient { .. } => self.insufficient += 1,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::stats::latency_histogram;

    /// One query with a 100 ms target whose every second has a p99 of 150 ms.
    fn always_late(surges: Vec<Nanos>, seconds: i64) -> (u64, u64) {
        let mut m = Measured {
            targets: vec![Some(100_000_000)],
            surges,
            second: vec![latency_histogram()],
            whole: vec![latency_histogram()],
            ..Measured::default()
        };
        for k in 0..seconds {
            m.current = k;
            m.second[0].record(150_000_000).expect("in range");
            m.close_second();
        }
        m.over
    }

    #[test]
    fn every_second_overlapping_a_surges_first_second_is_skipped() {
        // Whole-second surges skip their own second.
        assert_eq!(always_late(vec![0, 5_000_000_000], 10), (8, 8));
        // A surge at 5.3 s reaches into seconds 5 and 6.
        assert_eq!(always_late(vec![0, 5_300_000_000], 10), (7, 7));
    }
}
