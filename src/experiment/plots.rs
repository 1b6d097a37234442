//! The experiment's plots, drawn with plotters as SVG and PNG (one drawing function, two
//! backends; text measured and rasterised with the embedded font of `font.rs`): latency
//! over time (with the target and the input rate), keep fraction over time, utility per
//! policy against the optimum, and the CDF of relative answer error. Every plot has axis titles with units and a legend.
//!
//! Invariant: plots read the `Outcome` only; a plot with nothing to show is still written,
//! with a caption that says so, so the set of files never depends on the figures.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::Outcome;
use super::figures::metric;
use super::font;
use super::report::summarize;

type PlotResult = Result<(), Box<dyn std::error::Error>>;

const SIZE: (u32, u32) = (900, 480);

fn color(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    C[i % C.len()]
}

/// The query the time plots follow: the first with a latency target (else the first).
fn followed(out: &Outcome) -> usize {
    out.rows
        .iter()
        .filter(|r| r.repeat == 0 && r.query != "all")
        .find(|r| !r.get("target_ms").is_nan())
        .and_then(|r| out.queries.iter().position(|q| *q == r.query))
        .unwrap_or(0)
}

/// Series of (t_s, value) per run label, repeat 0, for query `q`.
fn series(
    out: &Outcome,
    q: usize,
    f: impl Fn(&super::recorder::TickRow) -> Option<f64>,
) -> Vec<(String, Vec<(f64, f64)>)> {
    out.traces
        .iter()
        .filter(|t| t.repeat == 0)
        .map(|t| {
            let pts = t
                .ticks
                .iter()
                .filter(|r| r.query == q)
                .filter_map(|r| f(r).map(|v| (r.at as f64 / 1e9, v)))
                .collect();
            (t.policy.clone(), pts)
        })
        .collect()
}

fn x_max(s: &[(String, Vec<(f64, f64)>)]) -> f64 {
    s.iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.0))
        .fold(1.0, f64::max)
}

/// Latency at the target's percentile per tick and policy, log scale, with the target and
/// the input rate (second axis).
fn draw_latency<DB: DrawingBackend>(out: &Outcome, root: DrawingArea<DB, Shift>) -> PlotResult
where
    DB::ErrorType: 'static,
{
    let q = followed(out);
    let lat = series(out, q, |r| r.latency.map(|l| (l as f64 / 1e6).max(0.01)));
    let rate = series(out, q, |r| Some(r.input_rate));
    let target = out
        .rows
        .iter()
        .find(|r| r.query == out.queries[q] && r.repeat == 0)
        .map(|r| r.get("target_ms"))
        .filter(|t| !t.is_nan());
    let xmax = x_max(&lat);
    let ymax = lat
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.1))
        .chain(target)
        .fold(1.0, f64::max)
        * 2.0;
    let rmax = rate
        .first()
        .map_or(1.0, |(_, p)| p.iter().map(|x| x.1).fold(1.0, f64::max))
        * 1.1;
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{}: latency of query `{}`", out.workload, out.queries[q]),
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .right_y_label_area_size(80)
        .build_cartesian_2d(0f64..xmax, (0.01f64..ymax).log_scale())?
        .set_secondary_coord(0f64..xmax, 0f64..rmax);
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("result latency (ms, log scale)")
        .draw()?;
    chart
        .configure_secondary_axes()
        .y_label_formatter(&|v| format!("{:.0}k", v / 1000.0))
        .y_desc("input rate (tuples/s)")
        .draw()?;
    for (i, (label, pts)) in lat.iter().enumerate() {
        chart
            .draw_series(LineSeries::new(
                pts.iter().copied(),
                color(i).stroke_width(2),
            ))?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color(i)));
    }
    if let Some(t) = target {
        chart
            .draw_series(LineSeries::new(
                [(0.0, t), (xmax, t)],
                BLACK.stroke_width(1),
            ))?
            .label(format!("target ({t} ms)"))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK));
    }
    if let Some((_, pts)) = rate.first() {
        chart
            .draw_secondary_series(LineSeries::new(
                pts.iter().copied(),
                RGBColor(170, 170, 170),
            ))?
            .label("input rate (right axis)")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], RGBColor(170, 170, 170)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Keep fraction installed per tick and policy.
