//! Query cases at several workers: every `tests/queries/*.yaml` case runs on 1, 2 and 4
//! engine workers over key shards (`runtime::workers`), at several batch sizes, and gives
//! the rows of one worker: the same bytes in the same order for a query placed on one
//! owner worker, the same rows sorted for a sharded one (their merge order is free).

use spillway::core::batch::Batch;
use spillway::core::engine::Engine;
use spillway::core::scheduler::SchedulerKind;
use spillway::core::schema::Scalar;
use spillway::runtime::workers::{Placement, Sharded};

mod cases;

use cases::{Case, MS, load};

fn engine(case: &Case) -> Engine {
    cases::engine(&case.schema, &case.sql, SchedulerKind::RoundRobin)
}

/// The rows of `case` on `workers` workers, in emission order (worker by worker at each
/// step), and where the query was placed.
fn run(case: &Case, batch_size: usize, workers: usize) -> (Vec<Vec<Scalar>>, Placement) {
    let mut sharded = Sharded::new(workers, 64, || Ok::<_, ()>(engine(case))).unwrap();
    let out_types = sharded.engines[0].query_plan(0).output.types();
    let types = case.schema.types();
    let mut rows = Vec::new();
    let mut collect = |s: &mut Sharded, now| {
        for e in &mut s.engines {
            e.emit(now, |e| {
                assert!(e.batch.is_consistent());
                rows.extend((0..e.batch.len()).map(|i| e.batch.row(i, &out_types)));
            })
        }
    };
    for (c, chunk) in case.input.chunks(batch_size).enumerate() {
        let mut b = Batch::new(&types, chunk.len());
        for (k, row) in chunk.iter().enumerate() {
            b.push_row((c * batch_size + k) as i64 * MS, row);
        }
        sharded.ingest(0, b);
        let now = ((c + 1) * batch_size) as i64 * MS;
        for e in &mut sharded.engines {
            while e.run_turn(now).is_some() {}
            e.tick(now, |_| now);
        }
        collect(&mut sharded, now);
    }
    let end = (case.input.len() as i64 + 1) * MS;
    for e in &mut sharded.engines {
        e.flush(end);
    }
    collect(&mut sharded, end);
    for snap in sharded.engines.iter().map(Engine::snapshot) {
        assert!(snap.queries.iter().all(|q| q.balances()), "{snap:?}");
    }
    // A keyed query's stream is split by shard before the workers: the ledgers count
    // tuples, each offered to one worker, exactly, per worker and merged.
    let n = case.input.len() as u64;
    let merged = sharded.snapshot();
    assert!(merged.queries[0].balances(), "{merged:?}");
    if workers > 1 && matches!(sharded.placement[0], Placement::Sharded { .. }) {
        assert!(sharded.routed(0));
        let parts: Vec<u64> = (sharded.engines.iter())
            .map(|e| e.snapshot().queries[0].offered)
            .collect();
        assert_eq!(parts.iter().sum::<u64>(), n, "{parts:?}");
        assert_eq!(merged.queries[0].offered, n);
        assert_eq!(merged.streams[0].ingested, n);
    } else {
        assert!(!sharded.routed(0));
    }
    (rows, sharded.placement[0])
}

fn sorted(mut rows: Vec<Vec<Scalar>>) -> Vec<String> {
    let mut s: Vec<String> = rows.drain(..).map(|r| format!("{r:?}")).collect();
    s.sort();
    s
}

#[test]
fn every_query_case_gives_the_same_rows_at_1_2_and_4_workers() {
    let mut dir: Vec<_> = std::fs::read_dir("tests/queries")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    dir.sort();
    let mut failures = Vec::new();
    let mut sharded_cases = 0;
    for path in &dir {
        let case = load(path);
        if case.error.is_some() {
            continue;
        }
        let expect = case
            .expect
            .as_ref()
            .expect("a case without error expects rows");
        let name = path.file_stem().unwrap().to_string_lossy();
        for bs in [1, 7, 1024] {
            let (one, _) = run(&case, bs, 1);
            if &one != expect {
                failures.push(format!("{name} (batch {bs}, 1 worker): {one:?}"));
            }
            for workers in [2, 4] {
                let (got, placed) = run(&case, bs, workers);
                let same = match placed {
                    Placement::Owner(_) => got == one,
                    Placement::Sharded { .. } => sorted(got.clone()) == sorted(one.clone()),
                };
                if matches!(placed, Placement::Sharded { .. }) && bs == 1 && workers == 2 {
                    sharded_cases += 1;
                }
                if !same {
                    failures.push(format!(
                        "{name} (batch {bs}, {workers} workers, {placed:?}):\n  got  {got:?}\n  want {one:?}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Most cases group by a key column: the sharded path is what this test exercises.
    assert!(
        sharded_cases >= 6,
        "only {sharded_cases} cases were sharded"
    );
}
