//! Validating one query: its SQL is planned against the catalog of streams (errors point at
//! the offending text inside the file), and its QoS settings are checked against the plan's
//! input stream. A `QuerySpec` comes out only with a plan and no errors.

use super::config::{QosConfig, QueryConfig, SinkConfig};
use super::error::{Diagnostics, join};
use super::locate::sql_position;
use super::workload::{
    LatencyTarget, QosPatch, QosSpec, QuerySpec, SinkSpec, UtilityCurve, ValueUtility,
};
use crate::core::plan::QueryPlan;
use crate::sql::{Catalog, SqlError};

/// Plans one query's SQL; `crate::sql::plan_query` outside tests.
pub(crate) type Planner<'a> = &'a dyn Fn(&str, &Catalog) -> Result<QueryPlan, SqlError>;

/// Builds query `name`. With `catalog` `None` (some stream's schema is broken) the SQL is
/// not planned, since its errors would only echo the broken stream.
pub(crate) fn build_query(
    diag: &mut Diagnostics,
    name: &str,
    config: &QueryConfig,
    catalog: Option<&Catalog>,
    planner: Planner,
) -> Option<QuerySpec> {
    build_query_at(diag, &join("queries", name), name, config, catalog, planner)
}

/// `build_query` for a query whose settings are at `path` (e.g. `changes[2].add`).
pub(crate) fn build_query_at(
    diag: &mut Diagnostics,
    path: &str,
    name: &str,
    config: &QueryConfig,
    catalog: Option<&Catalog>,
    planner: Planner,
) -> Option<QuerySpec> {
    let path = path.to_string();
    let before = diag.count();
    let sql_path = join(&path, "sql");
    let plan = match catalog {
        _ if config.sql.trim().is_empty() => {
            diag.at(&sql_path, "sql must not be empty");
            None
        }
        None => None,
        Some(catalog) => match planner(&config.sql, catalog) {
            Ok(plan) => Some(plan),
            Err(e) => {
                let (line, col) = sql_position(diag.text(), &sql_path, e.line, e.column);
                diag.at_position(line, col, &sql_path, e.to_string());
                None
            }
        },
    };
    let input = plan
        .as_ref()
        .and_then(|p| catalog.and_then(|c| c.get(&p.stream)));
    let qos = config
        .qos
        .as_ref()
        .map(|q| build_qos(diag, &join(&path, "qos"), q, input));
    match config.cost {
        Some(cost) if cost.0 <= 0 => {
            diag.at(&join(&path, "cost"), "cost must be positive, e.g. 180ns");
        }
        // A bare number reads as seconds: almost surely a forgotten unit.
        Some(cost) if cost.0 >= 1_000_000_000 => diag.at(
            &join(&path, "cost"),
            format!(
                "cost of {} s per tuple is implausible: write it with a unit, e.g. 180ns or 2us",
                cost.0 as f64 / 1e9
            ),
        ),
        _ => {}
    }
    let sink = match &config.sink {
        None | Some(SinkConfig::Stdout) => SinkSpec::Stdout,
        Some(SinkConfig::None) => SinkSpec::None,
        Some(SinkConfig::Jsonl(file)) => {
            if file.trim().is_empty() {
                diag.at(&join(&path, "sink.jsonl"), "jsonl needs a file path");
            }
            SinkSpec::Jsonl(file.clone())
        }
        Some(SinkConfig::Tcp(t)) => {
            match super::sink_io::build_tcp_sink(diag, &join(&path, "sink.tcp"), t) {
                Some(spec) => SinkSpec::Tcp(spec),
                None => SinkSpec::None,
            }
        }
    };
    if diag.count() > before {
        return None;
    }
    Some(QuerySpec {
        name: name.to_string(),
        sql: config.sql.clone(),
        plan: plan?,
        qos,
        cost: config.cost.map(|c| c.0),
        sink,
    })
}

/// The QoS settings `q` changes, checked as `build_qos` checks them; settings `q` leaves
/// out stay as they are.
pub(crate) fn build_qos_patch(
    diag: &mut Diagnostics,
    path: &str,
    q: &QosConfig,
    input: &crate::core::schema::Schema,
) -> QosPatch {
    let spec = build_qos(diag, path, q, Some(input));
    QosPatch {
        latency: q.latency.as_ref().and(spec.latency),
        loss_tolerance: q.loss_tolerance.as_ref().and(spec.loss_tolerance),
        value: q.value.as_ref().and(spec.value),
        weight: q.weight.map(|_| spec.weight),
        lossless: q.lossless,
    }
}

