//! `spillway bench --workers N`: query (b) on 1 and on N engine workers over key shards,
//! each worker a thread with its own `Engine`, over the same pre-generated batches: one
//! worker ingests them whole (shared), N workers ingest the parts the run's `Router` split
//! them into, joined into batches as the live coordinator joins them when its sources have
//! batches ready (`route::Coalesce`). Generation and the split are source and
//! coordinator work, on their own threads live: both are excluded from the workers' wall
//! time, and the split's own throughput on one thread is printed. Prints the throughput of
//! each and the line `scaling: N workers = X.XXx of 1` (wall time). On a shared machine wall time measures
//! the neighbours too, so each worker's own CPU time (Linux `schedstat`) is reported as
//! well, with the scaling it implies on dedicated cores: one worker's CPU time over the
//! busiest worker's.

use std::sync::Arc;

use super::Failure;
use super::outln;
use crate::core::batch::Batch;
use crate::core::schema::Nanos;
use crate::core::shard::{DEFAULT_SHARDS, RoutedTime};
use crate::runtime::assemble::engine_for;
use crate::runtime::clock::WallClock;
use crate::runtime::workers::Sharded;
use crate::runtime::workers::route::Coalesce;
use crate::spec::Workload;

/// What one worker ingests, in order: a whole batch (shared) or its part of one.
enum Item {
    Whole(Arc<Batch>),
    Part(Arc<Batch>, Arc<RoutedTime>),
}

/// Runs of each configuration, alternated; the figures are their median, the range is printed.
const RUNS: usize = 5;

/// CPU time this thread has run, ns (`/proc/thread-self/schedstat`), 0 where unknown.
fn thread_cpu() -> Nanos {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|t| t.parse().ok()))
        .unwrap_or(0)
}

/// Query (b)'s engines for `workers` workers over the default shards, as `run` makes them.
fn sharded(w: &Workload, workers: usize) -> Result<Sharded, Failure> {
    Ok(Sharded::new(workers, DEFAULT_SHARDS, || engine_for(w)).map_err(|e| anyhow::anyhow!(e))?)
}

/// Each worker's input: `batches` whole for one worker, else its parts as the live
/// coordinator sends them when its source has batches ready (the input outruns it, as
/// here): split by the run's router and joined into parts of a batch's size (`Coalesce`),
/// in order.
fn inputs(w: &Workload, batches: &[Arc<Batch>], workers: usize) -> Result<Vec<Vec<Item>>, Failure> {
    let mut sharded = sharded(w, workers)?;
    let mut items: Vec<Vec<Item>> = (0..workers)
        .map(|_| Vec::with_capacity(batches.len()))
        .collect();
    let mut join = Coalesce::new(&sharded.router, 0, w.engine.batch_size);
    for b in batches {
        let joined = join.add(&mut sharded.router, b, |k, p| {
            items[k].push(Item::Part(Arc::new(p.batch), Arc::new(p.time)))
        });
        if !joined {
            items
                .iter_mut()
                .for_each(|m| m.push(Item::Whole(Arc::clone(b))));
        }
    }
    join.drain(&sharded.router, |k, p| {
        items[k].push(Item::Part(Arc::new(p.batch), Arc::new(p.time)))
    });
    Ok(items)
}

/// The time the router takes to split and join every batch into `workers` workers' parts
/// on this thread, as `inputs` does, each part dropped once made (live, a worker frees it
/// once ingested).
fn split_time(w: &Workload, batches: &[Arc<Batch>], workers: usize) -> Result<Nanos, Failure> {
    let mut sharded = sharded(w, workers)?;
    let mut join = Coalesce::new(&sharded.router, 0, w.engine.batch_size);
    let clock = WallClock::start();
    let start = clock.since_start();
    let mut rows = 0usize;
    for b in batches {
        join.add(&mut sharded.router, b, |_, p| rows += p.batch.len());
    }
    join.drain(&sharded.router, |_, p| rows += p.batch.len());
    std::hint::black_box(rows);
    Ok(clock.since_start() - start)
}

