//! The symptoms panel: the postmortem's symptom table, each row lit once the night shows it.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Paragraph, Widget};

use crate::tui::theme::Theme;
use crate::tui::view::Dashboard;

pub(super) fn symptoms(area: Rect, buf: &mut Buffer, view: &Dashboard, theme: Theme) {
    // Zoomed, the panel lights what the lane on screen shows, and says so.
    let title = match view.lanes.get(view.selected).filter(|_| view.zoom) {
        Some(lane) => format!(" symptoms of {} ", lane.name),
        None => " symptoms (postmortem) ".to_string(),
    };
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme.dim())
        .title(Span::styled(title, theme.title()));
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
