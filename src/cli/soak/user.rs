//! `spillway soak --workload FILE`: the live check on a user's own workload instead of the
//! built-in shapes. The file runs live (whatever its `engine.mode`), results discarded,
//! under its own policy (or `--policy KIND`) for its own duration (or `--duration`), and is
//! measured as a shape is: seconds over target after the first second of each surge, the
//! whole-run p99 against the target, the busy share while shedding and the utility.
//! Surges are read from the generators' rate profiles: the start, and every instant the
//! total offered rate jumps by more than `SURGE` within `SURGE_STEP` (a step up, a burst
//! switching on; a ramp or a sine rises too slowly to count). Invariant: the file is
//! checked as `spillway run` checks it before anything starts, and a workload the check
//! cannot measure (no latency target, several workers, no duration) is refused with a
//! message, exit 2.

use std::path::Path;

use super::Failure;
use super::measured::Measured;
use super::row::Row;
use crate::core::schema::Nanos;
use crate::core::stats::latency_histogram;
use crate::runtime::assemble::{engine_for, run_headless};
use crate::runtime::observe::Observers;
use crate::spec::{Mode, Policy, Workload};

/// A rise of the total offered rate by this factor within `SURGE_STEP` starts a surge.
pub const SURGE: f64 = 1.25;
/// The step (ns) the rate profiles are read at.
pub const SURGE_STEP: Nanos = 10_000_000;

/// When `w`'s surges start over its first `d` ns: 0, and every `SURGE_STEP` at which the
/// streams' total generated rate is over `SURGE` times what it was one step before.
/// Streams without a generator (TCP, files) are not known in advance: the start only.
pub fn surges(w: &Workload, d: Nanos) -> Vec<Nanos> {
    let total = |t: Nanos| -> f64 {
        w.streams
            .iter()
            .filter_map(|s| s.generator())
            .map(|g| g.rate.rate_at(t))
            .sum()
    };
    let mut out = vec![0];
    let mut prev = total(0);
    let mut t = SURGE_STEP;
    while t < d {
        let now = total(t);
        if now.is_finite() && now > 0.0 && now > SURGE * prev {
            out.push(t);
        }
        prev = now;
        t += SURGE_STEP;
    }
    out
}

/// Why `w` cannot be soaked, if it cannot: the check needs a latency target to count
/// seconds over, one engine (it measures that engine's busy share) and an end.
pub fn refusal(w: &Workload, duration: Option<Nanos>) -> Option<String> {
    let targets = w
        .queries
        .iter()
        .any(|q| q.qos.as_ref().is_some_and(|s| s.latency.is_some()));
    if !targets {
        return Some(
            "no query has a latency target (`qos: {latency: {p99: ...}}`): there are no seconds over target to count"
                .into(),
        );
    }
    if w.engine.workers > 1 {
        return Some(format!(
            "engine.workers is {}: the soak measures one engine's busy share; run it with `workers: 1`",
            w.engine.workers
        ));
    }
    if duration.or(w.duration).is_none() {
        return Some("the workload has no `duration`: give one, or `--duration`".into());
    }
    None
}

/// Workload file `path`, checked as `spillway run` checks it and refused (bad input, with
/// the reason) when the soak cannot measure it; set to run live.
pub fn load(path: &Path, duration: Option<Nanos>) -> Result<Workload, Failure> {
    let mut w = super::super::load_workload(path)?;
    if let Some(why) = refusal(&w, duration) {
        return Err(Failure::BadInput(format!("{}: {why}", path.display())));
    }
    if w.engine.mode != Mode::Live {
        eprintln!(
            "spillway soak: {} is simulated; the soak runs it live",
            path.display()
        );
        w.engine.mode = Mode::Live;
    }
    Ok(w)
}

