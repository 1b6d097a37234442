//! Load-shedding policy files (`policies/*.yaml`): YAML -> validated `Policy`. Every number
//! is range-checked here, with the file, line and column of the bad setting, so the shedder
//! only ever sees sane parameters.
//!
//! ```yaml
//! kind: random            # none | tail-drop | random | semantic | window-aware
//! headroom: 0.9           # share of capacity queries may use
//! melt: 2                 # share of queued work to drain per second
//! step: 1                 # percent granularity of the loss/gain walk
//! hysteresis: {low: 0.8, hold: 5}
//! feedback: {setpoint: 0.8, kp: 0.3, ki: 0.05, min: 0.05, max: 1.0}
//! queue_capacity: 10000   # tail-drop: input queue bound in tuples
//! adaptive_headroom: true # use latency slack to go past `headroom` while shedding
//! ```

use serde::Deserialize;

use super::error::{SpecError, SpecErrors};
use crate::shed::{PolicyParams, ShedKind};

/// `kind:` how tuples are chosen for dropping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KindConfig {
    /// Never shed: queues and latency grow under overload (the baseline).
    None,
    /// Drop arrivals when a query's bounded input queue is full (what a naive system does).
    TailDrop,
    /// Keep each tuple with a probability, at stream and query drop points.
    Random,
    /// Drop the lowest-utility value ranges of queries with a value QoS first.
    Semantic,
    /// Keep or drop whole (key, window) groups of tumbling-window aggregates.
    WindowAware,
}

/// A policy file.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// Required.
    pub kind: KindConfig,
    /// `H` in `(0, 1]` (default 0.9): the share of capacity query work may use.
    #[serde(default)]
    pub headroom: Option<f64>,
    /// Share of queued work to drain per second, `>= 0` (default 2).
    #[serde(default)]
    pub melt: Option<f64>,
    /// Percent step of the loss/gain walk, in `[0.1, 100]` (default 1).
    #[serde(default)]
    pub step: Option<f64>,
    #[serde(default)]
    pub hysteresis: Option<HysteresisConfig>,
    #[serde(default)]
    pub feedback: Option<FeedbackConfig>,
    /// Tail-drop: each query's input queue bound in tuples (default 10000).
    #[serde(default)]
    pub queue_capacity: Option<usize>,
    /// While shedding, hand out more than `headroom` of capacity as long as every latency
    /// has ample slack, backing off when slack shrinks (default true).
    #[serde(default)]
    pub adaptive_headroom: Option<bool>,
}

/// Shedding stops only when load is below `low x H x C` for `hold` consecutive ticks.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HysteresisConfig {
    /// In `(0, 1]`, default 0.8.
    #[serde(default)]
    pub low: Option<f64>,
    /// Ticks, default 5.
    #[serde(default)]
    pub hold: Option<u32>,
}

/// The PI loop on latency error that corrects the load model (Tu et al.).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedbackConfig {
    /// Aim latency at `setpoint x target`, in `(0, 1]` (default 0.8).
    #[serde(default)]
    pub setpoint: Option<f64>,
    /// Proportional gain, `>= 0` (default 0.3).
    #[serde(default)]
    pub kp: Option<f64>,
    /// Integral gain, `>= 0` (default 0.05).
    #[serde(default)]
    pub ki: Option<f64>,
    /// Smallest capacity correction, in `(0, max]` (default 0.05).
    #[serde(default)]
    pub min: Option<f64>,
    /// Largest capacity correction, positive (default 1).
    #[serde(default)]
    pub max: Option<f64>,
}

/// A validated policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// The file it came from, or a built-in name.
    pub name: String,
    pub params: PolicyParams,
    /// Input queue bound for tail-drop.
    pub queue_capacity: Option<usize>,
}

impl Policy {
    /// The `none` policy: never shed.
    pub fn none() -> Policy {
        Policy {
            name: "none".into(),
            params: PolicyParams {
                kind: ShedKind::None,
                ..PolicyParams::default()
            },
            queue_capacity: None,
        }
    }
}

