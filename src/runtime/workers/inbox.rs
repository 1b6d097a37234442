//! The control API on N workers: the live coordinator answers its requests (`runtime::
//! inbox::Request`) between batches. A change is resolved against the run's one query
//! table (`changes::ShardedManager`) and sent to every worker in band (`send_change`),
//! as scripted changes are; reads (list, show, status) are answered from the last merged
//! report, the QoS view the observers see. A removal is answered once every worker has
//! sent its final ledger (`collect`), with the ledgers added.
//!
//! Invariant: the coordinator never touches a worker's engine; every change reaches the
//! workers through their channels, after the batches sent before it. Ad-hoc queries
//! (which replay one engine's retained history) are refused with 409.

use std::sync::Arc;

use crossbeam_channel::Sender;
use serde_json::{Value, json};

use super::Sharded;
use super::changes::{ChangeError, WorkerChange};
use super::collect::{Collector, Sent};
use super::worker::ToWorker;
use crate::core::explain::describe;
use crate::core::schema::Nanos;
use crate::runtime::inbox::{Inbox, Reply, Request, ledger, not_found, qos_view, refused};
use crate::runtime::manage::{Command, ManageError};
use crate::runtime::observe::Observers;
use crate::runtime::outputs::Outputs;
use crate::spec::{QueryMode, parse_qos_request, parse_query_request, split_query_mode};

/// What a change needs from the coordinator.
pub(super) struct Coordinator<'a, 'o, 'b> {
    pub collector: &'a mut Collector,
    pub sharded: &'a mut Sharded,
    pub outputs: &'a mut Outputs<'o>,
    pub observers: &'a mut Observers<'b>,
    pub txs: &'a [Sender<ToWorker>],
    /// How many workers run (their engines are on their threads, not in `sharded`).
    pub workers: usize,
    /// Time since the start.
    pub since: Nanos,
}

/// Resolves `cmd` (`scripted`: from the workload's `changes:`) and sends it to every
/// worker in band; a removal's `reply` (with its `flush`) waits for the workers' final
/// ledgers. Returns the change sent.
pub(super) fn send_change(
    cmd: Command,
    scripted: bool,
    reply: Option<(tokio::sync::oneshot::Sender<Reply>, bool)>,
    c: &mut Coordinator<'_, '_, '_>,
) -> Result<Arc<WorkerChange>, ChangeError> {
    let name = match &cmd {
        Command::Add(q) if scripted => Some(q.name.clone()),
        _ => None,
    };
    let n = c.workers;
    let router = &c.sharded.router;
    let change = (c.collector.manager).plan(cmd, router, n, c.since, c.observers)?;
    let removes = match &change {
        WorkerChange::Add {
            index, placement, ..
        } => {
            c.sharded.placement.push(*placement);
            let spec = c.collector.manager.queries()[*index].clone();
            c.collector.added(&spec);
            if let Some(name) = &name {
                // A scripted add's sink was opened at start (an API add routed its own).
                c.outputs.claim_scripted(*index, name);
            }
            None
        }
        WorkerChange::Remove { index, .. } => Some(*index),
        _ => None,
    };
    let at = c.since;
    (c.collector).sent(Sent { removes, at, reply });
    let change = Arc::new(change);
    for tx in c.txs {
        let _ = tx.send(ToWorker::Change(Arc::clone(&change)));
    }
    Ok(change)
}

fn conflict(e: ChangeError) -> (u16, Value) {
    match e {
        ChangeError::Manage(ManageError::NoSuchQuery(n)) => not_found(&n),
        other => (409, json!({"error": other.to_string()})),
    }
}

/// Answers every request waiting in `inbox` now.
pub(super) fn serve(inbox: &mut Inbox, c: &mut Coordinator<'_, '_, '_>) {
    while let Ok(req) = inbox.requests.try_recv() {
        let (reply, result) = match req {
            Request::Add { body, reply } => (reply, add(inbox, &body, c)),
            Request::Patch { name, body, reply } => (reply, patch(&name, &body, c)),
            Request::Remove { name, flush, reply } => {
                if c.collector.manager.find(&name).is_none() {
                    (reply, Err(not_found(&name)))
                } else {
                    // Answered by the collector, with the workers' final ledgers (a
                    // running query's removal cannot fail here).
                    let cmd = Command::Remove { query: name, flush };
                    let _ = send_change(cmd, false, Some((reply, flush)), c);
                    continue;
                }
            }
            Request::Policy { policy, reply } => (
                reply,
                send_change(Command::Policy(policy), false, None, c)
                    .map(|_| json!({"policy": c.collector.manager.policy()}))
                    .map_err(conflict),
            ),
            Request::List { reply } => (reply, Ok(list(c))),
            Request::Show { name, reply } => (reply, show(&name, c)),
            Request::Status { reply } => (reply, Ok(status(c))),
        };
        // The client may have gone: nothing to tell it.
        let _ = reply.send(result);
    }
}

