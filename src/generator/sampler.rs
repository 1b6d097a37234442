//! Samplers: a `FieldGen` compiled for one field type, writing whole runs of values into a
//! column. Each sampler variant produces exactly one column kind, chosen when it is built,
//! so filling a column is one `match` per call and a tight loop with no per-tuple allocation
//! (strings are codes into a dictionary built with the sampler, which every batch it fills
//! shares: no reference count per tuple).

use std::sync::Arc;

use rand::RngExt;
use rand::rngs::SmallRng;
use rand_distr::{Normal, Zipf};

use super::field::FieldGen;
use crate::core::batch::{Column, Dict};
use crate::core::schema::{DataType, Nanos, Scalar};

/// A distribution ready to draw values of one field type.
#[derive(Clone, Debug)]
pub(super) enum Sampler {
    UniformInt {
        min: i64,
        max: i64,
    },
    UniformFloat {
        min: f64,
        span: f64,
    },
    NormalInt(Normal<f64>),
    NormalFloat(Normal<f64>),
    Zipf(Zipf<f64>),
    SeqInt {
        start: i64,
        step: i64,
    },
    SeqFloat {
        start: f64,
        step: f64,
    },
    /// `cumulative` holds the running sums of the weights; empty means equal weights.
    /// `codes` holds each listed value's code in `dict` (the distinct values), so a draw
    /// is an index into `codes` as it was into the list.
    Choice {
        cumulative: Vec<f64>,
        dict: Arc<Dict>,
        codes: Vec<u32>,
    },
    Bernoulli(f64),
    Now,
    Int(i64),
    Float(f64),
    Str(Arc<str>),
    Bool(bool),
}

/// Where a run of tuples sits in the stream: the index of its first tuple since the
/// generator was created, and the arrival time of tuple `k` of the run.
#[derive(Clone, Copy, Debug)]
pub(super) struct Run {
    pub first_index: u64,
    pub first_arrival: Nanos,
    pub spacing: Nanos,
    pub len: usize,
}

impl Run {
    pub fn arrival(&self, k: usize) -> Nanos {
        self.first_arrival
            .wrapping_add((k as i64).wrapping_mul(self.spacing))
    }
}

impl Sampler {
    /// Compiles `gen` for a field of type `ty`; a distribution that does not fit the type
    /// (spec validation rejects those) is replaced by the type's default.
    pub fn new(generator: &FieldGen, ty: DataType) -> Sampler {
        let fallback = FieldGen::default_for(ty);
        let g = if generator.fits(ty) {
            generator
        } else {
            &fallback
        };
        match g {
            FieldGen::UniformInt { min, max } => Sampler::UniformInt {
                min: *min,
                max: *max,
            },
            FieldGen::UniformFloat { min, max } => Sampler::UniformFloat {
                min: *min,
                span: max - min,
            },
            FieldGen::Normal { mean, stddev } => {
                let d = Normal::new(*mean, *stddev).unwrap_or_else(|_| {
                    Normal::new(0.0, 0.0).expect("a zero deviation is always valid")
                });
                if ty == DataType::Float {
                    Sampler::NormalFloat(d)
                } else {
                    Sampler::NormalInt(d)
                }
            }
            FieldGen::Zipf { n, s } => match Zipf::new(*n as f64, *s) {
                Ok(d) => Sampler::Zipf(d),
                Err(_) => Sampler::UniformInt { min: 1, max: 1 },
            },
            FieldGen::Sequence { start, step } => match (start, step) {
                (Scalar::Float(a), Scalar::Float(b)) => Sampler::SeqFloat {
                    start: *a,
                    step: *b,
                },
                (Scalar::Int(a) | Scalar::Timestamp(a), Scalar::Int(b) | Scalar::Timestamp(b)) => {
                    Sampler::SeqInt {
                        start: *a,
                        step: *b,
                    }
                }
                _ => Sampler::SeqInt { start: 0, step: 1 },
            },
            FieldGen::Choice { values, weights } => {
                let values: Vec<Arc<str>> = values.iter().map(|v| Arc::from(v.as_str())).collect();
                let (dict, codes) = Dict::of(&values);
                let mut cumulative = Vec::new();
                if let Some(w) = weights {
                    let mut sum = 0.0;
                    for x in w {
                        sum += if *x > 0.0 && x.is_finite() { *x } else { 0.0 };
                        cumulative.push(sum);
                    }
                    if sum <= 0.0 {
                        cumulative.clear();
                    }
                }
                Sampler::Choice {
                    cumulative,
                    dict,
                    codes,
                }
            }
            FieldGen::Bernoulli { p } => Sampler::Bernoulli(*p),
            FieldGen::Now => Sampler::Now,
            FieldGen::Constant(v) => match v {
                Scalar::Int(x) | Scalar::Timestamp(x) => Sampler::Int(*x),
                Scalar::Float(x) => Sampler::Float(*x),
                Scalar::Str(x) => Sampler::Str(x.clone()),
                Scalar::Bool(x) => Sampler::Bool(*x),
            },
        }
    }