/// Parses a policy file's text; `file` names it in messages.
pub fn parse_policy(text: &str, file: &str) -> Result<Policy, SpecErrors> {
    let err = |line: usize, column: usize, path: &str, message: String| SpecError {
        file: file.to_string(),
        line,
        column,
        path: path.to_string(),
        message,
    };
    if let Some(e) = super::depth::too_deep(text) {
        return Err(SpecErrors {
            errors: vec![err(e.line, e.column, "", e.message())],
        });
    }
    let mut errors = Vec::new();
    let whole = serde_yaml::from_str::<PolicyConfig>(text);
    let cfg: PolicyConfig = match whole {
        Ok(cfg) => cfg,
        // Serde stops at the first bad key (a misspelt setting, an unknown kind): read the
        // mapping again key by key, so that every key's error is reported, and the keys
        // that read are still checked for meaning below.
        Err(e) => {
            // A lone key's error is serde's own.
            let value = match serde_yaml::from_str::<serde_yaml::Value>(text) {
                Ok(serde_yaml::Value::Mapping(m)) if m.len() > 1 => serde_yaml::Value::Mapping(m),
                _ => return Err(yaml_error(e, &err)),
            };
            let located = |d: super::de::DeError| {
                let path = d.path.unwrap_or_default();
                let (line, column) = super::locate::locate(text, &path);
                let message = match d.message.contains("missing field `kind`") {
                    true => KIND_REQUIRED.to_string(),
                    false => d.message,
                };
                err(line, column, &path, message)
            };
            match super::de_entry::read_entry::<PolicyConfig>(&value, "") {
                Ok(cfg) => cfg,
                Err(entry) => {
                    errors.extend(entry.errors.into_iter().map(located));
                    match entry.rest {
                        Some(cfg) => cfg,
                        None => return Err(SpecErrors { errors }),
                    }
                }
            }
        }
    };
    read_params(text, file, cfg, errors, &err)
}

/// What a policy file without `kind` is told.
const KIND_REQUIRED: &str = "`kind` is required: none, tail-drop, random, semantic or window-aware";

/// A policy file serde could not read, located, in words a user knows.
fn yaml_error(
    e: serde_yaml::Error,
    err: &impl Fn(usize, usize, &str, String) -> SpecError,
) -> SpecErrors {
    {
        let (line, column) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
        let raw = e.to_string();
        // serde_yaml appends the position we already print, and names Rust types.
        let raw = raw.split(" at line ").next().unwrap_or(&raw).to_string();
        let message = if raw.contains("missing field `kind`") || raw.contains("EOF") {
            KIND_REQUIRED.to_string()
        } else if raw.contains("expected struct PolicyConfig") {
            "a policy file is a mapping such as `kind: random`".to_string()
        } else {
            raw
        };
        SpecErrors {
            errors: vec![err(line, column, "", message)],
        }
    }
}

/// The parameters of a read policy file, every value checked; `errors` holds what reading
/// it already found.
fn read_params(
    text: &str,
    file: &str,
    cfg: PolicyConfig,
    mut errors: Vec<SpecError>,
    err: &impl Fn(usize, usize, &str, String) -> SpecError,
) -> Result<Policy, SpecErrors> {
    let d = PolicyParams::default();
    let mut check =
        |path: &str, v: Option<f64>, ok: fn(f64) -> bool, range: &str, default: f64| match v {
            Some(x) if !ok(x) => {
                let (line, column) = super::locate::locate(text, path);
                errors.push(err(
                    line,
                    column,
                    path,
                    format!("{path} must be {range}, got {x}"),
                ));
                default
            }
            Some(x) => x,
            None => default,
        };
    let h = cfg.hysteresis.unwrap_or(HysteresisConfig {
        low: None,
        hold: None,
    });
    let f = cfg.feedback.unwrap_or(FeedbackConfig {
        setpoint: None,
        kp: None,
        ki: None,
        min: None,
        max: None,
    });
    let unit = |x: f64| x > 0.0 && x <= 1.0;
    let nonneg = |x: f64| x >= 0.0 && x.is_finite();
    let params = PolicyParams {
        kind: match cfg.kind {
            KindConfig::None => ShedKind::None,
            KindConfig::TailDrop => ShedKind::TailDrop,
            KindConfig::Random => ShedKind::Random,
            KindConfig::Semantic => ShedKind::Semantic,
            KindConfig::WindowAware => ShedKind::WindowAware,
        },
        headroom: check("headroom", cfg.headroom, unit, "in (0, 1]", d.headroom),
        melt: check("melt", cfg.melt, nonneg, "0 or more", d.melt),
        step: check(
            "step",
            cfg.step,
            |x| (0.1..=100.0).contains(&x),
            "in [0.1, 100]",
            d.step,
        ),
        low: check("hysteresis.low", h.low, unit, "in (0, 1]", d.low),
        hold: h.hold.unwrap_or(d.hold),
        setpoint: check(
            "feedback.setpoint",
            f.setpoint,
            unit,
            "in (0, 1]",
            d.setpoint,
        ),
        kp: check("feedback.kp", f.kp, nonneg, "0 or more", d.kp),
        ki: check("feedback.ki", f.ki, nonneg, "0 or more", d.ki),
        correction_min: check(
            "feedback.min",
            f.min,
            |x| x > 0.0,
            "positive",
            d.correction_min,
        ),
        correction_max: check(
            "feedback.max",
            f.max,
            |x| x > 0.0,
            "positive",
            d.correction_max,
        ),
        adaptive_headroom: cfg.adaptive_headroom.unwrap_or(d.adaptive_headroom),
    };
    if params.correction_min > params.correction_max {
        let (line, column) = super::locate::locate(text, "feedback.min");
        errors.push(err(
            line,
            column,
            "feedback.min",
            "feedback.min must not exceed feedback.max".into(),
        ));
    }
    if cfg.queue_capacity == Some(0) {
        let (line, column) = super::locate::locate(text, "queue_capacity");
        errors.push(err(
            line,
            column,
            "queue_capacity",
            "queue_capacity must be at least 1".into(),
        ));
    }
    if !errors.is_empty() {
        return Err(SpecErrors { errors });
    }
    Ok(Policy {
        name: file.to_string(),
        queue_capacity: match params.kind {
            ShedKind::TailDrop => Some(cfg.queue_capacity.unwrap_or(10_000)),
            _ => cfg.queue_capacity,
        },
        params,
    })
}

