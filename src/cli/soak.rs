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

use super::Failure;
use super::outln;
use crate::runtime::assemble::{engine_for, run_headless};
use crate::runtime::observe::Observers;
use crate::spec::{self, Policy, parse_duration};

#[derive(Args, Debug)]
pub struct SoakArgs {
    /// How long each shape runs (default 60s, the issue's check: 60s or more); with
    /// --workload, instead of the workload's own duration.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<i64>,
    /// Shapes to run (default all five): 3x, 7x-hop, bursts, step, ramp; `issue` runs the
    /// issue's own setup (2.4 M tuples/s, one sliding window over 1000 keys) unscaled.
    #[arg(long = "shape", value_name = "NAME")]
    pub shapes: Vec<String>,
    /// Shedding policy kind: random, semantic or window-aware (default random; with
    /// --workload, the workload's own policy).
    #[arg(long)]
    pub policy: Option<String>,
    /// Run this workload file live, measured as a shape is (seconds over target after each
    /// surge's first second, whole-run p99, busy share while shedding, utility), instead of
    /// the built-in shapes. Surges are read from its generators' rates (a step up, a burst
    /// switching on).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["shapes", "capacity", "memory", "print"])]
    pub workload: Option<std::path::PathBuf>,
    /// Keep another core busy with a spinning thread (the "other core busy" run).
    #[arg(long)]
    pub busy_neighbour: bool,
    /// Scale the shapes to this capacity (tuples/s, e.g. 3.5e6) instead of probing it before
    /// each shape: the probe reads this 2-core machine with a spread of up to 1.9x from run
    /// to run, so A/B comparisons of two builds should fix it.
    #[arg(long, value_name = "TUPLES_PER_S", value_parser = parse_capacity)]
    pub capacity: Option<f64>,
    /// The memory soak instead of the shapes: a 10x overload for --duration (use 10m)
    /// under --policy, printing RSS over time, p99 per minute and the ledger
    /// (`soak_memory.rs`).
    #[arg(long)]
    pub memory: bool,
    /// Print each shape's workload (scaled to --capacity, or to the probed capacity) as
    /// YAML on stdout instead of running it, to run with `spillway run` and watch its
    /// status line or dashboard second by second.
    #[arg(long)]
    pub print: bool,
    /// Write a line per control tick to FILE (the last shape's run): time, whether
    /// shedding (`S`; `Sr` when the rise limit held back every keep a larger target could
    /// raise), demand over the capacity target, the model correction, headroom, idle
    /// lift, busy, ingest and idle shares, the lowest keep installed, then per query the
    /// share of its input the plan delivers (stream and query drop points together), its
    /// queue depth and the largest latency recorded in the tick (ms), and in brackets the
    /// measured delivered share, ns per tuple (`c`), per passed tuple (`p`), rows/s and ns
    /// per row (`rRxB`) and fixed work (`f`, ms/s). For finding what a second over target
    /// came from.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
    /// Run every shape this many times (alternating shapes), then print each shape's
    /// ranges over the runs: the figures the README reports come from three.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
}

mod measured;
mod row;
pub(super) mod shapes;
mod user;

use measured::Measured;
use row::Row;
use shapes::{ISSUE, SHAPES, shape, workload};

/// The text the capacity probe runs for shape `name`: its queries, the source offering
/// what the engine takes.
fn probe_text(name: &str) -> String {
    if name == ISSUE {
        let (text, _) = shape(ISSUE, 1.0, 1).expect("the issue shape");
        text.replace("rate: 2400000", "rate: unlimited")
            .replace("flow: push", "flow: pull")
    } else {
        workload("unlimited", name == "7x-hop")
    }
}

