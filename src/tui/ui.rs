//! Rendering: the view model in, cells out. Pure: no I/O and no clock reads here.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Widget};

use crate::tui::keymap::{self, Mode};
use crate::tui::theme::Theme;
use crate::tui::view::Dashboard;
use crate::tui::view::Tone;

mod lane;

use self::lane::{Scales, lane_panel};

/// The smallest terminal the dashboard draws in.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 18;

/// The areas of the screen, computed the same way for drawing and for mouse clicks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Areas {
    pub header: Rect,
    /// Lecture mode's line; empty (zero height) outside lecture mode.
    pub lecture: Rect,
    /// Empty (zero height) when there is no caption.
    pub caption: Rect,
    pub lanes: Vec<Rect>,
    pub timeline: Rect,
    pub symptoms: Rect,
    pub footer: Rect,
}

/// Splits `area` for `lanes` lanes: side by side up to three, then in two rows; a line for
/// lecture mode's status under the header when `lecture`.
#[must_use]
pub fn areas(area: Rect, lanes: usize, caption: Option<&str>, lecture: Option<&str>) -> Areas {
    // A caption wraps onto a second line rather than lose its end.
    let caption_height = caption.map_or(0, |text| {
        if text.chars().count() + 3 > usize::from(area.width) {
            2
        } else {
            1
        }
    });
    // So does the lecture's line (its mark takes 12 columns).
    let lecture_height = lecture.map_or(0, |text| {
        if text.chars().count() + 12 > usize::from(area.width) {
            2
        } else {
            1
        }
    });
    let bottom = if area.height >= 36 {
        10
    } else if area.height >= 28 {
        8
    } else {
        6
    };
    let [
        header,
        lecture_area,
        caption_area,
        body,
        bottom_area,
        footer,
    ] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(lecture_height),
        Constraint::Length(caption_height),
        Constraint::Min(6),
        Constraint::Length(bottom),
        Constraint::Length(1),
    ])
    .areas(area);
    let symptoms_width = if area.width >= 110 { 46 } else { 34 };
    let [timeline, symptoms] =
        Layout::horizontal([Constraint::Min(20), Constraint::Length(symptoms_width)])
            .areas(bottom_area);
    let lanes = lanes.max(1);
    let rows = if lanes > 3 { 2 } else { 1 };
    let per_row = lanes.div_ceil(rows);
    let row_areas = Layout::vertical(vec![Constraint::Ratio(1, rows as u32); rows]).split(body);
    let mut lane_areas = Vec::with_capacity(lanes);
    for (r, row) in row_areas.iter().enumerate() {
        let in_row = if r + 1 == rows {
            lanes - per_row * r
        } else {
            per_row
        };
        let cols =
            Layout::horizontal(vec![Constraint::Ratio(1, per_row as u32); per_row]).split(*row);
        lane_areas.extend(cols.iter().take(in_row).copied());
    }
    Areas {
        header,
        lecture: lecture_area,
        caption: caption_area,
        lanes: lane_areas,
        timeline,
        symptoms,
        footer,
    }
}

/// Draws one frame.
pub fn render(frame: &mut Frame<'_>, view: &Dashboard, theme: Theme) {
    render_to(frame.area(), frame.buffer_mut(), view, theme);
}

/// Draws one frame into a buffer (what tests and benchmarks call).
pub fn render_to(area: Rect, buf: &mut Buffer, view: &Dashboard, theme: Theme) {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        too_small(area, buf, theme);
        return;
    }
    let a = areas(
        area,
        view.lanes.len(),
        view.caption.as_deref(),
        view.lecture.as_deref(),
    );
    header(a.header, buf, view, theme);
    if let Some(text) = &view.lecture {
        lecture(a.lecture, buf, text, theme);
    }
    if let Some(text) = &view.caption {
        caption(a.caption, buf, text, theme);
    }
    // One scale for every lane: the taller night looks taller.
    let scales = Scales::of(&view.lanes, view.x_max);
    for (i, (lane, rect)) in view.lanes.iter().zip(&a.lanes).enumerate() {
        lane_panel(*rect, buf, lane, i == view.selected, scales, theme);
    }
    timeline(a.timeline, buf, view, theme);
    symptoms(a.symptoms, buf, view, theme);
    footer(a.footer, buf, view.mode, theme);
    if view.help {
        help(area, buf, view, theme);
    } else if let Some(ids) = &view.ids {
        ids_overlay(area, buf, ids, theme);
    }
}

