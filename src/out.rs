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
    /// A 0xC2 byte that ended the last write: the first half of a C1 control, or of a letter.
    pending: bool,
}

/// Stdout for a command's text.
#[must_use]
pub fn stdout() -> Stdout {
    Stdout {
        lock: io::stdout().lock(),
        pending: false,
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

/// `bytes` with control characters written as `\u00XX` (valid inside a JSON string too, where
/// serde has already escaped every C0 control), the line break and tab kept.
fn escape(bytes: &[u8], pending: &mut bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let push_escaped = |out: &mut Vec<u8>, code: u8| {
        out.extend_from_slice(format!("\\u{code:04x}").as_bytes());
    };
    for &b in bytes {
        if std::mem::take(pending) {
            if (0x80..=0x9f).contains(&b) {
                push_escaped(&mut out, b);
                continue;
            }
            out.push(0xc2);
        }
        match b {
            b'\n' | b'\t' => out.push(b),
            0x00..=0x1f | 0x7f => push_escaped(&mut out, b),
            0xc2 => *pending = true,
            _ => out.push(b),
        }
    }
    out
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let escaped = escape(buf, &mut self.pending);
        match self.lock.write_all(&escaped) {
            Ok(()) => Ok(buf.len()),
            Err(e) => {
                remember(&e);
                Err(e)
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.pending) {
            self.lock.write_all(&[0xc2]).inspect_err(remember)?;
        }
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
        let mut pending = false;
        let mut bytes = Vec::new();
        // One byte at a time: a character cut between two writes is put back together.
        for b in text.as_bytes() {
            bytes.extend(escape(&[*b], &mut pending));
        }
        if pending {
            bytes.push(0xc2);
        }
        String::from_utf8(bytes).unwrap_or_default()
    }

    #[test]
    fn terminal_escapes_are_written_as_text_and_letters_are_kept() {
        assert_eq!(
            escaped("\u{1b}]0;pwned\u{7}\u{1b}[2Jhello\n"),
            "\\u001b]0;pwned\\u0007\\u001b[2Jhello\n"
        );
        assert_eq!(escaped("a\rb\u{9b}c\td é ¢"), "a\\u000db\\u009bc\td é ¢");
    }
}
