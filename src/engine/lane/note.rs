//! A line for the timeline as a lane reports it (`Note`): its source, kind, text, chart mark and
//! moment; and the kind of a line a worker printed.

use super::super::timeline::{Committed, Fact, Kind, Mark, Source};
use crate::worker::protocol::WorkerLine;

/// A line for the timeline, as a lane reports it: where it comes from, its kind, its text, and
/// the chart mark it carries.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::engine) struct Note {
    pub source: Source,
    pub kind: Kind,
    pub text: String,
    pub mark: Option<Mark>,
    /// Its moment on the night's clock; `None`: the clock's present reading.
    pub at: Option<f64>,
    /// What it says, as data beside its words (`Entry::fact`).
    pub fact: Option<Fact>,
}

impl Note {
    pub(super) fn runner(kind: Kind, text: String) -> Self {
        Self {
            source: Source::Runner,
            kind,
            text,
            mark: None,
            at: None,
            fact: None,
        }
    }

    /// The item in flight when a worker died, and what had committed.
    pub(super) fn item(text: String, committed: Committed) -> Self {
        Self {
            source: Source::Worker,
            kind: Kind::Item,
            text,
            mark: None,
            at: None,
            fact: Some(Fact::Committed(committed)),
        }
    }

    pub(super) fn at(mut self, sim: f64) -> Self {
        self.at = Some(sim);
        self
    }

    pub(super) fn marked(mut self, mark: Mark) -> Self {
        self.mark = Some(mark);
        self
    }

    pub(super) fn saying(mut self, fact: Fact) -> Self {
        self.fact = Some(fact);
        self
    }
}

/// The timeline's kind for a line a worker printed.
pub(super) fn kind_of(line: &WorkerLine) -> Kind {
    match line {
        WorkerLine::Start { .. } => Kind::Start,
        WorkerLine::Resume(_) => Kind::Resume,
        WorkerLine::Crash { .. } => Kind::Crash,
        WorkerLine::Done { .. } => Kind::Done,
        WorkerLine::Wait { .. }
        | WorkerLine::Wrote { .. }
        | WorkerLine::Wake { .. }
        | WorkerLine::Work { .. }
        | WorkerLine::Step(_)
        | WorkerLine::Idle { .. }
        | WorkerLine::Lost { .. }
        | WorkerLine::Pause { .. }
        | WorkerLine::Relay(_)
        | WorkerLine::Point(_)
        | WorkerLine::Other(_) => Kind::Log,
    }
}

/// What the timeline shows of a line a worker printed: after a kind the timeline names
/// (`start`, `resume`, `crash`, `done`), its fields; any other line whole, as it was printed.
pub(super) fn text_of(line: &WorkerLine) -> String {
    match kind_of(line) {
        Kind::Log => line.to_string(),
        _ => line.fields(),
    }
}