/// Reads and parses a policy file.
pub fn load_policy(path: impl AsRef<std::path::Path>) -> Result<Policy, SpecErrors> {
    let (text, name) = super::read_text(path.as_ref(), "policy")?;
    parse_policy(&text, &name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_policy_parses() {
        let p = parse_policy(
            "kind: semantic\nheadroom: 0.8\nhysteresis: {low: 0.7, hold: 3}\nfeedback: {kp: 0.2}\n",
            "p.yaml",
        )
        .unwrap();
        assert_eq!(p.params.kind, ShedKind::Semantic);
        assert_eq!(p.params.headroom, 0.8);
        assert_eq!(p.params.low, 0.7);
        assert_eq!(p.params.hold, 3);
        assert_eq!(p.params.kp, 0.2);
        assert_eq!(p.params.ki, PolicyParams::default().ki);
        assert_eq!(p.queue_capacity, None);
    }

    #[test]
    fn tail_drop_gets_a_queue_bound() {
        let p = parse_policy("kind: tail-drop\n", "t.yaml").unwrap();
        assert_eq!(p.queue_capacity, Some(10_000));
    }

    #[test]
    fn errors_are_located_and_all_reported() {
        let e = parse_policy("kind: random\nheadroom: 1.5\nmelt: -1\n", "p.yaml").unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("p.yaml:2:1: headroom: headroom must be in (0, 1], got 1.5"),
            "{text}"
        );
        assert!(text.contains("p.yaml:3:1: melt"), "{text}");
        let e = parse_policy("kind: fastest\n", "p.yaml").unwrap_err();
        assert!(e.to_string().contains("p.yaml:1:7"), "{e}");
        let e = parse_policy("kind: random\nheadrom: 0.5\n", "p.yaml").unwrap_err();
        assert!(e.to_string().contains("unknown field `headrom`"), "{e}");
    }

    /// A misspelt key does not hide the other keys' errors: each is reported, located.
    #[test]
    fn an_unknown_key_does_not_hide_the_others() {
        let text = "kind: random\nheadrom: 0.5\nmelt: -1\nfeedback: {kp: -2}\n";
        let e = parse_policy(text, "p.yaml").unwrap_err();
        let all = e.to_string();
        assert_eq!(e.errors.len(), 3, "{all}");
        assert!(
            all.contains("p.yaml:2:1: headrom: unknown field `headrom`"),
            "{all}"
        );
        assert!(
            all.contains("p.yaml:3:1: melt: melt must be 0 or more, got -1"),
            "{all}"
        );
        assert!(
            all.contains("feedback.kp: feedback.kp must be 0 or more, got -2"),
            "{all}"
        );
        // A key that fails to read is reported next to the unknown one.
        let e = parse_policy("kind: fastest\nheadrom: 0.5\n", "p.yaml").unwrap_err();
        let all = e.to_string();
        assert_eq!(e.errors.len(), 2, "{all}");
        assert!(
            all.contains("p.yaml:1:") && all.contains("`fastest`"),
            "{all}"
        );
        assert!(all.contains("p.yaml:2:1: headrom: unknown field"), "{all}");
    }
}
