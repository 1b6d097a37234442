//! `spillway bench`: engine throughput on pre-generated batches (generator cost excluded),
//! a hand-written typed loop as the yardstick, and the same query end to end in live mode.

use std::process::ExitCode;

use clap::Args;
use rustc_hash::FxHashMap;

use super::Failure;
use super::outln;
use crate::core::batch::{Batch, Column};
use crate::core::drop::{DropPoint, DropRule, ValueBins};
use crate::core::schema::Nanos;
use crate::runtime::assemble::engine_for;
use crate::runtime::clock::WallClock;
use crate::runtime::control::Controller;
use crate::runtime::observe::Observers;
use crate::spec::{self, Policy, Workload};

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Tuples per measurement.
    #[arg(long, default_value_t = 10_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub tuples: u64,
    /// Tuples per batch.
    #[arg(long, default_value_t = 1024, value_parser = parse_batch_size)]
    pub batch_size: usize,
}

fn parse_batch_size(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=1 << 20).contains(&n) => Ok(n),
        _ => Err(format!("`{s}` is not a batch size: use 1 to 1048576")),
    }
}

const FILTER_SQL: &str = "SELECT sensor, temp, ts FROM readings WHERE temp > -1000.0";
const AGG_SQL: &str = "SELECT sensor, COUNT(*) AS n, SUM(temp) AS total, AVG(temp) AS mean \
     FROM readings WHERE temp > 0.0 GROUP BY sensor, TUMBLE(ts, INTERVAL '1' SECOND)";

/// The benchmark stream: 1000 sensor keys, normal temperatures, event time 1 µs apart.
fn workload_yaml(tuples: u64, batch_size: usize) -> String {
    format!(
        r#"name: bench-end-to-end
seed: 7
engine: {{batch_size: {batch_size}, queue_capacity: 100000000}}
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
    sql: "{AGG_SQL}"
    sink: none
"#
    )
}

