//! The wall clock of live runs: the only place Spillway reads real time. Engine time is
//! nanoseconds since the Unix epoch, taken from a monotonic clock anchored once at start,
//! so it never goes backwards even if the system clock is adjusted.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::core::schema::Nanos;

#[derive(Clone, Copy, Debug)]
pub struct WallClock {
    start: Instant,
    epoch_at_start: Nanos,
}

impl WallClock {
    #[allow(clippy::disallowed_methods)]
    pub fn start() -> WallClock {
        let epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        WallClock {
            start: Instant::now(),
            epoch_at_start: epoch.as_nanos() as Nanos,
        }
    }

    /// Nanoseconds since the epoch.
    pub fn now(&self) -> Nanos {
        self.epoch_at_start + self.since_start()
    }

    /// Nanoseconds since `start()`.
    #[allow(clippy::disallowed_methods)]
    pub fn since_start(&self) -> Nanos {
        self.start.elapsed().as_nanos() as Nanos
    }

    pub fn epoch_at_start(&self) -> Nanos {
        self.epoch_at_start
    }
}
