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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(escape_controls("plain, café"), "plain, café");
        assert_eq!(escape_controls("a\nb\0c\td"), "a\\nb\\0c\\td");
    }
}
