//! Errors inside one entry (the engine map, a stream, a query) and duplicate keys: every
//! independent problem is reported, each at its own place, with no follow-on errors.

use super::tests::errors;
use super::*;

/// `(line, column, path)` of each error, and all of them for assertion messages.
fn located(text: &str) -> (Vec<(usize, usize, String)>, String) {
    let e = errors(text);
    let all = SpecErrors { errors: e.clone() }.to_string();
    (
        e.into_iter().map(|e| (e.line, e.column, e.path)).collect(),
        all,
    )
}

#[test]
fn every_bad_engine_setting_is_reported() {
    let text = "\
name: x
engine: {batch_size: -3, tick: fast, mode: turbo, scheduler: fifo, queue_capacity: 1.5}
streams: {s: {schema: {k: int}, rate: 1}}
queries: {q: {sql: SELECT k FROM s}}
";
    let (e, all) = located(text);
    let at = |col: usize, path: &str| (2, col, path.to_string());
    assert_eq!(
        e,
        [
            at(10, "engine.batch_size"),
            at(26, "engine.tick"),
            at(38, "engine.mode"),
            at(51, "engine.scheduler"),
            at(68, "engine.queue_capacity"),
        ],
        "{all}"
    );
    // The first keeps the message it had when it was the only one reported.
    assert!(
        all.lines()
            .next()
            .unwrap()
            .starts_with("w.yaml:2:10: engine.batch_size: -3 is negative: expected a whole number"),
        "{all}"
    );
    assert!(all.contains("unknown variant `fifo`"), "{all}");
    assert!(all.contains("unknown variant `turbo`"), "{all}");
}

#[test]
fn a_stream_reports_its_unknown_field_bad_type_and_bad_distribution() {
    let text = "\
name: x
streams:
  s:
    schema: {k: flaot}
    ratee: 10
    fields: {k: {zipf: {n: -1, s: 1}}}
queries:
  q:
    sql: SELECT k FROM s
";
    let (e, all) = located(text);
    assert_eq!(
        e,
        [
            (4, 14, "streams.s.schema.k".to_string()),
            (5, 5, "streams.s.ratee".to_string()),
            (6, 25, "streams.s.fields.k.zipf.n".to_string()),
        ],
        "{all}"
    );
    // `ratee` is taken for a misspelt `rate`, not also reported missing.
    assert!(!all.contains("missing field"), "{all}");
    assert!(
        all.contains("unknown field `ratee`, expected one of"),
        "{all}"
    );
    assert!(all.contains("unknown type `flaot`"), "{all}");
}

#[test]
fn a_missing_field_is_reported_beside_a_broken_one() {
    let (e, all) = located(
        "name: x\nstreams:\n  s:\n    schema: {k: int}\n    count: many\nqueries: {q: {sql: SELECT k FROM s}}\n",
    );
    assert_eq!(
        e,
        [
            (3, 3, "streams.s".to_string()),
            (5, 5, "streams.s.count".to_string())
        ],
        "{all}"
    );
    assert!(all.contains("streams.s: stream needs a source"), "{all}");
}

#[test]
fn a_query_reports_its_unknown_field_and_bad_qos_weight() {
    let text = "\
name: x
streams: {s: {schema: {k: int}, rate: 1}}
queries:
  q:
    sql: SELECT k FROM s
    sinc: none
    qos: {weight: heavy}
";
    let (e, all) = located(text);
    assert_eq!(
        e,
        [
            (6, 5, "queries.q.sinc".to_string()),
            (7, 11, "queries.q.qos.weight".to_string()),
        ],
        "{all}"
    );
    assert!(all.contains("unknown field `sinc`"), "{all}");
}

#[test]
fn duplicate_stream_and_query_keys_are_all_reported() {
    let text = "\
name: x
streams:
  s: {schema: {k: int}, rate: 1}
  s: {schema: {k: int}, rate: 2}
queries:
  q: {sql: SELECT k FROM s}
  r: {sql: SELECT k FROM s}
  q: {sql: SELECT k FROM s}
";
    let e = errors(text);
    let all = SpecErrors { errors: e.clone() }.to_string();
    assert_eq!(e.len(), 2, "{all}");
    // The first as the YAML parser reports it, the next alike.
    assert!(
        e[0].message
            .ends_with("streams: duplicate entry with key \"s\""),
        "{all}"
    );
    assert!(
        all.ends_with("w.yaml:8:3: queries: duplicate entry with key \"q\""),
        "{all}"
    );
}

#[test]
fn a_bad_retain_is_located_at_its_key() {
    let text = "\
name: x
streams:
  s: {schema: {k: int}, rate: 1, retain: {last: 0s, tuples: 20000000}}
  t: {schema: {k: int}, rate: 1, retain: {}}
  u: {schema: {k: int}, rate: 1, retain: {lats: 5s}}
queries: {q: {sql: SELECT k FROM s}}
";
    let (e, all) = located(text);
    let paths: Vec<&str> = e.iter().map(|(_, _, p)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "streams.s.retain.last",
            "streams.s.retain.tuples",
            "streams.t.retain",
            "streams.u.retain.lats"
        ],
        "{all}"
    );
    assert_eq!((e[0].0, e[0].1), (3, 43), "{all}");
    assert!(all.contains("last must be positive"), "{all}");
    assert!(all.contains("more than the 10000000"), "{all}");
    assert!(all.contains("retain needs `last`"), "{all}");
}

#[test]
fn retain_bounds_history_by_time_and_tuples() {
    let w = super::tests::parse_stub(
        "name: x\nstreams:\n  s: {schema: {k: int}, rate: 1, retain: {last: 5s}}\n  \
         t: {schema: {k: int}, rate: 1, retain: {tuples: 500}}\n  v: {schema: {k: int}, rate: 1}\n\
         queries: {q: {sql: SELECT k FROM s}}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r: Vec<_> = w.streams.iter().map(|s| s.retain).collect();
    use crate::core::retain::RetainLimit;
    assert_eq!(
        r,
        [
            Some(RetainLimit {
                last: Some(5_000_000_000),
                tuples: 1_000_000
            }),
            Some(RetainLimit {
                last: None,
                tuples: 500
            }),
            None
        ]
    );
}