pub fn bench(args: BenchArgs) -> Result<ExitCode, Failure> {
    let yaml = workload_yaml(args.tuples, args.batch_size);
    let w = spec::parse(&yaml, "<bench>").map_err(|e| Failure::Other(anyhow::anyhow!("{e}")))?;
    eprintln!(
        "generating {} tuples in batches of {} ...",
        args.tuples, args.batch_size
    );
    let clock = WallClock::start();
    let start = clock.since_start();
    let batches = pregenerate(&w, args.tuples, args.batch_size);
    let generation = clock.since_start() - start;

    let typed = typed_loop(&batches, &clock);
    report(
        "typed loop, filter + tumbling GROUP BY (yardstick)",
        args.tuples,
        typed,
    );
    let a = engine_run(FILTER_SQL, &batches, &clock, false)?;
    report("(a) engine, filter pass-through", args.tuples, a);
    let b = engine_run(AGG_SQL, &batches, &clock, false)?;
    report(
        "(b) engine, filter + tumbling GROUP BY 1000 keys, COUNT/SUM/AVG",
        args.tuples,
        b,
    );
    let bm = engine_run(AGG_SQL, &batches, &clock, true)?;
    report(
        "(b) again with turn timing and the QoS monitor ticking every 100 ms",
        args.tuples,
        bm,
    );
    let cost = 100.0 * (1.0 - b as f64 / bm as f64);
    if cost.abs() < 1.0 {
        outln!("    the monitor costs {cost:.1}% of throughput (within run-to-run noise)");
    } else {
        outln!("    the monitor costs {cost:.1}% of throughput");
    }
    let bg = engine_run_guarded(AGG_SQL, &batches, &clock)?;
    report(
        "(b) again with a random policy planning every tick and the inner guard at every turn",
        args.tuples,
        bg,
    );
    let guard = 100.0 * (1.0 - bm as f64 / bg as f64);
    outln!(
        "    shedder and inner guard cost {guard:.1}% of throughput{}",
        if guard.abs() < 1.0 {
            " (within run-to-run noise)"
        } else {
            ""
        }
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
    drop(batches);

    let engine = crate::runtime::assemble::engine_for(&w).map_err(|e| anyhow::anyhow!(e))?;
    let r = crate::runtime::assemble::run_headless(
        &w,
        engine,
        crate::spec::Policy::none(),
        None,
        &mut Observers::default(),
    )?;
    report(
        "(c) live end to end, generator unlimited, query (b)",
        args.tuples,
        r.elapsed,
    );
    report(
        "    generator alone, same thread count as (c)'s source: the ceiling for (c)",
        args.tuples,
        generation,
    );
    Ok(ExitCode::SUCCESS)
}

fn report(what: &str, tuples: u64, elapsed: Nanos) {
    let secs = elapsed as f64 / 1e9;
    outln!(
        "{what}: {tuples} tuples in {secs:.3} s = {:.1} M tuples/s ({:.1} ns/tuple)",
        tuples as f64 / secs / 1e6,
        elapsed as f64 / tuples as f64
    );
}

fn pregenerate(w: &Workload, tuples: u64, batch_size: usize) -> Vec<Batch> {
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

/// Runs `sql` over the batches on one engine, timing ingest to emission. With `monitor`,
/// the live driver's bookkeeping runs too: each turn timed on the wall clock and the QoS
/// monitor ticking every 100 ms, so the difference is the monitor's cost.
fn engine_run(
    sql: &str,
    batches: &[Batch],
    clock: &WallClock,
    monitor: bool,
) -> Result<Nanos, Failure> {
    engine_run_with(sql, batches, clock, monitor, false)
}

/// `engine_run` with the monitor, a shedding policy and the inner guard at every turn
/// (nothing is overloaded, so the guard checks and never cuts: its pure overhead).
fn engine_run_guarded(sql: &str, batches: &[Batch], clock: &WallClock) -> Result<Nanos, Failure> {
    engine_run_with(sql, batches, clock, true, true)
}

fn engine_run_with(
    sql: &str,
    batches: &[Batch],
    clock: &WallClock,
    monitor: bool,
    guard: bool,
) -> Result<Nanos, Failure> {
    let mut yaml = workload_yaml(1, 1024).replace(AGG_SQL, sql);
    let mut policy = Policy::none();
    if guard {
        // A target the guard checks at every turn (never reached: it measures the check).
        yaml = yaml.replace(
            "    sink: none",
            "    qos: {latency: {p99: 3600s}}\n    sink: none",
        );
        policy =
            spec::parse_policy("kind: random\n", "<bench>").map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let qw = spec::parse(&yaml, "<bench>").map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut engine = engine_for(&qw).map_err(|e| anyhow::anyhow!(e))?;
    let mut controller =
        monitor.then(|| Controller::new(&qw, &mut engine, policy, 1.0, 100_000_000, clock.now()));
    // Copies are made before timing starts: the measurement covers engine work only.
    let copies: Vec<Batch> = batches.to_vec();
    let mut rows = 0usize;
    let start = clock.since_start();
    let mut next_tick = start + 100_000_000;
    for b in copies {
        engine.ingest(0, b);
        if let Some(c) = controller.as_mut() {
            let t0 = clock.now();
            if let Some(turn) = engine.run_turn(t0) {
                engine.record_busy(turn.query, clock.now() - t0);
            }
            if guard {
                c.guard(&mut engine, clock.now());
            }
            if clock.since_start() >= next_tick {
                c.tick(&mut engine, clock.now(), &qw);
                next_tick += 100_000_000;
            }
        } else {
            engine.run_turn(0);
        }
        engine.emit(0, |e| rows += e.batch.len());
    }
    engine.flush(0);
    engine.emit(0, |e| rows += e.batch.len());
    let elapsed = clock.since_start() - start;
    std::hint::black_box(rows);
    Ok(elapsed)
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
