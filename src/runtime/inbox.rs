//! The live driver's command inbox: requests from the control API arrive over a channel and
//! are answered here, on the engine thread, between scheduler turns, through a oneshot
//! each. The API never touches the engine; this is the only place its requests do.
//! Requests are validated here against the query set as it is at that moment.

use std::io;

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::adhoc::{AdHocError, run_adhoc};
use super::clock::WallClock;
use super::control::Controller;
use super::manage::{Command, ManageError, Manager, Outcome};
use super::observe::Observers;
use super::outputs::{AddedSink, Outputs};
use crate::core::drop::DropReason;
use crate::core::engine::Engine;
use crate::core::explain::describe;
use crate::core::stats::QuerySnapshot;
use crate::core::timefmt::Rfc3339Millis;
use crate::runtime::monitor::QueryQos;
use crate::spec::{
    Policy, QosSpec, QueryMode, QuerySpec, RequestError, parse_qos_request, parse_query_request,
    split_query_mode,
};

/// An answer: a JSON body with success, or an HTTP status and a JSON body.
pub type Reply = Result<Value, (u16, Value)>;

/// One request of the control API.
pub enum Request {
    /// `POST /queries` with its raw JSON body.
    Add {
        body: String,
        reply: oneshot::Sender<Reply>,
    },
    /// `PATCH /queries/{name}` with QoS settings as JSON.
    Patch {
        name: String,
        body: String,
        reply: oneshot::Sender<Reply>,
    },
    /// `DELETE /queries/{name}?flush=`.
    Remove {
        name: String,
        flush: bool,
        reply: oneshot::Sender<Reply>,
    },
    /// `PUT /policy`, already loaded.
    Policy {
        policy: Policy,
        reply: oneshot::Sender<Reply>,
    },
    /// `GET /queries`, `GET /queries/{name}`, `GET /status`.
    List {
        reply: oneshot::Sender<Reply>,
    },
    Show {
        name: String,
        reply: oneshot::Sender<Reply>,
    },
    Status {
        reply: oneshot::Sender<Reply>,
    },
}

/// Opens the sink of a query added while running.
pub type SinkOpener = Box<dyn FnMut(&QuerySpec) -> io::Result<AddedSink>>;

/// What the live driver runs the inbox with.
pub struct Inbox {
    pub requests: crossbeam_channel::Receiver<Request>,
    pub open_sink: SinkOpener,
}

/// The run's parts a request may change, borrowed for one inbox check.
pub struct Site<'s, 'o, 'b> {
    pub engine: &'s mut Engine,
    pub controller: &'s mut Controller,
    pub manager: &'s mut Manager,
    pub outputs: &'s mut Outputs<'o>,
    pub observers: &'s mut Observers<'b>,
    pub clock: &'s WallClock,
}

impl Inbox {
    /// Answers every request waiting now.
    pub fn serve(&mut self, site: &mut Site<'_, '_, '_>) {
        while let Ok(req) = self.requests.try_recv() {
            self.answer(req, site);
        }
    }

    fn answer(&mut self, req: Request, s: &mut Site<'_, '_, '_>) {
        let (reply, result) = match req {
            Request::Add { body, reply } => {
                let result = self.add(&body, s);
                (reply, result)
            }
            Request::Patch { name, body, reply } => (reply, patch(&name, &body, s)),
            Request::Remove { name, flush, reply } => (
                reply,
                apply(Command::Remove { query: name, flush }, s).map(|o| match o {
                    Outcome::Removed { index, removal } => json!({
                        "removed": s.manager.queries()[index].name,
                        "flushed": flush,
                        "rows_dropped": removal.rows_dropped,
                        "ledger": ledger(&removal.ledger),
                    }),
                    _ => Value::Null,
                }),
            ),
            Request::Policy { policy, reply } => (
                reply,
                apply(Command::Policy(policy), s).map(|_| json!({"policy": s.manager.policy()})),
            ),
            Request::List { reply } => (reply, Ok(list(s))),
            Request::Show { name, reply } => (reply, show(&name, s)),
            Request::Status { reply } => (reply, Ok(status(s))),
        };
        // The client may have gone: nothing to tell it.
        let _ = reply.send(result);
    }

