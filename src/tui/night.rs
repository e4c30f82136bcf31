//! The live night's lifecycle: the `Engine` started (and started again) from the scenario, the
//! recorder, the verdict read on its own thread once a lane is over, the charts' history, and
//! the `Command`s the live screen's `update` decides, carried out. No terminal and no UI state
//! live here: what the night has to say goes out as notices for the screen to show.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Instant;

use crate::clock::SimTime;
use crate::engine::{Engine, LaneSnapshot};
use crate::error::{Context as _, Error};
use crate::record::{self, LaneEnd, Recorder};
use crate::scenario::{self, CaptionEvent, Scenario, ScenarioLane};
use crate::store::inspect;
use crate::tui::app::{Command, Facts, LaneFacts};
use crate::tui::captions::CaptionQueue;
use crate::tui::chrome::{LaneMeta, MAX_POINTS, Scene, lane_view, marker_kind, symptoms, x_max};
use crate::tui::keymap::Mode;
use crate::tui::lecture::{self, Why};
use crate::tui::tape::Tape;
use crate::tui::view::{IdsView, LaneView, Marker, Series};
use crate::verdict::Symptom;

/// The longest a lecture's stop on a `done` line waits for the lane's verdict (real time).
const VERDICT_AWAITED: std::time::Duration = std::time::Duration::from_secs(2);

/// One curve, downsampled as it grows.
#[derive(Debug, Clone, Default)]
struct Curve {
    points: Vec<(f64, f64)>,
    /// Minimum sim seconds between kept points.
    gap: f64,
}

impl Curve {
    fn push(&mut self, t: f64, v: f64) {
        let n = self.points.len();
        // Too close to the point before the last: move the last point instead of adding one.
        if n > 1 && t - self.points[n - 2].0 < self.gap {
            self.points[n - 1] = (t, v);
        } else {
            self.points.push((t, v));
        }
        if self.points.len() > MAX_POINTS {
            let kept: Vec<(f64, f64)> = self.points.iter().copied().step_by(2).collect();
            self.points = kept;
            self.gap = if self.gap == 0.0 { 1.0 } else { self.gap * 2.0 };
        }
    }
}

#[derive(Debug, Default)]
struct LaneHistory {
    rows: Curve,
    distinct: Curve,
    duplicated: Curve,
    checkpoints: Curve,
    heartbeat_age: Curve,
    markers: Vec<Marker>,
    /// The verdict of `inspect` once the lane has finished.
    end: Option<LaneEnd>,
    /// The verdict being read, on its own thread.
    pending: Option<mpsc::Receiver<Option<LaneEnd>>>,
    /// The verdict has been read (or could not be: then `end` stays empty).
    verdict_read: bool,
    /// The lane had finished at the last sample: its curves end there instead of running on
    /// flat (and the frame stays the same, so it is not drawn again).
    ended: bool,
}

/// The live night: its engine, its settings (carried over a restart), its recording, its charts.
#[derive(Debug)]
#[allow(clippy::struct_excessive_bools)] // Reason: independent states of the night, each its own.
pub struct Night {
    scenario: Scenario,
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
    saved: Option<PathBuf>,
    /// Where the next recording goes (`--record`), if it was named.
    record_to: Option<PathBuf>,
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
}

