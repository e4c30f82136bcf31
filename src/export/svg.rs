//! One frame of the dashboard as SVG: a monospace grid of text runs with their colours on a dark
//! background, for a slide. Text stays text (selectable, searchable, sharp at any size); the
//! charts' braille dots and block elements are drawn as rectangles in their cells (`shapes`),
//! since many fonts have no braille and a renderer falls back to boxes or to wider glyphs.

use std::fmt::Write as _;
use std::io::{self, Write};

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier, Style};

use super::{Spec, ansi, frame};
use crate::record::Recording;
use crate::tui::replay::ReplayApp;

/// A cell's size in pixels at the font size below (a monospace advance of 0.6 em).
const CELL_W: f64 = 8.4;
const CELL_H: f64 = 17.0;
const FONT_SIZE: f64 = 14.0;
const BACKGROUND: &str = "#101418";
const FOREGROUND: &str = "#d8dee4";

pub(super) fn write(
    recording: Recording,
    request: &Spec<'_>,
    out: &mut dyn Write,
) -> io::Result<String> {
    let end = recording.last_sim();
    // `--at 02:15:21` names what the clock shows as 02:15:21: the frame at the end of that
    // second, with every line the timeline shows under that time. A time before the night is
    // drawn at its start, and said so (it named 01:00:00 and drew 02:00:00); one after its end
    // is refused before this.
    let asked = request.at.unwrap_or(end);
    let start = crate::base::clock::NIGHT_START.min(end);
    let shown = if request.at.is_some() {
        asked + 0.99
    } else {
        asked
    };
    let at = shown.clamp(start, end);
    let mut app = ReplayApp::new(recording);
    let buffer = frame(&mut app, at, request.size, request.theme);
    out.write_all(render(&buffer).as_bytes())?;
    let (w, h) = request.size;
    let (named, moved) = if asked < start {
        (
            start,
            format!(
                ", where the night begins (--at {} is before it),",
                crate::base::clock::SimTime(asked)
            ),
        )
    } else {
        (asked.min(end), String::new())
    };
    Ok(format!(
        "the dashboard at {}{moved} as a {w}x{h} SVG",
        crate::base::clock::SimTime(named)
    ))
}

/// The SVG document for `buffer`.
pub(super) fn render(buffer: &Buffer) -> String {
    let (w, h) = (buffer.area.width, buffer.area.height);
    let width = f64::from(w) * CELL_W;
    let height = f64::from(h) * CELL_H;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.1} {height:.1}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="{FONT_SIZE}">"#
    );
    let _ = writeln!(
        svg,
        r#"<rect width="100%" height="100%" fill="{BACKGROUND}"/>"#
    );
    for y in 0..h {
        let runs = runs(buffer, y);
        let top = f64::from(y) * CELL_H;
        for x in 0..w {
            if let Some(cell) = buffer.cell((x, y))
                && let Some(c) = cell.symbol().chars().next()
            {
                let fill = (cell.style().fg)
                    .filter(|c| *c != Color::Reset)
                    .and_then(ansi::css)
                    .unwrap_or_else(|| FOREGROUND.to_string());
                for (dx, dy, dw, dh) in shapes(c) {
                    let _ = writeln!(
                        svg,
                        r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="{fill}"/>"#,
                        (f64::from(x) + dx) * CELL_W,
                        top + dy * CELL_H,
                        dw * CELL_W,
                        dh * CELL_H
                    );
                }
            }
        }
        for run in &runs {
            if let Some(bg) = run.style.bg.and_then(ansi::css) {
                let _ = writeln!(
                    svg,
                    r#"<rect x="{:.1}" y="{top:.1}" width="{:.1}" height="{CELL_H}" fill="{bg}"/>"#,
                    f64::from(run.x) * CELL_W,
                    f64::from(run.width) * CELL_W
                );
            }
        }
        let baseline = top + CELL_H * 0.78;
        let _ = write!(svg, r#"<text y="{baseline:.1}" xml:space="preserve">"#);
        for run in &runs {
            if run.text.trim().is_empty() {
                continue;
            }
            let fill = run
                .style
                .fg
                .and_then(|c| {
                    if c == Color::Reset {
                        None
                    } else {
                        ansi::css(c)
                    }
                })
                .unwrap_or_else(|| FOREGROUND.to_string());
            let bold = if run.style.add_modifier.contains(Modifier::BOLD) {
                r#" font-weight="bold""#
            } else {
                ""
            };
            for (at, piece) in pieces(&run.text, run.width) {
                let _ = write!(
                    svg,
                    r#"<tspan x="{:.1}" fill="{fill}"{bold} textLength="{:.1}" lengthAdjust="spacingAndGlyphs">{}</tspan>"#,
                    f64::from(run.x + at) * CELL_W,
                    piece.chars().count() as f64 * CELL_W,
                    escape(&piece)
                );
            }
        }
        let _ = writeln!(svg, "</text>");
    }
    svg.push_str("</svg>\n");
    svg
}

/// The longest piece of text placed as one: librsvg (rsvg-convert) ignores `textLength`, so a
/// piece drifts by the font's own advance (DejaVu Sans Mono's is 8.43 px at 14 px, 0.03 over
/// the cell): 3.5 px over a 117-character caption, its last glyph into the next cell. Over 24
/// characters, under a pixel.
const PIECE: usize = 24;

