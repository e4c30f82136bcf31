//! What a lane's workers said: each line read in the protocol's words (`WorkerLine`), the claim
//! and the crash point it states kept, its progress moving the attempt on, and the line put on
//! the timeline, stamped with the attempt's own present.

use super::note::{kind_of, text_of};
use super::{ClaimedDone, Lane, Note};
use crate::engine::timeline::{Kind, Source};
use crate::supervisor::slot::SlotState;
use crate::worker::protocol::{Relay, Step, WorkerLine, claimed_rows};

/// The longest claim kept from an external worker's last line.
const CLAIM_CHARS: usize = 120;

impl Lane {
    /// One line a slot's worker printed (or the end of one of its pipes): the claim and crash
    /// point it states are kept, its progress moves the attempt on, and the line goes on the
    /// timeline, stamped with the attempt's own present. The second value is a write
    /// (`wrote`): its last task and its moment.
    pub(in crate::engine) fn heard(
        &mut self,
        (slot, attempt): (usize, u32),
        stderr: bool,
        line: Option<String>,
        (clock, scale): (f64, f64),
    ) -> (Option<Note>, Option<(u64, f64)>) {
        let said = line.as_deref().filter(|_| !stderr).map(|l| self.read(l));
        // The relay's planned crash is stamped with its moment (`relay_crash_moment`), even when
        // heard before the clock got there: the stop and the kill land on one second.
        let relay_moment = (self.vendor.is_relay(slot))
            .then(|| self.relay_crash_moment())
            .flatten()
            .filter(|_| matches!(said, Some(WorkerLine::Crash { .. })));
        self.slots[slot].heard(attempt, stderr, line.as_deref());
        let current = attempt == self.slots[slot].attempt();
        if current {
            self.attempts[slot].heard(relay_moment.map_or(clock, |m| m.max(clock)));
        }
        let started = matches!(said, Some(WorkerLine::Relay(Relay::Started { .. })));
        let at = current.then(|| self.said_at(slot, relay_moment.is_some(), started));
        let Some(line) = line else {
            return (self.lines_not_kept(slot, attempt, at), None);
        };
        let worker = |kind, text| Note {
            source: Source::Worker,
            kind,
            text,
            mark: None,
            at,
            fact: None,
        };
        let Some(said) = said else {
            // A job's error naming a lock: whether reclaim's reads could have held it is said
            // beside it, in reclaim's words.
            let line = match self.observer.lock_said(&line) {
                Some(said) => format!("{line}  [{said}]"),
                None => line,
            };
            if !self.kept_lines.admit(slot, attempt) {
                return (None, None);
            }
            return (Some(worker(Kind::Stderr, line)), None);
        };
        // Someone else's crash points are counted (and the planned one carried out), never shown
        // as its words nor taken as its claim.
        if let Some(job) = self.config.worker.job()
            && let WorkerLine::Point(point) = &said
        {
            let first = self.slots[slot].attempt() == 1 && current;
            if self.points.heard(slot, point, job.crash_at.as_ref(), first) {
                let text = format!(
                    "{}  crash point {} reached: the host kills the job there",
                    crate::base::text::escape_controls(&point.key),
                    point.name
                );
                return (Some(worker(Kind::Crash, text)), None);
            }
            return (None, None);
        }
        // Every other line is its own, and the last one is its claim, shown beside what the
        // rows say.
        if self.config.worker.job().is_some() {
            let claim: String = line.chars().take(CLAIM_CHARS).collect();
            self.claimed = Some(ClaimedDone {
                rows_written: claimed_rows(&claim).unwrap_or(0),
                status: claim,
            });
        }
        match &said {
            WorkerLine::Done { rows_written, .. } => self.said_done(slot, *rows_written, current),
            WorkerLine::Crash { at } => self.slots[slot].crashing_at(*at),
            WorkerLine::Wait { need } if current => {
                self.attempts[slot].need = *need;
                return (None, None);
            }
            WorkerLine::Wake { at } if current => {
                self.attempts[slot].sleeps_until(at.0);
                return (None, None);
            }
            WorkerLine::Wrote { writes, last } if current => {
                return (None, Some(self.wrote(slot, *writes, *last)));
            }
            WorkerLine::Pause { task, until } if current => {
                return (Some(self.paused(slot, *task, until.0)), None);
            }
            WorkerLine::Wait { .. }
            | WorkerLine::Wrote { .. }
            | WorkerLine::Wake { .. }
            | WorkerLine::Pause { .. } => {
                return (None, None);
            }
            WorkerLine::Work { left_ms, .. } if current => {
                self.long_item_begins(slot, *left_ms, scale);
            }
            WorkerLine::Step(Step::Done { .. }) if current && self.attempts[slot].working() => {
                // A step finished is stamped with its own moment rather than the clock's
                // reading when it was heard.
                self.attempts[slot].stepped();
                let mut note = worker(kind_of(&said), text_of(&said));
                note.at = Some(self.attempts[slot].now());
                return (Some(note), None);
            }
            _ => {}
        }
        // A line of the worker's own (its protocol's lines are bounded by its items).
        if matches!(said, WorkerLine::Other(_)) && !self.kept_lines.admit(slot, attempt) {
            return (None, None);
        }
        let mut text = text_of(&said);
        if self.config.workers > 1 {
            text = format!("{text}  w={}", slot + 1);
        }
        (Some(worker(kind_of(&said), text)), None)
    }
}

