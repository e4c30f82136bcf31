//! The timeline panel: the night's lines, newest at the bottom, each wrapped whole under its
//! message, scrolled back by events.

use std::collections::VecDeque;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Paragraph, Widget};

use crate::tui::theme::Theme;
use crate::tui::view::{Dashboard, Tone};

use super::width_of;
use super::wrap::wrap;

pub(super) fn timeline(area: Rect, buf: &mut Buffer, view: &Dashboard, theme: Theme) {
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
pub(super) fn timeline_rows(
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
    let mut shown: VecDeque<Vec<(String, Tone)>> = VecDeque::new();
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
pub(super) fn message_column(line: &str) -> usize {
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