    fn add(&mut self, body: &str, s: &mut Site<'_, '_, '_>) -> Reply {
        let (mode, body) = split_query_mode(body).map_err(refused)?;
        let catalog = s.manager.workload().catalog();
        let spec = parse_query_request(&body, &catalog, &s.manager.running()).map_err(refused)?;
        if let QueryMode::AdHoc { continue_live } = mode {
            return self.adhoc(spec, continue_live, s);
        }
        let sink = (self.open_sink)(&spec).map_err(|e| {
            (
                500,
                json!({"error": format!("cannot open the sink of `{}`: {e}", spec.name)}),
            )
        })?;
        let name = spec.name.clone();
        let index = s.engine.query_count();
        s.outputs.add_route(index, sink);
        apply(Command::Add(Box::new(spec)), s)?;
        Ok(json!({"added": name, "index": index, "query": view(index, s, true)}))
    }

    /// An ad-hoc query: history first, then its rows back, or live on with its sink.
    fn adhoc(&mut self, spec: QuerySpec, continue_live: bool, s: &mut Site<'_, '_, '_>) -> Reply {
        let name = spec.name.clone();
        if continue_live {
            let sink = (self.open_sink)(&spec).map_err(|e| {
                (
                    500,
                    json!({"error": format!("cannot open the sink of `{name}`: {e}")}),
                )
            })?;
            s.outputs.add_route(s.engine.query_count(), sink);
        }
        let now = s.clock.now();
        let outputs = &mut *s.outputs;
        let done = run_adhoc(
            spec,
            continue_live,
            s.manager,
            s.engine,
            Some(s.controller),
            s.clock.since_start(),
            now,
            |e| outputs.write(e),
            s.observers,
        )
        .map_err(|e| match e {
            AdHocError::NoHistory(_) => (400, json!({"error": e.to_string()})),
            AdHocError::Manage(ManageError::NoSuchQuery(n)) => not_found(&n),
            other => (409, json!({"error": other.to_string()})),
        })?;
        let took_ms = (s.clock.now() - now) as f64 / 1e6;
        let history = json!({
            "tuples": done.replay.tuples,
            "from": done.replay.from.map(|t| Rfc3339Millis(t).to_string()),
            "to": done.replay.to.map(|t| Rfc3339Millis(t).to_string()),
            "took_ms": took_ms,
        });
        Ok(match done.removal {
            Some(removal) => json!({
                "adhoc": name,
                "continue": false,
                "history": history,
                "rows": done.rows,
                "row_count": done.rows.len() as u64 + done.truncated,
                "truncated": done.truncated,
                "ledger": ledger(&removal.ledger),
            }),
            None => json!({
                "adhoc": name,
                "continue": true,
                "index": done.index,
                "history": history,
                "history_rows": done.replay.rows,
                "query": view(done.index, s, true),
            }),
        })
    }
}

fn patch(name: &str, body: &str, s: &mut Site<'_, '_, '_>) -> Reply {
    let index = s.manager.index_of(name).ok_or_else(|| not_found(name))?;
    let catalog = s.manager.workload().catalog();
    let qos = parse_qos_request(body, &s.manager.queries()[index], &catalog).map_err(refused)?;
    apply(
        Command::Patch {
            query: name.to_string(),
            qos,
        },
        s,
    )?;
    Ok(view(index, s, true))
}

/// Applies `cmd` now; a flushed removal's results go to the sinks, its work is charged.
fn apply(cmd: Command, s: &mut Site<'_, '_, '_>) -> Result<Outcome, (u16, Value)> {
    let now = s.clock.now();
    let outputs = &mut *s.outputs;
    let result = s.manager.apply(
        cmd,
        s.engine,
        Some(s.controller),
        s.clock.since_start(),
        now,
        |e| outputs.write(e),
        s.observers,
    );
    if let Ok(Outcome::Removed { index, .. }) = &result {
        s.engine.record_busy(*index, s.clock.now() - now);
    }
    result.map_err(|e| match e {
        ManageError::NoSuchQuery(name) => not_found(&name),
        other => (409, json!({"error": other.to_string()})),
    })
}

pub(crate) fn refused(e: RequestError) -> (u16, Value) {
    (
        400,
        json!({
            "error": e.errors.to_string(),
            "errors": e.errors.errors.iter().map(|x| json!({
                "line": x.line, "column": x.column, "path": x.path, "message": x.message,
            })).collect::<Vec<_>>(),
            "document": e.document,
        }),
    )
}

