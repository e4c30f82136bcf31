//! What a lane's workers said and how they ended: their lines (the claim, the crash point they
//! named), their exits, the host's kills and where they landed, and the restarts that are due,
//! each as notes for the timeline.

use crate::engine::timeline::{Committed, Kind, Mark, Source};
use crate::engine::window::KillWindow;
use crate::heartbeat;
use crate::supervisor::slot::{Exit, RestartPolicy};
use crate::task::task_id;
use crate::worker::protocol::{Step, WorkerLine, claimed_rows};
use std::time::Instant;

use super::note::{kind_of, text_of};
use super::{CLAIM_CHARS, ClaimedDone, Lane, Note};

/// How many times in a row an external job may die on its own with no new row between before
/// the supervisor gives up on it: restarting a job that fails at once up to the restart limit
/// (prove's is 1,000) only repeats the same failure.
pub(in crate::engine) const CRASH_LOOP: u32 = 10;

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
        let new_orphan = orphans.count_not_in(&self.orphan_checkpoints) > 0;
        self.orphan_checkpoints = orphans;
        let committed = slots
            .iter()
            .any(|&slot| self.observer.rows > self.rows_at_spawn.get(slot).copied().unwrap_or(0));
        // Taken first, whichever way this kill is placed, so it never carries to the next.
        let crash_landing = self.points.crash_landing();
        // The relay died at its planned point: the vendor has the message, the entry is unmarked.
        let relay_point = slots.iter().any(|&slot| {
            self.relay_slot == Some(slot)
                && (self.slots[slot].crashed_at())
                    .is_some_and(|c| c.point == crate::worker::CrashPoint::AfterRelaySend)
        });
        if relay_point {
            self.killing_at_message = false;
            self.kills_in_window.add(KillWindow::AfterRelaySend);
            return;
        }
        // The item in flight reached the vendor and its row did not commit.
        if self.kills_in_window.sends && self.newest_message_uncommitted() {
            self.killing_at_message = false;
            self.kills_in_window.add(KillWindow::AfterSend);
            return;
        }
        // The vendor holds a message whose row had committed: a relay's send, not yet marked.
        if std::mem::take(&mut self.killing_at_message) {
            self.kills_in_window.add(KillWindow::AfterRelaySend);
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
            self.kills_in_window.add(window);
            return;
        }
        // A checkpoint table none of whose keys is a key of the queue (a cursor) says nothing
        // of which rows have their checkpoint: its kills are unplaced, with that reason.
        let not_keyed = self.observer.checkpoints_seen && self.observer.checkpoints_not_keyed();
        let named = self.config.worker.job().map(|job| {
            job.rows.checkpoints.is_some() && self.observer.checkpoints_seen && !not_keyed
        });
        if not_keyed && committed {
            self.kills_in_window.checkpoints_not_keyed = true;
        }
        let checkpointed = match named {
            Some(true) if new_orphan => {
                self.kills_in_window.after_checkpoint += 1;
                return;
            }
            // An external job whose checkpoints reclaim cannot read: a kill after a commit
            // cannot be placed before or after its checkpoint.
            Some(false) if committed => {
                self.kills_in_window.add_unplaced();
                return;
            }
            Some(_) => Some(self.observer.newest_checkpointed()),
            None => self.config.worker.has_checkpoints().then(|| {
                self.observer
                    .last_task
                    .is_some_and(|task| self.observer.has_checkpoint(task))
            }),
        };
        self.kills_in_window
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
        let relay_moment = (self.relay_slot == Some(slot))
            .then(|| self.relay_crash_moment())
            .flatten()
            .filter(|_| matches!(said, Some(WorkerLine::Crash { .. })));
        self.slots[slot].heard(attempt, stderr, line.as_deref());
        let current = attempt == self.slots[slot].attempt();
        if current {
            self.attempts[slot].heard(relay_moment.map_or(clock, |m| m.max(clock)));
        }
        let at = current.then(|| self.attempts[slot].now());
        let Some(line) = line else {
            return (None, None);
        };
        let worker = |kind, text| Note {
            source: Source::Worker,
            kind,
            text,
            mark: None,
            at,
            committed: None,
        };
        let Some(said) = said else {
            // A job's error naming a lock: whether reclaim's reads could have held it is said
            // beside it, in reclaim's words.
            let line = match self.observer.lock_said(&line) {
                Some(said) => format!("{line}  [{said}]"),
                None => line,
            };
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
            WorkerLine::Done { rows_written, .. } => {
                self.claimed = Some(ClaimedDone {
                    rows_written: *rows_written,
                    status: "ok".into(),
                });
            }
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
            WorkerLine::Wait { .. } | WorkerLine::Wrote { .. } | WorkerLine::Wake { .. } => {
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
        let mut text = text_of(&said);
        if self.config.workers > 1 {
            text = format!("{text}  w={}", slot + 1);
        }
        (Some(worker(kind_of(&said), text)), None)
    }

    /// What a slot's exit means for the lane: a death the supervisor did not cause is the host
    /// reclaiming the instance (or the worker's own crash point, as it said); a failure ends the
    /// lane. The host's own kills are reported by `host_kill`.
    pub(in crate::engine) fn exited(
        &mut self,
        slot: usize,
        exit: &Exit,
        (sim, policy): (f64, RestartPolicy),
    ) -> Vec<Note> {
        // Whatever it left half-committed is for the next opener to recover, and to see.
        self.observer.release();
        if let (Exit::Failed { reason, code }, Some(_)) = (exit, self.config.worker.job()) {
            return self.job_failed(slot, reason, *code, (sim, policy));
        }
        match exit {
            // Someone else's program says nothing the supervisor can parse; its exit is the
            // only word that it finished.
            Exit::Done if self.config.worker.job().is_some() => {
                let text = format!("exited 0  pid={}", self.slots[slot].pid());
                let mut notes = vec![Note {
                    source: Source::Worker,
                    kind: Kind::Done,
                    text,
                    mark: None,
                    at: Some(sim),
                    committed: None,
                }];
                // A planned crash the job finished without: said on the timeline (the dashboard
                // has no report to say it in), never left to pass for a night that held.
                let plan = self.config.worker.job().and_then(|j| j.crash_at.as_ref());
                if let Some(text) = plan.and_then(|plan| self.points.not_fired(plan)) {
                    notes.push(Note::runner(Kind::Notice, text).at(sim));
                }
                notes
            }
            Exit::Done | Exit::Killed { by_host: true, .. } => Vec::new(),
            Exit::Killed {
                signal,
                by_host: false,
            } => {
                let s = &self.slots[slot];
                let how = s.crashed_at().map_or_else(
                    || format!("signal {signal}"),
                    |c| format!("crash point {c}"),
                );
                let text = format!("instance reclaimed by host  ({how}, pid {})", s.pid());
                self.kills += 1;
                let at = sim;
                let mut notes = vec![self.in_flight(s.crashed_at())];
                self.place_kill(&[slot]);
                notes.push(Note::runner(Kind::Notice, text).marked(Mark::Kill));
                notes.into_iter().map(|n| n.at(at)).collect()
            }
            // The server ended its session (a restart): the job dies as a job does when its
            // database goes away, and is restarted as after a kill; what that does to the rows
            // is the strategy's to answer.
            Exit::Failed { reason, .. } if crate::warehouse::is_lost_line(reason) => {
                self.slots[slot].restart_after_failure(sim, policy);
                self.deaths_on_its_own += 1;
                let text = format!(
                    "worker ended: {reason}  (pid {}); {}",
                    self.slots[slot].pid(),
                    self.restart_said(policy)
                );
                vec![Note::runner(Kind::Notice, text).at(sim)]
            }
            Exit::Failed { reason, .. } => {
                self.failure = Some(reason.clone());
                let text = format!("worker failed: {reason}");
                vec![Note::runner(Kind::Error, text)]
            }
        }
    }

    /// An external job that exited with an error. If it never got going (the shell found no
    /// such command, or the first attempt of a lone worker failed before any row landed), that
    /// is said once and the lane ends: restarting it a hundred times would say nothing more.
    /// Otherwise it died on its own mid-job (a "database is locked", a crash of its own) and is
    /// restarted as after a kill, within the same bound.
    pub(super) fn job_failed(
        &mut self,
        slot: usize,
        reason: &str,
        code: i32,
        (sim, policy): (f64, RestartPolicy),
    ) -> Vec<Note> {
        let _ = self.observer.poll();
        // 126/127: the shell could not find or run the command.
        let never_started = matches!(code, 126 | 127)
            || (self.slots[slot].attempt() == 1
                && self.slots.len() == 1
                && self.observer.rows == 0
                && self.restarts == 0);
        if never_started {
            // A relative path in the command is the usual cause: the job runs in its
            // database's folder, not where reclaim was started.
            let folder = self.config.db.parent().map_or_else(String::new, |f| {
                format!(" (it ran with sh -c in {})", f.display())
            });
            // The shell's 126/127: the command never ran. Anything else ran, and failed before
            // its first row (at once, or after printing and working a while).
            let what = if matches!(code, 126 | 127) {
                "the worker could not start"
            } else {
                "the worker failed before its first row, so it is not restarted"
            };
            let lock =
                (self.observer.lock_said(reason)).map_or_else(String::new, |s| format!("; {s}"));
            let text = format!("{what}: {reason}{folder}{lock}");
            self.failure = Some(text.clone());
            self.start_failed = true;
            return vec![Note::runner(Kind::Error, text).at(sim)];
        }
        self.deaths_on_its_own += 1;
        // Attempts that die on their own with no new row between them (by any attempt, killed
        // or not): a crash loop.
        let wrote = self.observer.rows
            > std::mem::replace(&mut self.rows_at_last_failure, self.observer.rows);
        self.failures_in_a_row = if wrote { 0 } else { self.failures_in_a_row + 1 };
        if self.failures_in_a_row >= CRASH_LOOP {
            self.slots[slot].give_up();
            self.gave_up = true;
            let why = format!(
                "it died on its own {CRASH_LOOP} times in a row with no new row between (a crash loop; the last: {reason})"
            );
            self.gave_up_why = Some(format!("{why}, and the supervisor gave up"));
            let text = format!("giving up: the job {}", why.trim_start_matches("it "));
            return vec![Note::runner(Kind::Error, text).at(sim)];
        }
        self.slots[slot].restart_after_failure(sim, policy);
        let text = format!(
            "{}  ({reason}, pid {}); {}",
            crate::engine::DIED_ON_ITS_OWN,
            self.slots[slot].pid(),
            self.restart_said(policy)
        );
        vec![Note::runner(Kind::Notice, text).marked(Mark::Kill).at(sim)]
    }

    /// What a death on its own leads to: a restart as after a kill, or none (the limit reached;
    /// the restart due then gives up).
    fn restart_said(&self, policy: RestartPolicy) -> String {
        if self.restarts >= policy.max {
            format!(
                "not restarted: the limit of {} restarts is reached",
                policy.max
            )
        } else {
            "restarted as after a kill".to_string()
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

    /// A SIGKILL between a worker's creating its temporary beat and renaming it leaves the
    /// temporary file behind (75 of them after one stormy night). Called only for a reaped
    /// worker: dead, it can write nothing more, and the file is the one it created.
    pub(in crate::engine) fn forget_temp_beat(&self, slot: usize) {
        if let Ok(pid) = u32::try_from(self.slots[slot].pid()) {
            heartbeat::remove_dead_writers_temp(self.heartbeat.path(), pid);
        }
    }

    /// The host's SIGKILL to every live worker of the lane, each reaped at once.
    pub(in crate::engine) fn host_kill(
        &mut self,
        now: Instant,
        sim: f64,
        policy: RestartPolicy,
    ) -> Vec<Note> {
        let mut pids = Vec::new();
        let mut killed = Vec::new();
        for slot in 0..self.slots.len() {
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
        self.kills += 1;
        let text = format!(
            "instance reclaimed by host  (SIGKILL, pid {})",
            pids.join(",")
        );
        let mut notes = vec![self.in_flight(None)];
        self.place_kill(&killed);
        notes.push(Note::runner(Kind::Notice, text).marked(Mark::Kill));
        notes.into_iter().map(|n| n.at(sim)).collect()
    }

    /// The slots whose restart is due at sim time `sim`, each with its moment, within the
    /// policy's bound; past it, the lane gives up (said once).
    pub(in crate::engine) fn due_restarts(
        &mut self,
        sim: f64,
        policy: RestartPolicy,
    ) -> (Vec<(usize, f64)>, Vec<Note>) {
        let (mut due, mut notes) = (Vec::new(), Vec::new());
        for slot in 0..self.slots.len() {
            let Some(at) = self.slots[slot]
                .restart_due()
                .filter(|_| self.slots[slot].restart_is_due(sim))
            else {
                continue;
            };
            if self.restarts >= policy.max {
                self.slots[slot].give_up();
                if !std::mem::replace(&mut self.gave_up, true) {
                    let text = format!(
                        "giving up after {} restarts: the job never completed",
                        policy.max
                    );
                    notes.push(Note::runner(Kind::Error, text).at(at));
                }
                continue;
            }
            self.restarts += 1;
            let attempt = self.slots[slot].attempt() + 1;
            let who = if self.relay_slot == Some(slot) {
                "relay"
            } else {
                "worker"
            };
            let text = format!("supervisor restarts the {who} (attempt {attempt})");
            notes.push(
                Note::runner(Kind::Notice, text)
                    .marked(Mark::Restart)
                    .at(at),
            );
            due.push((slot, at));
        }
        (due, notes)
    }
}

impl Lane {
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
