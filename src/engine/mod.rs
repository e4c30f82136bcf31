//! The engine: lanes of real worker processes, the host's triggers, restarts, the observer and
//! the simulated clock, advanced one `tick(now)` at a time.
//!
//! The headless commands and the dashboard drive this same type; it never touches a terminal.
//! Its parts: `config` (what a night is made of), `lane` (a strategy's workers, rows and
//! heartbeat, and the snapshot drawn of it), `timeline` (the log), `triggers` (what the plan
//! says is due, pure); the processes themselves are `supervisor::slot`.

mod absences;
mod config;
mod deadline;
mod exact;
mod flow;
mod landings;
mod lane;
mod operator;
mod pace;
mod react;
mod stall;
mod timeline;
pub mod triggers;
mod victim;
mod wake;
mod window;

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use thiserror::Error;

use self::absences::Absences;
pub use self::config::{
    DEFAULT_DEAD_MAN, EXEC_LABEL, EngineConfig, ExecJob, HangPlan, JobError, LaneConfig,
    LaneWorker, read_sql,
};
pub use self::deadline::{DEFAULT_PROGRESS_DEADLINE, Progress, ProgressWatch};
pub use self::exact::ExactLook;
pub use self::landings::RowsLandings;
use self::lane::Note;
pub use self::lane::{ClaimedDone, Lane, LaneSnapshot, Pauses, StateKind};
pub use self::pace::{Attempt, Pace};
pub use self::timeline::{
    Committed, DIED_ON_ITS_OWN, Entry, Fact, HUNG, InOrder, Kind, Mark, RESUMED, Source, StopWhen,
    Tone, timeline_line,
};
use self::triggers::{HostAction, Triggers};
pub use self::window::{KillWindow, KillWindows};
use crate::base::clock::SimClock;
use crate::supervisor::slot::{Output, RestartPolicy, SlotState};
use crate::warehouse::StoreError;
use crate::worker::protocol::Grant;
pub use crate::worker::protocol::claimed_rows;