/// Checks the QoS settings; `input` is the query's input schema when it was planned.
fn build_qos(
    diag: &mut Diagnostics,
    path: &str,
    q: &QosConfig,
    input: Option<&crate::core::schema::Schema>,
) -> QosSpec {
    let latency = q.latency.as_ref().and_then(|l| {
        let p = join(path, "latency");
        let [(key, target)] = l.0.as_slice() else {
            diag.at(
                &p,
                "latency takes exactly one percentile, e.g. {p99: 100ms}",
            );
            return None;
        };
        let kp = join(&p, key);
        let percentile = parse_percentile(key);
        if percentile.is_none() {
            diag.at(
                &kp,
                format!("latency key `{key}` must be a percentile like p50, p99, p999 or p99.5"),
            );
        }
        if target.0 <= 0 {
            diag.at(&kp, "latency target must be positive");
        }
        Some(LatencyTarget {
            percentile: percentile?,
            target: target.0,
        })
    });
    let loss_tolerance = q.loss_tolerance.as_ref().map(|points| {
        let p = join(path, "loss_tolerance");
        if points.is_empty() {
            diag.at(
                &p,
                "loss_tolerance needs at least one [percent delivered, utility] point",
            );
        }
        for (i, &(x, u)) in points.iter().enumerate() {
            let pi = format!("{p}[{i}]");
            if !(0.0..=100.0).contains(&x) {
                diag.at(&pi, format!("percent delivered {x} is outside [0, 100]"));
            }
            if !(0.0..=1.0).contains(&u) {
                diag.at(&pi, format!("utility {u} is outside [0, 1]"));
            }
            if i > 0 {
                let (px, pu) = points[i - 1];
                if x >= px {
                    diag.at(
                        &pi,
                        format!(
                            "points must go from high to low percent delivered: {x} follows {px}"
                        ),
                    );
                } else if u > pu && (0.0..=1.0).contains(&pu) && (0.0..=1.0).contains(&u) {
                    diag.at(
                        &pi,
                        format!(
                            "utility must not rise as fewer results are delivered: \
                             {u} at {x}% is above {pu} at {px}%"
                        ),
                    );
                }
            }
        }
        UtilityCurve {
            points: points.iter().rev().copied().collect(),
        }
    });
    let value = q.value.as_ref().and_then(|v| {
        let p = join(path, "value");
        if v.utility.is_empty() {
            diag.at(
                &join(&p, "utility"),
                "utility needs at least one [value, utility] point",
            );
        }
        for (i, &(x, u)) in v.utility.iter().enumerate() {
            let pi = format!("{p}.utility[{i}]");
            if !x.is_finite() {
                diag.at(&pi, format!("value {x} must be finite"));
            }
            if !(0.0..=1.0).contains(&u) {
                diag.at(&pi, format!("utility {u} is outside [0, 1]"));
            }
            if i > 0 && x <= v.utility[i - 1].0 {
                diag.at(
                    &pi,
                    format!("values must increase: {x} follows {}", v.utility[i - 1].0),
                );
            }
        }
        let schema = input?;
        let fp = join(&p, "field");
        let Some(column) = schema.index_of(&v.field) else {
            let names: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
            diag.at(
                &fp,
                format!(
                    "`{}` is not a field of the query's input stream (fields: {})",
                    v.field,
                    names.join(", ")
                ),
            );
            return None;
        };
        let ty = schema.fields[column].ty;
        if !ty.is_numeric() {
            diag.at(
                &fp,
                format!(
                    "value field `{}` is a {ty} field; it must be numeric",
                    v.field
                ),
            );
        }
        Some(ValueUtility {
            field: schema.fields[column].name.clone(),
            column,
            curve: UtilityCurve {
                points: v.utility.clone(),
            },
        })
    });
    let weight = q.weight.unwrap_or(1.0);
    if !(weight > 0.0 && weight.is_finite()) {
        diag.at(
            &join(path, "weight"),
            format!("weight must be positive, got {weight}"),
        );
    }
    QosSpec {
        latency,
        loss_tolerance,
        value,
        weight,
        lossless: q.lossless.unwrap_or(false),
    }
}

/// `p50` -> 50, `p999` -> 99.9, `p9999` -> 99.99, `p99.5` -> 99.5, `p100` -> 100; in
/// `(0, 100]`.
pub(crate) fn parse_percentile(key: &str) -> Option<f64> {
    let digits = key.strip_prefix('p').or_else(|| key.strip_prefix('P'))?;
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    // Without a dot, digits after `99` are decimals: p999 is 99.9, p9999 99.99.
    let text = if digits.contains('.') || digits.len() <= 2 || digits == "100" {
        digits.to_string()
    } else {
        format!("99.{}", digits.strip_prefix("99")?)
    };
    let v: f64 = text.parse().ok()?;
    (v > 0.0 && v <= 100.0).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        assert_eq!(parse_percentile("p50"), Some(50.0));
        assert_eq!(parse_percentile("p99"), Some(99.0));
        assert_eq!(parse_percentile("p999"), Some(99.9));
        assert_eq!(parse_percentile("p9999"), Some(99.99));
        assert_eq!(parse_percentile("p99.5"), Some(99.5));
        assert_eq!(parse_percentile("p100"), Some(100.0));
        assert_eq!(parse_percentile("p5"), Some(5.0));
        for bad in ["99", "p", "p0", "pxx", "p101", "p1.2.3", "max"] {
            assert_eq!(parse_percentile(bad), None, "{bad}");
        }
    }
}
