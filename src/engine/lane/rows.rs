//! Reading a lane's rows as the night goes (`observe`), and what that reading told beyond the
//! observer's figures (`RowsRead`): an error said once, a table of the wrong shape, the writes
//! the rows include, and the symptom of a restarted worker writing task-000 again.

use std::time::{Duration, Instant};

use super::{Lane, Note};
use crate::engine::pace::Attempt;
use crate::engine::timeline::{Fact, Kind};
use crate::warehouse::StoreError;

/// How often the rows of a lane that has finished are read again.
const SETTLED_POLL: Duration = Duration::from_secs(1);

/// What reading a lane's rows told, beyond the observer's figures.
#[derive(Debug, Default)]
pub(super) struct RowsRead {
    /// When the observer last read this lane after it had finished.
    settled_at: Option<Instant>,
    /// The last observer error, so a persistent one is reported once.
    observer_error: Option<String>,
    /// The job's table or checkpoint table lacks the column it was said to have: no poll will
    /// read it, so the engine ends the night (`Engine::tick`) rather than run it untestable.
    wrong_shape: Option<StoreError>,
    /// Each slot's writes heard when the rows were last read: the rows read include them.
    observed_writes: Vec<u64>,
    /// The newest worker started was a restart (not a lane's first, not an added one).
    newest_is_restart: bool,
    /// A restarted worker's slot whose first write has not been read from the rows yet: the
    /// moment of the symptom "restarts at item zero", where a driver may want the clock.
    first_write_unread: Option<usize>,
    /// A restarted worker began again at task-000 (the symptom; an added worker starting there
    /// is a second delivery, not a restart).
    restarted_at_zero: bool,
    /// The rows have gone past the queue's items, and the timeline has said so.
    past_queue_said: bool,
    /// The rows not made by the lane's current attempts (an earlier attempt's, or there before
    /// the night), known from a read made while every write granted had been heard (the rows
    /// then held those writes and no other); `None` from an attempt's start until such a read.
    base_rows: Option<u64>,
}

impl RowsRead {
    /// A worker's attempt begins in `slot`; `restart`: it is a restart, whose first write may
    /// be task-000 again.
    pub(super) fn begins(&mut self, slot: usize, restart: bool) {
        self.newest_is_restart = restart;
        self.first_write_unread = restart.then_some(slot);
        self.base_rows = None;
    }

    /// The rows not made by the lane's current attempts, when a read has shown it.
    pub(super) fn base_rows(&self) -> Option<u64> {
        self.base_rows
    }

    /// The writes of `slot` the rows read include.
    pub(super) fn observed_writes(&self, slot: usize) -> Option<u64> {
        self.observed_writes.get(slot).copied()
    }

    /// A restarted worker's slot whose first write has not been read yet.
    pub(super) fn first_write_unread(&self) -> Option<usize> {
        self.first_write_unread
    }

    pub(super) fn restarted_at_zero(&self) -> bool {
        self.restarted_at_zero
    }

    /// The wrong shape of the job's table, once.
    pub(super) fn take_wrong_shape(&mut self) -> Option<StoreError> {
        self.wrong_shape.take()
    }
}

impl Lane {
    /// Reads what is new in the rows; returns the timeline lines that reading gives rise to.
    pub(in crate::engine) fn observe(&mut self, now: Instant) -> Vec<Note> {
        // Once a lane has finished and been read since, only a hand (sqlite3, another program)
        // can change its rows: once a second is often enough to notice, and keeps a finished
        // night nearly free.
        let finished = self.finished();
        if finished
            && (self.read.settled_at)
                .is_some_and(|at| now.saturating_duration_since(at) < SETTLED_POLL)
        {
            return Vec::new();
        }
        self.read.settled_at = finished.then_some(now);
        let mut notes = Vec::new();
        // Where the write that takes the rows past the queue falls, as the rows read so far
        // place it: the moment of that row, whenever the poll that reads it comes.
        let past_queue_at = self.row_past_items();
        // Nothing granted is unheard: the rows this poll reads hold exactly the writes heard.
        let all_heard = (self.attempts.iter()).all(|a| a.granted <= a.writes);
        let poll = match self.observer.poll() {
            Ok(poll) => {
                self.read.observer_error = None;
                poll
            }
            Err(error) if error.is_wrong_shape() => {
                self.read.wrong_shape = Some(error);
                crate::observer::Poll::default()
            }
            Err(error) => {
                // Reading is advisory (the verdict reads the rows again at the end): a failed
                // poll is reported once and retried on the next tick.
                let message = error.to_string();
                if self.read.observer_error.as_deref() != Some(message.as_str()) {
                    self.read.observer_error = Some(message.clone());
                    notes.push(Note::runner(Kind::Error, format!("observer: {message}")));
                }
                crate::observer::Poll::default()
            }
        };
        self.read.observed_writes = self.attempts.iter().map(|a| a.writes).collect();
        if all_heard && self.read.observer_error.is_none() && self.read.wrong_shape.is_none() {
            let heard = self.attempts.iter().map(|a| a.writes).sum::<u64>();
            self.read.base_rows = self.observer.rows.checked_sub(heard);
        }
        if let Some(slot) = self.read.first_write_unread
            && self.attempts[slot].writes > 0
        {
            // Its write was heard before this poll, which has read it.
            self.read.first_write_unread = None;
        }
        if poll.restarted_at_zero && self.read.newest_is_restart {
            self.read.restarted_at_zero = true;
            let text = format!(
                "worker restarts at item zero: {} written again",
                crate::base::text::escape_controls(&self.observer.key(0))
            );
            // The moment task-000 was written again: the newest attempt's first write.
            let at = self
                .attempts
                .iter()
                .map(Attempt::first_write)
                .max_by(f64::total_cmp);
            let mut note = Note::runner(Kind::Symptom, text);
            note.at = at;
            notes.push(note);
        }
        let items = self.config.items;
        if !self.read.past_queue_said && items > 0 && self.observer.rows > items {
            self.read.past_queue_said = true;
            let text = format!(
                "{}: {} rows for {items} items",
                crate::verdict::Symptom::RowsExceedQueue.seen(),
                items + 1
            );
            let mut note = Note::runner(Kind::Symptom, text).saying(Fact::PastQueue);
            let losses = self.loss_rows();
            note.at = (self.row_past_items_read(&losses))
                .or_else(|| self.row_past_items_scheduled(&losses))
                .or(past_queue_at);
            notes.push(note);
        }
        notes
    }
}
