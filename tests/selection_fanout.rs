//! Fan-out through selections: when a query's drop point keeps part of a batch that other
//! queries share, the query reads the shared batch through its selection. Its rows must be
//! exactly those it gets from a copy of the kept rows, the queries that keep everything
//! must be unaffected, every query's ledger must balance, and a full queue must count
//! only the selected rows.

use spillway::core::batch::Batch;
use spillway::core::drop::{DropRule, ValueBins};
use spillway::core::engine::{DropRules, Engine, EngineConfig, QueryDef, StreamDef};
use spillway::core::schema::{DataType, Field, Scalar, Schema};
use spillway::sql::{Catalog, plan_query};

const MS: i64 = 1_000_000;

fn schema() -> Schema {
    let f = |n: &str, ty| Field { name: n.into(), ty };
    let mut s = Schema::new(vec![
        f("k", DataType::Int),
        f("city", DataType::Str),
        f("x", DataType::Float),
        f("ts", DataType::Timestamp),
    ]);
    s.event_time = Some(3);
    s
}

const QUERIES: [&str; 3] = [
    "SELECT city, COUNT(*) AS n, SUM(k) AS sk, MAX(x) AS hi FROM s WHERE k > 0 \
     GROUP BY city, TUMBLE(ts, INTERVAL '10' MILLISECOND)",
    "SELECT city, k, x FROM s WHERE k > 1",
    "SELECT city, COUNT(*) AS n FROM s \
     GROUP BY city, HOP(ts, INTERVAL '5' MILLISECOND, INTERVAL '20' MILLISECOND)",
];

fn engine(copies: usize) -> Engine {
    let catalog = Catalog {
        streams: vec![("s".into(), schema())],
    };
    let queries = (0..copies)
        .flat_map(|c| QUERIES.iter().enumerate().map(move |(i, q)| (c, i, q)))
        .map(|(c, i, sql)| QueryDef {
            name: format!("q{c}_{i}"),
            plan: plan_query(sql, &catalog).expect("plans"),
            latency_target: None,
            weight: 1.0,
            lossless: false,
        })
        .collect();
    let streams = vec![StreamDef {
        name: "s".into(),
        schema: schema(),
    }];
    Engine::new(streams, queries, EngineConfig::default()).expect("builds")
}

/// Deterministic batches: cities repeated and distinct, `x` in [-10, 30), times forward.
fn batches() -> Vec<Batch> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let names = ["oslo", "rome", "lima", "kyiv"];
    let mut t = 0;
    (0..24)
        .map(|b| {
            let n = [0, 1, 7, 64][b % 4];
            let mut batch = Batch::new(&schema().types(), n);
            for _ in 0..n {
                t += (next() % 3) as i64;
                let r = next();
                let city = if r % 5 == 0 {
                    format!("c{}", r % 1000)
                } else {
                    names[(r % 4) as usize].to_string()
                };
                let x = (next() % 4000) as f64 / 100.0 - 10.0;
                let row = [
                    Scalar::Int((next() % 5) as i64),
                    Scalar::Str(city.as_str().into()),
                    Scalar::Float(x),
                    Scalar::Timestamp(t * MS),
                ];
                batch.push_row(t * MS, &row);
            }
            batch
        })
        .collect()
}

/// Keeps the rows with `x >= 0` (value bins of keep 0 below 0, 1 from 0 on).
fn keep_non_negative() -> DropRule {
    DropRule::Semantic(ValueBins {
        column: 2,
        lo: -10.0,
        hi: 30.0,
        width: 10.0,
        keep: vec![0.0, 0.0, 1.0, 1.0, 1.0, 1.0],
    })
}

type Results = Vec<Vec<(i64, Vec<Scalar>)>>;

/// Runs `batches`, a turn after each, and returns each query's rows with their arrivals.
fn run(mut e: Engine, batches: &[Batch], queries: usize) -> (Engine, Results) {
    let mut out: Results = vec![Vec::new(); queries];
    let mut collect = |e: &spillway::core::engine::Emitted<'_>| {
        for i in 0..e.batch.len() {
            let row = (e.batch.arrival[i], e.batch.row(i, e.types));
            out[e.index].push(row);
        }
    };
    for b in batches {
        e.ingest(0, b.clone());
        while e.run_turn(0).is_some() {}
        e.emit(0, &mut collect);
    }
    e.flush(0);
    e.emit(0, &mut collect);
    (e, out)
}

