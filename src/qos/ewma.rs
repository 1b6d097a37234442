//! Exponentially weighted moving averages for per-tick measurements (rates, costs, queue
//! depths); the average is `None` until the first finite sample, and a non-finite sample
//! never enters it, so one bad measurement cannot poison every later tick.

/// An exponentially weighted moving average: `v <- v + alpha * (x - v)`, seeded by the
/// first sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ewma {
    /// Weight of the newest sample, in `(0, 1]`; 1 keeps only the last sample.
    alpha: f64,
    value: Option<f64>,
}

impl Ewma {
    /// An average whose newest sample weighs `alpha`. Values above 1 mean 1; zero, negative
    /// or non-finite values also mean 1 (no smoothing), since an average that never moves
    /// would hide every change.
    pub fn new(alpha: f64) -> Ewma {
        let alpha = if alpha.is_finite() && alpha > 0.0 {
            alpha.min(1.0)
        } else {
            1.0
        };
        Ewma { alpha, value: None }
    }

    /// An average in which a sample's weight halves every `ticks` updates:
    /// `alpha = 1 - 2^(-1/ticks)`. A half-life that is not positive and finite means no
    /// smoothing.
    pub fn with_half_life(ticks: f64) -> Ewma {
        if ticks.is_finite() && ticks > 0.0 {
            Ewma::new(1.0 - 0.5f64.powf(1.0 / ticks))
        } else {
            Ewma::new(1.0)
        }
    }

    /// Folds one sample in and returns the new average. Non-finite samples are ignored.
    pub fn update(&mut self, x: f64) -> Option<f64> {
        if x.is_finite() {
            self.value = Some(match self.value {
                None => x,
                Some(v) => v + self.alpha * (x - v),
            });
        }
        self.value
    }

    /// The average so far; `None` before the first finite sample.
    pub fn value(&self) -> Option<f64> {
        self.value
    }

    /// The weight of the newest sample.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Forgets every sample; the next one seeds the average again.
    pub fn reset(&mut self) {
        self.value = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_seeds_the_average() {
        let mut e = Ewma::new(0.25);
        assert_eq!(e.value(), None);
        assert_eq!(e.update(8.0), Some(8.0));
        assert_eq!(e.update(0.0), Some(6.0));
    }

    #[test]
    fn half_life_halves_the_weight_of_old_samples() {
        let mut e = Ewma::with_half_life(2.0);
        e.update(0.0);
        e.update(1.0);
        e.update(1.0);
        // After two half-life ticks the old sample (0) keeps half of its weight.
        assert!((e.value().unwrap() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn non_finite_samples_and_alphas_are_harmless() {
        let mut e = Ewma::new(f64::NAN);
        assert_eq!(e.alpha(), 1.0);
        e.update(3.0);
        e.update(f64::NAN);
        e.update(f64::INFINITY);
        assert_eq!(e.value(), Some(3.0));
        assert_eq!(Ewma::with_half_life(0.0).alpha(), 1.0);
        assert_eq!(Ewma::new(7.0).alpha(), 1.0);
        e.reset();
        assert_eq!(e.value(), None);
    }
}
