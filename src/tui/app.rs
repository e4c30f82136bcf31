//! The live dashboard's state and its update function: actions in, engine commands out, and the
//! view model built from the engine's state. No terminal I/O lives here.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::clock::SimTime;
use crate::engine::{Engine, LaneSnapshot, Mark};
use crate::record::{self, LaneEnd, Recorder};
use crate::scenario::{self, CaptionEvent, Scenario, ScenarioLane};
use crate::store::inspect;
use crate::tui::Screen;
use crate::tui::keymap::{Action, Mode};
use crate::tui::view::{Dashboard, LaneView, Marker, MarkerKind, Series};
use crate::verdict::Symptom;
use crate::worker::Strategy;

/// Points kept per curve; beyond it every other point is dropped and sampling slows down, so a
/// night of any length costs the same memory.
pub(crate) const MAX_POINTS: usize = 400;
/// How long a notice stays in the header.
const NOTICE_FOR: Duration = Duration::from_secs(4);
/// Speed steps, relative to the scenario's own pace.
pub(crate) const MIN_SPEED: f64 = 0.125;
pub(crate) const MAX_SPEED: f64 = 16.0;

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
    pending: Option<std::sync::mpsc::Receiver<Option<LaneEnd>>>,
    /// The verdict has been read (or could not be: then `end` stays empty).
    verdict_read: bool,
    /// The lane had finished at the last sample: its curves end there instead of running on
    /// flat (and the frame stays the same, so it is not drawn again).
    ended: bool,
}

/// The live dashboard's state.
#[derive(Debug)]
pub struct App {
    scenario: Scenario,
    lanes: Vec<ScenarioLane>,
    exe: PathBuf,
    dir: PathBuf,
    night: u32,
    engine: Engine,
    history: Vec<LaneHistory>,
    marked: usize,
    now: Instant,
    end_clock: Option<SimTime>,
    selected: usize,
    scroll: usize,
    help: bool,
    notice: Option<(String, Instant)>,
    speed: f64,
    random_kills: bool,
    recorder: Option<Recorder>,
    /// The last recording closed in this session.
    saved: Option<PathBuf>,
    /// Where the next recording goes (`--record`), if it was named.
    record_to: Option<PathBuf>,
    /// A caption the user stepped to with `c`, shown until the night's own moves past it.
    caption_pick: Option<usize>,
    quit: bool,
    /// When the dashboard was suspended (Ctrl-Z) with the night running: `fg` resumes it.
    suspended_running: Option<Instant>,
}

impl App {
    /// Starts the scenario's night; workers run from here on. With `record`, the night is
    /// recorded to that file from 02:00.
    pub fn start(
        scenario: Scenario,
        exe: PathBuf,
        dir: PathBuf,
        record: Option<PathBuf>,
        now: Instant,
    ) -> Result<Self, String> {
        let lanes = scenario.lanes.clone();
        let engine = launch(&scenario, &lanes, &dir, 1, &exe, now)?;
        let random_kills = scenario.random_kills > 0;
        let recording = record.is_some();
        let mut app = Self {
            history: (0..lanes.len()).map(|_| LaneHistory::default()).collect(),
            scenario,
            lanes,
            exe,
            dir,
            night: 1,
            engine,
            marked: 0,
            now,
            end_clock: None,
            selected: 0,
            scroll: 0,
            help: false,
            notice: None,
            speed: 1.0,
            random_kills,
            recorder: None,
            saved: None,
            record_to: record,
            caption_pick: None,
            quit: false,
            suspended_running: None,
        };
        if recording {
            app.start_recording()?;
        }
        Ok(app)
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

    fn say(&mut self, text: impl Into<String>, now: Instant) {
        self.notice = Some((text.into(), now));
    }

    fn start_recording(&mut self) -> Result<(), String> {
        let path = match self.record_to.take() {
            Some(path) => path,
            None => self.dir.join(format!("night{}.jsonl", self.night)),
        };
        let header = record::header(
            &self.engine,
            &self.scenario.title,
            &self.scenario.source,
            self.scenario.seed,
            self.scenario.captions.clone(),
        );
        let recorder = Recorder::create(&path, &header)
            .map_err(|e| format!("cannot record to {}: {e}", path.display()))?;
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
            Ok(()) => self.say(format!("recording saved to {path}"), now),
            Err(e) => self.say(format!("recording {path} failed: {e}"), now),
        }
    }

