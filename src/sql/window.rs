//! Window calls in GROUP BY (`TUMBLE(time, size)`, `HOP(time, slide, size)`) and INTERVAL
//! literals; every window that leaves here has `0 < slide <= size` with size a multiple
//! of slide, so each tuple belongs to exactly `size / slide` windows.

use sqlparser::ast;

use super::SqlError;
use super::expr::{Arg, Planner, func_name};
use super::source::Source;
use crate::core::expr::Expr;
use crate::core::plan::{TimeSource, WindowSpec, fmt_nanos};
use crate::core::schema::{DataType, Nanos, Schema};

/// A planned `TUMBLE` or `HOP` call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct WindowCall {
    /// `TUMBLE` or `HOP`; the matching `*_START`/`*_END` functions must use the same name.
    pub name: &'static str,
    pub time: TimeSource,
    pub spec: WindowSpec,
}

pub(super) fn is_window_call(name: &str) -> bool {
    name == "TUMBLE" || name == "HOP"
}

/// How to add a window, phrased with the stream's event-time column when it has one.
pub(super) fn suggestion(schema: &Schema) -> String {
    let time = schema
        .event_time
        .and_then(|i| schema.fields.get(i))
        .map_or("PROCTIME()", |f| f.name.as_str());
    format!("TUMBLE({time}, INTERVAL '1' SECOND) or HOP(...)")
}

/// Plans `e` as a window call; `Ok(None)` if it is not a `TUMBLE` or `HOP` call.
pub(super) fn window_call(p: &Planner<'_>, e: &ast::Expr) -> Result<Option<WindowCall>, SqlError> {
    let ast::Expr::Function(f) = e else {
        return Ok(None);
    };
    let (name, arity) = match func_name(f).as_str() {
        "TUMBLE" => ("TUMBLE", 2),
        "HOP" => ("HOP", 3),
        _ => return Ok(None),
    };
    let args = p.call_args(e, f, arity)?;
    let time = time_source(p, &args[0], e)?;
    let mut lengths = Vec::with_capacity(2);
    for a in &args[1..] {
        lengths.push(interval_arg(p.src, a, e)?);
    }
    let spec = match lengths[..] {
        [size] => WindowSpec::tumbling(size),
        [slide, size] => WindowSpec { size, slide },
        _ => unreachable!("arity checked"),
    };
    if spec.slide > spec.size {
        let msg = format!(
            "HOP slide {} is longer than its size {} (the arguments are time, slide, size)",
            fmt_nanos(spec.slide),
            fmt_nanos(spec.size)
        );
        return Err(p.src.expr_error(msg, e));
    }
    if spec.size % spec.slide != 0 {
        let msg = format!(
            "HOP size {} must be a multiple of its slide {}",
            fmt_nanos(spec.size),
            fmt_nanos(spec.slide)
        );
        return Err(p.src.expr_error(msg, e));
    }
    if spec.size / spec.slide > MAX_WINDOWS_PER_TUPLE {
        let msg = format!(
            "HOP puts every tuple in {} windows (size {} / slide {}); at most {MAX_WINDOWS_PER_TUPLE} are supported: use a longer slide",
            spec.size / spec.slide,
            fmt_nanos(spec.size),
            fmt_nanos(spec.slide)
        );
        return Err(p.src.expr_error(msg, e));
    }
    Ok(Some(WindowCall { name, time, spec }))
}

/// Each tuple updates `size / slide` windows; past this a HOP is a mistake, not a query.
const MAX_WINDOWS_PER_TUPLE: i64 = 1000;

fn time_source(p: &Planner<'_>, arg: &Arg<'_>, call: &ast::Expr) -> Result<TimeSource, SqlError> {
    let Arg::Expr(x) = arg else {
        return Err(p
            .src
            .expr_error("window time must be a timestamp column or PROCTIME()", call));
    };
    if let Some(t) = p.column(x)? {
        return match (t.expr, t.ty) {
            (Expr::Column(i), DataType::Timestamp) => Ok(TimeSource::Column(i)),
            (_, ty) => {
                let msg = format!(
                    "type mismatch: window time `{}` is {ty}, needs a timestamp column or PROCTIME()",
                    p.src.expr_text(x)
                );
                Err(p.src.expr_error(msg, x))
            }
        };
    }
    if let ast::Expr::Function(f) = x
        && func_name(f) == "PROCTIME"
    {
        p.call_args(x, f, 0)?;
        return Ok(TimeSource::Arrival);
    }
    Err(p
        .src
        .expr_error("window time must be a timestamp column or PROCTIME()", x))
}

