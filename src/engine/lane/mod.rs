//! A lane: one strategy (or someone else's job) on its own warehouse, its worker slots and
//! their attempts on the night's clock, and the observer reading its rows. Its state is in parts,
//! each a struct with private fields in the file that keeps it:
//!
//! - `heartbeat`: `LaneHeartbeat`, the file's beats, their age and the dead-man's switch;
//! - `kills`: `Kills`, the host's kills, the item each took, where each landed;
//! - `ends`: `Ends`, how attempts ended, and what ended the lane (`Failure`, `GaveUp`) and the
//!   restarts due;
//! - `vendor`: `LaneVendor`, the vendor its items reach, the relay, the messages there;
//! - `rows`: `RowsRead`, reading the rows as the night goes and the symptom read there;
//! - `points`: `JobPoints`, the crash points a job announces;
//! - `answers`: `LaneAnswers`, the proxy that loses commits' answers, and those it lost.
//!
//! Beside them: what its workers said (`said`), a slot's next attempt (`spawn`), where the lane
//! holds the clock (`holds`), its notes for the timeline (`note`) and its snapshot for the
//! dashboard and recordings (`snapshot`), and a worker's planned pause (`paused`). Everything outside the lane reads it through accessors.

use serde::Serialize;

use super::config::LaneConfig;
use super::config::LaneWorker;
use super::pace::{Attempt, Pace};
use super::window::KillWindows;
use crate::observer::Observer;
use crate::supervisor::slot::{Slot, SlotState};

mod answers;
mod ends;
mod heartbeat;
mod holds;
mod kept_lines;
mod kills;
mod note;
mod paused;
mod points;
mod rows;
mod said;
mod snapshot;
mod spawn;
mod vendor;

#[cfg(test)]
mod tests;

use self::answers::LaneAnswers;
use self::ends::Ends;
use self::heartbeat::LaneHeartbeat;
use self::kills::Kills;
pub(super) use self::note::Note;
pub use self::points::JobPoints;
use self::rows::RowsRead;
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
    /// What its worker claimed in its last line (`done`, or someone else's last line).
    claimed: Option<ClaimedDone>,
    /// What reading the rows told, beyond the observer's figures.
    read: RowsRead,
    /// The vendor its items reach, its relay, and the messages counted there.
    vendor: LaneVendor,
    /// The heartbeat file as the supervisor watches it, and the dead-man's switch.
    heartbeat: LaneHeartbeat,
    /// The crash points an external job announced, and its planned crash.
    points: JobPoints,
    /// Per slot, the moment its worker's pause ends while it is paused (`paused`).
    paused_until: Vec<Option<f64>>,
    /// The pauses that landed (`Pauses`).
    pauses: Pauses,
    /// How many of each attempt's own lines went on the timeline, and how many did not.
    kept_lines: kept_lines::KeptLines,
    /// The proxy that loses its commits' answers, and those it lost.
    answers: LaneAnswers,
}

/// The pauses that landed in a lane: how many, and how many of them stopped a claim worker at
/// its write for longer than its lease (the window a pause breaks a trusted lease in).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Pauses {
    pub landed: u32,
    pub past_lease: u32,
    /// Whether the pause placed by rows (`--pause-at-rows`) has landed.
    #[serde(skip)]
    pub at_rows: bool,
}

impl Lane {
    /// A lane whose workers have not started yet.
    #[must_use]
    pub fn new(config: LaneConfig) -> Self {
        let observer = match &config.worker {
            LaneWorker::Strategy(_) => Observer::new(&config.warehouse, &config.db, config.items),
            LaneWorker::Exec(job) => {
                Observer::of_job(&config.warehouse, &config.db, job.queue.clone(), &job.rows)
            }
        };
        Self {
            observer,
            heartbeat: LaneHeartbeat::new(crate::heartbeat::default_path(&config.db)),
            kills: Kills::new(&config),
            points: JobPoints::default(),
            kept_lines: kept_lines::KeptLines::default(),
            slots: (0..config.workers + usize::from(config.relays()))
                .map(|_| Slot::new())
                .collect(),
            attempts: (0..config.workers + usize::from(config.relays()))
                .map(|_| Attempt::new(crate::base::clock::NIGHT_START, Pace::per_item(0.0)))
                .collect(),
            vendor: LaneVendor::new(config.relays().then_some(config.workers)),
            paused_until: vec![None; config.workers + usize::from(config.relays())],
            pauses: Pauses::default(),
            answers: LaneAnswers::default(),
            config,
            ends: Ends::default(),
            claimed: None,
            read: RowsRead::default(),
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
    pub(in crate::engine) fn take_wrong_shape(&mut self) -> Option<crate::warehouse::StoreError> {
        self.read.take_wrong_shape()
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
        self.read.restarted_at_zero()
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
}