pub(crate) fn not_found(name: &str) -> (u16, Value) {
    (
        404,
        json!({"error": format!("no query named `{name}` is running")}),
    )
}

fn list(s: &Site<'_, '_, '_>) -> Value {
    let n = s.manager.queries().len();
    Value::Array((0..n).map(|i| view(i, s, false)).collect())
}

fn show(name: &str, s: &Site<'_, '_, '_>) -> Reply {
    // A removed query can still be shown (its final ledger) by name if none runs under it.
    let q = s.manager.queries();
    let index = s
        .manager
        .index_of(name)
        .or_else(|| q.iter().rposition(|q| q.name.eq_ignore_ascii_case(name)))
        .ok_or_else(|| not_found(name))?;
    Ok(view(index, s, true))
}

fn status(s: &Site<'_, '_, '_>) -> Value {
    let report = s.controller.last_report();
    json!({
        "workload": s.manager.workload().name,
        "elapsed_s": s.clock.since_start() as f64 / 1e9,
        "policy": s.manager.policy(),
        "shedding": report.is_some_and(|r| r.plan.shedding),
        "busy": report.map_or(0.0, |r| r.qos.busy),
        "ledger_violations": s.controller.violations(),
        "streams": report.map_or(Value::Null, |r| Value::Array(r.qos.streams.iter().zip(&r.stream_keep).enumerate().map(|(i, (st, k))| json!({
            "name": st.name, "rate": st.rate, "keep": k,
            "retained": s.engine.retention(i).map(|h| json!({
                "tuples": h.tuples, "bytes": h.bytes, "evicted": h.evicted,
                "span_ms": h.oldest.zip(h.newest).map(|(a, b)| (b - a) as f64 / 1e6),
            })),
        })).collect())),
        "queries": list(s),
    })
}

/// Query `i` as the API shows it: live figures and its ledger (`detail`: plan and QoS).
fn view(i: usize, s: &Site<'_, '_, '_>, detail: bool) -> Value {
    let spec = &s.manager.queries()[i];
    let snap = s.engine.query_snapshot(i);
    let report = s.controller.last_report();
    let live: Option<&QueryQos> = report.and_then(|r| r.qos.queries.get(i));
    let mut v = json!({
        "name": spec.name,
        "index": i,
        "state": if snap.removed { "removed" } else { "running" },
        "stream": spec.plan.stream,
        "ledger": ledger(&snap),
        "live": live.filter(|_| !snap.removed).map(|q| json!({
            "rate_in": q.rate_in, "rate_out": q.rate_out, "p50_ms": q.p50 as f64 / 1e6,
            "p99_ms": q.p99 as f64 / 1e6, "target_ms": q.target.map(|t| t as f64 / 1e6),
            "delivered": q.delivered, "utility": q.utility, "queued": q.queued,
        })),
    });
    if detail {
        v["sql"] = json!(spec.sql);
        v["qos"] = qos_view(spec.qos.as_ref());
        if let Some(schema) = s.manager.workload().catalog().get(&spec.plan.stream) {
            v["plan"] = json!(describe(&spec.plan, schema));
        }
    }
    v
}

pub(crate) fn qos_view(q: Option<&QosSpec>) -> Value {
    match q {
        None => Value::Null,
        Some(q) => json!({
            "latency": q.latency.map(|l| json!({"percentile": l.percentile, "target_ms": l.target as f64 / 1e6})),
            "loss_tolerance": q.loss_tolerance.as_ref().map(|c| &c.points),
            "value": q.value.as_ref().map(|v| json!({"field": v.field, "utility": v.curve.points})),
            "weight": q.weight,
            "lossless": q.lossless,
        }),
    }
}

/// The conservation ledger of a query, with whether it balances.
pub fn ledger(q: &QuerySnapshot) -> Value {
    let by_reason: serde_json::Map<String, Value> = DropReason::ALL
        .iter()
        .filter(|r| **r != DropReason::Malformed)
        .map(|r| (r.label().to_string(), json!(q.dropped[r.index()])))
        .collect();
    json!({
        "offered": q.offered,
        "processed": q.processed,
        "queued": q.queued,
        "dropped": by_reason,
        "results": q.results,
        "balanced": q.balances(),
    })
}
