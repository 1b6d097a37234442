//! `spillway soak --memory`: the long memory check. A live 10x overload (the soak's
//! filter-and-window workload at ten times this machine's measured capacity) runs for
//! `--duration` (10 minutes for the check) under one policy, while resident memory
//! is sampled every tick. It prints RSS every 30 s as it goes, then per minute the peak RSS,
//! each query's p99 against its target and the tuples shed, and the ledger; it exits 1 when
//! RSS ends above 300 MB or grew by more than a fifth (plus 20 MB) after the first minute.

use std::process::ExitCode;

use hdrhistogram::Histogram;

use super::Failure;
use super::outln;
use crate::core::schema::Nanos;
use crate::core::stats::latency_histogram;
use crate::runtime::assemble::{engine_for, run_headless};
use crate::runtime::observe::{Event, Observer, Observers, TickReport};
use crate::spec::{self, Policy};

const MINUTE: Nanos = 60_000_000_000;
const MB: f64 = 1024.0 * 1024.0;
/// The bound on resident memory.
const RSS_GOAL_MB: f64 = 300.0;

/// One minute of the run.
struct Minute {
    rss_peak: f64,
    /// The most tuples queued over all queries at any tick.
    queued_peak: usize,
    /// The most bytes the queues held at any tick (shared batches once).
    held_peak: u64,
    p99: Vec<Histogram<u64>>,
    shed: u64,
}

/// Samples RSS on every tick and folds latencies per minute.
struct MemoryWatch {
    targets: Vec<Option<Nanos>>,
    minutes: Vec<Minute>,
    next_print: Nanos,
    shed_before: u64,
    balanced: Option<bool>,
}

impl MemoryWatch {
    fn minute(&mut self, at: Nanos) -> &mut Minute {
        let m = (at / MINUTE) as usize;
        while self.minutes.len() <= m {
            self.minutes.push(Minute {
                rss_peak: 0.0,
                queued_peak: 0,
                held_peak: 0,
                p99: self.targets.iter().map(|_| latency_histogram()).collect(),
                shed: 0,
            });
        }
        &mut self.minutes[m]
    }
}

impl Observer for MemoryWatch {
    fn on_tick(&mut self, t: &TickReport<'_>) {
        let rss = rss_mb();
        let shed: u64 = t
            .control
            .qos
            .queries
            .iter()
            .map(|q| q.shed + q.queue_full)
            .sum();
        let new_shed = shed.saturating_sub(self.shed_before);
        self.shed_before = shed;
        let queued: usize = t.control.qos.queries.iter().map(|q| q.queued).sum();
        let held = t.control.qos.engine.queued_bytes;
        let m = self.minute(t.elapsed);
        m.rss_peak = m.rss_peak.max(rss);
        m.queued_peak = m.queued_peak.max(queued);
        m.held_peak = m.held_peak.max(held);
        m.shed += new_shed;
        for (h, tick) in m.p99.iter_mut().zip(t.tick_latency) {
            let _ = h.add(*tick);
        }
        if t.elapsed >= self.next_print {
            eprintln!(
                "  {:>7.2} s  RSS {rss:>6.1} MB  queued {queued} tuples, {:.1} MB",
                t.elapsed as f64 / 1e9,
                held as f64 / MB
            );
            self.next_print += 30_000_000_000;
        }
    }

    fn on_event(&mut self, e: &Event) {
        if let Event::RunEnded(s) = e {
            self.balanced = Some(s.snapshot.queries.iter().all(|q| q.balances()));
        }
    }
}

/// Resident memory of this process, MB (0 where /proc is missing).
fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The QoS soak lifts the queue bounds (`queue_capacity: 100000000, queue_memory: 64GiB`)
/// so that no queue-full loss hides a latency miss; with them, any stretch where the engine
/// falls behind (a busy machine) parks its backlog in memory, up to gigabytes. The memory
/// soak runs the workload as a user would, with the default bounds (`engine.queue_capacity`,
/// 1,000,000 tuples per query, and `engine.queue_memory`, 64 MiB for all queues), so that
/// resident memory measures the engine, not an unbounded backlog.
pub fn as_a_user_runs(workload: &str) -> String {
    workload.replace(", queue_capacity: 100000000, queue_memory: 64GiB", "")
}

