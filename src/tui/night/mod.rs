//! The live night's lifecycle: the `Engine` started (and started again) from the scenario, and
//! the `NightCommand`s the live screen decides, carried out on it. Each other concern of the
//! night has its own file beside this one (captions, moments, recording, history, scene). No
//! terminal and no UI state live here: what the night has to say goes out as notices for the
//! screen to show.

mod captions;
mod command;
mod history;
mod moments;
mod recording;
mod scene;

pub use self::command::{LaneFacts, NightCommand, NightFacts};

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::base::clock::SimTime;
use crate::engine::{Engine, LaneWorker};
use crate::error::Error;
use crate::record::{LaneEnd, Recorder};
use crate::scenario::{Scenario, ScenarioLane};
use crate::tui::captions::CaptionQueue;
use crate::tui::lecture::Why;
use crate::tui::tape::Tape;
use crate::verdict::Symptom;
use crate::warehouse::Warehouse;

use self::history::LaneHistory;

/// How often a night of reclaim's own workers is looked at while it moves. They write when the
/// sim clock grants it, so a kill at task N lands on N at any rate: this only bounds how smoothly
/// the night is shown (the frame is drawn every 100 ms).
const OWN_TICK: Duration = Duration::from_millis(40);
/// How often a night with an external job (`exec`) is looked at while it moves: the job writes
/// at its own pace, and a kill "at a task" lands when the observer sees that row.
const EXEC_TICK: Duration = Duration::from_millis(20);
/// How often a night looked at exactly (recorded: `Engine::look_exactly`) is looked at: its
/// grants go a moment a tick, and at 16x the incident has about 250 moments a second.
const EXACT_TICK: Duration = Duration::from_millis(2);

/// How long a night paused, hidden or over says it stays still: until a key moves it (the loop
/// looks again once a frame whatever this says).
const STILL_FOR: Duration = Duration::from_secs(1);

/// The live night: its engine, its settings (carried over a restart), its recording, its charts.
#[derive(Debug)]
#[allow(clippy::struct_excessive_bools)] // Reason: independent states of the night, each its own.
pub struct LiveNight {
    scenario: Scenario,
    /// Where every night's rows go.
    warehouse: Warehouse,
    /// The lanes as the user has them now (`s` changes a strategy).
    lanes: Vec<ScenarioLane>,
    exe: PathBuf,
    dir: PathBuf,
    /// This session's night count: the databases and recordings are named after it.
    number: u32,
    engine: Engine,
    history: Vec<LaneHistory>,
    marked: usize,
    now: Instant,
    end_clock: Option<SimTime>,
    /// The screen has been told the night is over.
    told_over: bool,
    speed: f64,
    random_kills: bool,
    recorder: Option<Recorder>,
    /// The last recording closed in this session.
    saved: Vec<PathBuf>,
    /// A lane's data went wrong in an earlier night of this session (`--keep failed` keeps
    /// the folder).
    wrong_before: bool,
    /// The recording named by `--record`, if one was: the first night's, each later night's
    /// beside it (`night.jsonl`, then `night-2.jsonl`, ...).
    record_to: Option<PathBuf>,
    /// The named recording has been started (a later night records beside it).
    named_started: bool,
    /// When the dashboard was suspended (Ctrl-Z) with the night running: `fg` resumes it.
    suspended_running: Option<Instant>,
    /// What the night has said since the screen last asked, oldest first.
    said: Vec<String>,
    /// The teaching caption on screen, and those shown already.
    captions: CaptionQueue,
    /// Each caption's text with its figures as they were at its moment (filled when the night
    /// reaches it, so a caption read a little later still tells that moment's numbers).
    caption_texts: Vec<Option<(String, Option<String>)>>,
    /// Lecture mode: the clock stops on each caption's time, as on a kill or a restart.
    stop_on_captions: bool,
    /// Moments a lecture stops for, since the screen last asked.
    moments: Vec<Why>,
    /// Moments heard before the clock reached them (a row written a little ahead of it):
    /// each is a moment once the clock is there.
    ahead: Vec<(f64, Why)>,
    /// Timeline entries already looked at for `moments`.
    looked: usize,
    /// Captions reached since the screen last asked: moment, text and notes, figures filled in.
    reached: Vec<(SimTime, String, Option<String>)>,
    /// The night so far, to look back at.
    tape: Tape,
    /// The symptoms `look_for_symptoms` has seen light.
    lit: Vec<Symptom>,
    /// Which of the scenario's captions speak of the lanes there are now (see `fit_to_lanes`).
    applies: Vec<bool>,
    /// The night's title for the lanes there are now.
    title: String,
    /// The window is too small to see the night: it is held still.
    small: bool,
    /// A lecture stops at its captions only.
    captions_only: bool,
    /// Since when a lecture's stop waits for a lane's verdict (see `look_for_moments`).
    awaiting_verdict: Option<Instant>,
    /// A lecture's captions reached whose stop is not shown yet: filled again with the
    /// figures of the stop once it is (see `refill_captions`).
    unshown: Vec<usize>,
    /// Since when a caption reached waits for its moment's figures (`freeze_caption_texts`).
    awaiting_figures: Option<Instant>,
    /// `compare`: each lane's undisturbed night, its tables compared once the lane is over
    /// (`None`, or no entry, for a lane not compared).
    oracles: Vec<Option<std::sync::Arc<crate::harness::compare::Oracle>>>,
}

