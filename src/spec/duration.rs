//! Durations as the workload format and the CLI write them (`500ms`, `10s`, `2m`, or a bare
//! number of seconds), parsed to nanoseconds; never negative, overflow is an error.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, Visitor};

use crate::core::schema::Nanos;

const HINT: &str = "use e.g. 500ms, 10s, 2m";

/// Parses a duration: a non-negative number followed by a unit `ns`, `us` (or `µs`),
/// `ms`, `s`, `m` or `h`, such as `250us`, `1.5s` or `2m`; a bare number means seconds.
pub fn parse_duration(s: &str) -> Result<Nanos, String> {
    let t = s.trim();
    let invalid = || format!("invalid duration `{s}`: {HINT}");
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let unit_nanos: f64 = match unit.trim() {
        "" | "s" => 1e9,
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "m" => 60e9,
        "h" => 3600e9,
        _ => return Err(invalid()),
    };
    if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
        return Err(invalid());
    }
    if let (Ok(n), true) = (number.parse::<i64>(), unit_nanos >= 1.0) {
        // Integers stay exact.
        return n.checked_mul(unit_nanos as i64).ok_or_else(|| too_large(s));
    }
    let n: f64 = number.parse().map_err(|_| invalid())?;
    seconds_to_nanos(n * unit_nanos / 1e9).ok_or_else(|| too_large(s))
}

/// A run length: a duration as `parse_duration` reads it, and positive. The CLI's
/// `--duration` and a workload's `duration` both use this rule, so `0` is an error in both.
pub fn parse_run_duration(s: &str) -> Result<Nanos, String> {
    match parse_duration(s)? {
        0 => Err(format!(
            "invalid duration `{s}`: a run needs a positive duration"
        )),
        d => Ok(d),
    }
}

/// Nanoseconds in `secs` seconds, rounded; `None` if negative, not finite or too large.
pub(crate) fn seconds_to_nanos(secs: f64) -> Option<Nanos> {
    let ns = (secs * 1e9).round();
    (ns.is_finite() && ns >= 0.0 && ns < i64::MAX as f64).then_some(ns as Nanos)
}

fn too_large(s: &str) -> String {
    format!("duration `{s}` is too large")
}

/// A duration in a workload file: a string like `500ms`, or a number of seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DurationConfig(pub Nanos);

impl<'de> Deserialize<'de> for DurationConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DurationVisitor)
    }
}

struct DurationVisitor;

impl Visitor<'_> for DurationVisitor {
    type Value = DurationConfig;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a duration ({HINT})")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<DurationConfig, E> {
        parse_duration(v).map(DurationConfig).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<DurationConfig, E> {
        v.checked_mul(1_000_000_000)
            .and_then(|n| Nanos::try_from(n).ok())
            .map(DurationConfig)
            .ok_or_else(|| E::custom(too_large(&v.to_string())))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<DurationConfig, E> {
        if v < 0 {
            return Err(E::custom(format!("duration `{v}` must not be negative")));
        }
        self.visit_u64(v as u64)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<DurationConfig, E> {
        seconds_to_nanos(v)
            .map(DurationConfig)
            .ok_or_else(|| E::custom(format!("invalid duration `{v}`: {HINT}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_bare_seconds() {
        assert_eq!(parse_duration("500ms"), Ok(500_000_000));
        assert_eq!(parse_duration("10s"), Ok(10_000_000_000));
        assert_eq!(parse_duration("2m"), Ok(120_000_000_000));
        assert_eq!(parse_duration("1h"), Ok(3_600_000_000_000));
        assert_eq!(parse_duration("250us"), Ok(250_000));
        assert_eq!(parse_duration("180ns"), Ok(180));
        assert_eq!(parse_duration("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration("0.5ns"), Ok(1));
        assert_eq!(parse_duration("7"), Ok(7_000_000_000));
        assert_eq!(parse_duration(" 3 ms "), Ok(3_000_000));
        assert_eq!(parse_duration("0s"), Ok(0));
    }

    #[test]
    fn rejects_garbage_with_a_hint() {
        for bad in [
            "10 sec", "10 secs!", "-5s", "s", "", "1.2.3s", "5d", "1e3s", ".5s",
        ] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains("invalid duration"), "{bad}: {e}");
        }
        assert_eq!(
            parse_duration("10 sec").unwrap_err(),
            "invalid duration `10 sec`: use e.g. 500ms, 10s, 2m"
        );
        assert!(
            parse_duration("99999999999h")
                .unwrap_err()
                .contains("too large")
        );
        assert!(parse_duration("1e400").is_err());
    }
}
