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

use std::path::PathBuf;
use std::process::Command;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::Signal;
use thiserror::Error;

pub use self::config::{DEFAULT_DEAD_MAN, EngineConfig, HangPlan, LaneConfig};
pub use self::lane::{ClaimedDone, Lane, LaneSnapshot, StateKind};
pub use self::timeline::{Entry, Kind, Mark, Source, Tone, timeline_line};
use self::triggers::{Action, Triggers};
use crate::clock::SimClock;
use crate::store::StoreError;
use crate::supervisor::slot::{Exit, Output, RestartPolicy, SlotState};
use crate::task::task_id;
use crate::worker::WorkerConfig;
use crate::worker::protocol::{Line, Pace};

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
        };
        for lane in 0..engine.lanes.len() {
            for slot in 0..engine.lanes[lane].slots.len() {
                engine.spawn(lane, slot)?;
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
    pub fn wipe_checkpoints(&mut self, lane: usize, now: Instant) -> Result<usize, String> {
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
        self.spawn(lane, slot)
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

    /// Marks the newest timeline entry as a kill or a restart.
    fn mark_last(&mut self, mark: Mark) {
        if let Some(entry) = self.timeline.last_mut() {
            entry.mark = Some(mark);
        }
    }

    fn spawn(&mut self, lane: usize, slot: usize) -> Result<(), EngineError> {
        let command = self.worker_command(lane, slot);
        let paused = self.paused_at.is_some();
        self.lanes[lane].slots[slot]
            .spawn(command, (lane, slot), &self.output_tx, paused)
            .map_err(|source| EngineError::Spawn {
                exe: self.config.exe.clone(),
                source,
            })
    }

    /// `reclaim worker ...` for a slot's next attempt, at the night's current pace.
    fn worker_command(&self, lane: usize, slot: usize) -> Command {
        let cfg = &self.lanes[lane].config;
        let worker = WorkerConfig {
            strategy: cfg.strategy,
            db: cfg.db.clone(),
            items: cfg.items,
            delay: cfg.delay.div_f64(self.speed),
            heartbeat: crate::heartbeat::default_path(&cfg.db),
            batch: cfg.batch,
            // The crash point belongs to the first attempt only: the restart must finish.
            crash_at: cfg
                .crash_at
                .filter(|_| self.lanes[lane].slots[slot].attempt() == 0),
            sync: cfg.sync,
            supervised: true,
        };
        let mut command = Command::new(&self.config.exe);
        command.args(worker.to_args());
        command
    }

    /// Advances the night to `now`: reads worker output, reaps, observes, kills and restarts.
    pub fn tick(&mut self, now: Instant) -> Result<(), EngineError> {
        self.drain_output();
        self.reap(now);
        self.drain_output();
        self.observe(now);
        if self.paused_at.is_none() {
            self.fire_triggers(now);
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
        self.lanes[lane].slots[slot].heard(attempt, stderr, line.as_deref());
        let Some(line) = line else {
            return;
        };
        if stderr {
            self.log(at, Some(lane), Source::Worker, Kind::Stderr, line);
            return;
        }
        let Ok(said) = line.parse::<Line>();
        match &said {
            Line::Done { rows_written, .. } => {
                self.lanes[lane].claimed = Some(ClaimedDone {
                    rows_written: *rows_written,
                    status: "ok".into(),
                });
            }
            Line::Crash { at } => self.lanes[lane].slots[slot].crashing_at(*at),
            _ => {}
        }
        let mut text = said.fields();
        if self.lanes[lane].config.workers > 1 {
            text = format!("{text}  w={}", slot + 1);
        }
        self.log(at, Some(lane), Source::Worker, said.kind(), text);
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
                    self.exited(lane, slot, &exit, now);
                }
            }
        }
    }

    /// Logs a worker's exit: done says nothing, a death is the host reclaiming the instance (or
    /// the worker's own crash point), a failure ends the lane.
    fn exited(&mut self, lane: usize, slot: usize, exit: &Exit, now: Instant) {
        match exit {
            Exit::Done | Exit::Killed { by_host: true, .. } => {}
            Exit::Killed {
                signal,
                by_host: false,
            } => {
                // The worker died of its own crash point (as it said), or something outside
                // reclaim killed it.
                let s = &self.lanes[lane].slots[slot];
                let pid = s.pid();
                let how = s.crashed_at().map_or_else(
                    || format!("signal {signal}"),
                    |c| format!("crash point {c}"),
                );
                self.lanes[lane].kills += 1;
                self.log_last_item(lane, now);
                self.log(
                    now,
                    Some(lane),
                    Source::Runner,
                    Kind::Notice,
                    format!("instance reclaimed by host  ({how}, pid {pid})"),
                );
                self.mark_last(Mark::Kill);
            }
            Exit::Failed { reason } => {
                self.lanes[lane].failure = Some(reason.clone());
                self.log(
                    now,
                    Some(lane),
                    Source::Runner,
                    Kind::Error,
                    format!("worker failed: {reason}"),
                );
            }
        }
    }

    fn log_last_item(&mut self, lane: usize, now: Instant) {
        // A fresh look at the rows, so the last item logged is the last one written.
        let _ = self.lanes[lane].observer.poll();
        if let Some(task) = self.lanes[lane].observer.last_task {
            self.log(now, Some(lane), Source::Worker, Kind::Item, task_id(task));
        }
    }

    fn observe(&mut self, now: Instant) {
        let wall = SystemTime::now();
        for lane in 0..self.lanes.len() {
            let notes = self.lanes[lane].observe(now);
            let beat = self.lanes[lane].read_heartbeat(
                now,
                wall,
                &self.clock,
                self.started,
                self.config.dead_man,
            );
            for (source, kind, text) in notes.into_iter().chain(beat) {
                self.log(now, Some(lane), source, kind, text);
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
                            self.log(now, Some(lane), Source::Runner, Kind::Error, error);
                        }
                    }
                }
                Action::Hang => (0..self.lanes.len()).for_each(|l| self.hang_lane(l, now)),
                Action::Resume => (0..self.lanes.len()).for_each(|l| self.resume_lane(l, now)),
                Action::Kill => self.host_reclaims(now, None),
            }
        }
    }

    /// The host reclaims the instance: SIGKILL to every live worker (of one lane, or of all),
    /// reaped at once so that nothing restarts what is still being killed.
    pub fn host_reclaims(&mut self, now: Instant, only_lane: Option<usize>) {
        let policy = self.restart_policy();
        for lane in 0..self.lanes.len() {
            if only_lane.is_some_and(|l| l != lane) || !self.lanes[lane].alive() {
                continue;
            }
            let mut pids = Vec::new();
            for slot in &mut self.lanes[lane].slots {
                if slot.host_kill(now, policy).is_some() {
                    pids.push(slot.pid().to_string());
                }
            }
            if pids.is_empty() {
                continue;
            }
            self.lanes[lane].kills += 1;
            // The dead write nothing more: the newest row now is the last one written.
            self.log_last_item(lane, now);
            let text = format!(
                "instance reclaimed by host  (SIGKILL, pid {})",
                pids.join(",")
            );
            self.log(now, Some(lane), Source::Runner, Kind::Notice, text);
            self.mark_last(Mark::Kill);
        }
    }

    fn restart_due(&mut self, now: Instant) -> Result<(), EngineError> {
        let mut spawned = false;
        for lane in 0..self.lanes.len() {
            for slot in 0..self.lanes[lane].slots.len() {
                if !self.lanes[lane].slots[slot].restart_is_due(now) {
                    continue;
                }
                if self.lanes[lane].restarts >= self.config.max_restarts {
                    self.lanes[lane].slots[slot].give_up();
                    if !std::mem::replace(&mut self.lanes[lane].gave_up, true) {
                        let max = self.config.max_restarts;
                        let text =
                            format!("giving up after {max} restarts: the job never completed");
                        self.log(now, Some(lane), Source::Runner, Kind::Error, text);
                    }
                    continue;
                }
                self.lanes[lane].restarts += 1;
                let attempt = self.lanes[lane].slots[slot].attempt() + 1;
                let text = format!("supervisor restarts the worker (attempt {attempt})");
                self.log(now, Some(lane), Source::Runner, Kind::Notice, text);
                self.mark_last(Mark::Restart);
                self.spawn(lane, slot)?;
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
        self.each_slot(crate::supervisor::slot::Slot::kill);
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shutdown();
    }
}
