//! One lane's panel: status lights, the figures, the rows and heartbeat charts with their kill
//! and restart markers, and the verdict. Pure, as all of `ui`.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker as Glyph;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, BorderType, Chart, Dataset, GraphType, Paragraph, Widget};

use crate::clock::{NIGHT_START, SimTime};
use crate::tui::theme::Theme;
use crate::tui::view::{LaneView, MarkerKind, StateKind};

/// A status light: a different glyph for each state, so it reads without colour (NO_COLOR);
/// a finished lane's lights are out (nothing to watch any more).
fn light(on: bool, finished: bool, theme: Theme) -> Span<'static> {
    if finished {
        Span::styled("·", theme.dim())
    } else if on {
        Span::styled("●", theme.good())
    } else {
        Span::styled("✕", theme.bad())
    }
}

/// One lane's panel: its lights and figures, its two charts, its verdict.
pub(super) fn lane_panel(
    area: Rect,
    buf: &mut Buffer,
    lane: &LaneView,
    selected: bool,
    x_max: f64,
    theme: Theme,
) {
    let border = if selected {
        theme.selected()
    } else {
        theme.dim()
    };
    let workers = if lane.workers > 1 {
        format!(" x{}", lane.workers)
    } else {
        String::new()
    };
    let title = format!(" {}{workers} ", lane.name);
    let block = Block::bordered()
        .border_type(if selected {
            BorderType::Thick
        } else {
            BorderType::Rounded
        })
        .border_style(border)
        .title(Span::styled(
            title,
            if selected {
                theme.selected()
            } else {
                theme.title()
            },
        ));
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height < 3 || inner.width < 10 {
        return;
    }
    let lines = status_lines(lane, inner.width, theme);
    let verdict = verdict_lines(lane, theme);
    // Verdict lines wrap rather than lose their end: count the rows they need at this width.
    let verdict_height: u16 = verdict
        .iter()
        .map(|l| (l.width() as u16).div_ceil(inner.width).max(1))
        .sum();
    let fixed = lines.len() as u16 + verdict_height;
    let chart_height = inner.height.saturating_sub(fixed);
    let heartbeat_height = if chart_height >= 16 { 6 } else { 0 };
    let [top, chart_area, heartbeat_area, bottom] = Layout::vertical([
        Constraint::Length(lines.len() as u16),
        Constraint::Length(chart_height - heartbeat_height),
        Constraint::Length(heartbeat_height),
        Constraint::Length(verdict_height),
    ])
    .areas(inner);
    Paragraph::new(lines).render(top, buf);
    if chart_area.height >= 4 {
        rows_chart(chart_area, buf, lane, x_max, theme);
    }
    if heartbeat_area.height > 0 {
        heartbeat_chart(heartbeat_area, buf, lane, x_max, theme);
    }
    Paragraph::new(verdict)
        .wrap(ratatui::widgets::Wrap { trim: true })
        .render(bottom, buf);
}

/// The lane's state, lights and figures, with the dead-man's alert when it fires.
fn status_lines(lane: &LaneView, width: u16, theme: Theme) -> Vec<Line<'static>> {
    let gap = if width >= 44 { "  " } else { " " };
    let state_style = match lane.state_kind {
        StateKind::Running => theme.good(),
        StateKind::Hung | StateKind::Restarting => theme.warn(),
        StateKind::Done => theme.plain(),
        StateKind::Failed => theme.bad(),
    };
    let task = lane.task.clone().unwrap_or_else(|| "-".into());
    let finished = matches!(lane.state_kind, StateKind::Done | StateKind::Failed);
    let mut lines = vec![
        Line::from(vec![
            Span::styled(lane.state.clone(), state_style),
            Span::styled(
                format!("  {task}  restarts {}", lane.restarts),
                theme.plain(),
            ),
        ]),
        if lane.no_heartbeat {
            // Not stale: the job never wrote HEARTBEAT_FILE, so progress cannot be told.
            Line::from(vec![
                Span::raw("alive "),
                light(lane.alive, finished, theme),
                Span::raw("  progress: no heartbeat"),
            ])
        } else {
            Line::from(vec![
                Span::raw("alive "),
                light(lane.alive, finished, theme),
                Span::raw("  progress "),
                light(lane.progress, finished, theme),
                Span::raw(format!(
                    "  heartbeat {}",
                    lane.heartbeat_age
                        .map_or_else(|| "-".into(), |a| format!("{a:.0}s/{:.0}s", lane.dead_man))
                )),
            ])
        },
        Line::from(vec![
            Span::styled(format!("rows {}", lane.rows), theme.rows()),
            Span::raw(gap),
            Span::styled(format!("distinct {}", lane.distinct), theme.distinct()),
            Span::raw(gap),
            Span::styled(format!("dup {}", lane.duplicated), theme.duplicated()),
            Span::raw(gap),
            Span::styled(
                format!(
                    "ckpt {}",
                    lane.checkpoints
                        .map_or_else(|| "-".into(), |c| c.to_string())
                ),
                theme.checkpoints(),
            ),
        ]),
    ];
    if let Some(m) = &lane.messages {
        // The receiving end, beside the rows: what the customer saw.
        lines.push(Line::from(vec![
            Span::styled(format!("messages {}", m.received), theme.rows()),
            Span::raw(gap),
            Span::styled(format!("distinct {}", m.distinct), theme.distinct()),
            Span::raw(gap),
            Span::styled(
                format!("dup {}", m.duplicated),
                if m.duplicated > 0 {
                    theme.bad()
                } else {
                    theme.duplicated()
                },
            ),
        ]));
    }
    if let Some(alert) = &lane.alert {
        lines.push(Line::styled(alert.clone(), theme.bad()));
    }
    lines
}

