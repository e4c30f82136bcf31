//! Rendering: the view model in, cells out. Pure: no I/O and no clock reads here. This file
//! lays the screen out (`areas`, shared with mouse clicks) and draws each part with its own
//! widget file beside it, one per part of the screen, as bottom's canvas does.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget};

use crate::tui::keymap::Mode;
use crate::tui::theme::Theme;
use crate::tui::view::{Dashboard, LectureLine};

mod caption;
mod footer;
mod header;
mod help;
mod ids;
mod lane;
mod lecture;
mod snap;
mod symptoms;
mod timeline;
mod wrap;

use self::caption::caption;
pub(crate) use self::footer::footer_layout;

use self::footer::footer;
use self::header::header;
use self::help::help;
use self::ids::ids_overlay;
use self::lane::{Scales, lane_panel};
use self::lecture::{lecture, lecture_rows};
use self::symptoms::symptoms;
use self::timeline::timeline;
#[cfg(test)]
use self::{timeline::message_column, wrap::wrap};

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

/// Splits `area` for `lanes` lanes: side by side up to three, then in two rows; or, with
/// `zoom`, that lane alone over the lanes' whole width (the others get empty areas, so a click
/// finds no other lane). A line for lecture mode's status under the header when there is one.
/// The footer takes the rows `mode`'s keys need at this width (see `footer_layout`).
#[must_use]
pub fn areas(
    area: Rect,
    lanes: usize,
    caption: Option<&str>,
    lecture: Option<&LectureLine>,
    mode: Mode,
    zoom: Option<usize>,
) -> Areas {
    // A caption wraps onto the rows it needs rather than lose its end.
    let zoom = zoom.filter(|&z| z < lanes.max(1));
    let caption_height = caption.map_or(0, |text| {
        caption::caption_rows(text, area.width).len() as u16
    });
    // So does the lecture's line, in brief when the full one does not fit.
    let lecture_height = lecture.map_or(0, |line| lecture_rows(line, area.width).len() as u16);
    let footer_height = footer_layout(mode, area.width, area.height)
        .rows
        .len()
        .max(1) as u16;
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
        Constraint::Length(bottom_height(area.height, zoom.is_some())),
        Constraint::Length(footer_height),
    ])
    .areas(area);
    let symptoms_width = if area.width >= 110 { 46 } else { 34 };
    let [timeline, symptoms] =
        Layout::horizontal([Constraint::Min(20), Constraint::Length(symptoms_width)])
            .areas(bottom_area);
    let lanes = lanes.max(1);
    if let Some(zoomed) = zoom {
        let mut lane_areas = vec![Rect::default(); lanes];
        lane_areas[zoomed] = body;
        return Areas {
            header,
            lecture: lecture_area,
            caption: caption_area,
            lanes: lane_areas,
            timeline,
            symptoms,
            footer,
        };
    }
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

/// The timeline and symptoms band: six rows at 24 (where every lane still keeps its rows chart
/// and its heartbeat), then a third of every row beyond, so a tall window shows more history;
/// capped, since the lanes' charts need the height too.
fn bottom_height(height: u16, zoom: bool) -> u16 {
    let rows = (6 + height.saturating_sub(24) / 3).min(20);
    // A zoomed lane takes a row more for its chart: the symptoms panel still has a row for
    // each symptom, the timeline one line fewer.
    if zoom { rows - 1 } else { rows }
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
    let zoom = view.zoom.then_some(view.selected);
    let a = areas(
        area,
        view.lanes.len(),
        view.caption.as_deref(),
        view.lecture.as_ref(),
        view.mode,
        zoom,
    );
    header(a.header, buf, view, theme);
    if let Some(line) = &view.lecture {
        lecture(a.lecture, buf, line, theme);
    }
    if let Some(text) = &view.caption {
        caption(a.caption, buf, text, theme);
    }
    // One scale for every lane: the taller night looks taller, at one height.
    let mut scales = Scales::of(&view.lanes, view.x_max);
    let count = view.lanes.len();
    // Each shown lane's rows, worked out once: the shortest chart sets every lane's height.
    let mut rows: Vec<Option<lane::PanelRows>> = (view.lanes.iter().zip(&a.lanes).enumerate())
        .map(|(i, (lane, rect))| {
            let inner = Block::bordered().inner(*rect);
            zoom.is_none_or(|z| z == i)
                .then(|| lane::panel_rows(inner, lane, zoom.is_some(), theme))
        })
        .collect();
    scales.chart_rows = (rows.iter().flatten().map(|r| r.chart_height))
        .min()
        .unwrap_or(u16::MAX);
    for (i, (lane, rect)) in view.lanes.iter().zip(&a.lanes).enumerate() {
        let Some(shared) = rows[i].take() else {
            continue;
        };
        let place = match zoom {
            Some(_) => (true, Some((i, count))),
            None => (i == view.selected, None),
        };
        lane_panel(*rect, buf, (lane, shared), place, scales, theme);
    }
    timeline(a.timeline, buf, view, theme);
    symptoms(a.symptoms, buf, view, theme);
    footer(
        a.footer,
        buf,
        &footer_layout(view.mode, area.width, area.height),
        theme,
    );
    if view.help {
        help(area, buf, view, theme);
    } else if let Some(ids) = &view.ids {
        ids_overlay(area, buf, ids, theme);
    }
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

/// The width of `text` in terminal columns.
fn width_of(text: &str) -> usize {
    Span::raw(text).width()
}

/// A speed factor as the header and notices show it: `8`, `1`, `0.25`.
pub(crate) fn speed_label(speed: f64) -> String {
    if speed >= 1.0 {
        format!("{speed:.0}")
    } else {
        format!("{speed}")
    }
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
