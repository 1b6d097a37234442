//! Robust per-tick estimators: a rate that one odd tick cannot move (the median of a short
//! window, raised at once only when two ticks in a row agree), and a bound on how far one
//! observation may pull a model. Invariant: a single outlier, however large, moves an
//! estimate by at most a bounded step.

/// Ticks the median looks back over.
pub const ROBUST_TICKS: usize = 3;

/// A rate estimate: `max(median of the last ROBUST_TICKS samples, min of the last two)`. A
/// surge confirmed by two ticks is believed at once; one tick of silence (an engine pause,
/// a stalled source) or one spike moves it not at all.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RobustRate {
    ring: [f64; ROBUST_TICKS],
    len: usize,
    next: usize,
}

impl RobustRate {
    /// Folds one sample in (non-finite or negative samples are ignored) and returns the
    /// estimate.
    pub fn update(&mut self, x: f64) -> f64 {
        if x.is_finite() && x >= 0.0 {
            self.ring[self.next] = x;
            self.next = (self.next + 1) % ROBUST_TICKS;
            self.len = (self.len + 1).min(ROBUST_TICKS);
        }
        self.value()
    }

    /// The estimate (0 before any sample).
    pub fn value(&self) -> f64 {
        if self.len == 0 {
            return 0.0;
        }
        let last = self.ring[(self.next + ROBUST_TICKS - 1) % ROBUST_TICKS];
        let before = if self.len >= 2 {
            self.ring[(self.next + ROBUST_TICKS - 2) % ROBUST_TICKS]
        } else {
            last
        };
        let mut a = self.ring;
        let s = &mut a[..self.len];
        s.sort_unstable_by(f64::total_cmp);
        let n = s.len();
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            0.5 * (s[n / 2 - 1] + s[n / 2])
        };
        median.max(last.min(before))
    }
}

/// Ticks a `SpanRate` sums over.
pub const SPAN_TICKS: usize = 4;

/// A rate over the last `SPAN_TICKS` ticks: their counts summed over their time. For counts
/// that arrive in batches every few ticks, as a sliding window's rows do when a slide
/// closes: with a 100 ms slide and 50 ms ticks the ticks read 0 and 2x in turn, and a
/// median of three ticks follows them (live, a HOP's row rate read 0 and 99k a second in
/// alternate ticks, and the demand priced with it 2.4x and 20x of capacity). One tick, however
/// large, moves the rate by at most its share of the span. A slide longer than the span is
/// read per close instead (`RowRate`, which uses this one for shorter slides).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpanRate {
    counts: [f64; SPAN_TICKS],
    secs: [f64; SPAN_TICKS],
    next: usize,
}

impl SpanRate {
    /// Folds in `count` events over `secs` seconds (ignored unless both are finite,
    /// non-negative and `secs` positive) and returns the rate.
    pub fn update(&mut self, count: f64, secs: f64) -> f64 {
        if count.is_finite() && count >= 0.0 && secs.is_finite() && secs > 0.0 {
            self.counts[self.next] = count;
            self.secs[self.next] = secs;
            self.next = (self.next + 1) % SPAN_TICKS;
        }
        self.value()
    }

    /// Events per second over the span (0 before any tick).
    pub fn value(&self) -> f64 {
        let secs: f64 = self.secs.iter().sum();
        if secs > 0.0 {
            self.counts.iter().sum::<f64>() / secs
        } else {
            0.0
        }
    }
}

/// `x` bounded to `[prediction / factor, prediction * factor]` once there is a positive
/// prediction; `x` itself otherwise. One tick's measurement then pulls a fitted model by a
/// bounded amount, while a lasting change still gets through over a few ticks.
pub fn bounded(x: f64, prediction: f64, factor: f64) -> f64 {
    if prediction.is_finite() && prediction > 0.0 && factor >= 1.0 {
        x.clamp(prediction / factor, prediction * factor)
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_closing_every_other_tick_read_as_their_mean() {
        let mut r = SpanRate::default();
        assert_eq!(r.value(), 0.0);
        let mut seen = Vec::new();
        for i in 0..12 {
            // 10k rows at every second 50 ms tick: 100k rows/s.
            seen.push(r.update(if i % 2 == 0 { 0.0 } else { 10_000.0 }, 0.05));
        }
        assert!(
            seen[4..].iter().all(|&x| (x - 100_000.0).abs() < 1e-6),
            "{seen:?}"
        );
        // One tick of a thousand times the rows moves it by a quarter of that tick.
        let spike = r.update(10_000_000.0, 0.05);
        assert!(
            (spike - (10_010_000.0 + 10_000.0) / 0.2).abs() < 1e-3,
            "{spike}"
        );
        // Nonsense is ignored.
        assert_eq!(r.update(f64::NAN, 0.05), spike);
        assert_eq!(r.update(5.0, 0.0), spike);
    }

    #[test]
    fn one_odd_tick_does_not_move_the_rate() {
        let mut r = RobustRate::default();
        for _ in 0..10 {
            r.update(1000.0);
        }
        // A silent tick (engine paused) and a spike (a burst of catch-up) change nothing.
        assert_eq!(r.update(0.0), 1000.0);
        assert_eq!(r.update(1000.0), 1000.0);
        assert_eq!(r.update(228_000.0), 1000.0);
        assert_eq!(r.update(1000.0), 1000.0);
    }

    #[test]
    fn a_confirmed_surge_is_believed_at_once_and_a_fall_within_three_ticks() {
        let mut r = RobustRate::default();
        for _ in 0..10 {
            r.update(1000.0);
        }
        assert_eq!(r.update(3000.0), 1000.0);
        assert_eq!(r.update(3000.0), 3000.0);
        for _ in 0..5 {
            r.update(3000.0);
        }
        r.update(500.0);
        r.update(500.0);
        assert_eq!(r.update(500.0), 500.0);
    }

    #[test]
    fn bounded_limits_one_observation() {
        assert_eq!(bounded(100.0, 10.0, 3.0), 30.0);
        assert_eq!(bounded(1.0, 10.0, 3.0), 10.0 / 3.0);
        assert_eq!(bounded(7.0, 0.0, 3.0), 7.0);
    }
}
