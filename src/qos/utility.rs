//! Utility of delivering part of a query's results (the loss-tolerance graph) and the loss
//! of lowering delivery; utilities stay in `[0, 1]` and losses are never negative, whatever
//! the inputs.

/// A piecewise-linear utility function: at least one point, x strictly increasing,
/// utilities in `[0, 1]`; flat beyond the first and last points.
#[derive(Clone, Debug, PartialEq)]
pub struct UtilityCurve {
    pub points: Vec<(f64, f64)>,
}

impl UtilityCurve {
    /// The utility at `x`, interpolated linearly between the points.
    pub fn at(&self, x: f64) -> f64 {
        let p = &self.points;
        let Some(&(x0, u0)) = p.first() else {
            return 0.0;
        };
        if x <= x0 {
            return u0;
        }
        for w in p.windows(2) {
            let ((xa, ua), (xb, ub)) = (w[0], w[1]);
            if x <= xb {
                return ua + (ub - ua) * (x - xa) / (xb - xa);
            }
        }
        p[p.len() - 1].1
    }
}

/// The utility of delivering `delivered_percent` (clamped to `[0, 100]`; NaN reads as 0) of
/// a query's results. `curve` is the query's loss-tolerance graph with points ascending in
/// percent delivered, as `spec` stores it; without one, utility falls linearly from 1 at
/// 100 % to 0 at 0 %.
pub fn loss_utility(curve: Option<&UtilityCurve>, delivered_percent: f64) -> f64 {
    let x = if delivered_percent.is_nan() {
        0.0
    } else {
        delivered_percent.clamp(0.0, 100.0)
    };
    let u = match curve {
        Some(c) if !c.points.is_empty() => c.at(x),
        _ => x / 100.0,
    };
    if u.is_finite() {
        u.clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// Utility lost by lowering delivery from `from` to `to` percent (never negative).
pub fn loss_between(curve: Option<&UtilityCurve>, from: f64, to: f64) -> f64 {
    (loss_utility(curve, from) - loss_utility(curve, to)).max(0.0)
}

/// Aurora's loss: utility lost per percent dropped between `from` and `to` (0 when they
/// are equal).
pub fn loss_slope(curve: Option<&UtilityCurve>, from: f64, to: f64) -> f64 {
    let span = from - to;
    if span.abs() > 0.0 {
        loss_between(curve, from.max(to), from.min(to)) / span.abs()
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[[100, 1.0], [50, 0.7], [0, 0.0]]` as written, stored ascending as `spec` does.
    fn slides_curve() -> UtilityCurve {
        let written = [(100.0, 1.0), (50.0, 0.7), (0.0, 0.0)];
        UtilityCurve {
            points: written.iter().rev().copied().collect(),
        }
    }

    #[test]
    fn loss_slope_of_the_first_piece_is_0_006_per_percent() {
        // load-shedding.md A6: utility 1 -> 0.7 over 50 % gives 0.006 per percent.
        let c = slides_curve();
        assert!((loss_slope(Some(&c), 100.0, 99.0) - 0.006).abs() < 1e-12);
        assert!((loss_slope(Some(&c), 80.0, 70.0) - 0.006).abs() < 1e-12);
        assert!((loss_slope(Some(&c), 100.0, 50.0) - 0.006).abs() < 1e-12);
        // The second piece: 0.7 -> 0 over 50 %.
        assert!((loss_slope(Some(&c), 50.0, 0.0) - 0.014).abs() < 1e-12);
    }

    #[test]
    fn the_default_curve_is_linear() {
        assert_eq!(loss_utility(None, 100.0), 1.0);
        assert_eq!(loss_utility(None, 40.0), 0.4);
        assert_eq!(loss_utility(None, 0.0), 0.0);
        assert!((loss_slope(None, 60.0, 59.0) - 0.01).abs() < 1e-12);
    }

    #[test]
    fn out_of_range_percentages_are_clamped() {
        let c = slides_curve();
        assert_eq!(loss_utility(Some(&c), 150.0), 1.0);
        assert_eq!(loss_utility(Some(&c), -3.0), 0.0);
        assert_eq!(loss_utility(Some(&c), f64::NAN), 0.0);
        assert_eq!(loss_between(Some(&c), 10.0, 20.0), 0.0);
        assert_eq!(loss_slope(Some(&c), 30.0, 30.0), 0.0);
    }

    #[test]
    fn utility_curve_interpolates_and_holds_its_ends() {
        let c = UtilityCurve {
            points: vec![(25.0, 0.1), (35.0, 1.0)],
        };
        assert_eq!(c.at(0.0), 0.1);
        assert!((c.at(30.0) - 0.55).abs() < 1e-12);
        assert_eq!(c.at(35.0), 1.0);
        assert_eq!(c.at(99.0), 1.0);
        let single = UtilityCurve {
            points: vec![(5.0, 0.5)],
        };
        assert_eq!(single.at(-1.0), 0.5);
        assert_eq!(single.at(10.0), 0.5);
    }
}
