//! The `spillway` binary as a user meets it: every shipped workload checks, bad input exits
//! with code 2 and a located message, `run` writes JSON lines, Ctrl-C stops cleanly.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

fn spillway() -> Command {
    Command::new(env!("CARGO_BIN_EXE_spillway"))
}

fn yaml_files(dir: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_shipped_workload_passes_check() {
    let files = yaml_files("workloads");
    assert!(!files.is_empty());
    for f in files {
        let out = spillway().arg("check").arg(&f).output().unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            f.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("is valid"), "{text}");
    }
}

#[test]
fn every_shipped_policy_loads() {
    let files = yaml_files("policies");
    assert!(files.len() >= 5, "{files:?}");
    for f in files {
        let p = spillway::spec::load_policy(&f).unwrap_or_else(|e| panic!("{e}"));
        assert!(p.params.headroom > 0.0 && p.params.headroom <= 1.0);
    }
}

/// Each fixture's `# expect:` lines must all appear in stderr, and the exit code is 2.
#[test]
fn bad_workloads_exit_2_with_located_messages() {
    let files = yaml_files("tests/fixtures/bad");
    assert!(files.len() >= 6);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let expects: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# expect: "))
            .collect();
        assert!(!expects.is_empty(), "{} has no expectations", f.display());
        for cmd in ["check", "run"] {
            let out = spillway().arg(cmd).arg(&f).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{} {}: {err}", cmd, f.display());
            for e in &expects {
                assert!(err.contains(e), "{}: `{e}` not in:\n{err}", f.display());
            }
            assert!(!err.contains("panicked"), "{err}");
        }
    }
}

