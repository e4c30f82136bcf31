//! The teaching caption of the moment, under the header: as many rows as it needs at this
//! width, up to `MAX_ROWS`, so its end (often its point) is not lost on a narrow screen.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::tui::theme::Theme;

/// The most rows a caption takes from the lanes; a longer one ends in `…` (the notes, and the
/// scenario, hold it whole).
const MAX_ROWS: usize = 4;
/// The caption's mark, `▌ `, and the indent of its continuation rows.
const MARK: usize = 2;

/// The caption in rows of at most `width` columns (its mark's included), broken at spaces.
#[must_use]
pub(super) fn caption_rows(text: &str, width: u16) -> Vec<String> {
    let mut rows = super::wrap::wrap(text, usize::from(width).saturating_sub(MARK).max(1), 0);
    if rows.len() > MAX_ROWS {
        rows.truncate(MAX_ROWS);
        if let Some(last) = rows.last_mut() {
            last.pop();
            last.push('…');
        }
    }
    rows
}

/// The teaching caption for this moment, under the header.
pub(super) fn caption(area: Rect, buf: &mut Buffer, text: &str, theme: Theme) {
    let lines: Vec<Line> = (caption_rows(text, area.width).into_iter().enumerate())
        .map(|(i, row)| {
            let mark = if i == 0 { "▌ " } else { "  " };
            Line::from(vec![
                Span::styled(mark, theme.warn()),
                Span::styled(row, theme.warn()),
            ])
        })
        .collect();
    Paragraph::new(lines).render(area, buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caption_takes_the_rows_it_needs_and_keeps_its_end_up_to_four() {
        // The incident's last caption at 80 columns: three rows, its point in the last.
        let last = "The naive worker reports rows_written=312 status=ok. The table holds 312 rows, \
                    112 task ids written more than once. Derive the status from the rows, not \
                    from the worker's word.";
        let rows = caption_rows(last, 80);
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert!(rows[2].ends_with("the worker's word."), "{rows:?}");
        assert!(rows.iter().all(|r| r.chars().count() <= 78), "{rows:?}");
        // Longer than four rows: the fourth ends in an ellipsis, nothing drawn past it.
        let rows = caption_rows(&last.repeat(3), 80);
        assert_eq!(rows.len(), 4, "{rows:?}");
        assert!(rows[3].ends_with('…'), "{rows:?}");
        assert_eq!(caption_rows("short", 80), ["short"]);
    }
}
