//! A lane: one strategy on its own warehouse, its worker slots, what the observer read of its rows
//! and the heartbeat. Beside it: what its workers said (`said`), its notes for the timeline
//! (`note`), its snapshot for the dashboard and recordings (`snapshot`), its vendor and relay
//! (`vendor`), and the crash points a job announces (`points`).

use std::time::{Duration, Instant};

use serde::Serialize;

use super::config::LaneConfig;
use super::config::LaneWorker;
use super::pace::{Attempt, Pace};
use super::timeline::Kind;
use super::window::KillWindows;
use crate::observer::Observer;
use crate::supervisor::slot::{Slot, SlotState};

mod ends;
mod heartbeat;
mod holds;
mod kills;
mod note;
mod points;
mod said;
mod snapshot;
mod spawn;
mod vendor;

use self::ends::Ends;
use self::heartbeat::LaneHeartbeat;
use self::kills::Kills;
pub(super) use self::note::Note;
pub use self::points::JobPoints;
pub use self::snapshot::{LaneSnapshot, StateKind};
use self::vendor::LaneVendor;

/// The worker's own claim, parsed from its `done` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ClaimedDone {
    pub rows_written: u64,
    pub status: String,
}

/// A lane's live state.
#[derive(Debug)]
#[allow(clippy::struct_excessive_bools)] // Reason: independent facts about the lane, each its own.
pub struct Lane {
    config: LaneConfig,
    slots: Vec<Slot>,
    /// Each slot's current attempt on the sim clock (parallel to `slots`).
    attempts: Vec<Attempt>,
    observer: Observer,
    /// The host's kills of its workers and where they landed.
    kills: Kills,
    /// How its attempts ended, and what ended the lane (a failure, the supervisor giving up).
    ends: Ends,
    claimed: Option<ClaimedDone>,
    /// A restarted worker began again at task-000 (the symptom; an added worker starting there
    /// is a second delivery, not a restart).
    restarted_at_zero: bool,
    /// The newest worker started was a restart (not a lane's first, not an added one).
    newest_is_restart: bool,
    /// A restarted worker's slot whose first write has not been read from the rows yet: the
    /// moment of the symptom "restarts at item zero", where a driver may want the clock.
    first_write_unread: Option<usize>,
    /// Each slot's writes heard when the rows were last read: the rows read include them.
    observed_writes: Vec<u64>,
    /// The last observer error, so a persistent one is reported once.
    observer_error: Option<String>,
    /// The job's table or checkpoint table lacks the column it was said to have: no poll will
    /// read it, so the engine ends the night (`Engine::tick`) rather than run it untestable.
    wrong_shape: Option<crate::store::StoreError>,
    /// The vendor its items reach, its relay, and the messages counted there.
    vendor: LaneVendor,
    /// The heartbeat file as the supervisor watches it, and the dead-man's switch.
    heartbeat: LaneHeartbeat,
    /// When the observer last read this lane after it had finished.
    settled_at: Option<Instant>,
    /// The crash points an external job announced, and its planned crash.
    points: JobPoints,
}

impl Lane {
    /// A lane whose workers have not started yet.
    #[must_use]
    pub fn new(config: LaneConfig) -> Self {
        let observer = match &config.worker {
            LaneWorker::Strategy(_) => Observer::new(&config.db, config.items),
            LaneWorker::Exec(job) => {
                Observer::of_job(&config.db, job.queue.clone(), job.rows.clone())
            }
        };
        Self {
            observer,
            heartbeat: LaneHeartbeat::new(crate::heartbeat::default_path(&config.db)),
            settled_at: None,
            kills: Kills::new(&config),
            points: JobPoints::default(),
            slots: (0..config.workers + usize::from(config.relays()))
                .map(|_| Slot::new())
                .collect(),
            attempts: (0..config.workers + usize::from(config.relays()))
                .map(|_| Attempt::new(crate::base::clock::NIGHT_START, Pace::per_item(0.0)))
                .collect(),
            vendor: LaneVendor::new(config.relays().then_some(config.workers)),
            config,
            ends: Ends::default(),
            claimed: None,
            restarted_at_zero: false,
            newest_is_restart: false,
            first_write_unread: None,
            observed_writes: Vec::new(),
            observer_error: None,
            wrong_shape: None,
        }
    }

