//! Tests of error reporting for setting values: QoS settings, distributions, rates,
//! durations, sizes and source blocks are checked against their bounds, with a message at
//! the setting's line, column and path that says what to write instead (the document's
//! structure: `tests_errors`).

use super::tests::{errors, only_error, parse_stub};
use super::*;

#[test]
fn qos_settings_are_checked() {
    let text = "\
name: x
streams:
  s:
    schema: {a: int, name: string}
    rate: 5
queries:
  q:
    sql: SELECT a FROM s
    qos:
      latency: {p99: 100ms, p50: 10ms}
      loss_tolerance: [[100, 1.0], [50, 1.2], [60, 0.5], [0, 0.6]]
      value: {field: temp, utility: [[25, 0.1], [20, 1.0]]}
      weight: 0
  r:
    sql: SELECT a FROM s
    qos:
      latency: {p42x: 1s}
      value: {field: name, utility: [[1, 0.5]]}
";
    let e = errors(text);
    let all = SpecErrors { errors: e.clone() }.to_string();
    let has = |path: &str, msg: &str| {
        assert!(
            e.iter().any(|x| x.path == path && x.message.contains(msg)),
            "no `{msg}` at {path} in:\n{all}"
        )
    };
    has("queries.q.qos.latency", "exactly one percentile");
    has(
        "queries.q.qos.loss_tolerance[1]",
        "utility 1.2 is outside [0, 1]",
    );
    has(
        "queries.q.qos.loss_tolerance[2]",
        "from high to low percent delivered: 60 follows 50",
    );
    has("queries.q.qos.loss_tolerance[3]", "utility must not rise");
    has("queries.q.qos.value.utility[1]", "values must increase");
    has(
        "queries.q.qos.value.field",
        "`temp` is not a field of the query's input stream",
    );
    has("queries.q.qos.weight", "weight must be positive");
    has("queries.r.qos.latency.p42x", "must be a percentile");
    has("queries.r.qos.value.field", "it must be numeric");
    assert_eq!(e.len(), 9, "{all}");
    let lt = e
        .iter()
        .find(|x| x.path == "queries.q.qos.loss_tolerance[1]")
        .unwrap();
    assert_eq!((lt.line, lt.column), (11, 36));
}

#[test]
fn distributions_must_fit_their_fields() {
    let text = "\
name: x
streams:
  s:
    schema: {a: int, f: float, c: string, b: bool, t: timestamp}
    rate: 5
    fields:
      f: {zipf: {n: 10, s: 1}}
      a: {uniform: {min: 10, max: 5}}
      c: {choice: {values: [x, y], weights: [1]}}
      b: {bernoulli: 1.5}
      t: {normal: {mean: 0, stddev: 1}}
      nope: now
queries:
  q:
    sql: SELECT a FROM s
";
    let e = errors(text);
    let all = SpecErrors { errors: e.clone() }.to_string();
    let expect = [
        (
            7,
            "streams.s.fields.f",
            "zipf needs an int field; `f` is a float field",
        ),
        (
            8,
            "streams.s.fields.a.uniform",
            "distribution uniform needs min <= max",
        ),
        (
            9,
            "streams.s.fields.c.choice.weights",
            "2 values but 1 weights",
        ),
        (10, "streams.s.fields.b.bernoulli", "probability in [0, 1]"),
        (
            11,
            "streams.s.fields.t",
            "normal needs an int or float field",
        ),
        (
            12,
            "streams.s.fields.nope",
            "`nope` is not a field of stream `s`",
        ),
    ];
    assert_eq!(e.len(), expect.len(), "{all}");
    for ((line, path, msg), got) in expect.iter().zip(&e) {
        assert_eq!((got.line, got.path.as_str()), (*line, *path), "{all}");
        assert!(got.message.contains(msg), "{all}");
    }
}

#[test]
fn rates_and_durations_are_checked() {
    let text = "\
name: x
duration: 10 sec
engine: {workers: 0, tick: 0s, scheduler: fastest}
streams:
  a:
    schema: {k: int}
    rate: -5
  b:
    schema: {k: int}
    rate:
      steps:
        - {at: 5s, rate: 10}
        - {at: 1s, rate: 20}
  c:
    schema: {k: int}
    rate: {sine: {mean: 10, amplitude: 20, period: 1s}}
  d:
    schema: {k: int}
    rate: sometimes
queries:
  q:
    sql: SELECT k FROM a
";
    let e = errors(text);
    let all = SpecErrors { errors: e.clone() }.to_string();
    let has = |line: usize, path: &str, msg: &str| {
        assert!(
            e.iter()
                .any(|x| x.line == line && x.path == path && x.message.contains(msg)),
            "no `{msg}` at {line} {path} in:\n{all}"
        )
    };
    has(
        2,
        "duration",
        "invalid duration `10 sec`: use e.g. 500ms, 10s, 2m",
    );
    has(3, "engine.scheduler", "unknown variant `fastest`");
    has(7, "streams.a.rate", "rate must be positive");
    has(
        13,
        "streams.b.rate.steps[1].at",
        "step times must increase: 1s is not after 5s",
    );
    has(16, "streams.c.rate.sine.amplitude", "amplitude <= mean");
    has(19, "streams.d.rate", "`unlimited`");
    // The engine's well-formed keys are still checked when another one fails to read.
    has(3, "engine.workers", "workers must be at least 1");
    has(3, "engine.tick", "tick must be at least 1ms");
    assert_eq!(e.len(), 8, "{all}");
    // Sorted in file order.
    assert!(
        e.windows(2)
            .all(|w| (w[0].line, w[0].column) <= (w[1].line, w[1].column))
    );

    let e = errors(
        "name: x\nengine: {workers: 0, tick: 0s}\nstreams: {s: {schema: {k: int}, rate: 1}}\nqueries: {q: {sql: SELECT k FROM s}}\n",
    );
    assert_eq!(e.len(), 2, "{}", SpecErrors { errors: e.clone() });
    assert_eq!(e[0].path, "engine.workers");
    assert_eq!(e[1].path, "engine.tick");
}

