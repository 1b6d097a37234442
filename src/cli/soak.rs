//! `spillway soak`: the live check of the QoS promise on workload shapes the shedder was not
//! tuned on (sustained 3x, 7x with an output-heavy sliding window, bursts, a step, a ramp to
//! 5x). It measures this machine's capacity first, scales each shape to it, runs each live
//! and prints, per shape, the seconds over target after the first second of each surge, the
//! whole-run p99 against the target, the engine's busy share while shedding and the
//! utility. Outside the test run: it takes real time and a real machine.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Args;
use hdrhistogram::Histogram;

use super::Failure;
use super::outln;
use crate::core::schema::Nanos;
use crate::core::stats::latency_histogram;
use crate::runtime::assemble::{engine_for, run_headless};
use crate::runtime::observe::{Event, Observer, Observers, TickReport};
use crate::spec::{self, Policy, parse_duration};

#[derive(Args, Debug)]
pub struct SoakArgs {
    /// How long each shape runs (the issue's check: 60s or more).
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    pub duration: i64,
    /// Shapes to run (default all): 3x, 7x-hop, bursts, step, ramp.
    #[arg(long = "shape", value_name = "NAME")]
    pub shapes: Vec<String>,
    /// Shedding policy kind: random, semantic or window-aware.
    #[arg(long, default_value = "random")]
    pub policy: String,
    /// Keep another core busy with a spinning thread (the "other core busy" run).
    #[arg(long)]
    pub busy_neighbour: bool,
    /// The memory soak instead of the shapes: a 10x overload for --duration (use 10m)
    /// under --policy, printing RSS over time, p99 per minute and the ledger
    /// (`soak_memory.rs`).
    #[arg(long)]
    pub memory: bool,
}

const SHAPES: [&str; 5] = ["3x", "7x-hop", "bursts", "step", "ramp"];

/// One shape: its workload text at `capacity` tuples/s, and when its surges start (ns).
fn shape(name: &str, capacity: f64, d: Nanos) -> Option<(String, Vec<Nanos>)> {
    let r = |x: f64| (x * capacity).round() as u64;
    let s = |ns: Nanos| format!("{}ms", ns / 1_000_000);
    let (rate, surges, hop) = match name {
        "3x" => (format!("{}", r(3.0)), vec![0], false),
        "7x-hop" => (format!("{}", r(7.0)), vec![0], true),
        "bursts" => {
            let period = 10_000_000_000;
            (
                format!(
                    "{{bursts: {{high: {}, low: {}, on: 5s, off: 5s}}}}",
                    r(3.0),
                    r(0.3)
                ),
                (0..).map(|k| k * period).take_while(|t| *t < d).collect(),
                false,
            )
        }
        "step" => (
            format!(
                "{{steps: [{{at: 0s, rate: {}}}, {{at: {}, rate: {}}}, {{at: {}, rate: {}}}]}}",
                r(0.5),
                s(d / 4),
                r(3.0),
                s(3 * d / 4),
                r(0.5)
            ),
            vec![d / 4],
            false,
        ),
        // Crosses capacity a ninth of the way in.
        "ramp" => (
            format!(
                "{{ramp: {{from: {}, to: {}, over: {}}}}}",
                r(0.5),
                r(5.0),
                s(d)
            ),
            vec![d / 9],
            false,
        ),
        _ => return None,
    };
    Some((workload(&rate, hop), surges))
}

