//! Rendering: the view model in, cells out. Pure: no I/O and no clock reads here.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Widget};

use crate::tui::keymap::{self, Mode};
use crate::tui::theme::Theme;
use crate::tui::view::Tone;
use crate::tui::view::{Dashboard, LectureLine};

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
/// lecture mode's status under the header when there is one. The footer takes the rows
/// `mode`'s keys need at this width (see `footer_layout`).
#[must_use]
pub fn areas(
    area: Rect,
    lanes: usize,
    caption: Option<&str>,
    lecture: Option<&LectureLine>,
    mode: Mode,
) -> Areas {
    // A caption wraps onto a second line rather than lose its end.
    let caption_height = caption.map_or(0, |text| {
        if text.chars().count() + 3 > usize::from(area.width) {
            2
        } else {
            1
        }
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
        Constraint::Length(bottom_height(area.height)),
        Constraint::Length(footer_height),
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

/// The timeline and symptoms band: six rows at 24 (where every lane still keeps its rows chart
/// and its heartbeat), then a third of every row beyond, so a tall window shows more history;
/// capped, since the lanes' charts need the height too.
fn bottom_height(height: u16) -> u16 {
    (6 + height.saturating_sub(24) / 3).min(20)
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
        view.lecture.as_ref(),
        view.mode,
    );
    header(a.header, buf, view, theme);
    if let Some(line) = &view.lecture {
        lecture(a.lecture, buf, line, theme);
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

/// The width of `text` in terminal columns.
fn width_of(text: &str) -> usize {
    Span::raw(text).width()
}

/// The least of the title the header keeps before it gives room to the recording's path.
const TITLE_KEPT: usize = 24;

/// The header: the badge and the notice (or the title) at the left; at the right the clock, the
/// speed and the settings, and `● REC` with the recording's path when there is room. A notice
/// is read whole: the seed, then the random-kills setting, make way for it (for the few seconds
/// it shows); a path in it that still does not fit gives up its left end, never its file's name.
fn header(area: Rect, buf: &mut Buffer, view: &Dashboard, theme: Theme) {
    let width = usize::from(area.width);
    let state = if view.paused { "‖ paused" } else { "▶" };
    let speed = speed_label(view.speed);
    // The right-hand facts; the last ones (`droppable` of them) may make way for a notice.
    let mut facts: Vec<String> = Vec::new();
    let review = view.mode == Mode::Review;
    if let Some(bar) = view.replay.as_ref().filter(|_| review) {
        // A live night looked back at: its end is now, and it waits.
        facts.push(format!("{} / now {}", view.clock, bar.end));
    } else if let Some(bar) = &view.replay {
        let partial = if bar.partial { " (partial)" } else { "" };
        facts.push(format!("{} / {}{partial}", view.clock, bar.end));
    } else {
        if view.recording.is_some() {
            facts.push("● REC".into());
        }
        facts.push(view.clock.to_string());
    }
    if review {
        facts.push("‖ the night waits".into());
    } else {
        facts.push(format!("{state} {speed}x"));
    }
    let mut droppable = 1;
    if view.replay.is_none() {
        let random = if view.random_kills { "on" } else { "off" };
        facts.push(format!("random {random}"));
        droppable = 2;
    }
    facts.push(format!("seed {}", view.seed));
    let right_width = |facts: &[String]| width_of(&format!(" {} ", facts.join("  ")));
    let badge = if review {
        " reclaim LOOKING BACK "
    } else if view.replay.is_some() {
        " reclaim REPLAY "
    } else {
        " reclaim "
    };
    let left_needs = width_of(badge)
        + match &view.notice {
            Some(notice) => width_of(notice),
            None => width_of(&view.title).min(TITLE_KEPT),
        };
    while droppable > 0 && left_needs + right_width(&facts) > width {
        facts.pop();
        droppable -= 1;
    }
    // The recording's path after `● REC`, from the left, if its file's name fits.
    let room = width.saturating_sub(left_needs + right_width(&facts) + 1);
    if let (Some(path), None, Some(rec)) = (&view.recording, &view.notice, facts.first_mut())
        && rec.as_str() == "● REC"
        && room >= width_of(path.rsplit('/').next().unwrap_or_default()) + 2
    {
        rec.push(' ');
        rec.push_str(&crate::text::shorten_path(path, room));
    }
    let right = format!(" {} ", facts.join("  "));
    let left_room = width
        .saturating_sub(width_of(&right))
        .saturating_sub(width_of(badge));
    let left = match &view.notice {
        Some(notice) => Line::from(vec![
            Span::styled(badge, theme.title()),
            Span::styled(crate::text::fit_paths(notice, left_room), theme.warn()),
        ]),
        None => Line::from(vec![
            Span::styled(badge, theme.title()),
            Span::raw(crate::text::shorten(&view.title, left_room)),
        ]),
    };
    let [left_area, right_area] = Layout::horizontal([
        Constraint::Min(0),
        Constraint::Length(width_of(&right) as u16),
    ])
    .areas(area);
    left.render(left_area, buf);
    Line::from(vec![Span::styled(right, theme.title())])
        .alignment(Alignment::Right)
        .render(right_area, buf);
}

/// Columns the lecture line's mark (`■ LECTURE `) and the space after it take: a wrapped
/// line's next row starts under its text.
const LECTURE_MARK: usize = 11;

/// The lecture line's mark, stopped or playing on: the text follows it after a space.
fn lecture_mark(line: &LectureLine) -> &'static str {
    if line.stopped {
        "■ LECTURE "
    } else {
        "▷ LECTURE "
    }
}

/// The lecture line's rows in a window `width` wide: in full if it takes one row (two in a
/// window 100 wide or more: what it stopped for is the lesson), else in brief; at most two,
/// the continuation under the text, no word cut.
fn lecture_rows(line: &LectureLine, width: u16) -> Vec<String> {
    let width = usize::from(width);
    let mark = lecture_mark(line);
    let rows_of = |text: &str| wrap(&format!("{mark} {text}"), width, LECTURE_MARK);
    let full = rows_of(&line.full);
    if full.len() <= if width >= 100 { 2 } else { 1 } {
        return full;
    }
    let brief = rows_of(&line.brief);
    if brief.len() <= 2 {
        return brief;
    }
    // Too many reasons even in brief (many lanes on a narrow window): how many, and the
    // timeline and the panels say which.
    rows_of(&format!(
        "stopped at {}: {} moments at once (see the timeline) · space: on",
        line.brief.split(' ').next().unwrap_or_default(),
        line.reasons
    ))
}

/// Lecture mode's line: where the night stopped and why (loud), or that it plays on (quiet).
fn lecture(area: Rect, buf: &mut Buffer, line: &LectureLine, theme: Theme) {
    let (mark_style, text_style) = if line.stopped {
        (theme.bad(), theme.warn())
    } else {
        (theme.title(), theme.dim())
    };
    let mark = lecture_mark(line);
    let rows: Vec<Line<'_>> = lecture_rows(line, area.width)
        .into_iter()
        .map(|row| match row.strip_prefix(mark) {
            Some(text) => Line::from(vec![
                Span::styled(mark, mark_style),
                Span::styled(text.to_string(), text_style),
            ]),
            None => Line::styled(row, text_style),
        })
        .collect();
    Paragraph::new(rows).render(area, buf);
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
    let inner = Block::bordered().inner(area);
    let (rows, below) = timeline_rows(
        &view.timeline,
        view.timeline_scroll,
        usize::from(inner.width),
        usize::from(inner.height),
    );
    let title = if below > 0 {
        format!(" timeline (scrolled back {below}; end follows) ")
    } else {
        " timeline ".to_string()
    };
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme.dim())
        .title(Span::styled(title, theme.title()));
    block.render(area, buf);
    let lines: Vec<Line<'_>> = rows
        .into_iter()
        .map(|(row, tone)| {
            let style = match tone {
                Tone::Bad => theme.bad(),
                Tone::Warn => theme.warn(),
                Tone::Plain => theme.plain(),
            };
            Line::styled(row, style)
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
}

/// The rows a timeline panel of `width` x `height` shows, each event wrapped whole (see
/// `wrap`), the newest at the bottom, `scroll` events back from the newest; and how many events
/// are below the last one shown. An event that cannot show whole is shown in part only at the
/// top, its beginning, ending in `…` (or alone: then as much as fits). Scrolled back past
/// the oldest event, the oldest page shows: the panel is never left empty while there are
/// events to fill it.
fn timeline_rows(
    events: &[(String, Tone)],
    scroll: usize,
    width: usize,
    height: usize,
) -> (Vec<(String, Tone)>, usize) {
    if width == 0 || height == 0 {
        return (Vec::new(), 0);
    }
    let wrapped = |(line, tone): &(String, Tone)| -> Vec<(String, Tone)> {
        wrap(line, width, message_column(line))
            .into_iter()
            .map(|row| (row, *tone))
            .collect()
    };
    let mut end = events.len() - scroll.min(events.len());
    let mut shown: std::collections::VecDeque<Vec<(String, Tone)>> =
        std::collections::VecDeque::new();
    let mut count = 0;
    let mut start = end;
    for event in events[..end].iter().rev() {
        let rows = wrapped(event);
        if count + rows.len() > height && !shown.is_empty() {
            break;
        }
        count += rows.len();
        shown.push_front(rows);
        start -= 1;
        if count >= height {
            break;
        }
    }
    // Scrolled back past the top: the oldest events, down to as many as fill the panel.
    while end < events.len() {
        let rows = wrapped(&events[end]);
        if count + rows.len() > height && !shown.is_empty() {
            break;
        }
        count += rows.len();
        shown.push_back(rows);
        end += 1;
    }
    let mut rows: Vec<(String, Tone)> = shown.into_iter().flatten().take(height).collect();
    // The room left at the top: the beginning of the next older event, its last row shown
    // ending in `…` (abbreviated, never cut without saying so).
    let room = height - rows.len();
    if start > 0 && room > 0 {
        let mut older = wrapped(&events[start - 1]);
        older.truncate(room);
        if let Some((last, _)) = older.last_mut() {
            abbreviate(last, width);
        }
        let blank = room - older.len();
        rows.splice(0..0, older);
        rows.splice(
            0..0,
            std::iter::repeat_n((String::new(), Tone::Plain), blank),
        );
    }
    (rows, events.len() - end)
}

/// Ends `row` with `…` within `width` columns: the row goes on elsewhere.
fn abbreviate(row: &mut String, width: usize) {
    let trimmed = row.trim_end().len();
    row.truncate(trimmed);
    if width_of(row) + 1 > width {
        // No room for the mark: the last word makes way for it, whole.
        let cut = row.trim_end().rfind(' ').unwrap_or(0);
        row.truncate(cut);
        let trimmed = row.trim_end().len();
        row.truncate(trimmed);
    }
    row.push('…');
}

/// Where a timeline line's message starts, past `02:11:47  [lane  ]source  kind    ` (see
/// `engine::timeline::timeline_line`): the hanging indent of its continuation rows. 0 for a line
/// of another shape.
fn message_column(line: &str) -> usize {
    let chars: Vec<char> = line.chars().collect();
    let is = |at: usize, text: &str| {
        text.chars()
            .enumerate()
            .all(|(i, c)| chars.get(at + i) == Some(&c))
    };
    // The source column (`worker` or `runner`) after the time, or after the time and a lane's
    // name; the kind after it, a word padded to eight columns (a lane may be named `runner`,
    // a kind never is).
    for at in (10..chars.len()).filter(|&at| is(at - 2, "  ")) {
        if !(is(at, "worker  ") || is(at, "runner  ")) {
            continue;
        }
        let kind: String = chars.iter().skip(at + 8).take(8).collect();
        let word = kind.trim_end();
        if kind.chars().count() == 8
            && kind.ends_with(' ')
            && !word.is_empty()
            && word.chars().all(|c| c.is_ascii_lowercase())
            && !matches!(word, "worker" | "runner")
        {
            return at + 16;
        }
    }
    0
}

/// The fewest columns a continuation row keeps for its words under the message: a narrower
/// panel indents by `NARROW_INDENT` only (enough to tell it from an event's first row).
const WRAPPED_ROOM: usize = 30;
const NARROW_INDENT: usize = 4;

/// `line` in rows of at most `width` columns, broken at spaces (mid-word only for a word longer
/// than a row), the continuation rows indented by `indent`: no word is lost at the panel's edge.
fn wrap(line: &str, width: usize, indent: usize) -> Vec<String> {
    let indent = if indent + WRAPPED_ROOM <= width {
        indent
    } else {
        NARROW_INDENT.min(width / 4)
    };
    let char_width = |c: char| {
        if c.is_ascii() {
            1
        } else {
            width_of(c.encode_utf8(&mut [0; 4]))
        }
    };
    let mut rows = Vec::new();
    let mut row = String::new();
    // Columns used in this row, and where its words begin (past the indent).
    let (mut used, mut start) = (0, 0);
    let mut spaces = 0;
    let mut rest = line;
    while !rest.is_empty() {
        let word_end = rest.find(' ').unwrap_or(rest.len());
        let (word, after) = rest.split_at(word_end);
        let space_end = after.find(|c| c != ' ').unwrap_or(after.len());
        rest = &after[space_end..];
        if used > start && used + spaces + width_of(word) > width {
            rows.push(std::mem::take(&mut row));
            row = " ".repeat(indent);
            (used, start) = (indent, indent);
        } else {
            row.extend(std::iter::repeat_n(' ', spaces));
            used += spaces;
        }
        for c in word.chars() {
            let w = char_width(c);
            if used > start && used + w > width {
                rows.push(std::mem::take(&mut row));
                row = " ".repeat(indent);
                (used, start) = (indent, indent);
            }
            row.push(c);
            used += w;
        }
        spaces = space_end;
    }
    rows.push(row);
    rows
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

/// The footer as drawn: rows of (key, name) in the keymap's order, the last one ending with
/// `? more` when some keys are left to the help, and the pinned keys (help, quit) at its right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FooterLayout {
    pub rows: Vec<Vec<(&'static str, &'static str)>>,
    pub pinned: Vec<(&'static str, &'static str)>,
    pub more: bool,
}

/// Columns between two footer entries, and between the keys and the pinned ones.
const FOOTER_GAP: usize = 2;

/// An entry as the footer writes it: `k kill`.
fn footer_entry_width((key, name): (&str, &str)) -> usize {
    width_of(key) + 1 + width_of(name)
}

/// The width of a footer row: a leading space, then the entries `FOOTER_GAP` apart.
fn footer_row_width(row: &[(&str, &str)]) -> usize {
    1 + row.iter().map(|e| footer_entry_width(*e)).sum::<usize>()
        + FOOTER_GAP * row.len().saturating_sub(1)
}

/// `entries`, in order, in exactly `rows` rows of `width` (the last one `reserved` columns
/// shorter), each filled before the next; `None` if they do not fit.
fn pack_footer(
    entries: &[(&'static str, &'static str)],
    width: usize,
    reserved: usize,
    rows: usize,
) -> Option<Vec<Vec<(&'static str, &'static str)>>> {
    let mut packed: Vec<Vec<(&'static str, &'static str)>> = vec![Vec::new()];
    for &entry in entries {
        let room = |row: usize| {
            if row + 1 == rows {
                width.saturating_sub(reserved)
            } else {
                width
            }
        };
        let last = packed.len() - 1;
        packed[last].push(entry);
        if footer_row_width(&packed[last]) > room(last) {
            packed[last].pop();
            if packed[last].is_empty() || packed.len() == rows {
                return None;
            }
            packed.push(vec![entry]);
            if footer_row_width(&packed[last + 1]) > room(last + 1) {
                return None;
            }
        }
    }
    Some(packed)
}

/// Which footer keys of `mode` a window of `width` x `height` shows, and in how many rows: one
/// if they all fit, else two (from 24 rows up, taking one from the lanes); if even two cannot hold them, the
/// most useful ones (by their rank in the keymap) and `? more`, in one row (two from
/// `TALL_FOOTER` rows up: below, the lanes' charts and legends need the row more). An entry is
/// never cut. `areas` and `footer` both call this, so clicks and drawing agree.
pub(crate) fn footer_layout(mode: Mode, width: u16, height: u16) -> FooterLayout {
    let width = usize::from(width);
    let entries = keymap::footer(mode);
    let pinned: Vec<(&'static str, &'static str)> = entries
        .iter()
        .filter(|(_, f)| f.pinned())
        .map(|(key, f)| (*key, f.name))
        .collect();
    let reserved = footer_row_width(&pinned) + FOOTER_GAP - 1;
    let keys: Vec<(&'static str, &'static str)> = entries
        .iter()
        .filter(|(_, f)| !f.pinned())
        .map(|(key, f)| (*key, f.name))
        .collect();
    let rows_for_all = if height >= 24 { 2 } else { 1 };
    for rows in 1..=rows_for_all {
        if let Some(packed) = pack_footer(&keys, width, reserved, rows) {
            return FooterLayout {
                rows: packed,
                pinned,
                more: false,
            };
        }
    }
    let most_rows = if height >= TALL_FOOTER { 2 } else { 1 };
    // `? more` is the help's key: it is not pinned a second time as `? help`.
    let pinned: Vec<(&'static str, &'static str)> = pinned
        .into_iter()
        .filter(|(key, _)| *key != MORE.0)
        .collect();
    let reserved = footer_row_width(&pinned) + FOOTER_GAP - 1;
    // The most useful first: by rank, then in the keymap's order; a key that does not fit
    // leaves its place to a later, shorter one.
    let mut by_rank: Vec<(usize, u8)> = entries
        .iter()
        .filter(|(_, f)| !f.pinned())
        .enumerate()
        .map(|(i, (_, f))| (i, f.rank))
        .collect();
    by_rank.sort_by_key(|&(i, rank)| (rank, i));
    let mut chosen: Vec<usize> = Vec::new();
    let mut best = vec![vec![MORE]];
    for (i, _) in by_rank {
        let mut trial = chosen.clone();
        trial.push(i);
        trial.sort_unstable();
        let mut shown: Vec<(&'static str, &'static str)> = trial.iter().map(|&i| keys[i]).collect();
        shown.push(MORE);
        if let Some(packed) = pack_footer(&shown, width, reserved, most_rows) {
            chosen = trial;
            best = packed;
        }
    }
    FooterLayout {
        rows: best,
        pinned,
        more: true,
    }
}

/// The height from which a footer that cannot show every key takes two rows.
const TALL_FOOTER: u16 = 30;

/// The footer's last entry when some keys are only in the help.
const MORE: (&str, &str) = ("?", "more");

/// The keys from the keymap (see `footer_layout`); help and quit stay visible at the right of
/// the last row whatever the width.
fn footer(area: Rect, buf: &mut Buffer, layout: &FooterLayout, theme: Theme) {
    let spans = |list: &[(&'static str, &'static str)]| -> Vec<Span<'static>> {
        let mut spans = vec![Span::raw(" ")];
        for (i, (key, name)) in list.iter().enumerate() {
            if i > 0 {
                spans.push(Span::raw(" ".repeat(FOOTER_GAP)));
            }
            spans.push(Span::styled(*key, theme.key()));
            spans.push(Span::styled(format!(" {name}"), theme.dim()));
        }
        spans
    };
    let last = layout.rows.len().saturating_sub(1);
    for (i, row) in layout.rows.iter().enumerate() {
        let y = area.y + i as u16;
        if y >= area.bottom() {
            break;
        }
        let row_area = Rect {
            y,
            height: 1,
            ..area
        };
        Line::from(spans(row)).render(row_area, buf);
        if i == last {
            let right = Line::from(spans(&layout.pinned));
            let [_, right_area] =
                Layout::horizontal([Constraint::Min(0), Constraint::Length(right.width() as u16)])
                    .areas(row_area);
            right.alignment(Alignment::Right).render(right_area, buf);
        }
    }
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
    // Inside the borders; a path too long keeps its right end (its file's name).
    let room = usize::from(width.saturating_sub(2));
    lines.push(Line::styled(
        crate::text::fit_paths(
            &format!(" scenario {}: {}", view.scenario, view.title),
            room,
        ),
        theme.dim(),
    ));
    let db_dir = crate::text::shorten_path(&view.db_dir, room.saturating_sub(14));
    lines.push(Line::styled(format!(" databases in {db_dir}"), theme.dim()));
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