/// Wall time for `workers` worker threads to run their `items` through query (b) and emit,
/// the CPU time of the busiest worker and of all workers together.
fn run(
    w: &Workload,
    items: &[Vec<Item>],
    workers: usize,
) -> Result<(Nanos, Nanos, Nanos), Failure> {
    let sharded = sharded(w, workers)?;
    let clock = WallClock::start();
    let start = clock.since_start();
    let (rows, cpu, total) = std::thread::scope(|s| {
        let handles: Vec<_> = (sharded.engines.into_iter().zip(items))
            .map(|(mut engine, mine)| {
                s.spawn(move || {
                    let cpu = thread_cpu();
                    let mut rows = 0usize;
                    for item in mine {
                        match item {
                            Item::Whole(b) => engine.ingest_shared(0, Arc::clone(b)),
                            Item::Part(b, t) => {
                                engine.ingest_routed(0, Arc::clone(b), Some(Arc::clone(t)))
                            }
                        }
                        while engine.run_turn(0).is_some() {}
                        engine.emit(0, |e| rows += e.batch.len());
                    }
                    engine.flush(0);
                    engine.emit(0, |e| rows += e.batch.len());
                    (rows, thread_cpu() - cpu)
                })
            })
            .collect();
        (handles.into_iter().map(|h| h.join().unwrap_or((0, 0))))
            .fold((0, 0, 0), |(r, c, t), (rows, cpu)| {
                (r + rows, c.max(cpu), t + cpu)
            })
    });
    let elapsed = clock.since_start() - start;
    std::hint::black_box(rows);
    Ok((elapsed, cpu, total))
}

/// Wall, busiest worker's CPU and all workers' CPU time of each run.
type Runs = Vec<(Nanos, Nanos, Nanos)>;

fn median(mut v: Vec<Nanos>) -> Nanos {
    v.sort_unstable();
    v[v.len() / 2]
}

fn mtps(tuples: u64, ns: Nanos) -> f64 {
    tuples as f64 / (ns as f64 / 1e9) / 1e6
}

/// Query (b) over `batches` on 1 and `workers` workers.
pub fn scaling(
    w: &Workload,
    batches: Vec<Batch>,
    tuples: u64,
    workers: usize,
) -> Result<(), Failure> {
    let batches: Vec<Arc<Batch>> = batches.into_iter().map(Arc::new).collect();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(String::from))
        .unwrap_or_else(|| "unknown".into());
    outln!("{cores} cores available, load average {load} (1 min) before the runs");
    let items = inputs(w, &batches, 1)?;
    let parts = inputs(w, &batches, workers)?;
    let split = split_time(w, &batches, workers)?;
    outln!(
        "split into {workers} parts by the router (the live coordinator's work, one thread, outside the workers' time): {:.1} M tuples/s ({:.1} ns/tuple)",
        mtps(tuples, split.max(1)),
        split as f64 / tuples as f64
    );
    // Alternated, so that a slow spell of the machine weighs on both alike.
    let (mut one, mut many): (Runs, Runs) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        one.push(run(w, &items, 1)?);
        many.push(run(w, &parts, workers)?);
    }
    for (n, runs) in [(1, &one), (workers, &many)] {
        let walls: Vec<Nanos> = runs.iter().map(|r| r.0).collect();
        let (lo, hi) = (walls.iter().min(), walls.iter().max());
        let m = median(walls.clone());
        outln!(
            "(b) on {n} worker{}: {tuples} tuples, median {:.3} s = {:.1} M tuples/s (range {:.1}-{:.1} over {RUNS} runs)",
            if n == 1 { "" } else { "s" },
            m as f64 / 1e9,
            mtps(tuples, m),
            mtps(tuples, *hi.unwrap_or(&m)),
            mtps(tuples, *lo.unwrap_or(&m)),
        );
        outln!(
            "    busiest worker's own CPU time (median): {:.3} s; all workers': {:.3} s",
            median(runs.iter().map(|r| r.1).collect()) as f64 / 1e9,
            median(runs.iter().map(|r| r.2).collect()) as f64 / 1e9
        );
    }
    let pairs: Vec<f64> = (one.iter().zip(&many))
        .map(|(a, b)| a.0 as f64 / b.0 as f64)
        .collect();
    let lo = pairs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = pairs.iter().copied().fold(0.0, f64::max);
    let wall = |r: &Runs| median(r.iter().map(|x| x.0).collect()) as f64;
    outln!(
        "scaling: {workers} workers = {:.2}x of 1 (medians; run pairs {lo:.2}-{hi:.2}x)",
        wall(&one) / wall(&many)
    );
    let cpu = |r: &Runs| median(r.iter().map(|x| x.1).collect()) as f64;
    if cpu(&many) > 0.0 {
        outln!(
            "    on dedicated cores (1 worker's CPU time / the busiest of {workers}'s): {:.2}x",
            cpu(&one) / cpu(&many)
        );
    }
    Ok(())
}
