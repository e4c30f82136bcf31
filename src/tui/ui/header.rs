//! The header row: the badge, the notice or the title, the clock, speed and settings, `● REC`.

use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::tui::keymap::Mode;
use crate::tui::theme::Theme;
use crate::tui::view::Dashboard;

use super::{speed_label, width_of};

/// The least of the title the header keeps before it gives room to the recording's path.
const TITLE_KEPT: usize = 24;

/// The header: the badge and the notice (or the title) at the left; at the right the clock, the
/// speed and the settings, and `● REC` with the recording's path when there is room. A notice
/// is read whole: the seed, then the random-kills setting, make way for it (for the few seconds
/// it shows); a path in it that still does not fit gives up its left end, never its file's name.
pub(super) fn header(area: Rect, buf: &mut Buffer, view: &Dashboard, theme: Theme) {
    let width = usize::from(area.width);
    // A replay at its recording's end has nothing left to play: it is over, not paused (a
    // slide of the end said "paused").
    let at_end = (view.replay.as_ref()).is_some_and(|bar| view.clock.0 >= bar.end.0);
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
    } else if at_end {
        facts.push("■ the end".into());
    } else {
        facts.push(format!("{state} {speed}x"));
    }
    if let Some(warehouse) = &view.warehouse {
        facts.push(format!("on {warehouse}"));
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
        rec.push_str(&crate::base::text::shorten_path(path, room));
    }
    let right = format!(" {} ", facts.join("  "));
    let left_room = width
        .saturating_sub(width_of(&right))
        .saturating_sub(width_of(badge));
    let left = match &view.notice {
        Some(notice) => Line::from(vec![
            Span::styled(badge, theme.title()),
            Span::styled(
                crate::base::text::fit_paths(notice, left_room),
                theme.warn(),
            ),
        ]),
        None => Line::from(vec![
            Span::styled(badge, theme.title()),
            Span::raw(crate::base::text::shorten(&view.title, left_room)),
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
