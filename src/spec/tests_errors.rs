//! Tests of error reporting: every problem of a file is reported once, at the right line,
//! column and setting path, with a message that says what to write instead; odd documents
//! give errors, never panics. Queries are planned by the stub of `tests`.

use super::tests::{errors, only_error, parse_stub};
use super::*;

#[test]
fn malformed_yaml_reports_its_line_and_column() {
    let e = only_error("name: x\nstreams:\n  s: {a: 1\nqueries: {}\n");
    assert_eq!(e.file, "w.yaml");
    assert_eq!(e.path, "");
    assert_eq!((e.line, e.column), (4, 8), "{e}");
    // The position is not repeated in the message; the context keeps its own.
    assert_eq!(
        e.message,
        "did not find expected ',' or '}', while parsing a flow mapping at line 3 column 6"
    );
    let e = only_error("name: x\n  bad: indent\n");
    assert_eq!(e.line, 2, "{e}");
}

#[test]
fn unknown_fields_in_a_stream_and_a_query_are_both_reported() {
    let text = "\
name: x
streams:
  s:
    schema: {a: int}
    rate: 10
    colour: red
queries:
  q:
    sql: SELECT a FROM s
    sinks: none
";
    let e = errors(text);
    assert_eq!(e.len(), 2, "{}", SpecErrors { errors: e.clone() });
    assert_eq!(e[0].path, "streams.s.colour");
    assert_eq!((e[0].line, e[0].column), (6, 5));
    assert!(
        e[0].message
            .starts_with("unknown field `colour`, expected one of"),
        "{}",
        e[0].message
    );
    assert_eq!(e[1].path, "queries.q.sinks");
    assert_eq!((e[1].line, e[1].column), (10, 5));
    assert_eq!(
        e[1].to_string(),
        format!("w.yaml:10:5: queries.q.sinks: {}", e[1].message)
    );
}

#[test]
fn an_unknown_type_names_the_choices() {
    let e = only_error(
        "name: x\nstreams:\n  readings:\n    schema: {sensor: int, temp: flaot}\n    rate: 5\n\
         queries:\n  q:\n    sql: SELECT sensor FROM readings\n",
    );
    assert_eq!(e.path, "streams.readings.schema.temp");
    assert_eq!((e.line, e.column), (4, 27));
    assert_eq!(
        e.message,
        "unknown type `flaot`; expected int, float, string, bool or timestamp"
    );
}

#[test]
fn event_time_must_name_a_timestamp_field() {
    let base = "name: x\nstreams:\n  readings:\n    schema: {sensor: int, ts: timestamp}\n    \
                rate: 5\n    event_time: ET\nqueries:\n  q:\n    sql: SELECT sensor FROM readings\n";
    let e = only_error(&base.replace("ET", "tss"));
    assert_eq!(e.path, "streams.readings.event_time");
    assert_eq!(e.line, 6);
    assert_eq!(
        e.message,
        "event_time `tss` is not a field of stream `readings`"
    );
    let e = only_error(&base.replace("ET", "sensor"));
    assert_eq!(
        e.message,
        "event_time `sensor` is an int field; it must be a timestamp"
    );
}

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
fn missing_sections_and_bad_names_are_reported() {
    let e = errors("seed: 1\nfoo: 2\n");
    let all = SpecErrors { errors: e.clone() }.to_string();
    assert!(
        all.contains("w.yaml:2:1: foo: unknown field `foo`, expected one of `name`"),
        "{all}"
    );
    for f in ["name", "streams", "queries"] {
        assert!(all.contains(&format!("missing field `{f}`")), "{all}");
    }
    let e = errors("name: ''\nstreams: {}\nqueries:\n");
    let all = SpecErrors { errors: e.clone() }.to_string();
    assert!(all.contains("name must not be empty"), "{all}");
    assert!(all.contains("`streams` needs at least one entry"), "{all}");
    assert!(all.contains("`queries` needs at least one entry"), "{all}");
    let e = errors(
        "name: x\nstreams:\n  my-stream: {schema: {a: int}, rate: 1}\n  S: {schema: {A: int, a: int}, rate: 1}\n  s: {schema: {a: int}, rate: 1}\nqueries: {q: {sql: SELECT a FROM s}}\n",
    );
    let all = SpecErrors { errors: e.clone() }.to_string();
    assert!(
        all.contains("stream name `my-stream` must start with a letter"),
        "{all}"
    );
    assert!(all.contains("field `a` clashes with `A`"), "{all}");
    assert!(all.contains("stream `s` clashes with `S`"), "{all}");
}

