//! A lane: one strategy on its own warehouse, its worker slots, what the observer read of its rows
//! and the heartbeat; and the snapshot of it that the dashboard draws and a recording keeps.

use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;

use super::config::LaneConfig;
use super::config::LaneWorker;
use super::timeline::{Kind, Mark, Source};
use super::watch::Watch;
use crate::clock::SimClock;
use crate::heartbeat;
use crate::observer::Observer;
use crate::supervisor::slot::{Exit, RestartPolicy};
use crate::supervisor::slot::{Slot, SlotState};
use crate::task::task_id;
use crate::worker::protocol::{ExecEnv, Line};
use crate::worker::{Strategy, WorkerConfig};

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
#[allow(clippy::struct_excessive_bools)] // Reason: independent observed facts, not a state machine.
pub struct Lane {
    pub config: LaneConfig,
    pub(super) slots: Vec<Slot>,
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
    pub failure: Option<String>,
    /// The failure was an external worker that could not start at all (a command that does not
    /// exist, one that exits at once with an error): reported once, not restarted.
    pub start_failed: bool,
    /// The heartbeat file has existed at some point this night. An external job that never
    /// writes one has no heartbeat, which is not the same as a stale one.
    pub heartbeat_seen: bool,
    /// The last observer error, so a persistent one is reported once.
    pub(super) observer_error: Option<String>,
    /// The vendor this lane's side effects reach, while the night runs.
    pub(super) vendor: Option<crate::supervisor::service::Service>,
    /// The slot that runs the relay (outbox), after the workers' slots.
    pub(super) relay_slot: Option<usize>,
    /// The messages at the vendor, as last read (lanes with side effects).
    pub messages: Option<crate::vendor::Counts>,
    messages_read_at: Option<Instant>,
    pub(super) heartbeat: heartbeat::Follower,
    /// When the observer last read this lane after it had finished.
    pub(super) settled_at: Option<Instant>,
}