/// The duplicated ids of a lane, over the dashboard, as many as fit.
fn ids_overlay(area: Rect, buf: &mut Buffer, ids: &crate::tui::view::IdsView, theme: Theme) {
    let width = area.width.min(92);
    let height = (ids.lines.len() as u16).saturating_add(4).min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    Clear.render(popup, buf);
    let title = format!(
        " {}: {} written more than once (any key closes) ",
        ids.lane,
        crate::text::count(ids.total, "task id", "task ids")
    );
    let block = Block::bordered()
        .border_type(BorderType::Double)
        .border_style(theme.title())
        .title(Span::styled(title, theme.title()));
    let room = usize::from(height.saturating_sub(4));
    let mut lines: Vec<Line<'_>> = vec![Line::styled(
        " task id   rows  runs that wrote them, oldest first",
        theme.dim(),
    )];
    if ids.lines.is_empty() {
        lines.push(Line::raw(" none: every task id has at most one row"));
    }
    let hidden = ids.total.saturating_sub(room.min(ids.lines.len()) as u64);
    for line in ids.lines.iter().take(if hidden > 0 {
        room.saturating_sub(1)
    } else {
        room
    }) {
        lines.push(Line::raw(format!(" {line}")));
    }
    if hidden > 0 {
        lines.push(Line::styled(
            format!(
                " ... and more: reclaim inspect --ids lists all {}",
                ids.total
            ),
            theme.dim(),
        ));
    }
    Paragraph::new(lines).block(block).render(popup, buf);
}

fn too_small(area: Rect, buf: &mut Buffer, theme: Theme) {
    let text = vec![
        Line::styled("reclaim: the terminal is too small", theme.bad()),
        Line::raw(format!(
            "{}x{} here; the dashboard needs at least {MIN_WIDTH}x{MIN_HEIGHT}.",
            area.width, area.height
        )),
        Line::raw("The night is paused until the window is large enough again."),
        Line::raw("Enlarge the window, or press q to quit."),
    ];
    Paragraph::new(text)
        .alignment(Alignment::Center)
        .wrap(ratatui::widgets::Wrap { trim: true })
        .render(area, buf);
}

fn header(area: Rect, buf: &mut Buffer, view: &Dashboard, theme: Theme) {
    let state = if view.paused { "‖ paused" } else { "▶" };
    let speed = speed_label(view.speed);
    let right = if let Some(bar) = &view.replay {
        let partial = if bar.partial { " (partial)" } else { "" };
        format!(
            " {} / {}{partial}  {state} {speed}x  seed {} ",
            view.clock, bar.end, view.seed
        )
    } else {
        let random = if view.random_kills { "on" } else { "off" };
        let rec = if view.recording.is_some() {
            "● REC  "
        } else {
            ""
        };
        format!(
            " {rec}{}  {state} {speed}x  random {random}  seed {} ",
            view.clock, view.seed
        )
    };
    let badge = if view.replay.is_some() {
        " reclaim REPLAY "
    } else {
        " reclaim "
    };
    let left = match &view.notice {
        Some(notice) => Line::from(vec![
            Span::styled(badge, theme.title()),
            Span::styled(notice.clone(), theme.warn()),
        ]),
        None => Line::from(vec![
            Span::styled(badge, theme.title()),
            Span::raw(view.title.clone()),
        ]),
    };
    let [left_area, right_area] = Layout::horizontal([
        Constraint::Min(10),
        Constraint::Length(right.chars().count() as u16),
    ])
    .areas(area);
    left.render(left_area, buf);
    Line::from(vec![Span::styled(right, theme.title())])
        .alignment(Alignment::Right)
        .render(right_area, buf);
}

/// Lecture mode's line: where the night stopped and why (loud), or that it plays on (quiet).
fn lecture(area: Rect, buf: &mut Buffer, text: &str, theme: Theme) {
    let stopped = text.starts_with("stopped");
    let (mark, style) = if stopped {
        (" ■ LECTURE ", theme.bad())
    } else {
        (" ▷ LECTURE ", theme.title())
    };
    let line = Line::from(vec![
        Span::styled(mark, style),
        Span::styled(
            format!(" {text}"),
            if stopped { theme.warn() } else { theme.dim() },
        ),
    ]);
    Paragraph::new(line)
        .wrap(ratatui::widgets::Wrap { trim: true })
        .render(area, buf);
}

/// The teaching caption for this moment, on its own line under the header.
fn caption(area: Rect, buf: &mut Buffer, text: &str, theme: Theme) {
    let line = Line::from(vec![
        Span::styled(" ▌ ", theme.warn()),
        Span::styled(text.to_string(), theme.warn()),
    ]);
    Paragraph::new(line)
        .wrap(ratatui::widgets::Wrap { trim: true })
        .render(area, buf);
}

/// A speed factor as the header and notices show it: `8`, `1`, `0.25`.
pub(crate) fn speed_label(speed: f64) -> String {
    if speed >= 1.0 {
        format!("{speed:.0}")
    } else {
        format!("{speed}")
    }
}

