//! The query cases as data (`tests/queries/*.yaml`): a stream schema, input rows, a query
//! and either the exact expected rows or an expected planning error. Shared by the
//! single-engine harness (`query_cases.rs`) and the N-worker one (`workers.rs`).
//! Timestamps in input and expected rows are integers in milliseconds. `engine` builds the
//! one-stream, one-query engine these harnesses (and `workers_route.rs`) run.

#![allow(dead_code)]

use std::path::Path;

use spillway::core::engine::{Engine, EngineConfig, QueryDef, StreamDef};
use spillway::core::scheduler::SchedulerKind;
use spillway::core::schema::{DataType, Field, Scalar, Schema};
use spillway::sql::{Catalog, plan_query};

/// An engine over one stream `s` of `schema` running one query `q`, `sql`, unshed and
/// with room for any case's input.
pub fn engine(schema: &Schema, sql: &str, scheduler: SchedulerKind) -> Engine {
    let catalog = Catalog {
        streams: vec![("s".into(), schema.clone())],
    };
    let plan = plan_query(sql, &catalog).expect("plans");
    Engine::new(
        vec![StreamDef {
            name: "s".into(),
            schema: schema.clone(),
        }],
        vec![QueryDef {
            name: "q".into(),
            plan,
            latency_target: None,
            weight: 1.0,
            lossless: false,
        }],
        EngineConfig {
            queue_capacity: 1 << 20,
            queue_memory: usize::MAX,
            scheduler,
            seed: 0,
        },
    )
    .unwrap()
}

pub const MS: i64 = 1_000_000;

pub struct Case {
    pub schema: Schema,
    pub input: Vec<Vec<Scalar>>,
    pub sql: String,
    pub expect: Option<Vec<Vec<Scalar>>>,
    pub error: Option<String>,
}

pub fn load(path: &Path) -> Case {
    let text = std::fs::read_to_string(path).unwrap();
    let doc: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let stream = &doc["stream"];
    let fields: Vec<Field> = stream["schema"]
        .as_mapping()
        .expect("stream.schema is a map")
        .iter()
        .map(|(k, v)| Field {
            name: k.as_str().unwrap().to_string(),
            ty: DataType::parse(v.as_str().unwrap()).expect("known type"),
        })
        .collect();
    let mut schema = Schema::new(fields);
    schema.event_time = stream["event_time"]
        .as_str()
        .map(|n| schema.index_of(n).expect("event_time is a field"));
    let types = schema.types();
    let rows = |v: &serde_yaml::Value, types: &[DataType]| -> Vec<Vec<Scalar>> {
        v.as_sequence()
            .map(|rows| {
                rows.iter()
                    .map(|r| {
                        let r = r.as_sequence().expect("a row is a list");
                        assert_eq!(r.len(), types.len(), "row {r:?} vs types {types:?}");
                        r.iter().zip(types).map(|(v, t)| scalar(v, *t)).collect()
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let input = rows(&doc["input"], &types);
    let sql = doc["sql"].as_str().expect("sql").to_string();
    let error = doc["error"].as_str().map(String::from);
    let expect = if error.is_some() {
        None
    } else {
        let catalog = Catalog {
            streams: vec![("s".into(), schema.clone())],
        };
        let plan = plan_query(&sql, &catalog).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Some(rows(&doc["expect"], &plan.output.types()))
    };
    Case {
        schema,
        input,
        sql,
        expect,
        error,
    }
}

fn scalar(v: &serde_yaml::Value, t: DataType) -> Scalar {
    match t {
        DataType::Int => Scalar::Int(v.as_i64().expect("int")),
        DataType::Float => Scalar::Float(v.as_f64().expect("float")),
        DataType::Str => Scalar::Str(v.as_str().expect("string").into()),
        DataType::Bool => Scalar::Bool(v.as_bool().expect("bool")),
        DataType::Timestamp => Scalar::Timestamp(v.as_i64().expect("timestamp ms") * MS),
    }
}
