//! Validating one field distribution against its field's type: a `FieldConfig` becomes a
//! `FieldGen` only if it fits the type and its parameters are in range, so the generator
//! never sees a distribution it would have to replace.

use std::sync::Arc;

use super::distribution::{FieldConfig, Literal};
use super::duration::{parse_duration, seconds_to_nanos};
use super::error::{Diagnostics, join};
use crate::core::schema::{DataType, Field, Nanos, Scalar};
use crate::generator::FieldGen;

/// Builds the distribution of `field` from `config` (written at `path`), reporting every
/// problem; `None` if there was one.
pub(crate) fn build_field(
    diag: &mut Diagnostics,
    path: &str,
    config: &FieldConfig,
    field: &Field,
) -> Option<FieldGen> {
    let before = diag.count();
    let ty = field.ty;
    let mut err = |sub: &str, msg: String| diag.at(&join(path, sub), msg);
    let name = dist_name(config);
    let needs = |what: &str| {
        format!(
            "{name} needs {what}; `{}` is {} {ty} field",
            field.name,
            article(ty)
        )
    };
    let generator = match config {
        FieldConfig::Uniform(u) => {
            if matches!(ty, DataType::Int | DataType::Float | DataType::Timestamp) {
                let min = literal(&u.min, ty).map_err(|m| err("uniform.min", m));
                let max = literal(&u.max, ty).map_err(|m| err("uniform.max", m));
                let order = |min: &dyn std::fmt::Display, max: &dyn std::fmt::Display| {
                    format!("distribution uniform needs min <= max (min {min}, max {max})")
                };
                match (min, max) {
                    (Ok(Scalar::Float(min)), Ok(Scalar::Float(max))) => {
                        if min > max {
                            err("uniform", order(&min, &max));
                        } else if !(max - min).is_finite() {
                            err("uniform", "uniform range is too wide for a float".into());
                        }
                        Some(FieldGen::UniformFloat { min, max })
                    }
                    (Ok(min), Ok(max)) => {
                        let (min, max) = (as_int(&min), as_int(&max));
                        if min > max {
                            err("uniform", order(&min, &max));
                        }
                        Some(FieldGen::UniformInt { min, max })
                    }
                    _ => None,
                }
            } else {
                err("", needs("an int, float or timestamp field"));
                None
            }
        }
        FieldConfig::Normal(n) => {
            if !matches!(ty, DataType::Int | DataType::Float) {
                err("", needs("an int or float field"));
            }
            if !n.mean.is_finite() {
                err("normal.mean", "normal needs a finite mean".into());
            }
            if !(n.stddev >= 0.0 && n.stddev.is_finite()) {
                err(
                    "normal.stddev",
                    format!("normal needs stddev >= 0, got {}", n.stddev),
                );
            }
            Some(FieldGen::Normal {
                mean: n.mean,
                stddev: n.stddev,
            })
        }
        FieldConfig::Zipf(z) => {
            if ty != DataType::Int {
                err("", needs("an int field"));
            }
            if z.n < 1 {
                err("zipf.n", "zipf needs n >= 1 (the number of keys)".into());
            }
            if !(z.s >= 0.0 && z.s.is_finite()) {
                err(
                    "zipf.s",
                    format!("zipf needs an exponent s >= 0, got {}", z.s),
                );
            }
            Some(FieldGen::Zipf { n: z.n, s: z.s })
        }
        FieldConfig::Sequence(s) => {
            if matches!(ty, DataType::Int | DataType::Float | DataType::Timestamp) {
                let start = literal(&s.start, ty).map_err(|m| err("sequence.start", m));
                let step = literal(&s.step, ty).map_err(|m| err("sequence.step", m));
                match (start, step) {
                    (Ok(start), Ok(step)) => Some(FieldGen::Sequence { start, step }),
                    _ => None,
                }
            } else {
                err("", needs("an int, float or timestamp field"));
                None
            }
        }
        FieldConfig::Choice(c) => {
            if ty != DataType::Str {
                err("", needs("a string field"));
            }
            if c.values.is_empty() {
                err("choice.values", "choice needs at least one value".into());
            }
            if let Some(w) = &c.weights {
                if w.len() != c.values.len() {
                    err(
                        "choice.weights",
                        format!(
                            "choice has {} values but {} weights",
                            c.values.len(),
                            w.len()
                        ),
                    );
                } else if w.iter().any(|x| !(*x >= 0.0 && x.is_finite())) {
                    err("choice.weights", "choice weights must be 0 or more".into());
                } else if w.iter().sum::<f64>() <= 0.0 {
                    err("choice.weights", "choice weights must not all be 0".into());
                }
            }
            Some(FieldGen::Choice {
                values: c.values.clone(),
                weights: c.weights.clone(),
            })
        }
        FieldConfig::Bernoulli(p) => {
            if ty != DataType::Bool {
                err("", needs("a bool field"));
            }
            if !(0.0..=1.0).contains(p) {
                err(
                    "bernoulli",
                    format!("bernoulli needs a probability in [0, 1], got {p}"),
                );
            }
            Some(FieldGen::Bernoulli { p: *p })
        }
        FieldConfig::Now => {
            if ty != DataType::Timestamp {
                err("", needs("a timestamp field"));
            }
            Some(FieldGen::Now)
        }
        FieldConfig::Constant(v) => match literal(v, ty) {
            Ok(s) => Some(FieldGen::Constant(s)),
            Err(m) => {
                err("constant", m);
                None
            }
        },
    };
    if diag.count() > before {
        return None;
    }
    generator
}

