//! Validating the source kinds beyond the generator: `tcp`, `replay` and `nexmark`, with
//! their flow and idle timeout. A `StreamSpec` comes out only if every setting is valid;
//! every error names its setting path, so it is located in the file.

use std::net::SocketAddr;
use std::path::Path;

use super::build_stream::build_rate;
use super::config::{FlowConfig, SourceConfig};
use super::config_io::{FormatConfig, NexmarkConfig, NexmarkEventConfig, ReplayConfig, TcpConfig};
use super::error::{Diagnostics, join};
use super::workload::{DEFAULT_IDLE_TIMEOUT, Flow, SourceKind, SourceSpec, StreamSpec};
use super::workload_io::{
    DEFAULT_LISTEN, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_LINE, LineFormat, NexmarkEvent,
    NexmarkSpec, ReplayPace, ReplaySpec, TcpSpec,
};
use crate::core::schema::{DataType, Schema};
use crate::generator::nexmark::fields_of;

/// The kinds a `source:` block may name.
const KINDS: &str = "`generator`, `tcp`, `replay` or `nexmark`";

/// Checks that the source block at `path` names exactly one kind.
pub(crate) fn check_one_kind(diag: &mut Diagnostics, path: &str, s: &SourceConfig) -> bool {
    let given: Vec<&str> = [
        ("generator", s.generator.is_some()),
        ("tcp", s.tcp.is_some()),
        ("replay", s.replay.is_some()),
        ("nexmark", s.nexmark.is_some()),
    ]
    .iter()
    .filter(|(_, on)| *on)
    .map(|(k, _)| *k)
    .collect();
    match given.len() {
        1 => true,
        0 => {
            diag.at(
                path,
                format!(
                    "a source needs one kind: {KINDS}, e.g. `generator: {{rate: 1000}}` or \
                     `tcp: {{listen: 127.0.0.1:7070}}`"
                ),
            );
            false
        }
        _ => {
            diag.at(
                path,
                format!(
                    "a source has exactly one kind; this one has `{}`",
                    given.join("` and `")
                ),
            );
            false
        }
    }
}

/// Builds a stream whose source is `tcp`, `replay` or `nexmark`; `path` is its `source`.
pub(crate) fn build_io_stream(
    diag: &mut Diagnostics,
    name: &str,
    path: &str,
    s: &SourceConfig,
    schema: Option<Schema>,
    workload_seed: u64,
) -> Option<StreamSpec> {
    let before = diag.count();
    let idle_timeout = match s.idle_timeout {
        Some(d) if d.0 <= 0 => {
            diag.at(
                &join(path, "idle_timeout"),
                "idle_timeout must be positive, e.g. 1s",
            );
            DEFAULT_IDLE_TIMEOUT
        }
        Some(d) => d.0,
        None => DEFAULT_IDLE_TIMEOUT,
    };
    let (kind, default_flow) = if let Some(t) = &s.tcp {
        (
            build_tcp(diag, &join(path, "tcp"), t).map(SourceKind::Tcp),
            Flow::Push,
        )
    } else if let Some(r) = &s.replay {
        let spec = build_replay(diag, &join(path, "replay"), name, r, schema.as_ref());
        let flow = match spec.as_ref().map(|r| &r.pace) {
            Some(ReplayPace::Unpaced) => Flow::Pull,
            _ => Flow::Push,
        };
        (spec.map(SourceKind::Replay), flow)
    } else if let Some(n) = &s.nexmark {
        let p = join(path, "nexmark");
        let spec = build_nexmark(diag, &p, name, n, schema.as_ref(), workload_seed);
        let flow = match &spec {
            Some(n) if n.rate.is_unlimited() => Flow::Pull,
            _ => Flow::Push,
        };
        (spec.map(SourceKind::Nexmark), flow)
    } else {
        unreachable!("check_one_kind found a kind")
    };
    if diag.count() > before {
        return None;
    }
    let flow = match s.flow {
        Some(FlowConfig::Push) => Flow::Push,
        Some(FlowConfig::Pull) => Flow::Pull,
        None => default_flow,
    };
    Some(StreamSpec {
        name: name.to_string(),
        schema: schema?,
        source: SourceSpec {
            kind: kind?,
            flow,
            idle_timeout,
        },
        retain: None,
    })
}

fn format_of(f: FormatConfig) -> LineFormat {
    match f {
        FormatConfig::Jsonl => LineFormat::Jsonl,
        FormatConfig::Csv => LineFormat::Csv,
    }
}

