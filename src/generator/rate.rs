//! Rate profiles: how many tuples per second a generated stream offers over time. The
//! invariant is that `count_until` is the exact closed-form integral of `rate_at`, never
//! negative and non-decreasing in `t`, so a source that emits `count_until(now) - emitted`
//! tuples follows the profile without drift, whatever its tick.

use std::f64::consts::TAU;

use crate::core::schema::Nanos;

const NANOS_PER_SEC: f64 = 1e9;

/// The offered load of one stream, in tuples per second, as a function of the time since
/// the run started.
///
/// Spec validation rejects negative rates, an amplitude above the mean and empty periods;
/// should such values reach a profile anyway they are clamped (rates below zero count as
/// zero, the amplitude as at most the mean), so `count_until` stays monotone.
#[derive(Clone, Debug, PartialEq)]
pub enum RateProfile {
    /// The same rate for the whole run.
    Constant(f64),
    /// `(at, rate)` pairs sorted by `at`: from `at` on, the rate is `rate` until the next
    /// step. Before the first step the rate is 0.
    Steps(Vec<(Nanos, f64)>),
    /// Linear from `from` at time 0 to `to` at time `over`, then holds `to`.
    Ramp { from: f64, to: f64, over: Nanos },
    /// `mean + amplitude * sin(2π t / period)`; starts at the mean and rises first.
    Sine {
        mean: f64,
        amplitude: f64,
        period: Nanos,
    },
    /// `high` for `on`, then `low` for `off`, repeating; starts with the `on` phase.
    Bursts {
        high: f64,
        low: f64,
        on: Nanos,
        off: Nanos,
    },
    /// As fast as the source can produce; `count_until` is `u64::MAX`.
    Unlimited,
}

impl RateProfile {
    pub fn is_unlimited(&self) -> bool {
        matches!(self, RateProfile::Unlimited)
    }

    /// The rate in tuples per second at `t` nanoseconds after the run started.
    pub fn rate_at(&self, t: Nanos) -> f64 {
        let t = t.max(0);
        match self {
            RateProfile::Constant(r) => pos(*r),
            RateProfile::Steps(steps) => steps
                .iter()
                .take_while(|(at, _)| *at <= t)
                .last()
                .map_or(0.0, |(_, r)| pos(*r)),
            RateProfile::Ramp { from, to, over } => {
                let (from, to) = (pos(*from), pos(*to));
                if t >= *over || *over <= 0 {
                    to
                } else {
                    from + (to - from) * (t as f64 / *over as f64)
                }
            }
            RateProfile::Sine {
                mean,
                amplitude,
                period,
            } => {
                let (mean, amp) = sine_params(*mean, *amplitude);
                if *period <= 0 {
                    return mean;
                }
                let phase = (t % period) as f64 / *period as f64;
                pos(mean + amp * (TAU * phase).sin())
            }
            RateProfile::Bursts { high, low, on, off } => {
                let (on, off) = ((*on).max(0), (*off).max(0));
                let cycle = on.saturating_add(off);
                if cycle == 0 || t % cycle < on {
                    pos(*high)
                } else {
                    pos(*low)
                }
            }
            RateProfile::Unlimited => f64::INFINITY,
        }
    }

    /// How many tuples are due by `t`: the floor of the integral of the rate over `[0, t]`.
    /// Non-decreasing in `t`; 0 for `t <= 0`; `u64::MAX` when unlimited.
    pub fn count_until(&self, t: Nanos) -> u64 {
        if self.is_unlimited() {
            return u64::MAX;
        }
        if t <= 0 {
            return 0;
        }
        // `as` saturates: huge integrals become u64::MAX, NaN becomes 0.
        (self.integral(t) / NANOS_PER_SEC).floor() as u64
    }

    /// The integral of the rate over `[0, t]` in tuple-nanoseconds per second (`t > 0`).
    fn integral(&self, t: Nanos) -> f64 {
        let tf = t as f64;
        match self {
            RateProfile::Constant(r) => pos(*r) * tf,
            RateProfile::Steps(steps) => {
                let mut sum = 0.0;
                for (i, (at, r)) in steps.iter().enumerate() {
                    let start = (*at).max(0);
                    let end = steps.get(i + 1).map_or(t, |(next, _)| (*next).min(t));
                    if end > start {
                        sum += pos(*r) * (end - start) as f64;
                    }
                }
                sum
            }
            RateProfile::Ramp { from, to, over } => {
                let (from, to) = (pos(*from), pos(*to));
                if *over <= 0 {
                    return to * tf;
                }
                let of = *over as f64;
                if t < *over {
                    from * tf + (to - from) * tf * tf / (2.0 * of)
                } else {
                    (from + to) / 2.0 * of + to * (t - over) as f64
                }
            }
            RateProfile::Sine {
                mean,
                amplitude,
                period,
            } => {
                let (mean, amp) = sine_params(*mean, *amplitude);
                if *period <= 0 {
                    return mean * tf;
                }
                // Whole periods integrate to `mean * period`, so only the phase matters for
                // the sine term; reducing first keeps the cosine exact for long runs.
                let pf = *period as f64;
                let phase = (t % period) as f64 / pf;
                mean * tf + amp * pf / TAU * (1.0 - (TAU * phase).cos())
            }
            RateProfile::Bursts { high, low, on, off } => {
                let (high, low) = (pos(*high), pos(*low));
                let (on, off) = ((*on).max(0), (*off).max(0));
                let cycle = on.saturating_add(off);
                if cycle == 0 {
                    return high * tf;
                }
                let cycles = (t / cycle) as f64;
                let rem = t % cycle;
                let per_cycle = high * on as f64 + low * off as f64;
                cycles * per_cycle + high * rem.min(on) as f64 + low * (rem - on).max(0) as f64
            }
            RateProfile::Unlimited => f64::INFINITY,
        }
    }
}

