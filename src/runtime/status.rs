//! The once-a-second status line and the final summary, both on stderr so result rows on
//! stdout stay pipeable. Rates come from the difference of two engine snapshots.

use std::fmt::Write as _;

use crate::core::drop::DropReason;
use crate::core::schema::Nanos;
use crate::core::stats::EngineSnapshot;
use crate::runtime::control::{ControlReport, RunHistory};

fn ms(n: Nanos) -> f64 {
    n as f64 / 1e6
}

/// Formats a rate compactly: `812`, `50.0k`, `1.20M`.
pub fn rate(per_sec: f64) -> String {
    if per_sec >= 1e6 {
        format!("{:.2}M", per_sec / 1e6)
    } else if per_sec >= 1e4 {
        format!("{:.1}k", per_sec / 1e3)
    } else {
        format!("{per_sec:.0}")
    }
}

/// One line per query from the latest control report: processed and result rates,
/// queue depth, p50/p99 latency over the last second, the keep fraction of its input and
/// its utility; and a load line when a shedding policy is active.
pub fn status_lines(r: &ControlReport, at: Nanos, shedding_policy: bool) -> String {
    let width = r
        .qos
        .queries
        .iter()
        .map(|q| q.name.len())
        .max()
        .unwrap_or(0);
    let mut s = String::new();
    if shedding_policy {
        let p = &r.plan;
        let _ = writeln!(
            s,
            "[{:>6.1}s] demand {:.2} x capacity target ({:.0}% busy), {}, utility {:.2}{}",
            at as f64 / 1e9,
            if p.target > 0.0 {
                p.load / p.target
            } else {
                0.0
            },
            100.0 * r.qos.busy,
            if p.shedding {
                format!("shedding (model correction {:.2})", p.correction)
            } else {
                "not shedding".to_string()
            },
            p.weighted_utility,
            // Stream drop points, when any drops (query points show per query below).
            r.qos
                .streams
                .iter()
                .zip(&r.stream_keep)
                .filter(|(_, k)| **k < 1.0)
                .map(|(st, k)| format!(", stream {} keep {k:.2}", st.name))
                .collect::<String>(),
        );
    }
    for (i, q) in r.qos.queries.iter().enumerate() {
        let keep = r.stream_keep.get(q.stream).copied().unwrap_or(1.0)
            * r.query_keep.get(i).copied().unwrap_or(1.0);
        // No result in the window: no latency to show (not a latency of 0).
        let lat = |n: Nanos| {
            if q.p99 == 0 {
                format!("{:>8}", "-")
            } else {
                format!("{:>8.2}", ms(n))
            }
        };
        let _ = writeln!(
            s,
            "[{:>6.1}s] {:<width$}  in {:>7}/s  out {:>7}/s  queue {:>8}  p50 {} ms  p99 {} ms  keep {:.2}  utility {:.2}",
            at as f64 / 1e9,
            q.name,
            rate(q.rate_in),
            rate(q.rate_out),
            q.queued,
            lat(q.p50),
            lat(q.p99),
            keep,
            q.utility,
        );
    }
    s
}

/// The end-of-run summary: per stream and per query totals, latency and the ledger.
pub fn summary(snap: &EngineSnapshot, name: &str, elapsed: Nanos) -> String {
    let secs = (elapsed as f64 / 1e9).max(1e-9);
    let mut s = format!("summary of `{name}` after {:.1} s\n", elapsed as f64 / 1e9);
    for st in &snap.streams {
        let _ = writeln!(
            s,
            "  stream {}: ingested {} ({}/s)",
            st.name,
            st.ingested,
            rate(st.ingested as f64 / secs)
        );
    }
    for q in &snap.queries {
        let _ = writeln!(
            s,
            "  query {}: processed {} of {} offered, results {}, latency p50 {:.2} ms p99 {:.2} ms max {:.2} ms",
            q.name,
            q.processed,
            q.offered,
            q.results,
            ms(q.p50),
            ms(q.p99),
            ms(q.max),
        );
        let _ = writeln!(
            s,
            "    ledger: offered {} = processed {} + queued {} + shed {} + queue-full {} -> {}; late (in processed) {}",
            q.offered,
            q.processed,
            q.queued,
            q.shed(),
            q.queue_full(),
            if q.balances() { "balanced" } else { "VIOLATED" },
            q.late,
        );
        if q.windows_lost > 0 {
            let _ = writeln!(s, "    windows lost whole (no row): {}", q.windows_lost);
        }
        if q.shed() > 0 {
            let parts: Vec<String> = DropReason::ALL
                .iter()
                .filter(|r| **r != DropReason::QueueFull && q.dropped[r.index()] > 0)
                .map(|r| format!("{} {}", r.label(), q.dropped[r.index()]))
                .collect();
            let _ = writeln!(
                s,
                "    shed by reason: {}; delivered {:.1}% of offered",
                parts.join(", "),
                100.0 * (q.offered - q.shed() - q.queue_full()) as f64 / q.offered.max(1) as f64
            );
        }
    }
    s
}

/// The shedding part of the summary: how long the shedder was active, the lowest keep
/// fraction at each drop point, and each query's utility over the run.
pub fn shedding_summary(h: &RunHistory, snap: &EngineSnapshot) -> String {
    let mut s = String::new();
    if h.ticks == 0 {
        return s;
    }
    let _ = writeln!(
        s,
        "  shedding: active {} of {} control ticks",
        h.shedding_ticks, h.ticks
    );
    for (st, k) in snap.streams.iter().zip(&h.stream_min_keep) {
        let _ = writeln!(s, "    drop point stream {}: lowest keep {:.2}", st.name, k);
    }
    for (i, q) in snap.queries.iter().enumerate() {
        let _ = writeln!(
            s,
            "    drop point query {}: lowest keep {:.2}; utility mean {:.2}, lowest {:.2}",
            q.name,
            h.query_min_keep[i],
            h.utility_sum[i] / h.ticks as f64,
            h.utility_min[i],
        );
    }
    s
}
