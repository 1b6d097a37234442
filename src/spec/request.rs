//! Control API requests -> validated specs, through the same code a workload file goes
//! through. A request body (JSON) is rendered as the `queries:` entry of a YAML document,
//! and that document is read and validated exactly as a workload's queries are; errors are
//! located in the rendered document, which comes back with them.

use serde_yaml::{Mapping, Value};

use super::build::same_file;
use super::build_query::{build_qos_patch, build_query};
use super::build_stream::check_identifier;
use super::config::{QosConfig, QueryConfig};
use super::error::{Diagnostics, SpecError, SpecErrors, join};
use super::read::{entries, entry};
use super::workload::{QosPatch, QuerySpec, SinkSpec};
use crate::sql::Catalog;

/// Where a request's errors point: `file` is `request`, lines and columns are in
/// `document`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{errors}")]
pub struct RequestError {
    pub errors: SpecErrors,
    /// The YAML document the request was validated as.
    pub document: String,
}

const FILE: &str = "request";

/// Validates `POST /queries` body `{name, sql, qos, cost, sink}` against `catalog`, as a
/// workload's `queries.<name>` entry; `running` are the queries it must not clash with
/// (name, output file).
pub fn parse_query_request(
    body: &str,
    catalog: &Catalog,
    running: &[&QuerySpec],
) -> Result<QuerySpec, RequestError> {
    let mut fields = object(body)?;
    let name = match fields.remove("name") {
        Some(Value::String(s)) => s,
        _ => return Err(plain("the request needs `name`, a string")),
    };
    let document = render(&name, Value::Mapping(fields));
    let mut diag = Diagnostics::new(&document, FILE);
    let root: Value = serde_yaml::from_str(&document).map_err(|e| plain(&e.to_string()))?;
    let read = entries(&mut diag, &root["queries"], "queries", |d, v, p| {
        entry::<QueryConfig>(d, v, p)
    });
    let path = join("queries", &name);
    check_identifier(&mut diag, &path, "query name", &name);
    if let Some(q) = running.iter().find(|q| q.name.eq_ignore_ascii_case(&name)) {
        diag.at(
            &path,
            format!("a query named `{}` is already running", q.name),
        );
    }
    let spec = read.0.first().and_then(|(_, config)| {
        build_query(
            &mut diag,
            &name,
            config,
            Some(catalog),
            &crate::sql::plan_query,
        )
    });
    if let Some(SinkSpec::Jsonl(file)) = spec.as_ref().map(|s| &s.sink)
        && let Some(other) = running
            .iter()
            .find(|o| matches!(&o.sink, SinkSpec::Jsonl(f) if same_file(f, file)))
    {
        diag.at(
            &join(&path, "sink"),
            format!(
                "query `{name}` writes to `{file}`, as query `{}` does: give each query its own file",
                other.name
            ),
        );
    }
    match spec {
        Some(s) if diag.is_empty() => Ok(s),
        _ => Err(RequestError {
            errors: diag.finish(),
            document,
        }),
    }
}

/// Validates `PATCH /queries/{name}` body, QoS settings as in `queries.<name>.qos`, for
/// `query` (its input schema from `catalog`).
pub fn parse_qos_request(
    body: &str,
    query: &QuerySpec,
    catalog: &Catalog,
) -> Result<QosPatch, RequestError> {
    let fields = object(body)?;
    let mut entry_map = Mapping::new();
    entry_map.insert("qos".into(), Value::Mapping(fields));
    let document = render(&query.name, Value::Mapping(entry_map));
    let mut diag = Diagnostics::new(&document, FILE);
    let root: Value = serde_yaml::from_str(&document).map_err(|e| plain(&e.to_string()))?;
    let path = join(&join("queries", &query.name), "qos");
    let config = entry::<QosConfig>(
        &mut diag,
        &root["queries"][query.name.as_str()]["qos"],
        &path,
    );
    let input = catalog.get(&query.plan.stream);
    let patch = match (config, input) {
        (Some(c), Some(input)) => Some(build_qos_patch(&mut diag, &path, &c, input)),
        _ => None,
    };
    match patch {
        Some(p) if diag.is_empty() => Ok(p),
        _ => Err(RequestError {
            errors: diag.finish(),
            document,
        }),
    }
}

