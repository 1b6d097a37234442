//! Human-readable plans for `spillway check`: expressions printed back as SQL-like text
//! with column names, and one line per pipeline stage.

use std::fmt::Write as _;

use super::expr::Expr;
use super::plan::{AggFunc, PlanBody, QueryPlan, TimeSource, fmt_nanos};
use super::schema::{Scalar, Schema};

/// `e` as text, naming column `i` by `names[i]`.
pub fn expr_text(e: &Expr, names: &[String]) -> String {
    match e {
        Expr::Column(i) => names.get(*i).cloned().unwrap_or_else(|| format!("#{i}")),
        Expr::Arrival => "PROCTIME()".into(),
        Expr::Literal(Scalar::Timestamp(t)) => format!("TIMESTAMP {t}ns"),
        Expr::Literal(s) => scalar_text(s),
        Expr::Binary { op: o, left, right } => format!(
            "({} {} {})",
            expr_text(left, names),
            o.symbol(),
            expr_text(right, names)
        ),
        Expr::Not(e) => format!("NOT {}", expr_text(e, names)),
        Expr::Neg(e) => format!("-{}", expr_text(e, names)),
        Expr::ToFloat(e) => expr_text(e, names),
        Expr::InList {
            expr,
            list,
            negated,
        } => format!(
            "{} {}IN ({})",
            expr_text(expr, names),
            if *negated { "NOT " } else { "" },
            list.iter().map(scalar_text).collect::<Vec<_>>().join(", ")
        ),
        Expr::Case {
            branches,
            otherwise,
        } => {
            let mut s = "CASE".to_string();
            for (c, v) in branches {
                let _ = write!(
                    s,
                    " WHEN {} THEN {}",
                    expr_text(c, names),
                    expr_text(v, names)
                );
            }
            let _ = write!(s, " ELSE {} END", expr_text(otherwise, names));
            s
        }
    }
}

fn agg_name(f: AggFunc) -> &'static str {
    match f {
        AggFunc::CountStar | AggFunc::Count => "COUNT",
        AggFunc::Sum => "SUM",
        AggFunc::Avg => "AVG",
        AggFunc::Min => "MIN",
        AggFunc::Max => "MAX",
    }
}

/// The plan as indented lines, with the input stream's column names.
pub fn describe(plan: &QueryPlan, input: &Schema) -> String {
    let names: Vec<String> = input.fields.iter().map(|f| f.name.clone()).collect();
    let mut s = String::new();
    let _ = writeln!(s, "  scan {}", plan.stream);
    if let Some(p) = &plan.filter {
        let _ = writeln!(s, "  filter {}", expr_text(p, &names));
    }
    let out: Vec<String> = plan.output.fields.iter().map(|f| f.name.clone()).collect();
    match &plan.body {
        PlanBody::Project(exprs) => {
            let items: Vec<String> = exprs
                .iter()
                .zip(&out)
                .map(|(e, n)| format!("{} AS {n}", expr_text(e, &names)))
                .collect();
            let _ = writeln!(s, "  project {}", items.join(", "));
        }
        PlanBody::Aggregate(a) => {
            let time = match a.time {
                TimeSource::Column(i) => expr_text(&Expr::Column(i), &names),
                TimeSource::Arrival => "PROCTIME()".into(),
            };
            let window = if a.window.size == a.window.slide {
                format!("TUMBLE({time}, {})", fmt_nanos(a.window.size))
            } else {
                format!(
                    "HOP({time}, slide {}, size {})",
                    fmt_nanos(a.window.slide),
                    fmt_nanos(a.window.size)
                )
            };
            let mut group: Vec<String> = a.keys.iter().map(|k| expr_text(k, &names)).collect();
            let keys = group.join(", ");
            group.extend(a.aggs.iter().map(|c| match (&c.func, &c.arg) {
                (AggFunc::CountStar, _) | (_, None) => format!("{}(*)", agg_name(c.func)),
                (f, Some(e)) => format!("{}({})", agg_name(*f), expr_text(e, &names)),
            }));
            let _ = writeln!(
                s,
                "  aggregate {} BY [{keys}] over {window}",
                group[a.keys.len()..].join(", ")
            );
            group.push("window_start".into());
            group.push("window_end".into());
            if let Some(h) = &a.having {
                let _ = writeln!(s, "  having {}", expr_text(h, &group));
            }
            let items: Vec<String> = a
                .project
                .iter()
                .zip(&out)
                .map(|(e, n)| format!("{} AS {n}", expr_text(e, &group)))
                .collect();
            let _ = writeln!(s, "  project {}", items.join(", "));
        }
    }
    let cols: Vec<String> = plan
        .output
        .fields
        .iter()
        .map(|c| format!("{} {}", c.name, c.ty))
        .collect();
    let _ = writeln!(s, "  output ({})", cols.join(", "));
    s
}

/// A literal as text (a timestamp is handled by the caller).
fn scalar_text(s: &Scalar) -> String {
    match s {
        Scalar::Float(v) => float_literal(*v),
        s => s.to_string(),
    }
}

/// A float literal as SQL reads it back as a float: a whole number keeps its `.0` (`7.0`,
/// not `7`, which would read as an int), and a very large or very small one is in exponent
/// form (`1e300`, not 301 digits).
fn float_literal(v: f64) -> String {
    if !v.is_finite() {
        format!("{v}")
    } else if v != 0.0 && !(1e-7..1e16).contains(&v.abs()) {
        format!("{v:e}")
    } else if v.fract() == 0.0 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::float_literal;

    #[test]
    fn float_literals_print_as_floats_sql_reads_back() {
        let cases = [
            (7.0, "7.0"),
            (-7.0, "-7.0"),
            (0.0, "0.0"),
            (0.5, "0.5"),
            (31.63, "31.63"),
            (1e300, "1e300"),
            (1.7976931348623157e308, "1.7976931348623157e308"),
            (2.5e-9, "2.5e-9"),
            (123456789.0, "123456789.0"),
        ];
        for (v, text) in cases {
            assert_eq!(float_literal(v), text);
            assert_eq!(text.parse::<f64>().unwrap(), v, "{text} reads back");
        }
    }
}
