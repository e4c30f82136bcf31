//! The dashboard's state and its update function: actions in, engine commands out, and the view
//! model built from the engine's state. No terminal I/O lives here.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::clock::SimTime;
use crate::engine::{Engine, Lane, Mark, SlotState};
use crate::scenario::{Scenario, ScenarioLane};
use crate::store::inspect::{self, Inspection};
use crate::tui::keymap::Action;
use crate::tui::view::{Dashboard, LaneView, Marker, MarkerKind, Series, StateKind};
use crate::verdict::Symptom;
use crate::worker::Strategy;

/// Points kept per curve; beyond it every other point is dropped and sampling slows down, so a
/// night of any length costs the same memory.
const MAX_POINTS: usize = 400;
/// How long a notice stays in the header.
const NOTICE_FOR: Duration = Duration::from_secs(4);
/// Speed steps, relative to the scenario's own pace.
const MIN_SPEED: f64 = 0.125;
const MAX_SPEED: f64 = 16.0;

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

#[derive(Debug, Clone, Default)]
struct LaneHistory {
    rows: Curve,
    distinct: Curve,
    duplicated: Curve,
    checkpoints: Curve,
    heartbeat_age: Curve,
    markers: Vec<Marker>,
    /// The verdict of `inspect` once the lane has finished.
    final_inspection: Option<Inspection>,
}

/// The dashboard's state.
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
    pub quit: bool,
}

impl App {
    /// Starts the scenario's night; workers run from here on.
    pub fn start(
        scenario: Scenario,
        exe: PathBuf,
        dir: PathBuf,
        now: Instant,
    ) -> Result<Self, String> {
        let lanes = scenario.lanes.clone();
        let engine = Self::launch(&scenario, &lanes, &dir, 1, &exe, now)?;
        let random_kills = scenario.random_kills > 0;
        Ok(Self {
            history: vec![LaneHistory::default(); lanes.len()],
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
            quit: false,
        })
    }

    fn launch(
        scenario: &Scenario,
        lanes: &[ScenarioLane],
        dir: &std::path::Path,
        night: u32,
        exe: &std::path::Path,
        now: Instant,
    ) -> Result<Engine, String> {
        let mut scenario = scenario.clone();
        scenario.lanes = lanes.to_vec();
        let config = scenario.engine_config(dir, night, exe.to_path_buf());
        Engine::start(config, now).map_err(|e| e.to_string())
    }

    /// Where the night's databases are kept.
    #[must_use]
    pub fn db_dir(&self) -> &std::path::Path {
        &self.dir
    }

    #[must_use]
    pub fn lane_count(&self) -> usize {
        self.lanes.len()
    }

    pub fn select(&mut self, lane: usize) {
        if lane < self.lanes.len() {
            self.selected = lane;
        }
    }

