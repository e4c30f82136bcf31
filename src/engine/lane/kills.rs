//! The host's kills of a lane's workers: the SIGKILL, the item in flight it took with it, and
//! where it landed between the job's commits (its window), read from the rows the dead left.

use std::time::Instant;

use super::{Lane, Note};
use crate::engine::config::{LaneConfig, LaneWorker};
use crate::engine::timeline::{Committed, Kind, Mark};
use crate::engine::window::{KillWindow, KillWindows};
use crate::supervisor::slot::RestartPolicy;
use crate::task::{TaskBits, task_id};

/// The host's kills of a lane's workers, and what placing them needs.
#[derive(Debug)]
pub(super) struct Kills {
    /// How many (a crash point's death counts as the host's kill).
    count: u32,
    /// Where each kill landed, read from the rows once the killed worker was reaped.
    windows: KillWindows,
    /// Keys with a checkpoint and no row when the last kill was placed (`place_kill`).
    orphan_checkpoints: TaskBits,
    /// The rows the observer had counted when each slot's current attempt was spawned: more
    /// rows at its kill means the attempt had committed work. (With several workers on one
    /// queue, another worker's rows count too: the window is then a close reading, not exact.)
    rows_at_spawn: Vec<u64>,
    /// The kill about to land is `--kill-at-message`'s: the vendor holds a message unanswered.
    at_message: bool,
}

impl Kills {
    /// None yet, in a lane configured as `config`: which windows its kills can land in.
    pub(super) fn new(config: &LaneConfig) -> Self {
        let vendor = config.worker.job().is_some_and(|j| j.vendor);
        let windows = KillWindows {
            // Each item reaches a vendor before its commit: reclaim's email, or a job's own.
            sends: config.side_effect.is_some() || vendor,
            relays: config.relays() || vendor,
            relays_unknown: !config.relays() && vendor,
            // A job's own transactions are its own: reclaim cannot rule the gap out.
            rows_apart: match &config.worker {
                LaneWorker::Strategy(strategy) => strategy.checkpoints_apart(),
                LaneWorker::Exec(_) => true,
            },
            ..KillWindows::default()
        };
        Self {
            count: 0,
            windows,
            orphan_checkpoints: TaskBits::default(),
            rows_at_spawn: vec![0; config.workers + usize::from(config.relays())],
            at_message: false,
        }
    }

    pub(super) fn count(&self) -> u32 {
        self.count
    }

    pub(super) fn windows(&self) -> KillWindows {
        self.windows
    }

    /// One more kill (the host's, or a crash point's).
    pub(super) fn counted(&mut self) {
        self.count += 1;
    }

    /// A slot's next attempt starts with the rows at `rows`.
    pub(super) fn spawning(&mut self, slot: usize, rows: u64) {
        if self.rows_at_spawn.len() <= slot {
            self.rows_at_spawn.resize(slot + 1, 0);
        }
        self.rows_at_spawn[slot] = rows;
    }

    /// The rows there were when `slot`'s current attempt was spawned.
    pub(super) fn rows_at_spawn(&self, slot: usize) -> u64 {
        self.rows_at_spawn.get(slot).copied().unwrap_or(0)
    }

    /// The kill about to land is `--kill-at-message`'s.
    pub(super) fn at_message_is_due(&mut self) {
        self.at_message = true;
    }
}