fn add(inbox: &mut Inbox, body: &str, c: &mut Coordinator<'_, '_, '_>) -> Reply {
    let (mode, body) = split_query_mode(body).map_err(refused)?;
    let m = &c.collector.manager;
    let catalog = m.workload().catalog();
    let spec = parse_query_request(&body, &catalog, &m.running()).map_err(refused)?;
    if let QueryMode::AdHoc { .. } = mode {
        return Err((
            409,
            json!({"error": format!(
                "ad-hoc queries need engine.workers: 1 (got {}): they replay one engine's retained history",
                c.workers
            )}),
        ));
    }
    let index = m.queries().len();
    // Refused before its sink opens: a query its stream's route cannot take.
    super::changes::place_on(m.workload(), &c.sharded.router, c.workers, &spec, index)
        .map_err(conflict)?;
    let sink = (inbox.open_sink)(&spec).map_err(|e| {
        let error = format!("cannot open the sink of `{}`: {e}", spec.name);
        (500, json!({ "error": error }))
    })?;
    let name = spec.name.clone();
    c.outputs.add_route(index, sink);
    send_change(Command::Add(Box::new(spec)), false, None, c).map_err(conflict)?;
    Ok(json!({"added": name, "index": index, "query": view(index, c, true)}))
}

fn patch(name: &str, body: &str, c: &mut Coordinator<'_, '_, '_>) -> Reply {
    let m = &c.collector.manager;
    let index = m.find(name).ok_or_else(|| not_found(name))?;
    let catalog = m.workload().catalog();
    let qos = parse_qos_request(body, &m.queries()[index], &catalog).map_err(refused)?;
    let query = name.to_string();
    send_change(Command::Patch { query, qos }, false, None, c).map_err(conflict)?;
    Ok(view(index, c, true))
}

fn list(c: &Coordinator<'_, '_, '_>) -> Value {
    let n = c.collector.manager.queries().len();
    Value::Array((0..n).map(|i| view(i, c, false)).collect())
}

fn show(name: &str, c: &Coordinator<'_, '_, '_>) -> Reply {
    let m = &c.collector.manager;
    let q = m.queries();
    let index = (m.find(name))
        .or_else(|| q.iter().rposition(|q| q.name.eq_ignore_ascii_case(name)))
        .ok_or_else(|| not_found(name))?;
    Ok(view(index, c, true))
}

fn status(c: &Coordinator<'_, '_, '_>) -> Value {
    let report = c.collector.last();
    json!({
        "workload": c.collector.manager.workload().name,
        "elapsed_s": c.since as f64 / 1e9,
        "policy": c.collector.manager.policy(),
        "workers": c.workers,
        "shedding": report.is_some_and(|r| r.plan.shedding),
        "busy": report.map_or(0.0, |r| r.qos.busy),
        "ledger_violations": report.map_or(0, |r| r.qos.violations),
        "streams": report.map_or(Value::Null, |r| Value::Array(
            (r.qos.streams.iter().zip(&r.stream_keep))
                .map(|(st, k)| json!({"name": st.name, "rate": st.rate, "keep": k}))
                .collect(),
        )),
        "queries": list(c),
    })
}

/// Query `i` as the API shows it, from the last merged report: its workers' figures and
/// ledgers added (`detail`: plan and QoS). A query added since has no figures yet.
fn view(i: usize, c: &Coordinator<'_, '_, '_>, detail: bool) -> Value {
    let m = &c.collector.manager;
    let spec = &m.queries()[i];
    let report = c.collector.last();
    let snap = report.and_then(|r| r.qos.engine.queries.get(i));
    let live = report.and_then(|r| r.qos.queries.get(i));
    let removed = m.is_removed(i);
    let mut v = json!({
        "name": spec.name,
        "index": i,
        "state": if removed { "removed" } else { "running" },
        "stream": spec.plan.stream,
        "ledger": snap.map(ledger),
        "live": live.filter(|_| !removed).map(|q| json!({
            "rate_in": q.rate_in, "rate_out": q.rate_out, "p50_ms": q.p50 as f64 / 1e6,
            "p99_ms": q.p99 as f64 / 1e6, "target_ms": q.target.map(|t| t as f64 / 1e6),
            "delivered": q.delivered, "utility": q.utility, "queued": q.queued,
        })),
    });
    if detail {
        v["sql"] = json!(spec.sql);
        v["qos"] = qos_view(spec.qos.as_ref());
        if let Some(schema) = m.workload().catalog().get(&spec.plan.stream) {
            v["plan"] = json!(describe(&spec.plan, schema));
        }
    }
    v
}
