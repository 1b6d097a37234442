//! Structure-aware mutations for `spillway fuzz`: a workload or policy is parsed into a YAML
//! tree and one node is changed the way a user's typo or a hostile file would change it
//! (extreme numbers, odd durations, missing or unknown keys, swapped subtrees); SQL strings
//! are mutated token by token; a few cases also get raw byte edits, for the parser. Every
//! mutation is drawn from the case's own generator, so a case is reproducible from its seed.

use rand::RngExt;
use rand::rngs::SmallRng;
use serde_yaml::{Mapping, Number, Value};

/// Numbers at and beyond every edge the spec checks.
const NUMBERS: &[f64] = &[
    0.0,
    -1.0,
    1.0,
    0.5,
    2.0,
    7.0,
    100.0,
    1e3,
    1e6,
    1e9,
    1e12,
    1e-9,
    1e300,
    -1e300,
    64.0,
    65.0,
    9.223372036854776e18,
];
const INTEGERS: &[i64] = &[0, -1, 1, 3, 1024, 10_000, 10_001, i64::MAX, i64::MIN];
/// Strings in the places durations, names, kinds and distributions go.
const STRINGS: &[&str] = &[
    "",
    "0s",
    "1ns",
    "1ms",
    "100ms",
    "1s",
    "10s",
    "100000h",
    "-5s",
    "1e9s",
    "unlimited",
    "push",
    "pull",
    "now",
    "p99",
    "p50",
    "random",
    "semantic",
    "none",
    "tail-drop",
    "window-aware",
    "simulated",
    "live",
    "round-robin",
    "qos",
    "longest-queue",
    "int",
    "float",
    "string",
    "timestamp",
    "bool",
    "arrival",
    "ts",
    "k",
    "v",
    "ü€𝄞",
    "a: b",
    "- x",
    "{",
    "[",
    "*",
    "&a",
    "!tag",
    "~",
    "null",
    "true",
    ".nan",
    "-.inf",
];
/// Keys an unknown-key mutation adds, among them real keys in the wrong place.
const KEYS: &[&str] = &[
    "rate",
    "count",
    "fields",
    "schema",
    "sql",
    "cost",
    "qos",
    "latency",
    "duration",
    "engine",
    "tick",
    "batch_size",
    "seed",
    "policy",
    "changes",
    "kind",
    "headroom",
    "sink",
    "event_time",
    "source",
    "flow",
    "idle_timeout",
    "queue_capacity",
    "max_queries",
    "extra",
];
/// SQL tokens a token mutation puts in.
const SQL_TOKENS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP",
    "BY",
    "HAVING",
    "AS",
    "AND",
    "OR",
    "NOT",
    "*",
    "+",
    "-",
    "/",
    "%",
    "=",
    "<>",
    "<",
    ">=",
    "(",
    ")",
    ",",
    "COUNT(*)",
    "SUM(v)",
    "AVG(v)",
    "MIN(k)",
    "MAX(ts)",
    "TUMBLE(ts, INTERVAL '1' SECOND)",
    "HOP(ts, INTERVAL '1' SECOND, INTERVAL '5' SECOND)",
    "TUMBLE(PROCTIME(), INTERVAL '10' MILLISECOND)",
    "PROCTIME()",
    "INTERVAL '0' SECOND",
    "CAST(v AS INT)",
    "CASE WHEN k > 1 THEN 1 ELSE 0 END",
    "JOIN",
    "ON",
    "0",
    "1",
    "-9223372036854775808",
    "9223372036854775807",
    "1e308",
    "0.0",
    "'x'",
    "''",
    "NULL",
    "k",
    "v",
    "ts",
    "s",
    "a",
    "b",
    "window_start",
    "window_end",
    "LIMIT",
    "ORDER",
    "UNION",
    "DISTINCT",
    ";",
];

/// Applies `n` mutations to `tree`, then returns it as YAML text; with probability 1/8
/// the text also gets raw edits.
pub fn mutate_text(tree: &Value, n: usize, rng: &mut SmallRng) -> String {
    let mut v = tree.clone();
    for _ in 0..n {
        mutate_tree(&mut v, rng);
    }
    let mut text = serde_yaml::to_string(&v).unwrap_or_default();
    if rng.random_ratio(1, 8) {
        mutate_bytes(&mut text, rng);
    }
    text
}

/// Changes one node of `v`, chosen uniformly.
pub fn mutate_tree(v: &mut Value, rng: &mut SmallRng) {
    let total = count(v);
    let mut k = rng.random_range(0..total);
    let node = nth_mut(v, &mut k).expect("k < count");
    mutate_node(node, rng);
}

fn count(v: &Value) -> usize {
    1 + match v {
        Value::Sequence(s) => s.iter().map(count).sum(),
        Value::Mapping(m) => m.values().map(count).sum(),
        Value::Tagged(t) => count(&t.value),
        _ => 0,
    }
}

