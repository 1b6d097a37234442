//! `--speed X` for simulated runs: an observer that holds each tick back until wall time
//! catches up with virtual time divided by X, so a scraper sees the run unfold. The
//! simulated driver stays pure; only this observer sleeps.

use std::time::Duration;

use super::clock::WallClock;
use super::observe::{Observer, TickReport};

pub struct Pacer {
    speed: f64,
    clock: Option<WallClock>,
    /// Virtual time of the first tick: pacing starts there.
    origin: i64,
}

impl Pacer {
    /// Plays virtual time at `speed` times wall speed (`speed > 0`).
    pub fn new(speed: f64) -> Pacer {
        Pacer {
            speed,
            clock: None,
            origin: 0,
        }
    }

    /// Wall nanoseconds tick `elapsed` should wait for.
    fn due(&self, elapsed: i64) -> i64 {
        ((elapsed - self.origin).max(0) as f64 / self.speed) as i64
    }
}

impl Observer for Pacer {
    fn on_tick(&mut self, tick: &TickReport<'_>) {
        let clock = match self.clock {
            Some(c) => c,
            None => {
                self.origin = tick.elapsed;
                *self.clock.insert(WallClock::start())
            }
        };
        if tick.last {
            return;
        }
        let wait = self.due(tick.elapsed) - clock.since_start();
        if wait > 0 {
            std::thread::sleep(Duration::from_nanos(wait as u64));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_time_is_virtual_time_over_speed() {
        let mut p = Pacer::new(4.0);
        p.origin = 1_000;
        assert_eq!(p.due(1_000), 0);
        assert_eq!(p.due(4_001_000), 1_000_000);
        assert_eq!(p.due(0), 0);
    }
}
