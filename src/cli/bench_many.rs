//! `spillway bench`, many standing queries on one stream: N filter queries that differ
//! only in their threshold on one column (about 1% of tuples each), each evaluated on its
//! own today (one scan per query). The yardstick for shared evaluation (issue 14, item 3).

use super::Failure;
use super::outln;
use crate::core::batch::Batch;
use crate::core::schema::Nanos;
use crate::runtime::assemble::engine_for;
use crate::runtime::clock::WallClock;
use crate::spec;

/// The temperature above which about 1% of the bench stream's tuples lie (normal, mean 20,
/// standard deviation 5: the 99th percentile is 20 + 2.326 * 5).
const P99_TEMP: f64 = 31.63;

/// A workload with `n` filter queries over the bench stream, query `i` keeping
/// `temp > P99_TEMP + i / 1000` (each about 1% of the tuples).
fn many_yaml(n: usize) -> String {
    let mut y = format!(
        "name: bench-many-queries\nseed: 7\nengine: {{batch_size: 1024, queue_capacity: \
         100000000, max_queries: {n}}}\nstreams:\n  readings:\n    schema: {{sensor: int, \
         temp: float, ts: timestamp}}\n    event_time: ts\n    rate: unlimited\n    count: 1\n    \
         fields:\n      sensor: {{uniform: {{min: 0, max: 999}}}}\n      temp: {{normal: {{mean: \
         20, stddev: 5}}}}\n      ts: {{sequence: {{start: 0, step: 1us}}}}\nqueries:\n"
    );
    for i in 0..n {
        let t = P99_TEMP + i as f64 / 1000.0;
        y.push_str(&format!(
            "  q{i}:\n    sql: \"SELECT sensor, temp, ts FROM readings WHERE temp > {t:.3}\"\n    \
             sink: none\n"
        ));
    }
    y
}

/// Runs `n` threshold queries over the first `tuples` tuples of `batches`, draining every
/// queue after each batch; returns the elapsed time and the rows produced.
fn run_many(
    n: usize,
    batches: &[Batch],
    tuples: u64,
    clock: &WallClock,
) -> Result<(Nanos, u64, u64), Failure> {
    let w = spec::parse(&many_yaml(n), "<bench>").map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut engine = engine_for(&w).map_err(|e| anyhow::anyhow!(e))?;
    let mut taken = 0u64;
    let copies: Vec<Batch> = batches
        .iter()
        .take_while(|b| {
            let go = taken < tuples;
            taken += b.len() as u64;
            go
        })
        .cloned()
        .collect();
    let mut rows = 0u64;
    let start = clock.since_start();
    for b in copies {
        engine.ingest(0, b);
        while engine.run_turn(0).is_some() {}
        engine.emit(0, |e| rows += e.batch.len() as u64);
    }
    engine.flush(0);
    engine.emit(0, |e| rows += e.batch.len() as u64);
    Ok((clock.since_start() - start, rows, taken))
}

/// Prints the many-queries lines: 100 queries over a tenth of the tuples, 1000 over a
/// hundredth (each query scans every tuple today).
pub fn bench_many(batches: &[Batch], tuples: u64, clock: &WallClock) -> Result<(), Failure> {
    for (n, share) in [(100usize, 10u64), (1000, 100)] {
        let (elapsed, rows, taken) = run_many(n, batches, (tuples / share).max(1), clock)?;
        let secs = elapsed as f64 / 1e9;
        outln!(
            "(d) engine, {n} filter queries on one column, ~1% selectivity each, unshared: \
             {taken} tuples in {secs:.3} s = {:.2} M tuples/s ({:.1} ns/tuple, {:.2} rows per tuple)",
            taken as f64 / secs / 1e6,
            elapsed as f64 / taken as f64,
            rows as f64 / taken as f64
        );
    }
    Ok(())
}
