//! A query's rate of emitted rows, for the planner. Rows come when windows close. With a
//! slide of a few ticks or less they are read over the last `SPAN_TICKS` ticks
//! (`SpanRate`). With a longer slide they come in bursts a slide apart, which a span of a
//! few ticks reads as 0 for most ticks and several times their mean for the rest: live, a
//! 1 s tumble over a million users read 2.2 M rows a second for four ticks of ten and 0
//! for six, while it emitted 0.9 M a second. Priced at that, each close looked like a
//! surge of row work, its keep was cut to a twentieth, and the engine idled for the next
//! half second; and the rows, set against the tuples of a tick, read as sparse windows
//! whose rows would grow with every tuple kept. Such rows are read per burst instead: the
//! rows of the last burst over the slide. Invariant: the rate is finite and non-negative;
//! a burst moves it to that burst's rows over the slide, rows that keep coming are read
//! a slide at a time, and once bursts stop for more than two slides the rate falls as
//! the time since the last one grows, to 0 after three.

use super::robust::{SPAN_TICKS, SpanRate};

/// Slides without a burst after which the last one is forgotten and the rate is 0 (an
/// idle run must read as idle, or its fast-forward never begins).
const FORGET_SLIDES: f64 = 3.0;
/// Weight of the newest tick in the smoothed tick length.
const TICK_ALPHA: f64 = 0.1;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowRate {
    span: SpanRate,
    /// Seconds between closes (the window's slide); 0 for rows that follow the input.
    period: f64,
    /// Rows of the burst in progress.
    burst: f64,
    /// Rows of the last whole burst.
    last: f64,
    /// Seconds since the last burst began.
    since: f64,
    /// The ticks' length, seconds, smoothed (`TICK_ALPHA`).
    tick: f64,
    in_burst: bool,
}

impl RowRate {
    /// Rows closed every `period` seconds (0 for rows that follow the input).
    pub fn new(period: f64) -> RowRate {
        RowRate {
            period: if period.is_finite() {
                period.max(0.0)
            } else {
                0.0
            },
            ..RowRate::default()
        }
    }

    /// Folds in `rows` emitted over `secs` seconds (ignored unless both are finite,
    /// non-negative and `secs` positive) and returns the rate.
    pub fn update(&mut self, rows: f64, secs: f64) -> f64 {
        let span = self.span.update(rows, secs);
        if !(rows.is_finite() && rows >= 0.0 && secs.is_finite() && secs > 0.0) {
            return self.value(span);
        }
        self.tick = if self.tick > 0.0 {
            self.tick + TICK_ALPHA * (secs - self.tick)
        } else {
            secs
        };
        self.since += secs;
        if rows > 0.0 && !self.in_burst {
            self.in_burst = true;
            self.burst = 0.0;
            self.since = secs;
        }
        if self.in_burst {
            self.burst += rows;
            // A burst ends with a tick without rows, or at the tick nearest a whole slide:
            // rows that keep coming are counted a slide at a time.
            if rows == 0.0 || self.since + 0.5 * secs >= self.period {
                self.last = self.burst;
                self.in_burst = false;
            }
        }
        self.value(span)
    }

    /// The rate, given the span rate: per burst when the slide is longer than the span
    /// by half a tick (on the smoothed tick length, so that uneven ticks do not switch a
    /// slide near the span's length from one reading to the other and back).
    fn value(&self, span: f64) -> f64 {
        if self.period <= (SPAN_TICKS as f64 + 0.5) * self.tick {
            return span;
        }
        if !self.in_burst && self.since > FORGET_SLIDES * self.period {
            return 0.0;
        }
        let rows = if self.in_burst {
            self.burst.max(self.last)
        } else {
            self.last
        };
        rows / self.period.max(self.since - self.period)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_close_a_second_reads_as_its_rows_a_second_every_tick() {
        // 1 s tumble, 100 ms ticks: 900k rows each second, the close sometimes spilling
        // into the next tick, ticks a little uneven.
        let mut r = RowRate::new(1.0);
        let mut seen = Vec::new();
        for i in 0..60 {
            let rows = match (i % 10, i / 10 % 2) {
                (3, 0) => 900_000.0,
                (3, 1) => 600_000.0,
                (4, 1) => 300_000.0,
                _ => 0.0,
            };
            let secs = if i % 3 == 0 { 0.09 } else { 0.105 };
            seen.push(r.update(rows, secs));
        }
        assert!(seen[..3].iter().all(|&x| x == 0.0), "{seen:?}");
        assert!(
            seen[3..].iter().all(|&x| (x - 900_000.0).abs() < 1.0),
            "{seen:?}"
        );
        // The span rate read 0 or 2.25 M a second.
        let mut s = SpanRate::default();
        let span: Vec<f64> = (0..20)
            .map(|i| s.update(if i % 10 == 3 { 900_000.0 } else { 0.0 }, 0.1))
            .collect();
        assert!(span.contains(&0.0) && span.iter().any(|&x| x > 2e6));
    }

    #[test]
    fn rows_that_keep_coming_are_read_a_slide_at_a_time() {
        // Slide 1 s, but a close that takes longer than a tick every tick: 50k rows each
        // 100 ms tick is 500k a second.
        let mut r = RowRate::new(1.0);
        let seen: Vec<f64> = (0..40).map(|_| r.update(50_000.0, 0.1)).collect();
        assert!(
            seen[10..].iter().all(|&x| (x - 500_000.0).abs() < 1.0),
            "{seen:?}"
        );
    }

    #[test]
    fn a_rate_falls_once_bursts_stop_and_a_short_slide_reads_the_span() {
        let mut r = RowRate::new(1.0);
        for i in 0..30 {
            r.update(if i % 10 == 0 { 1000.0 } else { 0.0 }, 0.1);
        }
        assert!((r.update(0.0, 0.1) - 1000.0).abs() < 1e-9);
        // The query was paused: no close for 3 s.
        let mut x = 0.0;
        for _ in 0..30 {
            x = r.update(0.0, 0.1);
        }
        assert_eq!(x, 0.0);
        // Two and a half slides after the last burst it reads two thirds.
        let mut r = RowRate::new(1.0);
        r.update(1000.0, 0.1);
        for _ in 0..24 {
            x = r.update(0.0, 0.1);
        }
        assert!((x - 1000.0 / 1.5).abs() < 1.0, "{x}");
        // A slide of two ticks, or of four with ticks now and then a little short: the
        // span rate, as before.
        let mut four = RowRate::new(0.2);
        let mut span = SpanRate::default();
        for i in 0..40 {
            let secs = if i % 3 == 0 { 0.045 } else { 0.05 };
            let rows = if i % 4 == 0 { 10_000.0 } else { 0.0 };
            assert_eq!(four.update(rows, secs), span.update(rows, secs));
        }
        let mut short = RowRate::new(0.2);
        let mut span = SpanRate::default();
        for i in 0..12 {
            let rows = if i % 2 == 0 { 0.0 } else { 10_000.0 };
            assert_eq!(short.update(rows, 0.1), span.update(rows, 0.1));
        }
        // Nonsense is ignored.
        let before = r.update(0.0, 0.1);
        assert!(r.update(f64::NAN, 0.1).is_finite());
        assert!(r.update(-1.0, 0.1) <= before);
    }
}
