//! Ad-hoc queries over retained history, on injected time: the rows an ad-hoc query gives
//! over the last 5 s equal exactly the rows the same continuous query produced over those
//! 5 s; history is never shed; retention stays within its bounds and counts evictions.

use serde_json::Value;
use spillway::core::batch::Batch;
use spillway::core::drop::DropRule;
use spillway::core::engine::{DropRules, Emitted, Engine};
use spillway::core::schema::{DataType, Nanos, Scalar};
use spillway::runtime::adhoc::{AdHocError, run_adhoc};
use spillway::runtime::manage::{Command, Manager};
use spillway::runtime::observe::Observers;
use spillway::runtime::sink::write_rows;
use spillway::spec::{self, Policy, parse_query_request};

const MS: Nanos = 1_000_000;

const WORKLOAD: &str = r#"
name: history
duration: 8s
streams:
  s:
    schema: {k: int, v: int, ts: timestamp}
    event_time: ts
    rate: 1000
    retain: {last: 5s}
  plain:
    schema: {x: int}
    rate: 10
queries:
  per_key:
    sql: SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM s GROUP BY k, TUMBLE(ts, INTERVAL '1' SECOND)
  odd:
    sql: SELECT v, ts FROM s WHERE v % 7 = 1
"#;

fn rows_of(e: &Emitted<'_>, into: &mut Vec<Value>) {
    let mut text = Vec::new();
    write_rows(&mut text, e).unwrap();
    for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let mut v: Value = serde_json::from_slice(line).unwrap();
        let m = v.as_object_mut().unwrap();
        m.remove("query");
        m.remove("latency_ms");
        into.push(v);
    }
}

/// 1000 tuples a second for `until`: `v` counts them, `k = v % 3`, event time = arrival.
struct Feed {
    n: i64,
    t: Nanos,
}

impl Feed {
    /// Ingests up to `until`, running turns, ticking every 100 ms; `rows[q]` collects the
    /// rows of query `q`.
    fn run(&mut self, engine: &mut Engine, until: Nanos, rows: &mut [Vec<Value>]) {
        let types = [DataType::Int, DataType::Int, DataType::Timestamp];
        while self.t < until {
            let mut b = Batch::new(&types, 10);
            for _ in 0..10 {
                let at = self.n * MS;
                b.push_row(
                    at,
                    &[
                        Scalar::Int(self.n % 3),
                        Scalar::Int(self.n),
                        Scalar::Timestamp(at),
                    ],
                );
                self.n += 1;
            }
            self.t = self.n * MS;
            engine.ingest(0, b);
            while engine.run_turn(self.t).is_some() {}
            if self.t % (100 * MS) == 0 {
                engine.tick(self.t, |_| self.t);
            }
            engine.emit(self.t, |e| rows_of(e, &mut rows[e.index]));
        }
    }
}

fn setup() -> (spec::Workload, Engine, Manager) {
    let w = spec::parse(WORKLOAD, "history.yaml").unwrap();
    let engine = spillway::runtime::assemble::engine_for(&w).unwrap();
    let manager = Manager::new(&w, &Policy::none());
    (w, engine, manager)
}

fn request(w: &spec::Workload, m: &Manager, body: &str) -> spec::QuerySpec {
    let (_, body) = spec::split_query_mode(body).unwrap();
    parse_query_request(&body, &w.catalog(), &m.running()).unwrap()
}

#[test]
fn an_adhoc_query_over_5s_of_history_gives_the_rows_the_continuous_query_gave() {
    let (w, mut engine, mut manager) = setup();
    let mut rows = vec![Vec::new(), Vec::new()];
    let mut feed = Feed { n: 0, t: 0 };
    feed.run(&mut engine, 8_000 * MS, &mut rows);
    let now = 8_000 * MS;
    let mut obs = Observers::default();

    // The same SQL, ad hoc, over the last 5 s: arrivals from 3 s to 8 s.
    let q = request(
        &w,
        &manager,
        &format!(
            r#"{{"name": "per_key_now", "mode": "ad-hoc", "sql": {:?}}}"#,
            w.queries[0].sql
        ),
    );
    let adhoc = run_adhoc(
        q,
        false,
        &mut manager,
        &mut engine,
        None,
        now,
        now,
        |_| panic!("an ended ad-hoc query writes to no sink"),
        &mut obs,
    )
    .unwrap();
    assert_eq!(adhoc.replay.tuples, 5_000);
    assert_eq!(adhoc.replay.from, Some(3_000 * MS));
    assert_eq!(adhoc.truncated, 0);
    // History stays out of the live ledger, the flushed last window included.
    let ledger = &adhoc.removal.as_ref().unwrap().ledger;
    assert_eq!((ledger.offered, ledger.results), (0, 0));
    assert!(ledger.balances());

    // The continuous query's rows over the same span: windows from 3 s, the last one
    // flushed at the same moment.
    manager
        .apply(
            Command::Remove {
                query: "per_key".into(),
                flush: true,
            },
            &mut engine,
            None,
            now,
            now,
            |e| rows_of(e, &mut rows[0]),
            &mut obs,
        )
        .unwrap();
    let span: Vec<Value> = rows[0]
        .iter()
        .filter(|r| r["window_start"].as_str().unwrap() >= "1970-01-01T00:00:03.000Z")
        .cloned()
        .collect();
    assert_eq!(span.len(), 15, "5 windows x 3 keys");
    assert_eq!(adhoc.rows, span);
    // Nothing before the span leaked in.
    assert!(rows[0].len() > span.len());
}

