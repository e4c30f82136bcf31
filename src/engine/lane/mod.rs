//! A lane: one strategy on its own warehouse, its worker slots, what the observer read of its rows
//! and the heartbeat. Beside it: what its workers said (`said`), its notes for the timeline
//! (`note`), its snapshot for the dashboard and recordings (`snapshot`), its vendor and relay
//! (`vendor`), and the crash points a job announces (`points`).

use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use super::config::LaneConfig;
use super::config::LaneWorker;
use super::pace::{Attempt, Pace};
use super::timeline::Kind;
use super::watch::Watch;
use super::window::KillWindows;
use crate::base::clock::SimClock;
use crate::heartbeat;
use crate::observer::Observer;
use crate::supervisor::slot::{Slot, SlotState};
use crate::worker::protocol::ExecEnv;
use crate::worker::{Strategy, WorkerConfig};

mod holds;
mod note;
mod points;
mod said;
mod snapshot;
mod vendor;

pub(super) use self::note::Note;
pub use self::points::JobPoints;
pub use self::snapshot::{LaneSnapshot, StateKind};

/// How often a running lane's messages are read from the vendor's database.
const MESSAGES_EVERY: Duration = Duration::from_millis(200);

/// The longest claim kept from an external worker's last line.
const CLAIM_CHARS: usize = 120;

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
    pub config: LaneConfig,
    pub(super) slots: Vec<Slot>,
    /// Each slot's current attempt on the sim clock (parallel to `slots`).
    pub(super) attempts: Vec<Attempt>,
    pub observer: Observer,
    pub kills: u32,
    pub restarts: u32,
    pub claimed: Option<ClaimedDone>,
    /// Real age of the heartbeat file, when it exists.
    pub heartbeat_age: Option<Duration>,
    /// The same age in sim seconds (frozen while the night is paused).
    pub heartbeat_sim_age: Option<f64>,
    pub heartbeat_task: Option<String>,
    /// The dead-man's switch is firing.
    pub stale: bool,
    pub gave_up: bool,
    /// Why the lane was given up on before its job completed, when not for its restart limit:
    /// no progress for `--progress-deadline`, or a crash loop (`said::CRASH_LOOP`).
    pub gave_up_why: Option<String>,
    /// An external job's attempts in a row that died on their own with no new row (`CRASH_LOOP`).
    pub(super) failures_in_a_row: u32,
    /// The rows when an attempt last died on its own (`failures_in_a_row`).
    pub(super) rows_at_last_failure: u64,
    /// Attempts that died on their own (an error, a lost connection), not by the host's kill.
    pub deaths_on_its_own: u32,
    /// Keys with a checkpoint and no row when the last kill was placed (`place_kill`).
    pub(super) orphan_checkpoints: crate::task::TaskBits,
    pub failure: Option<String>,
    /// The failure was an external worker that could not start at all (a command that does not
    /// exist, one that exits at once with an error): reported once, not restarted.
    pub start_failed: bool,
    /// The heartbeat file has existed at some point this night. An external job that never
    /// writes one has no heartbeat, which is not the same as a stale one.
    pub heartbeat_seen: bool,
    /// A restarted worker began again at task-000 (the symptom; an added worker starting there
    /// is a second delivery, not a restart).
    pub restarted_at_zero: bool,
    /// The newest worker started was a restart (not a lane's first, not an added one).
    newest_is_restart: bool,
    /// A restarted worker's slot whose first write has not been read from the rows yet: the
    /// moment of the symptom "restarts at item zero", where a driver may want the clock.
    first_write_unread: Option<usize>,
    /// Each slot's writes heard when the rows were last read: the rows read include them.
    observed_writes: Vec<u64>,
    /// The moment of the newest write heard.
    last_write_sim: Option<f64>,
    /// The task of the newest write heard (`task-080`), to match a beat naming it.
    last_write_task: Option<String>,
    /// The heartbeat file's modification time when last read, and the moment on the night's
    /// clock given to that beat: the newest write heard when the beat was first seen (a beat
    /// follows its write at once, so that is its write, or one a tick later).
    beat_seen: Option<(SystemTime, f64)>,
    /// The last observer error, so a persistent one is reported once.
    pub(super) observer_error: Option<String>,
    /// The job's table or checkpoint table lacks the column it was said to have: no poll will
    /// read it, so the engine ends the night (`Engine::tick`) rather than run it untestable.
    pub(super) wrong_shape: Option<crate::store::StoreError>,
    /// The vendor this lane's side effects reach, while the night runs.
    pub(super) vendor: Option<crate::supervisor::service::Service>,
    /// The slot that runs the relay (outbox), after the workers' slots.
    pub(super) relay_slot: Option<usize>,
    /// The messages at the vendor, as last read (lanes with side effects).
    pub messages: Option<crate::fake_vendor::Counts>,
    messages_read_at: Option<Instant>,
    pub(super) heartbeat: heartbeat::Follower,
    /// When the observer last read this lane after it had finished.
    pub(super) settled_at: Option<Instant>,
    /// Where each kill landed, read from the rows once the killed worker was reaped.
    pub kills_in_window: KillWindows,
    /// The rows the observer had counted when each slot's current attempt was spawned: more
    /// rows at its kill means the attempt had committed work. (With several workers on one
    /// queue, another worker's rows count too: the window is then a close reading, not exact.)
    rows_at_spawn: Vec<u64>,
    /// The crash points an external job announced, and its planned crash.
    pub points: JobPoints,
    /// The kill about to land is `--kill-at-message`'s: the vendor holds a message unanswered.
    pub(super) killing_at_message: bool,
    /// The clock's wait on the plan's relay crash (`relay_crash_hold`).
    pub(super) relay_wait: crate::engine::stall::Wait,
    /// The outbox's pending entries when `relay_crash_hold` last looked: fewer is progress.
    pub(super) relay_pending: Option<u64>,
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
            heartbeat: heartbeat::Follower::new(heartbeat::default_path(&config.db)),
            settled_at: None,
            kills_in_window: KillWindows {
                // Each item reaches a vendor before its commit: reclaim's email, or a job's own.
                sends: config.side_effect.is_some()
                    || config.worker.job().is_some_and(|j| j.vendor),
                relays: config.relays() || config.worker.job().is_some_and(|j| j.vendor),
                relays_unknown: !config.relays() && config.worker.job().is_some_and(|j| j.vendor),
                // A job's own transactions are its own: reclaim cannot rule the gap out.
                rows_apart: match &config.worker {
                    LaneWorker::Strategy(strategy) => strategy.checkpoints_apart(),
                    LaneWorker::Exec(_) => true,
                },
                ..KillWindows::default()
            },
            rows_at_spawn: vec![0; config.workers + usize::from(config.relays())],
            points: JobPoints::default(),
            killing_at_message: false,
            relay_wait: crate::engine::stall::Wait::default(),
            relay_pending: None,
            slots: (0..config.workers + usize::from(config.relays()))
                .map(|_| Slot::new())
                .collect(),
            attempts: (0..config.workers + usize::from(config.relays()))
                .map(|_| Attempt::new(crate::base::clock::NIGHT_START, Pace::per_item(0.0)))
                .collect(),
            relay_slot: config.relays().then_some(config.workers),
            vendor: None,
            messages: None,
            messages_read_at: None,
            config,
            kills: 0,
            restarts: 0,
            claimed: None,
            heartbeat_age: None,
            heartbeat_sim_age: None,
            heartbeat_task: None,
            stale: false,
            gave_up: false,
            gave_up_why: None,
            failures_in_a_row: 0,
            rows_at_last_failure: 0,
            deaths_on_its_own: 0,
            orphan_checkpoints: crate::task::TaskBits::default(),
            failure: None,
            start_failed: false,
            heartbeat_seen: false,
            restarted_at_zero: false,
            newest_is_restart: false,
            first_write_unread: None,
            observed_writes: Vec::new(),
            last_write_sim: None,
            last_write_task: None,
            beat_seen: None,
            observer_error: None,
            wrong_shape: None,
        }
    }

    /// Every worker of the lane exited 0.
    #[must_use]
    pub fn completed(&self) -> bool {
        self.slots.iter().all(|s| s.state() == SlotState::Done)
    }

    /// Nothing more will happen in this lane.
    #[must_use]
    pub fn finished(&self) -> bool {
        self.failure.is_some()
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

    /// One more worker position (a second delivery); returns its index.
    pub(super) fn add_slot(&mut self) -> usize {
        self.slots.push(Slot::new());
        let pace = self.pace(1);
        self.attempts
            .push(Attempt::new(crate::base::clock::NIGHT_START, pace));
        self.config.workers += 1;
        self.slots.len() - 1
    }

    /// A slot's next attempt is about to start: remember how many rows there were.
    pub(super) fn spawning(&mut self, slot: usize) {
        if self.rows_at_spawn.len() <= slot {
            self.rows_at_spawn.resize(slot + 1, 0);
        }
        self.rows_at_spawn[slot] = self.observer.rows;
        self.points.spawning(slot);
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

    /// The pace of attempt `attempt` (from 1): the scenario's for it, or its last. An external
    /// job has none: it cannot be gated, so the clock never waits for it.
    #[must_use]
    pub fn pace(&self, attempt: u32) -> Pace {
        if self.config.worker.job().is_some() {
            return Pace::per_item(0.0);
        }
        let paces = &self.config.paces;
        let i = (attempt.max(1) as usize - 1).min(paces.len().saturating_sub(1));
        paces.get(i).copied().unwrap_or(Pace::per_item(0.0))
    }

    /// Whether a slot's attempts are on the clock's schedule (gated): reclaim's own workers
    /// are; someone else's job and the relay are not, so the clock never waits for them and
    /// their lines are stamped with its reading when they are heard.
    #[must_use]
    pub fn on_schedule(&self, slot: usize) -> bool {
        self.config.worker.job().is_none() && self.relay_slot != Some(slot)
    }

    /// A slot's next attempt begins at sim time `start`. The relay has no pace: its attempts
    /// are not the workers', and its restart is not the worker's restart.
    pub(super) fn begin_attempt(&mut self, slot: usize, start: f64) {
        let pace = if self.relay_slot == Some(slot) {
            Pace::per_item(0.0)
        } else {
            self.newest_is_restart = self.slots[slot].attempt() > 0;
            self.first_write_unread = self.newest_is_restart.then_some(slot);
            self.pace(self.slots[slot].attempt() + 1)
        };
        self.attempts[slot] = Attempt::new(start, pace);
        self.attempts[slot].crash_write = self.crash_write(slot);
        self.attempts[slot].claims = self.claims();
    }

    /// The command a slot's next attempt runs, and whether it is gated (reads grants on its
    /// stdin): reclaim's own worker (`exe worker ... --gated`), the lane's relay (`exe relay
    /// ...`, not gated), or the external job in its folder with its variables, at its own pace.
    pub(super) fn command(&self, slot: usize, exe: &std::path::Path) -> (Command, bool) {
        if self.relay_slot == Some(slot) {
            return (self.relay_command(slot, exe), false);
        }
        match &self.config.worker {
            LaneWorker::Strategy(strategy) => {
                let mut command = Command::new(exe);
                command.args(self.worker_config(*strategy, slot).to_args());
                crate::warehouse::pass_to(&mut command);
                (command, true)
            }
            LaneWorker::Exec(job) => {
                // The planned crash belongs to the first attempt: the restart must finish.
                let crash_at = job
                    .crash_at
                    .as_ref()
                    .filter(|_| self.slots[slot].attempt() == 0)
                    .map(|plan| format!("{}:{}", plan.key, plan.point));
                let env = ExecEnv {
                    crash_at,
                    vendor: self
                        .vendor
                        .as_ref()
                        .map(|v| format!("http://{}/messages", v.addr)),
                    db: ExecEnv::absolute(&self.config.db),
                    heartbeat: ExecEnv::absolute(self.heartbeat.path()),
                    items: self.config.items,
                    keys: (job.queue.len() <= crate::queue::MAX_LISTED as u64)
                        .then(|| ExecEnv::absolute(&crate::engine::keys_path(&self.config.db))),
                    attempt: self.slots[slot].attempt() + 1,
                    delay: if job.unpaced_restarts && self.slots[slot].attempt() > 0 {
                        std::time::Duration::ZERO
                    } else {
                        self.config.delay
                    },
                };
                let mut command = env.command(exe, &job.command);
                // On PostgreSQL the job is handed its lane's schema as libpq's variables.
                if let Some(server) = crate::warehouse::active() {
                    command.envs(crate::warehouse::pg_job::job_env(server, &self.config.db));
                }
                (command, false)
            }
        }
    }

    /// Reclaim's own worker for a slot's next attempt: gated, so the sim clock paces it.
    fn worker_config(&self, strategy: Strategy, slot: usize) -> WorkerConfig {
        let cfg = &self.config;
        WorkerConfig {
            strategy,
            db: cfg.db.clone(),
            items: cfg.items,
            delay: cfg.delay,
            heartbeat: heartbeat::default_path(&cfg.db),
            batch: cfg.batch,
            // The crash point belongs to the first attempt only: the restart must finish. The
            // relay's own point goes to the relay (`relay_command`), never to a worker.
            crash_at: cfg
                .crash_at
                .filter(|c| c.point != crate::worker::CrashPoint::AfterRelaySend)
                .filter(|_| self.slots[slot].attempt() == 0),
            sync: cfg.sync,
            supervised: true,
            gated: true,
            side_effect: cfg.side_effect,
            vendor: self.vendor.as_ref().map(|v| v.addr),
            long_item: cfg.long_item,
            split: cfg.split,
            quiet_writes: cfg.quiet_writes,
            wal_autocheckpoint: cfg.wal_autocheckpoint,
        }
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

    /// The sim time at which the heartbeat, still since its last beat, will cross `dead_man`:
    /// when the switch would fire if nothing moves. `None` while it is firing, once the lane is
    /// over, or before a beat's moment is known.
    pub(super) fn alert_moment(&self, dead_man: f64) -> Option<f64> {
        if self.stale || self.finished() {
            return None;
        }
        self.beat_seen.map(|(_, at)| at + dead_man)
    }

    /// Reads the heartbeat: its age in real and sim time, and the dead-man's switch (`dead_man`
    /// sim seconds), which fires or clears with a timeline line.
    pub(super) fn read_heartbeat(
        &mut self,
        now: Instant,
        wall: SystemTime,
        (clock, watch): (&SimClock, &Watch),
        started: Instant,
        dead_man: f64,
    ) -> Option<Note> {
        if self.finished() {
            // The job is over: its last heartbeat age stays as it was when it ended.
            self.stale = false;
            return None;
        }
        let beat = self.heartbeat.read(wall).ok();
        let ahead = beat.as_ref().map_or(Duration::ZERO, |b| b.ahead);
        self.heartbeat_seen |= beat.is_some();
        if !self.heartbeat_seen && self.config.worker.job().is_some() {
            // Nothing to measure: an external job need not keep a heartbeat, and one that does
            // not is never called stale.
            self.heartbeat_age = None;
            self.heartbeat_sim_age = None;
            return None;
        }
        // A reaped worker whose last lines are still on their way is not running: it has
        // finished (or died, and is Restarting once its exit is handled).
        let running = self.slots.iter().any(|s| {
            !s.exit_pending()
                && matches!(
                    s.state(),
                    SlotState::Running | SlotState::Hung | SlotState::Restarting
                )
        });
        // Until the first beat, the age counts from the start of the night.
        let real_age = beat
            .as_ref()
            .map_or_else(|| now.saturating_duration_since(started), |b| b.age);
        let since = now.checked_sub(real_age).unwrap_or(started);
        // A beat's moment is the write it followed: then the age is the night's own, the same
        // at every speed and load. Before any write is heard, the real silence as the
        // supervisor watched it.
        if let (Some(b), Some(write)) = (beat.as_ref(), self.last_write_sim) {
            let modified = wall.checked_sub(b.age).unwrap_or(wall);
            // A beat seen before its own write was heard (the worker's line still in the pipe)
            // took the write before it: once its task's write is heard, the beat is that one's.
            let its_write = b.task.is_some() && b.task == self.last_write_task;
            if its_write || self.beat_seen.is_none_or(|(seen, _)| seen != modified) {
                self.beat_seen = Some((modified, write));
            }
        }
        let scheduled = self.beat_seen.map(|(_, at)| at).filter(|_| beat.is_some());
        // Before a first beat, the silence counts from the lane's first start on the clock (a
        // scenario's `start_at`), never from before it: no alert for a lane yet to start.
        let first_start = (self.attempts.iter())
            .map(Attempt::started)
            .fold(f64::INFINITY, f64::min);
        let sim_age = scheduled.map_or_else(
            || {
                watch
                    .silence(clock, since, now)
                    .min((clock.now().0 - first_start).max(0.0))
            },
            |at| (clock.now().0 - at).max(0.0),
        );
        self.heartbeat_age = beat.as_ref().map(|b| b.age);
        self.heartbeat_task = beat.and_then(|b| b.task);
        self.heartbeat_sim_age = Some(sim_age);
        // INVARIANT: judged by the rule `heartbeat-check` judges by: a beat from the future
        // alerts, never passes for fresh.
        let judged = heartbeat::judge(
            ahead,
            Duration::from_secs_f64(sim_age),
            Duration::from_secs_f64(dead_man),
        );
        let stale = running && judged.alert().is_some();
        if stale && !self.stale {
            self.stale = true;
            let note = match (judged, scheduled) {
                // The moment the threshold was crossed, to the second.
                (heartbeat::Judged::Stale(_), Some(at)) => Note::runner(
                    Kind::Alert,
                    heartbeat::stale_message(Duration::from_secs_f64(dead_man)),
                )
                .at(at + dead_man),
                _ => Note::runner(Kind::Alert, judged.alert().unwrap_or_default()),
            };
            Some(note)
        } else if !stale && self.stale {
            self.stale = false;
            let note = Note::runner(Kind::Notice, "heartbeat moving again".into());
            Some(match scheduled {
                Some(at) => note.at(at),
                None => note,
            })
        } else {
            None
        }
    }
}

/// `rows_written=N` in an external worker's last line, as the postmortem's worker claimed it.
#[must_use]
pub fn claimed_rows(line: &str) -> Option<u64> {
    line.split_whitespace()
        .find_map(|word| word.strip_prefix("rows_written=")?.parse().ok())
}

/// How often the rows of a lane that has finished are read again.
const SETTLED_POLL: Duration = Duration::from_secs(1);