/// How long the operator's pause (`x` in the dashboard) stops a worker, in the night's seconds:
/// twice a claim's lease, so a worker paused holding one wakes after another took its item.
pub const HAND_PAUSE_SECS: f64 = 2.0 * crate::worker::LEASE_SECS;
/// Sim seconds per real second of a proof's nights (`prove`) and of the map's paced ones (its
/// pause band): at 10 ms an item, 6 s of the night, so a 30 s lease is five items' work.
pub const PROOF_SCALE: f64 = 600.0;

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
    #[error(transparent)]
    Vendor(#[from] crate::supervisor::service::ServiceError),
    #[error(transparent)]
    Answers(#[from] crate::warehouse::postgres::answers::ProxyError),
    #[error("cannot create the folder {folder} for a job: {source}")]
    Folder {
        folder: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the queue's keys to {path} (RECLAIM_KEYS_FILE): {source}")]
    Keys {
        path: PathBuf,
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
    /// Output read while the driver waited for its tick (`wait`), handled at the tick.
    early: Vec<Output>,
    paused_at: Option<Instant>,
    /// Held still without stopping the workers (nobody can see the night): the clock and the
    /// grants stop, so the gated workers wait where they are.
    frozen: bool,
    /// How fast the night is shown relative to its scale (the dashboard's speed keys): it
    /// changes nothing else.
    speed: f64,
    absences: Absences,
    /// `--kill-at-rows`: the rows the observer had seen when the kill was sent, and the rows in
    /// the table once the killed worker was reaped (where the kill really landed).
    kill_at_rows: Option<(u64, u64)>,
    /// `--kill-rows`: where each random kill placed by rows landed.
    rows_landings: RowsLandings,
    /// The worker the armed random kill is for, in a lane whose kills hit one worker
    /// (`kills_one_worker`); the last one's until the next is armed.
    victim: Option<usize>,
    /// The moment the clock may not run past, as the last tick set it, while real time moves
    /// the clock towards it (not paused, held or measured by work): `Engine::until_limit`.
    time_limit: Option<f64>,
    /// The last tick, and the real time between the last two: how often the driver ticks.
    last_tick: Option<Instant>,
    tick_gap: Duration,
    /// Moments the clock does not run past in one tick (a lecture's captions): it stops on
    /// each, so a driver that pauses there shows that second exactly.
    stops: Vec<f64>,
    /// The timeline entries the clock stops on as well (a lecture's kills, `done` lines, ...):
    /// one heard in a tick keeps the clock at its moment for that tick, one logged ahead of
    /// the clock becomes a stop.
    stop_when: Option<StopWhen>,
    /// The stop the clock reached in this tick, if any: its grants end there.
    landed: Option<f64>,
    /// The timeline's length when the last tick ended: what was logged since (in this tick,
    /// or between ticks by the operator's kill) is new to this one.
    heard: usize,
    /// Every line heard from reclaim's own workers (their protocol): progress, for the deadline.
    lines_heard: u64,
    /// The night's look at its warehouse's server, when it has one (on PostgreSQL: restarts,
    /// killed workers' transactions).
    server_watch: Option<Box<dyn crate::warehouse::ServerWatch>>,
    /// The moment the host last restarted the server: a worker it ended while waiting for its
    /// next write died then, not at its last write (`reap`).
    server_restarted_at: Option<f64>,
    /// Looked at exactly (`exact`): grants one moment at a time, and this tick's exact looks.
    exact: bool,
    looks: Vec<ExactLook>,
    looks_taken: u64,
    /// This tick grants nothing: it began with no exact look (`look_first`).
    grants_held: bool,
    /// A recorded night exact looks are not made for: looked at as each second ends
    /// (`exact::BySecond`).
    by_second: Option<exact::BySecond>,
}

/// Writes an external job's queue beside its database, once: a second night on the same
/// database (prove's rerun) finds it there, the same queue, and leaves it; anything else there
/// is refused.
fn write_keys(db: &std::path::Path, queue: &crate::queue::Queue) -> Result<(), EngineError> {
    let path = keys_path(db);
    let mut lines = Vec::new();
    let failed = |source| EngineError::Keys {
        path: path.clone(),
        source,
    };
    queue.write_lines(&mut lines).map_err(failed)?;
    match crate::base::paths::write_new(&path, |out| out.write_all(&lines)) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let same = matches!(
                crate::base::paths::look(&path),
                Ok(crate::base::paths::PathKind::File(_))
            ) && std::fs::read(&path).is_ok_and(|held| held == lines);
            if same { Ok(()) } else { Err(failed(e)) }
        }
        other => other.map_err(failed),
    }
}

/// Where an external job's queue is written for it (`RECLAIM_KEYS_FILE`): beside its database.
#[must_use]
pub fn keys_path(db: &std::path::Path) -> std::path::PathBuf {
    crate::base::paths::with_suffix(db, ".keys")
}

impl Engine {
    /// Builds the night and starts every lane's workers at `now`.
    pub fn start(config: EngineConfig, now: Instant) -> Result<Self, EngineError> {
        Self::start_with(config, now, false)
    }

    /// Builds the night and starts it, looked at exactly from its first grant when `recorded`
    /// (see `exact`: one moment at a time where it fits, else as each second ends).
    pub fn start_with(
        config: EngineConfig,
        now: Instant,
        recorded: bool,
    ) -> Result<Self, EngineError> {
        let exact = recorded && exact::fits(&config);
        let (output_tx, output_rx) = mpsc::channel();
        let server_watch = config.warehouse().watch();
        let speed = config.speed;
        let mut engine = Self {
            clock: SimClock::new(now, config.scale * speed),
            started: now,
            triggers: Triggers::new(&config),
            timeline: Vec::new(),
            lanes: config.lanes.iter().cloned().map(Lane::new).collect(),
            config,
            output_tx,
            output_rx,
            early: Vec::new(),
            paused_at: None,
            frozen: false,
            time_limit: None,
            speed,
            absences: Absences::default(),
            kill_at_rows: None,
            victim: None,
            rows_landings: RowsLandings::default(),
            last_tick: None,
            tick_gap: GRANT_AHEAD.0,
            stops: Vec::new(),
            stop_when: None,
            heard: 0,
            lines_heard: 0,
            landed: None,
            server_watch,
            server_restarted_at: None,
            exact,
            looks: Vec::new(),
            looks_taken: 0,
            grants_held: false,
            by_second: None,
        };
        if recorded && !exact {
            engine.by_second = Some(exact::BySecond::after(engine.clock.now().0));
        }
        // An external job's setup runs once, on its new database, before its first attempt.
        for lane in &engine.lanes {
            if lane.config().worker.job().is_some()
                && let Some(folder) = lane.config().db.parent()
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
                .config()
                .worker
                .job()
                .and_then(|j| j.setup_sql.as_deref())
            {
                lane.config().warehouse.run_setup(&lane.config().db, sql)?;
            }
            // A queue too long to write out is the job's to compute (RECLAIM_ITEMS).
            if let Some(job) = lane.config().worker.job()
                && job.queue.len() <= crate::queue::MAX_LISTED as u64
            {
                write_keys(&lane.config().db, &job.queue)?;
            }
        }
        // The vendor first: the workers are told its address.
        let exe = engine.config.exe.clone();
        for lane in &mut engine.lanes {
            lane.seed_vendor(engine.config.kills.seed);
            lane.start_vendor(&exe)?;
            lane.start_answers()?;
        }
        let start = crate::base::clock::NIGHT_START + engine.config.start_at;
        // Armed before the spawns: a kill placed by rows bounds the first grant.
        let all: Vec<usize> = (0..engine.lanes.first().map_or(0, |l| l.slots().len())).collect();
        engine.arm_kill(start, &all);
        for lane in 0..engine.lanes.len() {
            for slot in 0..engine.lanes[lane].slots().len() {
                engine.spawn(lane, slot, start, now)?;
            }
        }
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

    /// The earliest sim moment an entry still to come can carry: the clock's reading, or a
    /// running worker's place in its schedule when that is behind it (what it says is stamped
    /// there when heard, however late its pipe delivers it). Lines before this moment's second
    /// can be put in their final order.
    #[must_use]
    pub fn heard_up_to(&self) -> f64 {
        (self.lanes.iter())
            .flat_map(|l| l.slots().iter().zip(l.attempts()))
            .filter(|(slot, _)| slot.is_live() || slot.exit_pending())
            .map(|(_, attempt)| attempt.now())
            .fold(self.clock.now().0, f64::min)
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
    fn restart_policy(&self) -> RestartPolicy {
        RestartPolicy {
            delay: self.config.restart_delay,
            max: self.config.max_restarts,
        }
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
            sim: at.map_or_else(|| self.clock.now(), crate::base::clock::SimTime),
            real_ms: self.elapsed(now).as_millis() as u64,
            lane,
            source,
            kind,
            text,
            mark: None,
            fact: None,
            slot: None,
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
            entry.fact = note.fact;
        }
    }

    /// Puts a note about one worker slot of a lane on the timeline: in a lane of several
    /// processes (workers, or a worker and its relay), its lines of one second are printed in
    /// slot order (`InOrder`), not in the order they happened to be heard (a relay's first line
    /// before or after its worker's `start`, run to run).
    fn slot_note(&mut self, now: Instant, (lane, slot): (usize, usize), note: Note) {
        self.note(now, lane, note);
        let several = self.lanes[lane].slots().len() > 1;
        if let Some(entry) = self.timeline.last_mut().filter(|_| several) {
            entry.slot = Some(slot);
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
        let (command, gated) = self.lanes[lane].command(slot, &self.config.exe, self.config.scale);
        self.lanes[lane].spawning(slot);
        let paused = self.paused_at.is_some();
        let program = PathBuf::from(command.get_program());
        self.lanes[lane].slots_mut()[slot]
            .spawn(command, (lane, slot), &self.output_tx, (paused, gated))
            .map_err(|source| EngineError::Spawn {
                exe: program,
                source,
            })?;
        if let Some(watch) = self.server_watch.as_mut() {
            watch.worker_started(now);
        }
        // reclaim's own worker announces itself with its `start` line; someone else's program
        // does not, so the supervisor says when each attempt began.
        if self.lanes[lane].config().worker.job().is_some() {
            let s = &self.lanes[lane].slots()[slot];
            let mut text = format!("attempt={}  pid={}", s.attempt(), s.pid());
            if self.lanes[lane].config().workers > 1 {
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
                    fact: None,
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
        // a worker does not wait a tick for its first grant; in a lane in lockstep, it waits
        // for its turn (`grant`).
        let clock = self.grant_until();
        let cap = self.rows_cap(lane, slot);
        let l = &mut self.lanes[lane];
        let (one_at_a_time, lockstep) = (l.grants_one_write_at_a_time(), l.lockstep().is_some());
        let (slots, attempts) = l.slots_and_attempts_mut();
        let (slot, attempt) = (&mut slots[slot], &mut attempts[slot]);
        let upto = flow::grant_upto(attempt, clock, cap, (one_at_a_time, self.exact));
        // Looked at exactly, nothing goes with the start: its first grant comes once it has
        // asked, in a tick that began with an exact look (`exact::look_first`).
        let exact = self.exact && attempt.paced();
        if upto > attempt.granted && !(lockstep && attempt.paced()) && !exact {
            attempt.granted = upto;
            let at = attempt.moment_of(upto).map(crate::worker::protocol::Moment);
            slot.tell(&Grant { upto, at }.to_string());
        }
        Ok(())
    }

    /// Advances the night to `now`: reads worker output, reaps, moves the clock on as far as
    /// the work allows, kills, restarts, grants the writes now due, and observes.
    pub fn tick(&mut self, now: Instant) -> Result<(), EngineError> {
        self.absences
            .tick(now, crate::base::signals::take_continued());
        if let Some(last) = self.last_tick.replace(now) {
            self.tick_gap = now.saturating_duration_since(last);
        }
        let heard = self.heard.min(self.timeline.len());
        // Before the workers' lines: a loss is sent before its worker can see the connection
        // close, so it goes on the timeline before the worker's own word on it.
        self.note_lost_answers(now);
        self.drain_output(now);
        self.reap(now);
        self.drain_output(now);
        self.looks.clear();
        // Before anything new is granted: the rows hold exactly what was heard.
        self.look_first(now);
        // Looked at by second: a death just reaped, before the clock can reach its restart.
        self.look_at_pace_end(now);
        // A kill's messages are read as it lands, not up to `MESSAGES_EVERY` later: a stop on it
        // shows what the vendor held then.
        let marked: Vec<usize> = (self.timeline[heard..].iter())
            .filter(|e| e.mark.is_some())
            .filter_map(|e| e.lane)
            .collect();
        for lane in marked {
            self.lanes[lane].read_messages(now, true);
        }
        if self.paused_at.is_none() && !self.frozen {
            let held = self.held_at(now);
            let limit = self.triggers.next_moment().map_or(held, |m| m.min(held));
            let limit = self.next_restart().map_or(limit, |r| r.min(limit));
            let limit = self.next_pause_end().map_or(limit, |p| p.min(limit));
            let limit = (self.server_restart_moment()).map_or(limit, |r| r.min(limit));
            let limit = self.second_edge().map_or(limit, |edge| edge.min(limit));
            let limit = self.stop_limit(heard, limit);
            self.clock.set_scale(self.config.scale * self.speed, now);
            if self.by_work() {
                let to = self.work_clock(limit);
                self.clock.jump(now, to);
                self.time_limit = None;
            } else {
                self.clock.advance(now, limit);
                self.time_limit = Some(limit);
            }
            let clock = self.clock.now().0;
            // A stop the clock has reached is behind it: the driver paused there, or goes on.
            // This tick's grants still end there (`landed`).
            self.landed = self
                .stops
                .iter()
                .copied()
                .filter(|&s| s <= clock + 1e-9)
                .reduce(f64::max);
            self.stops.retain(|&s| s > clock);
            self.fire_triggers(now, held);
            self.end_pauses(now);
            self.restart_due(now)?;
            self.grant();
        } else {
            self.time_limit = None;
            self.clock.advance(now, self.clock.now().0);
            // Held still (not paused: the workers run), the writes of the clock's own moment
            // that wait for their turn in a lane in lockstep are still granted, so the moment
            // shown is made whole (`Lane::settled`); nothing past it is.
            if self.paused_at.is_none() {
                self.grant_to(self.clock.now().0);
            }
        }
        self.observe(now);
        if self.exact {
            // A tick that ends on rows of no one moment keeps no look.
            self.look(now).ok();
        }
        self.look_at_second(now);
        self.stop_on_wrong_shape(now)?;
        if self.paused_at.is_none() && !self.frozen {
            self.fire_observed(now);
        }
        if let Some(stop) = &self.stop_when {
            let clock = self.clock.now().0;
            let ahead: Vec<f64> = (self.timeline[heard..].iter())
                .filter(|e| e.sim.0 > clock && stop.picks(e))
                .map(|e| e.sim.0)
                .collect();
            self.stops.extend(ahead);
        }
        self.heard = self.timeline.len();
        for lane in &mut self.lanes {
            lane.settle_relay();
            // A finished lane's messages are read once more, complete, and its vendor stopped:
            // nothing will reach it again.
            let over = lane.finished();
            // Paused, the figures stay those of the moment stopped at.
            if self.paused_at.is_none() || over {
                lane.read_messages(now, over && lane.has_vendor());
            }
            if over {
                lane.stop_vendor();
                lane.stop_answers();
            }
        }
        Ok(())
    }

    /// The real time the clock, running at its speed, takes to reach the moment the last tick
    /// let it run to (the next write to grant, kill, restart, ...): zero while it stands there
    /// (held on a write not yet made, a restart due) and while workers on one queue take turns
    /// (`Lane::lockstep`: their grants come one by one, between the clock and that moment);
    /// `None` while real time does not move it (paused, held still, a night measured by its
    /// work). A driver that looks again no later than this misses no moment of the night's own.
    #[must_use]
    pub fn until_limit(&self) -> Option<Duration> {
        let limit = self.time_limit?;
        if self.lanes.iter().any(|l| l.lockstep().is_some()) {
            return Some(Duration::ZERO);
        }
        let rate = self.clock.scale();
        if rate.is_nan() || rate <= 0.0 {
            return None;
        }
        let ahead = limit - self.clock.now().0;
        if ahead <= 1e-9 {
            return Some(Duration::ZERO);
        }
        Some(Duration::try_from_secs_f64(ahead / rate).unwrap_or(Duration::MAX))
    }

    /// `limit`, or an earlier moment the driver asked the clock to stop on (`stop_on`): a stop
    /// not yet passed (one at the clock's very reading holds it there for this tick), an entry
    /// it picks heard since `heard`, or the moment a lane's heartbeat will have been still for
    /// the dead-man's threshold (just past it, so the alert fires on that second).
    fn stop_limit(&self, heard: usize, limit: f64) -> f64 {
        let Some(stop) = &self.stop_when else {
            return limit;
        };
        let clock = self.clock.now().0;
        let stops = self.stops.iter().copied().filter(|&s| s >= clock);
        let entries = (self.timeline[heard..].iter())
            .filter(|e| stop.picks(e))
            .map(|e| e.sim.0.max(clock));
        let alerts = (self.lanes.iter())
            .filter_map(|l| l.alert_moment(self.config.dead_man))
            .map(|at| at + 1e-3)
            .filter(|&at| at > clock);
        stops
            .chain(entries)
            .chain(alerts)
            .chain(self.first_writes_unread(stop))
            .chain(self.rows_past_items(stop))
            .fold(limit, f64::min)
    }

    /// Every lane shows the clock's moment: each write granted up to it made and read, each
    /// worker done saying what it says there, each relay's deliveries made and counted.
    #[must_use]
    pub fn settled(&mut self, now: Instant) -> bool {
        let clock = self.clock.now().0;
        // Every lane asked (not only up to the first that is not settled): each relay's
        // messages are read again, so the figures shown are all current.
        let mut all = true;
        for lane in &mut self.lanes {
            let relay = lane.relay_caught_up(now);
            all &= relay && lane.settled(clock);
        }
        all
    }

    /// Where the write that takes a lane's rows past its queue falls, while the rows have not
    /// shown it, when the driver stops on symptoms: "row count exceeds queue size" lights on
    /// the second of that row on every rehearsal.
    fn rows_past_items(&self, stop: &StopWhen) -> impl Iterator<Item = f64> + '_ {
        let clock = self.clock.now().0;
        let wanted = stop.kinds.contains(&Kind::Symptom);
        (self.lanes.iter())
            .filter(move |_| wanted)
            .filter_map(Lane::row_past_items)
            .filter(move |&at| at >= clock - 1e-9)
    }

    /// Where a restarted worker's first write falls while it has not been read, when the driver
    /// stops on symptoms: the clock (and the grants) wait there, so "restarts at item zero" is
    /// logged on its own second, with that second's figures, at any speed.
    fn first_writes_unread(&self, stop: &StopWhen) -> impl Iterator<Item = f64> + '_ {
        let clock = self.clock.now().0;
        let wanted = stop.kinds.contains(&Kind::Symptom);
        (self.lanes.iter())
            .filter(move |_| wanted)
            .filter_map(Lane::first_write_unread)
            .filter(move |&at| at >= clock - 1e-9)
    }

    /// Which of the plan's kills fired, so far.
    #[must_use]
    pub fn fired(&self) -> triggers::Fired {
        self.triggers.fired()
    }

    /// `--kill-at-rows`: rows seen when the kill was sent, and rows once it had landed.
    #[must_use]
    pub fn kill_at_rows(&self) -> Option<(u64, u64)> {
        self.kill_at_rows
    }

    /// `--kill-rows`: where the random kills placed by rows landed.
    #[must_use]
    pub fn rows_landings(&self) -> &RowsLandings {
        &self.rows_landings
    }

    /// Polls every lane's observer until it has read every row written so far (a poll takes at
    /// most a bounded number of rows), so a final sample holds the final figures.
    pub fn catch_up(&mut self) {
        for lane in &mut self.lanes {
            while lane.observer_mut().poll().is_ok_and(|p| p.new_rows > 0) {}
        }
    }

    /// Kills every worker still alive and reaps it. Also runs on drop.
    pub fn shutdown(&mut self) {
        for lane in &mut self.lanes {
            for slot in 0..lane.slots().len() {
                if lane.slots()[slot].is_live() {
                    lane.slots_mut()[slot].kill();
                    lane.forget_temp_beat(slot);
                }
            }
            lane.stop_vendor();
            lane.stop_answers();
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.shutdown();
    }
}