fn draw_keep<DB: DrawingBackend>(out: &Outcome, root: DrawingArea<DB, Shift>) -> PlotResult
where
    DB::ErrorType: 'static,
{
    let q = followed(out);
    let keep = series(out, q, |r| Some(r.keep));
    let xmax = x_max(&keep);
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{}: keep fraction of query `{}`",
                out.workload, out.queries[q]
            ),
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..xmax, 0f64..1.05)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("keep fraction (stream x query drop point)")
        .draw()?;
    for (i, (label, pts)) in keep.iter().enumerate() {
        chart
            .draw_series(LineSeries::new(
                pts.iter().copied(),
                color(i).stroke_width(2),
            ))?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color(i)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Weighted utility per policy as bars, the optimum as a line.
fn draw_utility<DB: DrawingBackend>(out: &Outcome, root: DrawingArea<DB, Shift>) -> PlotResult
where
    DB::ErrorType: 'static,
{
    let sum = summarize(out);
    let bars: Vec<(String, f64)> = sum
        .iter()
        .filter(|(p, q, _)| q == "all" && p != "optimum")
        .map(|(p, _, s)| (p.clone(), s[metric("weighted_utility")].mean))
        .collect();
    let opt = sum
        .iter()
        .find(|(p, q, _)| p == "optimum" && q == "all")
        .map(|(_, _, s)| s[metric("weighted_utility")].mean);
    root.fill(&WHITE)?;
    let n = bars.len().max(1) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{}: weighted utility per policy", out.workload),
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..n, 0f64..1.1)?;
    let names: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(bars.len().max(1) * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 0.01 && i < names.len() {
                names[i].clone()
            } else {
                String::new()
            }
        })
        .x_desc("policy")
        .y_desc("weighted utility (1 = everything delivered)")
        .draw()?;
    for (i, (label, v)) in bars.iter().enumerate() {
        let v = if v.is_nan() { 0.0 } else { *v };
        chart
            .draw_series([Rectangle::new(
                [(i as f64 + 0.15, 0.0), (i as f64 + 0.85, v)],
                color(i).filled(),
            )])?
            .label(format!("{label}: {v:.3}"))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], color(i).filled()));
    }
    if let Some(o) = opt {
        chart
            .draw_series(LineSeries::new([(0.0, o), (n, o)], BLACK.stroke_width(2)))?
            .label(format!("offline optimum: {o:.3}"))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    root.present()?;
    Ok(())
}

/// CDF of the relative error of aggregate values, per policy.
fn draw_error_cdf<DB: DrawingBackend>(out: &Outcome, root: DrawingArea<DB, Shift>) -> PlotResult
where
    DB::ErrorType: 'static,
{
    let curves: Vec<(String, Vec<(f64, f64)>)> = out
        .errors
        .iter()
        .filter(|(p, e)| p != "optimum" && !e.is_empty())
        .map(|(p, e)| {
            let mut e = e.clone();
            e.sort_by(f64::total_cmp);
            let n = e.len() as f64;
            // At most ~500 points per curve keeps the file small.
            let step = (e.len() / 500).max(1);
            let mut pts: Vec<(f64, f64)> = e
                .iter()
                .enumerate()
                .step_by(step)
                .map(|(i, x)| (x * 100.0, (i + 1) as f64 / n))
                .collect();
            pts.push((e[e.len() - 1] * 100.0, 1.0));
            (p.clone(), pts)
        })
        .collect();
    let xmax = curves
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.0))
        .fold(1.0, f64::max)
        .min(200.0);
    root.fill(&WHITE)?;
    let caption = if curves.is_empty() {
        format!("{}: no aggregate values to compare", out.workload)
    } else {
        format!("{}: relative error of aggregates (CDF)", out.workload)
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..xmax, 0f64..1.02)?;
    chart
        .configure_mesh()
        .x_desc("relative error against the exact run (%)")
        .y_desc("share of aggregate values")
        .draw()?;
    for (i, (label, pts)) in curves.iter().enumerate() {
        chart
            .draw_series(LineSeries::new(
                pts.iter().copied(),
                color(i).stroke_width(2),
            ))?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color(i)));
    }
    if !curves.is_empty() {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerRight)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// Draws one plot as SVG at `path` and as PNG beside it (`.png`).
fn both(
    path: &Path,
    svg: impl FnOnce(DrawingArea<SVGBackend<'_>, Shift>) -> PlotResult,
    png: impl FnOnce(DrawingArea<BitMapBackend<'_>, Shift>) -> PlotResult,
) -> PlotResult {
    font::register()?;
    svg(SVGBackend::new(path, SIZE).into_drawing_area())?;
    let png_path = path.with_extension("png");
    png(BitMapBackend::new(&png_path, SIZE).into_drawing_area())
}

/// Latency at the target's percentile per tick and policy (`latency.svg`, `.png`).
pub fn latency(out: &Outcome, path: &Path) -> PlotResult {
    both(path, |a| draw_latency(out, a), |a| draw_latency(out, a))
}

/// Keep fraction per tick and policy (`keep.svg`, `.png`).
pub fn keep(out: &Outcome, path: &Path) -> PlotResult {
    both(path, |a| draw_keep(out, a), |a| draw_keep(out, a))
}

/// Weighted utility per policy against the optimum (`utility.svg`, `.png`).
pub fn utility(out: &Outcome, path: &Path) -> PlotResult {
    both(path, |a| draw_utility(out, a), |a| draw_utility(out, a))
}

/// CDF of relative aggregate error per policy (`error_cdf.svg`, `.png`).
pub fn error_cdf(out: &Outcome, path: &Path) -> PlotResult {
    both(path, |a| draw_error_cdf(out, a), |a| draw_error_cdf(out, a))
}
