//! One lane's panel: status lights, the figures, the rows and heartbeat charts with their kill
//! and restart markers, and the verdict. Pure, as all of `ui`.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker as Glyph;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, BorderType, Chart, Dataset, GraphType, Paragraph, Widget};

use super::snap::on_braille_rows;
use crate::base::clock::{NIGHT_START, SimTime};
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

/// The scales every lane's charts share, so 312 rows stands taller than 200 side by side.
#[derive(Debug, Clone, Copy)]
pub(super) struct Scales {
    /// Sim seconds since 02:00 at the time axis' end.
    pub x_max: f64,
    /// The rows axis' top.
    pub y_max: f64,
    /// The rows each lane's charts take: the fewest any lane on screen has room for.
    pub chart_rows: u16,
}

impl Scales {
    /// One rows axis for all `lanes`: a tenth above the tallest queue or row count.
    pub(super) fn of(lanes: &[LaneView], x_max: f64) -> Self {
        let tallest = lanes.iter().map(|l| l.rows.max(l.items)).max().unwrap_or(0);
        Self {
            x_max,
            y_max: (tallest as f64 * 1.1).max(1.0),
            chart_rows: u16::MAX,
        }
    }
}

/// How each curve is drawn: a glyph of its own (so the curves tell apart without colour) and
/// the legend's word for it, in drawing order (a later curve covers an earlier one).
const CURVES: [(Glyph, &str, &str); 4] = [
    (Glyph::Bar, "▄", "ckpt"),
    (Glyph::Dot, "•", "distinct"),
    (Glyph::Braille, "⣀", "rows"),
    (Glyph::Quadrant, "▚", "dup"),
];

/// The panel width from which a zoomed lane's state and lights share one row: the widest state
/// (`killed by SIGKILL, restarting  task-123  restarts 10`) beside the widest lights.
const ONE_ROW_STATUS: u16 = 96;

/// One lane's panel: its lights and figures, its two charts, its verdict, laid out in `rows`
/// (its `panel_rows` inside the border). `zoom` (this lane's place and the number of lanes)
/// when it has the whole width: its top border says so, and how to get every lane back.
pub(super) fn lane_panel(
    area: Rect,
    buf: &mut Buffer,
    (lane, rows): (&LaneView, PanelRows),
    (selected, zoom): (bool, Option<(usize, usize)>),
    scales: Scales,
    theme: Theme,
) {
    let x_max = scales.x_max;
    let block = panel_block(lane, selected, zoom, theme);
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height < 3 || inner.width < 10 {
        return;
    }
    let PanelRows {
        lines,
        verdict,
        verdict_height,
        chart_height,
    } = rows;
    // Every lane's charts as tall as the shortest's: one scale, one height (a verdict that
    // wraps onto two rows in one lane took a row from its chart only).
    let chart_height = chart_height.min(scales.chart_rows);
    // The heartbeat's age over the night: a chart when there is room, else a one-row sparkline.
    let heartbeat_height = match chart_height {
        16.. => 6,
        6..=15 => 1,
        _ => 0,
    };
    let [top, chart_area, heartbeat_area, bottom, _] = Layout::vertical([
        Constraint::Length(lines.len() as u16),
        Constraint::Length(chart_height - heartbeat_height),
        Constraint::Length(heartbeat_height),
        Constraint::Length(verdict_height),
        Constraint::Min(0),
    ])
    .areas(inner);
    Paragraph::new(lines).render(top, buf);
    if chart_area.height >= 4 {
        // A legend line when the chart keeps at least seven rows without it.
        let chart_area = if chart_area.height >= 8 {
            let [legend_area, rest] =
                Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(chart_area);
            Paragraph::new(legend(lane, theme, inner.width)).render(legend_area, buf);
            rest
        } else {
            chart_area
        };
        rows_chart(chart_area, buf, lane, scales, theme);
    }
    match heartbeat_area.height {
        0 => {}
        1 => heartbeat_sparkline(heartbeat_area, buf, lane, x_max, theme),
        _ => heartbeat_chart(heartbeat_area, buf, lane, x_max, theme),
    }
    Paragraph::new(verdict)
        .wrap(ratatui::widgets::Wrap { trim: true })
        .render(bottom, buf);
}

