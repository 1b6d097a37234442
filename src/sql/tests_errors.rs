//! Planning errors: each case checks the message, the quoted snippet and the 1-based
//! line and column it points at.

use super::plan_query;
use super::tests::catalog;

/// Plans `sql`, expecting an error containing `message` that quotes `snippet` at
/// `line:column`.
#[track_caller]
fn check(sql: &str, message: &str, snippet: &str, line: usize, column: usize) {
    let e = match plan_query(sql, &catalog()) {
        Ok(p) => panic!("{sql}\nplanned, expected error `{message}`:\n{p:?}"),
        Err(e) => e,
    };
    assert!(
        e.message.contains(message),
        "{sql}\n`{}` lacks `{message}`",
        e.message
    );
    assert_eq!(
        (e.snippet.as_str(), e.line, e.column),
        (snippet, line, column),
        "{sql}\n{e}"
    );
}

#[test]
fn unknown_stream() {
    check(
        "SELECT * FROM readngs",
        "unknown stream `readngs`",
        "readngs",
        1,
        15,
    );
}

#[test]
fn unknown_column_on_a_later_line() {
    let sql = "SELECT sensor,\n       tmp\nFROM readings";
    check(
        sql,
        "unknown column `tmp` in stream `readings`",
        "tmp",
        2,
        8,
    );
}

#[test]
fn render_underlines_the_snippet() {
    let sql = "SELECT sensor,\n       tmp\nFROM readings";
    let e = plan_query(sql, &catalog()).unwrap_err();
    let want = "error: unknown column `tmp` in stream `readings`\n --> 2:8\n  |\n\
                2 |        tmp\n  |        ^^^\n";
    assert_eq!(e.render(sql), want);
}

#[test]
fn type_mismatches() {
    check(
        "SELECT * FROM readings WHERE temp > 'x'",
        "type mismatch: `temp > 'x'` compares float with string",
        "temp > 'x'",
        1,
        30,
    );
    check(
        "SELECT (city + 1) FROM readings",
        "applies + to string and int",
        "city + 1",
        1,
        9,
    );
    check(
        "SELECT sensor FROM readings WHERE temp + 1",
        "WHERE needs a bool condition",
        "temp + 1",
        1,
        35,
    );
    check(
        "SELECT -city FROM readings",
        "needs a numeric operand",
        "-city",
        1,
        8,
    );
    check(
        "SELECT sensor FROM readings WHERE NOT sensor",
        "NOT needs a bool operand",
        "sensor",
        1,
        39,
    );
    check(
        "SELECT CASE WHEN ok THEN 1 ELSE 'no' END FROM readings",
        "CASE results mix int, string",
        "CASE WHEN ok THEN 1 ELSE 'no' END",
        1,
        8,
    );
    check(
        "SELECT * FROM readings WHERE city IN ('a', 2)",
        "compares string with int",
        "city IN ('a', 2)",
        1,
        30,
    );
}

#[test]
fn unsupported_constructs() {
    let join = "SELECT * FROM readings r JOIN readings s ON r.sensor = s.sensor";
    check(
        join,
        "unsupported: JOIN",
        "JOIN readings s ON r.sensor = s.sensor",
        1,
        26,
    );
    check(
        "SELECT * FROM readings, readings",
        "unsupported: JOIN",
        "readings",
        1,
        25,
    );
    check(
        "SELECT * FROM readings ORDER BY temp",
        "unsupported: ORDER BY",
        "ORDER BY temp",
        1,
        24,
    );
    check(
        "SELECT * FROM readings LIMIT 5",
        "unsupported: LIMIT",
        "LIMIT 5",
        1,
        24,
    );
    check(
        "SELECT DISTINCT city FROM readings",
        "unsupported: DISTINCT",
        "DISTINCT",
        1,
        8,
    );
    check(
        "SELECT city FROM readings UNION SELECT city FROM readings",
        "unsupported: UNION",
        "UNION",
        1,
        27,
    );
    check(
        "WITH r AS (SELECT 1) SELECT * FROM r",
        "unsupported: WITH",
        "WITH",
        1,
        1,
    );
    check(
        "SELECT * FROM (SELECT * FROM readings)",
        "unsupported: subquery in FROM",
        "(SELECT * FROM readings)",
        1,
        15,
    );
    check(
        "SELECT SUM(temp) OVER (PARTITION BY city) FROM readings",
        "unsupported: window function (OVER)",
        "SUM(temp)",
        1,
        8,
    );
    check(
        "SELECT city LIKE 'O%' FROM readings",
        "unsupported: LIKE",
        "city LIKE 'O%'",
        1,
        8,
    );
    check(
        "SELECT UPPER(city) FROM readings",
        "unsupported: function `UPPER`",
        "UPPER(city)",
        1,
        8,
    );
    // A bare keyword the parser reads as a call: the hint says how to name the column.
    check(
        "SELECT sensor, user FROM readings",
        "`user` is an SQL keyword, read here as the function USER: to name a column `user`, \
         quote it as \"user\"",
        "user",
        1,
        16,
    );
    check(
        "SELECT sensor FROM readings WHERE current_date > 3",
        "quote it as \"current_date\"",
        "current_date",
        1,
        35,
    );
    check(
        "INSERT INTO readings VALUES (1)",
        "unsupported: statements",
        "INSERT",
        1,
        1,
    );
}

