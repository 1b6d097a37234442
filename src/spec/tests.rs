//! Tests of reading valid workloads into typed values, independent of the SQL planner:
//! queries are planned by a stub that only resolves `FROM <stream>` (the real planner is
//! exercised in `tests_sql`, error reporting in `tests_errors`).

use super::*;
use crate::core::plan::{PlanBody, QueryPlan};
use crate::core::schema::{DataType, Scalar, Schema};
use crate::generator::{FieldGen, RateProfile, mix_seed};
use crate::sql::{Catalog, SqlError};

/// Plans `... FROM <stream> ...` into an empty projection of that stream.
pub(super) fn stub(sql: &str, catalog: &Catalog) -> Result<QueryPlan, SqlError> {
    for (l, line) in sql.lines().enumerate() {
        let upper = line.to_ascii_uppercase();
        if let Some(i) = upper.find("FROM ") {
            let rest = &line[i + 5..];
            let name: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let col = i + 5 + rest.len() - rest.trim_start().len() + 1;
            if catalog.get(&name).is_none() {
                return Err(SqlError {
                    message: format!("unknown stream `{name}`"),
                    snippet: name,
                    line: l + 1,
                    column: col,
                });
            }
            return Ok(QueryPlan {
                stream: name,
                filter: None,
                body: PlanBody::Project(vec![]),
                output: Schema::default(),
            });
        }
    }
    Err(SqlError {
        message: "no FROM".into(),
        snippet: sql.into(),
        line: 1,
        column: 1,
    })
}

pub(super) fn parse_stub(text: &str) -> Result<Workload, SpecErrors> {
    parse_with(text, "w.yaml", &stub)
}

pub(super) fn errors(text: &str) -> Vec<SpecError> {
    match parse_stub(text) {
        Ok(_) => panic!("expected errors"),
        Err(e) => e.errors,
    }
}

/// The one error of `text`; panics with all of them otherwise.
pub(super) fn only_error(text: &str) -> SpecError {
    let e = errors(text);
    assert_eq!(e.len(), 1, "{}", SpecErrors { errors: e.clone() });
    e.into_iter().next().unwrap()
}

const FULL: &str = "\
name: full
seed: 42
duration: 2m
engine:
  mode: simulated
  workers: 1
  tick: 50ms
  batch_size: 64
  close_step: 4096
  turn_quantum: 2ms
  queue_capacity: 5000
  queue_memory: 64MiB
  scheduler: qos
streams:
  readings:
    schema: {sensor: int, temp: float, city: string, ok: bool, ts: timestamp}
    event_time: ts
    count: 1000000
    rate: 50000
    fields:
      sensor: {zipf: {n: 1000, s: 1.1}}
      temp: {normal: {mean: 20, stddev: 5}}
      city: {choice: {values: [oslo, rome], weights: [3, 1]}}
      ok: {bernoulli: 0.3}
      ts: {sequence: {start: 0, step: 1ms}}
  steps:
    schema: {k: int, v: float, t: timestamp}
    rate: {steps: [{at: 0s, rate: 100}, {at: 10s, rate: 300}]}
    fields:
      k: {sequence: {start: 5, step: 2}}
      v: {uniform: {min: -1, max: 1}}
  ramp:
    schema: {k: int, s: string}
    rate: {ramp: {from: 10, to: 1000, over: 30s}}
    fields:
      k: {uniform: {min: 1, max: 6}}
      s: {constant: hello}
  sine:
    schema: {k: int}
    rate: {sine: {mean: 1000, amplitude: 500, period: 10s}}
  bursts:
    schema: {k: int}
    rate: {bursts: {high: 10000, low: 100, on: 1s, off: 4s}}
  fast:
    schema: {k: int}
    rate: unlimited
queries:
  hot:
    sql: |
      SELECT sensor, temp
      FROM readings WHERE temp > 25
    qos:
      latency: {p99: 100ms}
      loss_tolerance: [[100, 1.0], [50, 0.7], [0, 0.0]]
      value: {field: temp, utility: [[25, 0.1], [35, 1.0]]}
      weight: 2
    cost: 180ns
    sink: {jsonl: out/hot.jsonl}
  quiet:
    sql: SELECT k FROM steps
    sink: none
  plain:
    sql: SELECT k FROM fast
policy: policies/none.yaml
";