/// What a panel's inside holds: its status lines, its verdict lines and the rows they take,
/// and the rows left for its charts.
pub(super) struct PanelRows {
    lines: Vec<Line<'static>>,
    verdict: Vec<Line<'static>>,
    verdict_height: u16,
    pub chart_height: u16,
}

/// How the inside of a lane's panel (`inner`) is shared out at its width.
pub(super) fn panel_rows(inner: Rect, lane: &LaneView, zoomed: bool, theme: Theme) -> PanelRows {
    let mut lines = status_lines(lane, inner.width, theme);
    if zoomed && inner.width >= ONE_ROW_STATUS {
        // Zoomed in a wide window, the state and the lights share a row, which goes to the
        // chart. The state keeps the room the lights leave (its task and restarts go whole or
        // not at all); from this width on that is always all of it, so the rows never jump.
        let lights = lines.remove(1);
        let room = inner.width.saturating_sub(lights.width() as u16 + 2);
        lines[0] = status_lines(lane, room, theme).swap_remove(0);
        lines[0].spans.push(Span::raw("  "));
        lines[0].spans.extend(lights.spans);
    }
    let wrapped = |verdict: &[Line<'_>]| -> u16 {
        // Verdict lines wrap rather than lose their end: count the rows they need here.
        verdict
            .iter()
            .map(|l| (l.width() as u16).div_ceil(inner.width.max(1)).max(1))
            .sum()
    };
    let mut verdict = verdict_lines(lane, theme, true);
    let room = |verdict_height: u16| {
        inner
            .height
            .saturating_sub(lines.len() as u16 + verdict_height)
    };
    // The rows chart comes before the explanation of the verdict: in a small window the
    // disagreement line (the verdict says it already) gives its rows to the chart.
    if room(wrapped(&verdict)) < 7 {
        verdict = verdict_lines(lane, theme, false);
    }
    let verdict_height = wrapped(&verdict);
    let chart_height = room(verdict_height);
    PanelRows {
        lines,
        verdict,
        verdict_height,
        chart_height,
    }
}

/// The panel's border: thick when selected, its name (and workers) at the left and, zoomed, its
/// place among the lanes and the keys back at the right.
fn panel_block(
    lane: &LaneView,
    selected: bool,
    zoom: Option<(usize, usize)>,
    theme: Theme,
) -> Block<'static> {
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
    match zoom {
        Some((i, lanes)) => {
            let others = if lanes > 1 { "tab next · " } else { "" };
            block.title(
                Line::from(Span::styled(
                    format!(" zoom {}/{lanes} · {others}z all lanes ", i + 1),
                    theme.selected(),
                ))
                .right_aligned(),
            )
        }
        None => block,
    }
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
    // The state first; the task and the restarts after it only whole (a task cut to `task-11`
    // would name another task): the narrower the panel, the fewer of them.
    let mut first = vec![Span::styled(lane.state.clone(), state_style)];
    let mut used = lane.state.chars().count();
    for part in [
        format!("{gap}{task}"),
        format!("{gap}restarts {}", lane.restarts),
    ] {
        let len = part.chars().count();
        if used + len > usize::from(width) {
            break;
        }
        used += len;
        first.push(Span::styled(part, theme.plain()));
    }
    let mut lines = vec![
        Line::from(first),
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

/// The worker's claim beside the rows' verdict, and (`why`) why they disagree.
fn verdict_lines(lane: &LaneView, theme: Theme, why: bool) -> Vec<Line<'static>> {
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
    // `compare`: what the rows cannot show, the tables against the undisturbed night's.
    if let Some((said, differs)) = &lane.tables {
        verdict.push(Line::from(vec![
            Span::styled("tables  ", theme.dim()),
            Span::styled(
                said.clone(),
                match (differs, said.as_str()) {
                    (true, _) => theme.bad(),
                    (false, "state the same") => theme.good(),
                    (false, _) => theme.plain(),
                },
            ),
        ]));
    }
    if let Some(text) = lane.disagreement.as_ref().filter(|_| why) {
        verdict.push(Line::styled(text.clone(), theme.bad()));
    }
    // The rows cannot show a message sent twice: the receiving end's own verdict.
    if let Some(wrong) = lane
        .messages
        .as_ref()
        .filter(|_| matches!(lane.state_kind, StateKind::Done | StateKind::Failed))
        .and_then(crate::fake_vendor::Counts::short_verdict)
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

/// The chart's legend: each curve's glyph and name in its colour, and the two markers; in a
/// narrow panel, `distinct` is `dist`.
fn legend(lane: &LaneView, theme: Theme, width: u16) -> Line<'static> {
    let styles = [
        theme.checkpoints(),
        theme.distinct(),
        theme.rows(),
        theme.duplicated(),
    ];
    let mut spans = Vec::new();
    // Drawn last, shown first: rows, distinct, dup, then ckpt where the lane has checkpoints.
    for i in [2, 1, 3, 0] {
        if i == 0 && lane.checkpoints.is_none() {
            continue;
        }
        let (_, glyph, name) = CURVES[i];
        let name = if name == "distinct" && width < 46 {
            "dist"
        } else {
            name
        };
        spans.push(Span::styled(format!("{glyph}{name} "), styles[i]));
    }
    spans.push(Span::styled("┃kill ", theme.bad()));
    spans.push(Span::styled("┆restart", theme.good()));
    Line::from(spans)
}

