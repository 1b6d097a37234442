//! When to shed: an overload trigger with hysteresis. It turns on as soon as the model load
//! exceeds its target or a latency misses its target, and off only after `hold` consecutive
//! calm ticks, so a load hovering at the threshold never flaps.

/// Hysteresis state carried between ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trigger {
    shedding: bool,
    /// Consecutive calm ticks while shedding.
    calm: u32,
}

impl Trigger {
    /// One tick. Overload: `load > target` or `latency_miss`. Calm: `load < low * target`
    /// and no miss. Returns whether to shed this tick.
    pub fn update(
        &mut self,
        load: f64,
        target: f64,
        latency_miss: bool,
        low: f64,
        hold: u32,
    ) -> bool {
        let overloaded = load > target || latency_miss;
        if !self.shedding {
            if overloaded {
                self.shedding = true;
                self.calm = 0;
            }
        } else if load < low * target && !latency_miss {
            self.calm += 1;
            if self.calm >= hold {
                self.shedding = false;
                self.calm = 0;
            }
        } else {
            self.calm = 0;
        }
        self.shedding
    }

    pub fn shedding(&self) -> bool {
        self.shedding
    }

    /// Consecutive calm ticks so far while shedding.
    pub fn calm_ticks(&self) -> u32 {
        self.calm
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_hovering_at_the_threshold_does_not_flap() {
        let mut t = Trigger::default();
        let mut flips = 0;
        let mut was = false;
        for k in 0..200 {
            // +-2 % around the target, alternating.
            let load = if k % 2 == 0 { 102.0 } else { 98.0 };
            let now = t.update(load, 100.0, false, 0.8, 5);
            flips += usize::from(now != was);
            was = now;
        }
        assert_eq!(flips, 1, "turns on once and stays on");
    }

    #[test]
    fn turns_off_after_hold_calm_ticks_only() {
        let mut t = Trigger::default();
        assert!(t.update(120.0, 100.0, false, 0.8, 3));
        assert!(t.update(70.0, 100.0, false, 0.8, 3));
        assert!(t.update(70.0, 100.0, false, 0.8, 3));
        // A latency miss resets the count.
        assert!(t.update(70.0, 100.0, true, 0.8, 3));
        assert!(t.update(70.0, 100.0, false, 0.8, 3));
        assert!(t.update(70.0, 100.0, false, 0.8, 3));
        assert_eq!(t.calm_ticks(), 2);
        assert!(!t.update(70.0, 100.0, false, 0.8, 3));
        // A latency miss alone turns it on.
        assert!(t.update(10.0, 100.0, true, 0.8, 3));
    }
}
