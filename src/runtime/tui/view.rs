//! The dashboard's pure view: `render(&state, frame)` lays out the header, the queries
//! table, the charts, the drop points with the selected query's details, and the event
//! log, from the state alone. Below `CHARTS_MIN_HEIGHT` rows the charts are left out, so
//! the figures that matter still fit an 80x24 terminal.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Clear, Paragraph, Row, Table, Wrap};

use super::panels::{charts, details, drop_points, event_log};
use super::state::{Health, State};
use super::words::{ms, rate};
use crate::runtime::observe::RunMode;

/// Terminals shorter than this show no charts.
pub const CHARTS_MIN_HEIGHT: u16 = 32;
/// Below this the dashboard asks for a bigger terminal.
pub const MIN_SIZE: (u16, u16) = (40, 10);

/// Draws `state` on the whole frame.
pub fn render(state: &State, frame: &mut Frame<'_>) {
    let area = frame.area();
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        frame.render_widget(
            Paragraph::new("spillway: terminal too small (q quits)").wrap(Wrap { trim: true }),
            area,
        );
        return;
    }
    let s = state.shown();
    let queries = s.info.as_ref().map_or(0, |i| i.queries.len()) as u16;
    let table_h = (queries + 3).min(area.height / 3).max(4);
    let charts_h = if area.height >= CHARTS_MIN_HEIGHT {
        (area.height / 3).min(14)
    } else {
        0
    };
    let [header, table, chart_area, bottom] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(table_h),
        Constraint::Length(charts_h),
        Constraint::Min(4),
    ])
    .areas(area);
    render_header(state, frame, header);
    render_table(s, state.selected, frame, table);
    if charts_h > 0 {
        charts(s, frame, chart_area);
    }
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(bottom);
    let [drops, detail] =
        Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(left);
    drop_points(s, frame, drops);
    details(s, state.selected, frame, detail);
    event_log(s, frame, right);
    if state.help {
        help(frame, area);
    }
}

fn health_span(h: Health) -> Span<'static> {
    let (text, color) = match h {
        Health::Ok => (" OK ", Color::Green),
        Health::Shedding => (" SHEDDING ", Color::Yellow),
        Health::Violating => (" VIOLATING ", Color::Red),
    };
    Span::styled(
        text,
        Style::default()
            .fg(Color::Black)
            .bg(color)
            .add_modifier(Modifier::BOLD),
    )
}

fn render_header(state: &State, frame: &mut Frame<'_>, area: Rect) {
    let s = state.shown();
    let (name, mode, duration) = s.info.as_ref().map_or(("-", "-", None), |i| {
        (
            i.workload.as_str(),
            match i.mode {
                RunMode::Live => "live",
                RunMode::Simulated => "simulated",
            },
            i.duration,
        )
    });
    let elapsed = s.elapsed() as f64 / 1e9;
    let mut first = vec![
        Span::styled(
            format!(" {name} "),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!("{mode} · policy {} · ", state.policy)),
        Span::raw(match duration {
            Some(d) => format!("{elapsed:.1} / {:.1} s", d as f64 / 1e9),
            None => format!("{elapsed:.1} s"),
        }),
        Span::raw(" "),
        health_span(s.health()),
    ];
    // Violating and shedding at once: say both.
    if s.health() == Health::Violating && s.latest.as_ref().is_some_and(|t| t.shedding) {
        first.push(Span::raw(" "));
        first.push(health_span(Health::Shedding));
    }
    if (state.rate_scale - 1.0).abs() > 1e-9 {
        first.push(Span::raw(format!(" rate x{:.2}", state.rate_scale)));
    }
    if state.frozen.is_some() {
        first.push(Span::styled(
            " PAUSED ",
            Style::default().fg(Color::Black).bg(Color::Cyan),
        ));
    }
    if state.stopping && !state.ended {
        first.push(Span::raw(" stopping…"));
    }
    if state.ended {
        first.push(Span::raw(" ended"));
    }
    let gauge = demand_gauge(s, area.width.saturating_sub(2) as usize);
    let help = Line::from(Span::styled(
        " q quit · p pause · ↑↓ select · +/- rate · s policy · ? help",
        Style::default().fg(Color::DarkGray),
    ));
    frame.render_widget(Paragraph::new(vec![Line::from(first), gauge, help]), area);
}

