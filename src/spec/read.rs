//! Reading the YAML text into config structs: syntax first, then every top-level section,
//! stream and query on its own, and within the engine, a stream or a query every key on its
//! own (`de_entry`), so one broken setting never hides the errors of another. What could
//! not be read is reported and left out; `build` sees only well-formed entries.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde::de::Error as _;
use serde_yaml::Value;

use super::config::{EngineConfig, QueryConfig, StreamConfig, WorkloadConfig};
use super::de::{DeError, from_value, key_text, kind};
use super::de_entry::{EntryErrors, read_entry};
use super::de_named::NamedMap;
use super::duplicates::duplicates;
use super::duration::DurationConfig;
use super::error::{Diagnostics, join};

/// The top-level keys of a workload file, in documentation order.
const FIELDS: &[&str] = &[
    "name",
    "seed",
    "duration",
    "engine",
    "streams",
    "queries",
    "policy",
    "experiment",
    "changes",
];

/// What could be read of a workload file.
pub(crate) struct Read {
    /// Entries that failed to read are missing, or without the keys that failed if the
    /// rest reads; required settings that are missing are empty. Only meaningful when no
    /// error was reported.
    pub config: WorkloadConfig,
    /// Schemas of streams whose entry failed to read for another reason, so queries over
    /// them can still be checked.
    pub partial_streams: Vec<PartialStream>,
    /// Some stream's schema could not be read at all: the catalog is incomplete.
    pub schemas_missing: bool,
}

/// The schema and event time of a stream whose entry failed to read as a whole.
pub(crate) struct PartialStream {
    pub name: String,
    pub schema: NamedMap<String>,
    pub event_time: Option<String>,
}

/// Parses `text`; `None` if it is not YAML or not a mapping (the error is reported).
pub(crate) fn read(diag: &mut Diagnostics) -> Option<Read> {
    if let Some(e) = super::depth::too_deep(diag.text()) {
        diag.at_position(e.line, e.column, "", e.message());
        return None;
    }
    let root: Value = match serde_yaml::from_str(diag.text()) {
        Ok(v) => v,
        Err(e) => {
            let (line, col) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
            diag.at_position(line, col, "", syntax_message(&e));
            // The parser stops at the first duplicate key (just reported): find the others.
            for d in duplicates(diag.text()).iter().skip(1) {
                let (line, col) = d.position(diag.text());
                diag.at_position(line, col, &d.parent, d.message());
            }
            return None;
        }
    };
    let map = match &root {
        Value::Mapping(m) => m,
        Value::Null => {
            diag.at(
                "",
                "the workload file is empty; it needs `name`, `streams` and `queries`",
            );
            return None;
        }
        other => {
            diag.at(
                "",
                format!(
                    "a workload file is a mapping with `name`, `streams` and `queries`, not {}",
                    kind(other)
                ),
            );
            return None;
        }
    };
    let mut out = Read {
        config: WorkloadConfig {
            name: String::new(),
            seed: 0,
            duration: None,
            engine: EngineConfig::default(),
            streams: NamedMap::default(),
            queries: NamedMap::default(),
            policy: None,
            experiment: None,
            changes: Vec::new(),
        },
        partial_streams: Vec::new(),
        schemas_missing: false,
    };
    for (key, value) in map {
        let name = key_text(key);
        let c = &mut out.config;
        match name.as_str() {
            "name" => {
                c.name = section(diag, value, "name").unwrap_or_default();
                if c.name.trim().is_empty() && matches!(value, Value::String(_)) {
                    diag.at("name", "name must not be empty");
                }
            }
            "seed" => c.seed = section(diag, value, "seed").unwrap_or_default(),
            "duration" => {
                c.duration = section::<Option<DurationConfig>>(diag, value, "duration").flatten()
            }
            "engine" => c.engine = entry(diag, value, "engine").unwrap_or_default(),
            "policy" => c.policy = section(diag, value, "policy").flatten(),
            "experiment" => c.experiment = section(diag, value, "experiment").flatten(),
            "changes" => c.changes = section(diag, value, "changes").unwrap_or_default(),
            "streams" => read_streams(diag, value, &mut out),
            "queries" => {
                out.config.queries = entries(diag, value, "queries", |diag, v, path| {
                    entry::<QueryConfig>(diag, v, path)
                })
            }
            _ => diag.at(&name, DeError::unknown_field(&name, FIELDS).message),
        }
    }
    for required in ["name", "streams", "queries"] {
        if !map.contains_key(required) {
            diag.at("", format!("missing field `{required}`"));
        }
    }
    Some(out)
}

