//! A child's output read line by line, with each line capped: a job that prints a 300 MB line
//! (or never a newline) cannot take reclaim's memory with it. What is past the cap is read and
//! discarded as it arrives; the line kept ends in `…`. Bytes that are not UTF-8 are replaced
//! (`U+FFFD`) instead of ending the read, so a job printing binary is still drained.

use std::io::{self, BufRead, BufReader, Read};

/// The most bytes of one output line reclaim keeps (the panel, `run` and the recording show at
/// most this; a real line is well under 200).
pub const MAX_LINE: usize = 4096;

/// The lines of `reader`, each at most `MAX_LINE` bytes plus `…`.
pub struct CappedLines<R> {
    reader: BufReader<R>,
}

impl<R: Read> CappedLines<R> {
    pub fn new(reader: R) -> Self {
        Self {
            reader: BufReader::new(reader),
        }
    }

    /// The next line without its line break; `None` at the end of the stream.
    fn next_line(&mut self) -> io::Result<Option<String>> {
        let mut kept = Vec::new();
        let mut cut = false;
        let mut any = false;
        loop {
            let buf = match self.reader.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                if !any {
                    return Ok(None);
                }
                break;
            }
            any = true;
            let (part, newline) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], true),
                None => (buf, false),
            };
            let room = MAX_LINE.saturating_sub(kept.len());
            if part.len() > room {
                cut = true;
            }
            kept.extend_from_slice(&part[..part.len().min(room)]);
            let used = part.len() + usize::from(newline);
            self.reader.consume(used);
            if newline {
                break;
            }
        }
        if kept.last() == Some(&b'\r') && !cut {
            kept.pop();
        }
        let mut line = String::from_utf8_lossy(&kept).into_owned();
        if cut {
            // A character split by the cap reads as U+FFFD; drop it rather than show it.
            if line.ends_with('\u{fffd}') {
                line.pop();
            }
            line.push('…');
        }
        Ok(Some(line))
    }
}

impl<R: Read> Iterator for CappedLines<R> {
    type Item = io::Result<String>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_line().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(bytes: &[u8]) -> Vec<String> {
        CappedLines::new(bytes)
            .map(|l| l.unwrap_or_else(|e| panic!("{e}")))
            .collect()
    }

    #[test]
    fn short_lines_read_as_lines_do() {
        assert_eq!(lines(b"a\nb\r\n\nlast"), ["a", "b", "", "last"]);
        assert!(lines(b"").is_empty());
    }

    #[test]
    fn a_long_line_is_cut_with_an_ellipsis_and_the_next_line_follows() {
        let mut bytes = vec![b'x'; 3 * MAX_LINE + 17];
        bytes.extend_from_slice(b"\nnext\n");
        let read = lines(&bytes);
        assert_eq!(read.len(), 2);
        assert_eq!(read[0], format!("{}…", "x".repeat(MAX_LINE)));
        assert_eq!(read[1], "next");
    }

    #[test]
    fn bytes_that_are_not_text_are_replaced_not_the_end() {
        assert_eq!(lines(b"caf\xe9\nafter\n"), ["caf\u{fffd}", "after"]);
        // A character the cap splits is dropped, never half shown.
        let mut bytes = vec![b'x'; MAX_LINE - 1];
        bytes.extend_from_slice("é and more".as_bytes());
        assert_eq!(lines(&bytes), [format!("{}…", "x".repeat(MAX_LINE - 1))]);
    }
}
