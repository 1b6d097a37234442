//! `spillway bench`, many standing queries on one stream: N filter queries that differ
//! only in their threshold on one column (about 1% of tuples each), each evaluated on its
//! own (one scan per query), then together through the stream's predicate index (issue 14,
//! item 3), next to a hand-written typed loop doing the same work (the yardstick).

use super::Failure;
use super::outln;
use crate::core::batch::{Batch, Column};
use crate::core::engine::Engine;
use crate::core::schema::Nanos;
use crate::runtime::assemble::engine_for;
use crate::runtime::clock::WallClock;
use crate::spec;

/// The temperature above which about 1% of the bench stream's tuples lie (normal, mean 20,
/// standard deviation 5: the 99th percentile is 20 + 2.326 * 5).
const P99_TEMP: f64 = 31.63;

/// A workload with `n` filter queries over the bench stream, query `i` keeping
/// `temp > P99_TEMP + i / 1000` (each about 1% of the tuples).
/// `live`: the tuples of a live run, with the default queue bounds (the pull source waits
/// for room, as a user's would); `None` for the engine benches, which feed pre-generated
/// batches into unbounded queues.
pub(super) fn many_yaml(n: usize, live: Option<u64>) -> String {
    let (bounds, count) = match live {
        Some(count) => ("", count),
        None => (", queue_capacity: 100000000, queue_memory: 64GiB", 1),
    };
    let mut y = format!(
        "name: bench-many-queries\nseed: 7\nengine: {{batch_size: 1024{bounds}, \
         max_queries: {n}}}\nstreams:\n  readings:\n    schema: {{sensor: int, \
         temp: float, ts: timestamp}}\n    event_time: ts\n    rate: unlimited\n    count: {count}\n    \
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

/// Runs `n` threshold queries (through the predicate index if `shared`) over the first
/// `tuples` tuples of `batches`, draining every queue after each batch; returns the
/// elapsed time, the rows produced and the tuples taken.
fn run_many(
    n: usize,
    batches: &[Batch],
    tuples: u64,
    clock: &WallClock,
    shared: bool,
) -> Result<(Nanos, u64, u64), Failure> {
    let w = spec::parse(&many_yaml(n, None), "<bench>").map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut engine = engine_for(&w).map_err(|e| anyhow::anyhow!(e))?;
    engine.set_share_min(if shared { 1 } else { usize::MAX });
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
    let (elapsed, rows) = drain_timed(&mut engine, copies, clock);
    Ok((elapsed, rows, taken))
}

/// Ingests each batch into stream 0 of `engine` and runs every turn it makes, then flushes:
/// the wall time this took and the result rows emitted (the timed part of the engine
/// benches that feed pre-generated batches to one stream).
pub(super) fn drain_timed(
    engine: &mut Engine,
    copies: Vec<Batch>,
    clock: &WallClock,
) -> (Nanos, u64) {
    let mut rows = 0u64;
    let start = clock.since_start();
    for b in copies {
        engine.ingest(0, b);
        while engine.run_turn(0).is_some() {}
        engine.emit(0, |e| rows += e.batch.len() as u64);
    }
    engine.flush(0);
    engine.emit(0, |e| rows += e.batch.len() as u64);
    (clock.since_start() - start, rows)
}

/// `n` threshold queries run live end to end, shared, over `tuples` tuples from a pull
/// generator at an unlimited rate: what a user meets. A member that falls behind gathers
/// its matching rows into fewer, larger batches (`InputQueue::coalesce`), which draining
/// every queue after each batch (`run_many`) never lets happen. Returns the elapsed time,
/// the rows produced and the tuples taken.
/// Also returns the worst query's whole-run p99 latency.
fn live_many(n: usize, tuples: u64) -> Result<((Nanos, u64, u64), Nanos), Failure> {
    let w =
        spec::parse(&many_yaml(n, Some(tuples)), "<bench>").map_err(|e| anyhow::anyhow!("{e}"))?;
    let r = super::bench::run_live(&w)?;
    let rows = r.snapshot.queries.iter().map(|q| q.results).sum();
    let p99 = r.snapshot.queries.iter().map(|q| q.p99).max().unwrap_or(0);
    Ok(((r.elapsed, rows, tuples), p99))
}

/// The typed loop for `n` threshold queries: per tuple, a binary search of the sorted
/// thresholds, then the row copied to each matching query's output (cleared per batch, as
/// an emit would). Returns the elapsed time and the rows produced.
fn typed_many(n: usize, batches: &[Batch], tuples: u64, clock: &WallClock) -> (Nanos, u64, u64) {
    let thresholds: Vec<f64> = (0..n).map(|i| P99_TEMP + i as f64 / 1000.0).collect();
    let mut out: Vec<Vec<(i64, f64, i64)>> = vec![Vec::new(); n];
    let (mut rows, mut taken) = (0u64, 0u64);
    let start = clock.since_start();
    for b in batches {
        if taken >= tuples {
            break;
        }
        taken += b.len() as u64;
        let (Column::Int(sensor), Column::Float(temp), Column::Int(ts)) =
            (&b.columns[0], &b.columns[1], &b.columns[2])
        else {
            unreachable!("bench schema")
        };
        for i in 0..b.len() {
            let k = thresholds.partition_point(|&c| c < temp[i]);
            for o in &mut out[..k] {
                o.push((sensor[i], temp[i], ts[i]));
            }
        }
        for o in &mut out {
            rows += o.len() as u64;
            std::hint::black_box(o.as_slice());
            o.clear();
        }
    }
    (clock.since_start() - start, rows, taken)
}

fn line(what: &str, (elapsed, rows, taken): (Nanos, u64, u64)) -> f64 {
    let secs = elapsed as f64 / 1e9;
    let rate = taken as f64 / secs / 1e6;
    outln!(
        "{what}: {taken} tuples in {secs:.3} s = {rate:.2} M tuples/s ({:.1} ns/tuple, {:.2} rows per tuple)",
        elapsed as f64 / taken as f64,
        rows as f64 / taken as f64
    );
    rate
}

/// Prints the many-queries lines: for 100 and 1000 queries, the typed loop, the engine with
/// the predicate index, and the engine with one scan per query (over a tenth of the tuples
/// for 100 queries, a hundredth for 1000: each query scans every tuple there).
pub fn bench_many(batches: &[Batch], tuples: u64, clock: &WallClock) -> Result<(), Failure> {
    for (n, shared_share, share) in [(100usize, 1u64, 10u64), (1000, 4, 100)] {
        let shared_tuples = (tuples / shared_share).max(1);
        let typed = line(
            &format!("typed loop, {n} thresholds by binary search (yardstick)"),
            typed_many(n, batches, shared_tuples, clock),
        );
        let shared = line(
            &format!(
                "(d) engine, {n} filter queries on one column, ~1% selectivity each, shared (predicate index)"
            ),
            run_many(n, batches, shared_tuples, clock, true)?,
        );
        outln!(
            "    shared evaluation runs at {:.2}x the typed loop's rate",
            shared / typed
        );
        let (live, p99) = live_many(n, shared_tuples)?;
        line(
            &format!("(d) live end to end, {n} filter queries, shared, generator unlimited"),
            live,
        );
        outln!(
            "    worst query's whole-run p99 latency {:.1} ms",
            p99 as f64 / 1e6
        );
        line(
            &format!(
                "(d) engine, {n} filter queries on one column, ~1% selectivity each, unshared"
            ),
            run_many(n, batches, (tuples / share).max(1), clock, false)?,
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printed_live_workload_has_the_queries_and_tuples_asked_for() {
        let w = spec::parse(&many_yaml(3, Some(1234)), "<bench>").expect("valid workload");
        assert_eq!(w.queries.len(), 3);
        assert!(
            w.queries[2].sql.ends_with("temp > 31.632"),
            "{}",
            w.queries[2].sql
        );
        let crate::spec::SourceKind::Generator(g) = &w.streams[0].source.kind else {
            panic!("a generated stream")
        };
        assert_eq!(g.count, Some(1234));
    }
}
