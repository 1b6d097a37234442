//! The JSON-lines text of result rows. Each row carries the query name and its latency;
//! field names are escaped once a call, values appended as bytes to one line buffer (no
//! `fmt` on the common paths). A row computed from input that lost tuples to random
//! shedding also carries its keep fraction and, per qualified column, a 95% interval or
//! the side of the exact answer its value bounds; exact rows carry no extra field.

use std::io::{self, Write};

use crate::core::batch::Column;
use crate::core::engine::Emitted;
use crate::core::operators::{ColumnApprox, ResultApprox};
use crate::core::schema::DataType;

/// Writes the rows of `r` as JSON lines.
pub fn write_rows(w: &mut impl Write, r: &Emitted<'_>) -> io::Result<()> {
    let query = serde_json::to_string(r.query).map_err(io::Error::other)?;
    let names: Vec<String> = r
        .names
        .iter()
        .map(|n| serde_json::to_string(n).unwrap_or_else(|_| "\"?\"".into()))
        .collect();
    // Field names of the side-car, escaped once per call, only when some row needs them.
    let approx_names: Vec<(String, String)> = match r.approx {
        Some(_) => r
            .names
            .iter()
            .map(|n| {
                (
                    json_name(&format!("{n}_ci95")),
                    json_name(&format!("{n}_bound")),
                )
            })
            .collect(),
        None => Vec::new(),
    };
    // Row text goes through one buffer per call, bytes appended without `fmt` (which cost
    // about 700 ns a row of four columns: `spillway bench --sink`).
    let prefix = format!("{{\"query\":{query},\"latency_ms\":");
    let names: Vec<String> = names.iter().map(|n| format!(",{n}:")).collect();
    let mut line: Vec<u8> = Vec::with_capacity(256);
    for row in 0..r.batch.len() {
        line.clear();
        line.extend_from_slice(prefix.as_bytes());
        push_millis(&mut line, r.emitted_at - r.batch.arrival[row]);
        for ((name, col), ty) in names.iter().zip(&r.batch.columns).zip(r.types) {
            line.extend_from_slice(name.as_bytes());
            push_value(&mut line, col, row, *ty);
        }
        if let Some(a) = r.approx {
            push_approx(&mut line, a, row, &approx_names);
        }
        line.extend_from_slice(b"}\n");
        w.write_all(&line)?;
    }
    Ok(())
}

fn json_name(n: &str) -> String {
    serde_json::to_string(n).unwrap_or_else(|_| "\"?\"".into())
}

/// Appends the side-car fields of `row` if it is approximate (keep < 1), as bytes (under
/// shedding every row of a windowed query is approximate: `fmt` here cost as much as the
/// rest of the row).
fn push_approx(out: &mut Vec<u8>, a: &ResultApprox, row: usize, names: &[(String, String)]) {
    let keep = a.keep.get(row).copied().unwrap_or(1.0);
    if keep.is_nan() || keep >= 1.0 {
        return;
    }
    out.extend_from_slice(b",\"keep\":");
    push_keep(out, keep);
    for (c, (ci, bound)) in a.columns.iter().zip(names) {
        match c {
            ColumnApprox::Exact => {}
            // Not scaled in this row (exact part, or thinned by value): no interval.
            ColumnApprox::Interval { lo, hi } if lo[row].is_nan() && hi[row].is_nan() => {}
            ColumnApprox::Interval { lo, hi } => {
                out.push(b',');
                out.extend_from_slice(ci.as_bytes());
                out.extend_from_slice(b":[");
                push_bound(out, lo[row]);
                out.push(b',');
                push_bound(out, hi[row]);
                out.push(b']');
            }
            ColumnApprox::LowerBound | ColumnApprox::UpperBound => {
                out.push(b',');
                out.extend_from_slice(bound.as_bytes());
                out.extend_from_slice(match c {
                    ColumnApprox::LowerBound => b":\"lower\"",
                    _ => b":\"upper\"",
                });
            }
        }
    }
}

