//! Field distributions: the description of how one column of a generated stream is drawn.
//! A `FieldGen` is plain data; `fits` says which field types it can fill, and the generator
//! never applies a distribution to a type it does not fit.

use crate::core::schema::{DataType, Scalar};

/// How the values of one field are drawn.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldGen {
    /// Integers uniform in `min..=max` (int and timestamp fields).
    UniformInt { min: i64, max: i64 },
    /// Floats uniform in `[min, max)` (float fields).
    UniformFloat { min: f64, max: f64 },
    /// Normal with the given mean and standard deviation; int fields round to the nearest
    /// integer.
    Normal { mean: f64, stddev: f64 },
    /// Zipf-distributed integers in `1..=n` with exponent `s`: key 1 is the most frequent,
    /// which is how hot keys are modelled (int fields).
    Zipf { n: u64, s: f64 },
    /// The k-th tuple of the stream (from 0) gets `start + k * step`. Both scalars have the
    /// field's storage type: `Int` for int, `Float` for float, `Timestamp` for timestamp.
    Sequence { start: Scalar, step: Scalar },
    /// One of `values`, with probability proportional to `weights` (equal if `None`)
    /// (string fields).
    Choice {
        values: Vec<String>,
        weights: Option<Vec<f64>>,
    },
    /// `true` with probability `p` (bool fields).
    Bernoulli { p: f64 },
    /// The tuple's arrival time (timestamp fields; their default).
    Now,
    /// Always the same value, of the field's type.
    Constant(Scalar),
}

impl FieldGen {
    /// The distribution a field gets when the workload names none: ints uniform in
    /// `0..=1000`, floats uniform in `[0, 1)`, strings one of `a`, `b`, `c`, bools a fair
    /// coin and timestamps the arrival time.
    pub fn default_for(ty: DataType) -> FieldGen {
        match ty {
            DataType::Int => FieldGen::UniformInt { min: 0, max: 1000 },
            DataType::Float => FieldGen::UniformFloat { min: 0.0, max: 1.0 },
            DataType::Str => FieldGen::Choice {
                values: vec!["a".into(), "b".into(), "c".into()],
                weights: None,
            },
            DataType::Bool => FieldGen::Bernoulli { p: 0.5 },
            DataType::Timestamp => FieldGen::Now,
        }
    }

    /// The name the workload format uses for this distribution (for messages).
    pub fn name(&self) -> &'static str {
        match self {
            FieldGen::UniformInt { .. } | FieldGen::UniformFloat { .. } => "uniform",
            FieldGen::Normal { .. } => "normal",
            FieldGen::Zipf { .. } => "zipf",
            FieldGen::Sequence { .. } => "sequence",
            FieldGen::Choice { .. } => "choice",
            FieldGen::Bernoulli { .. } => "bernoulli",
            FieldGen::Now => "now",
            FieldGen::Constant(_) => "constant",
        }
    }

    /// Whether this distribution can fill a field of type `ty`, parameters included (a
    /// choice needs at least one value, a sequence scalars of the field's type, a normal a
    /// finite mean and a standard deviation >= 0, a zipf `n >= 1` and `s >= 0`).
    pub fn fits(&self, ty: DataType) -> bool {
        use DataType as T;
        match self {
            FieldGen::UniformInt { min, max } => matches!(ty, T::Int | T::Timestamp) && min <= max,
            FieldGen::UniformFloat { min, max } => ty == T::Float && min <= max,
            FieldGen::Normal { mean, stddev } => {
                matches!(ty, T::Int | T::Float)
                    && mean.is_finite()
                    && *stddev >= 0.0
                    && stddev.is_finite()
            }
            FieldGen::Zipf { n, s } => ty == T::Int && *n >= 1 && *s >= 0.0 && s.is_finite(),
            FieldGen::Sequence { start, step } => {
                matches!(ty, T::Int | T::Float | T::Timestamp)
                    && start.data_type() == ty
                    && step.data_type() == ty
            }
            FieldGen::Choice { values, weights } => {
                ty == T::Str
                    && !values.is_empty()
                    && weights.as_ref().is_none_or(|w| w.len() == values.len())
            }
            FieldGen::Bernoulli { .. } => ty == T::Bool,
            FieldGen::Now => ty == T::Timestamp,
            FieldGen::Constant(v) => v.data_type() == ty,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fit_their_type() {
        for ty in [
            DataType::Int,
            DataType::Float,
            DataType::Str,
            DataType::Bool,
            DataType::Timestamp,
        ] {
            assert!(FieldGen::default_for(ty).fits(ty), "{ty}");
        }
    }

    #[test]
    fn fits_rejects_wrong_types_and_parameters() {
        assert!(!FieldGen::Zipf { n: 10, s: 1.0 }.fits(DataType::Float));
        assert!(!FieldGen::Zipf { n: 0, s: 1.0 }.fits(DataType::Int));
        assert!(!FieldGen::UniformInt { min: 5, max: 1 }.fits(DataType::Int));
        assert!(!FieldGen::Now.fits(DataType::Int));
        assert!(
            !FieldGen::Choice {
                values: vec![],
                weights: None
            }
            .fits(DataType::Str)
        );
        assert!(
            !FieldGen::Sequence {
                start: Scalar::Int(0),
                step: Scalar::Float(1.0)
            }
            .fits(DataType::Int)
        );
        assert!(FieldGen::Constant(Scalar::Timestamp(5)).fits(DataType::Timestamp));
    }
}