impl Lane {
    /// Where the kill of `slots` landed, from the rows read after their workers were reaped.
    // INVARIANT: called after `in_flight` has read the rows to the end and before any restart
    // of these slots is spawned (restarts come later in the tick, after a delay), so the rows
    // are exactly what the killed attempts left.
    pub(super) fn place_kill(&mut self, slots: &[usize]) {
        // A key with a checkpoint and no row that had neither at the last kill: this kill landed
        // after that checkpoint's commit and before its row's (the job commits its checkpoint
        // first). Looked at before any other placement, so each kill moves the mark.
        let orphans = self.observer.checkpoints_without_row();
        let new_orphan = orphans.count_not_in(&self.kills.orphan_checkpoints) > 0;
        self.kills.orphan_checkpoints = orphans;
        let committed = slots.iter().any(|&slot| {
            self.observer.rows > self.kills.rows_at_spawn.get(slot).copied().unwrap_or(0)
        });
        // Taken first, whichever way this kill is placed, so it never carries to the next.
        let crash_landing = self.points.crash_landing();
        // The relay died at its planned point: the vendor has the message, the entry is unmarked.
        let relay_point = slots.iter().any(|&slot| {
            self.vendor.is_relay(slot)
                && (self.slots[slot].crashed_at())
                    .is_some_and(|c| c.point == crate::worker::CrashPoint::AfterRelaySend)
        });
        if relay_point {
            self.kills.at_message = false;
            self.kills.windows.add(KillWindow::AfterRelaySend);
            return;
        }
        // The item in flight reached the vendor and its row did not commit.
        if self.kills.windows.sends && self.newest_message_uncommitted() {
            self.kills.at_message = false;
            self.kills.windows.add(KillWindow::AfterSend);
            return;
        }
        // The vendor holds a message whose row had committed: a relay's send, not yet marked.
        if std::mem::take(&mut self.kills.at_message) {
            self.kills.windows.add(KillWindow::AfterRelaySend);
            return;
        }
        // The planned crash: the job waits at its point, so the point is exactly where the
        // kill landed. (A point printed before any other kill may lag what the job had already
        // committed: those kills are placed by the rows, or said unplaced.)
        // A point of the job's own name is counted on the points line (`place` keeps it) and
        // placed below, from the rows and checkpoints, like any other kill: a crash between
        // a row's commit and its checkpoint's is after-row-commit whatever the job calls it.
        if self.config.worker.job().is_some()
            && crash_landing
            && let Ok(Some(window)) = self.points.place(slots, committed)
        {
            self.kills.windows.add(window);
            return;
        }
        // A checkpoint table none of whose keys is a key of the queue (a cursor) says nothing
        // of which rows have their checkpoint: its kills are unplaced, with that reason.
        let not_keyed = self.observer.checkpoints_seen && self.observer.checkpoints_not_keyed();
        let named = self.config.worker.job().map(|job| {
            job.rows.checkpoints.is_some() && self.observer.checkpoints_seen && !not_keyed
        });
        if not_keyed && committed {
            self.kills.windows.checkpoints_not_keyed = true;
        }
        let checkpointed = match named {
            Some(true) if new_orphan => {
                self.kills.windows.after_checkpoint += 1;
                return;
            }
            // An external job whose checkpoints reclaim cannot read: a kill after a commit
            // cannot be placed before or after its checkpoint.
            Some(false) if committed => {
                self.kills.windows.add_unplaced();
                return;
            }
            Some(_) => Some(self.observer.newest_checkpointed()),
            None => self.config.worker.has_checkpoints().then(|| {
                self.observer
                    .last_task
                    .is_some_and(|task| self.observer.has_checkpoint(task))
            }),
        };
        self.kills
            .windows
            .add(KillWindow::classify(committed, checkpointed));
    }

    /// Whether the newest message at the vendor (the one it holds, at `--kill-at-message`) is
    /// of an item whose row has not committed: a kill between that send and its commit. Judged
    /// by the message's key, not by counts: a job that sends for some items only has more rows
    /// than messages while its send waits. Rows only counted name no key: then more items with
    /// a message than with a row is all there is to go by.
    fn newest_message_uncommitted(&self) -> bool {
        let newest = crate::fake_vendor::Counts::newest_task(&self.config.vendor_db());
        match newest.as_deref().map(|key| self.observer.has_key(key)) {
            None => false,
            Some(Some(committed)) => !committed,
            Some(None) => self
                .config
                .read_messages()
                .is_ok_and(|m| m.distinct > self.observer.distinct),
        }
    }