/// `demand 2.95x capacity ███████████│▒▒▒▒▒▒┃▒▒▒  target 0.90x · busy 99%`: the bar spans
/// 0 to twice capacity (more is clipped), `│` marks the plan's target (headroom x
/// feedback), `┃` capacity itself.
pub fn demand_gauge(s: &State, width: usize) -> Line<'static> {
    let Some(t) = &s.latest else {
        return Line::from(" demand: waiting for the first tick");
    };
    let label = format!(" demand {:.2}x capacity ", t.demand);
    let tail = format!(" target {:.2}x · busy {:.0}%", t.target, 100.0 * t.busy);
    let bar_w = width.saturating_sub(label.len() + tail.len()).max(10);
    let scale = 2.0;
    let pos = |v: f64| ((v / scale).clamp(0.0, 1.0) * bar_w as f64).round() as usize;
    let (fill, mark, cap) = (pos(t.demand), pos(t.target), pos(1.0).min(bar_w - 1));
    let color = if t.demand > 1.0 {
        Color::Red
    } else if t.demand > t.target {
        Color::Yellow
    } else {
        Color::Green
    };
    let mut bar = Vec::with_capacity(bar_w);
    for i in 0..bar_w {
        let (ch, style) = if i == mark.min(bar_w - 1) {
            ('│', Style::default().fg(Color::White))
        } else if i == cap {
            ('┃', Style::default().fg(Color::White))
        } else if i < fill {
            ('█', Style::default().fg(color))
        } else {
            ('░', Style::default().fg(Color::DarkGray))
        };
        bar.push(Span::styled(ch.to_string(), style));
    }
    let mut spans = vec![Span::raw(label)];
    spans.extend(bar);
    spans.push(Span::raw(tail));
    Line::from(spans)
}

/// Green with room to spare, yellow within 20% of the target, red over it.
pub fn slack_color(latency: i64, target: Option<i64>) -> Color {
    match target {
        Some(t) if t > 0 && latency > t => Color::Red,
        Some(t) if t > 0 && latency as f64 > 0.8 * t as f64 => Color::Yellow,
        Some(_) => Color::Green,
        None => Color::Reset,
    }
}

fn render_table(s: &State, selected: usize, frame: &mut Frame<'_>, area: Rect) {
    let names = s.query_names();
    let header = Row::new([
        "query", "in/s", "out/s", "queue", "age ms", "p50 ms", "p99 ms", "target", "shed%", "keep",
        "util", "viol s",
    ])
    .style(Style::default().add_modifier(Modifier::BOLD));
    let rows: Vec<Row> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let Some(q) = s.latest.as_ref().and_then(|t| t.queries.get(i)) else {
                return Row::new([Cell::from(name.to_string())]);
            };
            let color = slack_color(q.p99, q.target);
            let shed = 100.0 * q.lost as f64 / q.offered.max(1) as f64;
            let row = Row::new([
                Cell::from(name.to_string()),
                Cell::from(rate(q.rate_in)),
                Cell::from(rate(q.rate_out)),
                Cell::from(q.queued.to_string()),
                Cell::from(ms(q.queue_delay)),
                Cell::from(ms(q.p50)).style(Style::default().fg(slack_color(q.p50, q.target))),
                Cell::from(ms(q.p99)).style(Style::default().fg(color)),
                Cell::from(q.target.map_or("-".into(), ms)),
                Cell::from(format!("{shed:.1}")),
                Cell::from(format!("{:.2}", q.keep)),
                Cell::from(format!("{:.2}", q.utility)),
                Cell::from(format!("{:.1}", s.violation_secs(i))),
            ]);
            if i == selected {
                row.style(Style::default().add_modifier(Modifier::REVERSED))
            } else {
                row
            }
        })
        .collect();
    let widths = [
        Constraint::Min(8),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(8),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(5),
        Constraint::Length(4),
        Constraint::Length(4),
        Constraint::Length(6),
    ];
    frame.render_widget(
        Table::new(rows, widths)
            .header(header)
            .column_spacing(1)
            .block(Block::bordered().title(" queries ")),
        area,
    );
}

/// The keys, over everything else.
fn help(frame: &mut Frame<'_>, area: Rect) {
    let lines = [
        "q, Ctrl-C  stop cleanly (press again to abort)",
        "p          pause the view (the run goes on)",
        "Up, Down   select a query: details below",
        "+, -       every paced source's rate x1.25 / x0.8",
        "s          next policy: none, tail-drop, random,",
        "           semantic, window-aware",
        "?, Esc     close this help",
    ];
    let w = (lines.iter().map(|l| l.len()).max().unwrap_or(0) as u16 + 4).min(area.width);
    let h = (lines.len() as u16 + 2).min(area.height);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines.iter().map(|l| Line::from(*l)).collect::<Vec<_>>())
            .block(Block::bordered().title(" keys ")),
        r,
    );
}
