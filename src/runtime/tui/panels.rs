//! The dashboard's lower panels, each a pure function of the state: the charts over the
//! last minute, the drop points in words, the selected query's details (latency
//! percentiles, value histogram with its dropped range) and the event log.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, Paragraph};

use super::msg::DropDesc;
use super::state::{HISTORY, LogKind, LogLine, State};
use super::words::{drop_words, ms, rate};
use crate::core::drop::DropReason;

const PALETTE: [Color; 6] = [
    Color::Cyan,
    Color::Magenta,
    Color::Yellow,
    Color::Green,
    Color::Blue,
    Color::LightRed,
];

/// The x range of the charts: the last minute, in seconds of run time.
fn x_bounds(s: &State) -> [f64; 2] {
    let now = s.elapsed() as f64 / 1e9;
    [(now - HISTORY as f64 / 1e9).max(0.0), now.max(1.0)]
}

fn x_axis(b: [f64; 2]) -> Axis<'static> {
    Axis::default()
        .bounds(b)
        .labels([format!("{:.0}s", b[0]), format!("{:.0}s", b[1])])
        .style(Style::default().fg(Color::DarkGray))
}

fn y_axis(max: f64, unit: &str) -> Axis<'static> {
    Axis::default()
        .bounds([0.0, max])
        .labels(["0".to_string(), format!("{}{unit}", short(max))])
        .style(Style::default().fg(Color::DarkGray))
}

fn short(v: f64) -> String {
    if v >= 1e4 {
        rate(v)
    } else if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Demand against capacity, p99 per query against its target, shed rate by reason.
pub fn charts(s: &State, frame: &mut Frame<'_>, area: Rect) {
    let [a, b, c] = Layout::horizontal([Constraint::Ratio(1, 3); 3]).areas(area);
    let xb = x_bounds(s);
    let secs = |at: i64| at as f64 / 1e9;

    // Demand, target and capacity (1.0) as shares of capacity.
    let demand: Vec<(f64, f64)> = s.history.iter().map(|p| (secs(p.at), p.demand)).collect();
    let target: Vec<(f64, f64)> = s.history.iter().map(|p| (secs(p.at), p.target)).collect();
    let capacity = [(xb[0], 1.0), (xb[1], 1.0)];
    let ymax = demand.iter().map(|p| p.1).fold(1.2f64, f64::max) * 1.1;
    let sets = vec![
        line("demand", &demand, Color::Yellow),
        line("target", &target, Color::Green),
        line("capacity", &capacity, Color::DarkGray),
    ];
    frame.render_widget(
        Chart::new(sets)
            .block(Block::bordered().title(" demand / capacity "))
            .x_axis(x_axis(xb))
            .y_axis(y_axis(ymax, "x")),
        a,
    );

    // p99 per query (ms) with its target as a flat line.
    let names = s.query_names();
    let targets: Vec<Option<f64>> = s
        .info
        .as_ref()
        .map(|i| {
            i.queries
                .iter()
                .map(|q| q.target.map(|t| t.0 as f64 / 1e6))
                .collect()
        })
        .unwrap_or_default();
    let p99: Vec<Vec<(f64, f64)>> = (0..names.len())
        .map(|qi| {
            s.history
                .iter()
                .filter_map(|p| p.p99_ms.get(qi).copied().flatten().map(|v| (secs(p.at), v)))
                .collect()
        })
        .collect();
    let target_lines: Vec<Vec<(f64, f64)>> = targets
        .iter()
        .map(|t| t.map_or(vec![], |t| vec![(xb[0], t), (xb[1], t)]))
        .collect();
    let ymax = p99
        .iter()
        .flatten()
        .map(|p| p.1)
        .chain(targets.iter().flatten().copied())
        .fold(1.0f64, f64::max)
        * 1.1;
    let mut sets = Vec::new();
    for (qi, name) in names.iter().enumerate() {
        let color = PALETTE[qi % PALETTE.len()];
        sets.push(line(name, &p99[qi], color));
        if !target_lines[qi].is_empty() {
            sets.push(
                Dataset::default()
                    .marker(Marker::Dot)
                    .graph_type(GraphType::Line)
                    .style(Style::default().fg(color))
                    .data(&target_lines[qi]),
            );
        }
    }
    frame.render_widget(
        Chart::new(sets)
            .block(Block::bordered().title(" p99 ms vs target "))
            .x_axis(x_axis(xb))
            .y_axis(y_axis(ymax, "ms")),
        b,
    );

    // Shed rate by reason (tuples per second), reasons that happened only.
    let reasons: Vec<(DropReason, Vec<(f64, f64)>)> = DropReason::ALL
        .iter()
        .map(|r| {
            (
                *r,
                s.history
                    .iter()
                    .map(|p| (secs(p.at), p.shed_rate[r.index()]))
                    .collect::<Vec<_>>(),
            )
        })
        .filter(|(_, d)| d.iter().any(|p| p.1 > 0.0))
        .collect();
    let ymax = reasons
        .iter()
        .flat_map(|(_, d)| d.iter().map(|p| p.1))
        .fold(1.0f64, f64::max)
        * 1.1;
    let sets: Vec<Dataset> = reasons
        .iter()
        .enumerate()
        .map(|(i, (r, d))| line(r.label(), d, PALETTE[(i + 2) % PALETTE.len()]))
        .collect();
    frame.render_widget(
        Chart::new(sets)
            .block(Block::bordered().title(" shed /s by reason "))
            .x_axis(x_axis(xb))
            .y_axis(y_axis(ymax, "")),
        c,
    );
}

fn line<'a>(name: &str, data: &'a [(f64, f64)], color: Color) -> Dataset<'a> {
    Dataset::default()
        .name(name.to_string())
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .style(Style::default().fg(color))
        .data(data)
}