#[test]
fn a_full_workload_parses_into_typed_values() {
    let w = parse_stub(FULL).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(w.name, "full");
    assert_eq!(w.seed, 42);
    assert_eq!(w.duration, Some(120_000_000_000));
    assert_eq!(
        w.engine,
        EngineSettings {
            mode: Mode::Simulated,
            workers: 1,
            workers_auto: false,
            cores: 1.0,
            tick: 50_000_000,
            batch_size: 64,
            close_step: 4096,
            turn_quantum: 2_000_000,
            queue_capacity: 5000,
            queue_memory: 64 << 20,
            scheduler: SchedulerKind::Qos,
        }
    );
    assert_eq!(w.policy.as_deref(), Some("policies/none.yaml"));

    let names: Vec<&str> = w.streams.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["readings", "steps", "ramp", "sine", "bursts", "fast"]
    );
    let r = &w.streams[0];
    let fields: Vec<(&str, DataType)> = r
        .schema
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.ty))
        .collect();
    assert_eq!(
        fields,
        [
            ("sensor", DataType::Int),
            ("temp", DataType::Float),
            ("city", DataType::Str),
            ("ok", DataType::Bool),
            ("ts", DataType::Timestamp)
        ]
    );
    assert_eq!(r.schema.event_time, Some(4));
    assert_eq!(r.generator().unwrap().count, Some(1_000_000));
    assert_eq!(r.generator().unwrap().rate, RateProfile::Constant(50_000.0));
    assert_eq!(
        r.generator().unwrap().fields,
        vec![
            FieldGen::Zipf { n: 1000, s: 1.1 },
            FieldGen::Normal {
                mean: 20.0,
                stddev: 5.0
            },
            FieldGen::Choice {
                values: vec!["oslo".into(), "rome".into()],
                weights: Some(vec![3.0, 1.0])
            },
            FieldGen::Bernoulli { p: 0.3 },
            FieldGen::Sequence {
                start: Scalar::Timestamp(0),
                step: Scalar::Timestamp(1_000_000)
            },
        ]
    );
    for (i, s) in w.streams.iter().enumerate() {
        assert_eq!(
            s.generator().unwrap().seed,
            mix_seed(42, i as u64),
            "{}",
            s.name
        );
    }

    let s = &w.streams[1];
    assert_eq!(
        s.generator().unwrap().rate,
        RateProfile::Steps(vec![(0, 100.0), (10_000_000_000, 300.0)])
    );
    assert_eq!(s.schema.event_time, None);
    assert_eq!(
        s.generator().unwrap().fields,
        vec![
            FieldGen::Sequence {
                start: Scalar::Int(5),
                step: Scalar::Int(2)
            },
            FieldGen::UniformFloat {
                min: -1.0,
                max: 1.0
            },
            FieldGen::Now,
        ]
    );
    assert_eq!(
        w.streams[2].generator().unwrap().rate,
        RateProfile::Ramp {
            from: 10.0,
            to: 1000.0,
            over: 30_000_000_000
        }
    );
    assert_eq!(
        w.streams[2].generator().unwrap().fields,
        vec![
            FieldGen::UniformInt { min: 1, max: 6 },
            FieldGen::Constant(Scalar::Str("hello".into()))
        ]
    );
    assert_eq!(
        w.streams[3].generator().unwrap().rate,
        RateProfile::Sine {
            mean: 1000.0,
            amplitude: 500.0,
            period: 10_000_000_000
        }
    );
    assert_eq!(
        w.streams[3].generator().unwrap().fields,
        vec![FieldGen::UniformInt { min: 0, max: 1000 }]
    );
    assert_eq!(
        w.streams[4].generator().unwrap().rate,
        RateProfile::Bursts {
            high: 10_000.0,
            low: 100.0,
            on: 1_000_000_000,
            off: 4_000_000_000
        }
    );
    assert!(w.streams[5].generator().unwrap().rate.is_unlimited());

    let names: Vec<&str> = w.queries.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(names, ["hot", "quiet", "plain"]);
    let hot = &w.queries[0];
    assert_eq!(
        hot.sql,
        "SELECT sensor, temp\nFROM readings WHERE temp > 25\n"
    );
    assert_eq!(hot.plan.stream, "readings");
    assert_eq!(hot.cost, Some(180));
    assert_eq!(hot.sink, SinkSpec::Jsonl("out/hot.jsonl".into()));
    let qos = hot.qos.as_ref().unwrap();
    assert_eq!(
        qos.latency,
        Some(LatencyTarget {
            percentile: 99.0,
            target: 100_000_000
        })
    );
    assert_eq!(qos.latency_target(), Some(100_000_000));
    assert_eq!(qos.weight, 2.0);
    let loss = qos.loss_tolerance.as_ref().unwrap();
    assert_eq!(loss.points, vec![(0.0, 0.0), (50.0, 0.7), (100.0, 1.0)]);
    assert!((loss.at(75.0) - 0.85).abs() < 1e-12);
    let value = qos.value.as_ref().unwrap();
    assert_eq!((value.field.as_str(), value.column), ("temp", 1));
    assert_eq!(value.curve.points, vec![(25.0, 0.1), (35.0, 1.0)]);
    assert_eq!(w.queries[1].sink, SinkSpec::None);
    assert_eq!(w.queries[2].sink, SinkSpec::Stdout);
    assert_eq!(w.queries[2].qos, None);
    assert_eq!(w.catalog().streams.len(), 6);
}

