//! The engine: lanes of real worker processes, the host's triggers, restarts, the observer and
//! the simulated clock, advanced one `tick(now)` at a time.
//!
//! The headless commands and the dashboard drive this same type; it never touches a terminal.
//! Its parts: `config` (what a night is made of), `lane` (a strategy's workers, rows and
//! heartbeat, and the snapshot drawn of it), `timeline` (the log), `triggers` (what the plan
//! says is due, pure); the processes themselves are `supervisor::slot`.

mod config;
mod lane;
mod pace;
mod timeline;
mod triggers;
mod watch;
mod window;

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::Signal;
use thiserror::Error;

pub use self::config::{DEFAULT_DEAD_MAN, EngineConfig, ExecJob, HangPlan, LaneConfig, LaneWorker};
use self::lane::Note;
pub use self::lane::{ClaimedDone, Lane, LaneSnapshot, StateKind};
pub use self::pace::{Attempt, Pace};
pub use self::timeline::{Entry, Kind, Mark, Source, Tone, timeline_line};
use self::triggers::{Action, Triggers};
use self::watch::Watch;
pub use self::window::{KillWindow, KillWindows};
use crate::clock::SimClock;
use crate::store::StoreError;
use crate::supervisor::slot::{Output, RestartPolicy, SlotState};
use crate::worker::protocol::Grant;

