//! `spillway bench --sink`: what formatting result rows as JSON lines costs, the work a
//! `stdout` or `jsonl` sink does on the engine thread for every row it writes. Rows of
//! the shape a windowed count emits (an int key, a count, a float sum and a timestamp
//! window end), written into memory, so the figure is the formatting alone: exact, and
//! as a shed run emits them (keep 0.25, the count and sum with 95% intervals).

use crate::cli::outln;
use crate::core::batch::Batch;
use crate::core::engine::Emitted;
use crate::core::operators::{ColumnApprox, ResultApprox};
use crate::core::schema::{DataType, Scalar};
use crate::runtime::clock::WallClock;
use crate::runtime::sink::write_rows;

/// Rows per emitted batch (a close emits many at once).
const BATCH: usize = 8192;

/// Formats `rows` result rows, three times, and prints the best ns a row.
pub fn bench_sink(rows: u64) {
    let types = [
        DataType::Int,
        DataType::Int,
        DataType::Float,
        DataType::Timestamp,
    ];
    let names: Vec<String> = ["uid", "n", "spend", "window_end"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut b = Batch::new(&types, BATCH);
    for i in 0..BATCH as i64 {
        let row = [
            Scalar::Int(i * 7919 % 1_000_000),
            Scalar::Int(1 + i % 5),
            Scalar::Float(37.5 + i as f64 * 0.731),
            Scalar::Timestamp(1_765_000_000_000_000_000 + (i / 100) * 1_000_000_000),
        ];
        b.push_row(1_765_000_000_000_000_000 + i * 997, &row);
    }
    let interval = |base: f64, spread: f64| ColumnApprox::Interval {
        lo: (0..BATCH)
            .map(|i| base + i as f64 * 0.37 - spread)
            .collect(),
        hi: (0..BATCH)
            .map(|i| base + i as f64 * 0.37 + spread)
            .collect(),
    };
    let shed = ResultApprox {
        keep: (0..BATCH)
            .map(|i| 0.25 + (i % 10) as f64 * 0.0137)
            .collect(),
        columns: vec![
            ColumnApprox::Exact,
            interval(4.0, 2.91),
            interval(200.0, 61.3),
            ColumnApprox::Exact,
        ],
    };
    for (label, approx) in [("exact", None), ("shed", Some(&shed))] {
        let e = Emitted {
            index: 0,
            query: "per_user",
            names: &names,
            types: &types,
            batch: &b,
            approx,
            emitted_at: 1_765_000_000_123_456_789,
        };
        let (ns, bytes) = best_of_three(&e, rows);
        outln!(
            "JSON-lines sink, {label} rows of (int, int, float, timestamp) into memory: {ns:.1} ns/row ({bytes:.0} bytes/row), best of 3 x {rows} rows"
        );
    }
}

/// Formats `rows` rows of `e` (a batch at a time), three times: the best ns a row, and
/// the bytes a row.
fn best_of_three(e: &Emitted<'_>, rows: u64) -> (f64, f64) {
    let clock = WallClock::start();
    let mut out = Vec::with_capacity(BATCH * 256);
    let mut best = f64::INFINITY;
    let mut bytes = 0;
    for _ in 0..3 {
        let start = clock.since_start();
        let mut done = 0;
        while done < rows {
            out.clear();
            let _ = write_rows(&mut out, e);
            bytes = out.len();
            done += BATCH as u64;
        }
        let ns = (clock.since_start() - start) as f64 / done as f64;
        best = best.min(ns);
    }
    (best, bytes as f64 / BATCH as f64)
}