    /// Advances the night and records what the charts need.
    pub fn tick(&mut self, now: Instant) -> Result<(), String> {
        self.now = now;
        self.engine.tick(now).map_err(|e| e.to_string())?;
        let t = self.engine.clock().at(now).since_start();
        for (lane, history) in self.engine.lanes().iter().zip(&mut self.history) {
            let o = &lane.observer;
            history.rows.push(t, o.rows as f64);
            history.distinct.push(t, o.distinct as f64);
            history.duplicated.push(t, o.duplicated as f64);
            history.checkpoints.push(t, o.checkpoints as f64);
            if let Some(age) = lane.heartbeat_sim_age {
                history.heartbeat_age.push(t, age);
            }
            if lane.finished() && history.final_inspection.is_none() {
                history.final_inspection =
                    inspect::inspect(&lane.config.db, lane.config.items).ok();
            }
        }
        for entry in &self.engine.timeline()[self.marked..] {
            if let (Some(mark), Some(lane)) = (entry.mark, entry.lane) {
                let kind = match mark {
                    Mark::Kill => MarkerKind::Kill,
                    Mark::Restart => MarkerKind::Restart,
                };
                self.history[lane].markers.push(Marker {
                    at: entry.sim.since_start(),
                    kind,
                });
            }
        }
        self.marked = self.engine.timeline().len();
        if self.engine.finished() && self.end_clock.is_none() {
            self.end_clock = Some(self.engine.clock().at(now));
            self.say("the night is over: n runs it again, R resets, q quits", now);
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

    fn say(&mut self, text: impl Into<String>, now: Instant) {
        self.notice = Some((text.into(), now));
    }

    /// Applies one user action.
    pub fn update(&mut self, action: Action, now: Instant) -> Result<(), String> {
        if self.help && action != Action::Quit {
            self.help = false;
            if action == Action::ToggleHelp {
                return Ok(());
            }
        }
        let lane = self.selected;
        match action {
            Action::Quit => self.quit = true,
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
                self.say(format!("speed {}x", fmt_speed(self.speed)), now);
            }
            Action::NextLane => self.selected = (lane + 1) % self.lanes.len(),
            Action::PrevLane => self.selected = (lane + self.lanes.len() - 1) % self.lanes.len(),
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
                if self.engine.lanes()[lane].config.workers >= 8 {
                    self.say("at most 8 workers per lane", now);
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
            Action::ScrollUp => self.scroll = (self.scroll + 3).min(self.engine.timeline().len()),
            Action::ScrollDown => self.scroll = self.scroll.saturating_sub(3),
            Action::ScrollEnd => self.scroll = 0,
            Action::ToggleHelp => self.help = !self.help,
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

    /// A new night from 02:00 on fresh databases; the old workers are killed first.
    fn restart(&mut self, now: Instant) -> Result<(), String> {
        self.engine.shutdown();
        self.night += 1;
        self.engine = Self::launch(
            &self.scenario,
            &self.lanes,
            &self.dir,
            self.night,
            &self.exe,
            now,
        )?;
        self.engine.set_speed(self.speed, now);
        self.engine.set_random_kills(self.random_kills, now);
        self.history = vec![LaneHistory::default(); self.lanes.len()];
        self.marked = 0;
        self.end_clock = None;
        self.scroll = 0;
        self.selected = self.selected.min(self.lanes.len() - 1);
        Ok(())
    }

    /// The frame's view model.
    #[must_use]
    pub fn view(&self) -> Dashboard {
        let clock = self
            .end_clock
            .unwrap_or_else(|| self.engine.clock().at(self.now));
        let lanes: Vec<LaneView> = self
            .engine
            .lanes()
            .iter()
            .zip(&self.history)
            .map(|(lane, history)| lane_view(lane, history, self.engine.config().dead_man))
            .collect();
        let multi = lanes.len() > 1;
        let width = self.lanes.iter().map(|l| l.name.len()).max().unwrap_or(0);
        let timeline = self
            .engine
            .timeline()
            .iter()
            .map(|e| match e.lane {
                Some(l) if multi => e.line_in_lane(&self.lanes[l].name, width),
                _ => e.line(None),
            })
            .collect();
        let symptoms = Symptom::ALL
            .iter()
            .map(|&s| (s, observed(s, &self.engine, &self.history)))
            .collect();
        Dashboard {
            title: self.scenario.title.clone(),
            scenario: self.scenario.source.clone(),
            clock,
            speed: self.speed,
            paused: self.engine.is_paused(),
            seed: self.scenario.seed,
            random_kills: self.random_kills,
            lanes,
            selected: self.selected,
            timeline,
            timeline_scroll: self.scroll,
            symptoms,
            help: self.help,
            notice: self.notice.as_ref().map(|(text, _)| text.clone()),
            x_max: (clock.since_start() + 60.0).max(20.0 * 60.0),
            db_dir: self.dir.display().to_string(),
        }
    }
}

fn fmt_speed(speed: f64) -> String {
    if speed >= 1.0 {
        format!("{speed:.0}")
    } else {
        format!("{speed}")
    }
}

fn next_strategy(strategy: Strategy) -> Strategy {
    let all = Strategy::ALL;
    let i = all.iter().position(|&s| s == strategy).unwrap_or(0);
    all[(i + 1) % all.len()]
}

fn observed(symptom: Symptom, engine: &Engine, history: &[LaneHistory]) -> bool {
    engine
        .lanes()
        .iter()
        .zip(history)
        .any(|(lane, h)| match symptom {
            Symptom::RestartsAtZero => lane.observer.restarted_at_zero,
            Symptom::RowsExceedQueue => lane.observer.rows > lane.config.items,
            Symptom::StatusOkDataWrong => {
                lane.claimed.as_ref().is_some_and(|c| c.status == "ok")
                    && h.final_inspection
                        .as_ref()
                        .is_some_and(|i| !i.derived().is_ok())
            }
        })
}

fn lane_view(lane: &Lane, history: &LaneHistory, dead_man: f64) -> LaneView {
    let o = &lane.observer;
    let states = lane.slot_states();
    let pids = lane.live_pids();
    let pid_list = pids
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let (state, state_kind) = if let Some(failure) = &lane.failure {
        (format!("failed: {failure}"), StateKind::Failed)
    } else if states.contains(&SlotState::Hung) {
        (format!("hung (SIGSTOP) pid {pid_list}"), StateKind::Hung)
    } else if states.contains(&SlotState::Running) {
        (format!("running pid {pid_list}"), StateKind::Running)
    } else if states.contains(&SlotState::Restarting) {
        (
            "killed by SIGKILL, restarting".to_string(),
            StateKind::Restarting,
        )
    } else if states.contains(&SlotState::GaveUp) {
        (
            format!("gave up after {} restarts", lane.restarts),
            StateKind::Failed,
        )
    } else {
        ("done".to_string(), StateKind::Done)
    };
    let progress = lane.heartbeat_sim_age.is_some_and(|age| age <= dead_man);
    let claimed = lane
        .claimed
        .as_ref()
        .map(|c| format!("rows_written={} status={}", c.rows_written, c.status));
    let (derived, derived_ok) = match &history.final_inspection {
        Some(inspection) => {
            let d = inspection.derived();
            (d.to_string(), Some(d.is_ok()))
        }
        None if o.duplicated > 0 => (
            format!("DATA WRONG ({} duplicated task ids)", o.duplicated),
            Some(false),
        ),
        None => (
            format!("in progress: {} of {} tasks", o.distinct, lane.config.items),
            None,
        ),
    };
    let disagreement = match (&lane.claimed, &history.final_inspection) {
        (Some(c), Some(i)) if c.status == "ok" && !i.derived().is_ok() => Some(disagreement(i)),
        _ => None,
    };
    LaneView {
        name: lane.config.name.clone(),
        strategy: lane.config.strategy.name().to_string(),
        state,
        state_kind,
        alive: lane.alive(),
        progress,
        task: o.last_task.map(crate::task::task_id),
        restarts: lane.restarts,
        kills: lane.kills,
        workers: lane.config.workers,
        items: lane.config.items,
        rows: o.rows,
        distinct: o.distinct,
        duplicated: o.duplicated,
        checkpoints: lane
            .config
            .strategy
            .needs()
            .checkpoints
            .then_some(o.checkpoints),
        series: Series {
            rows: history.rows.points.clone(),
            distinct: history.distinct.points.clone(),
            duplicated: history.duplicated.points.clone(),
            checkpoints: history.checkpoints.points.clone(),
            heartbeat_age: history.heartbeat_age.points.clone(),
        },
        markers: history.markers.clone(),
        heartbeat_age: lane.heartbeat_sim_age,
        dead_man,
        alert: lane.stale.then(|| {
            crate::heartbeat::stale_message(Duration::from_secs_f64(
                lane.heartbeat_sim_age.unwrap_or(0.0),
            ))
        }),
        claimed,
        derived,
        derived_ok,
        disagreement,
    }
}

/// Why the worker's "ok" is wrong, in the rows' own terms.
fn disagreement(i: &Inspection) -> String {
    if i.duplicated_task_ids > 0 {
        format!(
            "the worker says ok; {} task ids were written twice",
            i.duplicated_task_ids
        )
    } else if i.missing > 0 {
        format!("the worker says ok, but {} tasks have no row", i.missing)
    } else {
        format!("the worker says ok, but the rows say {}", i.derived())
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