#[test]
fn a_partial_keep_reads_the_shared_batch_through_its_selection() {
    let input = batches();
    // Two copies of each query share every batch: copy 0 keeps rows with x >= 0 at its
    // own drop point, copy 1 keeps everything.
    let mut shared = engine(2);
    let n = QUERIES.len();
    let mut queries = vec![keep_non_negative(); n];
    queries.extend(vec![DropRule::KeepAll; n]);
    shared.install(&DropRules {
        streams: vec![DropRule::KeepAll],
        queries,
        queue_capacity: None,
    });
    let (shared, got) = run(shared, &input, 2 * n);
    // The references: the same queries alone, on copies of the kept rows and on all rows.
    let kept: Vec<Batch> = input
        .iter()
        .map(|b| {
            let Some(spillway::core::batch::Column::Float(x)) = b.columns.get(2) else {
                unreachable!("x is a float")
            };
            let sel: Vec<u32> = (0..b.len() as u32)
                .filter(|&i| x[i as usize] >= 0.0)
                .collect();
            let mut c = Batch::new(&schema().types(), sel.len());
            c.gather_from(b, &sel);
            c
        })
        .collect();
    let (_, on_copies) = run(engine(1), &kept, n);
    let (_, on_all) = run(engine(1), &input, n);
    for i in 0..n {
        assert!(!on_copies[i].is_empty() && on_copies[i] != on_all[i]);
        assert_eq!(got[i], on_copies[i], "query {i} through its selection");
        assert_eq!(got[n + i], on_all[i], "query {i} keeping every row");
    }
    let snap = shared.snapshot();
    for q in &snap.queries {
        let dropped: u64 = q.dropped.iter().sum();
        assert_eq!(q.offered, q.processed + q.queued + dropped, "{}", q.name);
    }
    let offered: u64 = input.iter().map(|b| b.len() as u64).sum();
    let negative = offered - kept.iter().map(|b| b.len() as u64).sum::<u64>();
    assert!(negative > 0);
    for q in &snap.queries[..n] {
        assert_eq!(q.dropped.iter().sum::<u64>(), negative, "{}", q.name);
    }
}

#[test]
fn random_partial_keeps_balance_every_ledger() {
    let input = batches();
    let mut e = engine(2);
    let n = QUERIES.len();
    let mut queries = vec![DropRule::Random { keep: 0.5 }; n];
    queries.extend(vec![DropRule::Random { keep: 0.05 }; n]);
    e.install(&DropRules {
        streams: vec![DropRule::KeepAll],
        queries,
        queue_capacity: None,
    });
    let (e, got) = run(e, &input, 2 * n);
    let offered: u64 = input.iter().map(|b| b.len() as u64).sum();
    let snap = e.snapshot();
    for q in &snap.queries {
        let dropped: u64 = q.dropped.iter().sum();
        assert_eq!(q.offered, offered);
        assert_eq!(q.offered, q.processed + q.queued + dropped, "{}", q.name);
        assert!(dropped > 0 && q.processed > 0, "{}", q.name);
    }
    // The projection emits one row per processed row that passes `k > 1`.
    assert!(got[1].len() as u64 <= snap.queries[1].processed);
}

#[test]
fn a_full_queue_rejects_and_counts_only_the_selected_rows() {
    let input = batches();
    let catalog = Catalog {
        streams: vec![("s".into(), schema())],
    };
    let query = |name: &str| QueryDef {
        name: name.into(),
        plan: plan_query(QUERIES[0], &catalog).expect("plans"),
        latency_target: None,
        weight: 1.0,
        lossless: false,
    };
    let streams = vec![StreamDef {
        name: "s".into(),
        schema: schema(),
    }];
    let config = EngineConfig {
        queue_capacity: 1,
        ..EngineConfig::default()
    };
    let mut e = Engine::new(streams, vec![query("kept"), query("all")], config).unwrap();
    e.install(&DropRules {
        streams: vec![DropRule::KeepAll],
        queries: vec![keep_non_negative(), DropRule::KeepAll],
        queue_capacity: None,
    });
    // No turns: the first batch with rows is queued, every later one finds the queue full.
    for b in &input {
        e.ingest(0, b.clone());
    }
    let kept = |b: &Batch| match &b.columns[2] {
        spillway::core::batch::Column::Float(x) => x.iter().filter(|&&v| v >= 0.0).count(),
        _ => unreachable!("x is a float"),
    } as u64;
    let first = input.iter().position(|b| kept(b) > 0).unwrap();
    let full: u64 = input[first + 1..].iter().map(kept).sum();
    let snap = e.snapshot();
    let q = &snap.queries[0];
    let reason = spillway::core::drop::DropReason::QueueFull.index();
    assert_eq!((q.queued, q.dropped[reason]), (kept(&input[first]), full));
    for q in &snap.queries {
        let dropped: u64 = q.dropped.iter().sum();
        assert_eq!(q.offered, q.processed + q.queued + dropped, "{}", q.name);
    }
    while e.run_turn(0).is_some() {}
    let snap = e.snapshot();
    assert_eq!(snap.queries[0].processed, kept(&input[first]));
}