#[test]
fn missing_file_and_bad_duration_are_bad_input() {
    let out = spillway()
        .args(["check", "no/such/file.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such/file.yaml"));
    let out = spillway()
        .args(["run", "workloads/quickstart.yaml", "--duration", "ten"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid duration"));
}

#[test]
fn run_writes_json_lines_per_query_and_a_balanced_summary() {
    let dir = tempfile::tempdir().unwrap();
    let out = spillway()
        .args([
            "run",
            "workloads/quickstart.yaml",
            "--duration",
            "1500ms",
            "--quiet",
        ])
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(out.stdout.is_empty(), "--out sends results to files");
    assert!(err.contains("summary of `quickstart`"), "{err}");
    assert!(!err.contains("VIOLATED"), "{err}");
    assert_eq!(err.matches("balanced").count(), 3, "{err}");
    let per_city = std::fs::read_to_string(dir.path().join("per_city.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(per_city.lines().next().unwrap()).unwrap();
    assert_eq!(first["query"], "per_city");
    assert!(first["latency_ms"].as_f64().unwrap() >= 0.0);
    for key in [
        "city",
        "n",
        "avg_temp",
        "max_temp",
        "window_start",
        "window_end",
    ] {
        assert!(first.get(key).is_some(), "{key} missing in {first}");
    }
    assert!(Path::new(&dir.path().join("very_hot.jsonl")).exists());
}

/// Starts `spillway` with `args`, waits for its first status line (the run is under way
/// with data flowing), sends SIGINT, and returns the exit code and what it printed after.
fn interrupt_after_first_status(args: &[&str]) -> (Option<i32>, String) {
    signal_after_first_status(args, &["-INT"])
}

/// As `interrupt_after_first_status`, sending each of `signals` in turn.
fn signal_after_first_status(args: &[&str], signals: &[&str]) -> (Option<i32>, String) {
    let mut child = spillway()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    for line in lines.by_ref() {
        if line.unwrap().contains("in ") {
            break;
        }
    }
    for (i, sig) in signals.iter().enumerate() {
        if i > 0 {
            // As a person would: the second signal after the first was acknowledged.
            for line in lines.by_ref() {
                if line.unwrap().contains("again to abort") {
                    break;
                }
            }
        }
        let killed = Command::new("kill")
            .args([*sig, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
    }
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    (child.wait().unwrap().code(), rest.join("\n"))
}

#[test]
fn sigterm_stops_cleanly_with_exit_143() {
    let (code, rest) = signal_after_first_status(
        &["run", "workloads/quickstart.yaml", "--duration", "60s"],
        &["-TERM"],
    );
    assert_eq!(code, Some(143), "{rest}");
    assert!(rest.contains("SIGTERM: draining"), "{rest}");
    assert_eq!(rest.matches("balanced").count(), 3, "{rest}");
}

#[test]
#[allow(clippy::disallowed_methods)] // the wall time a user waits is the point here
fn a_second_ctrl_c_aborts_an_overloaded_run_at_once() {
    // No shedding at many times capacity: queues are seconds deep, a clean stop would
    // take seconds to drain them.
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("deep.yaml");
    std::fs::write(
        &w,
        "name: deep\nengine: {queue_capacity: 50000000}\nstreams:\n  s: {schema: {k: int}, rate: 3000000}\n\
         queries:\n  slow:\n    sql: SELECT k, COUNT(*) AS n FROM s GROUP BY k, \
         HOP(PROCTIME(), INTERVAL '2' MILLISECOND, INTERVAL '1' SECOND)\n    sink: none\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let (code, rest) = signal_after_first_status(
        &["run", w.to_str().unwrap(), "--duration", "60s"],
        &["-INT", "-INT"],
    );
    assert_eq!(code, Some(130), "{rest}");
    assert!(rest.contains("aborting without draining"), "{rest}");
    // The summary still comes (observers saw the end), and nothing is unaccounted.
    assert!(rest.contains("summary of `deep`"), "{rest}");
    // Aborted, not drained: tuples were still queued, and the ledger says so.
    let queued = number_after(&rest, "+ queued ");
    assert!(queued > 0, "{rest}");
    assert!(!rest.contains("VIOLATED"), "{rest}");
    assert!(
        started.elapsed().as_secs() < 30,
        "took {:?}",
        started.elapsed()
    );
}

#[test]
#[allow(clippy::disallowed_methods)] // the wall time a user waits is the point here
fn a_second_ctrl_c_cuts_the_flush_of_live_workers_short() {
    // One key per tuple over a 1000 s window sliding by 1 s: each tuple is in 1000 open
    // windows, so a second of input leaves about 20 M rows to flush at the end (seconds of
    // work on two workers), which a second Ctrl-C cuts short between two window ends.
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("wide.yaml");
    std::fs::write(
        &w,
        "name: wide\nengine: {workers: 2}\nstreams:\n  s: {schema: {k: int}, rate: 20000, \
         fields: {k: {uniform: {min: 1, max: 1000000000}}}}\nqueries:\n  q:\n    sql: SELECT k, \
         COUNT(*) AS n FROM s GROUP BY k, HOP(PROCTIME(), INTERVAL '1' SECOND, \
         INTERVAL '1000' SECOND)\n    sink: none\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let (code, rest) = signal_after_first_status(
        &["run", w.to_str().unwrap(), "--duration", "60s"],
        &["-INT", "-INT"],
    );
    assert_eq!(code, Some(130), "{rest}");
    assert!(rest.contains("aborting without draining"), "{rest}");
    assert!(rest.contains("summary of `wide`"), "{rest}");
    assert!(!rest.contains("VIOLATED"), "{rest}");
    // Cut short: each tuple's 1000 windows would have given 1000 rows.
    let (processed, results) = (
        number_after(&rest, "processed "),
        number_after(&rest, "results "),
    );
    assert!(
        results < 500 * processed,
        "{processed} tuples, {results} rows: {rest}"
    );
    assert!(
        started.elapsed().as_secs() < 30,
        "took {:?}",
        started.elapsed()
    );
}

/// The number right after the first `label` in `text`.
fn number_after(text: &str, label: &str) -> u64 {
    text.split(label)
        .nth(1)
        .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no {label:?} in {text}"))
}

#[test]
fn ctrl_c_drains_flushes_and_prints_the_summary() {
    let (code, rest) =
        interrupt_after_first_status(&["run", "workloads/quickstart.yaml", "--duration", "60s"]);
    assert_eq!(code, Some(130), "{rest}");
    assert!(rest.contains("summary of `quickstart`"), "{rest}");
    assert_eq!(rest.matches("balanced").count(), 3, "{rest}");
    assert!(rest.contains("queued 0"), "queues drained: {rest}");
}

#[test]
fn ctrl_c_stops_a_simulated_run_cleanly_too() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let (code, rest) = interrupt_after_first_status(&[
        "run",
        "workloads/quickstart.yaml",
        "--simulated",
        "--duration",
        "1h",
        "--out",
        out,
    ]);
    assert_eq!(code, Some(130), "{rest}");
    assert!(rest.contains("summary of `quickstart`"), "{rest}");
    assert_eq!(rest.matches("balanced").count(), 3, "{rest}");
    // Every line written is whole: sinks were flushed, not cut off.
    let text = std::fs::read_to_string(dir.path().join("very_hot.jsonl")).unwrap();
    assert!(text.ends_with('\n'));
    for line in text.lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap();
    }
}

#[test]
fn a_closed_stdout_ends_the_run() {
    let mut child = spillway()
        .args([
            "run",
            "workloads/quickstart.yaml",
            "--quiet",
            "--duration",
            "60s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is gone (dropped): the run must stop well before its 60 s.
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let after: f64 = err
        .split("after ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no summary in {err}"));
    assert!(after < 30.0, "ran {after} s after its reader left");
    assert!(first.starts_with("{\"query\":"));
}

#[test]
fn a_failing_sink_is_reported_counted_and_exits_1() {
    if !Path::new("/dev/full").exists() {
        panic!("this test needs /dev/full (Linux)");
    }
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("full.yaml");
    std::fs::write(
        &w,
        "name: full\nduration: 1s\nstreams:\n  s: {schema: {a: int}, rate: 20000}\n\
         queries:\n  all: {sql: SELECT a FROM s, sink: {jsonl: /dev/full}}\n",
    )
    .unwrap();
    let out = spillway()
        .args(["run", w.to_str().unwrap(), "--simulated", "--quiet"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // Simulated mode needs costs; the run is refused before any sink opens.
    assert_eq!(out.status.code(), Some(2), "{err}");
    let out = spillway()
        .args(["run", w.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("sink of query `all` failed"), "{err}");
    assert!(err.contains("result rows not delivered"), "{err}");
    assert!(!err.contains("results written to"), "{err}");
    // Simulated, with costs: the same failure, the same exit (it once wrote nothing and
    // exited 0), on 1 worker and on 2.
    let text = std::fs::read_to_string(&w)
        .unwrap()
        .replace("SELECT a FROM s,", "SELECT a FROM s, cost: 1us,")
        .replace("rate: 20000}", "rate: 200000, count: 100000}");
    for workers in ["1", "2"] {
        let sim = text.replace(
            "duration: 1s\n",
            &format!("duration: 1s\nengine: {{workers: {workers}}}\n"),
        );
        std::fs::write(&w, &sim).unwrap();
        let out = spillway()
            .args(["run", w.to_str().unwrap(), "--simulated", "--quiet"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{workers} workers: {err}");
        assert!(err.contains("sink of query `all` failed"), "{err}");
        assert!(err.contains("result rows were not delivered"), "{err}");
        assert!(!err.contains("results written to"), "{err}");
    }
}

/// `soak --memory --busy-neighbour` keeps the other core busy as the QoS soak does (the
/// flag was once ignored there), and a short memory soak ends with a balanced ledger.
#[test]
fn the_memory_soak_takes_the_busy_neighbour() {
    let out = spillway()
        .args(["soak", "--memory", "--busy-neighbour", "--duration", "1s"])
        .args(["--capacity", "20000"])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stderr.contains("another core kept busy"), "{stderr}");
    assert!(stdout.contains("ledger balanced"), "{stdout}\n{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
}

/// What simulated mode cannot run is refused at the setting it is about, with line and
/// column, by `check` and `run` alike.
#[test]
fn simulated_refusals_are_located() {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("sim.yaml");
    let head = "name: sim\nduration: 1s\nengine: {mode: simulated}\nstreams:\n  s:\n    schema: {k: int}\n";
    let cases = [
        (
            format!(
                "{head}    rate: 100\nqueries:\n  a: {{sql: SELECT k FROM s, cost: 1us}}\n  b:\n    sql: SELECT k FROM s\n"
            ),
            ":10:3: queries.b: simulated mode needs a per-tuple `cost`",
        ),
        (
            format!(
                "{head}    source: {{flow: push, generator: {{rate: unlimited}}}}\nqueries:\n  a: {{sql: SELECT k FROM s, cost: 1us}}\n"
            ),
            ":7:38: streams.s.source.generator.rate: stream `s` has rate `unlimited` with `flow: push`",
        ),
    ];
    for (text, expected) in cases {
        std::fs::write(&w, &text).unwrap();
        for cmd in ["check", "run"] {
            let out = spillway()
                .args([cmd, w.to_str().unwrap()])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
            let first = err.lines().next().unwrap_or_default();
            assert!(first.starts_with(w.to_str().unwrap()), "{cmd}: {err}");
            assert!(
                first.contains(expected),
                "{cmd}: {first}\nexpected {expected}"
            );
        }
    }
}

/// `soak --runs 2` runs the shape twice and prints its ranges over both runs; `--runs 0`
/// is bad input.
#[test]
fn the_soak_repeats_its_shapes_and_prints_their_ranges() {
    let out = spillway()
        .args(["soak", "--shape", "step", "--duration", "2s"])
        .args(["--capacity", "20000", "--runs", "2"])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stderr.contains("1 shape(s) x 2 runs"), "{stderr}");
    let rows = stdout.lines().filter(|l| l.starts_with("step ")).count();
    assert_eq!(rows, 2, "{stdout}");
    let range = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("step    2 runs: over "))
        .unwrap_or_else(|| panic!("no ranges line in {stdout}"));
    assert!(range.contains("capacity 0.02 M/s"), "{range}");
    // The verdict: held (0) or not (1), never bad input.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{stdout}\n{stderr}"
    );
    let bad = spillway().args(["soak", "--runs", "0"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--runs"));
}

/// `soak --workload FILE` measures a user's own workload live under its own policy and
/// prints its row; a workload it cannot measure (no latency target) is bad input, with
/// the reason.
#[test]
fn the_soak_measures_a_users_own_workload() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mine.yaml");
    let text = r#"
name: mine
duration: 2s
engine: {mode: simulated, tick: 50ms}
streams:
  s:
    schema: {k: int, v: float}
    source:
      generator:
        rate: {steps: [{at: 0s, rate: 20000}, {at: 1s, rate: 60000}]}
        fields: {k: {uniform: {min: 1, max: 50}}, v: {uniform: {min: 0, max: 1}}}
queries:
  hot:
    sql: SELECT k, v FROM s WHERE v > 0.5
    qos: {latency: {p99: 100ms}}
    cost: 1us
policy: none.yaml
"#;
    std::fs::write(&file, text).unwrap();
    std::fs::write(dir.path().join("none.yaml"), "kind: none\n").unwrap();
    let out = spillway()
        .args(["soak", "--workload"])
        .arg(&file)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        stderr.contains("is simulated; the soak runs it live"),
        "{stderr}"
    );
    assert!(
        stderr.contains("its own duration, policy its own"),
        "{stderr}"
    );
    // Seconds 0 and 1 are each a surge's first: not counted (only the run's closing
    // partial second may be), and none is over at 6% of capacity.
    let row = stdout
        .lines()
        .find(|l| l.starts_with("mine "))
        .unwrap_or_else(|| panic!("no row in {stdout}"));
    assert!(row.contains("  -    0/"), "{row}");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{stdout}\n{stderr}"
    );
    std::fs::write(
        &file,
        text.replace("    qos: {latency: {p99: 100ms}}\n", ""),
    )
    .unwrap();
    let bad = spillway()
        .args(["soak", "--workload"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let e = String::from_utf8_lossy(&bad.stderr);
    assert!(
        e.contains("mine.yaml: no query has a latency target"),
        "{e}"
    );
    // Refused before anything starts: no header, no row.
    assert!(!e.contains("spillway soak: workload"), "{e}");
    assert!(bad.stdout.is_empty());
    // So is a policy file that is not there.
    std::fs::write(
        &file,
        text.replace("policy: none.yaml", "policy: gone.yaml"),
    )
    .unwrap();
    let bad = spillway()
        .args(["soak", "--workload"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let e = String::from_utf8_lossy(&bad.stderr);
    assert!(e.contains("gone.yaml"), "{e}");
    assert!(!e.contains("spillway soak: workload"), "{e}");
    let both = spillway()
        .args(["soak", "--shape", "3x", "--workload"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2));
}

/// `rows per tuple` of the first output line starting with `prefix`.
fn rows_per_tuple(text: &str, prefix: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line `{prefix}` in {text}"));
    line.rsplit(", ")
        .next()
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no rows per tuple in {line}"))
}

#[test]
fn bench_many_prints_the_engine_and_live_lines_with_the_same_work() {
    let out = spillway()
        .args(["bench", "--many", "--tuples", "40000"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for n in [100, 1000] {
        let engine = rows_per_tuple(
            &text,
            &format!("(d) engine, {n} filter queries on one column, ~1% selectivity each, shared"),
        );
        let live = rows_per_tuple(&text, &format!("(d) live end to end, {n} filter queries"));
        // Same generator and thresholds, other tuples (a live stream of its own): the
        // members' matches agree to within sampling error, and none are lost live.
        assert!(engine > 0.0, "{text}");
        assert!(
            (live / engine - 1.0).abs() < 0.25,
            "{n}: live {live} vs engine {engine}\n{text}"
        );
    }
    assert!(
        text.contains("worst query's whole-run p99 latency"),
        "{text}"
    );
}