#[test]
fn the_derived_config_reads_what_the_lenient_reader_reads() {
    // Guards the list of top-level fields in `read` against the struct.
    let value: serde_yaml::Value = serde_yaml::from_str(FULL).unwrap();
    let direct: WorkloadConfig = de::from_value(&value, "").unwrap();
    let mut diag = Diagnostics::new(FULL, "w.yaml");
    let lenient = read::read(&mut diag).unwrap();
    assert!(diag.is_empty());
    assert_eq!(direct, lenient.config);
}

#[test]
fn defaults_apply_when_settings_are_left_out() {
    let w = parse_stub(
        "name: tiny\nstreams:\n  s:\n    schema: {a: int, t: timestamp}\n    rate: 10\n\
         queries:\n  q:\n    sql: SELECT a FROM s\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(w.seed, 0);
    assert_eq!(w.duration, None);
    assert_eq!(w.engine, EngineSettings::default());
    assert_eq!(w.streams[0].generator().unwrap().count, None);
    assert_eq!(
        w.streams[0].generator().unwrap().fields,
        vec![FieldGen::default_for(DataType::Int), FieldGen::Now]
    );
    assert_eq!(w.queries[0].sink, SinkSpec::Stdout);
    assert_eq!(w.policy, None);
}

#[test]
fn a_close_step_of_zero_is_refused_and_the_default_is_the_live_step() {
    let e = only_error(
        "name: x\nengine: {close_step: 0}\nstreams: {s: {schema: {k: int}, rate: 1}}\nqueries: {q: {sql: SELECT k FROM s}}\n",
    );
    assert_eq!((e.line, e.path.as_str()), (2, "engine.close_step"));
    assert!(e.message.contains("close_step must be at least 1"), "{e}");
    let w = parse_stub("name: x\nstreams: {s: {schema: {k: int}, rate: 1}}\nqueries: {q: {sql: SELECT k FROM s}}\n")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(w.engine.close_step, crate::core::engine::LIVE_CLOSE_STEP);
}

#[test]
fn a_turn_quantum_outside_10us_to_1s_is_refused_zero_is_turns_and_the_default_is_live() {
    for bad in ["2s", "5us"] {
        let e = only_error(&format!(
            "name: x\nengine: {{turn_quantum: {bad}}}\nstreams: {{s: {{schema: {{k: int}}, rate: 1}}}}\nqueries: {{q: {{sql: SELECT k FROM s}}}}\n"
        ));
        assert_eq!((e.line, e.path.as_str()), (2, "engine.turn_quantum"));
        assert!(
            e.message
                .contains("turn_quantum must be 0 (a turn a round) or from 10us to 1s"),
            "{e}"
        );
    }
    let parse = |engine: &str| {
        parse_stub(&format!("name: x\n{engine}streams: {{s: {{schema: {{k: int}}, rate: 1}}}}\nqueries: {{q: {{sql: SELECT k FROM s}}}}\n"))
            .unwrap_or_else(|e| panic!("{e}"))
            .engine
            .turn_quantum
    };
    assert_eq!(parse(""), crate::core::engine::LIVE_TURN_QUANTUM);
    assert_eq!(parse("engine: {turn_quantum: 0}\n"), 0);
    assert_eq!(parse("engine: {turn_quantum: 250us}\n"), 250_000);
}

#[test]
fn whole_number_settings_say_what_is_wrong_in_words() {
    let case = |v: &str| {
        let e = only_error(&format!(
            "name: x\nengine: {{close_step: {v}}}\nstreams: {{s: {{schema: {{k: int}}, rate: 1}}}}\nqueries: {{q: {{sql: SELECT k FROM s}}}}\n"
        ));
        assert_eq!((e.line, e.path.as_str()), (2, "engine.close_step"), "{e}");
        e.message
    };
    assert_eq!(
        case("-1"),
        "-1 is negative: expected a whole number, 0 or more"
    );
    // Beyond 64 bits the YAML reader itself refuses the number, before any setting reads
    // it (its own words, still located).
    assert!(case("1.5").contains("expected a whole number, 0 or more"));
    assert!(case("big").contains("expected a whole number, 0 or more"));
    let w = parse_stub(
        "name: x\nengine: {batch_size: 64, queue_capacity: ~}\nstreams: {s: {schema: {k: int}, rate: 1}}\nqueries: {q: {sql: SELECT k FROM s}}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(w.engine.batch_size, 64);
    assert_eq!(w.engine.queue_capacity, 1_000_000, "null is unset");
}