#[test]
fn sql_errors_point_into_the_file_and_broken_streams_silence_them() {
    let text = "\
name: x
streams:
  s: {schema: {a: int}, rate: 1}
queries:
  q:
    sql: |
      SELECT a
      FROM nowhere
";
    let e = only_error(text);
    assert_eq!(e.path, "queries.q.sql");
    assert_eq!((e.line, e.column), (8, 12));
    assert!(e.message.contains("unknown stream `nowhere`"), "{e}");
    // A stream whose schema is broken makes its queries unplannable: only its own error.
    let e = only_error(
        "name: x\nstreams:\n  s: {schema: {a: nope}, rate: 1}\nqueries:\n  q: {sql: SELECT a FROM s}\n",
    );
    assert_eq!(e.path, "streams.s.schema.a");
    // A stream that fails for another reason still has its schema in the catalog.
    let e = only_error(
        "name: x\nstreams:\n  s: {schema: {a: int}, rate: 1, oops: 1}\nqueries:\n  q: {sql: SELECT a FROM s}\n",
    );
    assert_eq!(e.path, "streams.s.oops");
}

#[test]
fn odd_documents_give_errors_not_panics() {
    let cases = [
        "",
        "   \n# only a comment\n",
        "- a\n- b\n",
        "42",
        "name: [1, 2]\nstreams: 5\nqueries: [a]\n",
        "name: x\nseed: -1\nstreams: {s: {schema: {a: int}, rate: 1e400}}\nqueries: {q: {sql: 7}}\n",
        "name: x\nseed: 99999999999999999999999\nstreams: {s: ~}\nqueries: {q: ~}\n",
        "name: x\nstreams: {s: {schema: {a: int}, count: 0, rate: {steps: []}, fields: {a: {uniform: {min: 1, max: 99999999999999999999}}}}}\nqueries: {q: {sql: ''}}\n",
        "name: x\nstreams: {1: {schema: {a: int}, rate: {ramp: {from: 1, to: 2, over: 0s}, sine: {}}}}\nqueries: {q: {sql: SELECT}}\n",
        "name: x\nstreams: {s: {schema: {t: timestamp}, rate: {bursts: {high: 1, low: 1, on: 99999999999h, off: 1s}}, fields: {t: {constant: -5}}}}\nqueries: {q: {sql: SELECT t FROM s, cost: 0s, qos: {latency: {}, loss_tolerance: [], value: {field: t, utility: []}}}}}\n",
        "name: x\nstreams:\n  s:\n    schema:\n      a: !tagged int\n    rate: 1\nqueries:\n  q:\n    sql: \"SELECT a\n      FROM s\"\n",
        "{{{{",
        "name: \"unterminated\n",
        ":",
        "name: x\nname: y\n",
    ];
    for text in cases {
        match parse_stub(text) {
            Ok(w) => panic!("{text:?} parsed: {w:?}"),
            Err(e) => {
                assert!(!e.errors.is_empty(), "{text:?}");
                for err in &e.errors {
                    assert!(err.line >= 1 && err.column >= 1, "{text:?}: {err}");
                }
            }
        }
    }
    let e = only_error("- a\n- b\n");
    assert!(e.message.contains("not a list"), "{e}");
    let e = only_error("");
    assert!(e.message.contains("empty"), "{e}");
}

#[test]
fn load_file_reports_a_missing_file() {
    let e = load_file("/nonexistent/spillway/workload.yaml").unwrap_err();
    assert_eq!(e.errors.len(), 1);
    assert!(
        e.to_string()
            .starts_with("/nonexistent/spillway/workload.yaml:1:1: cannot read")
    );
}

#[test]
fn two_queries_writing_one_file_are_rejected() {
    let e = only_error(
        "name: x\nstreams:\n  s: {schema: {a: int}, rate: 10}\nqueries:\n  \
         p: {sql: SELECT a FROM s, sink: {jsonl: out/r.jsonl}}\n  \
         q: {sql: SELECT a FROM s, sink: {jsonl: ./out//r.jsonl}}\n",
    );
    assert_eq!(e.path, "queries.q.sink");
    assert_eq!(e.line, 6, "{e}");
    assert!(e.message.contains("as query `p` does"), "{e}");
}

#[test]
fn a_stream_gives_its_generator_one_way_and_has_one() {
    let e = only_error(
        "name: x\nstreams:\n  s:\n    schema: {a: int}\n    rate: 10\n    \
         source: {generator: {rate: 10}}\nqueries: {q: {sql: SELECT a FROM s}}\n",
    );
    assert_eq!(e.path, "streams.s");
    assert!(e.message.contains("not both"), "{e}");
    let e = only_error(
        "name: x\nstreams:\n  s: {schema: {a: int}}\nqueries: {q: {sql: SELECT a FROM s}}\n",
    );
    assert!(e.message.contains("stream needs a source"), "{e}");
    let e = only_error(
        "name: x\nstreams:\n  s: {schema: {a: int}, source: {flow: pull}}\n\
         queries: {q: {sql: SELECT a FROM s}}\n",
    );
    assert_eq!(e.path, "streams.s.source");
    let e = only_error(
        "name: x\nstreams:\n  s: {schema: {a: int}, source: {generator: {rate: 5}, flow: sideways}}\n\
         queries: {q: {sql: SELECT a FROM s}}\n",
    );
    assert_eq!(e.path, "streams.s.source.flow", "{e}");
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
