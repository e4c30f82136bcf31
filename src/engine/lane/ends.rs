//! How a lane's workers end and what follows: an exit the supervisor did not cause (the host's
//! reclaim, a crash point, a lost connection, a failure), a job that could not start or dies on
//! its own in a loop, and the restarts that are due within the policy's bound. What ended the
//! lane short of its job's completing is `Ends`: a failure, or the supervisor giving up, each an
//! enum saying which.

use super::{Lane, Note};
use crate::engine::timeline::{Fact, Kind, Mark, Source};
use crate::supervisor::slot::{Exit, RestartPolicy};

/// How many times in a row an external job may die on its own with no new row between before
/// the supervisor gives up on it: restarting a job that fails at once up to the restart limit
/// (prove's is 1,000) only repeats the same failure.
pub(in crate::engine) const CRASH_LOOP: u32 = 10;

/// A failure that ends the lane, with what it said.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    /// Someone else's job never got going (a command that does not exist, one that failed
    /// before its first row): reported once, not restarted.
    CouldNotStart(String),
    /// A worker exited with an error.
    Failed(String),
}

/// Why the supervisor gave up on a lane's job before it completed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum GaveUp {
    /// A restart was due past the policy's limit (said once).
    RestartLimit,
    /// The job died on its own `CRASH_LOOP` times in a row with no new row between; the words
    /// say so, with its last error.
    CrashLoop(String),
    /// No progress for `--progress-deadline`; the words say so.
    NoProgress(String),
}

/// How a lane's attempts ended, counted, and what ended the lane, if anything did.
#[derive(Debug, Default)]
pub(super) struct Ends {
    failure: Option<Failure>,
    gave_up: Option<GaveUp>,
    /// The supervisor's restarts (a relay's too).
    restarts: u32,
    /// Attempts that died on their own (an error, a lost connection), not by the host's kill.
    deaths_on_its_own: u32,
    /// An external job's attempts in a row that died on their own with no new row (`CRASH_LOOP`).
    failures_in_a_row: u32,
    /// The rows when an attempt last died on its own (`failures_in_a_row`).
    rows_at_last_failure: u64,
}

impl Ends {
    /// The failure that ended the lane, in its words.
    pub(super) fn failure(&self) -> Option<&str> {
        match self.failure.as_ref()? {
            Failure::CouldNotStart(said) | Failure::Failed(said) => Some(said),
        }
    }

    /// The failure was a job that could not start at all.
    pub(super) fn start_failed(&self) -> bool {
        matches!(self.failure, Some(Failure::CouldNotStart(_)))
    }

    /// Why the lane was given up on, when not for its restart limit.
    pub(super) fn gave_up_why(&self) -> Option<&str> {
        match self.gave_up.as_ref()? {
            GaveUp::RestartLimit => None,
            GaveUp::CrashLoop(why) | GaveUp::NoProgress(why) => Some(why),
        }
    }

    pub(super) fn restarts(&self) -> u32 {
        self.restarts
    }

    pub(super) fn deaths_on_its_own(&self) -> u32 {
        self.deaths_on_its_own
    }

    /// No progress for `--progress-deadline`: the supervisor gives up, for `why`.
    pub(super) fn no_progress(&mut self, why: String) {
        self.gave_up = Some(GaveUp::NoProgress(why));
    }

    /// An attempt died on its own with the rows at `rows`: whether that makes `CRASH_LOOP` in a
    /// row with no new row between (by any attempt, killed or not).
    fn crash_loop(&mut self, rows: u64) -> bool {
        let wrote = rows > std::mem::replace(&mut self.rows_at_last_failure, rows);
        self.failures_in_a_row = if wrote { 0 } else { self.failures_in_a_row + 1 };
        self.failures_in_a_row >= CRASH_LOOP
    }

    /// A restart is due past the policy's limit: whether that is news (it is said once).
    fn past_the_restart_limit(&mut self) -> bool {
        match self.gave_up {
            Some(GaveUp::RestartLimit | GaveUp::CrashLoop(_)) => false,
            // The workers were given up on already; a restart still due is said.
            Some(GaveUp::NoProgress(_)) => true,
            None => {
                self.gave_up = Some(GaveUp::RestartLimit);
                true
            }
        }
    }
}

impl Lane {
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
                    fact: None,
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
                let at_point = s.crashed_at().is_some();
                self.kills.counted();
                let at = sim;
                let mut notes = vec![self.in_flight(s.crashed_at())];
                self.place_kill(&[slot]);
                let kill = Note::runner(Kind::Notice, text).marked(Mark::Kill);
                notes.push(if at_point {
                    kill.saying(Fact::AtCrashPoint)
                } else {
                    kill
                });
                notes.into_iter().map(|n| n.at(at)).collect()
            }
            // The server ended its session (a restart): the job dies as a job does when its
            // database goes away, and is restarted as after a kill; what that does to the rows
            // is the strategy's to answer.
            Exit::Failed { reason, .. }
                if crate::warehouse::is_lost_reason(crate::worker::protocol::error_reason(
                    reason,
                )) =>
            {
                self.slots[slot].restart_after_failure(sim, policy);
                self.ends.deaths_on_its_own += 1;
                let text = format!(
                    "worker ended: {reason}  (pid {}); {}",
                    self.slots[slot].pid(),
                    self.restart_said(policy)
                );
                vec![Note::runner(Kind::Notice, text).at(sim)]
            }
            Exit::Failed { reason, .. } => {
                self.ends.failure = Some(Failure::Failed(reason.clone()));
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
                && self.ends.restarts == 0);
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
            self.ends.failure = Some(Failure::CouldNotStart(text.clone()));
            return vec![Note::runner(Kind::Error, text).at(sim)];
        }
        self.ends.deaths_on_its_own += 1;
        // Attempts that die on their own with no new row between them (by any attempt, killed
        // or not): a crash loop.
        if self.ends.crash_loop(self.observer.rows) {
            self.slots[slot].give_up();
            let why = format!(
                "died on its own {CRASH_LOOP} times in a row with no new row between (a crash loop; the last: {reason})"
            );
            self.ends.gave_up = Some(GaveUp::CrashLoop(format!(
                "it {why}, and the supervisor gave up"
            )));
            let text = format!("giving up: the job {why}");
            return vec![Note::runner(Kind::Error, text).at(sim)];
        }
        self.slots[slot].restart_after_failure(sim, policy);
        let text = format!(
            "{}  ({reason}, pid {}); {}",
            crate::engine::DIED_ON_ITS_OWN,
            self.slots[slot].pid(),
            self.restart_said(policy)
        );
        let note = Note::runner(Kind::Notice, text).marked(Mark::Kill);
        vec![note.saying(Fact::DiedOnItsOwn).at(sim)]
    }

    /// What a death on its own leads to: a restart as after a kill, or none (the limit reached;
    /// the restart due then gives up).
    fn restart_said(&self, policy: RestartPolicy) -> String {
        if self.ends.restarts >= policy.max {
            format!(
                "not restarted: the limit of {} restarts is reached",
                policy.max
            )
        } else {
            "restarted as after a kill".to_string()
        }
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
            if self.ends.restarts >= policy.max {
                self.slots[slot].give_up();
                if self.ends.past_the_restart_limit() {
                    let text = format!(
                        "giving up after {} restarts: the job never completed",
                        policy.max
                    );
                    notes.push(Note::runner(Kind::Error, text).at(at));
                }
                continue;
            }
            self.ends.restarts += 1;
            let attempt = self.slots[slot].attempt() + 1;
            let who = if self.vendor.is_relay(slot) {
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
