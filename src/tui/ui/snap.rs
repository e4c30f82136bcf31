//! Curves of one chart drawn with different glyphs, snapped onto the braille curve's rows.

use ratatui::symbols::Marker as Glyph;

/// `data` as a curve drawn with `glyph` must be given to fall in the rows the braille curve
/// puts the same figures in, on a plot `rows` high. ratatui rounds each glyph on a grid of its
/// own (braille four dots a row, a quadrant two, a dot or a bar one), so a distinct count of 200
/// of 343 over seven rows was drawn a row below the other lane's 200 rows.
pub(super) fn on_braille_rows(
    data: &[(f64, f64)],
    glyph: Glyph,
    y_max: f64,
    rows: u16,
) -> Vec<(f64, f64)> {
    let per_row = match glyph {
        Glyph::Braille | Glyph::Octant => return data.to_vec(),
        Glyph::Quadrant | Glyph::HalfBlock => 2.0,
        Glyph::Sextant => 3.0,
        _ => 1.0,
    };
    let rows = f64::from(rows);
    if rows < 2.0 || y_max <= 0.0 {
        return data.to_vec();
    }
    let grid = per_row * rows;
    let snap = |y: f64| {
        // The braille dot ratatui would light, counted from the top, and the row it is in.
        let dot = ((y_max - y.clamp(0.0, y_max)) * (4.0 * rows - 1.0) / y_max).round();
        let row = (dot / 4.0).floor();
        // This glyph's step in that row nearest the dot; ratatui's rounding lands on it.
        let step = (row * per_row + ((dot - row * 4.0) * per_row / 4.0).floor()).min(grid - 1.0);
        // Clamped: y_max is a tenth above a count, and the bottom step came out at -1e-14,
        // below the axis, where ratatui draws nothing.
        (y_max - step * y_max / (grid - 1.0)).clamp(0.0, y_max)
    };
    data.iter().map(|&(x, y)| (x, snap(y))).collect()
}