/// A rate that is never negative (NaN counts as zero).
fn pos(r: f64) -> f64 {
    if r > 0.0 { r } else { 0.0 }
}

/// Mean and amplitude clamped so that the sine never goes below zero.
fn sine_params(mean: f64, amplitude: f64) -> (f64, f64) {
    let mean = pos(mean);
    (mean, pos(amplitude).min(mean))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;
    const S: Nanos = 1_000_000_000;

    #[test]
    fn constant_counts_rate_times_seconds() {
        let p = RateProfile::Constant(1000.0);
        assert_eq!(p.count_until(0), 0);
        assert_eq!(p.count_until(-5), 0);
        assert_eq!(p.count_until(MS), 1);
        assert_eq!(p.count_until(1500 * MS), 1500);
        assert_eq!(p.count_until(10 * S), 10_000);
        assert_eq!(p.rate_at(3 * S), 1000.0);
    }

    #[test]
    fn steps_integrate_piecewise_and_start_at_zero_before_the_first_step() {
        let p = RateProfile::Steps(vec![(S, 100.0), (3 * S, 300.0), (4 * S, 0.0)]);
        assert_eq!(p.count_until(S), 0);
        assert_eq!(p.count_until(2 * S), 100);
        assert_eq!(p.count_until(3 * S), 200);
        assert_eq!(p.count_until(3500 * MS), 350);
        assert_eq!(p.count_until(4 * S), 500);
        assert_eq!(p.count_until(100 * S), 500);
        assert_eq!(p.rate_at(500 * MS), 0.0);
        assert_eq!(p.rate_at(3 * S), 300.0);
    }

    #[test]
    fn ramp_is_a_triangle_then_a_rectangle() {
        let p = RateProfile::Ramp {
            from: 0.0,
            to: 100.0,
            over: 10 * S,
        };
        // 100 * 5^2 / (2 * 10) = 125
        assert_eq!(p.count_until(5 * S), 125);
        assert_eq!(p.count_until(10 * S), 500);
        assert_eq!(p.count_until(12 * S), 700);
        assert_eq!(p.rate_at(5 * S), 50.0);
        assert_eq!(p.rate_at(20 * S), 100.0);
        let down = RateProfile::Ramp {
            from: 100.0,
            to: 0.0,
            over: 10 * S,
        };
        // 100*5 - 100*25/20 = 375
        assert_eq!(down.count_until(5 * S), 375);
        assert_eq!(down.count_until(30 * S), 500);
    }

    #[test]
    fn sine_integrates_mean_plus_the_cosine_term() {
        let p = RateProfile::Sine {
            mean: 100.0,
            amplitude: 50.0,
            period: 4 * S,
        };
        // 100 + 50*4/(2π)*(1 - cos(π/2)) = 131.83
        assert_eq!(p.count_until(S), 131);
        // 200 + 50*4/(2π)*2 = 263.66
        assert_eq!(p.count_until(2 * S), 263);
        assert_eq!(p.count_until(4 * S), 400);
        assert_eq!(p.count_until(41 * S), 4131);
        assert!((p.rate_at(S) - 150.0).abs() < 1e-9);
    }

    #[test]
    fn bursts_alternate_high_and_low() {
        let p = RateProfile::Bursts {
            high: 1000.0,
            low: 10.0,
            on: S,
            off: 3 * S,
        };
        assert_eq!(p.count_until(500 * MS), 500);
        assert_eq!(p.count_until(S), 1000);
        assert_eq!(p.count_until(4 * S), 1030);
        // one cycle (1030) + a full on phase (1000) + 1s of off (10)
        assert_eq!(p.count_until(6 * S), 2040);
        assert_eq!(p.rate_at(4500 * MS), 1000.0);
        assert_eq!(p.rate_at(5500 * MS), 10.0);
    }

    #[test]
    fn unlimited_is_always_due() {
        assert!(RateProfile::Unlimited.is_unlimited());
        assert_eq!(RateProfile::Unlimited.count_until(1), u64::MAX);
        assert!(!RateProfile::Constant(1.0).is_unlimited());
    }

    #[test]
    fn counts_never_decrease() {
        let profiles = [
            RateProfile::Constant(333.3),
            RateProfile::Steps(vec![(0, 50.0), (S, 7000.0), (2 * S, 1.0)]),
            RateProfile::Ramp {
                from: 900.0,
                to: 3.0,
                over: 3 * S,
            },
            RateProfile::Sine {
                mean: 500.0,
                amplitude: 500.0,
                period: 700 * MS,
            },
            RateProfile::Bursts {
                high: 5000.0,
                low: 0.0,
                on: 30 * MS,
                off: 70 * MS,
            },
            // Invalid parameters are clamped rather than breaking monotonicity.
            RateProfile::Sine {
                mean: 10.0,
                amplitude: 80.0,
                period: S,
            },
            RateProfile::Constant(-4.0),
        ];
        for p in &profiles {
            let mut last = 0;
            for t in (0..4 * S).step_by(997_331) {
                let c = p.count_until(t);
                assert!(c >= last, "{p:?} decreased at {t}: {c} < {last}");
                last = c;
            }
        }
    }
}
