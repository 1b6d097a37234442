//! Workload tests that go through the real SQL planner: valid queries plan, and a planning
//! error is reported at its position inside the workload file.

use super::*;
use crate::core::plan::PlanBody;

fn stream(sql_block: &str) -> String {
    format!(
        "name: sql\nstreams:\n  readings:\n    schema: {{sensor: int, temp: float, ts: timestamp}}\n    \
         event_time: ts\n    rate: 1000\nqueries:\n{sql_block}"
    )
}

#[test]
fn real_queries_plan() {
    let text = stream(
        "  hot:\n    sql: SELECT sensor, temp FROM readings WHERE temp > 25\n  \
         per_sensor:\n    sql: |\n      SELECT sensor, COUNT(*) AS n\n      FROM readings\n      \
         GROUP BY sensor, TUMBLE(ts, INTERVAL '1' SECOND)\n",
    );
    let w = parse(&text, "w.yaml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(w.queries.len(), 2);
    assert!(matches!(w.queries[0].plan.body, PlanBody::Project(_)));
    assert!(matches!(w.queries[1].plan.body, PlanBody::Aggregate(_)));
    assert_eq!(w.queries[1].plan.stream, "readings");
}

#[test]
fn an_invalid_query_is_reported_on_its_line_in_the_file() {
    // `tmp` sits on line 13 of the file, column 13.
    let text = stream(
        "  ok:\n    sql: SELECT sensor FROM readings\n  bad:\n    sql: |\n      SELECT sensor,\n        \
         AVG(tmp) AS t\n      FROM readings\n      GROUP BY sensor, TUMBLE(ts, INTERVAL '1' SECOND)\n",
    );
    let e = parse(&text, "w.yaml").unwrap_err();
    assert_eq!(e.errors.len(), 1, "{e}");
    let err = &e.errors[0];
    assert_eq!(err.path, "queries.bad.sql");
    assert!(err.message.contains("tmp"), "{err}");
    assert_eq!(err.line, 13, "{err}\n{text}");
    assert_eq!(err.column, 13, "{err}\n{text}");
}

#[test]
fn an_invalid_inline_query_is_reported_at_its_column() {
    let text = stream("  bad:\n    sql: SELECT nope FROM readings\n");
    let e = parse(&text, "w.yaml").unwrap_err();
    let err = &e.errors[0];
    assert_eq!((err.line, err.column), (9, 17), "{err}");
}

#[test]
fn every_workload_in_the_repository_is_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("workloads/ exists") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            load_file(&path).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n > 0, "no workloads in {}", dir.display());
}
