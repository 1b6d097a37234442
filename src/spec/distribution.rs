//! The workload file format, part two: rate profiles and field distributions as written in
//! YAML. Each is one name (`unlimited`, `now`) or a mapping with exactly one key naming the
//! shape; validation against the field's type happens in `build_stream`.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::duration::DurationConfig;

/// `streams.<name>.rate:` offered load in tuples per second.
///
/// - a positive number: constant, e.g. `rate: 50000`;
/// - `unlimited`: as fast as the source can go (benchmarks);
/// - `{steps: [{at: 0s, rate: 100}, {at: 20s, rate: 300}]}`: piecewise constant; `at` is
///   the time since the start of the run, strictly increasing, and the rate before the
///   first step is 0; a step rate of 0 pauses the stream;
/// - `{ramp: {from: 100, to: 5000, over: 30s}}`: linear from `from` to `to` over `over`,
///   then holds `to`;
/// - `{sine: {mean: 1000, amplitude: 500, period: 10s}}`: oscillates around `mean`, rising
///   first; `amplitude` is at most `mean`, so the rate never goes negative;
/// - `{bursts: {high: 10000, low: 100, on: 1s, off: 4s}}`: `high` for `on`, then `low` for
///   `off`, repeating;
/// - `{constant: 500}`: the same as `500`.
#[derive(Clone, Debug, PartialEq)]
pub enum RateConfig {
    Constant(f64),
    Steps(Vec<StepConfig>),
    Ramp(RampConfig),
    Sine(SineConfig),
    Bursts(BurstsConfig),
    Unlimited,
}

/// One step of a `steps` rate.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepConfig {
    /// When the step starts, as a duration since the start of the run.
    pub at: DurationConfig,
    /// Tuples per second from `at` until the next step; 0 or more.
    pub rate: f64,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RampConfig {
    /// Rate at the start of the run, 0 or more.
    pub from: f64,
    /// Rate reached after `over` and held afterwards, 0 or more.
    pub to: f64,
    /// Length of the ramp, positive.
    pub over: DurationConfig,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SineConfig {
    /// Average rate, positive.
    pub mean: f64,
    /// Largest deviation from the mean, between 0 and `mean`.
    pub amplitude: f64,
    /// Length of one oscillation, positive.
    pub period: DurationConfig,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BurstsConfig {
    /// Rate during a burst, 0 or more.
    pub high: f64,
    /// Rate between bursts, 0 or more.
    pub low: f64,
    /// Length of a burst, positive.
    pub on: DurationConfig,
    /// Time between bursts, positive.
    pub off: DurationConfig,
}

/// The shapes a rate mapping may name.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum RateShape {
    Constant,
    Steps,
    Ramp,
    Sine,
    Bursts,
}

impl<'de> Deserialize<'de> for RateConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RateVisitor)
    }
}

struct RateVisitor;

impl<'de> Visitor<'de> for RateVisitor {
    type Value = RateConfig;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "a rate: a number of tuples per second, `unlimited`, or one of \
             {steps: ...}, {ramp: ...}, {sine: ...}, {bursts: ...}",
        )
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RateConfig, E> {
        Ok(RateConfig::Constant(v as f64))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<RateConfig, E> {
        Ok(RateConfig::Constant(v as f64))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<RateConfig, E> {
        Ok(RateConfig::Constant(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<RateConfig, E> {
        match v {
            "unlimited" => Ok(RateConfig::Unlimited),
            _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RateConfig, A::Error> {
        let Some(shape) = map.next_key::<RateShape>()? else {
            return Err(de::Error::invalid_length(0, &self));
        };
        let rate = match shape {
            RateShape::Constant => RateConfig::Constant(map.next_value()?),
            RateShape::Steps => RateConfig::Steps(map.next_value()?),
            RateShape::Ramp => RateConfig::Ramp(map.next_value()?),
            RateShape::Sine => RateConfig::Sine(map.next_value()?),
            RateShape::Bursts => RateConfig::Bursts(map.next_value()?),
        };
        if map.next_key::<IgnoredAny>()?.is_some() {
            return Err(de::Error::custom(
                "a rate has exactly one shape: steps, ramp, sine or bursts",
            ));
        }
        Ok(rate)
    }
}

/// `streams.<name>.fields.<field>:` how the values of one field are drawn.
///
/// - `{uniform: {min: 0, max: 100}}`: uniform between `min` and `max`, inclusive for int
///   fields, `[min, max)` for float fields; for timestamp fields both are times written as
///   durations since the Unix epoch (so `1700000000` is a Unix time in seconds);
///   `min <= max`;
/// - `{normal: {mean: 20, stddev: 5}}`: normal, for float and int fields (rounded);
/// - `{zipf: {n: 1000, s: 1.1}}`: ints `1..=n`, key 1 the most frequent; larger `s`
///   skews more; int fields; `n >= 1`, `s >= 0`;
/// - `{sequence: {start: 0, step: 1}}`: the k-th tuple (from 0) gets `start + k * step`;
///   int, float and timestamp fields (for timestamps both are durations, e.g.
///   `{start: 0, step: 1ms}`); `start` defaults to 0 and `step` to 1;
/// - `{choice: {values: [oslo, rome], weights: [3, 1]}}`: one of the strings, weighted
///   (equal weights if omitted); string fields;
/// - `{bernoulli: 0.3}`: `true` with probability 0.3; bool fields;
/// - `now`: the tuple's arrival time; timestamp fields (their default);
/// - `{constant: v}`: always `v`, a value of the field's type.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldConfig {
    Uniform(UniformConfig),
    Normal(NormalConfig),
    Zipf(ZipfConfig),
    Sequence(SequenceConfig),
    Choice(ChoiceConfig),
    Bernoulli(f64),
    Now,
    Constant(Literal),
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UniformConfig {
    pub min: Literal,
    pub max: Literal,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NormalConfig {
    pub mean: f64,
    /// Standard deviation, 0 or more.
    pub stddev: f64,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZipfConfig {
    /// Number of distinct keys, at least 1.
    pub n: u64,
    /// Exponent, 0 or more (0 is uniform; around 1 is typical of real key popularity).
    pub s: f64,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequenceConfig {
    #[serde(default = "Literal::zero")]
    pub start: Literal,
    #[serde(default = "Literal::one")]
    pub step: Literal,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChoiceConfig {
    /// The strings to choose from, at least one.
    pub values: Vec<String>,
    /// One weight per value, each 0 or more, not all 0 (default: equal).
    #[serde(default)]
    pub weights: Option<Vec<f64>>,
}

/// A plain YAML scalar, typed later by the field it is used for.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl Literal {
    fn zero() -> Literal {
        Literal::Int(0)
    }

    fn one() -> Literal {
        Literal::Int(1)
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Bool(v) => write!(f, "{v}"),
            Literal::Int(v) => write!(f, "{v}"),
            Literal::Float(v) => write!(f, "{v}"),
            Literal::Str(v) => write!(f, "{v}"),
        }
    }
}

impl<'de> Deserialize<'de> for Literal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LiteralVisitor)
    }
}

struct LiteralVisitor;

impl Visitor<'_> for LiteralVisitor {
    type Value = Literal;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a single value (number, string or boolean)")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Literal, E> {
        Ok(Literal::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Literal, E> {
        Ok(Literal::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Literal, E> {
        i64::try_from(v)
            .map(Literal::Int)
            .map_err(|_| E::custom(format!("`{v}` is too large (at most {})", i64::MAX)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Literal, E> {
        Ok(Literal::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Literal, E> {
        Ok(Literal::Str(v.to_string()))
    }
}
