//! A worker's rows of a shared batch are queued in place, as a selection
//! (`Engine::ingest_selected`), not copied: these tests would fail if a worker queued
//! more rows than its own (a copy of the batch), lost any, or saw another time than the
//! gathered copy it replaces. Selections are sparse on purpose: a few rows of each batch,
//! none, or all of them.

use std::sync::Arc;

use spillway::core::batch::Batch;
use spillway::core::drop::DropRule;
use spillway::core::engine::{DropRules, Engine, EngineConfig, QueryDef, StreamDef};
use spillway::core::scheduler::SchedulerKind;
use spillway::core::schema::{DataType, Field, Nanos, Scalar, Schema};
use spillway::core::shard::{RoutedTime, shards_of};
use spillway::runtime::workers::Sharded;
use spillway::sql::{Catalog, plan_query};

const MS: i64 = 1_000_000;
const SQL: &str = "SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM s \
                   GROUP BY k, TUMBLE(ts, INTERVAL '10' MILLISECOND)";

fn schema() -> Schema {
    let f = |name: &str, ty| Field {
        name: name.into(),
        ty,
    };
    let mut s = Schema::new(vec![
        f("k", DataType::Int),
        f("v", DataType::Float),
        f("ts", DataType::Timestamp),
    ]);
    s.event_time = Some(2);
    s
}

fn engine() -> Engine {
    let catalog = Catalog {
        streams: vec![("s".into(), schema())],
    };
    let plan = plan_query(SQL, &catalog).expect("plans");
    let query = QueryDef {
        name: "q".into(),
        plan,
        latency_target: None,
        weight: 1.0,
        lossless: false,
    };
    let stream = StreamDef {
        name: "s".into(),
        schema: schema(),
    };
    let config = EngineConfig {
        queue_capacity: 1 << 20,
        queue_memory: usize::MAX,
        scheduler: SchedulerKind::RoundRobin,
        seed: 3,
    };
    Engine::new(vec![stream], vec![query], config).unwrap()
}

/// Batch `c` of `len` rows: keys from `key`, times rising (`jitter`: mostly, with some out
/// of order, late rows), arrival 1 ms per row.
fn batch(c: usize, len: usize, jitter: bool, key: impl Fn(usize) -> i64) -> Batch {
    let mut b = Batch::new(&schema().types(), len);
    for r in 0..len {
        let i = c * len + r;
        let off = if jitter {
            ((i * 37) % 11) as i64 - 5
        } else {
            0
        };
        let ts = (i as i64 + off) * MS;
        b.push_row(
            i as i64 * MS,
            &[
                Scalar::Int(key(i)),
                Scalar::Float(i as f64 / 4.0),
                Scalar::Timestamp(ts),
            ],
        );
    }
    b
}

/// A sparse selection of a batch of `len` rows, different per batch: none, all, a few.
fn selection(c: usize, len: usize) -> Vec<u32> {
    match c % 5 {
        0 => vec![],
        1 => (0..len as u32).collect(),
        2 => vec![len as u32 - 1],
        _ => (0..len as u32)
            .filter(|i| (i * 13 + c as u32).is_multiple_of(10))
            .collect(),
    }
}

fn rows_of(e: &mut Engine, now: Nanos, out: &mut Vec<String>) {
    let types = e.query_plan(0).output.types();
    e.emit(now, |x| {
        out.extend(
            (0..x.batch.len()).map(|i| format!("{:?} {:?}", x.batch.row(i, &types), x.approx)),
        );
    });
}

