//! Drawing the map: pure, no I/O and no clock. Bands, axis, cursor, help, and the plain text
//! the command prints without a terminal.

use std::fmt::Write as _;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget as _, Wrap};

use super::{LABEL, Layout, MAP_KEYS, MapCell, MapState};
use crate::map::Outcome;
use crate::tui::theme::Theme;

/// The worst of a bin's outcomes, so a single bad night in a bin is never hidden by its
/// neighbours: missing, then wrong, then the most duplicated, then right, then not yet run.
fn worse(a: Option<Outcome>, b: Option<Outcome>) -> Option<Outcome> {
    let rank = |o: Option<Outcome>| match o {
        None => (0, 0),
        Some(Outcome::Right) => (1, 0),
        Some(Outcome::Duplicated(n)) => (2, n),
        Some(Outcome::Wrong) => (3, 0),
        Some(Outcome::Missing(n)) => (4, n),
    };
    if rank(b) > rank(a) { b } else { a }
}

/// A cell's glyph and style: shape tells the outcome without colour (NO_COLOR), colour helps.
fn glyph(outcome: Option<Outcome>, theme: Theme) -> (char, Style) {
    match outcome {
        None => ('░', theme.dim()),
        Some(Outcome::Right) => ('·', theme.good()),
        Some(Outcome::Duplicated(n)) if n <= 9 => (
            char::from_digit(n as u32, 10).unwrap_or('#'),
            if n == 1 { theme.warn() } else { theme.bad() },
        ),
        Some(Outcome::Duplicated(_)) => ('#', theme.bad()),
        Some(Outcome::Missing(_)) => ('!', theme.checkpoints()),
        Some(Outcome::Wrong) => ('?', theme.checkpoints()),
    }
}

/// The legend under the map: what a digit counts is task ids in reclaim's queue, keys in a job's.
fn legend(layout: &Layout) -> String {
    let counted = match layout.names {
        super::Columns::Tasks => "task ids",
        super::Columns::Keys(_) | super::Columns::Rows => "keys",
    };
    format!("· right  1-9 {counted} duplicated (# 10+)  ! missing  ? wrong/untested  ░ running")
}

/// Which column each task falls in, `columns` wide.
fn column_of(task: u64, first: u64, count: u64, columns: u16) -> u16 {
    ((task - first) * u64::from(columns) / count) as u16
}

/// How many task columns fit in `width`.
fn columns_for(width: u16, count: u64) -> u16 {
    let room = width.saturating_sub(LABEL + 1).max(1);
    room.min(u16::try_from(count).unwrap_or(u16::MAX))
}

/// The height the bands need: one line each, and one between strategies when `spaced`.
fn bands_height(plan: &Layout, spaced: bool) -> u16 {
    let bands = plan.bands.len() as u16;
    let gaps = if spaced {
        plan.groups().len().saturating_sub(1) as u16
    } else {
        0
    };
    bands + gaps
}

/// Draws the map into `buf` over `area`. Pure: everything it shows comes from `state`.
pub fn render_to<C: MapCell>(area: Rect, buf: &mut Buffer, state: &MapState<C>, theme: Theme) {
    draw(area, buf, state, theme, true);
}

