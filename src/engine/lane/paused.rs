//! The pause a lane's worker asked for at its planned task (`--pause-at`): SIGSTOPped when it
//! says `pause`, SIGCONTed when the clock reaches the moment the line names. The moment is the
//! night's, so the pause ends between the same two writes at every speed.

use super::{Lane, Note, Pauses};
use crate::base::clock::SimTime;
use crate::engine::timeline::{Fact, Kind};

impl Lane {
    /// `slot`'s worker stopped at `task`'s write until `until`: stopped for real (SIGSTOP), its
    /// schedule going on from `until` (its write given back, as after a `wake`).
    pub(super) fn paused(&mut self, slot: usize, task: u64, until: f64) -> Note {
        self.attempts[slot].sleeps_until(until);
        let pid = self.slots[slot].pid();
        self.slots[slot].hang();
        self.paused_until[slot] = Some(until);
        let secs = self.config.pause_at.map_or(0.0, |p| p.secs);
        let past_lease = self.claims() && secs > crate::worker::LEASE_SECS;
        self.pauses.landed += 1;
        self.pauses.past_lease += u32::from(past_lease);
        let worker = self.named(slot, "worker");
        let lease = if self.claims() {
            let ends = until - secs + crate::worker::LEASE_SECS;
            format!("; its lease on it ends at {}", SimTime(ends))
        } else {
            String::new()
        };
        let text = format!(
            "host pauses {worker} (SIGSTOP, pid {pid}) at {}'s write for {secs} s, until {}{lease}",
            crate::task::task_id(task),
            SimTime(until),
        );
        // At the worker's moment, which the pause's end counts from: a worker paced ahead of the
        // clock's last tick (a tick is seconds of the night at a high scale) is stopped there.
        Note {
            fact: Some(Fact::Hung),
            at: Some(until - secs),
            ..Note::runner(Kind::Notice, text)
        }
    }

    /// The operator's pause (`x` in the dashboard): the first running worker stopped until
    /// `until`, wherever it is in its work. Nothing when no worker runs.
    pub(in crate::engine) fn pause_by_hand(&mut self, until: f64) -> Option<Note> {
        let (slot, pid) = self.stop_first_running(until)?;
        let text = format!(
            "operator pauses worker {} (SIGSTOP, pid {pid}) until {}, wherever it is in its work",
            slot + 1,
            SimTime(until)
        );
        Some(Note {
            fact: Some(Fact::Hung),
            ..Note::runner(Kind::Notice, text)
        })
    }

    /// `--pause-at-rows N:SECS`: once the lane's table holds N rows, its first running job
    /// stopped (SIGSTOP to its process group) until `clock` plus the pause; once. Nothing while
    /// no job runs (between attempts): the pause waits for the next one.
    pub(in crate::engine) fn pause_at_rows_due(&mut self, clock: f64) -> Option<Note> {
        let plan = self.config.pause_at_rows?;
        let seen = self.observer.rows;
        if self.pauses.at_rows || seen < plan.rows {
            return None;
        }
        let until = clock + plan.secs;
        let (slot, pid) = self.stop_first_running(until)?;
        self.pauses.at_rows = true;
        let job = self.named(slot, "job");
        let text = format!(
            "host pauses {job} (SIGSTOP to its process group, pid {pid}) at {} rows (the table held {seen}) for {} s of the night, until {}",
            plan.rows,
            plan.secs,
            SimTime(until),
        );
        Some(Note {
            fact: Some(Fact::Hung),
            ..Note::runner(Kind::Notice, text)
        })
    }

    /// The first running worker stopped (SIGSTOP to its group) until `until`, counted as a
    /// pause that landed: its slot and pid. Nothing when no worker runs.
    fn stop_first_running(&mut self, until: f64) -> Option<(usize, i32)> {
        let slot = (0..self.config.workers).find(|&s| {
            self.slots[s].is_live()
                && self.slots[s].state() == crate::supervisor::slot::SlotState::Running
        })?;
        let pid = self.slots[slot].pid();
        self.slots[slot].hang().then_some(())?;
        self.paused_until[slot] = Some(until);
        self.pauses.landed += 1;
        Some((slot, pid))
    }

    /// `slot`'s process as the timeline names it: `worker 2` among several, `the worker` alone.
    fn named(&self, slot: usize, noun: &str) -> String {
        if self.config.workers > 1 {
            format!("{noun} {}", slot + 1)
        } else {
            format!("the {noun}")
        }
    }

    /// The pauses that landed so far.
    #[must_use]
    pub fn pauses(&self) -> Pauses {
        self.pauses
    }

    /// The earliest moment a pause ends, while one lasts.
    #[must_use]
    pub(in crate::engine) fn pause_ends(&self) -> Option<f64> {
        self.paused_until.iter().flatten().copied().reduce(f64::min)
    }

    /// Continues (SIGCONT) each worker whose pause ends by `clock`; the SIGCONT is held back
    /// while the whole night is paused (`night_paused`), as a hang's resume is.
    pub(in crate::engine) fn end_pauses(&mut self, clock: f64, night_paused: bool) -> Vec<Note> {
        let mut notes = Vec::new();
        for slot in 0..self.slots.len() {
            let due = self.paused_until.get(slot).copied().flatten();
            let Some(until) = due.filter(|&u| u <= clock + 1e-9) else {
                continue;
            };
            self.paused_until[slot] = None;
            // Its next write is one pace after the pause, not in the past.
            self.attempts[slot].rebase(until);
            let pid = self.slots[slot].pid();
            if self.slots[slot].unhang(night_paused) {
                // A job of the user's says nothing of its writes: where it stopped is unknown.
                let (who, place) = if self.config.worker.job().is_some() {
                    ("job", "")
                } else {
                    ("worker", ", before its write")
                };
                let w = self.named(slot, who);
                let text = format!("{w} continues (SIGCONT, pid {pid}) where it stopped{place}");
                notes.push(Note {
                    fact: Some(Fact::Resumed),
                    at: Some(until),
                    ..Note::runner(Kind::Notice, text)
                });
            }
        }
        notes
    }
}
