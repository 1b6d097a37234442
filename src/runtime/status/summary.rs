//! The end-of-run summary the status observer prints: per stream and per query totals,
//! latency and the ledger of every query, sink failures, and what shedding did. Formats
//! only what the run's summary and history carry.

use std::fmt::Write as _;

use super::{ms, rate};
use crate::core::drop::DropReason;
use crate::core::stats::EngineSnapshot;
use crate::runtime::control::RunHistory;
use crate::runtime::observe::RunSummary;

/// The end-of-run summary: per stream and per query totals, latency and the ledger, and
/// the shedding part when the policy sheds.
pub fn summary(r: &RunSummary) -> String {
    let snap = &r.snapshot;
    let secs = (r.elapsed as f64 / 1e9).max(1e-9);
    let mut s = format!(
        "summary of `{}` after {:.1} s\n",
        r.workload,
        r.elapsed as f64 / 1e9
    );
    for st in &snap.streams {
        let malformed = st.dropped[DropReason::Malformed.index()];
        let _ = writeln!(
            s,
            "  stream {}: ingested {} ({}/s){}",
            st.name,
            st.ingested,
            rate(st.ingested as f64 / secs),
            if malformed > 0 {
                format!(", malformed {malformed}")
            } else {
                String::new()
            }
        );
    }
    for (qi, q) in snap.queries.iter().enumerate() {
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
        let accounted = q.processed + q.queued + q.shed() + q.queue_full();
        let _ = writeln!(
            s,
            "    ledger: offered {} = processed {} + queued {} + shed {} + queue-full {} -> {}; late (in processed) {}",
            q.offered,
            q.processed,
            q.queued,
            q.shed(),
            q.queue_full(),
            if q.balances() {
                "balanced".to_string()
            } else {
                // Report the gap, never underflow computing it.
                format!("VIOLATED (gap {})", q.offered as i128 - accounted as i128)
            },
            q.late,
        );
        if q.windows_lost > 0 && q.windows_withheld > 0 {
            let _ = writeln!(
                s,
                "    windows lost whole (no row): {}, {} of them abandoned in a surge (withheld: \
                 they kept only part of their rows)",
                q.windows_lost, q.windows_withheld
            );
        } else if q.windows_lost > 0 {
            let _ = writeln!(s, "    windows lost whole (no row): {}", q.windows_lost);
        }
        if q.shed() > 0 {
            let parts: Vec<String> = DropReason::ALL
                .iter()
                .filter(|r| **r != DropReason::QueueFull && q.dropped[r.index()] > 0)
                .map(|r| format!("{} {}", r.label(), q.dropped[r.index()]))
                .collect();
            let delivered = q.offered.saturating_sub(q.shed() + q.queue_full());
            let _ = writeln!(
                s,
                "    shed by reason: {}; delivered {:.1}% of offered",
                parts.join(", "),
                100.0 * delivered as f64 / q.offered.max(1) as f64
            );
        }
        if let Some(&n) = r.undelivered.get(qi).filter(|n| **n > 0) {
            let _ = writeln!(s, "    sink failed: {n} result rows not delivered");
        }
    }
    if r.history.policy_switches > 0 {
        let _ = writeln!(
            s,
            "  policy changed {} time(s) during the run",
            r.history.policy_switches
        );
    }
    if r.shedding_policy || r.history.policy_switches > 0 {
        s.push_str(&shedding_summary(&r.history, snap));
    }
    if r.ledger_violations > 0 {
        let _ = writeln!(
            s,
            "  conservation ledger violated at {} ticks",
            r.ledger_violations
        );
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
        let ticks = h.utility_ticks.get(i).copied().unwrap_or(h.ticks);
        if ticks == 0 {
            // A query that came and went between two control ticks (an ad-hoc query over
            // history): the controller never saw it, so it has no keep or utility figures.
            let _ = writeln!(s, "    drop point query {}: no control tick", q.name);
            continue;
        }
        let _ = writeln!(
            s,
            "    drop point query {}: lowest keep {:.2}; utility mean {:.2}, lowest {:.2}",
            q.name,
            h.query_min_keep[i],
            h.utility_sum[i] / ticks as f64,
            h.utility_min[i],
        );
    }
    s
}