/// Runs the memory soak: `workload(rate)` is the soak's workload at a rate, `capacity`
/// this machine's capacity for it (tuples/s).
pub fn memory_soak(
    duration: Nanos,
    policy: Policy,
    capacity: f64,
    workload: impl Fn(&str) -> String,
) -> Result<ExitCode, Failure> {
    let rate = (10.0 * capacity).round() as u64;
    let text = workload(&rate.to_string());
    let w = spec::parse(&text, "<soak>").map_err(|e| anyhow::anyhow!("{e}"))?;
    let engine = engine_for(&w).map_err(|e| anyhow::anyhow!(e))?;
    eprintln!(
        "spillway soak --memory: 10x overload ({rate} tuples/s, capacity {:.2} M/s) for {:.0} s, policy {:?}",
        capacity / 1e6,
        duration as f64 / 1e9,
        policy.params.kind
    );
    let mut m = MemoryWatch {
        targets: w
            .queries
            .iter()
            .map(|q| q.qos.as_ref().and_then(|s| s.latency).map(|l| l.target))
            .collect(),
        minutes: Vec::new(),
        next_print: 0,
        shed_before: 0,
        balanced: None,
    };
    run_headless(
        &w,
        engine,
        policy,
        Some(duration),
        &mut Observers::new(vec![&mut m]),
    )?;
    outln!(
        "{:>6} {:>10} {:>12} {:>11} {:>22} {:>14}",
        "minute",
        "RSS peak",
        "queued peak",
        "queue MB",
        "p99 agg / alert (ms)",
        "shed"
    );
    let names: Vec<&str> = w.queries.iter().map(|q| q.name.as_str()).collect();
    for (i, min) in m.minutes.iter().enumerate() {
        let p = |q: usize| {
            let h = &min.p99[q];
            let target = m.targets[q].map_or(0.0, |t| t as f64 / 1e6);
            if h.is_empty() {
                format!("-/{target:.0}")
            } else {
                format!(
                    "{:.0}/{target:.0}",
                    h.value_at_percentile(99.0) as f64 / 1e6
                )
            }
        };
        outln!(
            "{:>6} {:>7.1} MB {:>12} {:>11.1} {:>22} {:>14}",
            i + 1,
            min.rss_peak,
            min.queued_peak,
            min.held_peak as f64 / MB,
            format!("{} {}", p(0), p(m.targets.len() - 1)),
            min.shed
        );
    }
    let first = m.minutes.first().map_or(0.0, |x| x.rss_peak);
    let last = m.minutes.last().map_or(0.0, |x| x.rss_peak);
    let peak = m.minutes.iter().map(|x| x.rss_peak).fold(0.0, f64::max);
    let flat = last <= first * 1.2 + 20.0;
    let balanced = m.balanced.unwrap_or(false);
    outln!(
        "queries {}; RSS first minute {first:.1} MB, last {last:.1} MB, peak {peak:.1} MB: {} and {} {RSS_GOAL_MB:.0} MB; ledger {}",
        names.join(", "),
        if flat { "flat" } else { "GROWING" },
        if peak < RSS_GOAL_MB { "under" } else { "OVER" },
        if balanced { "balanced" } else { "NOT balanced" }
    );
    Ok(if flat && peak < RSS_GOAL_MB && balanced {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::soak::shapes::workload;

    #[test]
    fn the_memory_soak_runs_with_the_default_queue_bound() {
        let lifted = spec::parse(&workload("1000", false), "<soak>").unwrap();
        assert_eq!(lifted.engine.queue_capacity, 100_000_000);
        assert_eq!(lifted.engine.queue_memory, 64 << 30);
        let w = spec::parse(&as_a_user_runs(&workload("1000", false)), "<soak>").unwrap();
        assert_eq!(
            w.engine.queue_capacity,
            spec::EngineSettings::default().queue_capacity
        );
        assert_eq!(
            w.engine.queue_memory,
            spec::EngineSettings::default().queue_memory
        );
        assert_eq!(w.queries.len(), lifted.queries.len());
    }
}
