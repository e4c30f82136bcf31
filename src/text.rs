//! Text for error lines: whatever a user's file or flag held, an error stays one line.

/// Escapes control characters (a newline becomes `\n`, a NUL `\0`, ...) so that a value quoted
/// from a scenario, a recording or a path cannot break an error line in two.
#[must_use]
pub fn escape_controls(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `n` and the noun in agreement with it: `1 kill`, `2 kills`, `1 task id`, `112 task ids`.
#[must_use]
pub fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// At most `max` characters of `text`, with `…` in place of the rest: a value quoted in an error
/// (a 309-digit number, a pasted paragraph) must leave the line readable.
#[must_use]
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `text` with every word longer than `max` characters shortened (see `shorten`): for messages
/// that quote a user's values somewhere inside them, such as a TOML parser's.
#[must_use]
pub fn shorten_words(text: &str, max: usize) -> String {
    if text.split(' ').all(|w| w.chars().count() <= max) {
        return text.to_string();
    }
    text.split(' ')
        .map(|w| shorten(w, max))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(escape_controls("plain, café"), "plain, café");
        assert_eq!(escape_controls("a\nb\0c\td"), "a\\nb\\0c\\td");
    }

    #[test]
    fn long_values_are_cut_to_their_limit_with_an_ellipsis() {
        assert_eq!(shorten("short", 40), "short");
        let long = "9".repeat(309);
        let cut = shorten(&long, 40);
        assert_eq!(cut.chars().count(), 40);
        assert!(cut.ends_with('…'));
        assert_eq!(
            shorten_words(&format!("items = {long} is wrong"), 10),
            "items = 999999999… is wrong"
        );
    }
}
