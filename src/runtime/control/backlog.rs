//! The backlog's trend, for the planner: the floor of the queued work (the least of the last
//! `WINDOW` ticks) and how fast it rose over the `WINDOWS` windows seen. A queue's depth at
//! one tick swings with when a source's batch landed (live, tens of thousands of tuples
//! from one tick to the next at a steady load); its floor rises only when the engine falls
//! behind what it admits, which is what the planner must hear of before any latency shows
//! it. Invariant: nothing is reported until `WINDOWS * WINDOW` ticks were seen; the growth
//! is positive only when every window's floor is above the one before (a pause of the
//! engine raises one window's floor, then the backlog drains: not growth), and it is
//! measured between the ends of the first and last windows.

use std::collections::VecDeque;

use crate::core::schema::Nanos;
use crate::shed::BacklogInput;

/// Ticks per window: long enough for a floor to see past the landing of a batch, short
/// enough that a backlog building at a few percent of capacity is heard within half a
/// second at a 50 ms tick.
pub const WINDOW: usize = 2;
/// Windows compared: three floors in a row must rise.
pub const WINDOWS: usize = 3;
const SEEN: usize = WINDOW * WINDOWS;

#[derive(Debug, Default)]
pub(super) struct BacklogTrend {
    /// (time, ns of queued work) of the last `SEEN` ticks, oldest first.
    ring: VecDeque<(Nanos, f64)>,
}

impl BacklogTrend {
    /// Notes the queued work at `at` and returns the trend, once two windows were seen.
    pub(super) fn note(&mut self, at: Nanos, work: f64) -> Option<BacklogInput> {
        let work = if work.is_finite() { work.max(0.0) } else { 0.0 };
        if self.ring.back().is_some_and(|&(t, _)| t >= at) {
            // The same instant again (a final measure): replace, not a new tick.
            self.ring.pop_back();
        }
        self.ring.push_back((at, work));
        while self.ring.len() > SEEN {
            self.ring.pop_front();
        }
        if self.ring.len() < SEEN {
            return None;
        }
        let floors: [f64; WINDOWS] = std::array::from_fn(|k| {
            self.ring
                .range(k * WINDOW..(k + 1) * WINDOW)
                .map(|&(_, w)| w)
                .fold(f64::INFINITY, f64::min)
        });
        let span = (self.ring[SEEN - 1].0 - self.ring[WINDOW - 1].0) as f64 / 1e9;
        if span <= 0.0 {
            return None;
        }
        let (first, now) = (floors[0], floors[WINDOWS - 1]);
        let rising = floors.windows(2).all(|w| w[1] > w[0]);
        let growth = (now - first) / span;
        Some(BacklogInput {
            floor: now,
            growth: if rising || growth < 0.0 { growth } else { 0.0 },
        })
    }

    /// Forgets every tick (the query set changed: costs and depths start afresh).
    pub(super) fn clear(&mut self) {
        self.ring.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: Nanos = 50_000_000;

    #[test]
    fn a_floor_that_rises_is_growth_and_a_swinging_depth_is_not() {
        let mut t = BacklogTrend::default();
        // A steady load: the depth swings between 1 ms and 6 ms of work as batches land.
        for i in 0..SEEN as i64 {
            let w = if i % 2 == 0 { 1e6 } else { 6e6 };
            let r = t.note(i * TICK, w);
            assert_eq!(r.is_some(), i == SEEN as i64 - 1);
        }
        let r = t.note(SEEN as i64 * TICK, 1e6).unwrap();
        assert_eq!((r.floor, r.growth), (1e6, 0.0));
        // Falling behind: every tick 5 ms more is queued than the engine takes.
        let start = SEEN as i64 + 1;
        let mut last = None;
        for i in start..start + SEEN as i64 {
            last = t.note(i * TICK, (i - start + 1) as f64 * 5e6);
        }
        let r = last.unwrap();
        // Floors 5, 15 and 25 ms of work; the first and last windows end 200 ms apart.
        assert_eq!(r.floor, 25e6);
        assert!((r.growth - 20e6 / 0.2).abs() < 1.0, "{r:?}");
        t.clear();
        assert!(t.note(100 * TICK, 0.0).is_none());
    }

    #[test]
    fn a_pause_that_drains_is_not_growth_and_a_draining_backlog_is_negative() {
        let mut t = BacklogTrend::default();
        // The engine stops for a tick (40 ms of work queued), then drains.
        let work = [1e6, 1e6, 1e6, 40e6, 30e6, 20e6, 10e6, 5e6, 2e6, 1e6];
        let trend: Vec<_> = work
            .iter()
            .enumerate()
            .filter_map(|(i, &w)| t.note(i as i64 * TICK, w))
            .collect();
        assert_eq!(trend.len(), 5);
        assert!(trend.iter().all(|b| b.growth <= 0.0), "{trend:?}");
        assert!(trend[4].growth < 0.0);
    }

    #[test]
    fn the_same_instant_replaces_the_last_tick() {
        let mut t = BacklogTrend::default();
        for i in 0..SEEN as i64 {
            t.note(i * TICK, 0.0);
        }
        let r = t.note((SEEN as i64 - 1) * TICK, 9e6).unwrap();
        assert_eq!(r.floor, 0.0);
        assert!(t.note((SEEN as i64 - 1) * TICK, f64::NAN).is_some());
    }
}