fn nth_mut<'a>(v: &'a mut Value, k: &mut usize) -> Option<&'a mut Value> {
    if *k == 0 {
        return Some(v);
    }
    *k -= 1;
    match v {
        Value::Sequence(s) => s.iter_mut().find_map(|c| nth_mut_step(c, k)),
        Value::Mapping(m) => m.values_mut().find_map(|c| nth_mut_step(c, k)),
        Value::Tagged(t) => nth_mut(&mut t.value, k),
        _ => None,
    }
}

/// `nth_mut` that skips a whole subtree when `k` lies beyond it.
fn nth_mut_step<'a>(v: &'a mut Value, k: &mut usize) -> Option<&'a mut Value> {
    let c = count(v);
    if *k >= c {
        *k -= c;
        None
    } else {
        nth_mut(v, k)
    }
}

fn mutate_node(node: &mut Value, rng: &mut SmallRng) {
    match node {
        Value::String(s) if looks_like_sql(s) && rng.random_ratio(3, 4) => {
            *s = mutate_sql(s, rng);
        }
        Value::Mapping(m) if !m.is_empty() && rng.random_ratio(2, 3) => mutate_mapping(m, rng),
        Value::Sequence(s) if !s.is_empty() && rng.random_ratio(1, 2) => {
            let i = rng.random_range(0..s.len());
            match rng.random_range(0..3) {
                0 => {
                    s.remove(i);
                }
                1 => {
                    let c = s[i].clone();
                    s.insert(i, c);
                }
                _ => {
                    let j = rng.random_range(0..s.len());
                    s.swap(i, j);
                }
            }
        }
        _ => *node = scalar(rng),
    }
}

fn mutate_mapping(m: &mut Mapping, rng: &mut SmallRng) {
    let keys: Vec<Value> = m.keys().cloned().collect();
    let key = &keys[rng.random_range(0..keys.len())];
    match rng.random_range(0..4) {
        0 => {
            m.shift_remove(key);
        }
        1 => {
            let key = KEYS[rng.random_range(0..KEYS.len())];
            m.insert(Value::String(key.into()), scalar(rng));
        }
        2 => {
            // Another entry's value under this key: a subtree in the wrong place.
            let other = &keys[rng.random_range(0..keys.len())];
            let v = m.get(other).cloned().unwrap_or(Value::Null);
            m.insert(key.clone(), v);
        }
        _ => {
            m.insert(key.clone(), Value::Mapping(Mapping::new()));
        }
    }
}

/// A scalar from the edge cases.
fn scalar(rng: &mut SmallRng) -> Value {
    match rng.random_range(0..4) {
        0 => Value::Number(Number::from(NUMBERS[rng.random_range(0..NUMBERS.len())])),
        1 => Value::Number(Number::from(INTEGERS[rng.random_range(0..INTEGERS.len())])),
        2 => Value::String(STRINGS[rng.random_range(0..STRINGS.len())].into()),
        _ => match rng.random_range(0..3) {
            0 => Value::Null,
            1 => Value::Bool(rng.random()),
            _ => Value::Sequence(Vec::new()),
        },
    }
}

fn looks_like_sql(s: &str) -> bool {
    s.trim_start().to_ascii_uppercase().starts_with("SELECT")
}

/// One to three token edits: replace, delete, duplicate or swap.
pub fn mutate_sql(sql: &str, rng: &mut SmallRng) -> String {
    let mut tokens: Vec<String> = sql.split_whitespace().map(str::to_string).collect();
    for _ in 0..rng.random_range(1..=3) {
        if tokens.is_empty() {
            tokens.push("SELECT".into());
        }
        let i = rng.random_range(0..tokens.len());
        let new = SQL_TOKENS[rng.random_range(0..SQL_TOKENS.len())].to_string();
        match rng.random_range(0..5) {
            0 => tokens[i] = new,
            1 => tokens.insert(i, new),
            2 => {
                tokens.remove(i);
            }
            3 => {
                let t = tokens[i].clone();
                tokens.insert(i, t);
            }
            _ => {
                let j = rng.random_range(0..tokens.len());
                tokens.swap(i, j);
            }
        }
    }
    tokens.join(" ")
}

/// Raw edits: a byte range deleted, a line duplicated, or odd characters put in.
fn mutate_bytes(text: &mut String, rng: &mut SmallRng) {
    if text.is_empty() {
        return;
    }
    let at = floor_char(text, rng.random_range(0..text.len()));
    match rng.random_range(0..3) {
        0 => {
            let end = floor_char(text, (at + rng.random_range(1..40)).min(text.len()));
            text.replace_range(at..end.max(at), "");
        }
        1 => {
            let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
            let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
            let line = text[line_start..line_end].to_string();
            text.insert_str(line_start, &line);
        }
        _ => {
            const ODD: &[&str] = &[
                "\t", "  ", ":", "- ", "\"", "'", "#", "{", "]", "\u{0}", "é",
            ];
            text.insert_str(at, ODD[rng.random_range(0..ODD.len())]);
        }
    }
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
