//! Validating one stream: its schema, event time, count, rate profile and field
//! distributions. A `StreamSpec` comes out only if all of them are valid; the schema comes
//! out on its own whenever it is valid, so queries can be checked against it regardless.

use super::build_field::{build_field, check_sequence_range};
use super::build_source::{build_io_stream, check_one_kind};
use super::config::{FlowConfig, GeneratorConfig, StreamConfig};
use super::de_named::NamedMap;
use super::distribution::{FieldConfig, RateConfig};
use super::error::{Diagnostics, join};
use super::workload::{
    DEFAULT_IDLE_TIMEOUT, Flow, GeneratorSpec, SourceKind, SourceSpec, StreamSpec,
};
use crate::core::plan::fmt_nanos;
use crate::core::schema::{DataType, Field, Schema};
use crate::generator::{FieldGen, RateProfile, mix_seed};

/// Whether `name` can be written in SQL without quotes.
pub(crate) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Checks that `name` is an identifier; `what` is e.g. "stream name".
pub(crate) fn check_identifier(diag: &mut Diagnostics, path: &str, what: &str, name: &str) {
    if !is_identifier(name) {
        diag.at(
            path,
            format!(
                "{what} `{name}` must start with a letter or `_` and contain only letters, \
                 digits and `_`, so SQL can name it"
            ),
        );
    }
}

/// The fields of stream `stream`, without event time; `None` if they have errors.
fn build_schema(diag: &mut Diagnostics, stream: &str, schema: &NamedMap<String>) -> Option<Schema> {
    let path = join(&join("streams", stream), "schema");
    let before = diag.count();
    if schema.0.is_empty() {
        diag.at(&path, format!("stream `{stream}` needs at least one field"));
    }
    let mut fields: Vec<Field> = Vec::new();
    for (name, ty) in &schema.0 {
        let p = join(&path, name);
        check_identifier(diag, &p, "field name", name);
        if let Some(prev) = fields.iter().find(|f| f.name.eq_ignore_ascii_case(name)) {
            diag.at(
                &p,
                format!(
                    "field `{name}` clashes with `{}`: SQL names ignore case",
                    prev.name
                ),
            );
        }
        match DataType::parse(ty.trim()) {
            Some(ty) => fields.push(Field {
                name: name.clone(),
                ty,
            }),
            None => diag.at(
                &p,
                format!("unknown type `{ty}`; expected int, float, string, bool or timestamp"),
            ),
        }
    }
    (diag.count() == before).then(|| Schema::new(fields))
}

/// The schema of stream `stream` with its event time; `None` if either has errors.
pub(crate) fn stream_schema(
    diag: &mut Diagnostics,
    stream: &str,
    schema: &NamedMap<String>,
    event_time: Option<&str>,
) -> Option<Schema> {
    let mut s = build_schema(diag, stream, schema)?;
    let Some(et) = event_time else {
        return Some(s);
    };
    let p = join(&join("streams", stream), "event_time");
    match s.index_of(et) {
        None => diag.at(
            &p,
            format!("event_time `{et}` is not a field of stream `{stream}`"),
        ),
        Some(i) if s.fields[i].ty != DataType::Timestamp => diag.at(
            &p,
            format!(
                "event_time `{et}` is {} {} field; it must be a timestamp",
                if s.fields[i].ty == DataType::Int {
                    "an"
                } else {
                    "a"
                },
                s.fields[i].ty
            ),
        ),
        Some(i) => {
            s.event_time = Some(i);
            return Some(s);
        }
    }
    None
}

