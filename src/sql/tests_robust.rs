//! User input never panics the planner: odd and random queries either plan or fail with
//! a position that lies inside the query text.

use proptest::prelude::*;

use super::plan_query;
use super::tests::catalog;

/// Plans `sql`; an error must point at a line and column that exist in `sql`.
fn plans_or_points_inside(sql: &str) {
    let Err(e) = plan_query(sql, &catalog()) else {
        return;
    };
    let lines: Vec<&str> = sql.split('\n').collect();
    assert!(e.line >= 1 && e.line <= lines.len(), "{sql:?}: {e:?}");
    let width = lines[e.line - 1].chars().count();
    assert!(e.column >= 1 && e.column <= width + 1, "{sql:?}: {e:?}");
    assert!(!e.message.is_empty());
}

#[test]
fn odd_queries_fail_cleanly() {
    let deep = format!("SELECT {}1{} FROM readings", "(".repeat(80), ")".repeat(80));
    let cases = [
        "",
        "   \n  ",
        ";",
        "SELECT",
        "SELECT ü FROM readings",
        "SELECT\t'é' = city,\n  ünknown FROM readings",
        "((((",
        &deep,
        "SELECT * FROM readings WHERE ts > 'x'",
        "SELECT COUNT(*) FROM readings GROUP BY TUMBLE(ts, INTERVAL '0' SECOND)",
        "SELECT COUNT(*) FROM readings GROUP BY TUMBLE(ts, INTERVAL '999999999999' DAY)",
        "SELECT COUNT(*) FROM readings GROUP BY TUMBLE(ts, INTERVAL '.' SECOND)",
        "SELECT COUNT(*) FROM readings GROUP BY TUMBLE(ts, INTERVAL '1' SECOND, 3)",
        "SELECT COUNT(*) FROM readings GROUP BY TUMBLE(*, INTERVAL '1' SECOND)",
        "SELECT 99999999999999999999 FROM readings",
        "SELECT TUMBLE_START(ts) FROM readings",
        "SELECT MAX(*) FROM readings GROUP BY TUMBLE(ts, INTERVAL '1' SECOND)",
        "SELECT COUNT(DISTINCT city) FROM readings GROUP BY TUMBLE(ts, INTERVAL '1' SECOND)",
        "SELECT window_start FROM readings",
        "SELECT PROCTIME(1) FROM readings",
        "SELECT readings.* FROM readings WHERE readings.ok",
        "SELECT r.* FROM readings AS r WHERE r.sensor IN (SELECT 1)",
    ];
    for sql in cases {
        plans_or_points_inside(sql);
    }
}

const WORDS: &[&str] = &[
    "SELECT",
    "FROM",
    "readings",
    "WHERE",
    "GROUP",
    "BY",
    "HAVING",
    "TUMBLE",
    "HOP",
    "(",
    ")",
    ",",
    "*",
    "+",
    "-",
    "/",
    "=",
    "<",
    "AND",
    "NOT",
    "IN",
    "BETWEEN",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "ts",
    "temp",
    "city",
    "ok",
    "sensor",
    "COUNT",
    "SUM",
    "INTERVAL",
    "'1'",
    "SECOND",
    "'x'",
    "1",
    "2.5",
    "PROCTIME",
    "window_start",
    "\n",
    "é",
];

proptest! {
    #[test]
    fn random_token_soup_never_panics(
        picks in prop::collection::vec(0..WORDS.len(), 0..24),
        prefix in 0..3usize,
    ) {
        let head = ["", "SELECT ", "SELECT sensor FROM readings WHERE "][prefix];
        let body: Vec<&str> = picks.iter().map(|&i| WORDS[i]).collect();
        plans_or_points_inside(&format!("{head}{}", body.join(" ")));
    }
}