    /// Appends `run.len` values to `col`, drawing from `rng` in tuple order.
    pub fn fill(&self, rng: &mut SmallRng, col: &mut Column, run: Run) {
        let n = run.len;
        match (self, col) {
            (Sampler::UniformInt { min, max }, Column::Int(v)) => {
                v.extend((0..n).map(|_| rng.random_range(*min..=*max)))
            }
            (Sampler::UniformFloat { min, span }, Column::Float(v)) => {
                v.extend((0..n).map(|_| min + span * rng.random::<f64>()))
            }
            (Sampler::NormalInt(d), Column::Int(v)) => {
                v.extend((0..n).map(|_| rng.sample(d).round() as i64))
            }
            (Sampler::NormalFloat(d), Column::Float(v)) => v.extend((0..n).map(|_| rng.sample(d))),
            (Sampler::Zipf(d), Column::Int(v)) => v.extend((0..n).map(|_| rng.sample(d) as i64)),
            (Sampler::SeqInt { start, step }, Column::Int(v)) => v.extend((0..n).map(|k| {
                // Saturating, never wrapping: a sequence that runs past the 64-bit range
                // stays at the bound (a window counts such tuples as late).
                let i = i64::try_from(run.first_index.saturating_add(k as u64)).unwrap_or(i64::MAX);
                start.saturating_add(step.saturating_mul(i))
            })),
            (Sampler::SeqFloat { start, step }, Column::Float(v)) => {
                v.extend((0..n).map(|k| start + (run.first_index + k as u64) as f64 * step))
            }
            (
                Sampler::Choice {
                    cumulative,
                    dict,
                    codes,
                },
                Column::Str(v),
            ) => v.extend_coded(
                dict,
                (0..n).map(|_| codes[pick(rng, codes.len(), cumulative)]),
            ),
            (Sampler::Bernoulli(p), Column::Bool(v)) => {
                v.extend((0..n).map(|_| rng.random::<f64>() < *p))
            }
            (Sampler::Now, Column::Int(v)) => v.extend((0..n).map(|k| run.arrival(k))),
            (Sampler::Int(x), Column::Int(v)) => v.extend(std::iter::repeat_n(*x, n)),
            (Sampler::Float(x), Column::Float(v)) => v.extend(std::iter::repeat_n(*x, n)),
            (Sampler::Str(x), Column::Str(v)) => v.push_repeat(x, n),
            (Sampler::Bool(x), Column::Bool(v)) => v.extend(std::iter::repeat_n(*x, n)),
            // A batch whose column types differ from the schema: keep it rectangular.
            (_, col) => push_zeros(col, n),
        }
    }
}

/// An index into `len` values: uniform if `cumulative` is empty, else weighted.
fn pick(rng: &mut SmallRng, len: usize, cumulative: &[f64]) -> usize {
    match cumulative.last() {
        None => rng.random_range(0..len),
        Some(total) => {
            let x = rng.random::<f64>() * total;
            // Zero-weight values have the same running sum as their predecessor, so the
            // first sum above `x` is never one of them.
            cumulative.partition_point(|&c| c <= x).min(len - 1)
        }
    }
}

/// Appends `n` zero values (0, 0.0, "", false) to `col`.
pub(super) fn push_zeros(col: &mut Column, n: usize) {
    match col {
        Column::Int(v) => v.extend(std::iter::repeat_n(0, n)),
        Column::Float(v) => v.extend(std::iter::repeat_n(0.0, n)),
        Column::Str(v) => v.push_repeat(&Arc::from(""), n),
        Column::Bool(v) => v.extend(std::iter::repeat_n(false, n)),
    }
}