#[test]
fn syntax_errors() {
    check(
        "SELECT sensor FRM readings",
        "syntax error: expected end of statement, found readings",
        "readings",
        1,
        19,
    );
    check(
        "SELECT sensor FROM readings\nWHERE",
        "syntax error: expected an expression",
        "WHERE",
        2,
        1,
    );
    check(
        "SELECT 'oops FROM readings",
        "syntax error: unterminated",
        "'oops FROM readings",
        1,
        8,
    );
    check(
        "SELECT city FROM readings WHERE ok 'x'",
        "syntax error: expected end of statement, found 'x'",
        "'x'",
        1,
        36,
    );
}

#[test]
fn group_by_and_aggregates_need_a_window() {
    check(
        "SELECT city, COUNT(*) FROM readings GROUP BY city",
        "GROUP BY needs a window: add TUMBLE(ts, INTERVAL '1' SECOND) or HOP(...)",
        "GROUP BY city",
        1,
        37,
    );
    check(
        "SELECT COUNT(*) FROM readings",
        "aggregate `COUNT(*)` needs a window: add GROUP BY TUMBLE(ts",
        "COUNT(*)",
        1,
        8,
    );
    check(
        "SELECT 1 FROM readings HAVING ok",
        "HAVING needs a window",
        "HAVING ok",
        1,
        24,
    );
}

#[test]
fn ungrouped_columns_and_misplaced_aggregates() {
    let window = "TUMBLE(ts, INTERVAL '1' SECOND)";
    let sql = format!("SELECT city, temp, COUNT(*) FROM readings GROUP BY city, {window}");
    let msg = "column `temp` must appear in GROUP BY or inside an aggregate";
    check(&sql, msg, "temp", 1, 14);
    let sql = format!("SELECT COUNT(*) FROM readings WHERE SUM(temp) > 3 GROUP BY {window}");
    check(&sql, "not allowed in WHERE", "SUM(temp)", 1, 37);
    let sql = format!("SELECT SUM(COUNT(*)) FROM readings GROUP BY {window}");
    check(&sql, "inside another aggregate", "COUNT(*)", 1, 12);
    let sql = format!("SELECT SUM(city) FROM readings GROUP BY {window}");
    check(
        &sql,
        "`SUM(city)` needs a numeric argument, found string",
        "SUM(city)",
        1,
        8,
    );
    let sql = format!("SELECT * FROM readings GROUP BY {window}");
    check(&sql, "SELECT * is not allowed with GROUP BY", "*", 1, 8);
    let sql = format!("SELECT HOP_END(ts, INTERVAL '1' SECOND) FROM readings GROUP BY {window}");
    check(
        &sql,
        "does not match the GROUP BY window `TUMBLE`",
        "HOP_END(ts, INTERVAL '1' SECOND)",
        1,
        8,
    );
}

#[test]
fn invalid_windows() {
    let q = |g: &str| format!("SELECT COUNT(*) FROM readings GROUP BY {g}");
    check(
        &q("HOP(ts, INTERVAL '2' SECOND, INTERVAL '1' SECOND)"),
        "HOP slide 2s is longer than its size 1s",
        "HOP(ts, INTERVAL '2' SECOND, INTERVAL '1' SECOND)",
        1,
        40,
    );
    check(
        &q("HOP(ts, INTERVAL '2' SECOND, INTERVAL '3' SECOND)"),
        "must be a multiple of its slide",
        "HOP(ts, INTERVAL '2' SECOND, INTERVAL '3' SECOND)",
        1,
        40,
    );
    check(
        &q("TUMBLE(sensor, INTERVAL '1' SECOND)"),
        "window time `sensor` is int",
        "sensor",
        1,
        47,
    );
    check(
        &q("TUMBLE(ts, INTERVAL '5')"),
        "INTERVAL needs a unit",
        "INTERVAL '5'",
        1,
        51,
    );
    check(
        &q("TUMBLE(ts, INTERVAL '5 fortnights')"),
        "unknown INTERVAL unit `fortnights`",
        "INTERVAL '5 fortnights'",
        1,
        51,
    );
    check(
        &q("TUMBLE(ts, 5)"),
        "window length must be an INTERVAL",
        "5",
        1,
        51,
    );
    check(
        &q("TUMBLE(ts, INTERVAL '1' SECOND), TUMBLE(ts, INTERVAL '2' SECOND)"),
        "more than one window",
        "TUMBLE(ts, INTERVAL '2' SECOND)",
        1,
        73,
    );
    check(
        &q("sensor, city, ok, ts, temp, TUMBLE(ts, INTERVAL '1' SECOND)"),
        "too many GROUP BY keys: at most 4",
        "temp",
        1,
        62,
    );
}

#[test]
fn other_errors() {
    check("", "empty query", "", 1, 1);
    check(
        "SELECT * FROM readings; SELECT 1 FROM readings",
        "expected exactly one SELECT statement, found 2",
        "SELECT 1 FROM readings",
        1,
        25,
    );
    check("SELECT 1", "missing FROM", "SELECT", 1, 1);
    check(
        "SELECT sensor, sensor FROM readings",
        "duplicate output column `sensor`",
        "sensor",
        1,
        16,
    );
    check(
        "SELECT CASE WHEN ok THEN 1 END FROM readings",
        "CASE without ELSE",
        "CASE WHEN ok THEN 1 END",
        1,
        8,
    );
    check(
        "SELECT * FROM readings WHERE city = NULL",
        "unsupported: NULL",
        "NULL",
        1,
        37,
    );
    check(
        "SELECT x.sensor FROM readings r",
        "unknown stream or alias `x`",
        "x.sensor",
        1,
        8,
    );
}