fn build_tcp(diag: &mut Diagnostics, path: &str, t: &TcpConfig) -> Option<TcpSpec> {
    let before = diag.count();
    let listen_text = t.listen.as_deref().unwrap_or(DEFAULT_LISTEN);
    let listen = match listen_text.trim().parse::<SocketAddr>() {
        Ok(a) => Some(a),
        Err(_) => {
            diag.at(
                &join(path, "listen"),
                format!(
                    "listen `{listen_text}` is not an address; write IP:port, e.g. \
                     127.0.0.1:7070 (loopback) or 0.0.0.0:7070 (every interface)"
                ),
            );
            None
        }
    };
    let max_line = t.max_line.unwrap_or(DEFAULT_MAX_LINE);
    if !(16..=1 << 24).contains(&max_line) {
        diag.at(
            &join(path, "max_line"),
            format!("max_line must be 16 to 16777216 bytes, got {max_line}"),
        );
    }
    let max_connections = t.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS);
    if !(1..=10_000).contains(&max_connections) {
        diag.at(
            &join(path, "max_connections"),
            format!("max_connections must be 1 to 10000, got {max_connections}"),
        );
    }
    if let Some(n) = t.parse_threads
        && !(1..=64).contains(&n)
    {
        diag.at(
            &join(path, "parse_threads"),
            format!("parse_threads must be 1 to 64, got {n}"),
        );
    }
    (diag.count() == before).then(|| TcpSpec {
        listen: listen.expect("checked"),
        format: format_of(t.format.unwrap_or(FormatConfig::Jsonl)),
        max_line,
        max_connections,
        parse_threads: t.parse_threads,
    })
}

fn build_replay(
    diag: &mut Diagnostics,
    path: &str,
    stream: &str,
    r: &ReplayConfig,
    schema: Option<&Schema>,
) -> Option<ReplaySpec> {
    let before = diag.count();
    if r.file.trim().is_empty() {
        diag.at(&join(path, "file"), "file must name a file to replay");
    }
    let format = match r.format {
        Some(f) => format_of(f),
        None if Path::new(&r.file)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv")) =>
        {
            LineFormat::Csv
        }
        None => LineFormat::Jsonl,
    };
    if r.speed.is_some() && r.timestamps.is_none() {
        diag.at(
            &join(path, "speed"),
            "speed scales recorded timestamps; name the field with `timestamps: <field>`",
        );
    }
    let speed = r.speed.unwrap_or(1.0);
    if !(speed > 0.0 && speed.is_finite()) {
        diag.at(
            &join(path, "speed"),
            format!("speed must be positive, got {speed}"),
        );
    }
    let pace = match (&r.timestamps, &r.rate) {
        (Some(_), Some(_)) => {
            diag.at(path, "pace a replay by `timestamps` or by `rate`, not both");
            None
        }
        (Some(field), None) => {
            let p = join(path, "timestamps");
            match schema.map(|s| (s.index_of(field), s)) {
                Some((None, _)) => {
                    diag.at(&p, format!("`{field}` is not a field of stream `{stream}`"));
                    None
                }
                Some((Some(i), s)) if s.fields[i].ty != DataType::Timestamp => {
                    diag.at(
                        &p,
                        format!(
                            "`{field}` is a {} field; it must be a timestamp",
                            s.fields[i].ty
                        ),
                    );
                    None
                }
                Some((Some(column), _)) => Some(ReplayPace::Timestamps { column, speed }),
                None => None,
            }
        }
        (None, Some(rate)) => build_rate(diag, &join(path, "rate"), rate).map(ReplayPace::Rate),
        (None, None) => Some(ReplayPace::Unpaced),
    };
    (diag.count() == before).then(|| ReplaySpec {
        file: r.file.clone(),
        format,
        pace: pace.expect("checked"),
        repeat: r.repeat.unwrap_or(false),
    })
}

fn build_nexmark(
    diag: &mut Diagnostics,
    path: &str,
    stream: &str,
    n: &NexmarkConfig,
    schema: Option<&Schema>,
    workload_seed: u64,
) -> Option<NexmarkSpec> {
    let before = diag.count();
    let event = match n.event {
        NexmarkEventConfig::Person => NexmarkEvent::Person,
        NexmarkEventConfig::Auction => NexmarkEvent::Auction,
        NexmarkEventConfig::Bid => NexmarkEvent::Bid,
    };
    if n.count == Some(0) {
        diag.at(
            &join(path, "count"),
            "count must be at least 1 (leave it out for an endless stream)",
        );
    }
    let rate = build_rate(diag, &join(path, "rate"), &n.rate);
    let table = fields_of(event);
    let mut columns = Vec::new();
    for f in schema.map_or(&[][..], |s| &s.fields[..]) {
        let p = join(&join(&join("streams", stream), "schema"), &f.name);
        match table
            .iter()
            .find(|(name, _, _)| name.eq_ignore_ascii_case(&f.name))
        {
            None => diag.at(
                &p,
                format!(
                    "`{}` is not a field of a Nexmark {}; its fields are {}",
                    f.name,
                    event.label(),
                    table
                        .iter()
                        .map(|(n, _, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            Some((name, _, ty)) if *ty != f.ty => diag.at(
                &p,
                format!("Nexmark field `{name}` is {ty}; declare it as `{name}: {ty}`"),
            ),
            Some((_, field, _)) => columns.push(*field),
        }
    }
    (diag.count() == before && schema.is_some()).then(|| NexmarkSpec {
        event,
        rate: rate.expect("checked"),
        count: n.count,
        seed: n.seed.unwrap_or(workload_seed),
        columns,
    })
}