/// `--capacity`: a positive, finite rate of at most `MAX_RATE / 10` (the 10x memory soak
/// must stay a valid rate).
fn parse_capacity(text: &str) -> Result<f64, String> {
    let max = crate::spec::MAX_RATE / 10.0;
    match text.trim().parse::<f64>() {
        Ok(c) if c.is_finite() && c >= 1.0 && c <= max => Ok(c),
        Ok(_) => Err(format!("a capacity is 1 to {max:e} tuples/s")),
        Err(e) => Err(format!("not a number of tuples/s: {e}")),
    }
}

/// The machine's 1-minute load average (Linux), printed with every figure: the check is
/// only as quiet as the machine.
pub(super) fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
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
    if let Some(bad) = shapes
        .iter()
        .find(|s| !SHAPES.contains(&s.as_str()) && s.as_str() != ISSUE)
    {
        return Err(Failure::BadInput(format!(
            "unknown shape `{bad}`: use {} or {ISSUE}",
            SHAPES.join(", ")
        )));
    }
    let kind = args.policy.as_deref().unwrap_or("random");
    let policy = spec::parse_policy(&format!("kind: {kind}\n"), "--policy")
        .map_err(|e| Failure::BadInput(e.to_string()))?;
    let duration = args.duration.unwrap_or(DEFAULT_DURATION);
    // Checked before anything starts: a file the soak cannot run is bad input at once.
    let user_workload = match &args.workload {
        Some(path) => Some(user::load(
            path,
            args.policy.is_some().then_some(&policy),
            args.duration,
        )?),
        None => None,
    };
    // Started before any probe, so that the capacity measured is the one left beside it.
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
    if args.memory {
        if args.busy_neighbour {
            eprintln!("spillway soak --memory: another core kept busy");
        }
        // The probe too runs with the default queue bound: with the QoS soak's lifted one,
        // its pull source ran up to 10^8 tuples ahead of the engine in its 2 s (a 1.5 GB
        // peak before the soak began). The bound does not change the capacity it measures
        // (busy time per tuple processed).
        let probe = super::soak_memory::as_a_user_runs(&workload("unlimited", false));
        let cap = match args.capacity {
            Some(c) => c,
            None => capacity(&probe)?,
        };
        let result = super::soak_memory::memory_soak(duration, policy, cap, |r| {
            super::soak_memory::as_a_user_runs(&workload(r, false))
        });
        stop.store(true, Ordering::Relaxed);
        if let Some(h) = neighbour {
            let _ = h.join();
        }
        return result;
    }
    if let Some((w, policy)) = &user_workload {
        header(&args, 1, duration);
        let row = (0..args.runs)
            .map(|_| user::soak_workload(w, policy, args.duration, args.trace.as_deref()))
            .collect::<Result<Vec<Row>, Failure>>();
        stop.store(true, Ordering::Relaxed);
        if let Some(h) = neighbour {
            let _ = h.join();
        }
        return verdict(&row?, args.runs, false);
    }
    if !args.print {
        header(&args, shapes.len(), duration);
    }
    let mut rows = Vec::new();
    let runs = if args.print { 1 } else { args.runs };
    for name in (0..runs).flat_map(|_| shapes.iter()) {
        let d = duration;
        let cap = match args.capacity {
            Some(c) => c,
            None => capacity(&probe_text(name))?,
        };
        let (text, surges) = shape(name, cap, d).expect("known shape");
        if args.print {
            outln!(
                "# spillway soak --shape {name}: {:.2} M tuples/s of capacity, {:.0} s",
                cap / 1e6,
                d as f64 / 1e9
            );
            let secs = format!("seed: 23\nduration: {}ms", d / 1_000_000);
            outln!("{}", text.replacen("seed: 23", &secs, 1));
            continue;
        }
        let w = spec::parse(&text, "<soak>").map_err(|e| anyhow::anyhow!("{e}"))?;
        let engine = engine_for(&w).map_err(|e| anyhow::anyhow!(e))?;
        let mut m = Measured::for_workload(&w, surges, open_trace(args.trace.as_deref())?);
        run_headless(
            &w,
            engine,
            policy.clone(),
            Some(d),
            &mut Observers::new(vec![&mut m]),
        )?;
        m.close_second();
        let names: Vec<String> = w.queries.iter().map(|q| q.name.clone()).collect();
        let row = Row::of(name, cap, &m, &names);
        row.print();
        rows.push(row);
    }
    stop.store(true, Ordering::Relaxed);
    if let Some(h) = neighbour {
        let _ = h.join();
    }
    if args.print {
        return Ok(ExitCode::SUCCESS);
    }
    verdict(&rows, runs, true)
}

