//! The `?` overlay: every key of the mode from the keymap, what a lane's panel shows, where the
//! scenario and the databases are.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Widget};

use crate::tui::keymap;
use crate::tui::theme::Theme;
use crate::tui::view::Dashboard;

/// What each part of a lane's panel means, as the help names it.
const PANEL_LEGEND: &[&str] = &[
    " projector: z zooms a lane; --theme high-contrast: bold, colour-blind safe",
    " lights: alive = a worker process exists; progress = its heartbeat is fresh",
    " dup = task ids written more than once; ckpt - = no checkpoints table",
    " hb = heartbeat age in sim seconds; the dotted line at 300s = the dead-man's",
    " threshold; symptoms light from what the rows and the timeline show",
];

pub(super) fn help(area: Rect, buf: &mut Buffer, view: &Dashboard, theme: Theme) {
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
        crate::base::text::fit_paths(
            &format!(" scenario {}: {}", view.scenario, view.title),
            room,
        ),
        theme.dim(),
    ));
    let db_dir = crate::base::text::shorten_path(&view.db_dir, room.saturating_sub(14));
    lines.push(Line::styled(format!(" databases in {db_dir}"), theme.dim()));
    Paragraph::new(lines).block(block).render(popup, buf);
}