/// The workload of every shape: one stream, an alert filter and an aggregate (the issue's
/// output-heavy sliding window for `hop`).
fn workload(rate: &str, hop: bool) -> String {
    // A measured rate cannot wait (push); the capacity probe offers what the engine takes.
    let flow = if rate == "unlimited" { "pull" } else { "push" };
    // The sliding window is expensive either way (every tuple lies in 100 windows); over
    // 1000 keys on processing time it also emits 100k rows a second whatever the input
    // (the issue's live failure), over 50 keys on event time 5k.
    let (agg, keys) = if hop {
        (
            "SELECT k, COUNT(*) AS n, SUM(v) AS total, AVG(v) AS mean, window_end FROM src WHERE v > 0.5 GROUP BY k, HOP(PROCTIME(), INTERVAL '10' MILLISECOND, INTERVAL '1' SECOND)",
            1000,
        )
    } else {
        (
            "SELECT k, COUNT(*) AS n, AVG(v) AS mean, window_end FROM src GROUP BY k, HOP(ts, INTERVAL '10' MILLISECOND, INTERVAL '1' SECOND)",
            50,
        )
    };
    format!(
        r#"name: soak
seed: 23
engine: {{mode: live, tick: 50ms, batch_size: 512, scheduler: qos, queue_capacity: 100000000}}
streams:
  src:
    schema: {{k: int, v: float, ts: timestamp}}
    event_time: ts
    source:
      generator:
        rate: {rate}
        fields:
          k: {{uniform: {{min: 1, max: {keys}}}}}
          v: {{uniform: {{min: 0, max: 1}}}}
          ts: now
      flow: {flow}
queries:
  agg:
    sql: "{agg}"
    qos:
      latency: {{p99: 200ms}}
      loss_tolerance: [[100, 1.0], [50, 0.8], [0, 0.0]]
    sink: none
  alert:
    sql: SELECT k, v FROM src WHERE v > 0.9
    qos:
      latency: {{p99: 100ms}}
      loss_tolerance: [[100, 1.0], [0, 0.0]]
      weight: 2
    sink: none
"#
    )
}

/// What one shape's run measured.
#[derive(Default)]
struct Measured {
    targets: Vec<Option<Nanos>>,
    surges: Vec<Nanos>,
    /// Per query: latencies of the current second, and the whole run.
    second: Vec<Histogram<u64>>,
    whole: Vec<Histogram<u64>>,
    current: i64,
    /// (query-seconds over target, query-seconds counted).
    over: (u64, u64),
    busy_sum: f64,
    shedding_ticks: u64,
    utility_sum: f64,
    ticks: u64,
    model_error: Option<f64>,
    refits: u64,
    insufficient: u64,
}

impl Measured {
    fn close_second(&mut self) {
        let k = self.current;
        let start = k * 1_000_000_000;
        let skipped = self
            .surges
            .iter()
            .any(|&s| start >= s && start < s + 1_000_000_000);
        for (q, h) in self.second.iter_mut().enumerate() {
            if let (Some(t), false) = (self.targets[q], h.is_empty() || skipped) {
                self.over.1 += 1;
                if h.value_at_percentile(99.0) as Nanos > t {
                    self.over.0 += 1;
                }
            }
            h.reset();
        }
    }
}

impl Observer for Measured {
    fn on_tick(&mut self, t: &TickReport<'_>) {
        let sec = t.elapsed / 1_000_000_000;
        while sec > self.current {
            self.close_second();
            self.current += 1;
        }
        for (q, h) in t.tick_latency.iter().enumerate() {
            let _ = self.second[q].add(*h);
            let _ = self.whole[q].add(*h);
        }
        if t.last {
            return;
        }
        let c = t.control;
        if c.plan.shedding {
            self.busy_sum += c.qos.busy;
            self.shedding_ticks += 1;
        }
        let w: f64 = c.plan.utility.len() as f64;
        self.utility_sum += c.qos.queries.iter().map(|q| q.utility).sum::<f64>() / w.max(1.0);
        self.ticks += 1;
        self.model_error = c.qos.model_error_mean;
    }

    fn on_event(&mut self, e: &Event) {
        match e {
            Event::ModelRefit { .. } => self.refits += 1,
            Event::InputDropsInsufficient { .. } => self.insufficient += 1,
            _ => {}
        }
    }
}

/// Capacity of this machine for `text`'s queries, tuples/s of the stream: a short live
/// run without shedding, the source offering what the engine takes (pull), busy time and
/// engine overhead over tuples processed.
fn capacity(text: &str) -> Result<f64, Failure> {
    let w = spec::parse(text, "<soak>").map_err(|e| anyhow::anyhow!("{e}"))?;
    let engine = engine_for(&w).map_err(|e| anyhow::anyhow!(e))?;
    let s = run_headless(
        &w,
        engine,
        Policy::none(),
        Some(2_000_000_000),
        &mut Observers::default(),
    )?;
    let busy: u64 = s.snapshot.queries.iter().map(|q| q.busy).sum::<u64>() + s.snapshot.overhead;
    let processed = s
        .snapshot
        .queries
        .iter()
        .map(|q| q.processed)
        .max()
        .unwrap_or(0);
    Ok(1e9 * processed as f64 / busy.max(1) as f64)
}