/// Prints the ranges over `runs` runs of `rows` and whether each kept the promise; exit 1
/// when one did not. A built-in shape (`shapes`) that never shed did not overload.
fn verdict(rows: &[Row], runs: u32, shapes: bool) -> Result<ExitCode, Failure> {
    if runs > 1 {
        row::print_ranges(rows);
    }
    let failed: Vec<String> = rows
        .iter()
        .flat_map(|r| r.failures(!shapes || r.shape == ISSUE))
        .collect();
    if failed.is_empty() {
        eprintln!(
            "spillway soak: the promise held on every {}",
            if shapes { "shape" } else { "run" }
        );
        Ok(ExitCode::SUCCESS)
    } else {
        for f in &failed {
            eprintln!("spillway soak: FAILED {f}");
        }
        Ok(ExitCode::from(1))
    }
}

/// The default length of a shape's run: the issue's check asks for 60 s or more.
const DEFAULT_DURATION: i64 = 60_000_000_000;

/// The `--trace` file, created, if one is asked for.
fn open_trace(
    path: Option<&std::path::Path>,
) -> Result<Option<std::io::BufWriter<std::fs::File>>, Failure> {
    path.map(|p| {
        std::fs::File::create(p)
            .map(std::io::BufWriter::new)
            .map_err(|e| Failure::BadInput(format!("{}: {e}", p.display())))
    })
    .transpose()
}

/// The run's first line (stderr) and the table's header (stdout).
fn header(args: &SoakArgs, shapes: usize, duration: i64) {
    let what = match &args.workload {
        Some(p) => format!("workload {}", p.display()),
        None => format!("{shapes} shape(s)"),
    };
    let each = match (&args.workload, args.duration) {
        (Some(_), None) => "its own duration".to_string(),
        _ => format!("{:.0} s each", duration as f64 / 1e9),
    };
    let policy = match (&args.workload, &args.policy) {
        (Some(_), None) => "its own",
        (_, p) => p.as_deref().unwrap_or("random"),
    };
    eprintln!(
        "spillway soak: {}{}, {}, policy {}{}",
        what,
        if args.runs > 1 {
            format!(" x {} runs", args.runs)
        } else {
            String::new()
        },
        each,
        policy,
        if args.busy_neighbour {
            ", another core kept busy"
        } else {
            ""
        }
    );
    outln!(
        "{:<7} {:>8} {:>13} {:>22} {:>5} {:>5} {:>5} {:>6} {:>5} {:>6} {:>5} {:>5} {:>5}",
        "shape",
        "capacity",
        "over (>1 s)",
        "worst p99/target",
        "busy",
        "ingst",
        "idle",
        "keep",
        "util",
        "model±",
        "refit",
        "short",
        "load"
    );
}

#[cfg(test)]
mod tests {
    use super::parse_capacity;

    #[test]
    fn a_fixed_capacity_is_a_positive_finite_rate_within_the_rate_bound() {
        assert_eq!(parse_capacity("3.5e6"), Ok(3.5e6));
        assert_eq!(parse_capacity("1"), Ok(1.0));
        for bad in ["0", "-3", "inf", "NaN", "1e9"] {
            let e = parse_capacity(bad).unwrap_err();
            assert!(e.contains("a capacity is 1 to"), "{bad}: {e}");
        }
        assert!(parse_capacity("fast").unwrap_err().contains("not a number"));
    }
}