/// An interval bound: the shortest decimal that reads back as `v` (`ryu`, a fifth of
/// `fmt`'s cost, in plain notation from 1e-5 to 1e16, `.0` trimmed), `write_float` outside.
fn push_bound(out: &mut Vec<u8>, v: f64) {
    if v == 0.0 || !(1e-5..1e16).contains(&v.abs()) {
        let _ = write_float(out, v);
        return;
    }
    let mut buf = ryu::Buffer::new();
    let s = buf.format_finite(v);
    out.extend_from_slice(s.strip_suffix(".0").unwrap_or(s).as_bytes());
}

/// A keep fraction with three significant digits, trailing zeros trimmed (`0.5`, `0.333`,
/// `0.0012`). From 0.001 up, in integers; below, through `fmt`.
fn push_keep(out: &mut Vec<u8>, keep: f64) {
    let decimals: u32 = if keep >= 0.1 {
        3
    } else if keep >= 0.01 {
        4
    } else if keep >= 0.001 {
        5
    } else {
        let decimals = if keep > 0.0 {
            (2 - keep.log10().floor() as i64).clamp(3, 17) as usize
        } else {
            3
        };
        let at = out.len();
        let _ = write!(out, "{keep:.decimals$}");
        trim_zeros(out, at);
        return;
    };
    let scaled = (keep * 10f64.powi(decimals as i32)).round() as u64;
    let at = out.len();
    let unit = 10u64.pow(decimals);
    out.extend_from_slice(itoa::Buffer::new().format(scaled / unit).as_bytes());
    out.push(b'.');
    let frac = scaled % unit;
    let mut div = unit / 10;
    while div > 0 {
        out.push(b'0' + (frac / div % 10) as u8);
        div /= 10;
    }
    trim_zeros(out, at);
}

/// Trims the trailing zeros of the decimal written from `at`, and its point if bare.
fn trim_zeros(out: &mut Vec<u8>, at: usize) {
    if !out[at..].contains(&b'.') {
        return;
    }
    while out.len() > at && out.last() == Some(&b'0') {
        out.pop();
    }
    if out.last() == Some(&b'.') {
        out.pop();
    }
}

/// A float as JSON: the shortest decimal that reads back as `v`, in exponent form when
/// very large or very small (`1.79e308`, not 309 digits; `1e-320`); `null` when not finite
/// (JSON has no NaN or infinity).
fn write_float(w: &mut impl Write, v: f64) -> io::Result<()> {
    if !v.is_finite() {
        w.write_all(b"null")
    } else if v != 0.0 && !(1e-7..1e16).contains(&v.abs()) {
        write!(w, "{v:e}")
    } else {
        write!(w, "{v}")
    }
}

/// Appends `row` of `col` (of type `ty`) as a JSON value.
fn push_value(out: &mut Vec<u8>, col: &Column, row: usize, ty: DataType) {
    match col {
        Column::Int(v) if ty == DataType::Timestamp => {
            out.push(b'"');
            crate::core::timefmt::push_rfc3339_millis(out, v[row]);
            out.push(b'"');
        }
        Column::Int(v) => out.extend_from_slice(itoa::Buffer::new().format(v[row]).as_bytes()),
        Column::Float(v) => {
            // Writing into a Vec cannot fail.
            let _ = write_float(out, v[row]);
        }
        Column::Bool(v) => out.extend_from_slice(if v[row] { b"true" } else { b"false" }),
        Column::Str(v) => {
            let _ = serde_json::to_writer(&mut *out, &*v[row]);
        }
    }
}

/// Appends `ns` as milliseconds with three decimals (`2.500`), rounded to the nearest
/// microsecond (halves away from zero).
fn push_millis(out: &mut Vec<u8>, ns: i64) {
    let us = (i128::from(ns) + if ns < 0 { -500 } else { 500 }) / 1000;
    if us < 0 {
        out.push(b'-');
    }
    let us = us.unsigned_abs();
    out.extend_from_slice(itoa::Buffer::new().format(us / 1000).as_bytes());
    let frac = (us % 1000) as u16;
    out.extend_from_slice(&[
        b'.',
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]);
}

#[cfg(test)]
#[path = "json_rows_tests.rs"]
mod tests;
