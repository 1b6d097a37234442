//! Plays a simulated run at a chosen speed on the wall clock, so a person can watch it:
//! an observer that, each tick, waits until `elapsed / speed` of wall time has passed.
//! It is the one observer meant to hold the engine thread back; once a stop is requested
//! it waits no more, so the run drains at full speed.

use std::time::Duration;

use crate::runtime::clock::WallClock;
use crate::runtime::observe::{Observer, TickReport};
use crate::runtime::stop::StopHandle;

pub struct Pacer {
    clock: WallClock,
    speed: f64,
    stop: StopHandle,
}

impl Pacer {
    /// `speed` virtual seconds per wall second (1 = real time).
    pub fn new(speed: f64, stop: StopHandle) -> Pacer {
        Pacer {
            clock: WallClock::start(),
            speed: if speed > 0.0 { speed } else { 1.0 },
            stop,
        }
    }
}

impl Observer for Pacer {
    fn on_tick(&mut self, t: &TickReport<'_>) {
        if t.last || self.stop.is_stopping() {
            return;
        }
        let due = (t.elapsed as f64 / self.speed) as i64;
        let ahead = due - self.clock.since_start();
        if ahead > 0 {
            std::thread::sleep(Duration::from_nanos(ahead as u64));
        }
    }
}