/// Runs the same selections through a gathered copy (`ingest_routed`) and in place
/// (`ingest_selected`), with `rule` at the query's drop point.
fn copy_and_in_place(rule: DropRule) {
    let (mut copy, mut in_place) = (engine(), engine());
    let rules = DropRules {
        streams: vec![DropRule::KeepAll],
        queries: vec![rule],
        queue_capacity: None,
    };
    copy.install(&rules);
    in_place.install(&rules);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut high = (i64::MIN, 0);
    let len = 64;
    let mut selected = 0u64;
    for c in 0..60 {
        let whole = batch(c, len, true, |i| (i % 17) as i64);
        let mut prefix = Vec::with_capacity(len);
        for r in 0..len {
            let Scalar::Timestamp(t) = whole.row(r, &schema().types())[2] else {
                unreachable!()
            };
            if t > high.0 {
                high = (t, whole.arrival[r]);
            }
            prefix.push(high);
        }
        let time = Arc::new(RoutedTime { prefix, tail: high });
        let sel = selection(c, len);
        selected += sel.len() as u64;
        let mut own = Batch::new(&schema().types(), sel.len());
        own.gather_from(&whole, &sel);
        if !sel.is_empty() {
            copy.ingest_routed(0, Arc::new(own), Some(Arc::new(time.gather(&sel))));
        }
        in_place.ingest_selected(0, &Arc::new(whole), &sel, &time);
        let (qa, qb) = (
            copy.snapshot().queries[0].clone(),
            in_place.snapshot().queries[0].clone(),
        );
        assert_eq!(
            (qa.offered, qa.queued, qa.dropped),
            (qb.offered, qb.queued, qb.dropped),
            "batch {c}"
        );
        assert_eq!(
            qb.offered, selected,
            "offered: only the worker's rows, each once"
        );
        let now = (c as i64 + 1) * len as i64 * MS;
        for (e, out) in [(&mut copy, &mut a), (&mut in_place, &mut b)] {
            while e.run_turn(now).is_some() {}
            e.tick(now, |_| now);
            rows_of(e, now, out);
        }
    }
    let end = 100_000 * MS;
    for (e, out) in [(&mut copy, &mut a), (&mut in_place, &mut b)] {
        e.flush(end);
        rows_of(e, end, out);
    }
    assert!(!b.is_empty());
    assert_eq!(
        a, b,
        "the same rows, in the same order, with the same error bounds"
    );
    let (qa, qb) = (&copy.snapshot().queries[0], &in_place.snapshot().queries[0]);
    assert!(qa.balances() && qb.balances(), "{qb:?}");
    let counters = |q: &spillway::core::stats::QuerySnapshot| {
        (
            q.offered,
            q.processed,
            q.dropped,
            q.late,
            q.results,
            q.windows_lost,
        )
    };
    assert_eq!(counters(qa), counters(qb));
    assert!(qb.late > 0, "out-of-order rows exercise the time prefix");
    assert_eq!(in_place.snapshot().streams[0].ingested, selected);
}

#[test]
fn a_selection_in_place_gives_the_rows_and_ledger_of_its_copy() {
    copy_and_in_place(DropRule::KeepAll);
}

#[test]
fn under_shedding_a_selection_gives_the_rows_and_ledger_of_its_copy() {
    copy_and_in_place(DropRule::Random { keep: 0.5 });
}

/// Skewed keys on `workers` workers: one worker gets most rows, the others a few of each
/// batch (often none). Checks that every row is offered to and processed by exactly its
/// owner, and returns the rows counted by COUNT(*) and the late rows, over all workers.
fn skewed(workers: usize, jitter: bool) -> (u64, u64) {
    let mut sharded = Sharded::new(workers, 64, || Ok::<_, ()>(engine())).unwrap();
    assert_eq!(sharded.routed(0), workers > 1);
    let mut owned = vec![0u64; workers];
    let mut total = 0u64;
    let mut counted = 0i64;
    let mut shards = Vec::new();
    let skewed = |i: usize| {
        if i.is_multiple_of(20) {
            (i % 97) as i64
        } else {
            0
        }
    };
    for c in 0..200 {
        let b = batch(c, 50, jitter, skewed);
        shards_of(&b, 0, 64, &mut shards);
        for &s in &shards {
            owned[sharded.map.owner(s as usize)] += 1;
        }
        total += b.len() as u64;
        sharded.ingest(0, b);
        let now = (c as i64 + 1) * 50 * MS;
        for e in &mut sharded.engines {
            while e.run_turn(now).is_some() {}
        }
    }
    for e in &mut sharded.engines {
        e.flush(1_000_000 * MS);
        let types = e.query_plan(0).output.types();
        e.emit(0, |x| {
            for i in 0..x.batch.len() {
                let Scalar::Int(n) = x.batch.row(i, &types)[1] else {
                    panic!("COUNT(*) is an int")
                };
                counted += n;
            }
        });
    }
    if workers > 1 {
        let sparse = owned.iter().filter(|&&n| n > 0 && n < total / 20).count();
        assert!(sparse >= workers / 2, "{owned:?}");
    }
    for (w, e) in sharded.engines.iter().enumerate() {
        let q = &e.snapshot().queries[0];
        assert!(q.balances(), "worker {w}: {q:?}");
        assert_eq!(q.offered, owned[w], "worker {w} is offered its rows only");
        assert_eq!(q.processed, owned[w], "worker {w}: {q:?}");
    }
    let merged = sharded.snapshot();
    assert_eq!(merged.queries[0].offered, total);
    assert_eq!(merged.streams[0].ingested, total);
    let late: u64 = (sharded.engines.iter())
        .map(|e| e.snapshot().queries[0].late)
        .sum();
    assert_eq!(
        counted as u64 + late,
        total,
        "every row counted once, or late"
    );
    (counted as u64, late)
}

#[test]
fn sparse_selections_on_4_workers_conserve_every_row() {
    let one = skewed(1, true);
    assert!(one.1 > 0, "out-of-order rows are late");
    assert_eq!(skewed(2, true), one);
    assert_eq!(skewed(4, true), one);
    // In order: nothing is late.
    let one = skewed(1, false);
    assert_eq!(one, (10_000, 0));
    assert_eq!(skewed(2, false), one);
    assert_eq!(skewed(4, false), one);
}