/// Reports an int or timestamp `sequence` at `path` whose last value, for a stream of
/// `count` tuples, would not fit in 64 bits. Endless streams are not rejected: their
/// generator saturates at the bound, and a window counts such tuples as late.
pub(crate) fn check_sequence_range(
    diag: &mut Diagnostics,
    path: &str,
    generator: &FieldGen,
    count: Option<u64>,
) {
    let (FieldGen::Sequence { start, step }, Some(count)) = (generator, count) else {
        return;
    };
    if !matches!(start, Scalar::Int(_) | Scalar::Timestamp(_)) || count == 0 {
        return;
    }
    let (a, b) = (as_int(start), as_int(step));
    let last = i64::try_from(count - 1)
        .ok()
        .and_then(|k| b.checked_mul(k))
        .and_then(|d| a.checked_add(d));
    if last.is_none() {
        diag.at(
            &join(path, "sequence"),
            format!(
                "this sequence overflows 64 bits within the stream's {count} tuples \
                 (start {a}, step {b}); lower the start, the step or the count"
            ),
        );
    }
}

fn dist_name(c: &FieldConfig) -> &'static str {
    match c {
        FieldConfig::Uniform(_) => "uniform",
        FieldConfig::Normal(_) => "normal",
        FieldConfig::Zipf(_) => "zipf",
        FieldConfig::Sequence(_) => "sequence",
        FieldConfig::Choice(_) => "choice",
        FieldConfig::Bernoulli(_) => "bernoulli",
        FieldConfig::Now => "now",
        FieldConfig::Constant(_) => "constant",
    }
}

fn article(ty: DataType) -> &'static str {
    match ty {
        DataType::Int => "an",
        _ => "a",
    }
}

fn as_int(s: &Scalar) -> i64 {
    match s {
        Scalar::Int(v) | Scalar::Timestamp(v) => *v,
        _ => 0,
    }
}

/// A value written in the file, as a scalar of type `ty`. Timestamps are written as
/// durations since the Unix epoch (a bare number is seconds).
pub(crate) fn literal(lit: &Literal, ty: DataType) -> Result<Scalar, String> {
    match (ty, lit) {
        (DataType::Int, Literal::Int(v)) => Ok(Scalar::Int(*v)),
        (DataType::Int, Literal::Float(f)) if f.fract() == 0.0 && f.abs() < 9.2e18 => {
            Ok(Scalar::Int(*f as i64))
        }
        (DataType::Int, other) => Err(format!("expected an integer, got `{other}`")),
        (DataType::Float, Literal::Int(v)) => Ok(Scalar::Float(*v as f64)),
        (DataType::Float, Literal::Float(f)) if f.is_finite() => Ok(Scalar::Float(*f)),
        (DataType::Float, other) => Err(format!("expected a finite number, got `{other}`")),
        (DataType::Str, Literal::Str(s)) => Ok(Scalar::Str(Arc::from(s.as_str()))),
        (DataType::Str, other) => Ok(Scalar::Str(Arc::from(other.to_string()))),
        (DataType::Bool, Literal::Bool(b)) => Ok(Scalar::Bool(*b)),
        (DataType::Bool, other) => Err(format!("expected true or false, got `{other}`")),
        (DataType::Timestamp, lit) => time(lit).map(Scalar::Timestamp),
    }
}

fn time(lit: &Literal) -> Result<Nanos, String> {
    let bad = || {
        format!(
            "expected a time as a duration since the Unix epoch (e.g. 0s, 1700000000), got `{lit}`"
        )
    };
    match lit {
        Literal::Int(v) if *v >= 0 => v
            .checked_mul(1_000_000_000)
            .ok_or_else(|| format!("time `{v}` is too large")),
        Literal::Float(f) => seconds_to_nanos(*f).ok_or_else(bad),
        Literal::Str(s) => parse_duration(s),
        _ => Err(bad()),
    }
}
