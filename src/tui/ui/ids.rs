//! The `i` overlay: a lane's task ids written more than once, over the dashboard, as many as fit.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Widget};

use crate::tui::theme::Theme;
use crate::tui::view::IdsView;

/// The duplicated ids of a lane, over the dashboard, as many as fit.
pub(super) fn ids_overlay(area: Rect, buf: &mut Buffer, ids: &IdsView, theme: Theme) {
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
        crate::base::text::count(ids.total, "task id", "task ids")
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
        let said = format!(
            " ... and more: reclaim inspect --ids --db  lists all {}",
            ids.total
        );
        let room = usize::from(width.saturating_sub(2)).saturating_sub(said.chars().count());
        let db =
            crate::base::text::escape_controls(&crate::base::text::shorten_path(&ids.db, room));
        lines.push(Line::styled(
            format!(
                " ... and more: reclaim inspect --ids --db {db} lists all {}",
                ids.total
            ),
            theme.dim(),
        ));
    }
    Paragraph::new(lines).block(block).render(popup, buf);
}