impl Night {
    /// Starts the scenario's night; workers run from here on. With `record`, the night is
    /// recorded to that file from 02:00.
    pub fn start(
        scenario: Scenario,
        exe: PathBuf,
        dir: PathBuf,
        record: Option<PathBuf>,
        now: Instant,
    ) -> Result<Self, Error> {
        let lanes = scenario.lanes.clone();
        let engine = launch(&scenario, &lanes, &dir, 1, &exe, now)?;
        let random_kills = scenario.random_kills > 0;
        let recording = record.is_some();
        let mut night = Self {
            history: (0..lanes.len()).map(|_| LaneHistory::default()).collect(),
            scenario,
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
            saved: None,
            record_to: record,
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
            small: false,
            captions_only: false,
            awaiting_verdict: None,
        };
        night.fit_to_lanes();
        night.apply_stops();
        if recording {
            night.start_recording()?;
        }
        Ok(night)
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

    /// The recording written (or being written) last, if any.
    #[must_use]
    pub fn saved_recording(&self) -> Option<&Path> {
        self.recording().or(self.saved.as_deref())
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

    /// The clock lands on each caption's moment (a lecture's: on each of its moments), so a
    /// caption shows with that moment's figures at any speed.
    fn apply_stops(&mut self) {
        let captions = self.captions_now();
        let at: Vec<f64> = (captions.iter())
            .filter_map(|c| c.at.as_deref().and_then(scenario::parse_clock))
            .collect();
        let when = if self.stop_on_captions && !self.captions_only {
            lecture::stop_when(&captions)
        } else {
            lecture::caption_stops(&captions)
        };
        self.engine.stop_on(&at, when);
    }

    /// The lanes' names, in their order.
    pub fn lane_names(&self) -> Vec<&str> {
        self.lanes.iter().map(|l| l.name.as_str()).collect()
    }

    /// The night's title when the lanes are no longer the scenario's (`naive vs keyed`).
    pub fn changed_title(&self) -> Option<&str> {
        (self.title != self.scenario.title).then_some(self.title.as_str())
    }

    /// The captions that speak of the lanes there are now.
    fn captions_now(&self) -> Vec<scenario::Caption> {
        (self.scenario.captions.iter().zip(&self.applies))
            .filter(|(_, applies)| **applies)
            .map(|(c, _)| c.clone())
            .collect()
    }

    /// Which captions, and what title, fit the lanes as they are now: a caption about a lane
    /// the user has changed (`s`, `a`) would speak of a worker that is not there.
    fn fit_to_lanes(&mut self) {
        let now: Vec<scenario::LaneShape<'_>> = (self.lanes.iter().zip(self.engine.lanes()))
            .map(|(lane, running)| scenario::LaneShape {
                name: &lane.name,
                worker: lane.worker.label(),
                workers: running.config.workers,
            })
            .collect();
        let scenario = &self.scenario;
        self.applies = scenario::captions_apply(&scenario.captions, &scenario.lanes, &now);
        self.title = scenario::title_for(&scenario.title, &scenario.lanes, &now);
    }

    /// What a lecture stops for that has happened since the last call, oldest first.
    pub fn take_moments(&mut self) -> Vec<Why> {
        std::mem::take(&mut self.moments)
    }

    /// Captions reached since the last call (moment, text, notes), oldest first.
    pub fn take_reached(&mut self) -> Vec<(SimTime, String, Option<String>)> {
        let mut reached = std::mem::take(&mut self.reached);
        reached.sort_by(|a, b| a.0.0.total_cmp(&b.0.0));
        reached
    }

    /// The night is over: every lane has ended, its verdict has been read, and the clock has
    /// come to the night's last line (which the work may have stamped a little ahead of it).
    pub fn over(&self) -> bool {
        (self.end_clock).is_some_and(|end| self.engine.clock().now().0 >= end.0 - 1e-6)
    }

    /// The sim time the night stands at.
    pub fn clock(&self) -> SimTime {
        self.engine.clock().now()
    }

    /// Shows the next caption reached at once; whether there was one.
    pub fn step_caption(&mut self, now: Instant) -> bool {
        let times = self.caption_times();
        let clock = self.engine.clock().now().0;
        self.captions.step(&times, clock, now)
    }

    /// The recording's header for this night, with `captions`.
    fn header(&self, captions: Vec<scenario::Caption>) -> record::Header {
        record::header(
            &self.engine,
            &self.title,
            &self.scenario.source,
            self.scenario.seed,
            captions,
        )
    }

    /// The night so far as a recording, to look back at (a replay of it, while it waits): what
    /// the screen has shown, up to the clock (or the night's end), with each caption reached in
    /// the words and figures it was shown with.
    pub fn past(&self, now: Instant) -> record::Recording {
        let captions = (self.scenario.captions.iter().enumerate())
            .filter(|(i, _)| self.applies.get(*i).copied().unwrap_or(false))
            .map(
                |(i, caption)| match self.caption_texts.get(i).cloned().flatten() {
                    Some((text, notes)) => scenario::Caption {
                        text,
                        notes,
                        ..caption.clone()
                    },
                    None => caption.clone(),
                },
            )
            .collect();
        let ends = self.lane_ends();
        let end = match self.end_clock {
            Some(at) if self.over() && ends.iter().all(Option::is_some) => Some(record::End {
                real_ms: self.engine.elapsed(now).as_millis() as u64,
                sim: at.0,
                lanes: ends.into_iter().flatten().collect(),
            }),
            _ => None,
        };
        let mut last = record::sample(&self.engine, now);
        if let Some(over) = self.end_clock {
            last.sim = last.sim.min(over.0);
        }
        let events = (self.shown_timeline(SimTime(last.sim)).into_iter())
            .map(record::Event::from_entry)
            .collect();
        self.tape
            .recording(self.header(captions), events, last, end)
    }

    /// The timeline as the screen shows it at `clock`: in the order of the night, and only what
    /// it has come to (a line is printed a little before its moment, a worker's start line at
    /// its spawn, or logged a little after it).
    fn shown_timeline(&self, clock: SimTime) -> Vec<&crate::engine::Entry> {
        let mut entries: Vec<&crate::engine::Entry> = (self.engine.timeline().iter())
            .filter(|e| e.sim.0 <= clock.0 + 1e-6)
            .collect();
        entries.sort_by(|a, b| a.sim.0.total_cmp(&b.sim.0));
        entries
    }

    /// The symptoms the timeline does not carry (rows beyond the queue, a claim the rows
    /// contradict), as they light: moments for a lecture.
    fn look_for_symptoms(&mut self) {
        let dead_man = self.engine.config().dead_man;
        let snapshots: Vec<LaneSnapshot> = (self.engine.lanes().iter())
            .map(|l| l.snapshot(dead_man))
            .collect();
        let items: Vec<u64> = self.engine.lanes().iter().map(|l| l.config.items).collect();
        let now = symptoms(&snapshots, &items, &self.lane_ends());
        // Rows past the queue: the clock waits on the row that takes them there (see
        // `Engine::stop_on`), so they light at the clock. A claim the rows contradict lights
        // with the lane's last line, which the work may have stamped ahead of it.
        let clock = self.engine.clock().now().0;
        let at = self.frontier(None);
        let past_queue = Why::Symptom(Symptom::RowsExceedQueue.seen().to_string());
        let lit = lecture::newly_lit(&mut self.lit, &now);
        self.ahead
            .extend((lit.into_iter()).map(|why| (if why == past_queue { clock } else { at }, why)));
    }

    /// The newest moment the night's lines (of `lane`, or of any) have reached, or the clock if
    /// it is further on.
    fn frontier(&self, lane: Option<usize>) -> f64 {
        (self.engine.timeline().iter())
            .filter(|e| lane.is_none() || e.lane == lane)
            .map(|e| e.sim.0)
            .fold(self.engine.clock().now().0, f64::max)
    }

    /// Looks at the timeline's new entries for the moments a lecture stops on.
    fn look_for_moments(&mut self, now: Instant) {
        for entry in &self.engine.timeline()[self.looked..] {
            let lane = (entry.lane)
                .and_then(|l| self.lanes.get(l))
                .map(|l| l.name.as_str());
            if let Some(why) = lecture::why(entry.kind, entry.mark, lane, &entry.text) {
                self.ahead.push((entry.sim.0, why));
            }
        }
        self.looked = self.engine.timeline().len();
        let clock = self.engine.clock().now().0;
        let (due, ahead): (Vec<_>, Vec<_>) = std::mem::take(&mut self.ahead)
            .into_iter()
            .partition(|(at, _)| *at <= clock + 1e-6);
        self.ahead = ahead;
        // A lecture stops on a `done` line with the lane's verdict, which is read once the lane
        // is over: the stop waits for it (the clock held, a bounded while) rather than showing
        // the line now and the verdict as a stop of its own at the same second, or never.
        let unread = |why: &Why| match why {
            Why::Done(name) => self.verdict_awaited(name),
            _ => false,
        };
        // And for the figures of its moment: every write due by then made and read.
        let waiting = self.stop_on_captions
            && !due.is_empty()
            && (due.iter().any(|(_, why)| unread(why)) || !self.engine.settled());
        let since = *self.awaiting_verdict.get_or_insert(now);
        if waiting && now.saturating_duration_since(since) < VERDICT_AWAITED {
            self.ahead.extend(due);
        } else {
            self.awaiting_verdict = None;
            self.moments.extend(due.into_iter().map(|(_, why)| why));
        }
        if !waiting {
            self.awaiting_verdict = None;
        }
    }

    /// Whether the lane named `name` is over, or about to be (its last worker said done), and
    /// its verdict not read yet.
    fn verdict_awaited(&self, name: &str) -> bool {
        let Some(i) = self.lanes.iter().position(|l| l.name == name) else {
            return false;
        };
        let (Some(lane), Some(history)) = (self.engine.lanes().get(i), self.history.get(i)) else {
            return false;
        };
        !history.verdict_read && (lane.finished() || lane.live_pids().len() <= 1)
    }

    /// What the live screen's `update` needs to know to decide.
    pub fn facts(&self) -> Facts {
        Facts {
            lanes: self
                .engine
                .lanes()
                .iter()
                .zip(&self.lanes)
                .map(|(lane, config)| LaneFacts {
                    strategy: config.worker.strategy(),
                    alive: lane.alive(),
                    finished: lane.finished(),
                    workers: lane.config.workers,
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
        self.captions.update(&times, clock, &chars, now);
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
            // The last write may have gone a tick ahead of the clock: the night ends with it.
            let last = (self.engine.timeline().iter()).fold(0.0, |t, e| e.sim.0.max(t));
            self.end_clock = Some(SimTime(self.engine.clock().now().0.max(last)));
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
    pub fn execute(&mut self, command: Command, now: Instant) -> Result<(), Error> {
        match command {
            Command::Kill(lane) => self.engine.host_reclaims(now, Some(lane)),
            Command::KillAll => self.engine.host_reclaims(now, None),
            Command::SetRandomKills(on) => {
                self.random_kills = on;
                self.engine.set_random_kills(on, now);
            }
            Command::ToggleHang(lane) => self.engine.toggle_hang(lane, now),
            Command::SetStrategy(lane, next) => {
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
            Command::WipeCheckpoints(lane) => match self.engine.wipe_checkpoints(lane, now) {
                Ok(n) => self.say(format!("{n} checkpoints deleted")),
                Err(e) => self.say(format!("wipe failed: {e}")),
            },
            Command::AddWorker(lane) => {
                self.engine.add_worker(lane, now)?;
                self.fit_to_lanes();
            }
            Command::Restart => self.restart(now)?,
            Command::Reset => {
                self.lanes = self.scenario.lanes.clone();
                self.speed = 1.0;
                self.random_kills = self.scenario.random_kills > 0;
                self.restart(now)?;
            }
            Command::StartRecording => {
                self.restart_recording(now, true)?;
                let path = self
                    .recording()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                self.say(format!("recording from 02:00 into {path}"));
            }
            Command::FinishRecording => self.finish_recording(now),
            Command::Pause => self.engine.pause(now),
            Command::Resume => self.engine.resume(now),
            Command::SetSpeed(speed) => {
                self.speed = speed;
                self.engine.set_speed(speed, now);
            }
            // The screen reads the ids itself (`ids_view`): nothing changes in the night.
            Command::ShowIds(_) => {}
            Command::NextCaption => {
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

    /// The lane's task ids written more than once, read from its rows now (the first 500).
    pub fn ids_view(&self, lane: usize) -> IdsView {
        const SHOWN: usize = 500;
        let Some(l) = self.engine.lanes().get(lane) else {
            return IdsView {
                lane: String::new(),
                lines: Vec::new(),
                total: 0,
            };
        };
        let (lines, total) = match inspect::duplicated_ids(&l.config.db, SHOWN) {
            Ok((ids, total)) => (ids.iter().map(inspect::duplicated_line).collect(), total),
            Err(e) => (vec![format!("cannot read the rows: {e}")], 0),
        };
        IdsView {
            lane: l.config.name.clone(),
            lines,
            total,
        }
    }

    /// Holds the night still while nobody can see it (a window too small): see `Engine::freeze`.
    pub fn freeze(&mut self, frozen: bool, now: Instant) {
        self.small = frozen;
        self.hold_for_captions(now);
    }

    /// Holds the clock (without signalling a worker, as for a small window) while a caption
    /// reached is being read, or while nobody can see the night.
    fn hold_for_captions(&mut self, now: Instant) {
        let reading = self.captions.holding(now);
        let awaiting = self.awaiting_verdict.is_some();
        self.engine.freeze(self.small || reading || awaiting, now);
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

    fn start_recording(&mut self) -> Result<(), Error> {
        let path = match self.record_to.take() {
            Some(path) => path,
            None => self.dir.join(format!("night{}.jsonl", self.number)),
        };
        let header = self.header(self.captions_now());
        let recorder = Recorder::create(&path, &header)
            .context(|| format!("cannot record to {}", path.display()))?;
        self.recorder = Some(recorder);
        Ok(())
    }

    /// Writes the verdict into the recording (if the night has one) and closes it.
    fn finish_recording(&mut self, now: Instant) {
        let Some(mut recorder) = self.recorder.take() else {
            return;
        };
        let ends = self.lane_ends();
        let result = if ends.iter().all(Option::is_some) {
            recorder.end(&self.engine, now, ends.into_iter().flatten().collect())
        } else {
            recorder.observe(&self.engine, now)
        };
        let path = recorder.path().display().to_string();
        self.saved = Some(recorder.path().to_path_buf());
        match result {
            Ok(()) => self.say(format!("recording saved to {path}")),
            Err(e) => self.say(format!("recording {path} failed: {e}")),
        }
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
        self.engine.shutdown();
        self.number += 1;
        self.engine = launch(
            &self.scenario,
            &self.lanes,
            &self.dir,
            self.number,
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

    /// Fills in the text of each caption the night has just reached, with the figures of the
    /// lane it is about (the first lane otherwise) as they are now: a caption's numbers are the
    /// night's, never a script's.
    fn freeze_caption_texts(
        &mut self,
        times: &[Option<f64>],
        clock: f64,
        chars: &[usize],
        now: Instant,
    ) -> bool {
        let mut reached = false;
        self.caption_texts
            .resize(self.scenario.captions.len(), None);
        let dead_man = self.engine.config().dead_man;
        let names: Vec<&str> = self.lanes.iter().map(|l| l.name.as_str()).collect();
        for (i, caption) in self.scenario.captions.iter().enumerate() {
            if self.caption_texts[i].is_some()
                || times.get(i).copied().flatten().is_none_or(|t| t > clock)
            {
                continue;
            }
            let at = times.get(i).copied().flatten().unwrap_or(clock);
            let (text, notes) = caption.filled(&names, |lane| {
                let l = self.engine.lanes().get(lane)?;
                let figures = scenario::CaptionFigures::of(
                    &l.snapshot(dead_man),
                    &l.config.name,
                    l.config.items,
                );
                Some(figures.at(at))
            });
            self.reached
                .push((SimTime(at), text.clone(), notes.clone()));
            self.ahead.push((at, Why::Caption));
            self.caption_texts[i] = Some((text, notes));
            reached = true;
            if !self.stop_on_captions {
                // Outside a lecture the night waits at the caption's moment while it is read.
                self.captions
                    .hold_for(chars.get(i).copied().unwrap_or(0), now);
            }
        }
        reached
    }

    fn caption_times(&self) -> Vec<Option<f64>> {
        let names: Vec<String> = self.lanes.iter().map(|l| l.name.clone()).collect();
        let events = self.engine.timeline().iter().map(|e| CaptionEvent {
            sim: e.sim.0,
            kind: e.kind,
            mark: e.mark,
            lane: e.lane,
        });
        let times = scenario::caption_times(&self.scenario.captions, &names, &events);
        (times.into_iter().zip(&self.applies))
            .map(|(t, applies)| t.filter(|_| *applies))
            .collect()
    }

    fn record_history(&mut self, now: Instant) {
        let t = self.engine.clock().at(now).since_start();
        let dead_man = self.engine.config().dead_man;
        let mut verdicts = Vec::new();
        for (i, (lane, history)) in (self.engine.lanes().iter().zip(&mut self.history)).enumerate()
        {
            let o = &lane.observer;
            if !history.ended {
                history.rows.push(t, o.rows as f64);
                history.distinct.push(t, o.distinct as f64);
                history.duplicated.push(t, o.duplicated as f64);
                history.checkpoints.push(t, o.checkpoints as f64);
                if let Some(age) = lane.heartbeat_sim_age {
                    history.heartbeat_age.push(t, age);
                }
            }
            history.ended = lane.finished();
            if let Some(pending) = &history.pending
                && let Ok(end) = pending.try_recv()
            {
                if let Some(end) = &end {
                    let messages = lane.snapshot(dead_man).messages;
                    let name = &lane.config.name;
                    verdicts.push((i, Why::verdict(name, &end.derived, messages.as_ref())));
                }
                history.end = end;
                history.pending = None;
                history.verdict_read = true;
            }
            if lane.finished() && !history.verdict_read && history.pending.is_none() {
                // The verdict comes from the rows, read once when the lane is over, on a thread
                // of its own: `inspect` reads the whole table, seconds at a million rows, and
                // the dashboard must not freeze meanwhile.
                let (tx, rx) = mpsc::channel();
                let config = lane.config.clone();
                let claimed = lane.claimed.as_ref().map(|c| c.status.clone());
                let completed = lane.completed();
                let spawned = std::thread::Builder::new()
                    .name("reclaim-verdict".into())
                    .spawn(move || {
                        let end = config
                            .inspect()
                            .ok()
                            .map(|i| LaneEnd::from_inspection(&i, claimed.as_deref(), completed));
                        let _ = tx.send(end);
                    });
                if spawned.is_ok() {
                    history.pending = Some(rx);
                }
            }
        }
        // A lane's verdict belongs to the moment its last line says it ended (its `done`,
        // stamped by the work, may be ahead of the clock): a lecture stops there, with it.
        for (lane, why) in verdicts {
            let at = self.frontier(Some(lane));
            self.ahead.push((at, why));
        }
        for entry in &self.engine.timeline()[self.marked..] {
            if let (Some(mark), Some(lane)) = (entry.mark, entry.lane) {
                self.history[lane].markers.push(Marker {
                    at: entry.sim.since_start(),
                    kind: marker_kind(mark),
                });
            }
        }
        self.marked = self.engine.timeline().len();
    }

    /// What the night shows at the last tick.
    pub fn scene(&self) -> Scene {
        // The clock runs on after the night; the night's end is its last moment shown.
        let running = self.engine.clock().at(self.now);
        let clock = self
            .end_clock
            .map_or(running, |end| SimTime(running.0.min(end.0)));
        let dead_man = self.engine.config().dead_man;
        let lanes: Vec<LaneView> = self
            .engine
            .lanes()
            .iter()
            .zip(&self.history)
            .map(|(lane, h)| {
                let series = Series {
                    rows: h.rows.points.clone(),
                    distinct: h.distinct.points.clone(),
                    duplicated: h.duplicated.points.clone(),
                    checkpoints: h.checkpoints.points.clone(),
                    heartbeat_age: h.heartbeat_age.points.clone(),
                };
                let meta = LaneMeta {
                    name: &lane.config.name,
                    strategy: lane.config.worker.label(),
                    items: lane.config.items,
                    dead_man,
                };
                lane_view(
                    &meta,
                    &lane.snapshot(dead_man),
                    series,
                    h.markers.clone(),
                    h.end.as_ref(),
                )
            })
            .collect();
        let multi = lanes.len() > 1;
        let width = self.lanes.iter().map(|l| l.name.len()).max().unwrap_or(0);
        let timeline = (self.shown_timeline(clock).into_iter())
            .map(|e| {
                let line = match e.lane {
                    Some(l) if multi => e.line_in_lane(&self.lanes[l].name, width),
                    _ => e.line(None),
                };
                (line, e.kind.tone(e.mark))
            })
            .collect();
        let snapshots: Vec<LaneSnapshot> = self
            .engine
            .lanes()
            .iter()
            .map(|l| l.snapshot(dead_man))
            .collect();
        let items: Vec<u64> = self.engine.lanes().iter().map(|l| l.config.items).collect();
        let caption = (self.captions.shown())
            .and_then(|i| Some(self.caption_texts.get(i)?.as_ref()?.0.clone()));
        Scene {
            title: self.title.clone(),
            scenario: self.scenario.source.clone(),
            clock,
            paused: self.engine.is_paused(),
            seed: self.scenario.seed,
            random_kills: self.random_kills,
            symptoms: symptoms(&snapshots, &items, &self.lane_ends()),
            lanes,
            timeline,
            x_max: x_max(clock.since_start()),
            db_dir: self.dir.display().to_string(),
            mode: Mode::Live,
            caption,
            recording: self.recording().map(|p| p.display().to_string()),
            replay: None,
        }
    }
}

fn launch(
    scenario: &Scenario,
    lanes: &[ScenarioLane],
    dir: &Path,
    night: u32,
    exe: &Path,
    now: Instant,
) -> Result<Engine, Error> {
    let mut scenario = scenario.clone();
    scenario.lanes = lanes.to_vec();
    let config = scenario.engine_config(dir, night, exe.to_path_buf());
    Ok(Engine::start(config, now)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curves_stay_bounded_and_keep_their_ends() {
        let mut curve = Curve::default();
        for i in 0..100_000 {
            curve.push(f64::from(i), f64::from(i) * 2.0);
        }
        assert!(curve.points.len() <= MAX_POINTS, "{}", curve.points.len());
        assert_eq!(curve.points.first(), Some(&(0.0, 0.0)));
        assert_eq!(curve.points.last(), Some(&(99_999.0, 199_998.0)));
    }
}