/// Builds stream number `index` of the file; `schema` is the result of `stream_schema`.
pub(crate) fn build_stream(
    diag: &mut Diagnostics,
    name: &str,
    index: usize,
    config: &StreamConfig,
    schema: Option<Schema>,
    workload_seed: u64,
) -> Option<StreamSpec> {
    let path = join("streams", name);
    let before = diag.count();
    let shorthand = config.rate.is_some() || config.count.is_some() || config.fields.is_some();
    let (source_path, source, generator) = match (&config.source, shorthand) {
        (Some(_), true) => {
            diag.at(
                &path,
                "give the generator either as `source: {generator: {rate, count, fields}}` or \
                 as the shorthand `rate`, `count`, `fields` on the stream, not both",
            );
            return None;
        }
        (Some(s), false) => {
            let sp = join(&path, "source");
            if !check_one_kind(diag, &sp, s) {
                return None;
            }
            match &s.generator {
                Some(g) => (
                    sp.clone(),
                    Some(s),
                    GenRef::Block(g, join(&sp, "generator")),
                ),
                // tcp, replay or nexmark.
                None => return build_io_stream(diag, name, &sp, s, schema, workload_seed),
            }
        }
        (None, true) => match &config.rate {
            Some(rate) => (path.clone(), None, GenRef::Flat(rate, path.clone())),
            None => {
                diag.at(
                    &path,
                    "missing `rate` (e.g. `rate: 1000` or `rate: unlimited`)",
                );
                return None;
            }
        },
        (None, false) => {
            // A source or rate that failed to read, or a misspelt key (likely meant to
            // be one), was reported already.
            if ["source", "rate"]
                .iter()
                .any(|k| diag.has_error_under(&join(&path, k)))
                || diag.has_unknown_key_under(&path, STREAM_KEYS)
            {
                return None;
            }
            diag.at(
                &path,
                "stream needs a source, e.g. `source: {generator: {rate: 1000}}` (or the \
                 shorthand `rate: 1000`)",
            );
            return None;
        }
    };
    let (rate_config, count, fields_config, gpath) = match &generator {
        GenRef::Block(g, p) => (&g.rate, g.count, &g.fields, p.clone()),
        GenRef::Flat(rate, p) => (
            *rate,
            config.count,
            config.fields.as_ref().unwrap_or(&EMPTY_FIELDS),
            p.clone(),
        ),
    };
    if count == Some(0) {
        diag.at(
            &join(&gpath, "count"),
            "count must be at least 1 (leave it out for an endless stream)",
        );
    }
    let rate = build_rate(diag, &join(&gpath, "rate"), rate_config);
    let fields = schema
        .as_ref()
        .map(|s| build_fields(diag, &gpath, name, fields_config, s, count));
    let idle_timeout = match source.and_then(|s| s.idle_timeout) {
        Some(d) if d.0 <= 0 => {
            diag.at(
                &join(&source_path, "idle_timeout"),
                "idle_timeout must be positive, e.g. 1s",
            );
            DEFAULT_IDLE_TIMEOUT
        }
        Some(d) => d.0,
        None => DEFAULT_IDLE_TIMEOUT,
    };
    if diag.count() > before {
        return None;
    }
    let rate = rate?;
    let flow = match source.and_then(|s| s.flow) {
        Some(FlowConfig::Push) => Flow::Push,
        Some(FlowConfig::Pull) => Flow::Pull,
        // A firehose can always wait; a paced generator models a producer that cannot.
        None if rate.is_unlimited() => Flow::Pull,
        None => Flow::Push,
    };
    Some(StreamSpec {
        name: name.to_string(),
        schema: schema?,
        source: SourceSpec {
            kind: SourceKind::Generator(GeneratorSpec {
                rate,
                fields: fields?,
                count,
                seed: mix_seed(workload_seed, index as u64),
            }),
            flow,
            idle_timeout,
        },
        retain: None,
    })
}

/// The keys a stream entry may have.
const STREAM_KEYS: &[&str] = &[
    "schema",
    "event_time",
    "source",
    "count",
    "rate",
    "fields",
    "retain",
];