fn interval_arg(src: &Source<'_>, arg: &Arg<'_>, call: &ast::Expr) -> Result<Nanos, SqlError> {
    match arg {
        Arg::Expr(e @ ast::Expr::Interval(iv)) => interval_nanos(src, e, iv),
        Arg::Expr(e) => Err(src.expr_error(
            "window length must be an INTERVAL, e.g. INTERVAL '1' SECOND",
            e,
        )),
        Arg::Star => Err(src.expr_error(
            "window length must be an INTERVAL, e.g. INTERVAL '1' SECOND",
            call,
        )),
    }
}

/// Nanoseconds in one `unit` (`ms`, `second`, `MINUTES`, ...).
fn unit_nanos(unit: &str) -> Option<i128> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "ns" | "nanosecond" | "nanoseconds" => 1,
        "us" | "microsecond" | "microseconds" => 1_000,
        "ms" | "millisecond" | "milliseconds" | "millis" => 1_000_000,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000_000_000,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000_000_000,
        "h" | "hour" | "hours" => 3_600_000_000_000,
        "d" | "day" | "days" => 86_400_000_000_000,
        _ => return None,
    })
}

/// The length of a positive INTERVAL in nanoseconds: `INTERVAL '1.5' SECOND`,
/// `INTERVAL 500 MILLISECOND`, `INTERVAL '500 milliseconds'` or `INTERVAL '2m'`.
pub(super) fn interval_nanos(
    src: &Source<'_>,
    e: &ast::Expr,
    iv: &ast::Interval,
) -> Result<Nanos, SqlError> {
    let err = |msg: &str| Err(src.expr_error(msg.to_string(), e));
    if iv.last_field.is_some() {
        return err("unsupported: INTERVAL ... TO ...");
    }
    let text = match iv.value.as_ref() {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::Number(s, _) => s.trim().to_string(),
            _ => return err("INTERVAL needs a number, e.g. INTERVAL '1' SECOND"),
        },
        _ => return err("INTERVAL needs a constant, e.g. INTERVAL '1' SECOND"),
    };
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, rest) = text.split_at(split);
    let unit = match &iv.leading_field {
        Some(field) if rest.trim().is_empty() => field.to_string(),
        Some(_) => return err("INTERVAL value must be a plain number when a unit follows it"),
        None if rest.trim().is_empty() => {
            return err("INTERVAL needs a unit, e.g. INTERVAL '1' SECOND");
        }
        None => rest.trim().to_string(),
    };
    let Some(per) = unit_nanos(&unit) else {
        let msg = format!(
            "unknown INTERVAL unit `{unit}`: use NANOSECOND, MICROSECOND, MILLISECOND, SECOND, MINUTE, HOUR or DAY"
        );
        return Err(src.expr_error(msg, e));
    };
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits_ok = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits_ok(int) || !digits_ok(frac) {
        return err("INTERVAL needs a number, e.g. INTERVAL '1' SECOND");
    }
    let whole: i128 = if int.is_empty() {
        0
    } else {
        int.parse().unwrap_or(i128::MAX)
    };
    let frac = &frac[..frac.len().min(18)];
    let frac_value: i128 = if frac.is_empty() {
        0
    } else {
        frac.parse().unwrap_or(0)
    };
    let nanos = whole
        .checked_mul(per)
        .and_then(|n| n.checked_add(frac_value * per / 10i128.pow(frac.len() as u32)));
    match nanos {
        Some(n) if n > 0 && n <= i64::MAX as i128 => Ok(n as Nanos),
        Some(n) if n <= 0 => err("INTERVAL must be at least one nanosecond"),
        _ => err("INTERVAL is too long"),
    }
}