/// The map as plain text lines, `width` wide, for `reclaim map` without a terminal: the same
/// drawing without the cursor, the keys or the help.
#[must_use]
pub fn plain_text<C: MapCell>(state: &MapState<C>, width: u16) -> String {
    let plan = &state.layout;
    let height = 2 + bands_height(plan, true) + 2;
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    draw(area, &mut buf, state, Theme::monochrome(), false);
    let mut out = String::new();
    for y in 0..area.height {
        let line: String = (0..area.width)
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

fn put<'a>(buf: &mut Buffer, area: Rect, y: u16, line: impl Into<Line<'a>>) {
    if y < area.y + area.height {
        buf.set_line(area.x, y, &line.into(), area.width);
    }
}

/// Whether there is room for a blank line between strategies, besides what must show: title,
/// axis, the bands and (on the screen) the cell under the cursor and the keys.
fn spaced_for(area: Rect, plan: &Layout, interactive: bool) -> bool {
    let fixed = 2 + bands_height(plan, false) + if interactive { 3 } else { 0 };
    area.height.saturating_sub(fixed) >= bands_height(plan, true) - bands_height(plan, false)
}

/// The line each band is drawn on, `None` past the bottom: drawing and the mouse share it.
fn band_rows(area: Rect, plan: &Layout, spaced: bool) -> Vec<Option<u16>> {
    let mut y = area.y + 2;
    (0..plan.bands.len())
        .map(|band| {
            if band > 0 && spaced && plan.first_of_group(band) {
                y += 1;
            }
            let row = (y < area.y + area.height).then_some(y);
            y += 1;
            row
        })
        .collect()
}

/// The band and task under a point of the screen: in a binned column, the night its glyph
/// shows (the worst of the bin), so pointing at a bad glyph shows that bad night.
#[must_use]
pub fn cell_at<C: MapCell>(
    area: Rect,
    state: &MapState<C>,
    x: u16,
    y: u16,
) -> Option<(usize, u64)> {
    let plan = &state.layout;
    let rows = band_rows(area, plan, spaced_for(area, plan, true));
    let band = rows.iter().position(|&r| r == Some(y))?;
    let count = plan.count();
    let columns = columns_for(area.width, count);
    let column = x.checked_sub(area.x + LABEL).filter(|&c| c < columns)?;
    let mut best: Option<(Option<Outcome>, u64)> = None;
    for task in plan.columns.0..=plan.columns.1 {
        if column_of(task, plan.columns.0, count, columns) != column {
            continue;
        }
        let outcome = state.cells[state.index(band, task)]
            .as_ref()
            .map(MapCell::outcome);
        best = match best {
            None => Some((outcome, task)),
            Some((shown, _)) if worse(shown, outcome) != shown => Some((outcome, task)),
            keep => keep,
        };
    }
    best.map(|(_, task)| (band, task))
}

fn draw<C: MapCell>(
    area: Rect,
    buf: &mut Buffer,
    state: &MapState<C>,
    theme: Theme,
    interactive: bool,
) {
    if area.width == 0 || area.height == 0 {
        return;
    }
    let plan = &state.layout;
    let count = plan.count();
    let columns = columns_for(area.width, count);
    let bottom = area.y + area.height;
    // What must show: title, axis, bands, the cell under the cursor and the footer; the gaps
    // between strategies, the summaries and the legend only when there is room.
    let spaced = spaced_for(area, plan, interactive);
    let fixed = 2 + bands_height(plan, spaced) + if interactive { 3 } else { 0 };
    let mut spare = area.height.saturating_sub(fixed);
    let show_legend = spare >= 1;
    spare = spare.saturating_sub(u16::from(show_legend));
    // The plain output prints its summaries itself, after the map.
    let groups = plan.groups();
    let show_summary = interactive && spare > groups.len() as u16;

    draw_title(buf, area, state, theme);
    draw_axis(buf, area, plan, columns, theme);
    let mut y = draw_bands(buf, area, state, (columns, spaced, interactive), theme);
    // Summaries, legend, the cell under the cursor, the keys.
    let footer_lines = if interactive { 3 } else { 0 };
    let reserved = footer_lines + u16::from(show_legend);
    if show_summary && y + groups.len() as u16 + reserved < bottom {
        y += 1;
        for summary in summaries(state) {
            let style = if summary.cells > 0 && summary.right == summary.cells {
                theme.good()
            } else if summary.duplicated + summary.missing + summary.other > 0 {
                theme.bad()
            } else {
                theme.plain()
            };
            let mut text = format!(
                "{:<11}{}/{} right",
                summary.group, summary.right, summary.cells,
            );
            for (n, what) in [
                (summary.duplicated, "duplicated"),
                (summary.missing, "missing"),
                (summary.other, "wrong or untested"),
            ] {
                if n > 0 {
                    let _ = write!(text, " · {n} {what}");
                }
            }
            if summary.worst_duplicated_task_ids > 0 {
                let _ = write!(
                    text,
                    " · worst night: {}",
                    crate::map::task_ids(summary.worst_duplicated_task_ids)
                );
            }
            put(buf, area, y, Line::styled(text, style));
            y += 1;
        }
    }
    if show_legend && y + footer_lines < bottom {
        // Under the map (and its summaries), a line apart.
        let legend_y = y + 1;
        put(buf, area, legend_y, Line::styled(legend(plan), theme.dim()));
    }
    if !interactive {
        return;
    }
    draw_cursor(buf, area, state, theme);
}

/// A group's figures under the map: its cells, how many right, duplicated, missing, other.
struct GroupSummary {
    group: String,
    cells: usize,
    right: usize,
    duplicated: usize,
    missing: usize,
    other: usize,
    worst_duplicated_task_ids: u64,
}

/// One summary a group (a strategy, or the job), in the layout's order.
fn summaries<C: MapCell>(state: &MapState<C>) -> Vec<GroupSummary> {
    let plan = &state.layout;
    let per_band = plan.count() as usize;
    plan.groups()
        .into_iter()
        .map(|group| {
            let outcomes: Vec<Outcome> = (plan.bands.iter().enumerate())
                .filter(|(_, (g, _))| g == group)
                .flat_map(|(band, _)| &state.cells[band * per_band..(band + 1) * per_band])
                .flatten()
                .map(MapCell::outcome)
                .collect();
            let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
            GroupSummary {
                group: group.to_string(),
                cells: outcomes.len(),
                right: count(|o| *o == Outcome::Right),
                duplicated: count(|o| matches!(o, Outcome::Duplicated(_))),
                missing: count(|o| matches!(o, Outcome::Missing(_))),
                other: count(|o| *o == Outcome::Wrong),
                worst_duplicated_task_ids: (outcomes.iter())
                    .filter_map(|o| match o {
                        Outcome::Duplicated(n) => Some(*n),
                        _ => None,
                    })
                    .max()
                    .unwrap_or(0),
            }
        })
        .collect()
}

/// The title line: what the map covers, and how far it has got.
fn draw_title<C: MapCell>(buf: &mut Buffer, area: Rect, state: &MapState<C>, theme: Theme) {
    let progress = if state.finished() {
        format!("{} nights in {:.1} s", state.total(), state.elapsed_s)
    } else {
        format!(
            "{}/{} nights · {:.1} s",
            state.done(),
            state.total(),
            state.elapsed_s
        )
    };
    let title = state.layout.title.clone();
    // The progress always shows; the title gives way on a narrow terminal.
    let room = (area.width as usize).saturating_sub(progress.chars().count() + 1);
    let title = crate::base::text::shorten(&title, room);
    let gap =
        (area.width as usize).saturating_sub(title.chars().count() + progress.chars().count());
    put(
        buf,
        area,
        area.y,
        Line::from(vec![
            Span::styled(title, theme.title()),
            Span::raw(" ".repeat(gap.max(1))),
            Span::styled(
                progress,
                if state.finished() {
                    theme.plain()
                } else {
                    theme.warn()
                },
            ),
        ]),
    );
}

/// The axis: task numbers where a column starts a new multiple of a round step.
fn draw_axis(buf: &mut Buffer, area: Rect, plan: &Layout, columns: u16, theme: Theme) {
    let count = plan.count();
    let (word, from) = plan.names.axis();
    let step = [
        1u64, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10_000,
    ]
    .into_iter()
    .find(|&s| count / s <= u64::from(columns) / 8)
    .unwrap_or(count.max(1));
    let mut axis = vec![' '; (LABEL + columns) as usize];
    for (i, ch) in word.chars().enumerate() {
        axis[i] = ch;
    }
    let mut next_free = 0usize;
    for task in plan.columns.0..=plan.columns.1 {
        // Numbered as the columns are: a task's index, or a row count from 1.
        let shown = task + from;
        if shown % step != 0 && task != plan.columns.0 {
            continue;
        }
        let x = (LABEL + column_of(task, plan.columns.0, count, columns)) as usize;
        let text = shown.to_string();
        if x >= next_free && x + text.len() <= axis.len() {
            for (i, ch) in text.chars().enumerate() {
                axis[x + i] = ch;
            }
            next_free = x + text.len() + 1;
        }
    }
    put(
        buf,
        area,
        area.y + 1,
        Line::styled(axis.into_iter().collect::<String>(), theme.dim()),
    );
}

/// One line per band, a gap between strategies when `spaced`; returns the line after the last.
fn draw_bands<C: MapCell>(
    buf: &mut Buffer,
    area: Rect,
    state: &MapState<C>,
    (columns, spaced, interactive): (u16, bool, bool),
    theme: Theme,
) -> u16 {
    let plan = &state.layout;
    let count = plan.count();
    let rows = band_rows(area, plan, spaced);
    let cursor_column = column_of(state.task, plan.columns.0, count, columns);
    let mut y = area.y + 2;
    // The selected band repeats its group's name only where it tells groups apart: a job's
    // map is one group (`exec`), whose name on the selected band too read as printed twice.
    let groups = plan.groups().len();
    for (band, (strategy, point)) in plan.bands.iter().enumerate() {
        let Some(row) = rows[band] else { break };
        y = row;
        let mut outcomes: Vec<Option<Outcome>> = vec![None; columns as usize];
        for task in plan.columns.0..=plan.columns.1 {
            let c = column_of(task, plan.columns.0, count, columns) as usize;
            let outcome = state.cells[state.index(band, task)]
                .as_ref()
                .map(MapCell::outcome);
            outcomes[c] = worse(outcomes[c], outcome);
        }
        let here = interactive && band == state.band;
        let strategy_label = if plan.first_of_group(band) || (here && groups > 1) {
            strategy.as_str()
        } else {
            ""
        };
        let label_style = if here {
            theme.selected()
        } else {
            theme.plain()
        };
        let mut spans = vec![
            Span::styled(format!("{strategy_label:<11}"), label_style),
            Span::styled(
                format!("{:<17}", crate::base::text::shorten(point, 16)),
                if here { theme.selected() } else { theme.dim() },
            ),
        ];
        for (c, outcome) in outcomes.into_iter().enumerate() {
            let (ch, mut style) = glyph(outcome, theme);
            if here && c == cursor_column as usize {
                style = style.add_modifier(Modifier::REVERSED);
            }
            spans.push(Span::styled(ch.to_string(), style));
        }
        put(buf, area, y, Line::from(spans));
        y += 1;
    }

    y
}

/// The cell under the cursor (its figures, what the code implies), the notice and the keys.
fn draw_cursor<C: MapCell>(buf: &mut Buffer, area: Rect, state: &MapState<C>, theme: Theme) {
    let bottom = area.y + area.height;
    let bands = &state.layout.bands;
    let detail_y = bottom.saturating_sub(3);
    let Some((strategy, point)) = bands.get(state.band.min(bands.len().saturating_sub(1))) else {
        return;
    };
    let at = format!(
        "{strategy} · {point} · {}",
        state.layout.names.name(state.task)
    );
    let (line1, line2) = match state.selected() {
        Some(cell) => (
            Line::from(vec![
                Span::styled(at, theme.selected()),
                Span::raw(": "),
                Span::styled(
                    cell.verdict(),
                    if cell.is_right() {
                        theme.good()
                    } else {
                        theme.bad()
                    },
                ),
            ]),
            Line::styled(cell.detail(), theme.dim()),
        ),
        None => (
            Line::from(vec![
                Span::styled(at, theme.selected()),
                Span::styled(": running…", theme.dim()),
            ]),
            Line::raw(""),
        ),
    };
    if detail_y >= area.y + 2 {
        put(buf, area, detail_y, line1);
        let second = state
            .notice
            .as_ref()
            .map_or(line2, |n| Line::styled(n.clone(), theme.warn()));
        put(buf, area, detail_y + 1, second);
    }
    let mut footer = Vec::new();
    for binding in MAP_KEYS {
        if let Some(entry) = binding.footer {
            footer.push(Span::styled(binding.label, theme.key()));
            footer.push(Span::raw(format!(" {}  ", entry.name)));
        }
    }
    put(buf, area, bottom - 1, Line::from(footer));
    if state.help {
        draw_help(area, buf, &state.layout, theme);
    }
}

fn draw_help(area: Rect, buf: &mut Buffer, layout: &Layout, theme: Theme) {
    let mut lines: Vec<Line<'_>> = MAP_KEYS
        .iter()
        .filter(|b| !b.help.is_empty())
        .map(|b| {
            Line::from(vec![
                Span::styled(format!("{:<10}", b.label), theme.key()),
                Span::raw(b.help),
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    lines.push(Line::styled(legend(layout), theme.dim()));
    lines.push(Line::raw(layout.about.to_string()));
    let width = area.width.saturating_sub(4).min(90);
    let height = (lines.len() as u16 + 4).min(area.height);
    let popup = Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    );
    Clear.render(popup, buf);
    Paragraph::new(lines)
        .wrap(Wrap { trim: true })
        .block(Block::default().borders(Borders::ALL).title(" map keys "))
        .render(popup, buf);
}
