//! The engine: lanes of real worker processes, the host's kill schedule, restarts, the observer
//! and the simulated clock, advanced one `tick(now)` at a time.
//!
//! The headless commands and the dashboard drive this same type; it never touches a terminal.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::Signal;
use serde::Serialize;
use thiserror::Error;

use crate::clock::{SimClock, SimTime};
use crate::heartbeat;
use crate::observer::Observer;
use crate::store::{StoreError, SyncMode};
use crate::supervisor::process;
use crate::supervisor::schedule::{KillPlan, KillSchedule};
use crate::task::task_id;
use crate::worker::{CrashAt, Strategy};

/// The dead-man's switch threshold of the postmortem's cron script, in sim seconds.
pub const DEFAULT_DEAD_MAN: f64 = 300.0;

/// One lane: a strategy, its own database, and its workers.
#[derive(Debug, Clone, Serialize)]
pub struct LaneConfig {
    pub name: String,
    pub strategy: Strategy,
    pub db: PathBuf,
    pub items: u64,
    /// Real pause after each item.
    #[serde(serialize_with = "serialize_ms")]
    pub delay: Duration,
    pub batch: u64,
    /// Workers running at once on this lane's database (duplicate delivery when above 1).
    pub workers: usize,
    pub sync: SyncMode,
    /// A crash point for each worker's first attempt.
    pub crash_at: Option<CrashAt>,
}

fn serialize_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// The night: its lanes and the host's behaviour.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub lanes: Vec<LaneConfig>,
    pub kills: KillPlan,
    /// How long the supervisor waits before restarting a dead worker (real time).
    pub restart_delay: Duration,
    /// Restarts per lane before the supervisor gives up, so a job that never finishes ends.
    pub max_restarts: u32,
    /// Sim seconds per real second.
    pub scale: f64,
    /// Heartbeat age, in sim seconds, at which the dead-man's switch fires.
    pub dead_man: f64,
    /// The `reclaim` executable that runs `worker`.
    pub exe: PathBuf,
    /// Hang every worker (SIGSTOP) once the first lane has written this task.
    pub hang: Option<HangPlan>,
    /// Delete every checkpoint of every lane once the first lane has written this task.
    pub wipe_at_task: Option<u64>,
}

/// A scheduled hang: the worker stays alive and stops making progress.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HangPlan {
    pub at_task: u64,
    /// Real time until SIGCONT; `None` hangs until someone acts.
    pub resume_after: Option<Duration>,
}

#[derive(Debug, Error)]
pub enum EngineError {
    #[error("cannot start a worker ({exe}): {source}")]
    Spawn {
        exe: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where a timeline line comes from, as in the postmortem's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Worker,
    Runner,
}

/// One line of the shared timeline: `02:11:47  runner  notice  instance reclaimed by host`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    pub sim: SimTime,
    /// Real milliseconds since the night began.
    pub real_ms: u64,
    pub lane: Option<usize>,
    pub source: Source,
    pub kind: &'static str,
    pub text: String,
    /// Kills and restarts, which the charts mark on the time axis.
    pub mark: Option<Mark>,
}

/// A moment worth marking on a chart's time axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mark {
    Kill,
    Restart,
}

impl Entry {
    /// The line with the lane's name in a column after the time, for a timeline several lanes
    /// share (the dashboard's).
    #[must_use]
    pub fn line_in_lane(&self, lane_name: &str, width: usize) -> String {
        timeline_line(
            self.sim,
            Some((lane_name, width)),
            self.source,
            self.kind,
            &self.text,
        )
    }

    /// The line in the postmortem's format; `lane_name` is appended when several lanes share
    /// the timeline.
    #[must_use]
    pub fn line(&self, lane_name: Option<&str>) -> String {
        let line = timeline_line(self.sim, None, self.source, self.kind, &self.text);
        match lane_name {
            Some(name) => format!("{line}  [{name}]"),
            None => line,
        }
    }
}

/// One timeline line, `02:11:47  runner  notice  instance reclaimed by host`, with the lane's
/// name (padded to `width`) in a column after the time when one is given. Live entries and
/// recorded events are both written by this.
#[must_use]
pub fn timeline_line(
    sim: SimTime,
    lane: Option<(&str, usize)>,
    source: Source,
    kind: &str,
    text: &str,
) -> String {
    let source = match source {
        Source::Worker => "worker",
        Source::Runner => "runner",
    };
    let lane = lane
        .map(|(name, width)| format!("{name:<width$}  "))
        .unwrap_or_default();
    format!("{sim}  {lane}{source}  {kind:<7} {text}")
}

/// What a worker process is doing, as the supervisor sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotState {
    Running,
    /// Stopped by SIGSTOP: alive, making no progress.
    Hung,
    /// Dead (killed or crashed); the supervisor restarts it when `due` comes.
    Restarting,
    /// Exited 0 after its `done` line.
    Done,
    /// Exited with an error; not restarted.
    Failed,
    /// Out of restarts (`max_restarts`).
    GaveUp,
}