impl Lane {
    /// A pipe of `slot`'s `attempt` closed: the lines of its own output not kept, said.
    fn lines_not_kept(&mut self, slot: usize, attempt: u32, at: Option<f64>) -> Option<Note> {
        self.kept_lines.closed(slot, attempt).map(|n| Note {
            source: Source::Runner,
            kind: Kind::Notice,
            text: super::kept_lines::KeptLines::line(n),
            mark: None,
            at,
            fact: None,
        })
    }

    /// The moment a line of `slot`'s current attempt is stamped with: its own present (the
    /// relay's planned crash's too, `planned_crash`); for the relay's first line (`started`),
    /// its start; for the relay's other lines (it has no pace of its own: it takes no sim time)
    /// the lane's, the latest moment of a worker on the schedule running or done, never before
    /// the relay's own start. At the clock's reading, the relay's `delivered=200` fell on
    /// 02:21:18 at 1x and 02:21:19 at 16x.
    fn said_at(&self, slot: usize, planned_crash: bool, started: bool) -> f64 {
        let attempt = &self.attempts[slot];
        if !self.vendor.is_relay(slot) || planned_crash {
            return attempt.now();
        }
        if started {
            // As a worker's `start` is: at the workers' moment, a restarted relay's fell on
            // 02:05:39 or 02:05:40 by how soon it was heard.
            return attempt.started();
        }
        // Workers on the schedule running or done; none (at full speed, or all of them dead
        // and waiting for a restart): the clock's reading when heard.
        let workers: Vec<f64> = (self.slots.iter().zip(&self.attempts).enumerate())
            .filter(|&(i, (s, a))| {
                self.on_schedule(i) && a.paced() && (s.is_live() || s.state() == SlotState::Done)
            })
            .map(|(_, (_, a))| a.now())
            .collect();
        if workers.is_empty() {
            return attempt.now();
        }
        workers.into_iter().fold(attempt.started(), f64::max)
    }

    /// A line a worker printed on stdout, in the protocol's words: someone else's program speaks
    /// none but its crash points.
    fn read(&self, line: &str) -> WorkerLine {
        if self.config.worker.job().is_some() {
            return WorkerLine::of_job(line);
        }
        let Ok(said) = line.parse::<WorkerLine>();
        said
    }

    /// `slot`'s current attempt committed its `writes`th item, the last of them `last`: its
    /// schedule moves on, and the heartbeat's next beat follows it. Returns the task and the
    /// write's moment.
    fn wrote(&mut self, slot: usize, writes: u64, last: u64) -> (u64, f64) {
        let a = &mut self.attempts[slot];
        a.worked(writes);
        a.writes = writes;
        a.last_task = Some(last);
        let at = a.now();
        self.heartbeat.wrote(at, last);
        (last, at)
    }

    /// `slot`'s worker said `done`, claiming `rows_written` rows: its claim, shown beside what
    /// the rows say; from the current attempt, all it has left is to exit (`Attempt::hold`).
    fn said_done(&mut self, slot: usize, rows_written: u64, current: bool) {
        self.claimed = Some(ClaimedDone {
            rows_written,
            status: "ok".into(),
        });
        if current {
            self.attempts[slot].said_done = true;
        }
    }

    /// The long item's work begins in `slot`'s current attempt (its `work` line), `left_ms` of
    /// it: on the schedule, its span in sim seconds (`scale` sim seconds a real one) and its
    /// steps left (`--split`: the work left over a step's share of it).
    fn long_item_begins(&mut self, slot: usize, left_ms: u64, scale: f64) {
        let Some(long) = self.config.long_item else {
            return;
        };
        if !self.on_schedule(slot) || !self.attempts[slot].paced() {
            return;
        }
        let secs = left_ms as f64 / 1000.0;
        let step = long.work.as_secs_f64() / self.config.split.max(1) as f64;
        let steps = if step > 0.0 {
            ((secs / step).round() as u64).max(1)
        } else {
            1
        };
        self.attempts[slot].begin_work(secs * scale, steps);
    }
}
