//! The teaching caption of the moment, on its own line (or two) under the header.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::tui::theme::Theme;

/// The teaching caption for this moment, on its own line under the header.
pub(super) fn caption(area: Rect, buf: &mut Buffer, text: &str, theme: Theme) {
    let line = Line::from(vec![
        Span::styled(" ▌ ", theme.warn()),
        Span::styled(text.to_string(), theme.warn()),
    ]);
    Paragraph::new(line)
        .wrap(ratatui::widgets::Wrap { trim: true })
        .render(area, buf);
}
