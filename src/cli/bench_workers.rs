//! `spillway bench --workers N`: query (b) on 1 and on N engine workers over key shards,
//! each worker a thread with its own `Engine` and its own `Router`, over the same
//! pre-generated batches, shared: every worker reads every batch and keeps the rows of its
//! shards itself, as in a live run (generation excluded from the wall time, selection
//! included). Prints the throughput of each and the line
//! `scaling: N workers = X.XXx of 1` (wall time). On a shared machine wall time measures
//! the neighbours too, so each worker's own CPU time (Linux `schedstat`) is reported as
//! well, with the scaling it implies on dedicated cores: one worker's CPU time over the
//! busiest worker's.

use std::sync::Arc;

use super::Failure;
use super::outln;
use crate::core::batch::Batch;
use crate::core::schema::Nanos;
use crate::runtime::assemble::engine_for;
use crate::runtime::clock::WallClock;
use crate::runtime::workers::{Sharded, offer};
use crate::spec::Workload;

/// Runs of each configuration; the figures are their median, the range is printed.
const RUNS: usize = 3;

/// CPU time this thread has run, ns (`/proc/thread-self/schedstat`), 0 where unknown.
fn thread_cpu() -> Nanos {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|t| t.parse().ok()))
        .unwrap_or(0)
}

/// Wall time for `workers` worker threads to run every batch through query (b) and emit,
/// the CPU time of the busiest worker and of all workers together. Every worker reads every batch (shared, as the
/// live coordinator hands them out) and keeps its own rows itself (`workers::offer`):
/// that selection is inside the wall time.
fn run(
    w: &Workload,
    batches: &[Arc<Batch>],
    workers: usize,
) -> Result<(Nanos, Nanos, Nanos), Failure> {
    let sharded = Sharded::new(workers, 64, || engine_for(w)).map_err(|e| anyhow::anyhow!(e))?;
    let clock = WallClock::start();
    let start = clock.since_start();
    let (rows, cpu, total) = std::thread::scope(|s| {
        let handles: Vec<_> = (sharded.engines.into_iter().zip(sharded.routers))
            .map(|(mut engine, mut router)| {
                s.spawn(move || {
                    let cpu = thread_cpu();
                    let mut rows = 0usize;
                    for b in batches {
                        offer(&mut engine, &mut router, 0, b);
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

/// The median and range of `RUNS` runs' wall times, and the median CPU time of the
/// busiest worker and of all workers.
fn measure(w: &Workload, batches: &[Arc<Batch>], workers: usize) -> Result<[Nanos; 5], Failure> {
    let mut t = Vec::with_capacity(RUNS);
    let mut c = Vec::with_capacity(RUNS);
    let mut all = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let (wall, cpu, total) = run(w, batches, workers)?;
        t.push(wall);
        c.push(cpu);
        all.push(total);
    }
    t.sort_unstable();
    c.sort_unstable();
    all.sort_unstable();
    Ok([t[RUNS / 2], t[0], t[RUNS - 1], c[RUNS / 2], all[RUNS / 2]])
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
    let mut median = Vec::new();
    let mut cpus = Vec::new();
    for n in [1, workers] {
        let [m, lo, hi, cpu, total] = measure(w, &batches, n)?;
        outln!(
            "(b) on {n} worker{}: {tuples} tuples, median {:.3} s = {:.1} M tuples/s (range {:.1}-{:.1} over {RUNS} runs)",
            if n == 1 { "" } else { "s" },
            m as f64 / 1e9,
            mtps(tuples, m),
            mtps(tuples, hi),
            mtps(tuples, lo),
        );
        outln!(
            "    busiest worker's own CPU time (median): {:.3} s; all workers': {:.3} s",
            cpu as f64 / 1e9,
            total as f64 / 1e9
        );
        median.push(m);
        cpus.push(cpu);
    }
    outln!(
        "scaling: {workers} workers = {:.2}x of 1",
        median[0] as f64 / median[1] as f64
    );
    if cpus[1] > 0 {
        outln!(
            "    on dedicated cores (1 worker's CPU time / the busiest of {workers}'s): {:.2}x",
            cpus[0] as f64 / cpus[1] as f64
        );
    }
    Ok(())
}
