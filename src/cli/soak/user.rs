//! `spillway soak --workload FILE`: the live check on a user's own workload instead of the
//! built-in shapes. The file runs live (whatever its `engine.mode`), results discarded,
//! under its own policy (or `--policy KIND`) for its own duration (or `--duration`), and is
//! measured as a shape is: seconds over target after the first second of each surge, the
//! whole-run p99 against the target, the busy share while shedding and the utility.
//! Surges are read from the generators' rate profiles (Nexmark's too): the start, and every
//! instant the total offered rate jumps by more than `SURGE` times, and by `SURGE_SHARE` of
//! its peak, within `SURGE_STEP` (a step up, a burst switching on; a ramp or a sine rises
//! too slowly, even from near 0, to count). Invariant: the file, its policy and its
//! queries are checked before anything starts, and a workload the check cannot measure (no
//! latency target, several workers, no duration, scripted changes) is refused with a
//! message, exit 2.

use std::path::Path;

use super::Failure;
use super::measured::Measured;
use super::row::Row;
use crate::core::schema::Nanos;
use crate::generator::RateProfile;
use crate::runtime::assemble::{engine_for, run_headless};
use crate::runtime::observe::Observers;
use crate::spec::{Mode, Policy, SourceKind, Workload};

/// A rise of the total offered rate by this factor within `SURGE_STEP` starts a surge...
pub const SURGE: f64 = 1.25;
/// ... if it is also at least this share of the run's peak total rate (a sine rising from
/// near 0 gains a large factor a step, but a small share of its peak).
pub const SURGE_SHARE: f64 = 0.05;
/// The step (ns) the rate profiles are read at.
pub const SURGE_STEP: Nanos = 10_000_000;

/// When `w`'s surges start over its first `d` ns: 0, and every `SURGE_STEP` at which the
/// streams' total generated rate is over `SURGE` times what it was one step before, and
/// higher by `SURGE_SHARE` of the run's peak. Streams whose rate is not known in advance
/// (TCP, files) or not finite (`unlimited`) count for the start only.
pub fn surges(w: &Workload, d: Nanos) -> Vec<Nanos> {
    let profiles: Vec<&RateProfile> = w
        .streams
        .iter()
        .filter_map(|s| match &s.source.kind {
            SourceKind::Generator(g) => Some(&g.rate),
            SourceKind::Nexmark(n) => Some(&n.rate),
            SourceKind::Tcp(_) | SourceKind::Replay(_) => None,
        })
        .filter(|r| !r.is_unlimited())
        .collect();
    let total = |t: Nanos| -> f64 { profiles.iter().map(|r| r.rate_at(t)).sum() };
    let steps = || (0..).map(|i| i * SURGE_STEP).take_while(|&t| t < d);
    let peak = steps().map(total).fold(0.0, f64::max);
    let mut out = vec![0];
    let mut prev = total(0);
    for t in steps().skip(1) {
        let now = total(t);
        if now > SURGE * prev && now - prev >= SURGE_SHARE * peak {
            out.push(t);
        }
        prev = now;
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
    if !w.changes.is_empty() {
        return Some(
            "it has scripted `changes:`, which the soak does not play: measure it with `spillway run`, or remove them"
                .into(),
        );
    }
    None
}

/// Workload file `path` set to run live, with the policy it runs under (`policy`, a
/// `--policy` kind, else its own): checked as `spillway run` checks them, and refused
/// (bad input, with the reason) when the soak cannot measure it.
pub fn load(
    path: &Path,
    policy: Option<&Policy>,
    duration: Option<Nanos>,
) -> Result<(Workload, Policy), Failure> {
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
    let policy = match policy {
        Some(p) => p.clone(),
        None => super::super::run::resolve_policy(path, &w, None)?,
    };
    // Every query plans, and every drop point exists, before anything starts.
    engine_for(&w).map_err(|e| Failure::BadInput(format!("{}: {e}", path.display())))?;
    Ok((w, policy))
}

/// Runs workload `w` under `policy` (as `load` returned them) live as the soak measures a
/// shape, for `duration` if given, else its own. Returns the row, printed.
pub fn soak_workload(
    w: &Workload,
    policy: &Policy,
    duration: Option<Nanos>,
    trace: Option<&Path>,
) -> Result<Row, Failure> {
    let d = duration.or(w.duration).expect("refused without a duration");
    let policy = policy.clone();
    let engine = engine_for(w).map_err(|e| Failure::BadInput(e.to_string()))?;
    let mut m = Measured::for_workload(w, surges(w, d), super::open_trace(trace)?);
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
    fn a_sine_from_near_zero_and_an_unlimited_stream_make_no_surge() {
        // Each 10 ms step near the trough of a sine from 0 gains a large factor, but a
        // small share of its peak; an unlimited stream's rate is unknown, not infinite.
        let sine = W
            .replace(
                "rate: {bursts: {high: 3000, low: 100, on: 2s, off: 5500ms}}",
                "rate: {sine: {mean: 1000, amplitude: 1000, period: 10s}}",
            )
            .replace(
                "rate: {steps: [{at: 0s, rate: 1000}, {at: 5s, rate: 5000}, {at: 12s, rate: 500}]}",
                "rate: unlimited",
            );
        assert_ne!(sine, W);
        let w = spec::parse(&sine, "mine.yaml").expect("valid workload");
        assert_eq!(surges(&w, 20_000_000_000), [0]);
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
        let changes = format!("{W}changes:\n  - at: 1s\n    remove: q\n");
        let w = spec::parse(&changes, "mine.yaml").expect("valid workload");
        assert!(refusal(&w, None).is_some_and(|r| r.contains("scripted `changes:`")));
        let two = W.replace("duration: 20s\n", "duration: 20s\nengine: {workers: 2}\n");
        let w = spec::parse(&two, "mine.yaml").expect("valid workload");
        assert!(refusal(&w, None).is_some_and(|r| r.contains("engine.workers is 2")));
    }
}