/// The worker's claim beside the rows' verdict, and why they disagree.
fn verdict_lines(lane: &LaneView, theme: Theme) -> Vec<Line<'static>> {
    let mut verdict = vec![
        Line::from(vec![
            Span::styled("claimed ", theme.dim()),
            Span::raw(
                lane.claimed
                    .clone()
                    .unwrap_or_else(|| "(no done line yet)".into()),
            ),
        ]),
        Line::from(vec![
            Span::styled("derived ", theme.dim()),
            Span::styled(
                lane.derived.clone(),
                match lane.derived_ok {
                    Some(true) => theme.good(),
                    Some(false) => theme.bad(),
                    None => theme.plain(),
                },
            ),
        ]),
    ];
    if let Some(why) = &lane.disagreement {
        verdict.push(Line::styled(why.clone(), theme.bad()));
    }
    // The rows cannot show a message sent twice: the receiving end's own verdict.
    if let Some(wrong) = lane
        .messages
        .as_ref()
        .filter(|_| matches!(lane.state_kind, StateKind::Done | StateKind::Failed))
        .and_then(crate::vendor::Counts::short_verdict)
    {
        verdict.push(Line::styled(wrong, theme.bad()));
    }
    verdict
}

fn x_labels(x_max: f64, theme: Theme) -> Vec<Span<'static>> {
    [0.0, x_max / 2.0, x_max]
        .iter()
        .map(|s| Span::styled(short_time(*s), theme.dim()))
        .collect()
}

fn short_time(since_start: f64) -> String {
    let t = SimTime(NIGHT_START + since_start).to_string();
    t[..5].to_string()
}

fn marker_lines(lane: &LaneView, y_max: f64) -> Vec<(MarkerKind, [(f64, f64); 2])> {
    lane.markers
        .iter()
        .map(|m| (m.kind, [(m.at, 0.0), (m.at, y_max)]))
        .collect()
}

fn rows_chart(area: Rect, buf: &mut Buffer, lane: &LaneView, x_max: f64, theme: Theme) {
    let y_max = (lane.rows.max(lane.items) as f64 * 1.1).max(1.0);
    let markers = marker_lines(lane, y_max);
    let mut datasets: Vec<Dataset<'_>> = markers
        .iter()
        .map(|(kind, points)| {
            let style = match kind {
                MarkerKind::Kill => theme.bad(),
                MarkerKind::Restart => theme.good(),
            };
            Dataset::default()
                .graph_type(GraphType::Line)
                .marker(Glyph::Braille)
                .style(style)
                .data(points)
        })
        .collect();
    let curves: [(&[(f64, f64)], Style); 4] = [
        (&lane.series.checkpoints, theme.checkpoints()),
        (&lane.series.distinct, theme.distinct()),
        (&lane.series.rows, theme.rows()),
        (&lane.series.duplicated, theme.duplicated()),
    ];
    for (data, style) in curves {
        datasets.push(
            Dataset::default()
                .graph_type(GraphType::Line)
                .marker(Glyph::Braille)
                .style(style)
                .data(data),
        );
    }
    Chart::new(datasets)
        .x_axis(
            Axis::default()
                .bounds([0.0, x_max])
                .labels(x_labels(x_max, theme)),
        )
        .y_axis(Axis::default().bounds([0.0, y_max]).labels([
            Span::styled("0", theme.dim()),
            Span::styled(format!("{y_max:.0}"), theme.dim()),
        ]))
        .render(area, buf);
}

fn heartbeat_chart(area: Rect, buf: &mut Buffer, lane: &LaneView, x_max: f64, theme: Theme) {
    let peak = lane
        .series
        .heartbeat_age
        .iter()
        .map(|p| p.1)
        .fold(0.0_f64, f64::max);
    // The threshold sits on the middle label, so the axis reads 0 / 300s / 600s.
    let y_max = (lane.dead_man * 2.0).max(peak * 1.1);
    let threshold = [(0.0, lane.dead_man), (x_max, lane.dead_man)];
    let datasets = vec![
        Dataset::default()
            .name("dead-man")
            .graph_type(GraphType::Line)
            .marker(Glyph::Dot)
            .style(theme.bad())
            .data(&threshold),
        Dataset::default()
            .name("heartbeat age")
            .graph_type(GraphType::Line)
            .marker(Glyph::Braille)
            .style(theme.heartbeat())
            .data(&lane.series.heartbeat_age),
    ];
    Chart::new(datasets)
        .hidden_legend_constraints((Constraint::Length(0), Constraint::Length(0)))
        .x_axis(Axis::default().bounds([0.0, x_max]))
        .y_axis(Axis::default().bounds([0.0, y_max]).labels([
            Span::styled("hb", theme.heartbeat()),
            Span::styled(format!("{:.0}s", y_max / 2.0), theme.bad()),
            Span::styled(format!("{y_max:.0}s"), theme.dim()),
        ]))
        .render(area, buf);
}