/// One worker position in a lane, across its attempts.
#[derive(Debug)]
struct Slot {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    pid: i32,
    state: SlotState,
    attempt: u32,
    restart_due: Option<Instant>,
    /// Set when the supervisor itself sent the SIGKILL now being reaped.
    killed_by_host: bool,
    last_error: Option<String>,
    /// Output pipes of the current attempt not yet read to their end.
    open_pipes: u8,
    /// A reaped exit waiting for the last of its output.
    exited: Option<(std::process::ExitStatus, Instant)>,
}

impl Slot {
    /// Forgets a reaped (or about to be reaped) child: its pid must never be signalled again.
    fn release(&mut self) {
        if self.child.take().is_some() {
            process::forget(self.pid);
        }
        self.stdin = None;
    }

    fn new() -> Self {
        Self {
            open_pipes: 0,
            exited: None,
            child: None,
            stdin: None,
            pid: 0,
            state: SlotState::Restarting,
            attempt: 0,
            restart_due: None,
            killed_by_host: false,
            last_error: None,
        }
    }
}

/// The worker's own claim, parsed from its `done` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ClaimedDone {
    pub rows_written: u64,
    pub status: String,
}

/// A lane's live state.
#[derive(Debug)]
pub struct Lane {
    pub config: LaneConfig,
    slots: Vec<Slot>,
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
    /// The last observer error, so a persistent one is reported once.
    observer_error: Option<String>,
    heartbeat: heartbeat::Follower,
    /// When the observer last read this lane after it had finished.
    settled_at: Option<Instant>,
}

impl Lane {
    /// Every worker of the lane exited 0.
    #[must_use]
    pub fn completed(&self) -> bool {
        self.slots.iter().all(|s| s.state == SlotState::Done)
    }

    /// Nothing more will happen in this lane.
    #[must_use]
    pub fn finished(&self) -> bool {
        self.failure.is_some()
            || self.slots.iter().all(|s| {
                matches!(
                    s.state,
                    SlotState::Done | SlotState::Failed | SlotState::GaveUp
                )
            })
    }

    /// Pids of the workers alive now (running or hung).
    #[must_use]
    pub fn live_pids(&self) -> Vec<i32> {
        self.slots
            .iter()
            .filter(|s| s.child.is_some())
            .map(|s| s.pid)
            .collect()
    }

    #[must_use]
    pub fn slot_states(&self) -> Vec<SlotState> {
        self.slots.iter().map(|s| s.state).collect()
    }

    /// Liveness, the signal the postmortem's health check used: a worker process exists.
    #[must_use]
    pub fn alive(&self) -> bool {
        self.slots.iter().any(|s| s.child.is_some())
    }
}

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
                .strategy
                .needs()
                .checkpoints
                .then_some(o.checkpoints),
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
        }
    }
}

/// A line a worker printed, stamped when it was read.
#[derive(Debug)]
struct Output {
    lane: usize,
    slot: usize,
    /// Which attempt of the slot printed it (an old attempt's pipe may close late).
    attempt: u32,
    stderr: bool,
    /// `None` when the pipe reached its end.
    line: Option<String>,
    at: Instant,
}

/// How long a reaped worker's pipes may stay open before the engine stops waiting for its last
/// lines (a grandchild holding them, say).
const PIPE_GRACE: Duration = Duration::from_secs(1);

/// How often the rows of a lane that has finished are read again.
const SETTLED_POLL: Duration = Duration::from_secs(1);

/// A gap between two ticks longer than this means the supervisor itself was not running
/// (suspended, starved, a laptop asleep): ticks come every 2 to 20 ms.
const ABSENCE_GAP: Duration = Duration::from_secs(1);

/// At most this many absences are remembered (one per stop of reclaim itself; the oldest are
/// long past any heartbeat's last beat).
const MAX_ABSENCES: usize = 256;

/// The stretches of real time the supervisor was not watching. A heartbeat's silence is what the
/// supervisor saw: time reclaim itself was stopped is not a worker's silence (its workers, in
/// their own process groups, kept running or finished meanwhile).
#[derive(Debug, Default)]
struct Watch {
    last_tick: Option<Instant>,
    absences: Vec<(Instant, Instant)>,
}

impl Watch {
    /// Notes a tick at `now`; `continued` says reclaim was stopped and continued since the last
    /// one (SIGCONT), however briefly.
    fn tick(&mut self, now: Instant, continued: bool) {
        if let Some(last) = self.last_tick
            && (continued || now.saturating_duration_since(last) > ABSENCE_GAP)
        {
            if self.absences.len() >= MAX_ABSENCES {
                self.absences.remove(0);
            }
            self.absences.push((last, now));
        }
        self.last_tick = Some(now);
    }