impl LiveNight {
    /// Starts the scenario's night; workers run from here on. With `record`, the night is
    /// recorded to that file from 02:00.
    pub fn start(
        (scenario, warehouse): (Scenario, Warehouse),
        exe: PathBuf,
        dir: PathBuf,
        record: Option<PathBuf>,
        now: Instant,
    ) -> Result<Self, Error> {
        let lanes = scenario.lanes.clone();
        let recording = record.is_some();
        let engine = launch(
            &scenario,
            &warehouse,
            &lanes,
            &dir,
            (1, recording),
            &exe,
            now,
        )?;
        let random_kills = scenario.random_kills > 0;
        let mut night = Self {
            history: (0..lanes.len()).map(|_| LaneHistory::default()).collect(),
            scenario,
            warehouse,
            lanes,
            exe,
            dir,
            number: 1,
            engine,
            marked: 0,
            now,
            end_clock: None,
            told_over: false,
            speed: 1.0,
            random_kills,
            recorder: None,
            saved: Vec::new(),
            wrong_before: false,
            record_to: record,
            named_started: false,
            suspended_running: None,
            said: Vec::new(),
            captions: CaptionQueue::default(),
            caption_texts: Vec::new(),
            stop_on_captions: false,
            moments: Vec::new(),
            ahead: Vec::new(),
            looked: 0,
            reached: Vec::new(),
            tape: Tape::default(),
            lit: Vec::new(),
            applies: Vec::new(),
            title: String::new(),
            unshown: Vec::new(),
            small: false,
            captions_only: false,
            awaiting_verdict: None,
            awaiting_figures: None,
            oracles: Vec::new(),
        };
        night.fit_to_lanes();
        night.apply_stops();
        if recording {
            night.start_recording()?;
        }
        Ok(night)
    }

    /// `compare`: the lanes' undisturbed nights (`harness::compare::for_lanes`), their tables
    /// compared with each lane's once it is over, on this night and every one after it.
    pub fn compare_with(
        &mut self,
        oracles: Vec<Option<std::sync::Arc<crate::harness::compare::Oracle>>>,
    ) {
        self.oracles = oracles;
    }

    /// Where the night's databases are kept.
    #[must_use]
    pub fn db_dir(&self) -> &Path {
        &self.dir
    }

    /// The recording being written, if any.
    #[must_use]
    pub fn recording(&self) -> Option<&Path> {
        self.recorder.as_ref().map(Recorder::path)
    }

    /// Every recording of this session, closed or being written, oldest first.
    #[must_use]
    pub fn recordings(&self) -> Vec<&Path> {
        (self.saved.iter().map(PathBuf::as_path))
            .chain(self.recording())
            .collect()
    }

    pub fn lane_count(&self) -> usize {
        self.lanes.len()
    }

    /// What the night has said since the last call (notices for the header), oldest first.
    pub fn take_said(&mut self) -> Vec<String> {
        std::mem::take(&mut self.said)
    }

    fn say(&mut self, text: impl Into<String>) {
        self.said.push(text.into());
    }

    /// This session's night count: 1, then one more for each new night (`n`, `s`, `R`, `o`).
    pub fn number(&self) -> u32 {
        self.number
    }

    /// Lecture mode: the clock stops on each caption's time (and this night's next ones).
    pub fn stop_on_captions(&mut self, captions_only: bool) {
        self.stop_on_captions = true;
        self.captions_only = captions_only;
        self.apply_stops();
    }

    /// The lanes' names, in their order.
    pub fn lane_names(&self) -> Vec<&str> {
        self.lanes.iter().map(|l| l.name.as_str()).collect()
    }

