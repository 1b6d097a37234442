//! Engine workers share one queue-memory budget (`Held::share`): under a hot key, the hot
//! worker's backlog may grow past 1/N of `engine.queue_memory` without a tuple refused
//! as queue-full, while the budget still bounds what all workers hold together.

use spillway::core::drop::DropReason;
use spillway::runtime::assemble::engine_for;
use spillway::runtime::workers::Sharded;
use spillway::runtime::workers::sim::{ShardedReport, ShardedSim, run_sharded};
use spillway::spec::{self, Workload};

/// One keyed query whose every tuple has the same key (one hot worker), on `cores`
/// simulated cores, 20 us a tuple: 50 k tuples/s on the hot worker's core.
fn workload(rate: u64, memory: &str, secs: u64) -> Workload {
    let text = format!(
        r#"name: hot
seed: 5
duration: {secs}s
engine: {{mode: simulated, workers: 4, tick: 50ms, batch_size: 256, capacity: {{cores: 4}}, queue_memory: {memory}}}
streams:
  readings:
    schema: {{sensor: int, temp: float, ts: timestamp}}
    event_time: ts
    rate: {rate}
    fields:
      sensor: {{uniform: {{min: 7, max: 7}}}}
      temp: {{normal: {{mean: 20, stddev: 6}}}}
      ts: now
queries:
  trend:
    sql: |
      SELECT sensor, COUNT(*) AS n, SUM(temp) AS total, window_start
      FROM readings GROUP BY sensor, TUMBLE(ts, INTERVAL '1' SECOND)
    cost: 20us
"#
    );
    spec::parse(&text, "hot.yaml").unwrap_or_else(|e| panic!("{e}"))
}

fn run(w: &Workload, workers: usize) -> ShardedReport {
    let sharded = Sharded::new(workers, 64, || engine_for(w)).unwrap();
    let sim = ShardedSim {
        workload: w,
        duration: w.duration.unwrap(),
        costs: w.queries.iter().map(|q| q.cost.unwrap()).collect(),
        cores: w.engine.cores,
        policy: None,
    };
    run_sharded(&sim, sharded, |_, _| {})
}

fn queue_full(r: &ShardedReport) -> Vec<u64> {
    r.workers
        .iter()
        .map(|s| s.queries[0].dropped[DropReason::QueueFull.index()])
        .collect()
}

#[test]
fn a_hot_worker_uses_the_budget_the_cold_ones_leave() {
    // 60 k tuples/s against the hot worker's 50 k: a backlog of about 10 k tuples a
    // second (about 0.3 MiB), past a quarter of 1 MiB and within the whole of it.
    let w = workload(60_000, "1MiB", 1);
    let r = run(&w, 4);
    let peaks: Vec<u64> = r.workers.iter().map(|s| s.queued_bytes_peak).collect();
    eprintln!("peaks {peaks:?}, queue-full {:?}", queue_full(&r));
    let hot = *peaks.iter().max().unwrap();
    assert!(
        hot > (1 << 20) / 4,
        "the hot worker held more than 1/4: {peaks:?}"
    );
    assert!(hot <= 1 << 20, "{peaks:?}");
    assert_eq!(
        queue_full(&r),
        vec![0; 4],
        "nothing refused within the budget"
    );
    for (k, snap) in r.workers.iter().enumerate() {
        assert!(snap.queries.iter().all(|q| q.balances()), "worker {k}");
    }
}

#[test]
fn the_shared_budget_still_bounds_the_workers_together() {
    // 120 k tuples/s: a backlog of 70 k tuples a second, far past 1 MiB: the hot worker is
    // refused (queue-full) and holds about the whole budget, not more.
    let w = workload(120_000, "1MiB", 1);
    let r = run(&w, 4);
    let full = queue_full(&r);
    let peak: u64 = r.workers.iter().map(|s| s.queued_bytes_peak).max().unwrap();
    eprintln!("peak {peak}, queue-full {full:?}");
    assert!(full.iter().sum::<u64>() > 0, "{full:?}");
    // One batch may pass the budget (an empty queue always takes one).
    assert!(peak <= (1 << 20) + 64 * 1024, "peak {peak}");
    assert!(peak > (1 << 20) / 2, "peak {peak}");
    for snap in &r.workers {
        assert!(snap.queries.iter().all(|q| q.balances()));
    }
}