pub fn soak(args: SoakArgs) -> Result<ExitCode, Failure> {
    let shapes: Vec<String> = if args.shapes.is_empty() {
        SHAPES.iter().map(|s| s.to_string()).collect()
    } else {
        args.shapes.clone()
    };
    if let Some(bad) = shapes.iter().find(|s| !SHAPES.contains(&s.as_str())) {
        return Err(Failure::BadInput(format!(
            "unknown shape `{bad}`: use {}",
            SHAPES.join(", ")
        )));
    }
    let policy = spec::parse_policy(&format!("kind: {}\n", args.policy), "--policy")
        .map_err(|e| Failure::BadInput(e.to_string()))?;
    if args.memory {
        let cap = capacity(&workload("unlimited", false))?;
        return super::soak_memory::memory_soak(args.duration, policy, cap, |r| workload(r, false));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let neighbour = args.busy_neighbour.then(|| {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut x = 0u64;
            while !stop.load(Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        })
    });
    eprintln!(
        "spillway soak: {} shape(s), {:.0} s each, policy {}{}",
        shapes.len(),
        args.duration as f64 / 1e9,
        args.policy,
        if args.busy_neighbour {
            ", another core kept busy"
        } else {
            ""
        }
    );
    outln!(
        "{:<8} {:>10} {:>18} {:>18} {:>8} {:>7} {:>7} {:>6} {:>6}",
        "shape",
        "capacity",
        "over (after 1 s)",
        "p99 agg / alert",
        "busy@shed",
        "utility",
        "model±",
        "refits",
        "short"
    );
    for name in &shapes {
        let d = args.duration;
        let cap = capacity(&workload("unlimited", name == "7x-hop"))?;
        let (text, surges) = shape(name, cap, d).expect("known shape");
        let w = spec::parse(&text, "<soak>").map_err(|e| anyhow::anyhow!("{e}"))?;
        let engine = engine_for(&w).map_err(|e| anyhow::anyhow!(e))?;
        let mut m = Measured {
            targets: w
                .queries
                .iter()
                .map(|q| q.qos.as_ref().and_then(|s| s.latency).map(|l| l.target))
                .collect(),
            surges,
            second: w.queries.iter().map(|_| latency_histogram()).collect(),
            whole: w.queries.iter().map(|_| latency_histogram()).collect(),
            ..Measured::default()
        };
        run_headless(
            &w,
            engine,
            policy.clone(),
            Some(d),
            &mut Observers::new(vec![&mut m]),
        )?;
        m.close_second();
        let p99 = |q: usize| m.whole[q].value_at_percentile(99.0) as f64 / 1e6;
        let t = |q: usize| m.targets[q].unwrap_or(0) as f64 / 1e6;
        outln!(
            "{:<8} {:>9.2}M {:>10}/{:<3} {:>3.1}% {:>6.0}/{:<4.0}ms {:>3.0}/{:<3.0}ms {:>8.2} {:>7.2} {:>7} {:>6} {:>6}",
            name,
            cap / 1e6,
            m.over.0,
            m.over.1,
            100.0 * m.over.0 as f64 / m.over.1.max(1) as f64,
            p99(0),
            t(0),
            p99(1),
            t(1),
            m.busy_sum / m.shedding_ticks.max(1) as f64,
            m.utility_sum / m.ticks.max(1) as f64,
            m.model_error
                .map_or("-".to_string(), |e| format!("{:.0}%", 100.0 * e)),
            m.refits,
            m.insufficient,
        );
    }
    stop.store(true, Ordering::Relaxed);
    if let Some(h) = neighbour {
        let _ = h.join();
    }
    Ok(ExitCode::SUCCESS)
}