/// Where a stream's generator settings were written: in a `source.generator` block or flat
/// on the stream.
enum GenRef<'a> {
    Block(&'a GeneratorConfig, String),
    Flat(&'a RateConfig, String),
}

static EMPTY_FIELDS: NamedMap<FieldConfig> = NamedMap(Vec::new());

/// One distribution per schema field: the configured one or the type's default.
fn build_fields(
    diag: &mut Diagnostics,
    path: &str,
    stream: &str,
    config: &NamedMap<FieldConfig>,
    schema: &Schema,
    count: Option<u64>,
) -> Vec<FieldGen> {
    let mut out: Vec<Option<FieldGen>> = vec![None; schema.len()];
    let mut configured = vec![false; schema.len()];
    for (fname, fc) in &config.0 {
        let p = join(&join(path, "fields"), fname);
        let Some(i) = schema.index_of(fname) else {
            diag.at(&p, format!("`{fname}` is not a field of stream `{stream}`"));
            continue;
        };
        if configured[i] {
            diag.at(&p, format!("field `{fname}` is configured twice"));
            continue;
        }
        configured[i] = true;
        out[i] = build_field(diag, &p, fc, &schema.fields[i]);
        if let Some(g) = &out[i] {
            check_sequence_range(diag, &p, g, count);
        }
    }
    out.into_iter()
        .zip(&schema.fields)
        .map(|(g, f)| g.unwrap_or_else(|| FieldGen::default_for(f.ty)))
        .collect()
}

/// The rate profile at `path`; `None` if it is invalid.
pub(crate) fn build_rate(
    diag: &mut Diagnostics,
    path: &str,
    rate: &RateConfig,
) -> Option<RateProfile> {
    let before = diag.count();
    let profile = match rate {
        RateConfig::Constant(r) => {
            if r.is_infinite() && *r > 0.0 {
                diag.at(path, "rate must be finite; use `unlimited` for no limit");
            } else if r.is_nan() || *r <= 0.0 {
                diag.at(path, format!("rate must be positive, got {r}"));
            } else {
                at_most_max_rate(diag, path, "rate", *r);
            }
            RateProfile::Constant(*r)
        }
        RateConfig::Unlimited => RateProfile::Unlimited,
        RateConfig::Steps(steps) => {
            if steps.is_empty() {
                diag.at(
                    path,
                    "steps needs at least one step, e.g. [{at: 0s, rate: 100}]",
                );
            }
            let mut last: Option<i64> = None;
            for (i, s) in steps.iter().enumerate() {
                let p = format!("steps[{i}]");
                non_negative(
                    diag,
                    &join(path, &format!("{p}.rate")),
                    "a step's rate",
                    s.rate,
                );
                if let Some(prev) = last.filter(|&prev| s.at.0 <= prev) {
                    diag.at(
                        &join(path, &format!("{p}.at")),
                        format!(
                            "step times must increase: {} is not after {}",
                            fmt_nanos(s.at.0),
                            fmt_nanos(prev)
                        ),
                    );
                }
                last = Some(s.at.0);
            }
            RateProfile::Steps(steps.iter().map(|s| (s.at.0, s.rate)).collect())
        }
        RateConfig::Ramp(r) => {
            non_negative(diag, &join(path, "ramp.from"), "ramp from", r.from);
            non_negative(diag, &join(path, "ramp.to"), "ramp to", r.to);
            if r.over.0 <= 0 {
                diag.at(&join(path, "ramp.over"), "ramp needs over > 0");
            }
            RateProfile::Ramp {
                from: r.from,
                to: r.to,
                over: r.over.0,
            }
        }
        RateConfig::Sine(s) => {
            if !(s.mean > 0.0 && s.mean.is_finite()) {
                diag.at(
                    &join(path, "sine.mean"),
                    format!("sine needs a positive mean, got {}", s.mean),
                );
            }
            if !(s.amplitude >= 0.0 && s.amplitude <= s.mean) {
                diag.at(
                    &join(path, "sine.amplitude"),
                    "sine needs 0 <= amplitude <= mean so the rate never goes negative",
                );
            }
            if s.period.0 <= 0 {
                diag.at(&join(path, "sine.period"), "sine needs period > 0");
            }
            RateProfile::Sine {
                mean: s.mean,
                amplitude: s.amplitude,
                period: s.period.0,
            }
        }
        RateConfig::Bursts(b) => {
            non_negative(diag, &join(path, "bursts.high"), "bursts high", b.high);
            non_negative(diag, &join(path, "bursts.low"), "bursts low", b.low);
            for (sub, d) in [("bursts.on", b.on.0), ("bursts.off", b.off.0)] {
                if d <= 0 {
                    diag.at(
                        &join(path, sub),
                        format!("{} must be positive", sub.replace('.', " ")),
                    );
                }
            }
            RateProfile::Bursts {
                high: b.high,
                low: b.low,
                on: b.on.0,
                off: b.off.0,
            }
        }
    };
    (diag.count() == before).then_some(profile)
}

fn non_negative(diag: &mut Diagnostics, path: &str, what: &str, v: f64) {
    if !(v >= 0.0 && v.is_finite()) {
        diag.at(path, format!("{what} must be 0 or more, got {v}"));
    } else {
        at_most_max_rate(diag, path, what, v);
    }
}

/// The highest rate a stream may declare, tuples per second: far above what one machine
/// generates (tens of millions), low enough that a source's slice of due tuples stays small
/// and stops stay prompt. Use `unlimited` for as fast as the engine takes it.
pub const MAX_RATE: f64 = 1e9;

fn at_most_max_rate(diag: &mut Diagnostics, path: &str, what: &str, v: f64) {
    if v > MAX_RATE {
        diag.at(
            path,
            format!("{what} {v} is above the limit of 1e9 tuples/s; use `unlimited` for as fast as the engine takes it"),
        );
    }
}
