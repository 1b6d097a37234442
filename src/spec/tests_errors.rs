//! Tests of error reporting for a document's structure: every problem of a file is reported
//! once, at the right line, column and setting path, with a message that says what to write
//! instead; odd documents give errors, never panics (setting values: `tests_errors_values`).
//! Queries are planned by the stub of `tests`.

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
