//! Query cases as data: every `tests/queries/*.yaml` gives a stream schema, input rows, a
//! query and either the exact expected result rows or an expected planning error. Each
//! case runs at batch sizes 1, 7, 64 and 1024 under every scheduler, and all runs must give
//! the same rows (the equivalence harness).
//!
//! Timestamps in input and expected rows are integers in milliseconds. Row `i` arrives at
//! `i` ms, so `PROCTIME()` windows are deterministic too.

use spillway::core::batch::Batch;
use spillway::core::engine::Engine;
use spillway::core::scheduler::SchedulerKind;
use spillway::core::schema::Scalar;
use spillway::sql::{Catalog, plan_query};

mod cases;

use cases::{Case, MS, load};

fn run(case: &Case, batch_size: usize, scheduler: SchedulerKind) -> Vec<Vec<Scalar>> {
    let mut engine = cases::engine(&case.schema, &case.sql, scheduler);
    let out_types = engine.query_plan(0).output.types();
    let types = case.schema.types();
    let mut rows = Vec::new();
    let mut collect = |engine: &mut Engine, now| {
        engine.emit(now, |e| {
            assert!(e.batch.is_consistent());
            rows.extend((0..e.batch.len()).map(|i| e.batch.row(i, &out_types)));
        })
    };
    for (c, chunk) in case.input.chunks(batch_size).enumerate() {
        let mut b = Batch::new(&types, chunk.len());
        for (k, row) in chunk.iter().enumerate() {
            b.push_row((c * batch_size + k) as i64 * MS, row);
        }
        engine.ingest(0, b);
        let now = ((c + 1) * batch_size) as i64 * MS;
        while engine.run_turn(now).is_some() {}
        engine.tick(now, |_| now);
        collect(&mut engine, now);
    }
    let end = (case.input.len() as i64 + 1) * MS;
    engine.flush(end);
    collect(&mut engine, end);
    rows
}

#[test]
fn query_cases() {
    let mut dir: Vec<_> = std::fs::read_dir("tests/queries")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    dir.sort();
    assert!(dir.len() >= 8, "query cases are missing");
    let mut failures = Vec::new();
    for path in &dir {
        let case = load(path);
        let name = path.file_stem().unwrap().to_string_lossy();
        if let Some(want) = &case.error {
            let catalog = Catalog {
                streams: vec![("s".into(), case.schema.clone())],
            };
            match plan_query(&case.sql, &catalog) {
                Ok(_) => failures.push(format!("{name}: planned, expected error `{want}`")),
                Err(e) if !e.to_string().contains(want.as_str()) => {
                    failures.push(format!("{name}: error `{e}` lacks `{want}`"))
                }
                Err(_) => {}
            }
            continue;
        }
        let expect = case.expect.as_ref().unwrap();
        for bs in [1, 7, 64, 1024] {
            for sched in [
                SchedulerKind::RoundRobin,
                SchedulerKind::LongestQueue,
                SchedulerKind::Qos,
            ] {
                let got = run(&case, bs, sched);
                if &got != expect {
                    failures.push(format!(
                        "{name} (batch {bs}, {sched:?}):\n  got  {got:?}\n  want {expect:?}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