/// The JSON object of `body`, as YAML values.
fn object(body: &str) -> Result<Mapping, RequestError> {
    let json: serde_json::Value = serde_json::from_str(body).map_err(|e| RequestError {
        errors: SpecErrors {
            errors: vec![SpecError {
                file: FILE.into(),
                line: e.line().max(1),
                column: e.column().max(1),
                path: String::new(),
                message: format!("the body is not JSON: {e}"),
            }],
        },
        document: body.to_string(),
    })?;
    match serde_yaml::to_value(&json) {
        Ok(Value::Mapping(m)) => Ok(m),
        _ => Err(plain("the body must be a JSON object")),
    }
}

/// `queries: {name: entry}` as block YAML (multi-line SQL becomes a block scalar, so SQL
/// errors keep their line and column inside it).
fn render(name: &str, entry: Value) -> String {
    let mut queries = Mapping::new();
    queries.insert(Value::String(name.to_string()), entry);
    let mut root = Mapping::new();
    root.insert("queries".into(), Value::Mapping(queries));
    serde_yaml::to_string(&Value::Mapping(root)).unwrap_or_default()
}

fn plain(message: &str) -> RequestError {
    RequestError {
        errors: SpecErrors {
            errors: vec![SpecError {
                file: FILE.into(),
                line: 1,
                column: 1,
                path: String::new(),
                message: message.to_string(),
            }],
        },
        document: String::new(),
    }
}

/// How a `POST /queries` query runs: `"mode": "continuous"` (the default) or
/// `"mode": "ad-hoc"` over the stream's retained history, then live with
/// `"continue": true`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryMode {
    Continuous,
    AdHoc { continue_live: bool },
}

/// Takes `mode` and `continue` out of a `POST /queries` body; the rest is the query, for
/// `parse_query_request`.
pub fn split_query_mode(body: &str) -> Result<(QueryMode, String), RequestError> {
    let mut json: serde_json::Map<String, serde_json::Value> = match serde_json::from_str(body) {
        Ok(serde_json::Value::Object(m)) => m,
        // Not an object: `parse_query_request` says why, located.
        _ => return Ok((QueryMode::Continuous, body.to_string())),
    };
    if !json.contains_key("mode") && !json.contains_key("continue") {
        return Ok((QueryMode::Continuous, body.to_string()));
    }
    let mode = json.remove("mode");
    let cont = json.remove("continue");
    let cont = match cont {
        None => None,
        Some(serde_json::Value::Bool(b)) => Some(b),
        Some(other) => {
            return Err(plain(&format!(
                "`continue` must be true or false, not {other}"
            )));
        }
    };
    let mode = match mode.as_ref().map(|m| m.as_str()) {
        None | Some(Some("continuous")) => {
            if cont.is_some() {
                return Err(plain(
                    "`continue` applies to ad-hoc queries: add `\"mode\": \"ad-hoc\"`",
                ));
            }
            QueryMode::Continuous
        }
        Some(Some("ad-hoc")) => QueryMode::AdHoc {
            continue_live: cont.unwrap_or(false),
        },
        Some(_) => {
            return Err(plain(&format!(
                "`mode` must be \"continuous\" or \"ad-hoc\", not {}",
                mode.unwrap_or_default()
            )));
        }
    };
    if mode
        == (QueryMode::AdHoc {
            continue_live: false,
        })
    {
        // Its rows come back in the response.
        if json.contains_key("sink") {
            return Err(plain(
                "an ad-hoc query that ends with its history returns its rows in the response: give a `sink` only with \"continue\": true",
            ));
        }
        json.insert("sink".into(), "none".into());
    }
    Ok((mode, serde_json::Value::Object(json).to_string()))
}