impl Lane {
    /// A lane whose workers have not started yet.
    #[must_use]
    pub fn new(config: LaneConfig) -> Self {
        let observer = match &config.worker {
            LaneWorker::Strategy(_) => Observer::new(&config.db, config.items),
            LaneWorker::Exec(job) => Observer::of_job(&config.db, config.items, job.rows.clone()),
        };
        Self {
            observer,
            heartbeat: heartbeat::Follower::new(heartbeat::default_path(&config.db)),
            settled_at: None,
            slots: (0..config.workers + usize::from(config.relays()))
                .map(|_| Slot::new())
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
            failure: None,
            start_failed: false,
            heartbeat_seen: false,
            observer_error: None,
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
        self.config.workers += 1;
        self.slots.len() - 1
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

    /// The command a slot's next attempt runs, and whether it reads pace commands on stdin:
    /// reclaim's own worker (`exe worker ...`) at `speed` times the configured pace, or the
    /// external job in its folder with its variables.
    pub(super) fn command(
        &self,
        slot: usize,
        speed: f64,
        exe: &std::path::Path,
    ) -> (Command, bool) {
        if self.relay_slot == Some(slot) {
            return (self.relay_command(slot, exe), false);
        }
        match &self.config.worker {
            LaneWorker::Strategy(strategy) => {
                let mut command = Command::new(exe);
                command.args(self.worker_config(*strategy, slot, speed).to_args());
                (command, true)
            }
            LaneWorker::Exec(job) => {
                let env = ExecEnv {
                    db: ExecEnv::absolute(&self.config.db),
                    heartbeat: ExecEnv::absolute(self.heartbeat.path()),
                    items: self.config.items,
                    attempt: self.slots[slot].attempt() + 1,
                    delay: self.config.delay,
                };
                (env.command(exe, &job.command), false)
            }
        }
    }

    /// `exe relay ...` for the relay slot's next attempt; the crash point belongs to its first.
    fn relay_command(&self, slot: usize, exe: &std::path::Path) -> Command {
        let mut command = Command::new(exe);
        command
            .arg("relay")
            .arg("--db")
            .arg(&self.config.db)
            .arg("--items")
            .arg(self.config.items.to_string())
            .arg("--idle-secs")
            .arg(
                crate::vendor::relay::SUPERVISED_IDLE_LIMIT
                    .as_secs()
                    .to_string(),
            );
        if let Some(vendor) = &self.vendor {
            command.arg("--vendor").arg(vendor.addr.to_string());
        }
        if let Some(crash) = self
            .config
            .crash_at
            .filter(|c| c.point == crate::worker::CrashPoint::AfterRelaySend)
            .filter(|_| self.slots[slot].attempt() == 0)
        {
            command.arg("--crash-at").arg(crash.to_string());
        }
        command
    }

    /// Starts the lane's vendor (`exe vendor ...`), when its items reach one.
    pub(super) fn start_vendor(&mut self, exe: &std::path::Path) -> Result<(), String> {
        if !self.config.needs_vendor() {
            return Ok(());
        }
        let modes = self.config.vendor;
        let mut command = Command::new(exe);
        command
            .arg("vendor")
            .arg("--db")
            .arg(self.config.vendor_db())
            .arg("--keys")
            .arg(modes.keys.to_string())
            .arg("--drop-responses")
            .arg(modes.drop_responses.to_string())
            .arg("--seed")
            .arg(modes.seed.to_string());
        self.vendor = Some(crate::supervisor::service::Service::start(command)?);
        Ok(())
    }

    /// Stops the vendor (the night is over, or being torn down).
    pub(super) fn stop_vendor(&mut self) {
        if let Some(mut vendor) = self.vendor.take() {
            vendor.stop();
        }
    }

    /// A relay with no worker left to feed it would wait for entries that never come: once every
    /// worker has given up or failed, the relay is ended and given up with them.
    pub(super) fn settle_relay(&mut self) {
        let Some(relay) = self.relay_slot else {
            return;
        };
        let workers_over = (0..self.slots.len())
            .filter(|&s| s != relay)
            .all(|s| matches!(self.slots[s].state(), SlotState::GaveUp | SlotState::Failed));
        if workers_over && self.slots[relay].state() != SlotState::Done {
            self.slots[relay].kill();
            self.slots[relay].give_up();
        }
    }

    /// Reads the messages at the vendor, at most every `MESSAGES_EVERY` (always with `force`).
    pub(super) fn read_messages(&mut self, now: Instant, force: bool) {
        if !self.config.needs_vendor() {
            return;
        }
        if !force
            && self
                .messages_read_at
                .is_some_and(|at| now.saturating_duration_since(at) < MESSAGES_EVERY)
        {
            return;
        }
        self.messages_read_at = Some(now);
        if let Ok(counts) = crate::vendor::Counts::read(&self.config.vendor_db(), self.config.items)
        {
            self.messages = Some(counts);
        }
    }

    /// Reclaim's own worker for a slot's next attempt, at `speed` times the configured pace.
    fn worker_config(&self, strategy: Strategy, slot: usize, speed: f64) -> WorkerConfig {
        let cfg = &self.config;
        WorkerConfig {
            strategy,
            db: cfg.db.clone(),
            items: cfg.items,
            delay: cfg.delay.div_f64(speed),
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
            side_effect: cfg.side_effect,
            vendor: self.vendor.as_ref().map(|v| v.addr),
            long_item: cfg.long_item,
            split: cfg.split,
        }
    }

    /// One line a slot's worker printed (or the end of one of its pipes): the claim and crash
    /// point it states are kept, and the line goes on the timeline.
    pub(super) fn heard(
        &mut self,
        slot: usize,
        attempt: u32,
        stderr: bool,
        line: Option<String>,
    ) -> Option<Note> {
        self.slots[slot].heard(attempt, stderr, line.as_deref());
        let line = line?;
        let worker = |kind, text| Note {
            source: Source::Worker,
            kind,
            text,
            mark: None,
        };
        if stderr {
            return Some(worker(Kind::Stderr, line));
        }
        // Someone else's program speaks no protocol: every line is its own, and the last one
        // is its claim, shown beside what the rows say.
        let said = if self.config.worker.job().is_some() {
            let claim: String = line.chars().take(CLAIM_CHARS).collect();
            self.claimed = Some(ClaimedDone {
                rows_written: claimed_rows(&claim).unwrap_or(0),
                status: claim,
            });
            Line::Other(line)
        } else {
            let Ok(said) = line.parse::<Line>();
            said
        };
        match &said {
            Line::Done { rows_written, .. } => {
                self.claimed = Some(ClaimedDone {
                    rows_written: *rows_written,
                    status: "ok".into(),
                });
            }
            Line::Crash { at } => self.slots[slot].crashing_at(*at),
            _ => {}
        }
        let mut text = said.fields();
        if self.config.workers > 1 {
            text = format!("{text}  w={}", slot + 1);
        }
        Some(worker(kind_of(&said), text))
    }

    /// What a slot's exit means for the lane: a death the supervisor did not cause is the host
    /// reclaiming the instance (or the worker's own crash point, as it said); a failure ends the
    /// lane. The host's own kills are reported by `host_kill`.
    pub(super) fn exited(
        &mut self,
        slot: usize,
        exit: &Exit,
        (now, policy): (Instant, RestartPolicy),
    ) -> Vec<Note> {
        if let (Exit::Failed { reason, code }, Some(_)) = (exit, self.config.worker.job()) {
            return self.job_failed(slot, reason, *code, (now, policy));
        }
        match exit {
            // Someone else's program says nothing the supervisor can parse; its exit is the
            // only word that it finished.
            Exit::Done if self.config.worker.job().is_some() => {
                let text = format!("exited 0  pid={}", self.slots[slot].pid());
                vec![Note {
                    source: Source::Worker,
                    kind: Kind::Done,
                    text,
                    mark: None,
                }]
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
                let mut notes: Vec<Note> = self.last_item().into_iter().collect();
                notes.push(Note::runner(Kind::Notice, text).marked(Mark::Kill));
                notes
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
    fn job_failed(
        &mut self,
        slot: usize,
        reason: &str,
        code: i32,
        (now, policy): (Instant, RestartPolicy),
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
            let reason = format!("{reason}{folder}");
            self.failure = Some(reason.clone());
            self.start_failed = true;
            let text = format!("the worker could not start: {reason}");
            return vec![Note::runner(Kind::Error, text)];
        }
        self.slots[slot].restart_after_failure(now, policy);
        let text = format!(
            "worker died on its own  ({reason}, pid {}); restarted as after a kill",
            self.slots[slot].pid()
        );
        vec![Note::runner(Kind::Notice, text).marked(Mark::Kill)]
    }

    /// The last task written, read fresh: after a kill the dead write nothing more.
    fn last_item(&mut self) -> Option<Note> {
        let _ = self.observer.poll();
        self.observer.last_task.map(|task| Note {
            source: Source::Worker,
            kind: Kind::Item,
            text: task_id(task),
            mark: None,
        })
    }

    /// A SIGKILL between a worker's creating its temporary beat and renaming it leaves the
    /// temporary file behind (75 of them after one stormy night). Called only for a reaped
    /// worker: dead, it can write nothing more, and the file is the one it created.
    pub(super) fn forget_temp_beat(&self, slot: usize) {
        if let Ok(pid) = u32::try_from(self.slots[slot].pid()) {
            heartbeat::remove_dead_writers_temp(self.heartbeat.path(), pid);
        }
    }

    /// The host's SIGKILL to every live worker of the lane, each reaped at once.
    pub(super) fn host_kill(&mut self, now: Instant, policy: RestartPolicy) -> Vec<Note> {
        let mut pids = Vec::new();
        for slot in 0..self.slots.len() {
            if self.slots[slot].host_kill(now, policy).is_some() {
                self.forget_temp_beat(slot);
                pids.push(self.slots[slot].pid().to_string());
            }
        }
        if pids.is_empty() {
            return Vec::new();
        }
        self.kills += 1;
        let text = format!(
            "instance reclaimed by host  (SIGKILL, pid {})",
            pids.join(",")
        );
        let mut notes: Vec<Note> = self.last_item().into_iter().collect();
        notes.push(Note::runner(Kind::Notice, text).marked(Mark::Kill));
        notes
    }

    /// The slots whose restart is due now, within the policy's bound; past it, the lane gives up
    /// (said once).
    pub(super) fn due_restarts(
        &mut self,
        now: Instant,
        policy: RestartPolicy,
    ) -> (Vec<usize>, Vec<Note>) {
        let (mut due, mut notes) = (Vec::new(), Vec::new());
        for slot in 0..self.slots.len() {
            if !self.slots[slot].restart_is_due(now) {
                continue;
            }
            if self.restarts >= policy.max {
                self.slots[slot].give_up();
                if !std::mem::replace(&mut self.gave_up, true) {
                    let text = format!(
                        "giving up after {} restarts: the job never completed",
                        policy.max
                    );
                    notes.push(Note::runner(Kind::Error, text));
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
            notes.push(Note::runner(Kind::Notice, text).marked(Mark::Restart));
            due.push(slot);
        }
        (due, notes)
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
        if poll.restarted_at_zero {
            let text = "worker restarts at item zero: task-000 written again".to_string();
            notes.push(Note::runner(Kind::Symptom, text));
        }
        notes
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
        let sim_age = watch.silence(clock, since, now);
        self.heartbeat_age = beat.as_ref().map(|b| b.age);
        self.heartbeat_task = beat.and_then(|b| b.task);
        self.heartbeat_sim_age = Some(sim_age);
        let stale = running && sim_age > dead_man;
        if stale && !self.stale {
            self.stale = true;
            let message = heartbeat::stale_message(Duration::from_secs_f64(sim_age));
            Some(Note::runner(Kind::Alert, message))
        } else if !stale && self.stale {
            self.stale = false;
            Some(Note::runner(Kind::Notice, "heartbeat moving again".into()))
        } else {
            None
        }
    }
}

/// A line for the timeline, as a lane reports it: where it comes from, its kind, its text, and
/// the chart mark it carries.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Note {
    pub source: Source,
    pub kind: Kind,
    pub text: String,
    pub mark: Option<Mark>,
}

impl Note {
    fn runner(kind: Kind, text: String) -> Self {
        Self {
            source: Source::Runner,
            kind,
            text,
            mark: None,
        }
    }

    fn marked(mut self, mark: Mark) -> Self {
        self.mark = Some(mark);
        self
    }
}

/// The timeline's kind for a line a worker printed.
fn kind_of(line: &Line) -> Kind {
    match line {
        Line::Start { .. } => Kind::Start,
        Line::Resume(_) => Kind::Resume,
        Line::Crash { .. } => Kind::Crash,
        Line::Done { .. } => Kind::Done,
        Line::Other(_) => Kind::Log,
    }
}

/// `rows_written=N` in an external worker's last line, as the postmortem's worker claimed it.
fn claimed_rows(line: &str) -> Option<u64> {
    line.split_whitespace()
        .find_map(|word| word.strip_prefix("rows_written=")?.parse().ok())
}

/// How often the rows of a lane that has finished are read again.
const SETTLED_POLL: Duration = Duration::from_secs(1);

/// What a lane's panel says about its workers, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateKind {
    Running,
    Hung,
    Restarting,
    Done,
    Failed,
}

/// A lane at one moment: what the dashboard shows and what a recording keeps.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[allow(clippy::struct_excessive_bools)] // Reason: independent observed facts, recorded as such.
pub struct LaneSnapshot {
    pub rows: u64,
    pub distinct: u64,
    pub duplicated: u64,
    /// `None` for strategies without a checkpoints table.
    pub checkpoints: Option<u64>,
    /// Heartbeat age in sim seconds.
    pub heartbeat_age: Option<f64>,
    /// A worker process exists.
    pub alive: bool,
    /// The heartbeat is younger than the dead-man's threshold.
    pub progress: bool,
    /// The dead-man's switch is firing.
    pub stale: bool,
    /// `running pid 1234`, `killed by SIGKILL, restarting`, ...
    pub state: String,
    pub state_kind: StateKind,
    pub task: Option<String>,
    pub restarts: u32,
    pub kills: u32,
    pub workers: usize,
    pub claimed: Option<ClaimedDone>,
    pub restarted_at_zero: bool,
    /// An external job that has not written its heartbeat file (yet): no progress signal at
    /// all, which the panel says instead of "stale".
    #[serde(default)]
    pub no_heartbeat: bool,
    /// The messages at the lane's vendor (a lane with a side effect or an outbox).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<crate::vendor::Counts>,
}

impl LaneSnapshot {
    /// Nothing more will happen in the lane: every worker is done, failed or out of restarts.
    #[must_use]
    pub fn finished(&self) -> bool {
        matches!(self.state_kind, StateKind::Done | StateKind::Failed)
    }
}

impl Lane {
    /// The lane as its panel shows it now.
    #[must_use]
    pub fn snapshot(&self, dead_man: f64) -> LaneSnapshot {
        let o = &self.observer;
        let states = self.slot_states();
        let pids = self
            .live_pids()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let (state, state_kind) = if let Some(failure) = &self.failure {
            (format!("failed: {failure}"), StateKind::Failed)
        } else if states.contains(&SlotState::Hung) {
            (format!("hung (SIGSTOP) pid {pids}"), StateKind::Hung)
        } else if states.contains(&SlotState::Running) {
            (format!("running pid {pids}"), StateKind::Running)
        } else if states.contains(&SlotState::Restarting) {
            (
                "killed by SIGKILL, restarting".into(),
                StateKind::Restarting,
            )
        } else if states.contains(&SlotState::GaveUp) {
            (
                format!("gave up after {} restarts", self.restarts),
                StateKind::Failed,
            )
        } else {
            ("done".into(), StateKind::Done)
        };
        LaneSnapshot {
            rows: o.rows,
            distinct: o.distinct,
            duplicated: o.duplicated,
            checkpoints: self
                .config
                .worker
                .has_checkpoints()
                .then_some(o.checkpoints),
            no_heartbeat: !self.heartbeat_seen && self.config.worker.job().is_some(),
            heartbeat_age: self.heartbeat_sim_age,
            alive: self.alive(),
            progress: self.heartbeat_sim_age.is_some_and(|age| age <= dead_man),
            stale: self.stale,
            state,
            state_kind,
            task: o.last_task.map(task_id),
            restarts: self.restarts,
            kills: self.kills,
            workers: self.config.workers,
            claimed: self.claimed.clone(),
            restarted_at_zero: o.restarted_at_zero,
            messages: self.messages,
        }
    }
}
