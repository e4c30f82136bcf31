//! The application's error: what a command (or the dashboard) ends with when it cannot go on.
//!
//! Each layer below has its own `thiserror` enum (`PathError`, `StoreError`, `EngineError`,
//! `ScenarioError`, `RecordingError`, `WorkerError`); this one wraps them, adds what the layer
//! could not know (which file, which step) as context, and is printed by the glue as one line
//! on stderr with exit 2.

use std::io;

use thiserror::Error;

use crate::base::kept::KeptError;
use crate::base::paths::PathError;
use crate::engine::{EngineError, JobError};
use crate::fake_vendor::VendorError;
use crate::queue::QueueError;
use crate::record::RecordingError;
use crate::scenario::ScenarioError;
use crate::task::BeyondQueue;
use crate::warehouse::StoreError;
use crate::worker::WorkerError;
use crate::worker::protocol::points::PlanError;
use crate::worker::relay::RelayError;

#[derive(Debug, Error)]
pub enum Error {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error(transparent)]
    Recording(#[from] RecordingError),
    #[error(transparent)]
    Worker(#[from] WorkerError),
    #[error(transparent)]
    Vendor(#[from] VendorError),
    #[error(transparent)]
    Relay(#[from] RelayError),
    /// The user's own job (`--exec`) refused before anything was created.
    #[error(transparent)]
    Job(#[from] JobError),
    /// A queue of keys that cannot be made (`--key-format`, `--keys-from`, `--keys-sql`).
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// A kill or crash aimed at a task beyond the queue.
    #[error(transparent)]
    BeyondQueue(#[from] BeyondQueue),
    /// A crash point of the user's job (`--crash-at KEY:POINT`) that is not one.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// Input refused, in a sentence that names the value and what to do. Built only where a
    /// command refuses on purpose: there is no conversion from any string.
    #[error("{0}")]
    Refused(String),
    /// A report that could not be written as JSON: reclaim's failure, not the input's.
    #[error("cannot write {what} as JSON: {source}")]
    Json {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// An operation on the system failed; `context` says which.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    /// A caught signal ended the night early.
    #[error("stopped by {0}; every worker was killed")]
    Stopped(&'static str),
    /// A night given up on (no progress, a crash loop) before it left rows to judge: its
    /// reason, then why nothing could be judged. Exit 1, as any night that never completed.
    #[error("the job never completed: {0}")]
    NeverCompleted(String),
    /// A caught signal stopped an export: what it had written so far was removed.
    #[error("stopped by {0}; nothing was written (the part written so far was removed)")]
    StoppedWriting(&'static str),
    /// The home of kept nights, or a night's folder in it, cannot be used.
    #[error(transparent)]
    Kept(#[from] KeptError),
    /// An error that ended a night whose folder reclaim made: what became of the folder
    /// (`kept (--keep failed: ...)`), on the same line.
    #[error("{error}; its folder {folder}")]
    NightEnded { error: Box<Error>, folder: String },
    /// A worker ended with an error of its own (its last stderr line).
    #[error("the worker failed: {0}")]
    WorkerFailed(String),
    /// An external worker that never got going (no such command, an error at once).
    /// Its text says which: `the worker could not start: ...` or `... failed before its first row`.
    #[error("{0}")]
    CouldNotStart(String),
}

impl Error {
    /// For `.map_err`: `what` (the report, the map) could not be written as JSON.
    pub fn json(what: &'static str) -> impl FnOnce(serde_json::Error) -> Self {
        move |source| Self::Json { what, source }
    }

    /// The exit code: a night given up on is a verdict (it never completed, 1), not an error
    /// of input (2).
    #[must_use]
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::NeverCompleted(_) => crate::base::exit::DATA_WRONG,
            Self::NightEnded { error, .. } => error.exit_code(),
            _ => crate::base::exit::ERROR,
        }
    }
}

/// `.context("cannot ...")` on an I/O result: the failure with what was being done.
pub trait Context<T> {
    fn context(self, context: impl FnOnce() -> String) -> Result<T, Error>;
}

impl<T> Context<T> for io::Result<T> {
    fn context(self, context: impl FnOnce() -> String) -> Result<T, Error> {
        self.map_err(|source| Error::Io {
            context: context(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    /// Every `.rs` file under `dir`, as (path, text), in a stable order.
    fn sources(dir: &Path, into: &mut Vec<(String, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                sources(&path, into);
            } else if path.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                into.push((path.display().to_string(), text));
            }
        }
    }

    /// The functions clap calls to parse a value: each named by a `value_parser = PATH`
    /// attribute (the last segment of the path).
    fn value_parsers<'a>(texts: impl Iterator<Item = &'a str>) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for text in texts {
            for (at, _) in text.match_indices("value_parser = ") {
                let path: String = text[at + "value_parser = ".len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                if let Some(name) = path.rsplit("::").next().filter(|n| !n.is_empty()) {
                    names.insert(name.to_string());
                }
            }
        }
        names
    }

    /// The function whose signature reaches the end of `before`, if it does.
    fn signature_of(before: &str) -> Option<&str> {
        let at = before
            .rmatch_indices("fn ")
            .map(|(i, _)| i)
            .find(|&i| i == 0 || before[..i].ends_with(char::is_whitespace))?;
        if before[at..].contains(['{', ';']) {
            return None;
        }
        before[at + 3..]
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()
    }

    /// Each result whose error is a bare `String` in `text` (comments aside), except in the
    /// signature of a value parser: (line number, the line).
    fn stringly(text: &str, parsers: &BTreeSet<String>) -> Vec<(usize, String)> {
        let code: Vec<&str> = text
            .lines()
            .map(|l| {
                if l.trim_start().starts_with("//") {
                    ""
                } else {
                    l
                }
            })
            .collect();
        let code = code.join("\n");
        let mut found = Vec::new();
        let mut from = 0;
        while let Some(at) = code[from..].find("Result<") {
            let start = from + at;
            let open = start + "Result".len();
            from = open;
            let (mut depth, mut comma, mut close) = (0, None, None);
            for (i, c) in code[open..].char_indices() {
                match c {
                    '<' => depth += 1,
                    '>' => {
                        depth -= 1;
                        if depth == 0 {
                            close = Some(open + i);
                            break;
                        }
                    }
                    ',' if depth == 1 => comma = Some(open + i),
                    '{' | ';' => break,
                    _ => {}
                }
            }
            let (Some(comma), Some(close)) = (comma, close) else {
                continue;
            };
            if code[comma + 1..close].trim() != "String" {
                continue;
            }
            if signature_of(&code[..start]).is_some_and(|name| parsers.contains(name)) {
                continue;
            }
            let line = code[..start].matches('\n').count() + 1;
            let said = code.lines().nth(line - 1).unwrap_or_default().trim();
            found.push((line, said.to_string()));
        }
        found
    }

    /// The rule of the house: an error is a type that says what went wrong, never a bare string
    /// (which `?` once turned into "input refused", a JSON failure included). The one exception
    /// is a clap value parser, whose error clap prints as the reason a flag was refused: a
    /// function named by a `value_parser = ...` attribute.
    #[test]
    fn no_result_has_a_bare_string_error_outside_clap_value_parsers() {
        let mut files = Vec::new();
        sources(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut files,
        );
        assert!(files.len() > 50, "found only {} source files", files.len());
        let parsers = value_parsers(files.iter().map(|(_, text)| text.as_str()));
        assert!(parsers.contains("parse_delay_ms"), "{parsers:?}");
        let found: Vec<String> = files
            .iter()
            .flat_map(|(path, text)| {
                stringly(text, &parsers)
                    .into_iter()
                    .map(move |(line, said)| format!("{path}:{line}: {said}"))
            })
            .collect();
        assert!(
            found.is_empty(),
            "errors typed as a bare string (give them a thiserror type):\n{}",
            found.join("\n")
        );
    }

    #[test]
    fn the_check_finds_a_bare_string_error_in_any_shape_and_spares_a_value_parser() {
        let sample = format!(
            "#[arg(long, value_parser = crate::cli::parse_it)]\n\
             fn parse_it(t: &str) -> Result<u8, {s}> {{}}\n\
             fn inner() -> Result<Vec<Option<u8>>, {s}> {{}}\n\
             // fn commented() -> Result<u8, {s}>\n\
             pub fn split(\n    a: u8,\n) -> Result<Self, {s}> {{\n\
             let f = |x: u8| -> std::result::Result<u8, {s}> {{ Ok(x) }};\n\
             fn fine() -> io::Result<Result<u8, Error>> {{}}\n",
            s = "String"
        );
        let parsers = value_parsers(std::iter::once(sample.as_str()));
        let lines: Vec<usize> = stringly(&sample, &parsers)
            .into_iter()
            .map(|(line, _)| line)
            .collect();
        assert_eq!(lines, [3, 7, 8]);
    }
}
