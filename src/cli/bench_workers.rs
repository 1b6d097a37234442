//! `spillway bench --workers N`: query (b) on 1 and on N engine workers over key shards,
//! each worker a thread with its own `Engine`, over the same pre-generated batches, split
//! by shard before the workers as a source would (generation and split excluded from the
//! wall time; the split's own time is printed). Prints the throughput of each and the line
//! `scaling: N workers = X.XXx of 1` (wall time). On a shared machine wall time measures
//! the neighbours too, so each worker's own CPU time (Linux `schedstat`) is reported as
//! well, with the scaling it implies on dedicated cores: one worker's CPU time over the
//! busiest worker's.

use std::sync::Arc;

use super::Failure;
use super::outln;
use crate::core::batch::Batch;
use crate::core::schema::Nanos;
use crate::core::shard::RoutedTime;
use crate::runtime::assemble::engine_for;
use crate::runtime::clock::WallClock;
use crate::runtime::workers::Sharded;
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

/// Each worker's input: its rows of each batch when stream 0 is routed by shard (split
/// here, as a source would, before the workers), else every batch whole.
type Inputs = Vec<Vec<(Arc<Batch>, Option<Arc<RoutedTime>>)>>;

/// Splits `batches` for the workers of `sharded`, and the CPU time that took (this
/// thread's; the wall time would measure the neighbours too).
fn split(sharded: &mut Sharded, batches: &[Arc<Batch>]) -> (Inputs, Nanos) {
    let n = sharded.workers();
    let cpu = thread_cpu();
    let mut inputs: Inputs = vec![Vec::with_capacity(batches.len()); n];
    for b in batches {
        match sharded.router.split(0, b) {
            Some(parts) => {
                for (input, (b, t)) in inputs.iter_mut().zip(parts) {
                    input.push((Arc::new(b), Some(Arc::new(t))));
                }
            }
            None => inputs
                .iter_mut()
                .for_each(|i| i.push((Arc::clone(b), None))),
        }
    }
    (inputs, thread_cpu() - cpu)
}

/// Wall time for `workers` worker threads to run every batch through query (b) and emit,
/// the CPU time of the busiest worker, and the time splitting the batches took (not in
/// the wall time: the batches are pre-generated, and split as the source would).
fn run(
    w: &Workload,
    batches: &[Arc<Batch>],
    workers: usize,
) -> Result<(Nanos, Nanos, Nanos), Failure> {
    let mut sharded =
        Sharded::new(workers, 64, || engine_for(w)).map_err(|e| anyhow::anyhow!(e))?;
    let (inputs, split_ns) = if workers > 1 {
        split(&mut sharded, batches)
    } else {
        (
            vec![batches.iter().map(|b| (Arc::clone(b), None)).collect()],
            0,
        )
    };
    let clock = WallClock::start();
    let start = clock.since_start();
    let (rows, cpu) = std::thread::scope(|s| {
        let handles: Vec<_> = (sharded.engines.into_iter().zip(inputs))
            .map(|(mut engine, input)| {
                s.spawn(move || {
                    let cpu = thread_cpu();
                    let mut rows = 0usize;
                    for (b, t) in input {
                        engine.ingest_routed(0, b, t);
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
            .fold((0, 0), |(r, c), (rows, cpu)| (r + rows, c.max(cpu)))
    });
    let elapsed = clock.since_start() - start;
    std::hint::black_box(rows);
    Ok((elapsed, cpu, split_ns))
}

/// The median and range of `RUNS` runs' wall times, the median busiest-worker CPU time,
/// and the median time the split took.
fn measure(w: &Workload, batches: &[Arc<Batch>], workers: usize) -> Result<[Nanos; 5], Failure> {
    let mut t = Vec::with_capacity(RUNS);
    let mut c = Vec::with_capacity(RUNS);
    let mut sp = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let (wall, cpu, split) = run(w, batches, workers)?;
        t.push(wall);
        c.push(cpu);
        sp.push(split);
    }
    t.sort_unstable();
    c.sort_unstable();
    sp.sort_unstable();
    Ok([t[RUNS / 2], t[0], t[RUNS - 1], c[RUNS / 2], sp[RUNS / 2]])
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
        let [m, lo, hi, cpu, split] = measure(w, &batches, n)?;
        outln!(
            "(b) on {n} worker{}: {tuples} tuples, median {:.3} s = {:.1} M tuples/s (range {:.1}-{:.1} over {RUNS} runs)",
            if n == 1 { "" } else { "s" },
            m as f64 / 1e9,
            mtps(tuples, m),
            mtps(tuples, hi),
            mtps(tuples, lo),
        );
        outln!(
            "    busiest worker's own CPU time (median): {:.3} s",
            cpu as f64 / 1e9
        );
        if split > 0 {
            outln!(
                "    split by shard before the workers (once, as the source would; not in the wall time), CPU time: {:.3} s",
                split as f64 / 1e9
            );
        }
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
