//! `spillway bench`: engine throughput on pre-generated batches (generator cost excluded),
//! a hand-written typed loop as the yardstick, and the same query end to end in live mode.

use std::process::ExitCode;

use clap::Args;
use rustc_hash::FxHashMap;

use super::Failure;
use super::bench_watched::{DEFAULT_TICK, Watch, engine_run, engine_run_exported, observed_run};
use super::outln;
use crate::core::batch::{Batch, Column};
use crate::core::drop::{DropPoint, DropRule, ValueBins};
use crate::core::schema::Nanos;
use crate::runtime::clock::WallClock;
use crate::runtime::observe::Observers;
use crate::spec::{self, Workload};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Tuples per measurement.
    #[arg(long, default_value_t = 10_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub tuples: u64,
    /// Tuples per batch.
    #[arg(long, default_value_t = 1024, value_parser = parse_batch_size)]
    pub batch_size: usize,
    /// Only measure query (b) on 1 and on this many engine workers over key shards, and
    /// print `scaling: N workers = X.XXx of 1`.
    #[arg(long, value_parser = clap::value_parser!(u16).range(2..=64))]
    pub workers: Option<u16>,
    /// Only measure the many-queries lines (100 and 1000 filter queries on one stream:
    /// typed loop, shared, unshared).
    #[arg(long)]
    pub many: bool,
    /// Print the workload the many-queries live lines run, with this many threshold
    /// queries over `--tuples` tuples, and exit (run it with `spillway run`).
    #[arg(long, value_name = "QUERIES", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub print_many: Option<u32>,
    /// Only measure the string lines (projection, equality filter, GROUP BY and shared
    /// equality queries on a string column).
    #[arg(long)]
    pub strings: bool,
    /// Only measure the sliding-window line (b') against (b), alternated this many times,
    /// and print the medians and `sliding: (b') = X.XXx (b)'s cost per tuple` (issue
    /// 14's goal: 3x).
    #[arg(long, value_name = "RUNS", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub sliding: Option<u32>,
    /// Only measure the JSON-lines sink: formatting `--tuples` result rows (an int key, a
    /// count, a float sum, a timestamp) into memory, in ns a row.
    #[arg(long)]
    pub sink: bool,
}