#[test]
fn an_adhoc_filter_gives_the_continuous_rows_of_the_span_and_continues_live() {
    let (w, mut engine, mut manager) = setup();
    let mut rows = vec![Vec::new(), Vec::new()];
    let mut feed = Feed { n: 0, t: 0 };
    feed.run(&mut engine, 6_000 * MS, &mut rows);
    let now = 6_000 * MS;
    let mut obs = Observers::default();
    let q = request(
        &w,
        &manager,
        &format!(
            r#"{{"name": "odd_now", "mode": "ad-hoc", "continue": true, "sql": {:?}, "sink": "none"}}"#,
            w.queries[1].sql
        ),
    );
    let mut history = Vec::new();
    let adhoc = run_adhoc(
        q,
        true,
        &mut manager,
        &mut engine,
        None,
        now,
        now,
        |e| rows_of(e, &mut history),
        &mut obs,
    )
    .unwrap();
    assert!(adhoc.removal.is_none() && adhoc.rows.is_empty());
    // History: arrivals 1 s..6 s.
    let span: Vec<Value> = rows[1]
        .iter()
        .filter(|r| r["ts"].as_str().unwrap() >= "1970-01-01T00:00:01.000Z")
        .cloned()
        .collect();
    assert_eq!(history, span);
    assert_eq!(adhoc.replay.rows as usize, span.len());

    // Live from here: the ad-hoc query gets exactly what the continuous one gets.
    rows.push(Vec::new());
    let before = rows[1].len();
    feed.run(&mut engine, 7_000 * MS, &mut rows);
    assert_eq!(rows[2], rows[1][before..]);
    assert!(!rows[2].is_empty());
    // Its ledger counts the live part only, and balances.
    let snap = engine.query_snapshot(adhoc.index);
    assert_eq!(snap.offered, 1_000);
    assert!(snap.balances());
}

#[test]
fn history_is_never_shed_and_stays_within_its_bound() {
    let (w, mut engine, mut manager) = setup();
    // Shed 90% at the stream's drop point: the continuous queries see a tenth.
    engine.install(&DropRules {
        streams: vec![DropRule::Random { keep: 0.1 }, DropRule::KeepAll],
        queries: vec![DropRule::KeepAll; 2],
        queue_capacity: None,
    });
    let mut rows = vec![Vec::new(), Vec::new()];
    Feed { n: 0, t: 0 }.run(&mut engine, 9_000 * MS, &mut rows);
    let r = engine.retention(0).unwrap();
    // The last tick (at 9 s) aged out what arrived before 4 s.
    assert_eq!(r.tuples, 5_000, "arrivals 4 s..8.999 s");
    assert_eq!(r.evicted, 4_000);
    assert_eq!(r.bytes, 5_000 * 32);
    assert_eq!((r.oldest, r.newest), (Some(4_000 * MS), Some(8_999 * MS)));
    let q = request(
        &w,
        &manager,
        r#"{"name": "all", "mode": "ad-hoc", "sql": "SELECT COUNT(*) AS n FROM s GROUP BY TUMBLE(ts, INTERVAL '10' SECOND)"}"#,
    );
    let now = 9_000 * MS;
    let adhoc = run_adhoc(
        q,
        false,
        &mut manager,
        &mut engine,
        None,
        now,
        now,
        |_| {},
        &mut Observers::default(),
    )
    .unwrap();
    // From 4 s (now - 5 s) on: every tuple, none shed, so the count is exact.
    assert_eq!(adhoc.replay.tuples, 5_000);
    assert_eq!(adhoc.rows.len(), 1);
    assert_eq!(adhoc.rows[0]["n"], 5_000);
    assert!(adhoc.rows[0].get("n_ci95").is_none());
}

#[test]
fn a_stream_without_retain_refuses_an_adhoc_query() {
    let (w, mut engine, mut manager) = setup();
    let q = request(
        &w,
        &manager,
        r#"{"name": "p", "mode": "ad-hoc", "sql": "SELECT x FROM plain"}"#,
    );
    let err = run_adhoc(
        q,
        false,
        &mut manager,
        &mut engine,
        None,
        0,
        0,
        |_| {},
        &mut Observers::default(),
    )
    .unwrap_err();
    assert!(matches!(err, AdHocError::NoHistory(_)));
    assert!(err.to_string().contains("retain: {last: 5s}"), "{err}");
    assert_eq!(manager.queries().len(), 2, "nothing was added");
}