    /// Sim seconds of silence from `since` (the last beat) to `now`, less the time nobody was
    /// watching.
    fn silence(&self, clock: &SimClock, since: Instant, now: Instant) -> f64 {
        let sim = |from: Instant, to: Instant| clock.at(to).0 - clock.at(from).0;
        let unwatched: f64 = self
            .absences
            .iter()
            .filter_map(|&(from, to)| {
                let (from, to) = (from.max(since), to.min(now));
                (to > from).then(|| sim(from, to))
            })
            .sum();
        (sim(since, now) - unwatched).max(0.0)
    }
}

/// The running night.
#[derive(Debug)]
pub struct Engine {
    config: EngineConfig,
    clock: SimClock,
    started: Instant,
    lanes: Vec<Lane>,
    schedule: KillSchedule,
    next_kill: Option<Instant>,
    /// How many of the plan's timed kills have fired.
    timed_kills_fired: usize,
    at_task_fired: bool,
    hang_fired: bool,
    hang_resume_at: Option<Instant>,
    wipe_fired: bool,
    timeline: Vec<Entry>,
    output_tx: Sender<Output>,
    output_rx: Receiver<Output>,
    paused_at: Option<Instant>,
    /// The workers' pace relative to their configured delay (the dashboard's speed keys).
    speed: f64,
    watch: Watch,
}

impl Engine {
    /// Builds the night and starts every lane's workers at `now`.
    pub fn start(config: EngineConfig, now: Instant) -> Result<Self, EngineError> {
        let (output_tx, output_rx) = mpsc::channel();
        let lanes = config
            .lanes
            .iter()
            .map(|lane| Lane {
                observer: Observer::new(&lane.db, lane.items),
                heartbeat: heartbeat::Follower::new(heartbeat::default_path(&lane.db)),
                settled_at: None,
                config: lane.clone(),
                slots: Vec::new(),
                kills: 0,
                restarts: 0,
                claimed: None,
                heartbeat_age: None,
                heartbeat_sim_age: None,
                heartbeat_task: None,
                stale: false,
                gave_up: false,
                failure: None,
                observer_error: None,
            })
            .collect();
        let mut engine = Self {
            clock: SimClock::new(now, config.scale),
            started: now,
            schedule: KillSchedule::new(&config.kills),
            next_kill: None,
            timed_kills_fired: 0,
            at_task_fired: false,
            hang_fired: false,
            hang_resume_at: None,
            wipe_fired: false,
            timeline: Vec::new(),
            lanes,
            config,
            output_tx,
            output_rx,
            paused_at: None,
            speed: 1.0,
            watch: Watch::default(),
        };
        for lane in 0..engine.lanes.len() {
            for _ in 0..engine.lanes[lane].config.workers {
                engine.lanes[lane].slots.push(Slot::new());
            }
            for slot in 0..engine.lanes[lane].slots.len() {
                engine.spawn(lane, slot)?;
            }
        }
        engine.arm_random_kill(now);
        Ok(engine)
    }

    #[must_use]
    pub fn clock(&self) -> &SimClock {
        &self.clock
    }

    #[must_use]
    pub fn lanes(&self) -> &[Lane] {
        &self.lanes
    }

    #[must_use]
    pub fn timeline(&self) -> &[Entry] {
        &self.timeline
    }

