//! Lecture mode's line under the header: where the night stopped and why, or that it plays on.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::tui::theme::Theme;
use crate::tui::view::LectureLine;

use super::wrap::wrap;

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
pub(super) fn lecture_rows(line: &LectureLine, width: u16) -> Vec<String> {
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
pub(super) fn lecture(area: Rect, buf: &mut Buffer, line: &LectureLine, theme: Theme) {
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
