//! Breaking a line into rows at spaces with a hanging indent, so no word is lost at a panel's edge.

use super::width_of;

/// The fewest columns a continuation row keeps for its words under the message: a narrower
/// panel indents by `NARROW_INDENT` only (enough to tell it from an event's first row).
const WRAPPED_ROOM: usize = 30;
const NARROW_INDENT: usize = 4;

/// `line` in rows of at most `width` columns, broken at spaces (mid-word only for a word longer
/// than a row), the continuation rows indented by `indent`: no word is lost at the panel's edge.
pub(super) fn wrap(line: &str, width: usize, indent: usize) -> Vec<String> {
    let indent = if indent + WRAPPED_ROOM <= width {
        indent
    } else {
        NARROW_INDENT.min(width / 4)
    };
    let char_width = |c: char| {
        if c.is_ascii() {
            1
        } else {
            width_of(c.encode_utf8(&mut [0; 4]))
        }
    };
    let mut rows = Vec::new();
    let mut row = String::new();
    // Columns used in this row, and where its words begin (past the indent).
    let (mut used, mut start) = (0, 0);
    let mut spaces = 0;
    let mut rest = line;
    while !rest.is_empty() {
        let word_end = rest.find(' ').unwrap_or(rest.len());
        let (word, after) = rest.split_at(word_end);
        let space_end = after.find(|c| c != ' ').unwrap_or(after.len());
        rest = &after[space_end..];
        if used > start && used + spaces + width_of(word) > width {
            rows.push(std::mem::take(&mut row));
            row = " ".repeat(indent);
            (used, start) = (indent, indent);
        } else {
            row.extend(std::iter::repeat_n(' ', spaces));
            used += spaces;
        }
        for c in word.chars() {
            let w = char_width(c);
            if used > start && used + w > width {
                rows.push(std::mem::take(&mut row));
                row = " ".repeat(indent);
                (used, start) = (indent, indent);
            }
            row.push(c);
            used += w;
        }
        spaces = space_end;
    }
    rows.push(row);
    rows
}