    /// The night's title when the lanes are no longer the scenario's (`naive vs keyed`).
    pub fn changed_title(&self) -> Option<&str> {
        (self.title != self.scenario.title).then_some(self.title.as_str())
    }

    /// The night is over: every lane has ended, its verdict has been read, and the clock has
    /// come to the night's last line (which the work may have stamped a little ahead of it).
    pub fn over(&self) -> bool {
        (self.end_clock).is_some_and(|end| self.engine.clock().now().0 >= end.0 - 1e-6)
    }

    /// How often the night is looked at while it moves (`OWN_TICK`, `EXEC_TICK`, `EXACT_TICK`).
    pub fn tick_every(&self) -> Duration {
        let exec = (self.lanes.iter()).any(|l| matches!(l.worker, LaneWorker::Exec(_)));
        if self.engine.looks_exactly() {
            EXACT_TICK
        } else if exec {
            EXEC_TICK
        } else {
            OWN_TICK
        }
    }

    /// `Some(t)` when nothing on the night moves by itself before `t`: paused (the workers
    /// stopped, the clock frozen), hidden by a window too small, over, or held while a caption is
    /// read (until the hold's end). `None` while the clock moves, and while a caption's figures or
    /// a lane's verdict are awaited.
    pub fn still_until(&self, now: Instant) -> Option<Instant> {
        if self.awaiting_verdict.is_some() || self.awaiting_figures.is_some() {
            return None;
        }
        if self.engine.is_paused() || self.small || (self.over() && self.told_over) {
            return Some(now + STILL_FOR);
        }
        self.captions.holding_until(now)
    }

    /// The sim time the night stands at.
    pub fn clock(&self) -> SimTime {
        self.engine.clock().now()
    }

    /// What the live screen's `update` needs to know to decide.
    pub fn facts(&self) -> NightFacts {
        NightFacts {
            lanes: self
                .engine
                .lanes()
                .iter()
                .zip(&self.lanes)
                .map(|(lane, config)| LaneFacts {
                    strategy: config.worker.strategy(),
                    alive: lane.alive(),
                    finished: lane.finished(),
                    workers: lane.config().workers,
                })
                .collect(),
            timeline: self.engine.timeline().len(),
            paused: self.engine.is_paused(),
            random_kills: self.random_kills,
            seed: self.scenario.seed,
            recording: self.recorder.is_some(),
            captions: self.applies.iter().filter(|a| **a).count(),
        }
    }

    /// Advances the night and records what the charts (and the recording) need.
    pub fn tick(&mut self, now: Instant) -> Result<(), Error> {
        self.now = now;
        self.engine.tick(now)?;
        self.record_history(now);
        if !self.over() {
            // Once the night is over its clock means nothing: the tape ends with the night.
            self.tape.observe(&self.engine, now);
        }
        let chars: Vec<usize> = (self.scenario.captions.iter())
            .map(|c| c.text.chars().count())
            .collect();
        let clock = self.engine.clock().now().0;
        let times = self.caption_times();
        if self.stop_on_captions {
            // Only a lecture stops on them; the panel reads its own.
            self.look_for_symptoms();
        }
        let reached = self.freeze_caption_texts(&times, clock, &chars, now);
        self.look_for_moments(now);
        if reached && !self.stop_on_captions {
            // Its moment has come: on screen now, not once the one before has been read.
            self.captions.step(&times, clock, now);
        }
        if !self.stop_on_captions {
            // A lecture shows its captions at its stops, one a space (`step_caption`): moving
            // on by reading time here would skip one of two reached at the same stop.
            self.captions.update(&times, clock, &chars, now);
        }
        self.hold_for_captions(now);
        if let Some(recorder) = self.recorder.as_mut()
            && let Err(e) = recorder.observe(&self.engine, now)
        {
            let path = recorder.path().display().to_string();
            self.recorder = None;
            self.say(format!("recording {path} stopped: {e}"));
        }
        let lanes_ended = self.history.iter().all(|h| h.verdict_read);
        if self.engine.finished() && lanes_ended && self.end_clock.is_none() {
            // The last write may have gone a tick ahead of the clock: the night ends with it,
            // or with its last caption, if a scenario speaks after the last line (the pause's
            // fenced caption, five seconds after claim's done): the clock runs on to it, so
            // it is shown, stopped at and recorded at every speed.
            let last = (self.engine.timeline().iter()).fold(0.0, |t, e| e.sim.0.max(t));
            let last_caption = times.iter().flatten().fold(0.0, |t, &c| c.max(t));
            // Not the clock's reading: it runs on while the verdict is read, so the screen
            // would end a second after the recording (02:19:32 beside its 02:19:31).
            let end = crate::record::night_end(last, last_caption);
            self.end_clock = Some(SimTime(end));
        }
        if self.over() && !self.told_over && !self.captions.holding(now) {
            // Once the clock has come to the night's last line: the recording ends there, and
            // says where it was saved last, so that is the notice left on screen.
            self.told_over = true;
            self.say("the night is over: n runs it again, R resets, q quits");
            self.finish_recording(now);
        }
        Ok(())
    }