    /// The lane as the scenario or the command line configured it.
    #[must_use]
    pub fn config(&self) -> &LaneConfig {
        &self.config
    }

    /// What the observer has read of the lane's rows.
    #[must_use]
    pub fn observer(&self) -> &Observer {
        &self.observer
    }

    pub(in crate::engine) fn observer_mut(&mut self) -> &mut Observer {
        &mut self.observer
    }

    /// The vendor's seed (a night's kills' seed), set before the vendor starts.
    pub(in crate::engine) fn seed_vendor(&mut self, seed: u64) {
        self.config.vendor.seed = seed;
    }

    /// The job's planned crash is due now (once): the host kills it.
    pub(in crate::engine) fn take_crash_due(&mut self) -> bool {
        self.points.take_crash_due()
    }

    /// The kill about to land is `--kill-at-message`'s: the vendor holds a message unanswered.
    pub(in crate::engine) fn kill_at_message_is_due(&mut self) {
        self.kills.at_message_is_due();
    }

    /// Gives up on the lane before its job completed, for `why` (no progress).
    pub(in crate::engine) fn give_up_because(&mut self, why: String) {
        self.ends.no_progress(why);
    }

    /// The job's table lacks the column it was said to have (once).
    pub(in crate::engine) fn take_wrong_shape(&mut self) -> Option<crate::store::StoreError> {
        self.wrong_shape.take()
    }

    /// The lane has a vendor running.
    #[must_use]
    pub(in crate::engine) fn has_vendor(&self) -> bool {
        self.vendor.running()
    }

    /// The worker positions (the relay's last), which the engine spawns, reaps and signals.
    #[must_use]
    pub(in crate::engine) fn slots(&self) -> &[Slot] {
        &self.slots
    }

    pub(in crate::engine) fn slots_mut(&mut self) -> &mut [Slot] {
        &mut self.slots
    }

    /// Each slot's current attempt on the sim clock (parallel to `slots`).
    #[must_use]
    pub(in crate::engine) fn attempts(&self) -> &[Attempt] {
        &self.attempts
    }

    pub(in crate::engine) fn attempts_mut(&mut self) -> &mut [Attempt] {
        &mut self.attempts
    }

    /// The slots and their attempts at once, for granting writes.
    pub(in crate::engine) fn slots_and_attempts_mut(&mut self) -> (&mut [Slot], &mut [Attempt]) {
        (&mut self.slots, &mut self.attempts)
    }

    /// The host's kills of this lane's workers.
    #[must_use]
    pub fn kills(&self) -> u32 {
        self.kills.count()
    }

    /// The supervisor's restarts of this lane's workers.
    #[must_use]
    pub fn restarts(&self) -> u32 {
        self.ends.restarts()
    }

    /// What the worker claimed in its last line (`done`, or someone else's last line).
    #[must_use]
    pub fn claimed(&self) -> Option<&ClaimedDone> {
        self.claimed.as_ref()
    }

    /// The failure that ended the lane, if one did.
    #[must_use]
    pub fn failure(&self) -> Option<&str> {
        self.ends.failure()
    }

    /// The failure was a job that could not start at all (reported once, not restarted).
    #[must_use]
    pub fn start_failed(&self) -> bool {
        self.ends.start_failed()
    }

    /// Why the lane was given up on before its job completed, when not for its restart limit.
    #[must_use]
    pub fn gave_up_why(&self) -> Option<&str> {
        self.ends.gave_up_why()
    }

    /// Attempts that died on their own (an error, a lost connection), not by the host's kill.
    #[must_use]
    pub fn deaths_on_its_own(&self) -> u32 {
        self.ends.deaths_on_its_own()
    }

    /// A restarted worker began again at task-000 (the symptom).
    #[must_use]
    pub fn restarted_at_zero(&self) -> bool {
        self.restarted_at_zero
    }

    /// Where each kill landed, read from the rows once the killed worker was reaped.
    #[must_use]
    pub fn kills_in_window(&self) -> KillWindows {
        self.kills.windows()
    }

    /// The crash points an external job announced, and its planned crash.
    #[must_use]
    pub fn points(&self) -> &JobPoints {
        &self.points
    }

