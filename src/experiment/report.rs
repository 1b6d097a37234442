//! The experiment's files: `results.csv` (one row per policy and query, mean and standard
//! deviation over repeats), `timeseries.csv` (one row per run, tick and query) and
//! `summary.md` (the tables a person reads first, with the winner per criterion).
//!
//! Invariant: CSV goes through the `csv` crate (no hand-made quoting); a figure that does
//! not apply is an empty field, never a made-up number.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use super::Outcome;
use super::figures::{METRICS, Row, metric};

/// Mean and standard deviation of one figure over the repeats of a policy and query.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stat {
    pub mean: f64,
    pub sd: f64,
}

/// The rows of `out` averaged over repeats: (policy, query, stat per metric), in report
/// order (policies as labelled, queries in workload order, then `all`).
pub fn summarize(out: &Outcome) -> Vec<(String, String, Vec<Stat>)> {
    let mut res = Vec::new();
    let queries = out.queries.iter().map(String::as_str).chain(["all"]);
    let queries: Vec<&str> = queries.collect();
    for label in &out.labels {
        for q in &queries {
            let rows: Vec<&Row> = out
                .rows
                .iter()
                .filter(|r| &r.policy == label && r.query == *q)
                .collect();
            if rows.is_empty() {
                continue;
            }
            let stats = (0..METRICS.len())
                .map(|m| {
                    let v: Vec<f64> = rows
                        .iter()
                        .map(|r| r.values[m])
                        .filter(|x| !x.is_nan())
                        .collect();
                    if v.is_empty() {
                        return Stat {
                            mean: f64::NAN,
                            sd: f64::NAN,
                        };
                    }
                    let mean = v.iter().sum::<f64>() / v.len() as f64;
                    let var = if v.len() > 1 {
                        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64
                    } else {
                        0.0
                    };
                    Stat {
                        mean,
                        sd: var.sqrt(),
                    }
                })
                .collect();
            res.push((label.clone(), q.to_string(), stats));
        }
    }
    res
}