/// A kill is drawn in the top half of the chart and a restart in the bottom half, so both show
/// even when they fall in the same column (18 sim-seconds apart at 120 columns).
fn marker_lines(lane: &LaneView, y_max: f64) -> Vec<(MarkerKind, [(f64, f64); 2])> {
    lane.markers
        .iter()
        .map(|m| {
            let (from, to) = match m.kind {
                MarkerKind::Kill => (y_max * 0.5, y_max),
                MarkerKind::Restart => (0.0, y_max * 0.5),
            };
            (m.kind, [(m.at, from), (m.at, to)])
        })
        .collect()
}

fn rows_chart(area: Rect, buf: &mut Buffer, lane: &LaneView, scales: Scales, theme: Theme) {
    let Scales { x_max, y_max, .. } = scales;
    let markers = marker_lines(lane, y_max);
    // The plot's rows: the chart less its x axis and labels, as ratatui lays it out.
    let plot_rows = area.height.saturating_sub(2);
    let mut snapped = Vec::with_capacity(CURVES.len());
    // Kills as a braille line; restarts are painted after, as the legend's `┆` (no chart marker
    // is free: the curves use the others).
    let mut datasets: Vec<Dataset<'_>> = markers
        .iter()
        .filter(|(kind, _)| *kind == MarkerKind::Kill)
        .map(|(_, points)| {
            Dataset::default()
                .graph_type(GraphType::Line)
                .marker(Glyph::Braille)
                .style(theme.bad())
                .data(points)
        })
        .collect();
    let curves: [(&[(f64, f64)], Style); 4] = [
        (&lane.series.checkpoints, theme.checkpoints()),
        (&lane.series.distinct, theme.distinct()),
        (&lane.series.rows, theme.rows()),
        (&lane.series.duplicated, theme.duplicated()),
    ];
    for (i, ((data, style), (glyph, _, _))) in curves.into_iter().zip(CURVES).enumerate() {
        // Nothing to draw for a lane without checkpoints, nor for duplicates that never came:
        // a curve lying on the axis in the alarm colour would say something that is not so.
        let empty = data.iter().all(|p| p.1 <= 0.0);
        if (i == 0 && lane.checkpoints.is_none()) || (i == 3 && empty) {
            continue;
        }
        // Nor for the stretch before the first duplicate: it starts where they do.
        let data = if i == 3 {
            let first = data.iter().position(|p| p.1 > 0.0).unwrap_or(0);
            &data[first.saturating_sub(1)..]
        } else {
            data
        };
        snapped.push((glyph, style, on_braille_rows(data, glyph, y_max, plot_rows)));
    }
    for (glyph, style, data) in &snapped {
        datasets.push(
            Dataset::default()
                .graph_type(GraphType::Line)
                .marker(*glyph)
                .style(*style)
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
    paint_restarts(area, buf, lane, scales, theme);
}

/// Each restart as a column of `┆` in the bottom half of the chart's plot (the kill's braille
/// line takes the top half), where no curve is drawn. The plot is the chart less its y labels
/// and axis on the left and its x axis and labels below, as ratatui lays it out; the column is
/// ratatui's for that moment.
fn paint_restarts(area: Rect, buf: &mut Buffer, lane: &LaneView, scales: Scales, theme: Theme) {
    let labels = format!("{:.0}", scales.y_max).chars().count().max(1) as u16;
    // The labels, a blank, the axis line: then the plot.
    let plot = Rect {
        x: area.x + labels + 2,
        y: area.y,
        width: area.width.saturating_sub(labels + 2),
        height: area.height.saturating_sub(2),
    };
    if plot.width < 2 || plot.height == 0 || scales.x_max <= 0.0 {
        return;
    }
    for marker in lane
        .markers
        .iter()
        .filter(|m| m.kind == MarkerKind::Restart)
    {
        let at = (marker.at / scales.x_max).clamp(0.0, 1.0);
        let x = plot.x + (at * f64::from(plot.width - 1)) as u16;
        for y in plot.y + plot.height / 2..plot.bottom() {
            let cell = &mut buf[(x, y)];
            if matches!(cell.symbol(), " " | "⠀") {
                cell.set_symbol("┆").set_style(theme.good());
            }
        }
    }
}

/// The heartbeat's age as one row: `hb` and a bar per column, full at the dead-man's threshold
/// and marked in the alarm colour past it.
fn heartbeat_sparkline(area: Rect, buf: &mut Buffer, lane: &LaneView, x_max: f64, theme: Theme) {
    const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let label = "hb  │";
    let width = usize::from(area.width).saturating_sub(label.chars().count());
    if width == 0 {
        return;
    }
    // The oldest age seen in each column's stretch of the night.
    let mut columns: Vec<Option<f64>> = vec![None; width];
    for &(at, age) in &lane.series.heartbeat_age {
        let column = ((at / x_max.max(1.0)) * width as f64) as usize;
        if let Some(cell) = columns.get_mut(column.min(width - 1)) {
            *cell = Some(cell.map_or(age, |seen: f64| seen.max(age)));
        }
    }
    let mut spans = vec![Span::styled(label, theme.heartbeat())];
    for column in columns {
        spans.push(match column {
            None => Span::raw(" "),
            Some(age) => {
                let level = (age / lane.dead_man.max(1.0) * 7.0).round().clamp(0.0, 7.0);
                let style = if age > lane.dead_man {
                    theme.bad()
                } else {
                    theme.heartbeat()
                };
                Span::styled(LEVELS[level as usize].to_string(), style)
            }
        });
    }
    Paragraph::new(Line::from(spans)).render(area, buf);
}

fn heartbeat_chart(area: Rect, buf: &mut Buffer, lane: &LaneView, x_max: f64, theme: Theme) {
    let peak = lane
        .series
        .heartbeat_age
        .iter()
        .map(|p| p.1)
        .fold(0.0_f64, f64::max);
    // The threshold sits on the middle label, so the axis reads 0 / 300s / 600s, always: an
    // age past the top is drawn at it and the label says `600s+` (the lane's heartbeat line
    // gives the age itself). Rescaled to the peak, the axis read 387s / 774s and the
    // threshold had no label.
    let y_max = lane.dead_man * 2.0;
    let clipped = peak > y_max;
    let ages: Vec<(f64, f64)> = (lane.series.heartbeat_age.iter())
        .map(|&(x, age)| (x, age.min(y_max)))
        .collect();
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
            .data(&ages),
    ];
    Chart::new(datasets)
        .hidden_legend_constraints((Constraint::Length(0), Constraint::Length(0)))
        .x_axis(Axis::default().bounds([0.0, x_max]))
        .y_axis(Axis::default().bounds([0.0, y_max]).labels([
            Span::styled("hb", theme.heartbeat()),
            Span::styled(format!("{:.0}s", y_max / 2.0), theme.bad()),
            Span::styled(
                format!("{y_max:.0}s{}", if clipped { "+" } else { "" }),
                theme.dim(),
            ),
        ]))
        .render(area, buf);
}
