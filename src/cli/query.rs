//! `spillway query`: a client of a running instance's control API (`run --control-addr`).
//! Prints the JSON answer on stdout; a refused request (bad query, unknown name) exits 2
//! with the server's located message, an unreachable server exits 1.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::Failure;
use super::control::token;

#[derive(Args, Debug)]
pub struct QueryArgs {
    /// Address of the running instance's control API.
    #[arg(long, default_value = "127.0.0.1:7700", global = true)]
    pub addr: String,
    /// File holding the bearer token (default: SPILLWAY_CONTROL_TOKEN, if set).
    #[arg(long, value_name = "FILE", global = true)]
    pub token_file: Option<PathBuf>,
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Subcommand, Debug)]
pub enum Action {
    /// Register a continuous query (validated as a workload's query is), or with
    /// `--adhoc` run one over its stream's retained history.
    Add {
        name: String,
        /// The query text.
        #[arg(long)]
        sql: String,
        /// QoS as JSON, e.g. '{"latency": {"p99": "100ms"}, "weight": 2}'.
        #[arg(long)]
        qos: Option<String>,
        /// Per-tuple cost, e.g. 200ns.
        #[arg(long)]
        cost: Option<String>,
        /// `stdout` (default), `none`, or `jsonl:PATH`.
        #[arg(long)]
        sink: Option<String>,
        /// Ad hoc: run over the stream's retained history (`retain:` in the workload)
        /// and print its rows, then end.
        #[arg(long)]
        adhoc: bool,
        /// With --adhoc: after the history, keep running live as a continuous query
        /// (rows go to its sink).
        #[arg(long = "continue", requires = "adhoc")]
        continue_live: bool,
        /// With --adhoc: print the rows as JSON lines on stdout (one a line) and the rest
        /// of the answer on stderr.
        #[arg(long, requires = "adhoc", conflicts_with = "continue_live")]
        jsonl: bool,
    },
    /// List the queries with their live figures and ledgers.
    Ls,
    /// Show one query: plan, QoS, ledger.
    Show { name: String },
    /// Change a query's QoS; the shedder replans at the next tick.
    Patch {
        name: String,
        /// QoS settings to replace, as JSON.
        #[arg(long)]
        qos: String,
    },
    /// Remove a query; prints its final ledger.
    Rm {
        name: String,
        /// Drop its open windows (counted) instead of emitting them.
        #[arg(long)]
        no_flush: bool,
    },
    /// Switch the shedding policy to the policy file at PATH.
    Policy { path: PathBuf },
    /// The latest monitor report.
    Status,
}

pub fn query(args: QueryArgs) -> Result<ExitCode, Failure> {
    let base = format!("http://{}", args.addr);
    let token = token(args.token_file.as_deref())?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let with = |r: ureq::RequestBuilder<ureq::typestate::WithBody>| match &token {
        Some(t) => r.header("Authorization", format!("Bearer {t}")),
        None => r,
    };
    let without = |r: ureq::RequestBuilder<ureq::typestate::WithoutBody>| match &token {
        Some(t) => r.header("Authorization", format!("Bearer {t}")),
        None => r,
    };
    let json_value = |what: &str, text: &str| -> Result<Value, Failure> {
        serde_json::from_str(text)
            .map_err(|e| Failure::BadInput(format!("--{what}: not JSON: {e}")))
    };
    let mut rows_as_lines = false;
    let result = match args.action {
        Action::Add {
            name,
            sql,
            qos,
            cost,
            sink,
            adhoc,
            continue_live,
            jsonl,
        } => {
            rows_as_lines = jsonl;
            let mut body = json!({"name": name, "sql": sql});
            if adhoc {
                body["mode"] = json!("ad-hoc");
                body["continue"] = json!(continue_live);
            }
            if let Some(q) = qos {
                body["qos"] = json_value("qos", &q)?;
            }
            if let Some(c) = cost {
                body["cost"] = json!(c);
            }
            if let Some(s) = sink {
                body["sink"] = match s.split_once(':') {
                    Some(("jsonl", path)) => json!({"jsonl": path}),
                    _ => json!(s),
                };
            }
            with(agent.post(format!("{base}/queries"))).send(body.to_string())
        }
        Action::Ls => without(agent.get(format!("{base}/queries"))).call(),
        Action::Status => without(agent.get(format!("{base}/status"))).call(),
        Action::Show { name } => without(agent.get(format!("{base}/queries/{name}"))).call(),
        Action::Patch { name, qos } => {
            json_value("qos", &qos)?;
            with(agent.patch(format!("{base}/queries/{name}"))).send(qos)
        }
        Action::Rm { name, no_flush } => {
            without(agent.delete(format!("{base}/queries/{name}?flush={}", !no_flush))).call()
        }
        Action::Policy { path } => {
            let abs = std::fs::canonicalize(&path)
                .map_err(|e| Failure::BadInput(format!("{}: {e}", path.display())))?;
            with(agent.put(format!("{base}/policy"))).send(json!({"file": abs}).to_string())
        }
    };
    let mut response = result.map_err(|e| Failure::Other(anyhow::anyhow!("{base}: {e}")))?;
    let status = response.status().as_u16();
    let text = response
        .body_mut()
        .read_to_string()
        .map_err(|e| Failure::Other(anyhow::anyhow!("{base}: {e}")))?;
    let body: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    if status >= 400 {
        let message = body
            .get("error")
            .and_then(Value::as_str)
            .map_or_else(|| body.to_string(), String::from);
        // `main` prefixes operational failures with `spillway:`; bad input prints as is.
        return Err(if status < 500 && status != 401 && status != 429 {
            Failure::BadInput(format!("spillway: {status}: {message}"))
        } else {
            Failure::Other(anyhow::anyhow!("{status}: {message}"))
        });
    }
    let mut body = body;
    if rows_as_lines && let Some(Value::Array(rows)) = body.get_mut("rows").map(Value::take) {
        let mut lines = String::new();
        for r in rows {
            lines.push_str(&r.to_string());
            lines.push('\n');
        }
        super::print(&lines);
        body.as_object_mut().map(|m| m.remove("rows"));
        eprintln!(
            "{}",
            serde_json::to_string_pretty(&body).unwrap_or_default()
        );
        return Ok(ExitCode::SUCCESS);
    }
    super::print(&format!(
        "{}\n",
        serde_json::to_string_pretty(&body).unwrap_or_default()
    ));
    Ok(ExitCode::SUCCESS)
}