/// Every drop point: stream points with their keep, query points with kind and setting.
pub fn drop_points(s: &State, frame: &mut Frame<'_>, area: Rect) {
    let mut lines = Vec::new();
    if let Some(t) = &s.latest {
        for st in &t.streams {
            lines.push(Line::from(format!(
                "stream {} {}/s keep {:.2}",
                st.name,
                rate(st.rate),
                st.keep
            )));
        }
        let names = s.query_names();
        let w = names.iter().map(|n| n.len()).max().unwrap_or(0);
        for (qi, q) in t.queries.iter().enumerate() {
            let stream = s.info.as_ref().map_or(0, |i| i.queries[qi].stream);
            let columns = s.columns.get(stream).map_or(&[][..], |c| &c[..]);
            let (kind, words) = drop_words(&q.drop, columns);
            let style = match q.drop {
                DropDesc::KeepAll => Style::default(),
                _ => Style::default().fg(Color::Yellow),
            };
            lines.push(Line::from(vec![
                Span::raw(format!(
                    "query {:<w$} {kind:<8} ",
                    names.get(qi).copied().unwrap_or("?"),
                )),
                Span::styled(words, style),
            ]));
        }
    }
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(ratatui::widgets::Wrap { trim: false })
            .block(Block::bordered().title(" drop points ")),
        area,
    );
}

/// The selected query: latency percentiles over the last second and, with a value QoS,
/// its value histogram with dropped bins in red (`x` under them; `~` kept in part).
pub fn details(s: &State, selected: usize, frame: &mut Frame<'_>, area: Rect) {
    let names = s.query_names();
    let name = names.get(selected).copied().unwrap_or("-");
    let mut lines = Vec::new();
    if let Some(p) = s.percentiles.get(selected) {
        lines.push(Line::from(format!(
            "latency of the last second's {} results, ms:",
            p.count
        )));
        lines.push(Line::from(format!(
            "  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
            ms(p.p50),
            ms(p.p90),
            ms(p.p99),
            ms(p.p999),
            ms(p.max)
        )));
    }
    let q = s.latest.as_ref().and_then(|t| t.queries.get(selected));
    if let Some((binning, counts)) = q.and_then(|q| q.values.as_ref()) {
        let keep: Option<&[f64]> = match q.map(|q| &q.drop) {
            Some(DropDesc::Semantic { keep, .. }) => Some(keep),
            _ => None,
        };
        // Each bin as wide as the pane allows.
        let cell = (area.width.saturating_sub(10) as usize / counts.len().max(1)).clamp(1, 4);
        let max = counts.iter().copied().fold(0.0f64, f64::max).max(1e-9);
        const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
        let mut bars = vec![Span::raw("values ")];
        let mut marks = String::from("       ");
        for (i, c) in counts.iter().enumerate() {
            let k = keep.and_then(|k| k.get(i)).copied().unwrap_or(1.0);
            let ch = if *c <= 0.0 {
                ' '
            } else {
                BARS[((c / max) * 7.0).round() as usize]
            };
            let (color, mark) = if k < 1e-6 {
                (Color::Red, 'x')
            } else if k < 1.0 {
                (Color::Yellow, '~')
            } else {
                (Color::Green, ' ')
            };
            bars.push(Span::styled(
                ch.to_string().repeat(cell),
                Style::default().fg(color),
            ));
            marks.extend(std::iter::repeat_n(mark, cell));
        }
        lines.push(Line::from(bars));
        if keep.is_some() {
            lines.push(Line::from(marks));
        }
        lines.push(Line::from(format!(
            "       bins of {} from {} to {}; x dropped, ~ kept in part",
            binning.width(),
            binning.lo(),
            binning.hi()
        )));
    }
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(format!(" {name} "))),
        area,
    );
}

/// The latest events, newest last, each with its run time; long ones wrap at word breaks.
/// The newest is always on screen: each entry's height is ratatui's own count of the rows
/// its wrapped text takes, not the text's length over the width (a guess that falls short
/// when words break early and pushed the newest entry off the bottom).
pub fn event_log(s: &State, frame: &mut Frame<'_>, area: Rect) {
    let rows = area.height.saturating_sub(2) as usize;
    let width = area.width.saturating_sub(2).max(1);
    let wrap = ratatui::widgets::Wrap { trim: false };
    let line = |l: &LogLine| {
        let color = match l.kind {
            LogKind::Info => Color::Reset,
            LogKind::Bad => Color::Red,
            LogKind::Good => Color::Green,
        };
        Line::from(vec![
            Span::styled(
                format!("{:>6.1}s ", l.at as f64 / 1e9),
                Style::default().fg(Color::DarkGray),
            ),
            Span::styled(l.text.clone(), Style::default().fg(color)),
        ])
    };
    // From the newest back, as many entries as fit once wrapped.
    let mut lines = Vec::new();
    let mut used = 0;
    for l in s.log.iter().rev() {
        let shown = line(l);
        let h = Paragraph::new(shown.clone()).wrap(wrap).line_count(width);
        if used + h > rows {
            break;
        }
        used += h;
        lines.push(shown);
    }
    lines.reverse();
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(wrap)
            .block(Block::bordered().title(" events ")),
        area,
    );
}
