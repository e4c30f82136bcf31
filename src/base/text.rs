//! Text for error lines: whatever a user's file or flag held, an error stays one line. And
//! paths shortened from the left, so the file's name stays readable where room is short.

/// Escapes control characters (a newline becomes `\n`, a NUL `\0`, ...) so that a value quoted
/// from a scenario, a recording or a path cannot break an error line in two; and the bidi
/// controls (U+202E `\u{202e}`, ...), which would show a line's text in another order than it
/// has.
#[must_use]
pub fn escape_controls(text: &str) -> String {
    let escaped = |c: char| c.is_control() || is_bidi_control(c);
    if !text.chars().any(escaped) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if escaped(c) {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Bytes that should be text but may not be UTF-8 (a key a job stored), as text: the UTF-8 runs
/// as they are, each byte that is not as `\xNN`. Control characters are escaped by
/// `escape_controls` where the text is printed.
#[must_use]
pub fn escape_bytes(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut text = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        for byte in chunk.invalid() {
            let _ = write!(text, "\\x{byte:02x}");
        }
    }
    text
}

/// The first character of `text` that would act on a terminal or a page rather than be read:
/// a control character (but those `allowed`: a line break in notes) or a bidi control.
#[must_use]
pub fn acting_char(text: &str, allowed: &[char]) -> Option<char> {
    text.chars()
        .find(|&c| (c.is_control() && !allowed.contains(&c)) || is_bidi_control(c))
}

/// The Unicode bidi controls: marks, embeddings, overrides and isolates.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
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

/// A number as typed, for a refusal: at most 24 characters of it (`1e300` stays `1e300`; what
/// a parser would print for it is a 301-digit line).
#[must_use]
pub fn typed_number(text: &str) -> String {
    shorten(&escape_controls(text.trim()), 24)
}

/// `line` with every run of more than 24 digits cut to its first 12 and its length
/// (`100000000000…(301 digits)`): an error line stays readable whatever number reached it.
#[must_use]
pub fn shorten_numbers(line: &str) -> String {
    use std::fmt::Write as _;
    const LONGEST: usize = 24;
    let mut out = String::with_capacity(line.len().min(4096));
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String| {
        if digits.len() > LONGEST {
            out.push_str(&digits[..12]);
            let _ = write!(out, "…({} digits)", digits.len());
        } else {
            out.push_str(digits);
        }
        digits.clear();
    };
    for c in line.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            flush(&mut digits, &mut out);
            out.push(c);
        }
    }
    flush(&mut digits, &mut out);
    out
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

/// At most `max` characters of `path`, cut from the LEFT with a leading `…` so the file's name
/// stays: `…/reclaim-tui-1234/night2.jsonl`. The cut falls just before a `/` when one leaves room,
/// else in the name itself (`…ght2.jsonl`). Counts characters, never splits one.
#[must_use]
pub fn shorten_path(path: &str, max: usize) -> String {
    let chars: Vec<char> = path.chars().collect();
    if chars.len() <= max {
        return path.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let room = max - 1;
    // The longest tail that fits and starts at a separator, else the last `room` characters.
    let from = (chars.len() - room..chars.len())
        .find(|&i| chars[i] == '/')
        .unwrap_or(chars.len() - room);
    let mut short = String::from("…");
    short.extend(&chars[from..]);
    short
}

/// `text` (a notice that may quote paths) in at most `max` characters when shortening the
/// paths in it from the left can do it: the longest word holding a `/` gives up what is too
/// much, down to its file's name. Text that still does not fit is returned as short as it gets.
#[must_use]
pub fn fit_paths(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let words: Vec<&str> = text.split(' ').collect();
    let Some((longest, word)) = words
        .iter()
        .enumerate()
        .filter(|(_, w)| w.contains('/'))
        .max_by_key(|(_, w)| w.chars().count())
    else {
        return text.to_string();
    };
    let len = word.chars().count();
    let name = word.rsplit('/').next().unwrap_or_default().chars().count();
    // Never shorter than `…/name`: past that, the name itself would be cut.
    let keep = len.saturating_sub(total - max).max(name + 2).min(len);
    words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if i == longest {
                shorten_path(w, keep)
            } else {
                (*w).to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_numbers_are_cut_and_short_ones_kept() {
        let huge = format!("1{}", "0".repeat(300));
        assert_eq!(
            shorten_numbers(&format!("invalid value: {huge} ms")),
            "invalid value: 100000000000…(301 digits) ms"
        );
        assert_eq!(
            shorten_numbers("task-111 at 02:11:47"),
            "task-111 at 02:11:47"
        );
        assert_eq!(typed_number(" 1e300 "), "1e300");
        assert_eq!(typed_number(&huge).chars().count(), 24);
    }

    #[test]
    fn bytes_that_are_not_utf8_are_escaped_and_the_rest_kept() {
        assert_eq!(escape_bytes(b"task-\xff"), "task-\\xff");
        assert_eq!(escape_bytes("caf\u{e9}".as_bytes()), "caf\u{e9}");
        assert_eq!(escape_bytes(b"\xc3(\xfe"), "\\xc3(\\xfe");
    }

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert_eq!(escape_controls("plain, café"), "plain, café");
        assert_eq!(escape_controls("n\u{202e}X"), "n\\u{202e}X");
        assert_eq!(
            escape_controls("a\u{2066}b\u{200f}"),
            "a\\u{2066}b\\u{200f}"
        );
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

    #[test]
    fn a_path_is_cut_from_the_left_and_keeps_its_file_name() {
        let path = "/tmp/a-very-long-folder-name/reclaim-tui-1234/night2.jsonl";
        assert_eq!(shorten_path(path, 80), path);
        assert_eq!(shorten_path(path, 32), "…/reclaim-tui-1234/night2.jsonl");
        assert_eq!(shorten_path(path, 31), "…/reclaim-tui-1234/night2.jsonl");
        assert_eq!(shorten_path(path, 30), "…/night2.jsonl");
        assert_eq!(shorten_path(path, 14), "…/night2.jsonl");
        // No room even for `/name`: the name's end stays.
        assert_eq!(shorten_path(path, 10), "…ht2.jsonl");
        assert_eq!(shorten_path(path, 1), "…");
        assert_eq!(shorten_path(path, 0), "");
        for max in 0..70 {
            let short = shorten_path(path, max);
            assert!(short.chars().count() <= max, "{max}: {short}");
        }
    }

    #[test]
    fn a_path_of_many_byte_characters_is_cut_between_characters() {
        let path = "/tmp/données-été/成績/夜の記録-二.jsonl";
        for max in 0..=path.chars().count() {
            let short = shorten_path(path, max);
            assert!(short.chars().count() <= max, "{max}: {short}");
            if max >= 2 {
                assert!(path.ends_with(short.trim_start_matches('…')), "{short}");
            }
        }
        assert_eq!(shorten_path(path, 16), "…/夜の記録-二.jsonl");
    }

    #[test]
    fn a_notice_gives_up_the_left_of_its_path_to_fit() {
        let notice = "recording saved to /tmp/reclaim-tui-1234/night2.jsonl";
        assert_eq!(fit_paths(notice, 80), notice);
        assert_eq!(
            fit_paths(notice, 50),
            "recording saved to …/reclaim-tui-1234/night2.jsonl"
        );
        assert_eq!(fit_paths(notice, 40), "recording saved to …/night2.jsonl");
        // Too narrow even for the name: the name stays whole, the caller cuts the line.
        assert_eq!(fit_paths(notice, 20), "recording saved to …/night2.jsonl");
        assert_eq!(fit_paths("no path here at all", 5), "no path here at all");
    }
}
