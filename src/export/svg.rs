//! One frame of the dashboard as SVG: a monospace grid of text runs with their colours on a dark
//! background, for a slide. Text stays text (selectable, searchable, sharp at any size).

use std::fmt::Write as _;
use std::io::{self, Write};

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier, Style};

use super::{Request, ansi, frame};
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
    request: &Request<'_>,
    out: &mut dyn Write,
) -> io::Result<String> {
    let end = recording.last_sim();
    // `--at 02:15:21` names what the clock shows as 02:15:21: the frame at the end of that
    // second, with every line the timeline shows under that time.
    let at = request.at.map_or(end, |at| at + 0.999).min(end);
    let mut app = ReplayApp::new(recording);
    let buffer = frame(&mut app, at, request.size, request.theme);
    out.write_all(render(&buffer).as_bytes())?;
    let (w, h) = request.size;
    Ok(format!(
        "the dashboard at {} as a {w}x{h} SVG",
        crate::clock::SimTime(at)
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
            let _ = write!(
                svg,
                r#"<tspan x="{:.1}" fill="{fill}"{bold} textLength="{:.1}" lengthAdjust="spacingAndGlyphs">{}</tspan>"#,
                f64::from(run.x) * CELL_W,
                f64::from(run.width) * CELL_W,
                escape(&run.text)
            );
        }
        let _ = writeln!(svg, "</text>");
    }
    svg.push_str("</svg>\n");
    svg
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
                run.text.push_str(cell.symbol());
            }
            _ => runs.push(Run {
                x,
                width: 1,
                style,
                text: cell.symbol().to_string(),
            }),
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
