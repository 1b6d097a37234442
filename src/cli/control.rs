//! `spillway run`'s side of the Manager: the workload's scripted `changes:` as commands,
//! and the control API (`--control-addr`) started on the shell runtime, feeding the live
//! driver's inbox.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::Failure;
use super::run::resolve_policy;
use crate::runtime::api::{self, ApiConfig};
use crate::runtime::inbox::Inbox;
use crate::runtime::live::LiveChanges;
use crate::runtime::manage::{Scripted, script};
use crate::runtime::outputs::{AddedSink, Outputs};
use crate::runtime::sink::JsonLines;
use crate::runtime::sinks::TcpSink;
use crate::spec::{ChangeAction, SinkSpec, Workload};

/// The environment variable a bearer token may come from.
pub const TOKEN_ENV: &str = "SPILLWAY_CONTROL_TOKEN";

/// The commands of `w`'s `changes:`; policy files resolve as the workload's `policy` does.
pub fn scripted(workload_path: &Path, w: &Workload) -> Result<Vec<Scripted>, Failure> {
    script(w, |p| {
        let one = Workload {
            policy: Some(p.to_string()),
            ..w.clone()
        };
        resolve_policy(workload_path, &one, None)
    })
}

/// The bearer token: from `file` (trimmed), else from `SPILLWAY_CONTROL_TOKEN`.
pub fn token(file: Option<&Path>) -> Result<Option<String>, Failure> {
    let token = match file {
        Some(f) => Some(
            std::fs::read_to_string(f)
                .map_err(|e| {
                    Failure::BadInput(format!("--control-token-file {}: {e}", f.display()))
                })?
                .trim()
                .to_string(),
        ),
        None => std::env::var(TOKEN_ENV).ok().map(|t| t.trim().to_string()),
    };
    match token {
        Some(t) if t.is_empty() => Err(Failure::BadInput("the control token is empty".into())),
        t => Ok(t),
    }
}

/// Starts the control API on `addr` (if given) and returns the live driver's changes.
pub fn live_changes(
    runtime: &tokio::runtime::Runtime,
    addr: Option<SocketAddr>,
    token_file: Option<&Path>,
    out_dir: Option<PathBuf>,
    script: Vec<Scripted>,
) -> Result<LiveChanges, Failure> {
    let Some(addr) = addr else {
        return Ok(LiveChanges {
            script,
            inbox: None,
        });
    };
    let (tx, rx) = crossbeam_channel::bounded(64);
    let config = ApiConfig::new(addr, token(token_file)?);
    let bound = api::start(runtime, config, tx).map_err(|e| match e {
        api::ApiError::NeedsToken(_) => Failure::BadInput(e.to_string()),
        other => Failure::Other(other.into()),
    })?;
    eprintln!("spillway: control API on http://{bound} (queries: GET/POST /queries)");
    Ok(LiveChanges {
        script,
        inbox: Some(Inbox {
            requests: rx,
            open_sink: Box::new(move |q| {
                let path = match (&out_dir, &q.sink) {
                    (Some(dir), _) => dir.join(format!("{}.jsonl", q.name)),
                    (None, SinkSpec::Jsonl(p)) => PathBuf::from(p),
                    (None, SinkSpec::Stdout) => return Ok(AddedSink::Stdout),
                    (None, SinkSpec::None) => return Ok(AddedSink::None),
                    (None, SinkSpec::Tcp(t)) => {
                        return Ok(AddedSink::Sink(Box::new(TcpSink::start(t)?)));
                    }
                };
                Ok(AddedSink::Sink(Box::new(JsonLines::create(&path)?)))
            }),
        }),
    })
}

/// Holds the sinks of `w`'s scripted adds by name until each is applied: in a live run the
/// control API may add queries first, so a scripted add's index is known only then.
pub fn hold_scripted_sinks(outputs: &mut Outputs<'_>, w: &Workload) {
    let names: Vec<&str> = w
        .changes
        .iter()
        .filter_map(|c| match &c.action {
            ChangeAction::Add(q) => Some(q.name.as_str()),
            _ => None,
        })
        .collect();
    outputs.hold_scripted(w.queries.len(), &names);
}