fn parse_batch_size(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=1 << 20).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` is not a batch size: use 1 to 1048576")),
    }
}

const FILTER_SQL: &str = "SELECT sensor, temp, ts FROM readings WHERE temp > -1000.0";
pub(super) const AGG_SQL: &str = "SELECT sensor, COUNT(*) AS n, SUM(temp) AS total, AVG(temp) AS mean \
     FROM readings WHERE temp > 0.0 GROUP BY sensor, TUMBLE(ts, INTERVAL '1' SECOND)";
/// Query (b) over sliding windows: 100 windows of 1 s, one every 10 ms, on arrival time.
const HOP_SQL: &str = "SELECT sensor, COUNT(*) AS n, SUM(temp) AS total, AVG(temp) AS mean \
     FROM readings WHERE temp > 0.0 \
     GROUP BY sensor, HOP(PROCTIME(), INTERVAL '10' MILLISECOND, INTERVAL '1' SECOND)";

/// The benchmark stream: 1000 sensor keys, normal temperatures, event time 1 µs apart.
pub(super) fn workload_yaml(tuples: u64, batch_size: usize, sql: &str) -> String {
    format!(
        r#"name: bench-end-to-end
seed: 7
engine: {{batch_size: {batch_size}, queue_capacity: 100000000, queue_memory: 64GiB}}
streams:
  readings:
    schema: {{sensor: int, temp: float, ts: timestamp}}
    event_time: ts
    rate: unlimited
    count: {tuples}
    fields:
      sensor: {{uniform: {{min: 0, max: 999}}}}
      temp: {{normal: {{mean: 20, stddev: 5}}}}
      ts: {{sequence: {{start: 0, step: 1us}}}}
queries:
  agg:
    sql: "{sql}"
    sink: none
"#
    )
}

pub fn bench(args: BenchArgs) -> Result<ExitCode, Failure> {
    if let Some(n) = args.print_many {
        print!(
            "{}",
            super::bench_many::many_yaml(n as usize, Some(args.tuples))
        );
        return Ok(ExitCode::SUCCESS);
    }
    if args.sink {
        super::bench_sink::bench_sink(args.tuples);
        return Ok(ExitCode::SUCCESS);
    }
    if args.strings {
        let clock = WallClock::start();
        super::bench_strings::bench_strings(args.tuples, args.batch_size, &clock)?;
        return Ok(ExitCode::SUCCESS);
    }
    let yaml = workload_yaml(args.tuples, args.batch_size, AGG_SQL);
    let w = spec::parse(&yaml, "<bench>").map_err(|e| Failure::Other(anyhow::anyhow!("{e}")))?;
    eprintln!(
        "generating {} tuples in batches of {} ...",
        args.tuples, args.batch_size
    );
    let clock = WallClock::start();
    let start = clock.since_start();
    let batches = pregenerate(&w, args.tuples, args.batch_size);
    let generation = clock.since_start() - start;
    if let Some(n) = args.workers {
        super::bench_workers::scaling(&w, batches, args.tuples, n as usize)?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.many {
        super::bench_many::bench_many(&batches, args.tuples, &clock)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(runs) = args.sliding {
        sliding(&batches, args.tuples, runs, &clock)?;
        return Ok(ExitCode::SUCCESS);
    }

    let typed = typed_loop(&batches, &clock);
    report(
        "typed loop, filter + tumbling GROUP BY (yardstick)",
        args.tuples,
        typed,
    );
    let a = engine_run(FILTER_SQL, &batches, &clock, Watch::Nothing)?;
    report("(a) engine, filter pass-through", args.tuples, a);
    let b = engine_run(AGG_SQL, &batches, &clock, Watch::Nothing)?;
    report(
        "(b) engine, filter + tumbling GROUP BY 1000 keys, COUNT/SUM/AVG",
        args.tuples,
        b,
    );
    let bm = engine_run(AGG_SQL, &batches, &clock, Watch::Monitor)?;
    report(
        "(b) again with turn timing and the QoS monitor ticking every 100 ms",
        args.tuples,
        bm,
    );
    let hop = engine_run(HOP_SQL, &batches, &clock, Watch::Nothing)?;
    report(
        "(b') engine, query (b) over HOP(PROCTIME(), 10 ms, 1 s): 100 windows per tuple",
        args.tuples,
        hop,
    );
    outln!(
        "    sliding costs {:.1}x the tumbling query per tuple",
        hop as f64 / b as f64
    );
    let cost = 100.0 * (1.0 - b as f64 / bm as f64);
    if cost.abs() < 1.0 {
        outln!("    the monitor costs {cost:.1}% of throughput (within run-to-run noise)");
    } else {
        outln!("    the monitor costs {cost:.1}% of throughput");
    }
    // Observers cost per control tick, not per tuple: time them directly, over many
    // ticks (a 10 ms tick here), as a share of the default 100 ms tick.
    let bo = observed_run(AGG_SQL, &batches, &clock)?;
    report(
        "(b) again with the monitor and three observers (status, event log, tick recorder)",
        args.tuples,
        bo.elapsed,
    );
    outln!(
        "    the three observers take {:.1} us per tick on the engine thread over {} ticks: {:.3}% of a 100 ms tick (budget: 3%)",
        bo.per_tick() / 1e3,
        bo.ticks,
        100.0 * bo.per_tick() / DEFAULT_TICK as f64
    );
    let (bx, render) = engine_run_exported(&batches, &clock)?;
    report(
        "(b) again with the monitor and the Prometheus exporter, rendered every second",
        args.tuples,
        bx.elapsed,
    );
    outln!(
        "    the exporter takes {:.1} us per tick on the engine thread over {} ticks: {:.3}% of a 100 ms tick (budget: 3%); a /metrics render takes {:.0} us on its own thread",
        bx.per_tick() / 1e3,
        bx.ticks,
        100.0 * bx.per_tick() / DEFAULT_TICK as f64,
        render / 1e3
    );
    let random = drop_cost(&batches, DropRule::Random { keep: 0.5 }, &clock);
    report("drop decision, random keep 0.5", args.tuples, random);
    let semantic = drop_cost(
        &batches,
        DropRule::Semantic(ValueBins {
            column: 1,
            lo: 0.0,
            hi: 40.0,
            width: 40.0 / 32.0,
            keep: (0..34)
                .map(|i| {
                    if i < 17 {
                        0.0
                    } else if i == 17 {
                        0.5
                    } else {
                        1.0
                    }
                })
                .collect(),
        }),
        &clock,
    );
    report("drop decision, semantic 32 bins", args.tuples, semantic);
    super::bench_many::bench_many(&batches, args.tuples, &clock)?;
    drop(batches);

    let r = run_live(&w)?;
    report(
        "(c) live end to end, generator unlimited, query (b)",
        args.tuples,
        r.elapsed,
    );
    let hop_yaml = workload_yaml(args.tuples, args.batch_size, HOP_SQL);
    let hop_w =
        spec::parse(&hop_yaml, "<bench>").map_err(|e| Failure::Other(anyhow::anyhow!("{e}")))?;
    let rh = run_live(&hop_w)?;
    report(
        "(c') live end to end, generator unlimited, query (b') (HOP 10 ms / 1 s)",
        args.tuples,
        rh.elapsed,
    );
    report(
        "    generator alone, same thread count as (c)'s source: the ceiling for (c)",
        args.tuples,
        generation,
    );
    super::bench_ingest::bench_ingest(args.tuples / 5)?;
    super::bench_nexmark::bench_nexmark(args.tuples, args.batch_size)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `w` live end to end without shedding and without observers (the benches' live lines).
pub(super) fn run_live(w: &Workload) -> Result<crate::runtime::observe::RunSummary, Failure> {
    let engine = crate::runtime::assemble::engine_for(w).map_err(|e| anyhow::anyhow!(e))?;
    Ok(crate::runtime::assemble::run_headless(
        w,
        engine,
        crate::spec::Policy::none(),
        None,
        &mut Observers::default(),
    )?)
}

/// (b) and (b') alternated `runs` times: their medians and the ratio of their costs.
fn sliding(batches: &[Batch], tuples: u64, runs: u32, clock: &WallClock) -> Result<(), Failure> {
    let (mut b, mut hop) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        b.push(engine_run(AGG_SQL, batches, clock, Watch::Nothing)?);
        hop.push(engine_run(HOP_SQL, batches, clock, Watch::Nothing)?);
    }
    let median = |v: &mut Vec<Nanos>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let (mb, mh) = (median(&mut b), median(&mut hop));
    let ns = |v: &[Nanos]| {
        let f = |x: Nanos| x as f64 / tuples as f64;
        format!("{:.1}-{:.1}", f(v[0]), f(v[v.len() - 1]))
    };
    report("(b) median", tuples, mb);
    report("(b') median", tuples, mh);
    outln!(
        "sliding: (b') = {:.2}x (b)'s cost per tuple ({runs} runs each: (b) {} ns/tuple, (b') {} ns/tuple)",
        mh as f64 / mb.max(1) as f64,
        ns(&b),
        ns(&hop)
    );
    Ok(())
}

fn report(what: &str, tuples: u64, elapsed: Nanos) {
    let secs = elapsed as f64 / 1e9;
    outln!(
        "{what}: {tuples} tuples in {secs:.3} s = {:.1} M tuples/s ({:.1} ns/tuple)",
        tuples as f64 / secs / 1e6,
        elapsed as f64 / tuples as f64
    );
}

pub(super) fn pregenerate(w: &Workload, tuples: u64, batch_size: usize) -> Vec<Batch> {
    let s = &w.streams[0];
    let g = s.generator().expect("the bench stream is generated");
    let mut g = crate::generator::StreamGenerator::new(&s.schema, g.fields.clone(), g.seed);
    let types = s.schema.types();
    let mut out = Vec::new();
    let mut left = tuples;
    let mut t = 0;
    while left > 0 {
        let n = left.min(batch_size as u64) as usize;
        let mut b = Batch::new(&types, n);
        g.fill(&mut b, n, t, 1_000);
        t += n as i64 * 1_000;
        left -= n as u64;
        out.push(b);
    }
    out
}

/// Cost of one drop decision: a drop point applying `rule` to every batch.
fn drop_cost(batches: &[Batch], rule: DropRule, clock: &WallClock) -> Nanos {
    let mut point = DropPoint::new(1);
    point.install(rule);
    let mut sel = Vec::with_capacity(1024);
    let mut kept = 0usize;
    let start = clock.since_start();
    for b in batches {
        if point.apply(b, &mut sel).is_some() {
            kept += sel.len();
        }
    }
    std::hint::black_box(kept);
    clock.since_start() - start
}

/// What a programmer would write by hand for query (b): the yardstick for the engine.
fn typed_loop(batches: &[Batch], clock: &WallClock) -> Nanos {
    let start = clock.since_start();
    let mut groups: FxHashMap<(i64, i64), (i64, f64)> = FxHashMap::default();
    let mut emitted = 0usize;
    let mut current = i64::MIN;
    for b in batches {
        let (Column::Int(sensor), Column::Float(temp), Column::Int(ts)) =
            (&b.columns[0], &b.columns[1], &b.columns[2])
        else {
            unreachable!("bench schema")
        };
        for i in 0..b.len() {
            if temp[i] > 0.0 {
                let w = ts[i].div_euclid(1_000_000_000);
                if w > current {
                    emitted += groups.len();
                    groups.clear();
                    current = w;
                }
                let g = groups.entry((w, sensor[i])).or_insert((0, 0.0));
                g.0 += 1;
                g.1 += temp[i];
            }
        }
    }
    std::hint::black_box((emitted, groups.len()));
    clock.since_start() - start
}