/// Runs workload `w` (from file `path`, as `load` returned it) live as the soak measures
/// a shape; `policy` overrides its own (a `--policy` kind), `duration` its duration.
/// Returns the row, printed.
pub fn soak_workload(
    path: &Path,
    w: &Workload,
    policy: Option<&Policy>,
    duration: Option<Nanos>,
    trace: Option<&Path>,
) -> Result<Row, Failure> {
    let d = duration.or(w.duration).expect("refused without a duration");
    let policy = match policy {
        Some(p) => p.clone(),
        None => super::super::run::resolve_policy(path, w, None)?,
    };
    let engine = engine_for(w).map_err(|e| Failure::BadInput(e.to_string()))?;
    let mut m = Measured {
        targets: w
            .queries
            .iter()
            .map(|q| q.qos.as_ref().and_then(|s| s.latency).map(|l| l.target))
            .collect(),
        surges: surges(w, d),
        second: w.queries.iter().map(|_| latency_histogram()).collect(),
        whole: w.queries.iter().map(|_| latency_histogram()).collect(),
        trace: super::open_trace(trace)?,
        ..Measured::default()
    };
    run_headless(
        w,
        engine,
        policy,
        Some(d),
        &mut Observers::new(vec![&mut m]),
    )?;
    m.close_second();
    let names: Vec<String> = w.queries.iter().map(|q| q.name.clone()).collect();
    let row = Row::of(&w.name, 0.0, &m, &names);
    row.print();
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec;

    const W: &str = r#"
name: mine
duration: 20s
streams:
  a:
    schema: {k: int}
    source:
      generator:
        rate: {steps: [{at: 0s, rate: 1000}, {at: 5s, rate: 5000}, {at: 12s, rate: 500}]}
        fields: {k: {uniform: {min: 1, max: 9}}}
  b:
    schema: {k: int}
    source:
      generator:
        rate: {bursts: {high: 3000, low: 100, on: 2s, off: 5500ms}}
        fields: {k: {uniform: {min: 1, max: 9}}}
  c:
    schema: {k: int}
    source:
      generator:
        rate: {ramp: {from: 100, to: 2000, over: 20s}}
        fields: {k: {uniform: {min: 1, max: 9}}}
queries:
  q:
    sql: SELECT k FROM a
    qos: {latency: {p99: 100ms}}
"#;

    #[test]
    fn surges_are_the_start_each_step_up_and_each_burst_on_but_not_a_ramp() {
        let w = spec::parse(W, "mine.yaml").expect("valid workload");
        // b's bursts switch on at 0, 7.5 s and 15 s; a steps up at 5 s (and down at 12 s);
        // c's ramp adds under 1 tuple/s a step.
        assert_eq!(
            surges(&w, 20_000_000_000),
            [0, 5_000_000_000, 7_500_000_000, 15_000_000_000]
        );
        assert_eq!(surges(&w, 6_000_000_000), [0, 5_000_000_000]);
    }

    #[test]
    fn a_workload_the_soak_cannot_measure_is_refused_with_the_reason() {
        let w = spec::parse(W, "mine.yaml").expect("valid workload");
        assert_eq!(refusal(&w, None), None);
        let no_target = W.replace("    qos: {latency: {p99: 100ms}}\n", "");
        let w = spec::parse(&no_target, "mine.yaml").expect("valid workload");
        assert!(
            refusal(&w, None).is_some_and(|r| r.contains("no query has a latency target")),
            "{:?}",
            refusal(&w, None)
        );
        let endless = W.replace("duration: 20s\n", "");
        let w = spec::parse(&endless, "mine.yaml").expect("valid workload");
        assert!(refusal(&w, None).is_some_and(|r| r.contains("no `duration`")));
        assert_eq!(refusal(&w, Some(5_000_000_000)), None);
        let two = W.replace("duration: 20s\n", "duration: 20s\nengine: {workers: 2}\n");
        let w = spec::parse(&two, "mine.yaml").expect("valid workload");
        assert!(refusal(&w, None).is_some_and(|r| r.contains("engine.workers is 2")));
    }
}
