//! A buffer's rows as a terminal would be told to draw them: text with SGR colour sequences.

use std::fmt::Write as _;

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier, Style};

/// Row `y` of `buffer`, starting at its first column, ending with the attributes reset.
pub fn row(buffer: &Buffer, y: u16) -> String {
    let mut out = String::new();
    let mut last: Option<Style> = None;
    for x in 0..buffer.area.width {
        let Some(cell) = buffer.cell((x, y)) else {
            continue;
        };
        let style = cell.style();
        if last != Some(style) {
            out.push_str(&sgr(style));
            last = Some(style);
        }
        out.push_str(cell.symbol());
    }
    out.push_str("\x1b[0m");
    out
}

/// The SGR sequence that sets `style` from a reset state.
fn sgr(style: Style) -> String {
    let mut codes = vec!["0".to_string()];
    let m = style.add_modifier;
    for (flag, code) in [
        (Modifier::BOLD, "1"),
        (Modifier::DIM, "2"),
        (Modifier::ITALIC, "3"),
        (Modifier::UNDERLINED, "4"),
        (Modifier::REVERSED, "7"),
    ] {
        if m.contains(flag) {
            codes.push(code.to_string());
        }
    }
    if let Some(fg) = style.fg.and_then(|c| color(c, false)) {
        codes.push(fg);
    }
    if let Some(bg) = style.bg.and_then(|c| color(c, true)) {
        codes.push(bg);
    }
    let mut out = String::from("\x1b[");
    let _ = write!(out, "{}m", codes.join(";"));
    out
}

/// The SGR parameter for a colour (`None` for the terminal's default).
fn color(color: Color, background: bool) -> Option<String> {
    let base = if background { 40 } else { 30 };
    let bright = if background { 100 } else { 90 };
    let code = match color {
        Color::Reset => return None,
        Color::Black => base,
        Color::Red => base + 1,
        Color::Green => base + 2,
        Color::Yellow => base + 3,
        Color::Blue => base + 4,
        Color::Magenta => base + 5,
        Color::Cyan => base + 6,
        Color::Gray => base + 7,
        Color::DarkGray => bright,
        Color::LightRed => bright + 1,
        Color::LightGreen => bright + 2,
        Color::LightYellow => bright + 3,
        Color::LightBlue => bright + 4,
        Color::LightMagenta => bright + 5,
        Color::LightCyan => bright + 6,
        Color::White => bright + 7,
        Color::Indexed(i) => return Some(format!("{};5;{i}", base + 8)),
        Color::Rgb(r, g, b) => return Some(format!("{};2;{r};{g};{b}", base + 8)),
    };
    Some(code.to_string())
}

/// A colour as CSS writes it, for the SVG frame: a dark terminal's palette, chosen so every
/// colour reads on the dark background a slide shows it on.
pub fn css(color: Color) -> Option<String> {
    let hex = |r: u8, g: u8, b: u8| format!("#{r:02x}{g:02x}{b:02x}");
    Some(match color {
        Color::Reset => return None,
        Color::Black => hex(0, 0, 0),
        Color::Red => hex(0xf1, 0x4c, 0x4c),
        Color::Green => hex(0x23, 0xd1, 0x8b),
        Color::Yellow => hex(0xe5, 0xe5, 0x10),
        Color::Blue => hex(0x3b, 0x8e, 0xea),
        Color::Magenta => hex(0xd6, 0x70, 0xd6),
        Color::Cyan => hex(0x29, 0xb8, 0xdb),
        Color::Gray => hex(0xcc, 0xcc, 0xcc),
        Color::DarkGray => hex(0x80, 0x80, 0x80),
        Color::LightRed => hex(0xff, 0x6b, 0x6b),
        Color::LightGreen => hex(0x5a, 0xf7, 0x8e),
        Color::LightYellow => hex(0xf5, 0xf5, 0x43),
        Color::LightBlue => hex(0x6c, 0xb6, 0xff),
        Color::LightMagenta => hex(0xff, 0x92, 0xdf),
        Color::LightCyan => hex(0x6b, 0xe5, 0xfd),
        Color::White => hex(0xff, 0xff, 0xff),
        Color::Rgb(r, g, b) => hex(r, g, b),
        Color::Indexed(i) => return Some(indexed(i)),
    })
}

/// xterm's 256-colour palette beyond the first 16.
fn indexed(i: u8) -> String {
    let level = |v: u8| if v == 0 { 0 } else { 55 + 40 * v };
    let (r, g, b) = match i {
        0..=15 => return css(BASIC[usize::from(i)]).unwrap_or_default(),
        16..=231 => {
            let n = i - 16;
            (level(n / 36), level((n / 6) % 6), level(n % 6))
        }
        _ => {
            let v = 8 + 10 * (i - 232);
            (v, v, v)
        }
    };
    format!("#{r:02x}{g:02x}{b:02x}")
}

const BASIC: [Color; 16] = [
    Color::Black,
    Color::Red,
    Color::Green,
    Color::Yellow,
    Color::Blue,
    Color::Magenta,
    Color::Cyan,
    Color::Gray,
    Color::DarkGray,
    Color::LightRed,
    Color::LightGreen,
    Color::LightYellow,
    Color::LightBlue,
    Color::LightMagenta,
    Color::LightCyan,
    Color::White,
];