/// `text` (`width` cells) as the pieces placed each at its own cell: its words, each cut into
/// `PIECE` characters at most, with their cell offsets. A text with a character wider than a
/// cell goes whole (its cells are not its characters).
fn pieces(text: &str, width: u16) -> Vec<(u16, String)> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() != usize::from(width) {
        return vec![(0, text.to_string())];
    }
    let mut out: Vec<(u16, String)> = Vec::new();
    let mut start = None;
    for (i, c) in chars.iter().chain([&' ']).enumerate() {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(from)) => {
                for (k, piece) in chars[from..i].chunks(PIECE).enumerate() {
                    out.push(((from + k * PIECE) as u16, piece.iter().collect()));
                }
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// The rectangles that draw `c` in its cell, as fractions of the cell (x, y, width, height):
/// a braille pattern's dots, a block element's part; none for any other character.
fn shapes(c: char) -> Vec<(f64, f64, f64, f64)> {
    let code = u32::from(c);
    if (0x2800..=0x28FF).contains(&code) {
        // Dots 1-3 and 7 down the left column, 4-6 and 8 down the right (Unicode's order).
        const DOTS: [(f64, f64); 8] = [
            (0.0, 0.0),
            (0.0, 1.0),
            (0.0, 2.0),
            (1.0, 0.0),
            (1.0, 1.0),
            (1.0, 2.0),
            (0.0, 3.0),
            (1.0, 3.0),
        ];
        let bits = code - 0x2800;
        return (DOTS.iter().enumerate())
            .filter(|(i, _)| bits & (1 << i) != 0)
            .map(|(_, (col, row))| (0.15 + col * 0.45, 0.06 + row * 0.235, 0.3, 0.17))
            .collect();
    }
    let quadrants = |ul: bool, ur: bool, ll: bool, lr: bool| {
        [
            (ul, 0.0, 0.0),
            (ur, 0.5, 0.0),
            (ll, 0.0, 0.5),
            (lr, 0.5, 0.5),
        ]
        .into_iter()
        .filter(|(on, _, _)| *on)
        .map(|(_, x, y)| (x, y, 0.5, 0.5))
        .collect()
    };
    match code {
        0x2580 => vec![(0.0, 0.0, 1.0, 0.5)],
        // Lower eighths, ▁ to █.
        0x2581..=0x2588 => {
            let h = f64::from(code - 0x2580) / 8.0;
            vec![(0.0, 1.0 - h, 1.0, h)]
        }
        // Left eighths, ▉ to ▏.
        0x2589..=0x258F => {
            let w = f64::from(0x2590 - code) / 8.0;
            vec![(0.0, 0.0, w, 1.0)]
        }
        0x2590 => vec![(0.5, 0.0, 0.5, 1.0)],
        0x2594 => vec![(0.0, 0.0, 1.0, 0.125)],
        0x2595 => vec![(0.875, 0.0, 0.125, 1.0)],
        0x2596 => quadrants(false, false, true, false),
        0x2597 => quadrants(false, false, false, true),
        0x2598 => quadrants(true, false, false, false),
        0x2599 => quadrants(true, false, true, true),
        0x259A => quadrants(true, false, false, true),
        0x259B => quadrants(true, true, true, false),
        0x259C => quadrants(true, true, false, true),
        0x259D => quadrants(false, true, false, false),
        0x259E => quadrants(false, true, true, false),
        0x259F => quadrants(false, true, true, true),
        _ => Vec::new(),
    }
}

/// A stretch of one row in one style.
struct Run {
    x: u16,
    width: u16,
    style: Style,
    text: String,
}

fn runs(buffer: &Buffer, y: u16) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for x in 0..buffer.area.width {
        let Some(cell) = buffer.cell((x, y)) else {
            continue;
        };
        let style = cell.style();
        match runs.last_mut() {
            Some(run) if run.style == style && run.x + run.width == x => {
                run.width += 1;
            }
            _ => runs.push(Run {
                x,
                width: 1,
                style,
                text: String::new(),
            }),
        }
        // A cell drawn as shapes is a space in the text.
        let symbol = cell.symbol();
        let drawn = symbol.chars().next().is_some_and(|c| !shapes(c).is_empty());
        if let Some(run) = runs.last_mut() {
            if run.width == 1 {
                run.text.clear();
            }
            run.text.push_str(if drawn { " " } else { symbol });
        }
    }
    runs
}

/// Text as XML character data.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_placed_word_by_word_and_a_long_word_in_pieces() {
        let long = "━".repeat(30);
        let text = format!("  ok rows 2 {long}");
        let width = text.chars().count() as u16;
        let got = pieces(&text, width);
        assert_eq!(
            got,
            vec![
                (2, "ok".to_string()),
                (5, "rows".to_string()),
                (10, "2".to_string()),
                (12, "━".repeat(24)),
                (36, "━".repeat(6)),
            ]
        );
        // A wide character: its cells are not its characters, so the run goes whole.
        assert_eq!(pieces("a界", 3), vec![(0, "a界".to_string())]);
    }
}