#[test]
fn a_source_block_reads_like_the_shorthand_with_flow_and_idle_timeout() {
    let w = parse_stub(
        "name: x\nstreams:\n  s:\n    schema: {a: int}\n    source:\n      \
         generator: {rate: unlimited, count: 5}\n      idle_timeout: 250ms\n\
         queries: {q: {sql: SELECT a FROM s}}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let s = &w.streams[0];
    assert_eq!(s.source.flow, Flow::Pull, "unlimited defaults to pull");
    assert_eq!(s.source.idle_timeout, 250_000_000);
    assert_eq!(s.generator().unwrap().count, Some(5));
    let w = parse_stub(
        "name: x\nstreams:\n  s: {schema: {a: int}, rate: 10}\nqueries: {q: {sql: SELECT a FROM s}}\n",
    )
    .unwrap();
    assert_eq!(
        w.streams[0].source.flow,
        Flow::Push,
        "a paced generator pushes"
    );
    assert_eq!(w.streams[0].source.idle_timeout, DEFAULT_IDLE_TIMEOUT);
}

#[test]
fn rates_have_an_upper_bound() {
    let e = only_error(
        "name: x\nstreams:\n  s: {schema: {a: int}, rate: 1e12}\nqueries: {q: {sql: SELECT a FROM s}}\n",
    );
    assert_eq!(e.path, "streams.s.rate");
    assert!(e.message.contains("above the limit of 1e9"), "{e}");
    let e = only_error(
        "name: x\nstreams:\n  s: {schema: {a: int}, rate: {steps: [{at: 0s, rate: 5e9}]}}\n\
         queries: {q: {sql: SELECT a FROM s}}\n",
    );
    assert!(e.message.contains("above the limit"), "{e}");
}

#[test]
fn a_queue_memory_budget_is_a_size_of_at_least_a_mebibyte() {
    let text = |m: &str| {
        format!(
            "name: x\nengine:\n  queue_memory: {m}\nstreams:\n  s:\n    schema: {{a: int}}\n    \
             rate: 5\nqueries:\n  q:\n    sql: SELECT a FROM s\n"
        )
    };
    let e = only_error(&text("512KiB"));
    assert_eq!(e.path, "engine.queue_memory");
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("at least 1MiB"), "{e}");
    let e = only_error(&text("lots"));
    assert_eq!((e.path.as_str(), e.line), ("engine.queue_memory", 3), "{e}");
    for (m, bytes) in [
        ("1MiB", 1 << 20),
        ("1GB", 1_000_000_000),
        ("2097152", 2 << 20),
    ] {
        let w = parse_stub(&text(m)).unwrap_or_else(|e| panic!("{m}: {e}"));
        assert_eq!(w.engine.queue_memory, bytes, "{m}");
    }
}

/// `engine.workers: auto`: simulated, the modelled cores rounded down (the same on every
/// machine); live, this machine's cores less one source thread per stream; at least 1 and
/// at most 64 either way. Any other word, or a negative count, is a located error.
#[test]
fn workers_auto_resolves_by_mode_and_other_words_are_located() {
    let doc = |engine: &str| {
        format!(
            "name: x\nengine: {engine}\nstreams: {{s: {{schema: {{k: int}}, rate: 1}}, \
             t: {{schema: {{k: int}}, rate: 1}}}}\nqueries: {{q: {{sql: SELECT k FROM s}}}}\n"
        )
    };
    for (cores, want) in [("4", 4), ("2.5", 2), ("0.5", 1), ("1000", 64)] {
        let engine = format!("{{mode: simulated, workers: auto, capacity: {{cores: {cores}}}}}");
        let w = parse_stub(&doc(&engine)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(w.engine.workers, want, "cores {cores}");
        assert!(w.engine.workers_auto);
    }
    let w = parse_stub(&doc("{workers: auto}")).unwrap_or_else(|e| panic!("{e}"));
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    assert_eq!(w.engine.workers, cores.saturating_sub(2).clamp(1, 64));
    let w = parse_stub(&doc("{workers: 3}")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((w.engine.workers, w.engine.workers_auto), (3, false));
    for bad in ["{workers: many}", "{workers: -2}"] {
        let e = errors(&doc(bad));
        assert_eq!(e.len(), 1, "{}", SpecErrors { errors: e.clone() });
        assert_eq!((e[0].path.as_str(), e[0].line), ("engine.workers", 2));
        assert!(e[0].message.contains("`auto`"), "{}", e[0].message);
    }
}