/// How far ahead of the clock a worker may be granted writes (see `Engine::grant_until`): one
/// and a half of the driver's ticks (as measured), within these bounds of real time.
const GRANT_AHEAD: (Duration, Duration) = (Duration::from_millis(1), Duration::from_millis(40));

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
    /// Held still without stopping the workers (nobody can see the night): the clock and the
    /// grants stop, so the gated workers wait where they are.
    frozen: bool,
    /// How fast the night is shown relative to its scale (the dashboard's speed keys): it
    /// changes nothing else.
    speed: f64,
    watch: Watch,
    /// `--kill-at-rows`: the rows the observer had seen when the kill was sent, and the rows in
    /// the table once the killed worker was reaped (where the kill really landed).
    kill_at_rows: Option<(u64, u64)>,
    /// The last tick, and the real time between the last two: how often the driver ticks.
    last_tick: Option<Instant>,
    tick_gap: Duration,
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
            frozen: false,
            speed: 1.0,
            watch: Watch::default(),
            kill_at_rows: None,
            last_tick: None,
            tick_gap: GRANT_AHEAD.0,
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
        let start = crate::clock::NIGHT_START + engine.config.start_at;
        for lane in 0..engine.lanes.len() {
            for slot in 0..engine.lanes[lane].slots.len() {
                engine.spawn(lane, slot, start, now)?;
            }
        }
        engine.triggers.arm_random_kill(start);
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
    pub fn set_random_kills(&mut self, on: bool, _now: Instant) {
        self.triggers.set_random_kills(on, self.clock.now().0);
    }

    #[must_use]
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
        // A resumed worker's next write is one pace after the resume, not in the past.
        let sim = self.clock.now().0;
        self.lanes[lane]
            .attempts
            .iter_mut()
            .for_each(|a| a.rebase(sim));
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
        let sim = self.clock.now().0;
        self.spawn(lane, slot, sim, now)
    }

    fn log(&mut self, now: Instant, lane: Option<usize>, source: Source, kind: Kind, text: String) {
        self.log_at(now, None, lane, (source, kind), text);
    }

    /// A timeline line at sim time `at` (the clock's present reading when `None`).
    fn log_at(
        &mut self,
        now: Instant,
        at: Option<f64>,
        lane: Option<usize>,
        (source, kind): (Source, Kind),
        text: String,
    ) {
        self.timeline.push(Entry {
            sim: at.map_or_else(|| self.clock.now(), crate::clock::SimTime),
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
        let at = note.at;
        self.log_at(now, at, Some(lane), (note.source, note.kind), note.text);
        if let Some(entry) = self.timeline.last_mut() {
            entry.mark = note.mark;
        }
    }

    /// Starts a slot's next attempt, its schedule beginning at sim time `start`.
    fn spawn(
        &mut self,
        lane: usize,
        slot: usize,
        start: f64,
        now: Instant,
    ) -> Result<(), EngineError> {
        self.lanes[lane].begin_attempt(slot, start);
        let (command, gated) = self.lanes[lane].command(slot, &self.config.exe);
        self.lanes[lane].spawning(slot);
        let paused = self.paused_at.is_some();
        let program = PathBuf::from(command.get_program());
        self.lanes[lane].slots[slot]
            .spawn(command, (lane, slot), &self.output_tx, (paused, gated))
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
                    at: Some(start),
                },
            );
            // It reads no grants: it goes at its own pace and the clock does not wait for it.
            return Ok(());
        }
        if !gated {
            // The relay: not a worker, it reads no grants and the clock never waits for it.
            return Ok(());
        }
        // What is due already goes with the start (everything, for a night at full speed), so
        // a worker does not wait a tick for its first grant.
        let clock = self.grant_until();
        let l = &mut self.lanes[lane];
        let (slot, attempt) = (&mut l.slots[slot], &mut l.attempts[slot]);
        let upto = attempt.grantable(clock);
        if upto > attempt.granted {
            attempt.granted = upto;
            slot.tell(&Grant { upto }.to_string());
        }
        Ok(())
    }

    /// Advances the night to `now`: reads worker output, reaps, moves the clock on as far as
    /// the work allows, kills, restarts, grants the writes now due, and observes.
    pub fn tick(&mut self, now: Instant) -> Result<(), EngineError> {
        self.watch.tick(now, crate::signals::take_continued());
        if let Some(last) = self.last_tick.replace(now) {
            self.tick_gap = now.saturating_duration_since(last);
        }
        self.drain_output(now);
        self.reap(now);
        self.drain_output(now);
        if self.paused_at.is_none() && !self.frozen {
            let held = self.held_at(now);
            let limit = self.triggers.next_moment().map_or(held, |m| m.min(held));
            let limit = self.next_restart().map_or(limit, |r| r.min(limit));
            self.clock.advance(now, limit);
            self.fire_triggers(now, held);
            self.restart_due(now)?;
            self.grant();
        } else {
            self.clock.advance(now, self.clock.now().0);
        }
        self.observe(now);
        if self.paused_at.is_none() && !self.frozen {
            self.fire_observed(now);
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

    /// The sim time the clock may not pass yet: the write some running worker has been
    /// granted (or has yet to ask for) and not made.
    fn held_at(&mut self, now: Instant) -> f64 {
        let clock = self.clock.now().0;
        let mut held = f64::INFINITY;
        for lane in &mut self.lanes {
            for (slot, attempt) in lane.slots.iter().zip(lane.attempts.iter_mut()) {
                if !(slot.is_live() && slot.state() == SlotState::Running) {
                    attempt.not_waited_on();
                    continue;
                }
                if let Some(hold) = attempt.hold(now) {
                    if hold > clock {
                        // Not waited on yet: the clock has not reached it.
                        attempt.not_waited_on();
                    }
                    held = held.min(hold);
                }
            }
        }
        held
    }

    /// The sim time of the next restart planned.
    fn next_restart(&self) -> Option<f64> {
        (self.lanes.iter())
            .flat_map(|l| {
                l.slots
                    .iter()
                    .filter_map(crate::supervisor::slot::Slot::restart_due)
            })
            .min_by(f64::total_cmp)
    }

    /// How far ahead of the clock writes may be granted: a worker a little ahead is never
    /// waited for, and the clock moves at its speed rather than a write per tick.
    fn grant_until(&self) -> f64 {
        let clock = self.clock.now().0;
        let ahead = self
            .tick_gap
            .mul_f64(1.5)
            .clamp(GRANT_AHEAD.0, GRANT_AHEAD.1);
        let mut until = clock + ahead.as_secs_f64() * self.clock.scale();
        // INVARIANT: no write is granted past a moment the plan acts at, so a kill lands
        // between the same two writes at every speed.
        if let Some(moment) = self.triggers.next_moment() {
            until = until.min(moment);
        }
        if let Some(task) = self.triggers.awaited_task() {
            // The first lane's moment for that task, when its one running worker can say.
            let predicted = (self.lanes.first())
                .and_then(|lane| {
                    let mut running = (lane.slots.iter().zip(&lane.attempts))
                        .enumerate()
                        .filter(|&(i, (slot, _))| {
                            lane.on_schedule(i)
                                && slot.is_live()
                                && slot.state() == SlotState::Running
                        })
                        .map(|(_, pair)| pair);
                    match (running.next(), running.next()) {
                        (Some((_, attempt)), None) => attempt.predicted(task),
                        _ => None,
                    }
                })
                .filter(|&at| at > clock);
            until = until.min(predicted.unwrap_or(clock));
        }
        until
    }

    /// Tells every running worker how many writes its moments have come for.
    fn grant(&mut self) {
        let clock = self.grant_until();
        for lane in &mut self.lanes {
            for (slot, attempt) in lane.slots.iter_mut().zip(lane.attempts.iter_mut()) {
                if !(slot.is_live() && slot.state() == SlotState::Running) {
                    continue;
                }
                let upto = attempt.grantable(clock);
                if upto > attempt.granted {
                    attempt.granted = upto;
                    slot.tell(&Grant { upto }.to_string());
                }
            }
        }
    }

    fn drain_output(&mut self, now: Instant) {
        while let Ok(output) = self.output_rx.try_recv() {
            self.handle_output(now, output);
        }
    }

    fn handle_output(&mut self, now: Instant, output: Output) {
        let Output {
            lane,
            slot,
            attempt,
            stderr,
            line,
            at: _,
        } = output;
        let clock = self.clock.now().0;
        let (note, wrote) = self.lanes[lane].heard((slot, attempt), stderr, line, clock);
        if let Some(note) = note {
            self.note(now, lane, note);
        }
        if lane == 0
            && let Some((last, sim)) = wrote
        {
            self.triggers.wrote(last, sim);
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
                // An external job, or the relay, is not on the clock's schedule: it dies when
                // its death is seen.
                let attempt = self.lanes[lane].attempts[slot].now();
                let sim = if self.lanes[lane].on_schedule(slot) {
                    attempt
                } else {
                    attempt.max(self.clock.now().0)
                };
                if let Some(exit) = self.lanes[lane].slots[slot].ready_exit(now, sim, policy) {
                    self.lanes[lane].forget_temp_beat(slot);
                    let notes = self.lanes[lane].exited(slot, &exit, (sim, policy));
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

    fn fire_triggers(&mut self, now: Instant, settled: f64) {
        let due = self.triggers.due(self.clock.now().0, settled);
        for (action, at) in due {
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
                Action::Kill => self.kill_at(now, at, None),
            }
        }
    }

    /// What the rows just read set off, at once (as the observer sees them, not a tick later):
    /// `--kill-at-rows`, and, for a first lane running someone else's job (which says nothing
    /// of its writes), a task the plan awaits, written for the plan when the observer first
    /// sees its row while the job runs, at the clock's reading.
    fn fire_observed(&mut self, now: Instant) {
        if let Some(first) = self.lanes.first()
            && first.config.worker.job().is_some()
            && first
                .slots
                .iter()
                .any(|s| s.is_live() && s.state() == SlotState::Running)
        {
            let sim = self.clock.now().0;
            let mut heard = false;
            while let Some(task) = self.triggers.awaited_task()
                && first.observer.has_task(task)
            {
                self.triggers.wrote(task, sim);
                heard = true;
            }
            if heard {
                // The job's row is in: its moment is settled for the first lane, whatever a
                // gated lane beside it still owes at this very moment.
                let settled = self.held_at(now).max(sim + 1e-6);
                self.fire_triggers(now, settled);
            }
        }
        let seen = self.lanes.first().map_or(0, |l| l.observer.rows);
        if self.triggers.kill_at_rows_due(seen) {
            // At the first lane's present: a gated worker may have written a little ahead of
            // the clock, and the kill comes after what it wrote.
            let sim = (self.lanes.first().into_iter())
                .flat_map(|l| l.attempts.iter().map(Attempt::now))
                .fold(self.clock.now().0, f64::max);
            self.kill_at(now, sim, None);
            // host_kill read the rows again after the reap: the dead write nothing more.
            let landed = self.lanes.first().map_or(seen, |l| l.observer.rows);
            self.kill_at_rows = Some((seen, landed));
            let asked = self.config.kills.at_rows.unwrap_or(seen);
            let text = format!(
                "kill at {asked} rows: sent when the table held {seen}, landed with {landed} rows"
            );
            self.log_at(
                now,
                Some(sim),
                Some(0),
                (Source::Runner, Kind::Notice),
                text,
            );
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
        self.kill_at(now, self.clock.now().0, only_lane);
    }

    /// `host_reclaims` at sim time `sim`.
    fn kill_at(&mut self, now: Instant, sim: f64, only_lane: Option<usize>) {
        let policy = self.restart_policy();
        for lane in 0..self.lanes.len() {
            if only_lane.is_none_or(|l| l == lane) {
                let notes = self.lanes[lane].host_kill(now, sim, policy);
                self.notes(now, lane, notes);
            }
        }
    }

    fn restart_due(&mut self, now: Instant) -> Result<(), EngineError> {
        let policy = self.restart_policy();
        let mut spawned = None;
        for lane in 0..self.lanes.len() {
            let (due, notes) = self.lanes[lane].due_restarts(self.clock.now().0, policy);
            self.notes(now, lane, notes);
            for (slot, at) in due {
                self.spawn(lane, slot, at, now)?;
                spawned = Some(at);
            }
        }
        if let Some(at) = spawned {
            self.triggers.arm_random_kill(at);
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
        if self.paused_at.take().is_none() {
            return;
        }
        // Every deadline is a sim time, and the clock was frozen: a pause changes nothing
        // about the night.
        if !self.frozen {
            self.clock.resume(now);
        }
        self.each_slot(|slot| slot.continue_running());
    }

    /// Holds the night still (`true`) or lets it go on: the clock and the grants stop, the
    /// workers are not signalled (a worker stopped inside a transaction would hold its lock
    /// and keep every reader waiting), so each finishes what it was granted and waits.
    pub fn freeze(&mut self, frozen: bool, now: Instant) {
        if frozen == self.frozen {
            return;
        }
        self.frozen = frozen;
        if frozen {
            self.clock.pause(now);
        } else if self.paused_at.is_none() {
            self.clock.resume(now);
        }
    }

    fn each_slot(&mut self, mut f: impl FnMut(&mut crate::supervisor::slot::Slot)) {
        for lane in &mut self.lanes {
            lane.slots.iter_mut().for_each(&mut f);
        }
    }

    /// Changes how fast the night is shown. The workers follow the clock through their
    /// grants, so nothing else changes: the same writes at the same sim times.
    pub fn set_speed(&mut self, speed: f64, now: Instant) {
        self.speed = speed;
        self.clock.set_scale(self.config.scale * speed, now);
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