fn num(x: f64) -> String {
    if x.is_nan() {
        String::new()
    } else {
        // Rounded so the file reads well and stays byte-identical across runs.
        let s = format!("{x:.6}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s == "-0" { "0".into() } else { s.into() }
    }
}

/// Writes `results.csv`.
pub fn write_results(out: &Outcome, path: &Path) -> io::Result<()> {
    let mut w = csv::Writer::from_path(path)?;
    let mut header = vec!["policy".to_string(), "query".into(), "runs".into()];
    header.extend(METRICS.iter().map(|m| m.to_string()));
    header.extend(METRICS.iter().map(|m| format!("{m}_sd")));
    w.write_record(&header)?;
    for (policy, query, stats) in summarize(out) {
        let runs = out
            .rows
            .iter()
            .filter(|r| r.policy == policy && r.query == query)
            .count();
        let mut rec = vec![policy, query, runs.to_string()];
        rec.extend(stats.iter().map(|s| num(s.mean)));
        rec.extend(stats.iter().map(|s| num(s.sd)));
        w.write_record(&rec)?;
    }
    w.flush()
}

/// Writes `timeseries.csv`.
pub fn write_timeseries(out: &Outcome, path: &Path) -> io::Result<()> {
    let mut w = csv::Writer::from_path(path)?;
    w.write_record([
        "policy",
        "repeat",
        "t_s",
        "query",
        "input_per_s",
        "latency_ms",
        "keep",
        "delivered",
        "queued",
    ])?;
    for t in &out.traces {
        for row in &t.ticks {
            w.write_record([
                t.policy.clone(),
                t.repeat.to_string(),
                num(row.at as f64 / 1e9),
                out.queries[row.query].clone(),
                num(row.input_rate),
                row.latency.map_or(String::new(), |l| num(l as f64 / 1e6)),
                num(row.keep),
                num(row.delivered),
                row.queued.to_string(),
            ])?;
        }
    }
    w.flush()
}

/// `mean` or `mean ± sd` with `digits` decimals, `-` where the figure does not apply.
fn cell(s: &Stat, digits: usize, repeat: u32, scale: f64) -> String {
    if s.mean.is_nan() {
        return "-".into();
    }
    if repeat > 1 {
        format!(
            "{:.digits$} ± {:.digits$}",
            s.mean * scale,
            s.sd * scale,
            digits = digits
        )
    } else {
        format!("{:.digits$}", s.mean * scale, digits = digits)
    }
}

/// The text of `summary.md`.
pub fn report_markdown(out: &Outcome, command: &str) -> String {
    let sum = summarize(out);
    let rep = out.repeat.max(1);
    let get = |p: &str, q: &str| {
        sum.iter()
            .find(|(a, b, _)| a == p && b == q)
            .map(|(_, _, s)| s.clone())
    };
    let mut md = String::new();
    let _ = writeln!(md, "# Experiment: {}\n", out.workload);
    let _ = writeln!(
        md,
        "`{command}`: {} mode, {rep} run(s) per policy{}. `exact` has no capacity limit and \
         sheds nothing (the ground truth); `optimum` is the offline optimum (fractional \
         knapsack per control period, see docs/experiment.md). A policy holds its targets \
         when at most 5% of its seconds were over target.\n",
        if out.live { "live" } else { "simulated" },
        if rep > 1 {
            ", mean ± standard deviation"
        } else {
            ""
        }
    );
    let _ = writeln!(md, "## Overview\n");
    let _ = writeln!(
        md,
        "| policy | weighted utility | share of optimum | holds targets | worst share of seconds over target | busy share of capacity |"
    );
    let _ = writeln!(md, "|---|---:|---:|---|---:|---:|");
    for label in &out.labels {
        let Some(s) = get(label, "all") else { continue };
        let holds = &s[metric("holds_target")];
        let _ = writeln!(
            md,
            "| {label} | {} | {} | {} | {} | {} |",
            cell(&s[metric("weighted_utility")], 3, rep, 1.0),
            cell(&s[metric("share_of_optimum")], 3, rep, 1.0),
            if holds.mean.is_nan() {
                "-".into()
            } else if holds.mean >= 1.0 {
                "yes".to_string()
            } else {
                "**no**".into()
            },
            cell(&s[metric("over_target_share")], 2, rep, 1.0),
            cell(&s[metric("busy_share")], 2, rep, 1.0),
        );
    }
    let _ = writeln!(md, "\n## Latency and loss per query\n");
    let _ = writeln!(
        md,
        "| policy | query | p50 ms | p99 ms | max ms | target ms | s over target | longest run s | shed % | stream/query % | random/semantic/window/queue-full % | loss utility | value utility | share of optimum |"
    );
    let _ = writeln!(
        md,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|"
    );
    let pct = |s: &[super::report::Stat], names: &[&str]| -> String {
        names
            .iter()
            .map(|n| cell(&s[metric(n)], 1, 1, 100.0))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    for label in out.labels.iter().filter(|l| *l != "optimum") {
        for q in &out.queries {
            let Some(s) = get(label, q) else { continue };
            let _ = writeln!(
                md,
                "| {label} | {q} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                cell(&s[metric("latency_p50_ms")], 1, rep, 1.0),
                cell(&s[metric("latency_p99_ms")], 1, rep, 1.0),
                cell(&s[metric("latency_max_ms")], 1, rep, 1.0),
                cell(&s[metric("target_ms")], 0, 1, 1.0),
                cell(&s[metric("over_target_share")], 2, rep, 1.0),
                cell(&s[metric("longest_over_s")], 0, rep, 1.0),
                cell(&s[metric("shed_share")], 1, rep, 100.0),
                pct(&s, &["shed_stream_share", "shed_query_share"]),
                pct(
                    &s,
                    &[
                        "shed_random_share",
                        "shed_semantic_share",
                        "shed_window_share",
                        "queue_full_share"
                    ]
                ),
                cell(&s[metric("loss_utility")], 3, rep, 1.0),
                cell(&s[metric("value_utility")], 3, rep, 1.0),
                cell(&s[metric("share_of_optimum")], 3, rep, 1.0),
            );
        }
    }
    let _ = writeln!(md, "\n## Answers against the exact run\n");
    let _ = writeln!(
        md,
        "Aggregates are matched by group key and window; relative error is `|value - exact| / |exact|` over every matched aggregate value. Coverage: share of exact values inside the reported 95% interval (rows with an interval only).\n"
    );
    let _ = writeln!(
        md,
        "| policy | query | rows | missing | extra | rel. error mean | p95 | max | 95% CI coverage |"
    );
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for label in out.labels.iter().filter(|l| *l != "optimum") {
        for q in &out.queries {
            let Some(s) = get(label, q) else { continue };
            let _ = writeln!(
                md,
                "| {label} | {q} | {} | {} | {} | {} | {} | {} | {} |",
                cell(&s[metric("rows")], 0, rep, 1.0),
                cell(&s[metric("missing_rows")], 0, rep, 1.0),
                cell(&s[metric("extra_rows")], 0, rep, 1.0),
                cell(&s[metric("rel_error_mean")], 4, rep, 1.0),
                cell(&s[metric("rel_error_p95")], 4, rep, 1.0),
                cell(&s[metric("rel_error_max")], 4, rep, 1.0),
                cell(&s[metric("ci_coverage")], 3, rep, 1.0),
            );
        }
    }
    let _ = writeln!(md, "\n## Winners\n");
    let policies: Vec<&String> = out
        .labels
        .iter()
        .filter(|l| *l != "exact" && *l != "optimum")
        .collect();
    let best = |m: &str, higher: bool, only_holding: bool| -> String {
        let mut cands: Vec<(&String, f64)> = policies
            .iter()
            .filter_map(|p| {
                let s = get(p, "all")?;
                if only_holding && s[metric("holds_target")].mean < 1.0 {
                    return None;
                }
                let v = s[metric(m)].mean;
                (!v.is_nan()).then_some((*p, v))
            })
            .collect();
        cands.sort_by(|a, b| {
            if higher {
                b.1.total_cmp(&a.1)
            } else {
                a.1.total_cmp(&b.1)
            }
        });
        cands.first().map_or("none qualifies".into(), |(p, v)| {
            format!("**{p}** ({v:.3})")
        })
    };
    // Mean relative error over a policy's aggregate queries.
    let mut err: Vec<(&String, f64)> = policies
        .iter()
        .filter(|p| get(p, "all").is_some_and(|s| s[metric("holds_target")].mean >= 1.0))
        .filter_map(|p| {
            let v: Vec<f64> = out
                .queries
                .iter()
                .filter_map(|q| get(p, q))
                .map(|s| s[metric("rel_error_mean")].mean)
                .filter(|x| !x.is_nan())
                .collect();
            (!v.is_empty()).then(|| (*p, v.iter().sum::<f64>() / v.len() as f64))
        })
        .collect();
    err.sort_by(|a, b| a.1.total_cmp(&b.1));
    let _ = writeln!(
        md,
        "- Utility while holding latency targets: {}",
        best("weighted_utility", true, true)
    );
    let _ = writeln!(
        md,
        "- Fewest seconds over target: {}",
        best("over_target_share", false, false)
    );
    let _ = writeln!(
        md,
        "- Most accurate aggregates while holding latency targets (mean relative error): {}",
        err.first()
            .map_or("no aggregate query".into(), |(p, v)| format!(
                "**{p}** ({v:.4})"
            ))
    );
    let _ = writeln!(
        md,
        "\nFiles: `results.csv` (every figure, per policy and query), `timeseries.csv` (per tick), plots `latency`, `keep`, `utility`, `error_cdf` (each `.svg` and `.png`)."
    );
    md
}