    /// Carries out one thing the screen decided.
    pub fn execute(&mut self, command: NightCommand, now: Instant) -> Result<(), Error> {
        match command {
            NightCommand::Kill(lane) => self.engine.host_reclaims(now, Some(lane)),
            NightCommand::KillAll => self.engine.host_reclaims(now, None),
            NightCommand::SetRandomKills(on) => {
                self.random_kills = on;
                self.engine.set_random_kills(on, now);
            }
            NightCommand::ToggleHang(lane) => self.engine.toggle_hang(lane, now),
            NightCommand::PauseWorker(lane) => self.engine.pause_worker(lane, now),
            NightCommand::RestartServer => {
                if !self.engine.restart_server_by_hand(now) {
                    self.say("no server of reclaim's own to restart (--warehouse postgres)");
                }
            }
            NightCommand::LoseAnswer(lane) => {
                if !self.engine.lose_answer_by_hand(lane, now) {
                    // A night planned with lost answers runs every lane through a proxy.
                    self.say(match &self.warehouse {
                        Warehouse::Postgres(server) if server.answers_readable() => {
                            "no proxy in this lane now: n starts the night again"
                        }
                        Warehouse::Postgres(_) => "L: this server's URL insists on TLS",
                        Warehouse::Sqlite => "L needs PostgreSQL (warehouse = \"postgres\")",
                    });
                }
            }
            NightCommand::SetStrategy(lane, next) => {
                let Some(config) = self.lanes.get_mut(lane) else {
                    return Ok(());
                };
                config.worker = crate::engine::LaneWorker::Strategy(next);
                if config.batch > 1 && !next.batches() {
                    config.batch = 1;
                }
                config.name = next.name().to_string();
                self.dedupe_names();
                self.restart(now)?;
                self.say(format!(
                    "lane {} is now {next}; the night starts again",
                    lane + 1
                ));
            }
            NightCommand::WipeCheckpoints(lane) => match self.engine.wipe_checkpoints(lane, now) {
                Ok(n) => self.say(format!("{n} checkpoints deleted")),
                Err(e) => self.say(format!("wipe failed: {e}")),
            },
            NightCommand::AddWorker(lane) => {
                self.engine.add_worker(lane, now)?;
                self.fit_to_lanes();
            }
            NightCommand::Restart => self.restart(now)?,
            NightCommand::Reset => {
                self.lanes = self.scenario.lanes.clone();
                self.speed = 1.0;
                self.random_kills = self.scenario.random_kills > 0;
                self.restart(now)?;
            }
            NightCommand::StartRecording => {
                self.restart_recording(now, true)?;
                let path = self
                    .recording()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                self.say(format!("recording from 02:00 into {path}"));
            }
            NightCommand::FinishRecording => self.finish_recording(now),
            NightCommand::Pause => self.engine.pause(now),
            NightCommand::Resume => self.engine.resume(now),
            NightCommand::SetSpeed(speed) => {
                self.speed = speed;
                self.engine.set_speed(speed, now);
            }
            // The screen reads the ids itself (`ids_view`): nothing changes in the night.
            NightCommand::ShowIds(_) => {}
            NightCommand::NextCaption => {
                let times = self.caption_times();
                let clock = self.engine.clock().now().0;
                if self.stop_on_captions {
                    if !self.captions.step(&times, clock, now) {
                        self.say("no caption waiting: the next one comes with the night");
                    }
                } else {
                    // Read already: the next one waiting, or the night goes on.
                    let chars: Vec<usize> = (self.scenario.captions.iter())
                        .map(|c| c.text.chars().count())
                        .collect();
                    self.captions.move_on(&times, clock, &chars, now);
                    self.hold_for_captions(now);
                }
            }
        }
        Ok(())
    }