fn timeline(area: Rect, buf: &mut Buffer, view: &Dashboard, theme: Theme) {
    let scrolled = if view.timeline_scroll > 0 {
        format!(
            " timeline (scrolled back {}; end follows) ",
            view.timeline_scroll
        )
    } else {
        " timeline ".to_string()
    };
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme.dim())
        .title(Span::styled(scrolled, theme.title()));
    let inner = block.inner(area);
    block.render(area, buf);
    let height = inner.height as usize;
    let end = view.timeline.len().saturating_sub(view.timeline_scroll);
    let start = end.saturating_sub(height);
    let lines: Vec<Line<'_>> = view.timeline[start..end]
        .iter()
        .map(|(line, tone)| {
            let style = match tone {
                Tone::Bad => theme.bad(),
                Tone::Warn => theme.warn(),
                Tone::Plain => theme.plain(),
            };
            Line::styled(line.clone(), style)
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
}

fn symptoms(area: Rect, buf: &mut Buffer, view: &Dashboard, theme: Theme) {
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme.dim())
        .title(Span::styled(" symptoms (postmortem) ", theme.title()));
    let inner = block.inner(area);
    block.render(area, buf);
    let mut lines = Vec::new();
    for (symptom, seen) in &view.symptoms {
        if *seen {
            lines.push(Line::from(vec![
                Span::styled("● ", theme.bad()),
                Span::styled(symptom.seen(), theme.bad()),
            ]));
            // Room for the first check under each symptom only in a taller panel.
            if inner.height >= 6 {
                lines.push(Line::styled(
                    format!("  → {}", symptom.check()),
                    theme.warn(),
                ));
            }
        } else {
            lines.push(Line::from(vec![
                Span::styled("○ ", theme.dim()),
                Span::styled(symptom.seen(), theme.dim()),
            ]));
        }
    }
    Paragraph::new(lines).render(inner, buf);
}

/// The keys from the keymap; help and quit stay visible at the right whatever the width.
fn footer(area: Rect, buf: &mut Buffer, mode: Mode, theme: Theme) {
    let entries = keymap::footer(mode);
    let (pinned, rest): (Vec<_>, Vec<_>) = entries
        .into_iter()
        .partition(|(_, name)| matches!(*name, "help" | "quit"));
    let spans = |list: &[(&'static str, &'static str)]| -> Vec<Span<'static>> {
        list.iter()
            .flat_map(|(key, name)| {
                [
                    Span::styled(format!(" {key}"), theme.key()),
                    Span::styled(format!(" {name}"), theme.dim()),
                ]
            })
            .collect()
    };
    let right = Line::from(spans(&pinned));
    let [left_area, right_area] = Layout::horizontal([
        Constraint::Min(0),
        Constraint::Length(right.width() as u16 + 1),
    ])
    .areas(area);
    Line::from(spans(&rest)).render(left_area, buf);
    right.alignment(Alignment::Right).render(right_area, buf);
}

/// What each part of a lane's panel means, as the help names it.
const PANEL_LEGEND: &[&str] = &[
    " lights: alive = a worker process exists; progress = its heartbeat is fresh",
    " dup = task ids written more than once; ckpt - = no checkpoints table",
    " hb = heartbeat age in sim seconds; the dotted line at 300s = the dead-man's",
    " threshold; symptoms light from what the rows and the timeline show",
];

fn help(area: Rect, buf: &mut Buffer, view: &Dashboard, theme: Theme) {
    let lines_help = keymap::help_lines(view.mode);
    let width = area.width.min(92);
    let height = (lines_help.len() as u16 + 5 + PANEL_LEGEND.len() as u16).min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    Clear.render(popup, buf);
    let block = Block::bordered()
        .border_type(BorderType::Double)
        .border_style(theme.title())
        .title(Span::styled(
            " keys (any key, Esc too, only closes this) ",
            theme.title(),
        ));
    let mut lines: Vec<Line<'_>> = lines_help
        .iter()
        .map(|(key, text)| {
            Line::from(vec![
                Span::styled(format!(" {key:<8}"), theme.key()),
                Span::raw(*text),
            ])
        })
        .collect();
    // The panels' legend right under the keys: at 80x24 it still fits; the scenario and the
    // databases' folder (also printed on quit) come last.
    for text in PANEL_LEGEND {
        lines.push(Line::styled(*text, theme.dim()));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        format!(" scenario {}: {}", view.scenario, view.title),
        theme.dim(),
    ));
    lines.push(Line::styled(
        format!(" databases in {}", view.db_dir),
        theme.dim(),
    ));
    Paragraph::new(lines).block(block).render(popup, buf);
}

/// The frame as plain text, one line per row, for tests (monochrome, trailing blanks trimmed).
#[cfg(test)]
pub(crate) fn render_text(view: &Dashboard, width: u16, height: u16) -> String {
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    render_to(area, &mut buf, view, Theme::monochrome());
    (0..height)
        .map(|y| {
            let row: String = (0..width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect();
            row.trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests;