    /// The item in flight when the worker died, read fresh (after a kill the dead write
    /// nothing more): the one after the last committed, lost with the instance; or, for
    /// two-commit dead at its crash point between a task's two commits, that task half done.
    pub(super) fn in_flight(&mut self, crash: Option<crate::worker::CrashAt>) -> Note {
        // Read to the end, past every shortcut (a poll takes a bounded number of rows): where
        // the kill landed is judged from every row the dead left.
        self.observer.poll_to_the_end();
        if let Some(job) = self.config.worker.job() {
            // Someone else's job says nothing of its items: what reclaim knows is its newest row.
            let text = if job.rows.count_sql.is_some() {
                "the job's item in flight: cannot tell (--count-sql counts rows, it names no key)"
                    .to_string()
            } else {
                match &self.observer.last_key {
                    Some(key) => format!(
                        "{}  the newest row committed before the kill (which item was in flight, the job does not say)",
                        crate::base::text::escape_controls(key)
                    ),
                    None if self.observer.rows > 0 => format!(
                        "{} committed before the kill (its table is read whole on the server, so which row is newest cannot be told, nor which item was in flight)",
                        crate::base::text::count(self.observer.rows, "row", "rows")
                    ),
                    None => "no row committed before the kill".to_string(),
                }
            };
            let newest = (job.rows.count_sql.is_none())
                .then(|| self.observer.last_key.clone())
                .flatten();
            return Note::item(text, Committed::Key(newest));
        }
        let last = self.observer.last_task;
        let next = last.map_or(0, |t| t + 1);
        let between_commits = crash.is_some_and(|c| {
            c.point == crate::worker::CrashPoint::AfterRowCommit && Some(c.task) == last
        }) && self.config.worker.strategy()
            == Some(crate::worker::Strategy::TwoCommit);
        let (text, committed) = if between_commits {
            let task = task_id(next.saturating_sub(1));
            let text = format!(
                "{task}  its row committed, its checkpoint not: killed between the two commits \
                 (last committed: {task})"
            );
            (text, Some(next.saturating_sub(1)))
        } else if next < self.config.items {
            let committed = last.map_or_else(|| "none".to_string(), task_id);
            let text = format!(
                "{}  in flight, not committed (last committed: {committed})",
                task_id(next)
            );
            (text, last)
        } else {
            let task = next.saturating_sub(1);
            let text = format!("{}  committed, the last of the queue", task_id(task));
            (text, Some(task))
        };
        Note::item(text, Committed::Task(committed))
    }

    /// The host's SIGKILL to every live worker of the lane (or only to `only`), each reaped
    /// at once.
    pub(in crate::engine) fn host_kill(
        &mut self,
        now: Instant,
        sim: f64,
        policy: RestartPolicy,
        only: Option<usize>,
    ) -> Vec<Note> {
        let mut pids = Vec::new();
        let mut killed = Vec::new();
        for slot in (0..self.slots.len()).filter(|&s| only.is_none_or(|o| o == s)) {
            if self.slots[slot].host_kill(now, sim, policy).is_some() {
                self.forget_temp_beat(slot);
                pids.push(self.slots[slot].pid().to_string());
                killed.push(slot);
            }
        }
        if pids.is_empty() {
            return Vec::new();
        }
        // As after any death (`exited`): what a kill left half-committed is the next opener's.
        self.observer.release();
        self.kills.counted();
        let text = format!(
            "instance reclaimed by host  (SIGKILL, pid {})",
            pids.join(",")
        );
        let mut notes = vec![self.in_flight(None)];
        self.place_kill(&killed);
        notes.push(Note::runner(Kind::Notice, text).marked(Mark::Kill));
        notes.into_iter().map(|n| n.at(sim)).collect()
    }
}