    /// Holds the night still while nobody can see it (a window too small): see `Engine::freeze`.
    pub fn freeze(&mut self, frozen: bool, now: Instant) {
        self.small = frozen;
        self.hold_for_captions(now);
    }

    /// Pauses the night (workers SIGSTOPped, the clock frozen) unless the user had paused it.
    pub fn suspend(&mut self, now: Instant) {
        self.suspended_running = (!self.engine.is_paused()).then_some(now);
        self.engine.pause(now);
    }

    /// Resumes the night if `suspend` paused it; a night the user paused stays paused.
    pub fn unsuspend(&mut self, now: Instant) {
        if self.suspended_running.take().is_some() {
            self.engine.resume(now);
        }
    }

    /// Whether a lane's data went wrong in any night of this session so far (its verdict
    /// read from the rows).
    pub fn went_wrong(&self) -> bool {
        // A lane's verdict once read; before it, what its panel shows: rows seen doubled or
        // outside the queue are wrong whatever comes after (quitting mid-night keeps them).
        let seen_wrong = (self.engine.lanes().iter())
            .any(|l| l.observer().duplicated > 0 || l.observer().unexpected > 0);
        self.wrong_before
            || seen_wrong
            || (self.history.iter()).any(|h| {
                (h.end.as_ref()).is_some_and(|e| !e.derived_status.is_ok() || e.state_differs)
            })
    }

    /// Each lane's verdict, once read.
    pub fn lane_ends(&self) -> Vec<Option<LaneEnd>> {
        self.history.iter().map(|h| h.end.clone()).collect()
    }

    /// A new night from 02:00 on fresh databases; the old workers are killed first. A night
    /// being recorded goes on being recorded, into a new file.
    fn restart(&mut self, now: Instant) -> Result<(), Error> {
        let recording = self.recorder.is_some();
        self.restart_recording(now, recording)
    }

    fn restart_recording(&mut self, now: Instant, recording: bool) -> Result<(), Error> {
        self.finish_recording(now);
        self.wrong_before = self.went_wrong();
        self.engine.shutdown();
        self.number += 1;
        self.engine = launch(
            &self.scenario,
            &self.warehouse,
            &self.lanes,
            &self.dir,
            (self.number, recording),
            &self.exe,
            now,
        )?;
        self.engine.set_speed(self.speed, now);
        self.engine.set_random_kills(self.random_kills, now);
        self.history = (0..self.lanes.len())
            .map(|_| LaneHistory::default())
            .collect();
        self.marked = 0;
        self.end_clock = None;
        self.told_over = false;
        self.captions = CaptionQueue::default();
        self.caption_texts.clear();
        self.looked = 0;
        self.moments.clear();
        self.ahead.clear();
        self.awaiting_verdict = None;
        self.unshown.clear();
        self.awaiting_figures = None;
        self.reached.clear();
        self.tape = Tape::default();
        self.lit.clear();
        self.fit_to_lanes();
        self.apply_stops();
        if recording {
            self.start_recording()?;
        }
        Ok(())
    }

    /// Two lanes of the same strategy need different names (their databases are named after them).
    fn dedupe_names(&mut self) {
        for i in 0..self.lanes.len() {
            let base = self.lanes[i].worker.label().to_string();
            let mut name = self.lanes[i].name.clone();
            let mut n = 2;
            while self.lanes[..i].iter().any(|l| l.name == name) {
                name = format!("{base}-{n}");
                n += 1;
            }
            self.lanes[i].name = name;
        }
    }
}

fn launch(
    scenario: &Scenario,
    warehouse: &Warehouse,
    lanes: &[ScenarioLane],
    dir: &Path,
    (night, recorded): (u32, bool),
    exe: &Path,
    now: Instant,
) -> Result<Engine, Error> {
    let mut scenario = scenario.clone();
    scenario.lanes = lanes.to_vec();
    let mut config = scenario
        .engine_config(dir, night, exe.to_path_buf())
        .on(warehouse);
    // On a server whose answers a proxy can read, every lane of reclaim's own worker runs
    // through one, so `L` can lose an answer in any of them.
    if let Warehouse::Postgres(server) = warehouse
        && server.answers_readable()
    {
        for lane in &mut config.lanes {
            lane.answer_proxy = lane.worker.strategy().is_some();
        }
    }
    // Each night's lanes made ready before it starts (on PostgreSQL, schemas claimed for them,
    // `night2_...` for the second night), as `run` claims its own.
    for lane in &config.lanes {
        warehouse.claim_lane(&lane.db)?;
    }
    Ok(Engine::start_with(config, now, recorded)?)
}