    /// The messages at the vendor, as last read (lanes with side effects).
    #[must_use]
    pub fn messages(&self) -> Option<crate::fake_vendor::Counts> {
        self.vendor.messages()
    }

    /// The heartbeat's age in sim seconds, when it is measured.
    #[must_use]
    pub fn heartbeat_sim_age(&self) -> Option<f64> {
        self.heartbeat.sim_age()
    }

    /// The task the newest heartbeat names.
    #[must_use]
    pub fn heartbeat_task(&self) -> Option<&str> {
        self.heartbeat.task()
    }

    /// Every worker of the lane exited 0.
    #[must_use]
    pub fn completed(&self) -> bool {
        self.slots.iter().all(|s| s.state() == SlotState::Done)
    }

    /// Nothing more will happen in this lane.
    #[must_use]
    pub fn finished(&self) -> bool {
        self.ends.failure().is_some()
            || self.slots.iter().all(|s| {
                matches!(
                    s.state(),
                    SlotState::Done | SlotState::Failed | SlotState::GaveUp
                )
            })
    }

    /// Pids of the workers alive now (running or hung).
    #[must_use]
    pub fn live_pids(&self) -> Vec<i32> {
        self.slots
            .iter()
            .filter(|s| s.is_live())
            .map(Slot::pid)
            .collect()
    }

    #[must_use]
    pub fn slot_states(&self) -> Vec<SlotState> {
        self.slots.iter().map(Slot::state).collect()
    }

    /// Liveness, the signal the postmortem's health check used: a worker process exists.
    #[must_use]
    pub fn alive(&self) -> bool {
        self.slots.iter().any(Slot::is_live)
    }

    /// SIGSTOPs the running workers; the pids stopped, comma-separated.
    pub(super) fn hang(&mut self) -> String {
        let pids: Vec<String> = (self.slots.iter_mut())
            .filter_map(|slot| slot.hang().then(|| slot.pid().to_string()))
            .collect();
        pids.join(",")
    }

    /// SIGCONTs the hung workers (held back while the night is paused); the pids, comma-separated.
    pub(super) fn unhang(&mut self, paused: bool) -> String {
        let pids: Vec<String> = (self.slots.iter_mut())
            .filter_map(|slot| slot.unhang(paused).then(|| slot.pid().to_string()))
            .collect();
        pids.join(",")
    }

    /// Reads what is new in the rows; returns the timeline lines that reading gives rise to.
    pub(super) fn observe(&mut self, now: Instant) -> Vec<Note> {
        // Once a lane has finished and been read since, only a hand (sqlite3, another program)
        // can change its rows: once a second is often enough to notice, and keeps a finished
        // night nearly free.
        let finished = self.finished();
        if finished
            && self
                .settled_at
                .is_some_and(|at| now.saturating_duration_since(at) < SETTLED_POLL)
        {
            return Vec::new();
        }
        self.settled_at = finished.then_some(now);
        let mut notes = Vec::new();
        let poll = match self.observer.poll() {
            Ok(poll) => {
                self.observer_error = None;
                poll
            }
            Err(error) if error.is_wrong_shape() => {
                self.wrong_shape = Some(error);
                crate::observer::Poll::default()
            }
            Err(error) => {
                // Reading is advisory (the verdict reads the rows again at the end): a failed
                // poll is reported once and retried on the next tick.
                let message = error.to_string();
                if self.observer_error.as_deref() != Some(message.as_str()) {
                    self.observer_error = Some(message.clone());
                    notes.push(Note::runner(Kind::Error, format!("observer: {message}")));
                }
                crate::observer::Poll::default()
            }
        };
        self.observed_writes = self.attempts.iter().map(|a| a.writes).collect();
        if let Some(slot) = self.first_write_unread
            && self.attempts[slot].writes > 0
        {
            // Its write was heard before this poll, which has read it.
            self.first_write_unread = None;
        }
        if poll.restarted_at_zero && self.newest_is_restart {
            self.restarted_at_zero = true;
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
        notes
    }
}

/// How often the rows of a lane that has finished are read again.
const SETTLED_POLL: Duration = Duration::from_secs(1);