    #[must_use]
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Real time since the night began.
    #[must_use]
    pub fn elapsed(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.started)
    }

    /// Every lane has finished: completed, failed, or given up.
    #[must_use]
    pub fn finished(&self) -> bool {
        self.lanes.iter().all(Lane::finished)
    }

    #[must_use]
    pub fn is_paused(&self) -> bool {
        self.paused_at.is_some()
    }

    /// Whether random kills are armed (the dashboard's toggle).
    #[must_use]
    pub fn random_kills_on(&self) -> bool {
        self.schedule.remaining() > 0 || self.next_kill.is_some()
    }

    /// Turns seeded random kills on (without limit) or off.
    pub fn set_random_kills(&mut self, on: bool, now: Instant) {
        self.schedule.set_unlimited(on);
        if on {
            self.arm_random_kill(now);
        } else {
            self.next_kill = None;
        }
    }

    /// SIGSTOPs a lane's workers (alive, no progress), or SIGCONTs them if already hung.
    pub fn toggle_hang(&mut self, lane: usize, now: Instant) {
        let Some(l) = self.lanes.get(lane) else {
            return;
        };
        let hung = l.slots.iter().any(|s| s.state == SlotState::Hung);
        if hung {
            self.resume_lane(lane, now);
        } else {
            self.hang_lane(lane, now);
        }
    }

    fn hang_lane(&mut self, lane: usize, now: Instant) {
        let mut pids = Vec::new();
        for slot in &mut self.lanes[lane].slots {
            if slot.child.is_some() && slot.state == SlotState::Running {
                let _ = process::signal_group(slot.pid, Signal::SIGSTOP);
                slot.state = SlotState::Hung;
                pids.push(slot.pid.to_string());
            }
        }
        if !pids.is_empty() {
            let text = format!(
                "worker hung (SIGSTOP, pid {}): alive, no progress",
                pids.join(",")
            );
            self.log(now, Some(lane), Source::Runner, "notice", text);
        }
    }

    fn resume_lane(&mut self, lane: usize, now: Instant) {
        let paused = self.paused_at.is_some();
        let mut pids = Vec::new();
        for slot in &mut self.lanes[lane].slots {
            if slot.child.is_some() && slot.state == SlotState::Hung {
                if !paused {
                    let _ = process::signal_group(slot.pid, Signal::SIGCONT);
                }
                slot.state = SlotState::Running;
                pids.push(slot.pid.to_string());
            }
        }
        if !pids.is_empty() {
            let text = format!("worker resumed (SIGCONT, pid {})", pids.join(","));
            self.log(now, Some(lane), Source::Runner, "notice", text);
        }
    }

    /// Deletes every checkpoint of a lane's warehouse, as an operator might "to force a rerun".
    pub fn wipe_checkpoints(&mut self, lane: usize, now: Instant) -> Result<usize, String> {
        let db = self.lanes[lane].config.db.clone();
        let deleted = crate::store::wipe_checkpoints(&db)?;
        self.lanes[lane].observer.reset_checkpoints();
        self.log(
            now,
            Some(lane),
            Source::Runner,
            "notice",
            format!("operator deleted every checkpoint ({deleted} rows)"),
        );
        Ok(deleted)
    }

    /// Starts one more worker on a lane's database: duplicate delivery, as an at-least-once
    /// queue would hand the same job to a second consumer.
    pub fn add_worker(&mut self, lane: usize, now: Instant) -> Result<(), EngineError> {
        let slot = self.lanes[lane].slots.len();
        self.lanes[lane].slots.push(Slot::new());
        self.lanes[lane].config.workers += 1;
        self.log(
            now,
            Some(lane),
            Source::Runner,
            "notice",
            format!(
                "a second delivery: worker {} starts on the same queue",
                slot + 1
            ),
        );
        self.spawn(lane, slot)
    }

    fn log(
        &mut self,
        now: Instant,
        lane: Option<usize>,
        source: Source,
        kind: &'static str,
        text: String,
    ) {
        self.timeline.push(Entry {
            sim: self.clock.at(now),
            real_ms: self.elapsed(now).as_millis() as u64,
            lane,
            source,
            kind,
            text,
            mark: None,
        });
    }

    /// Marks the newest timeline entry as a kill or a restart.
    fn mark_last(&mut self, mark: Mark) {
        if let Some(entry) = self.timeline.last_mut() {
            entry.mark = Some(mark);
        }
    }

    fn spawn(&mut self, lane_index: usize, slot_index: usize) -> Result<(), EngineError> {
        let lane = &self.lanes[lane_index];
        let attempt = lane.slots[slot_index].attempt + 1;
        let cfg = &lane.config;
        let delay = cfg.delay.div_f64(self.speed);
        let mut command = Command::new(&self.config.exe);
        command
            .arg("worker")
            .args(["--strategy", cfg.strategy.name()])
            .arg("--db")
            .arg(&cfg.db)
            .args(["--items", &cfg.items.to_string()])
            .args(["--delay-ms", &format!("{}", delay.as_secs_f64() * 1000.0)])
            .args(["--batch", &cfg.batch.to_string()])
            .args([
                "--sync",
                match cfg.sync {
                    SyncMode::Normal => "normal",
                    SyncMode::Full => "full",
                },
            ])
            .arg("--supervised")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // The crash point belongs to the first attempt only: the restarted worker must finish.
        if attempt == 1
            && let Some(crash) = cfg.crash_at
        {
            command.args(["--crash-at", &crash.to_string()]);
        }
        let mut child = process::spawn(command).map_err(|source| EngineError::Spawn {
            exe: self.config.exe.clone(),
            source,
        })?;
        let pid = process::child_pid(&child);
        let mut pipes = 0;
        for (stream, stderr) in [
            (
                child
                    .stdout
                    .take()
                    .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
                false,
            ),
            (
                child
                    .stderr
                    .take()
                    .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
                true,
            ),
        ] {
            let Some(stream) = stream else { continue };
            let tx = self.output_tx.clone();
            // Each reader ends when the worker's pipe closes, that is when the worker dies.
            let _ = thread::Builder::new()
                .name(format!("reclaim-out-{pid}"))
                .spawn(move || {
                    let output = |line| Output {
                        lane: lane_index,
                        slot: slot_index,
                        attempt,
                        stderr,
                        line,
                        at: Instant::now(),
                    };
                    for read in BufReader::new(stream).lines() {
                        let Ok(text) = read else { break };
                        if tx.send(output(Some(text))).is_err() {
                            return;
                        }
                    }
                    let _ = tx.send(output(None));
                });
            pipes += 1;
        }
        let slot = &mut self.lanes[lane_index].slots[slot_index];
        slot.stdin = child.stdin.take();
        slot.child = Some(child);
        slot.open_pipes = pipes;
        slot.exited = None;
        slot.pid = pid;
        slot.state = SlotState::Running;
        slot.attempt = attempt;
        slot.restart_due = None;
        slot.killed_by_host = false;
        if self.paused_at.is_some() {
            let _ = process::signal_group(pid, Signal::SIGSTOP);
        }
        Ok(())
    }

    /// Advances the night to `now`: reads worker output, reaps, observes, kills and restarts.
    pub fn tick(&mut self, now: Instant) -> Result<(), EngineError> {
        self.watch.tick(now, crate::signals::take_continued());
        self.drain_output();
        self.reap(now);
        self.drain_output();
        self.observe(now);
        if self.paused_at.is_none() {
            self.fire_kills(now);
            self.restart_due(now)?;
        }
        Ok(())
    }

    fn drain_output(&mut self) {
        while let Ok(output) = self.output_rx.try_recv() {
            self.handle_output(output);
        }
    }

    fn handle_output(&mut self, output: Output) {
        let Output {
            lane,
            slot,
            attempt,
            stderr,
            line,
            at,
        } = output;
        let Some(line) = line else {
            let s = &mut self.lanes[lane].slots[slot];
            if s.attempt == attempt {
                s.open_pipes = s.open_pipes.saturating_sub(1);
            }
            return;
        };
        if stderr {
            self.lanes[lane].slots[slot].last_error = Some(line.clone());
            self.log(at, Some(lane), Source::Worker, "stderr", line);
            return;
        }
        let (word, rest) = line.split_once(' ').unwrap_or((line.as_str(), ""));
        let kind = match word {
            "start" => "start",
            "done" => "done",
            "resume" => "resume",
            "crash" => "crash",
            _ => "log",
        };
        let mut text = rest.trim_start().to_string();
        if kind == "done" {
            self.lanes[lane].claimed = Some(parse_claim(rest));
        }
        if self.lanes[lane].config.workers > 1 {
            text = format!("{text}  w={}", slot + 1);
        }
        self.log(at, Some(lane), Source::Worker, kind, text);
    }

    /// Reaps exited workers at once (so their pids are never signalled again), then handles each
    /// exit once its output has been read to the end: a worker's last lines (its `done`, its
    /// error) belong to the night before its exit does.
    fn reap(&mut self, now: Instant) {
        for lane in 0..self.lanes.len() {
            for slot in 0..self.lanes[lane].slots.len() {
                let s = &mut self.lanes[lane].slots[slot];
                let Some(child) = s.child.as_mut() else {
                    continue;
                };
                if let Ok(Some(status)) = child.try_wait() {
                    s.release();
                    s.exited = Some((status, now));
                }
            }
        }
        for lane in 0..self.lanes.len() {
            for slot in 0..self.lanes[lane].slots.len() {
                let s = &mut self.lanes[lane].slots[slot];
                let ready = s.exited.is_some_and(|(_, at)| {
                    s.open_pipes == 0 || now.saturating_duration_since(at) >= PIPE_GRACE
                });
                if ready && let Some((status, _)) = s.exited.take() {
                    self.exited(lane, slot, status, now);
                }
            }
        }
    }

    /// Handles a reaped worker: done, failed, or dead and due for a restart.
    fn exited(&mut self, lane: usize, slot: usize, status: std::process::ExitStatus, now: Instant) {
        use std::os::unix::process::ExitStatusExt as _;
        let l = &mut self.lanes[lane];
        remove_temp_beat(&l.heartbeat, l.slots[slot].pid);
        let s = &mut l.slots[slot];
        s.release();
        let pid = s.pid;
        let first_attempt = s.attempt == 1;
        let by_host = std::mem::take(&mut s.killed_by_host);
        if status.success() {
            s.state = SlotState::Done;
            return;
        }
        if let Some(signal) = status.signal() {
            s.state = SlotState::Restarting;
            s.restart_due = Some(now + self.config.restart_delay);
            let crash = self.lanes[lane]
                .config
                .crash_at
                .filter(|_| !by_host && first_attempt);
            if !by_host {
                // The worker died of its own crash point, or something outside reclaim killed it.
                let how = crash.map_or_else(
                    || format!("signal {signal}"),
                    |c| format!("crash point {c}"),
                );
                self.lanes[lane].kills += 1;
                self.log_last_item(lane, now);
                self.log(
                    now,
                    Some(lane),
                    Source::Runner,
                    "notice",
                    format!("instance reclaimed by host  ({how}, pid {pid})"),
                );
                self.mark_last(Mark::Kill);
            }
            return;
        }
        let code = status.code().unwrap_or(-1);
        let reason = s.last_error.as_deref().map_or_else(
            || format!("worker exited with code {code}"),
            |line| line.trim_start_matches("reclaim: error: ").to_string(),
        );
        s.state = SlotState::Failed;
        self.lanes[lane].failure = Some(reason.clone());
        self.log(
            now,
            Some(lane),
            Source::Runner,
            "error",
            format!("worker failed: {reason}"),
        );
    }

    fn log_last_item(&mut self, lane: usize, now: Instant) {
        // A fresh look at the rows, so the last item logged is the last one written.
        let _ = self.lanes[lane].observer.poll();
        if let Some(task) = self.lanes[lane].observer.last_task {
            self.log(now, Some(lane), Source::Worker, "item", task_id(task));
        }
    }

    fn observe(&mut self, now: Instant) {
        let wall = SystemTime::now();
        for lane in 0..self.lanes.len() {
            // Once a lane has finished and been read since, only a hand (sqlite3, another
            // program) can change its rows: once a second is often enough to notice, and keeps
            // a finished night nearly free.
            let finished = self.lanes[lane].finished();
            if finished
                && self.lanes[lane]
                    .settled_at
                    .is_some_and(|at| now.saturating_duration_since(at) < SETTLED_POLL)
            {
                continue;
            }
            self.lanes[lane].settled_at = finished.then_some(now);
            let poll = match self.lanes[lane].observer.poll() {
                Ok(poll) => {
                    self.lanes[lane].observer_error = None;
                    poll
                }
                Err(error) => {
                    // Reading is advisory (the verdict reads the rows again at the end): a
                    // failed poll is reported once and retried on the next tick.
                    let message = error.to_string();
                    if self.lanes[lane].observer_error.as_deref() != Some(message.as_str()) {
                        self.lanes[lane].observer_error = Some(message.clone());
                        self.log(
                            now,
                            Some(lane),
                            Source::Runner,
                            "error",
                            format!("observer: {message}"),
                        );
                    }
                    crate::observer::Poll::default()
                }
            };
            if poll.restarted_at_zero {
                self.log(
                    now,
                    Some(lane),
                    Source::Runner,
                    "symptom",
                    "worker restarts at item zero: task-000 written again".into(),
                );
            }
            self.read_heartbeat(lane, now, wall);
        }
    }

    fn read_heartbeat(&mut self, lane: usize, now: Instant, wall: SystemTime) {
        if self.lanes[lane].finished() {
            // The job is over: its last heartbeat age stays as it was when it ended.
            if self.lanes[lane].stale {
                self.lanes[lane].stale = false;
            }
            return;
        }
        let beat = self.lanes[lane].heartbeat.read(wall).ok();
        // A reaped worker whose last lines are still on their way is not running: it has
        // finished (or died, and is Restarting once its exit is handled).
        let running = self.lanes[lane].slots.iter().any(|s| {
            s.exited.is_none()
                && matches!(
                    s.state,
                    SlotState::Running | SlotState::Hung | SlotState::Restarting
                )
        });
        let l = &mut self.lanes[lane];
        // Until the first beat, the age counts from the start of the night.
        let real_age = beat
            .as_ref()
            .map_or_else(|| now.saturating_duration_since(self.started), |b| b.age);
        let since = now.checked_sub(real_age).unwrap_or(self.started);
        let sim_age = self.watch.silence(&self.clock, since, now);
        l.heartbeat_age = beat.as_ref().map(|b| b.age);
        l.heartbeat_task = beat.and_then(|b| b.task);
        l.heartbeat_sim_age = Some(sim_age);
        let stale = running && sim_age > self.config.dead_man;
        if stale && !l.stale {
            l.stale = true;
            let message = heartbeat::stale_message(Duration::from_secs_f64(sim_age));
            self.log(now, Some(lane), Source::Runner, "alert", message);
        } else if !stale && l.stale {
            l.stale = false;
            self.log(
                now,
                Some(lane),
                Source::Runner,
                "notice",
                "heartbeat moving again".into(),
            );
        }
    }

    fn first_lane_has(&self, task: u64) -> bool {
        self.lanes
            .first()
            .is_some_and(|l| l.observer.has_task(task))
    }

    fn fire_kills(&mut self, now: Instant) {
        if let Some(task) = self.config.wipe_at_task
            && !self.wipe_fired
            && self.first_lane_has(task)
        {
            self.wipe_fired = true;
            for lane in 0..self.lanes.len() {
                if let Err(error) = self.wipe_checkpoints(lane, now) {
                    self.log(now, Some(lane), Source::Runner, "error", error);
                }
            }
        }
        if let Some(plan) = self.config.hang
            && !self.hang_fired
            && self.first_lane_has(plan.at_task)
        {
            self.hang_fired = true;
            for lane in 0..self.lanes.len() {
                self.hang_lane(lane, now);
            }
            self.hang_resume_at = plan.resume_after.map(|after| now + after);
        }
        if self.hang_resume_at.is_some_and(|at| now >= at) {
            self.hang_resume_at = None;
            for lane in 0..self.lanes.len() {
                self.resume_lane(lane, now);
            }
        }
        if let Some(task) = self.config.kills.at_task
            && !self.at_task_fired
            && self
                .lanes
                .first()
                .is_some_and(|l| l.observer.has_task(task))
        {
            self.at_task_fired = true;
            self.host_reclaims(now, None);
        }
        if let Some(&at) = self.config.kills.at_times.get(self.timed_kills_fired)
            && self.elapsed(now) >= at
        {
            self.timed_kills_fired += 1;
            self.host_reclaims(now, None);
        }
        if self.next_kill.is_some_and(|at| now >= at) {
            self.next_kill = None;
            self.host_reclaims(now, None);
        }
    }

    /// The host reclaims the instance: SIGKILL to every live worker (of one lane, or of all),
    /// reaped at once so that nothing restarts what is still being killed.
    pub fn host_reclaims(&mut self, now: Instant, only_lane: Option<usize>) {
        use std::os::unix::process::ExitStatusExt as _;
        for lane in 0..self.lanes.len() {
            if only_lane.is_some_and(|l| l != lane) || !self.lanes[lane].alive() {
                continue;
            }
            let mut pids = Vec::new();
            for slot in 0..self.lanes[lane].slots.len() {
                let s = &mut self.lanes[lane].slots[slot];
                let Some(child) = s.child.as_mut() else {
                    continue;
                };
                // INVARIANT: only a child not yet reaped is signalled (its pid cannot be reused).
                let _ = process::signal_group(s.pid, Signal::SIGKILL);
                let Ok(status) = child.wait() else { continue };
                if status.signal() == Some(Signal::SIGKILL as i32) {
                    s.killed_by_host = true;
                    pids.push(s.pid);
                    self.exited(lane, slot, status, now);
                } else {
                    // It had already finished on its own: no kill, an ordinary exit (handled
                    // once its last lines are read).
                    s.release();
                    s.exited = Some((status, now));
                }
            }
            if pids.is_empty() {
                continue;
            }
            self.lanes[lane].kills += 1;
            // The dead write nothing more: the newest row now is the last one written.
            self.log_last_item(lane, now);
            let list: Vec<String> = pids.iter().map(ToString::to_string).collect();
            self.log(
                now,
                Some(lane),
                Source::Runner,
                "notice",
                format!(
                    "instance reclaimed by host  (SIGKILL, pid {})",
                    list.join(",")
                ),
            );
            self.mark_last(Mark::Kill);
        }
    }

    fn restart_due(&mut self, now: Instant) -> Result<(), EngineError> {
        let mut spawned = false;
        for lane in 0..self.lanes.len() {
            for slot in 0..self.lanes[lane].slots.len() {
                let s = &self.lanes[lane].slots[slot];
                if s.state != SlotState::Restarting || s.restart_due.is_none_or(|due| now < due) {
                    continue;
                }
                if self.lanes[lane].restarts >= self.config.max_restarts {
                    self.lanes[lane].slots[slot].state = SlotState::GaveUp;
                    if !self.lanes[lane].gave_up {
                        self.lanes[lane].gave_up = true;
                        let max = self.config.max_restarts;
                        self.log(
                            now,
                            Some(lane),
                            Source::Runner,
                            "error",
                            format!("giving up after {max} restarts: the job never completed"),
                        );
                    }
                    continue;
                }
                self.lanes[lane].restarts += 1;
                let attempt = self.lanes[lane].slots[slot].attempt + 1;
                self.log(
                    now,
                    Some(lane),
                    Source::Runner,
                    "notice",
                    format!("supervisor restarts the worker (attempt {attempt})"),
                );
                self.mark_last(Mark::Restart);
                self.spawn(lane, slot)?;
                spawned = true;
            }
        }
        if spawned {
            self.arm_random_kill(now);
        }
        Ok(())
    }

    fn arm_random_kill(&mut self, now: Instant) {
        if self.next_kill.is_none()
            && let Some(delay) = self.schedule.next_delay()
        {
            self.next_kill = Some(now + delay);
        }
    }

    /// SIGSTOPs every live worker and freezes the clock; `resume` undoes it.
    pub fn pause(&mut self, now: Instant) {
        if self.paused_at.is_some() {
            return;
        }
        self.paused_at = Some(now);
        self.clock.pause(now);
        self.signal_live(Signal::SIGSTOP);
    }

    pub fn resume(&mut self, now: Instant) {
        let Some(paused_at) = self.paused_at.take() else {
            return;
        };
        let paused_for = now.saturating_duration_since(paused_at);
        self.clock.resume(now);
        // Deadlines move with the frozen clock, so a pause changes nothing about the night.
        for at in [self.next_kill.as_mut(), self.hang_resume_at.as_mut()]
            .into_iter()
            .flatten()
        {
            *at += paused_for;
        }
        for lane in &mut self.lanes {
            for slot in &mut lane.slots {
                if let Some(due) = slot.restart_due.as_mut() {
                    *due += paused_for;
                }
            }
        }
        for lane in &self.lanes {
            for slot in &lane.slots {
                if slot.child.is_some() && slot.state == SlotState::Running {
                    let _ = process::signal_group(slot.pid, Signal::SIGCONT);
                }
            }
        }
    }

    fn signal_live(&self, signal: Signal) {
        for lane in &self.lanes {
            for slot in &lane.slots {
                if slot.child.is_some() {
                    let _ = process::signal_group(slot.pid, signal);
                }
            }
        }
    }

    /// Changes the speed of the night: the clock and every worker's pace, at once.
    pub fn set_speed(&mut self, speed: f64, now: Instant) {
        self.speed = speed;
        self.clock.set_scale(self.config.scale * speed, now);
        for lane in &mut self.lanes {
            let delay = lane.config.delay.div_f64(speed);
            for slot in &mut lane.slots {
                if let Some(stdin) = slot.stdin.as_mut() {
                    let _ = writeln!(stdin, "delay-us {}", delay.as_micros());
                    let _ = stdin.flush();
                }
            }
        }
    }

    #[must_use]
    pub fn speed(&self) -> f64 {
        self.speed
    }

    /// Polls every lane's observer until it has read every row written so far (a poll takes at
    /// most a bounded number of rows), so a final sample holds the final figures.
    pub fn catch_up(&mut self) {
        for lane in &mut self.lanes {
            while lane.observer.poll().is_ok_and(|p| p.new_rows > 0) {}
        }
    }

    /// Kills every worker still alive and reaps it. Also runs on drop.
    pub fn shutdown(&mut self) {
        for lane in &mut self.lanes {
            for slot in &mut lane.slots {
                if let Some(child) = slot.child.as_mut() {
                    let _ = process::signal_group(slot.pid, Signal::SIGKILL);
                    let _ = child.wait();
                    process::forget(slot.pid);
                    remove_temp_beat(&lane.heartbeat, slot.pid);
                    slot.child = None;
                    slot.stdin = None;
                }
            }
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A SIGKILL between a worker's creating its temporary beat and renaming it leaves the
/// temporary file behind (75 of them after one stormy night). Called only for a reaped worker:
/// dead, it can write nothing more, and the file is the one it created.
fn remove_temp_beat(follower: &heartbeat::Follower, pid: i32) {
    if let Ok(pid) = u32::try_from(pid) {
        heartbeat::remove_dead_writers_temp(follower.path(), pid);
    }
}

/// Parses `rows_written=312  status=ok  inserted=200`.
fn parse_claim(fields: &str) -> ClaimedDone {
    let mut claim = ClaimedDone {
        rows_written: 0,
        status: "unknown".into(),
    };
    for field in fields.split_whitespace() {
        match field.split_once('=') {
            Some(("rows_written", n)) => claim.rows_written = n.parse().unwrap_or(0),
            Some(("status", s)) => claim.status = s.to_string(),
            _ => {}
        }
    }
    claim
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_workers_claim() {
        assert_eq!(
            parse_claim("rows_written=312  status=ok  inserted=200"),
            ClaimedDone {
                rows_written: 312,
                status: "ok".into()
            }
        );
    }

    #[test]
    fn timeline_lines_match_the_postmortem() {
        let entry = Entry {
            sim: SimTime(crate::clock::NIGHT_START + 707.0),
            real_ms: 0,
            lane: Some(0),
            source: Source::Runner,
            kind: "notice",
            text: "instance reclaimed by host".into(),
            mark: Some(Mark::Kill),
        };
        assert_eq!(
            entry.line(None),
            "02:11:47  runner  notice  instance reclaimed by host"
        );
        assert_eq!(
            entry.line(Some("naive")),
            "02:11:47  runner  notice  instance reclaimed by host  [naive]"
        );
    }

    #[test]
    fn a_silence_watched_all_along_counts_whole() {
        let start = Instant::now();
        let clock = SimClock::new(start, 600.0);
        let mut watch = Watch::default();
        // Ticks every 20 ms for two seconds: a hung worker's silence is all of it.
        for ms in (0..=2000).step_by(20) {
            watch.tick(start + Duration::from_millis(ms), false);
        }
        let now = start + Duration::from_secs(2);
        let silence = watch.silence(&clock, start, now);
        assert!((silence - 1200.0).abs() < 1e-6, "{silence}");
    }

    #[test]
    fn time_the_supervisor_was_stopped_is_not_a_workers_silence() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let clock = SimClock::new(start, 600.0);
        let mut watch = Watch::default();
        watch.tick(at(0), false);
        watch.tick(at(20), false);
        // Stopped for 3 s (a gap far longer than a tick): not watched.
        watch.tick(at(3020), false);
        watch.tick(at(3040), false);
        // Stopped for 100 ms only, but SIGCONT says so: not watched either.
        watch.tick(at(3140), true);
        let silence = watch.silence(&clock, at(0), at(3200));
        let watched = 0.020 + 0.020 + 0.060;
        assert!((silence - watched * 600.0).abs() < 1e-6, "{silence}");
        // A beat after the stop is judged from the beat on.
        let silence = watch.silence(&clock, at(3100), at(3200));
        assert!((silence - 0.060 * 600.0).abs() < 1e-6, "{silence}");
    }
}
