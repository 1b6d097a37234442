//! Hostile input as a new user might write it (issue 9): every case ends promptly, with
//! exit code 2 and a located message when the input is bad, never a hang or a panic.
//! Wall-clock checks are the point here, so `Instant::now` is allowed.
#![allow(clippy::disallowed_methods)]

use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn spillway() -> Command {
    Command::new(env!("CARGO_BIN_EXE_spillway"))
}

/// Writes `text` to a fresh file named after the test and runs `spillway <args> <file>`.
fn run_on(name: &str, text: &str, args: &[&str]) -> (Output, Duration) {
    let dir = std::env::temp_dir().join(format!("spillway-hardening-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    let t = Instant::now();
    let out = spillway().args(args).arg(&path).output().unwrap();
    (out, t.elapsed())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_200_kb_file_of_nested_brackets_is_rejected_fast() {
    let text = format!("name: deep\nstreams: {}", "[".repeat(200_000));
    let (out, took) = run_on("brackets", &text, &["check"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(took < Duration::from_millis(900), "took {took:?}");
    let err = stderr(&out);
    assert!(err.contains("brackets.yaml:2:"), "{err}");
    assert!(err.contains("nests deeper than 64"), "{err}");
}

#[test]
fn deeply_nested_sql_is_rejected_fast() {
    let sql = format!(
        "SELECT {}x{} AS x FROM s",
        "(".repeat(50_000),
        ")".repeat(50_000)
    );
    let text = format!(
        "name: deep\nduration: 1s\nstreams:\n  s:\n    schema: {{a: int}}\n    rate: 10\n    \
         fields: {{a: {{uniform: {{min: 0, max: 9}}}}}}\nqueries:\n  q:\n    sql: \"{sql}\"\n"
    );
    let (out, took) = run_on("sql", &text, &["check"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(took < Duration::from_millis(900), "took {took:?}");
    let err = stderr(&out);
    assert!(
        err.contains("sql.yaml:10:") && err.contains("nested too deeply"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "only the SQL is wrong: {err}");
}

/// A timestamp `sequence` that runs past i64::MAX within a few tuples.
const WRAPPING: &str = "name: wrap
duration: 2s
engine: {mode: simulated}
streams:
  s:
    schema: {k: int, ts: timestamp}
    event_time: ts
    rate: 100
    fields:
      k: {uniform: {min: 1, max: 3}}
      ts: {sequence: {start: 9223372036, step: 100ms}}
queries:
  q:
    sql: SELECT k, COUNT(*) AS n FROM s GROUP BY k, TUMBLE(ts, INTERVAL '1' SECOND)
    cost: 10ns
";

#[test]
fn a_timestamp_sequence_past_the_64_bit_range_counts_late_and_finishes() {
    let (out, took) = run_on("wrap", WRAPPING, &["run", "--simulated"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(took < Duration::from_secs(20), "took {took:?}");
    let err = stderr(&out);
    assert!(err.contains("-> balanced"), "{err}");
    let late: u64 = err
        .split("late (in processed) ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no late count: {err}"));
    assert!(late > 150, "the saturated tuples are late: {err}");
}

#[test]
fn a_timestamp_sequence_that_overflows_within_its_count_is_rejected() {
    let text = WRAPPING.replace("    rate: 100\n", "    rate: 100\n    count: 50\n");
    let (out, _) = run_on("wrap-count", &text, &["check"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("wrap-count.yaml:12:") && err.contains("overflows 64 bits"),
        "{err}"
    );
    let fits = WRAPPING.replace("    rate: 100\n", "    rate: 100\n    count: 5\n");
    let (out, _) = run_on("wrap-fits", &fits, &["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn more_queries_than_engine_max_queries_is_bad_input() {
    let mut text = String::from(
        "name: many\nengine: {max_queries: 2}\nstreams:\n  s:\n    schema: {a: int}\n    \
         rate: 10\nqueries:\n",
    );
    for i in 0..3 {
        text.push_str(&format!(
            "  q{i}:\n    sql: SELECT a FROM s WHERE a = {i}\n"
        ));
    }
    let (out, _) = run_on("many", &text, &["check"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("many.yaml:7:") && err.contains("exceed engine.max_queries (2)"),
        "{err}"
    );
    let (out, _) = run_on(
        "many-ok",
        &text.replace("max_queries: 2", "max_queries: 3"),
        &["check"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_zero_duration_is_rejected_on_the_command_line_as_in_the_file() {
    let out = spillway()
        .args(["run", "workloads/quickstart.yaml", "--duration", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("positive duration"),
        "{}",
        stderr(&out)
    );
    let text = std::fs::read_to_string("workloads/quickstart.yaml")
        .unwrap()
        .replace("duration: 10s", "duration: 0s");
    let (out, _) = run_on("zero", &text, &["check"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("duration must be positive"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn float_division_by_zero_gives_0_and_negative_timestamps_print_before_1970() {
    let text = "name: odd\nduration: 1s\nengine: {mode: simulated}\nstreams:\n  s:\n    \
                schema: {x: float, ts: timestamp}\n    rate: 10\n    count: 3\n    fields:\n      \
                x: {constant: 1.5}\n      ts: {constant: 0s}\nqueries:\n  q:\n    \
                sql: SELECT x / 0.0 AS d, x % 0.0 AS m, ts - 1 AS before FROM s\n    \
                cost: 1ns\n";
    let (out, _) = run_on("odd", text, &["run", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(rows.lines().count(), 3, "{rows}");
    for row in rows.lines() {
        assert!(row.contains("\"d\":0,\"m\":0,"), "{row}");
        assert!(
            row.contains("\"before\":\"1969-12-31T23:59:59.999Z\""),
            "{row}"
        );
    }
}

#[test]
fn int_division_overflow_wraps_and_division_by_zero_gives_0() {
    // i64::MIN / -1 overflows: it wraps to i64::MIN as any int overflow does.
    let text = "name: odd\nduration: 1s\nengine: {mode: simulated}\nstreams:\n  s:\n    \
                schema: {x: int}\n    rate: 10\n    count: 1\n    fields:\n      \
                x: {constant: 0}\nqueries:\n  q:\n    \
                sql: SELECT (x - 9223372036854775807 - 1) / -1 AS d, (x - 9223372036854775807 - 1) % -1 AS m, 7 / x AS z, 7 % x AS r FROM s\n    \
                cost: 1ns\n";
    let (out, _) = run_on("intdiv", text, &["run", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(rows.lines().count(), 1, "{rows}");
    assert!(
        rows.trim()
            .ends_with("\"d\":-9223372036854775808,\"m\":0,\"z\":0,\"r\":0}"),
        "{rows}"
    );
}

/// One stream at 50k tuples/s and two queries, on `capacity` with `cost` per tuple.
fn tiny_capacity(cores: &str, cost: &str) -> String {
    format!(
        "name: tiny
seed: 5
duration: 500ms
engine: {{mode: simulated, tick: 100ms, batch_size: 100, capacity: {{cores: {cores}}}}}
streams:
  s:
    schema: {{k: int, v: float}}
    rate: 50000
    fields:
      k: {{uniform: {{min: 0, max: 99}}}}
      v: {{normal: {{mean: 20, stddev: 6}}}}
queries:
  per_k:
    sql: SELECT k, COUNT(*) AS n FROM s GROUP BY k, TUMBLE(PROCTIME(), INTERVAL '100' MILLISECOND)
    qos: {{latency: {{p99: 300ms}}, loss_tolerance: [[100, 1.0], [0, 0.0]]}}
    cost: {cost}
    sink: none
  hot:
    sql: SELECT k, v FROM s WHERE v > 25
    qos: {{latency: {{p99: 100ms}}}}
    cost: 4us
    sink: none
"
    )
}

#[test]
fn a_capacity_below_a_thousandth_of_a_core_is_bad_input() {
    let (out, _) = run_on("nano-core", &tiny_capacity("1e-9", "6us"), &["check"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains("nano-core.yaml:4:") && e.contains("engine.capacity.cores: cores must be"),
        "{e}"
    );
    let (out, _) = run_on("milli-core", &tiny_capacity("0.001", "6us"), &["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Found by `spillway fuzz --seed 5` (case 83,799): at the least capacity and the largest
/// cost, one turn takes about 10^5 s of virtual time. Each control tick it overran used to
/// run one by one (10^6 of them per turn, hours of wall time, no stop taken); now at most
/// 64 run after a turn and the rest are missed, as a busy live engine thread misses them.
#[test]
fn a_turn_that_overruns_a_million_ticks_runs_at_most_sixty_five_of_them() {
    let policy = format!("{}/policies/random.yaml", env!("CARGO_MANIFEST_DIR"));
    let text = tiny_capacity("0.001", "999ms");
    let (out, took) = run_on(
        "overrun",
        &text,
        &["run", "--simulated", "--policy", &policy],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let e = stderr(&out);
    let ticks: u64 = e
        .split(" control ticks")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no tick count in:\n{e}"));
    let turns_bound = 50_000 / 100 * 2 + 100;
    assert!(
        ticks > 0 && ticks <= 65 * turns_bound,
        "{ticks} ticks:\n{e}"
    );
    assert!(took < Duration::from_secs(60), "took {took:?}");
}
