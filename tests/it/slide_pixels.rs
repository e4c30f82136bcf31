//! An exported slide as a real renderer draws it: rsvg-convert's PNG, read back pixel by pixel.
//! Every cell the frame leaves blank stays the background (no glyph spills out of its cell, over
//! a lane's border or into the next lane), and every character it draws with a font is one an
//! installed font has (no tofu box).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::png;

/// A cell of the 120x40 frame, in pixels (see `src/export/svg.rs`).
const CELL: (f64, f64) = (8.4, 17.0);
/// Pixels at a cell's edges left out of its check: a box-drawing line or an antialiased edge
/// of a neighbour's glyph may touch them.
const MARGIN: usize = 2;
/// How far from the background a pixel must be to count as ink.
const INK: i32 = 40;

fn attr(node: roxmltree::Node<'_, '_>, name: &str) -> Option<f64> {
    node.attribute(name)?.parse().ok()
}

fn colour(hex: &str) -> Option<[u8; 3]> {
    let hex = hex.strip_prefix('#')?;
    let byte = |i: usize| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok();
    Some([byte(0)?, byte(2)?, byte(4)?])
}

/// Per row, per column: whether the SVG draws something in that cell.
type Cells = Vec<Vec<bool>>;

/// Which cells the SVG draws something in: a character that is not a space, or a rectangle
/// (a chart's dots, a background) over part of it. Also the page's background colour.
fn inked_cells(svg: &str) -> Result<(Cells, [u8; 3], BTreeSet<char>), String> {
    let doc = roxmltree::Document::parse(svg).map_err(|e| format!("not XML: {e}"))?;
    let root = doc.root_element();
    let (cols, rows) = (
        (attr(root, "width").ok_or("no width")? / CELL.0).round() as usize,
        (attr(root, "height").ok_or("no height")? / CELL.1).round() as usize,
    );
    let mut inked = vec![vec![false; cols]; rows];
    let mut background = None;
    let mut chars = BTreeSet::new();
    for node in doc.descendants() {
        if node.has_tag_name("rect") {
            let Some(x) = attr(node, "x") else {
                // The page's own background: the first rectangle, without a place.
                background = background.or_else(|| node.attribute("fill").and_then(colour));
                continue;
            };
            let (y, w, h) = (
                attr(node, "y").unwrap_or(0.0),
                attr(node, "width").unwrap_or(0.0),
                attr(node, "height").unwrap_or(0.0),
            );
            let (c0, c1) = (
                (x / CELL.0).floor() as usize,
                ((x + w) / CELL.0).ceil() as usize,
            );
            let (r0, r1) = (
                (y / CELL.1).floor() as usize,
                ((y + h) / CELL.1).ceil() as usize,
            );
            for row in inked.iter_mut().take(r1.min(rows)).skip(r0) {
                row.iter_mut()
                    .take(c1.min(cols))
                    .skip(c0)
                    .for_each(|c| *c = true);
            }
        } else if node.has_tag_name("tspan") {
            let (Some(x), Some(y)) = (attr(node, "x"), node.parent().and_then(|t| attr(t, "y")))
            else {
                continue;
            };
            let (col, row) = ((x / CELL.0).round() as usize, (y / CELL.1).floor() as usize);
            let text = node.text().unwrap_or_default();
            for (i, c) in text.chars().enumerate() {
                if !c.is_whitespace()
                    && let Some(cell) = inked.get_mut(row).and_then(|r| r.get_mut(col + i))
                {
                    *cell = true;
                }
                if !c.is_ascii() {
                    chars.insert(c);
                }
            }
        }
    }
    Ok((inked, background.ok_or("no background")?, chars))
}

/// The blank cells of `svg` with ink in `image`, as `(col, row)`.
fn ink_in_blank_cells(svg: &str, image: &png::Image) -> Result<Vec<(usize, usize)>, String> {
    let (inked, background, _) = inked_cells(svg)?;
    let mut found = Vec::new();
    for (row, cells) in inked.iter().enumerate() {
        for (col, _) in cells.iter().enumerate().filter(|(_, inked)| !**inked) {
            let x0 = (col as f64 * CELL.0).ceil() as usize + MARGIN;
            let x1 = ((col + 1) as f64 * CELL.0).floor() as usize - MARGIN;
            let y0 = (row as f64 * CELL.1).ceil() as usize + MARGIN;
            let y1 = ((row + 1) as f64 * CELL.1).floor() as usize - MARGIN;
            let ink = (y0..y1.min(image.height)).any(|y| {
                (x0..x1.min(image.width)).any(|x| {
                    let p = image.rgb(x, y);
                    (0..3).any(|i| (i32::from(p[i]) - i32::from(background[i])).abs() > INK)
                })
            });
            if ink {
                found.push((col, row));
            }
        }
    }
    Ok(found)
}

/// The characters of `svg` no installed font has (fontconfig's answer, which rsvg-convert's
/// text goes through), or `None` without fc-list to ask.
fn without_a_font(svg: &str) -> Result<Option<Vec<char>>, String> {
    let (_, _, chars) = inked_cells(svg)?;
    let mut missing = Vec::new();
    for c in chars {
        let asked = Command::new("fc-list")
            .arg(format!(":charset={:x}", u32::from(c)))
            .arg("family")
            .stderr(Stdio::null())
            .output();
        let Ok(out) = asked else {
            return Ok(None);
        };
        if out.stdout.iter().all(u8::is_ascii_whitespace) {
            missing.push(c);
        }
    }
    Ok(Some(missing))
}

/// Checks `png_path`, the rendering of `svg_path` by a real renderer, pixel by pixel.
pub(crate) fn check_png(svg_path: &Path, png_path: &Path) -> Result<(), String> {
    let svg = std::fs::read_to_string(svg_path).map_err(|e| e.to_string())?;
    let image = png::decode(&std::fs::read(png_path).map_err(|e| e.to_string())?)?;
    let spilled = ink_in_blank_cells(&svg, &image)?;
    if !spilled.is_empty() {
        return Err(format!(
            "ink in {} cells the frame leaves blank (col, row): {:?}",
            spilled.len(),
            &spilled[..spilled.len().min(20)]
        ));
    }
    match without_a_font(&svg)? {
        Some(missing) if !missing.is_empty() => {
            Err(format!("no installed font draws {missing:?}: tofu boxes"))
        }
        Some(_) => Ok(()),
        None => {
            eprintln!("fc-list is not installed: which fonts draw the slide's text not asked");
            Ok(())
        }
    }
}

#[test]
fn the_checker_finds_a_glyph_spilled_into_a_blank_cell() {
    // Two cells on a black page: an `x` in the first, the second blank; a 4x4 white image
    // stands for the render, and a white pixel inside the blank cell is ink there.
    let svg = r##"<svg xmlns="http://www.w3.org/2000/svg" width="16.8" height="17"><rect width="100%" height="100%" fill="#000000"/><text y="13"><tspan x="0.0">x </tspan></text></svg>"##;
    let (inked, background, _) = inked_cells(svg).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(inked, vec![vec![true, false]]);
    assert_eq!(background, [0, 0, 0]);
    let mut image = png::Image {
        width: 17,
        height: 17,
        channels: 3,
        data: vec![0; 17 * 17 * 3],
    };
    assert_eq!(ink_in_blank_cells(svg, &image), Ok(vec![]));
    let at = (8 * 17 + 12) * 3;
    image.data[at..at + 3].copy_from_slice(&[255, 255, 255]);
    assert_eq!(ink_in_blank_cells(svg, &image), Ok(vec![(1, 0)]));
}
