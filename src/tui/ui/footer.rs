//! The footer: the mode's keys from the keymap in one or two rows, the most useful first when
//! they do not all fit (`? more`), help and quit pinned at the right.

use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::tui::keymap::{self, Mode};
use crate::tui::theme::Theme;

use super::width_of;

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
pub(super) fn footer(area: Rect, buf: &mut Buffer, layout: &FooterLayout, theme: Theme) {
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