/// Drops the ` at line N column M` that serde_yaml appends, since the position is
/// reported separately.
fn syntax_message(e: &serde_yaml::Error) -> String {
    let m = e.to_string();
    match m.find(" at line ") {
        Some(i) => {
            let tail = &m[i + " at line ".len()..];
            // Keep any context after the position ("..., while parsing a block mapping").
            let rest = tail.find(", ").map_or("", |j| &tail[j..]);
            format!("{}{rest}", &m[..i])
        }
        None => m,
    }
}

/// Deserializes one section, reporting its error.
fn section<'a, T: Deserialize<'a>>(
    diag: &mut Diagnostics,
    value: &'a Value,
    path: &str,
) -> Option<T> {
    match from_value(value, path) {
        Ok(v) => Some(v),
        Err(e) => {
            report(diag, e, path);
            None
        }
    }
}

/// Deserializes one entry, reporting the error of each of its keys; what could be read of
/// it if it failed (see `read_entry`).
pub(crate) fn entry<T: DeserializeOwned>(
    diag: &mut Diagnostics,
    value: &Value,
    path: &str,
) -> Option<T> {
    match read_entry(value, path) {
        Ok(t) => Some(t),
        Err(EntryErrors { errors, rest }) => {
            for e in errors {
                report(diag, e, path);
            }
            rest
        }
    }
}

pub(crate) fn report(diag: &mut Diagnostics, e: DeError, fallback: &str) {
    let path = e.path.unwrap_or_else(|| fallback.to_string());
    diag.at(&path, e.message);
}

/// Reads a mapping of named entries one by one; entries that fail are left out.
pub(crate) fn entries<T>(
    diag: &mut Diagnostics,
    value: &Value,
    path: &str,
    mut read_one: impl FnMut(&mut Diagnostics, &Value, &str) -> Option<T>,
) -> NamedMap<T> {
    let mut out = Vec::new();
    for (name, v) in named(diag, value, path) {
        if let Some(t) = read_one(diag, v, &join(path, &name)) {
            out.push((name, t));
        }
    }
    NamedMap(out)
}

/// The entries of a mapping section with string keys; reports anything else.
fn named<'a>(diag: &mut Diagnostics, value: &'a Value, path: &str) -> Vec<(String, &'a Value)> {
    let empty = match value {
        Value::Null => true,
        Value::Mapping(m) => m.is_empty(),
        _ => false,
    };
    if empty {
        diag.at(path, format!("`{path}` needs at least one entry"));
        return Vec::new();
    }
    let Value::Mapping(m) = value else {
        diag.at(
            path,
            format!(
                "`{path}` must be a mapping from names to settings, not {}",
                kind(value)
            ),
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, v) in m {
        match k {
            Value::String(s) if !s.is_empty() => out.push((s.clone(), v)),
            _ => diag.at(path, format!("`{}` is not a valid name", key_text(k))),
        }
    }
    out
}

fn read_streams(diag: &mut Diagnostics, value: &Value, out: &mut Read) {
    let mut streams = Vec::new();
    for (name, v) in named(diag, value, "streams") {
        let path = join("streams", &name);
        // A stream whose required settings read is kept without the keys that failed.
        match entry::<StreamConfig>(diag, v, &path) {
            Some(s) => streams.push((name, s)),
            None => match partial(name, v, &path) {
                Some(p) => out.partial_streams.push(p),
                None => out.schemas_missing = true,
            },
        }
    }
    out.config.streams = NamedMap(streams);
}

/// The schema and event time of a stream entry that failed to read as a whole, if they
/// read on their own.
fn partial(name: String, stream: &Value, path: &str) -> Option<PartialStream> {
    let Value::Mapping(m) = stream else {
        return None;
    };
    let schema = from_value(m.get("schema")?, &join(path, "schema")).ok()?;
    let event_time = match m.get("event_time") {
        None => None,
        Some(v) => Some(from_value(v, &join(path, "event_time")).ok()?),
    };
    Some(PartialStream {
        name,
        schema,
        event_time,
    })
}
