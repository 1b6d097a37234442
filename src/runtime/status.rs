//! The once-a-second status line and the final summary, both on stderr so result rows on
//! stdout stay pipeable. Rates come from the difference of two engine snapshots.

use std::fmt::Write as _;

use crate::core::schema::Nanos;
use crate::core::stats::EngineSnapshot;

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

/// One line per query: input and output rate over `elapsed`, queue depth, interval p50/p99.
pub fn status_lines(
    prev: &EngineSnapshot,
    cur: &EngineSnapshot,
    at: Nanos,
    elapsed: Nanos,
) -> String {
    let secs = (elapsed as f64 / 1e9).max(1e-9);
    let width = cur.queries.iter().map(|q| q.name.len()).max().unwrap_or(0);
    let mut s = String::new();
    for (i, q) in cur.queries.iter().enumerate() {
        let (pin, pout) = prev
            .queries
            .get(i)
            .map_or((0, 0), |p| (p.processed, p.results));
        let _ = writeln!(
            s,
            "[{:>6.1}s] {:<width$}  in {:>7}/s  out {:>7}/s  queue {:>8}  p50 {:>8.2} ms  p99 {:>8.2} ms",
            at as f64 / 1e9,
            q.name,
            rate((q.processed - pin) as f64 / secs),
            rate((q.results - pout) as f64 / secs),
            q.queued,
            ms(q.p50_interval),
            ms(q.p99_interval),
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
    }
    s
}
