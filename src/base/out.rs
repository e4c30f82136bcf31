//! Standard output for the commands that print text: every control character but the line
//! break and the tab escaped on the way out (a job's output, a recording's strings or a file's
//! names cannot move the cursor, set the window title or clear the screen), and the first
//! failure to write remembered, so the command ends with one line and exit 2 (a full disk), or
//! quietly (a reader that went away: `| head`), never with a panic.

use std::io::{self, Write};
use std::sync::Mutex;

/// The first write to stdout that failed, if any.
static FAILED: Mutex<Option<io::Error>> = Mutex::new(None);

/// The escaping, failure-remembering stdout. Hold one per command (it holds stdout's lock).
pub struct Stdout {
    lock: io::StdoutLock<'static>,
    /// The bytes that ended the last write and may begin a character to escape (a C1 control's
    /// 0xC2, a bidi control's first one or two bytes): joined to the next write's.
    carry: Vec<u8>,
}

/// Stdout for a command's text.
#[must_use]
pub fn stdout() -> Stdout {
    Stdout {
        lock: io::stdout().lock(),
        carry: Vec::new(),
    }
}

/// What went wrong writing stdout, once; `None` if every write landed. Flushes first.
pub fn failure() -> Option<io::Error> {
    if let Err(e) = io::stdout().lock().flush() {
        remember(&e);
    }
    FAILED.lock().ok()?.take()
}

fn remember(error: &io::Error) {
    if let Ok(mut failed) = FAILED.lock()
        && failed.is_none()
    {
        *failed = Some(io::Error::new(error.kind(), error.to_string()));
    }
}

/// `bytes` (after the last write's `carry`) with control characters and the Unicode bidi
/// controls written as `\u00XX` / `\u202e` (valid inside a JSON string too, where serde has
/// already escaped every C0 control), the line break and tab kept, as `text::escape_controls`
/// writes them. A character cut at the end of `bytes` waits in `carry` for the next write.
fn escape(carry: &mut Vec<u8>, bytes: &[u8]) -> Vec<u8> {
    let mut input = std::mem::take(carry);
    input.extend_from_slice(bytes);
    let whole = input.len() - unfinished(&input);
    *carry = input.split_off(whole);
    let mut out = Vec::with_capacity(input.len());
    let mut rest = input.as_slice();
    while let [first, ..] = rest {
        let (len, code) = match rest {
            [b'\n' | b'\t', ..] => (1, None),
            [b @ (0x00..=0x1f | 0x7f), ..] => (1, Some(u32::from(*b))),
            [0xc2, b @ 0x80..=0x9f, ..] => (2, Some(u32::from(*b))),
            _ => bidi_control(rest).map_or((1, None), |(len, code)| (len, Some(code))),
        };
        match code {
            Some(code) => out.extend_from_slice(format!("\\u{code:04x}").as_bytes()),
            None => out.push(*first),
        }
        rest = &rest[len..];
    }
    out
}

/// How many bytes at the end of `bytes` may be the start of a character `escape` escapes.
fn unfinished(bytes: &[u8]) -> usize {
    match bytes {
        [.., 0xe2, 0x80 | 0x81] => 2,
        [.., 0xc2 | 0xd8 | 0xe2] => 1,
        _ => 0,
    }
}

/// A bidi control at the start of `bytes` (U+061C, U+200E/F, U+202A to U+202E, U+2066 to
/// U+2069): its length in UTF-8 and its code point.
fn bidi_control(bytes: &[u8]) -> Option<(usize, u32)> {
    match bytes {
        [0xd8, 0x9c, ..] => Some((2, 0x061c)),
        [0xe2, 0x80, b @ (0x8e | 0x8f | 0xaa..=0xae), ..] => {
            Some((3, 0x2000 + u32::from(b - 0x80)))
        }
        [0xe2, 0x81, b @ 0xa6..=0xa9, ..] => Some((3, 0x2040 + u32::from(b - 0x80))),
        _ => None,
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let escaped = escape(&mut self.carry, buf);
        match self.lock.write_all(&escaped) {
            Ok(()) => Ok(buf.len()),
            Err(e) => {
                remember(&e);
                Err(e)
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        let carry = std::mem::take(&mut self.carry);
        self.lock.write_all(&carry).inspect_err(remember)?;
        self.lock.flush().inspect_err(remember)
    }
}

impl Drop for Stdout {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(text: &str) -> String {
        let mut carry = Vec::new();
        let mut bytes = Vec::new();
        // One byte at a time: a character cut between two writes is put back together.
        for b in text.as_bytes() {
            bytes.extend(escape(&mut carry, &[*b]));
        }
        bytes.extend(carry);
        let whole = escape(&mut Vec::new(), text.as_bytes());
        let text = String::from_utf8(bytes).unwrap_or_default();
        assert_eq!(text.as_bytes(), whole, "cut into bytes or written at once");
        text
    }

    #[test]
    fn terminal_escapes_are_written_as_text_and_letters_are_kept() {
        assert_eq!(
            escaped("\u{1b}]0;pwned\u{7}\u{1b}[2Jhello\n"),
            "\\u001b]0;pwned\\u0007\\u001b[2Jhello\n"
        );
        assert_eq!(escaped("a\rb\u{9b}c\td é ¢"), "a\\u000db\\u009bc\td é ¢");
    }

    #[test]
    fn bidi_controls_are_written_as_text_as_escape_controls_escapes_them() {
        // Every bidi control `text::escape_controls` escapes, in its range and at its ends.
        let tricky = "job\u{202e}txt.exe \u{2066}a\u{2069} \u{200f}\u{61c}\u{200e}\u{202a}\u{2067}";
        assert_eq!(
            escaped(tricky),
            "job\\u202etxt.exe \\u2066a\\u2069 \\u200f\\u061c\\u200e\\u202a\\u2067"
        );
        // Letters that share a bidi control's first bytes are kept: an en dash, an ellipsis,
        // an Arabic letter, a non-breaking space, a bullet, a superscript zero.
        for kept in [
            "\u{2013}", "\u{2026}", "\u{0628}", "\u{a0}", "\u{2022}", "\u{2070}",
        ] {
            assert_eq!(escaped(kept), kept);
        }
    }
}
