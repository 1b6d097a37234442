//! `spillway bench --strings`: engine throughput on a string-heavy stream (a `city` column
//! of 8 values beside the bench stream's fields), over pre-generated batches: a projection
//! that copies half the rows' strings, an equality filter on the string, a tumbling GROUP BY
//! on it, and 8 equality queries (one per city) sharing one scan through the predicate index
//! (the engine's default: one query filters on its own, several share a scan).
//! Each line is one `strings_run`, so callgrind can count its instructions on its own.

use super::Failure;
use super::bench_many::drain_timed;
use super::outln;
use crate::core::batch::Batch;
use crate::core::schema::Nanos;
use crate::runtime::assemble::engine_for;
use crate::runtime::clock::WallClock;
use crate::spec;

const CITIES: [&str; 8] = [
    "oslo", "rome", "lima", "pune", "kyiv", "baku", "doha", "riga",
];

/// A workload over the string stream with `queries` (name, SQL).
fn strings_yaml(tuples: u64, batch_size: usize, queries: &[(String, String)]) -> String {
    let mut y = format!(
        "name: bench-strings\nseed: 7\nengine: {{batch_size: {batch_size}, queue_capacity: \
         100000000, queue_memory: 64GiB}}\nstreams:\n  readings:\n    schema: {{sensor: int, \
         temp: float, city: string, ts: timestamp}}\n    event_time: ts\n    rate: unlimited\n    \
         count: {tuples}\n    fields:\n      sensor: {{uniform: {{min: 0, max: 999}}}}\n      \
         temp: {{normal: {{mean: 20, stddev: 5}}}}\n      city: {{choice: {{values: [{}]}}}}\n      \
         ts: {{sequence: {{start: 0, step: 1us}}}}\nqueries:\n",
        CITIES.join(", ")
    );
    for (name, sql) in queries {
        y.push_str(&format!("  {name}:\n    sql: \"{sql}\"\n    sink: none\n"));
    }
    y
}

fn one(sql: &str) -> Vec<(String, String)> {
    vec![("q".to_string(), sql.to_string())]
}

/// Runs the workload's queries over copies of `batches` (made before timing starts, by
/// the caller, so a callgrind dump of this function counts engine work only), draining
/// every queue after each batch; returns the elapsed time and the rows produced.
#[inline(never)]
fn strings_run(
    queries: &[(String, String)],
    copies: Vec<Batch>,
    clock: &WallClock,
) -> Result<(Nanos, u64), Failure> {
    let w = spec::parse(&strings_yaml(1, 1024, queries), "<bench>")
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut engine = engine_for(&w).map_err(|e| anyhow::anyhow!(e))?;
    Ok(drain_timed(&mut engine, copies, clock))
}

fn line(what: &str, tuples: u64, (elapsed, rows): (Nanos, u64)) {
    let secs = elapsed as f64 / 1e9;
    outln!(
        "{what}: {tuples} tuples in {secs:.3} s = {:.1} M tuples/s ({:.1} ns/tuple, {:.2} rows per tuple)",
        tuples as f64 / secs / 1e6,
        elapsed as f64 / tuples as f64,
        rows as f64 / tuples as f64
    );
}

/// Prints the string lines over `tuples` generated tuples in batches of `batch_size`.
pub fn bench_strings(tuples: u64, batch_size: usize, clock: &WallClock) -> Result<(), Failure> {
    let w = spec::parse(
        &strings_yaml(tuples, batch_size, &one("SELECT city FROM readings")),
        "<bench>",
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let batches = super::bench::pregenerate(&w, tuples, batch_size);
    line(
        "(s1) engine, projection of a string column through a filter keeping half the rows",
        tuples,
        strings_run(
            &one("SELECT city, sensor, temp FROM readings WHERE temp > 20.0"),
            batches.to_vec(),
            clock,
        )?,
    );
    line(
        "(s2) engine, equality filter on the string column (1 city in 8)",
        tuples,
        strings_run(
            &one("SELECT city, sensor, temp FROM readings WHERE city = 'oslo'"),
            batches.to_vec(),
            clock,
        )?,
    );
    line(
        "(s3) engine, tumbling GROUP BY the string column, COUNT/AVG",
        tuples,
        strings_run(
            &one(
                "SELECT city, COUNT(*) AS n, AVG(temp) AS mean FROM readings \
                 GROUP BY city, TUMBLE(ts, INTERVAL '1' SECOND)",
            ),
            batches.to_vec(),
            clock,
        )?,
    );
    let per_city: Vec<(String, String)> = CITIES
        .iter()
        .map(|c| {
            (
                format!("at_{c}"),
                format!("SELECT city, sensor, temp FROM readings WHERE city = '{c}'"),
            )
        })
        .collect();
    line(
        "(s4) engine, 8 equality queries on the string column, one per city, shared (predicate index)",
        tuples,
        strings_run(&per_city, batches.to_vec(), clock)?,
    );
    Ok(())
}
