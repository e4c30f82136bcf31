//! The engine: lanes of real worker processes, the host's triggers, restarts, the observer and
//! the simulated clock, advanced one `tick(now)` at a time.
//!
//! The headless commands and the dashboard drive this same type; it never touches a terminal.
//! Its parts: `config` (what a night is made of), `lane` (a strategy's workers, rows and
//! heartbeat, and the snapshot drawn of it), `timeline` (the log), `triggers` (what the plan
//! says is due, pure); the processes themselves are `supervisor::slot`.

mod config;
mod lane;
mod timeline;
mod triggers;
mod watch;

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::Signal;
use thiserror::Error;

pub use self::config::{DEFAULT_DEAD_MAN, EngineConfig, ExecJob, HangPlan, LaneConfig, LaneWorker};
use self::lane::Note;
pub use self::lane::{ClaimedDone, Lane, LaneSnapshot, StateKind};
pub use self::timeline::{Entry, Kind, Mark, Source, Tone, timeline_line};
use self::triggers::{Action, Triggers};
use self::watch::Watch;
use crate::clock::SimClock;
use crate::store::StoreError;
use crate::supervisor::slot::{Output, RestartPolicy, SlotState};
use crate::worker::protocol::Pace;

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
    #[error("{0}")]
    Vendor(String),
    #[error("cannot create the folder {folder} for a job: {source}")]
    Folder {
        folder: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The running night.
#[derive(Debug)]
pub struct Engine {
    config: EngineConfig,
    clock: SimClock,
    started: Instant,
    lanes: Vec<Lane>,
    triggers: Triggers,
    timeline: Vec<Entry>,
    output_tx: Sender<Output>,
    output_rx: Receiver<Output>,
    paused_at: Option<Instant>,
    /// The workers' pace relative to their configured delay (the dashboard's speed keys).
    speed: f64,
    watch: Watch,
    /// `--kill-at-rows`: the rows the observer had seen when the kill was sent, and the rows in
    /// the table once the killed worker was reaped (where the kill really landed).
    kill_at_rows: Option<(u64, u64)>,
}

impl Engine {
    /// Builds the night and starts every lane's workers at `now`.
    pub fn start(config: EngineConfig, now: Instant) -> Result<Self, EngineError> {
        let (output_tx, output_rx) = mpsc::channel();
        let mut engine = Self {
            clock: SimClock::new(now, config.scale),
            started: now,
            triggers: Triggers::new(&config),
            timeline: Vec::new(),
            lanes: config.lanes.iter().cloned().map(Lane::new).collect(),
            config,
            output_tx,
            output_rx,
            paused_at: None,
            speed: 1.0,
            watch: Watch::default(),
            kill_at_rows: None,
        };
        // An external job's setup runs once, on its new database, before its first attempt.
        for lane in &engine.lanes {
            if lane.config.worker.job().is_some()
                && let Some(folder) = lane.config.db.parent()
                && !folder.as_os_str().is_empty()
                && !folder.exists()
            {
                // A dashboard lane's own folder (see `Scenario::engine_config`).
                std::fs::create_dir(folder).map_err(|source| EngineError::Folder {
                    folder: folder.to_path_buf(),
                    source,
                })?;
            }
            if let Some(sql) = lane
                .config
                .worker
                .job()
                .and_then(|j| j.setup_sql.as_deref())
            {
                crate::store::rows::run_setup(&lane.config.db, sql)?;
            }
        }
        // The vendor first: the workers are told its address.
        let exe = engine.config.exe.clone();
        for lane in &mut engine.lanes {
            lane.config.vendor.seed = engine.config.kills.seed;
            lane.start_vendor(&exe).map_err(EngineError::Vendor)?;
        }
        for lane in 0..engine.lanes.len() {
            for slot in 0..engine.lanes[lane].slots.len() {
                engine.spawn(lane, slot, now)?;
            }
        }
        engine.triggers.arm_random_kill(now);
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
        self.triggers.random_kills_on()
    }

    /// Turns seeded random kills on (without limit) or off.
    pub fn set_random_kills(&mut self, on: bool, now: Instant) {
        self.triggers.set_random_kills(on, now);
    }

    fn restart_policy(&self) -> RestartPolicy {
        RestartPolicy {
            delay: self.config.restart_delay,
            max: self.config.max_restarts,
        }
    }

    /// SIGSTOPs a lane's workers (alive, no progress), or SIGCONTs them if already hung.
    pub fn toggle_hang(&mut self, lane: usize, now: Instant) {
        let Some(l) = self.lanes.get(lane) else {
            return;
        };
        if l.slot_states().contains(&SlotState::Hung) {
            self.resume_lane(lane, now);
        } else {
            self.hang_lane(lane, now);
        }
    }

    fn hang_lane(&mut self, lane: usize, now: Instant) {
        let pids = self.lanes[lane].hang();
        if !pids.is_empty() {
            let text = format!("worker hung (SIGSTOP, pid {pids}): alive, no progress");
            self.log(now, Some(lane), Source::Runner, Kind::Notice, text);
        }
    }

    fn resume_lane(&mut self, lane: usize, now: Instant) {
        let pids = self.lanes[lane].unhang(self.paused_at.is_some());
        if !pids.is_empty() {
            let text = format!("worker resumed (SIGCONT, pid {pids})");
            self.log(now, Some(lane), Source::Runner, Kind::Notice, text);
        }
    }

    /// Deletes every checkpoint of a lane's warehouse, as an operator might "to force a rerun".
    pub fn wipe_checkpoints(&mut self, lane: usize, now: Instant) -> Result<usize, StoreError> {
        let db = self.lanes[lane].config.db.clone();
        let deleted = crate::store::wipe_checkpoints(&db)?;
        self.lanes[lane].observer.reset_checkpoints();
        self.log(
            now,
            Some(lane),
            Source::Runner,
            Kind::Notice,
            format!("operator deleted every checkpoint ({deleted} rows)"),
        );
        Ok(deleted)
    }

    /// Starts one more worker on a lane's database: duplicate delivery, as an at-least-once
    /// queue would hand the same job to a second consumer.
    pub fn add_worker(&mut self, lane: usize, now: Instant) -> Result<(), EngineError> {
        let slot = self.lanes[lane].add_slot();
        self.log(
            now,
            Some(lane),
            Source::Runner,
            Kind::Notice,
            format!(
                "a second delivery: worker {} starts on the same queue",
                slot + 1
            ),
        );
        self.spawn(lane, slot, now)
    }

    fn log(&mut self, now: Instant, lane: Option<usize>, source: Source, kind: Kind, text: String) {
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

    fn notes(&mut self, now: Instant, lane: usize, notes: Vec<Note>) {
        for note in notes {
            self.note(now, lane, note);
        }
    }

    /// Puts a lane's note on the timeline.
    fn note(&mut self, now: Instant, lane: usize, note: Note) {
        self.log(now, Some(lane), note.source, note.kind, note.text);
        if let Some(entry) = self.timeline.last_mut() {
            entry.mark = note.mark;
        }
    }

    fn spawn(&mut self, lane: usize, slot: usize, now: Instant) -> Result<(), EngineError> {
        let (command, paced) = self.lanes[lane].command(slot, self.speed, &self.config.exe);
        let paused = self.paused_at.is_some();
        let program = PathBuf::from(command.get_program());
        self.lanes[lane].slots[slot]
            .spawn(command, (lane, slot), &self.output_tx, (paused, paced))
            .map_err(|source| EngineError::Spawn {
                exe: program,
                source,
            })?;
        // reclaim's own worker announces itself with its `start` line; someone else's program
        // does not, so the supervisor says when each attempt began.
        if self.lanes[lane].config.worker.job().is_some() {
            let s = &self.lanes[lane].slots[slot];
            let mut text = format!("attempt={}  pid={}", s.attempt(), s.pid());
            if self.lanes[lane].config.workers > 1 {
                text = format!("{text}  w={}", slot + 1);
            }
            self.note(
                now,
                lane,
                Note {
                    source: Source::Worker,
                    kind: Kind::Start,
                    text,
                    mark: None,
                },
            );
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
            self.fire_triggers(now);
            self.restart_due(now)?;
        }
        for lane in &mut self.lanes {
            lane.settle_relay();
            // A finished lane's messages are read once more, complete, and its vendor stopped:
            // nothing will reach it again.
            let over = lane.finished();
            lane.read_messages(now, over && lane.vendor.is_some());
            if over {
                lane.stop_vendor();
            }
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
        if let Some(note) = self.lanes[lane].heard(slot, attempt, stderr, line) {
            self.note(at, lane, note);
        }
    }

    /// Reaps exited workers at once (so their pids are never signalled again), then handles each
    /// exit once its output has been read to the end: a worker's last lines (its `done`, its
    /// error) belong to the night before its exit does.
    fn reap(&mut self, now: Instant) {
        let policy = self.restart_policy();
        for lane in 0..self.lanes.len() {
            for slot in 0..self.lanes[lane].slots.len() {
                self.lanes[lane].slots[slot].try_reap(now);
                if let Some(exit) = self.lanes[lane].slots[slot].ready_exit(now, policy) {
                    self.lanes[lane].forget_temp_beat(slot);
                    let notes = self.lanes[lane].exited(slot, &exit, (now, policy));
                    self.notes(now, lane, notes);
                }
            }
        }
    }

    fn observe(&mut self, now: Instant) {
        let wall = SystemTime::now();
        for lane in 0..self.lanes.len() {
            let notes = self.lanes[lane].observe(now);
            let beat = self.lanes[lane].read_heartbeat(
                now,
                wall,
                (&self.clock, &self.watch),
                self.started,
                self.config.dead_man,
            );
            for note in notes.into_iter().chain(beat) {
                self.note(now, lane, note);
            }
        }
    }

    fn fire_triggers(&mut self, now: Instant) {
        let first = self.lanes.first().map(|l| &l.observer);
        let due = self.triggers.due(now, self.elapsed(now), |task| {
            first.is_some_and(|o| o.has_task(task))
        });
        for action in due {
            match action {
                Action::WipeCheckpoints => {
                    for lane in 0..self.lanes.len() {
                        if let Err(error) = self.wipe_checkpoints(lane, now) {
                            self.log(
                                now,
                                Some(lane),
                                Source::Runner,
                                Kind::Error,
                                error.to_string(),
                            );
                        }
                    }
                }
                Action::Hang => (0..self.lanes.len()).for_each(|l| self.hang_lane(l, now)),
                Action::Resume => (0..self.lanes.len()).for_each(|l| self.resume_lane(l, now)),
                Action::Kill => self.host_reclaims(now, None),
            }
        }
        let seen = self.lanes.first().map_or(0, |l| l.observer.rows);
        if self.triggers.kill_at_rows_due(seen) {
            self.host_reclaims(now, None);
            // host_kill read the rows again after the reap: the dead write nothing more.
            let landed = self.lanes.first().map_or(seen, |l| l.observer.rows);
            self.kill_at_rows = Some((seen, landed));
            let asked = self.config.kills.at_rows.unwrap_or(seen);
            let text = format!(
                "kill at {asked} rows: sent when the table held {seen}, landed with {landed} rows"
            );
            self.log(now, Some(0), Source::Runner, Kind::Notice, text);
        }
    }

    /// `--kill-at-rows`: rows seen when the kill was sent, and rows once it had landed.
    #[must_use]
    pub fn kill_at_rows(&self) -> Option<(u64, u64)> {
        self.kill_at_rows
    }

    /// The host reclaims the instance: SIGKILL to every live worker (of one lane, or of all),
    /// reaped at once so that nothing restarts what is still being killed.
    pub fn host_reclaims(&mut self, now: Instant, only_lane: Option<usize>) {
        let policy = self.restart_policy();
        for lane in 0..self.lanes.len() {
            if only_lane.is_none_or(|l| l == lane) {
                let notes = self.lanes[lane].host_kill(now, policy);
                self.notes(now, lane, notes);
            }
        }
    }

    fn restart_due(&mut self, now: Instant) -> Result<(), EngineError> {
        let policy = self.restart_policy();
        let mut spawned = false;
        for lane in 0..self.lanes.len() {
            let (due, notes) = self.lanes[lane].due_restarts(now, policy);
            self.notes(now, lane, notes);
            for slot in due {
                self.spawn(lane, slot, now)?;
                spawned = true;
            }
        }
        if spawned {
            self.triggers.arm_random_kill(now);
        }
        Ok(())
    }

    /// SIGSTOPs every live worker and freezes the clock; `resume` undoes it.
    pub fn pause(&mut self, now: Instant) {
        if self.paused_at.is_some() {
            return;
        }
        self.paused_at = Some(now);
        self.clock.pause(now);
        self.each_slot(|slot| slot.signal(Signal::SIGSTOP));
    }

    pub fn resume(&mut self, now: Instant) {
        let Some(paused_at) = self.paused_at.take() else {
            return;
        };
        let paused_for = now.saturating_duration_since(paused_at);
        self.clock.resume(now);
        // Deadlines move with the frozen clock, so a pause changes nothing about the night.
        self.triggers.postpone(paused_for);
        self.each_slot(|slot| {
            slot.postpone(paused_for);
            slot.continue_running();
        });
    }

    fn each_slot(&mut self, mut f: impl FnMut(&mut crate::supervisor::slot::Slot)) {
        for lane in &mut self.lanes {
            lane.slots.iter_mut().for_each(&mut f);
        }
    }

    /// Changes the speed of the night: the clock and every worker's pace, at once.
    pub fn set_speed(&mut self, speed: f64, now: Instant) {
        self.speed = speed;
        self.clock.set_scale(self.config.scale * speed, now);
        for lane in &mut self.lanes {
            let delay = lane.config.delay.div_f64(speed);
            let line = Pace { delay }.to_string();
            lane.slots.iter_mut().for_each(|slot| slot.tell(&line));
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
            for slot in 0..lane.slots.len() {
                if lane.slots[slot].is_live() {
                    lane.slots[slot].kill();
                    lane.forget_temp_beat(slot);
                }
            }
            lane.stop_vendor();
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shutdown();
    }
}