    fn lane_ends(&self) -> Vec<Option<LaneEnd>> {
        self.history.iter().map(|h| h.end.clone()).collect()
    }

    /// A new night from 02:00 on fresh databases; the old workers are killed first. A night
    /// being recorded goes on being recorded, into a new file.
    fn restart(&mut self, now: Instant) -> Result<(), String> {
        let recording = self.recorder.is_some();
        self.restart_recording(now, recording)
    }

    fn restart_recording(&mut self, now: Instant, recording: bool) -> Result<(), String> {
        self.finish_recording(now);
        self.engine.shutdown();
        self.night += 1;
        self.engine = launch(
            &self.scenario,
            &self.lanes,
            &self.dir,
            self.night,
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
        self.scroll = 0;
        self.caption_pick = None;
        self.selected = self.selected.min(self.lanes.len() - 1);
        if recording {
            self.start_recording()?;
        }
        Ok(())
    }

    /// Two lanes of the same strategy need different names (their databases are named after them).
    fn dedupe_names(&mut self) {
        for i in 0..self.lanes.len() {
            let base = self.lanes[i].strategy.name().to_string();
            let mut name = self.lanes[i].name.clone();
            let mut n = 2;
            while self.lanes[..i].iter().any(|l| l.name == name) {
                name = format!("{base}-{n}");
                n += 1;
            }
            self.lanes[i].name = name;
        }
    }

    fn caption_times(&self) -> Vec<Option<f64>> {
        let names: Vec<String> = self.lanes.iter().map(|l| l.name.clone()).collect();
        let events = self.engine.timeline().iter().map(|e| CaptionEvent {
            sim: e.sim.0,
            kind: e.kind,
            mark: e.mark,
            lane: e.lane,
        });
        scenario::caption_times(&self.scenario.captions, &names, &events)
    }

    fn record_history(&mut self, now: Instant) {
        let t = self.engine.clock().at(now).since_start();
        for (lane, history) in self.engine.lanes().iter().zip(&mut self.history) {
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
                history.end = end;
                history.pending = None;
                history.verdict_read = true;
            }
            if lane.finished() && !history.verdict_read && history.pending.is_none() {
                // The verdict comes from the rows, read once when the lane is over, on a thread
                // of its own: `inspect` reads the whole table, seconds at a million rows, and
                // the dashboard must not freeze meanwhile.
                let (tx, rx) = std::sync::mpsc::channel();
                let db = lane.config.db.clone();
                let items = lane.config.items;
                let claimed = lane.claimed.as_ref().map(|c| c.status.clone());
                let completed = lane.completed();
                let spawned = std::thread::Builder::new()
                    .name("reclaim-verdict".into())
                    .spawn(move || {
                        let end = inspect::inspect(&db, items)
                            .ok()
                            .map(|i| LaneEnd::from_inspection(&i, claimed.as_deref(), completed));
                        let _ = tx.send(end);
                    });
                if spawned.is_ok() {
                    history.pending = Some(rx);
                }
            }
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

    /// The actions that change the night itself: signals, strategies, checkpoints, recording.
    fn act_on_night(&mut self, action: Action, now: Instant) -> Result<(), String> {
        let lane = self.selected;
        match action {
            Action::KillLane => {
                if self.engine.lanes()[lane].alive() {
                    self.engine.host_reclaims(now, Some(lane));
                } else {
                    self.say("no worker is running in this lane", now);
                }
            }
            Action::KillAll => self.engine.host_reclaims(now, None),
            Action::ToggleRandomKills => {
                self.random_kills = !self.random_kills;
                self.engine.set_random_kills(self.random_kills, now);
                let state = if self.random_kills { "on" } else { "off" };
                self.say(
                    format!("random kills {state} (seed {})", self.scenario.seed),
                    now,
                );
            }
            Action::ToggleHang => self.engine.toggle_hang(lane, now),
            Action::CycleStrategy => {
                let next = next_strategy(self.lanes[lane].strategy);
                self.lanes[lane].strategy = next;
                if self.lanes[lane].batch > 1
                    && !matches!(next, Strategy::Keyed | Strategy::Guarded)
                {
                    self.lanes[lane].batch = 1;
                }
                self.lanes[lane].name = next.name().to_string();
                self.dedupe_names();
                self.restart(now)?;
                self.say(
                    format!("lane {} is now {next}; the night starts again", lane + 1),
                    now,
                );
            }
            Action::WipeCheckpoints => match self.engine.wipe_checkpoints(lane, now) {
                Ok(n) => self.say(format!("{n} checkpoints deleted"), now),
                Err(e) => self.say(format!("wipe failed: {e}"), now),
            },
            Action::AddWorker => {
                if self.engine.lanes()[lane].config.workers >= crate::limits::MAX_WORKERS {
                    let max = crate::limits::MAX_WORKERS;
                    self.say(format!("at most {max} workers per lane"), now);
                } else if self.engine.lanes()[lane].finished() {
                    self.say("this lane has finished; n starts the night again", now);
                } else {
                    self.engine
                        .add_worker(lane, now)
                        .map_err(|e| e.to_string())?;
                }
            }
            Action::Restart => self.restart(now)?,
            Action::Reset => {
                self.lanes = self.scenario.lanes.clone();
                self.speed = 1.0;
                self.random_kills = self.scenario.random_kills > 0;
                self.selected = 0;
                self.restart(now)?;
            }
            Action::ToggleRecord => {
                if self.recorder.is_some() {
                    self.finish_recording(now);
                } else {
                    self.restart_recording(now, true)?;
                    let path = self
                        .recording()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default();
                    self.say(format!("recording from 02:00 into {path}"), now);
                }
            }
            Action::NextCaption => {
                let count = self.scenario.captions.len();
                if count == 0 {
                    self.say("this scenario has no captions", now);
                } else {
                    let shown = self.caption_pick.or_else(|| {
                        scenario::current_caption(
                            &self.caption_times(),
                            self.engine.clock().at(now).0,
                        )
                    });
                    self.caption_pick = Some(shown.map_or(0, |i| (i + 1) % count));
                }
            }
            _ => {}
        }
        Ok(())
    }
}

fn launch(
    scenario: &Scenario,
    lanes: &[ScenarioLane],
    dir: &Path,
    night: u32,
    exe: &Path,
    now: Instant,
) -> Result<Engine, String> {
    let mut scenario = scenario.clone();
    scenario.lanes = lanes.to_vec();
    let config = scenario.engine_config(dir, night, exe.to_path_buf());
    Engine::start(config, now).map_err(|e| e.to_string())
}

pub(crate) fn marker_kind(mark: Mark) -> MarkerKind {
    match mark {
        Mark::Kill => MarkerKind::Kill,
        Mark::Restart => MarkerKind::Restart,
    }
}

impl Screen for App {
    fn mode(&self) -> Mode {
        Mode::Live
    }

    fn quit_requested(&self) -> bool {
        self.quit
    }

    fn lane_count(&self) -> usize {
        self.lanes.len()
    }

    fn select(&mut self, lane: usize) {
        if lane < self.lanes.len() {
            self.selected = lane;
        }
    }

    /// Advances the night and records what the charts (and the recording) need.
    fn tick(&mut self, now: Instant) -> Result<(), String> {
        self.now = now;
        self.engine.tick(now).map_err(|e| e.to_string())?;
        self.record_history(now);
        if let Some(recorder) = self.recorder.as_mut()
            && let Err(e) = recorder.observe(&self.engine, now)
        {
            let path = recorder.path().display().to_string();
            self.recorder = None;
            self.say(format!("recording {path} stopped: {e}"), now);
        }
        let lanes_ended = self.history.iter().all(|h| h.verdict_read);
        if self.engine.finished() && lanes_ended && self.end_clock.is_none() {
            self.end_clock = Some(self.engine.clock().at(now));
            self.say("the night is over: n runs it again, R resets, q quits", now);
            self.finish_recording(now);
        }
        if self
            .notice
            .as_ref()
            .is_some_and(|(_, at)| now.saturating_duration_since(*at) > NOTICE_FOR)
        {
            self.notice = None;
        }
        Ok(())
    }

    /// Applies one user action.
    fn update(&mut self, action: Action, now: Instant) -> Result<(), String> {
        if self.help && action != Action::Quit {
            self.help = false;
            if action == Action::ToggleHelp {
                return Ok(());
            }
        }
        let lane = self.selected;
        match action {
            Action::Quit => {
                self.finish_recording(now);
                self.quit = true;
            }
            Action::KillLane
            | Action::KillAll
            | Action::ToggleRandomKills
            | Action::ToggleHang
            | Action::CycleStrategy
            | Action::WipeCheckpoints
            | Action::AddWorker
            | Action::Restart
            | Action::Reset
            | Action::ToggleRecord
            | Action::NextCaption => self.act_on_night(action, now)?,
            Action::TogglePause => {
                if self.engine.is_paused() {
                    self.engine.resume(now);
                } else {
                    self.engine.pause(now);
                }
            }
            Action::SpeedUp | Action::SpeedDown => {
                let factor = if action == Action::SpeedUp { 2.0 } else { 0.5 };
                self.speed = (self.speed * factor).clamp(MIN_SPEED, MAX_SPEED);
                self.engine.set_speed(self.speed, now);
                self.say(
                    format!("speed {}x", crate::tui::ui::speed_label(self.speed)),
                    now,
                );
            }
            Action::NextLane => self.selected = (lane + 1) % self.lanes.len(),
            Action::PrevLane => {
                self.selected = (lane + self.lanes.len() - 1) % self.lanes.len();
            }
            Action::ScrollUp => self.scroll = (self.scroll + 3).min(self.engine.timeline().len()),
            Action::ScrollDown => self.scroll = self.scroll.saturating_sub(3),
            Action::ScrollEnd => self.scroll = 0,
            Action::ToggleHelp => self.help = !self.help,
            Action::ScrubBack
            | Action::ScrubForward
            | Action::PrevEvent
            | Action::NextEvent
            | Action::JumpStart
            | Action::JumpEnd
            // The event loop suspends: it owns the terminal (see `Screen::suspend`).
            | Action::Suspend => {}
        }
        Ok(())
    }

    /// Pauses the night (workers SIGSTOPped, the clock frozen) unless the user had paused it.
    fn suspend(&mut self, now: Instant) {
        self.suspended_running = (!self.engine.is_paused()).then_some(now);
        self.engine.pause(now);
    }

    /// Resumes the night if `suspend` paused it; a night the user paused stays paused.
    fn unsuspend(&mut self, now: Instant) {
        if self.suspended_running.take().is_some() {
            self.engine.resume(now);
        }
    }

    /// The frame's view model.
    fn view(&self) -> Dashboard {
        let clock = self
            .end_clock
            .unwrap_or_else(|| self.engine.clock().at(self.now));
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
                    strategy: lane.config.strategy.name(),
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
        let timeline = self
            .engine
            .timeline()
            .iter()
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
        let caption = self
            .caption_pick
            .or_else(|| scenario::current_caption(&self.caption_times(), clock.0))
            .and_then(|i| self.scenario.captions.get(i))
            .map(|c| c.text.clone());
        Dashboard {
            title: self.scenario.title.clone(),
            scenario: self.scenario.source.clone(),
            clock,
            speed: self.speed,
            paused: self.engine.is_paused(),
            seed: self.scenario.seed,
            random_kills: self.random_kills,
            symptoms: symptoms(&snapshots, &items, &self.lane_ends()),
            lanes,
            selected: self.selected,
            timeline,
            timeline_scroll: self.scroll,
            help: self.help,
            notice: self.notice.as_ref().map(|(text, _)| text.clone()),
            x_max: (clock.since_start() + 60.0).max(20.0 * 60.0),
            db_dir: self.dir.display().to_string(),
            mode: Mode::Live,
            caption,
            recording: self.recording().map(|p| p.display().to_string()),
            replay: None,
        }
    }
}

fn next_strategy(strategy: Strategy) -> Strategy {
    let all = Strategy::all();
    let i = all.iter().position(|&s| s == strategy).unwrap_or(0);
    all[(i + 1) % all.len()]
}

/// Which rows of the symptom table the lanes show.
pub(crate) fn symptoms(
    lanes: &[LaneSnapshot],
    items: &[u64],
    ends: &[Option<LaneEnd>],
) -> Vec<(Symptom, bool)> {
    Symptom::ALL
        .iter()
        .map(|&symptom| {
            let seen = lanes.iter().enumerate().any(|(i, lane)| match symptom {
                Symptom::RestartsAtZero => lane.restarted_at_zero,
                Symptom::RowsExceedQueue => lane.rows > items.get(i).copied().unwrap_or(u64::MAX),
                Symptom::StatusOkDataWrong => {
                    lane.claimed.as_ref().is_some_and(|c| c.status == "ok")
                        && ends
                            .get(i)
                            .and_then(Option::as_ref)
                            .is_some_and(|end| end.derived_status != "ok")
                }
            });
            (symptom, seen)
        })
        .collect()
}

/// What a lane panel needs besides the moment's figures.
pub(crate) struct LaneMeta<'a> {
    pub name: &'a str,
    pub strategy: &'a str,
    pub items: u64,
    pub dead_man: f64,
}

/// One lane's panel, from a moment's snapshot, its curves and (once over) its verdict. The live
/// dashboard and the replay both build their panels here.
pub(crate) fn lane_view(
    meta: &LaneMeta<'_>,
    snap: &LaneSnapshot,
    series: Series,
    markers: Vec<Marker>,
    end: Option<&LaneEnd>,
) -> LaneView {
    let claimed = snap
        .claimed
        .as_ref()
        .map(|c| format!("rows_written={} status={}", c.rows_written, c.status));
    let (derived, derived_ok) = match end {
        Some(end) => (end.derived.clone(), Some(end.derived_status == "ok")),
        None if snap.duplicated > 0 => (
            format!("DATA WRONG ({} duplicated task ids)", snap.duplicated),
            Some(false),
        ),
        None => (
            format!("in progress: {} of {} tasks", snap.distinct, meta.items),
            None,
        ),
    };
    let disagreement = match (&snap.claimed, end) {
        (Some(c), Some(end)) if c.status == "ok" && end.derived_status != "ok" => {
            Some(disagreement(end))
        }
        _ => None,
    };
    LaneView {
        name: meta.name.to_string(),
        strategy: meta.strategy.to_string(),
        state: snap.state.clone(),
        state_kind: snap.state_kind,
        alive: snap.alive,
        progress: snap.progress,
        task: snap.task.clone(),
        restarts: snap.restarts,
        kills: snap.kills,
        workers: snap.workers,
        items: meta.items,
        rows: snap.rows,
        distinct: snap.distinct,
        duplicated: snap.duplicated,
        checkpoints: snap.checkpoints,
        series,
        markers,
        heartbeat_age: snap.heartbeat_age,
        dead_man: meta.dead_man,
        alert: snap.stale.then(|| {
            crate::heartbeat::stale_message(Duration::from_secs_f64(
                snap.heartbeat_age.unwrap_or(0.0),
            ))
        }),
        claimed,
        derived,
        derived_ok,
        disagreement,
    }
}

/// Why the worker's "ok" is wrong, in the rows' own terms.
fn disagreement(end: &LaneEnd) -> String {
    if end.duplicated_task_ids > 0 {
        format!(
            "the worker says ok; {} task ids were written twice",
            end.duplicated_task_ids
        )
    } else if end.missing > 0 {
        format!("the worker says ok, but {} tasks have no row", end.missing)
    } else {
        format!("the worker says ok, but the rows say {}", end.derived)
    }
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

    #[test]
    fn strategies_cycle_through_all_four() {
        let mut s = Strategy::Naive;
        let mut seen = Vec::new();
        for _ in 0..4 {
            s = next_strategy(s);
            seen.push(s);
        }
        assert_eq!(
            seen,
            [
                Strategy::TwoCommit,
                Strategy::Keyed,
                Strategy::Guarded,
                Strategy::Naive
            ]
        );
    }
}
