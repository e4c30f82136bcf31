//! Replaying a recording in the dashboard: no processes, no databases. A cursor moves through
//! the recorded night (playing, or scrubbed by hand) and every panel shows the values recorded
//! at that moment.

use std::time::Instant;

use crate::clock::{NIGHT_START, SimTime};
use crate::record::{LaneEnd, Recording, Sample};
use crate::scenario::{self, CaptionEvent};
use crate::tui::Screen;
use crate::tui::app::{
    LaneMeta, MAX_POINTS, MAX_SPEED, MIN_SPEED, fmt_speed, lane_view, marker_kind, symptoms,
};
use crate::tui::keymap::{Action, Mode};
use crate::tui::view::{Dashboard, LaneView, Marker, ReplayBar, Series};

/// Sim seconds one scrub key moves the cursor.
const SCRUB: f64 = 15.0;

/// The replay's state.
#[derive(Debug)]
pub struct ReplayApp {
    recording: Recording,
    /// The moment shown, in seconds after midnight.
    cursor: f64,
    playing: bool,
    speed: f64,
    last_tick: Option<Instant>,
    selected: usize,
    scroll: usize,
    help: bool,
    notice: Option<String>,
    caption_times: Vec<Option<f64>>,
    quit: bool,
}

impl ReplayApp {
    /// A replay at the start of the night, playing.
    #[must_use]
    pub fn new(recording: Recording) -> Self {
        let names: Vec<String> = recording
            .header
            .lanes
            .iter()
            .map(|l| l.name.clone())
            .collect();
        let events = recording.events.iter().map(|e| CaptionEvent {
            sim: e.sim,
            kind: e.kind.as_str(),
            mark: e.mark,
            lane: e.lane,
        });
        let caption_times = scenario::caption_times(&recording.header.captions, &names, &events);
        let notice = recording.truncated.then(|| {
            "the recording's last line was cut short; playing what was written".to_string()
        });
        Self {
            recording,
            cursor: NIGHT_START,
            playing: true,
            speed: 1.0,
            last_tick: None,
            selected: 0,
            scroll: 0,
            help: false,
            notice,
            caption_times,
            quit: false,
        }
    }

    /// Moves the cursor to `at` (seconds after midnight) and stops playing.
    pub fn seek(&mut self, at: f64) {
        self.cursor = at.clamp(NIGHT_START, self.end());
        self.playing = false;
    }

    fn end(&self) -> f64 {
        self.recording.last_sim()
    }

    /// The last sample at or before the cursor.
    fn sample(&self) -> Option<&Sample> {
        let samples = &self.recording.samples;
        let after = samples.partition_point(|s| s.sim <= self.cursor);
        after
            .checked_sub(1)
            .map(|i| &samples[i])
            .or(samples.first())
    }

    /// The verdict, once the cursor has reached the end of the night.
    fn ends(&self) -> Vec<Option<LaneEnd>> {
        let lanes = self.recording.header.lanes.len();
        match &self.recording.end {
            Some(end) if self.cursor >= end.sim => end.lanes.iter().cloned().map(Some).collect(),
            _ => vec![None; lanes],
        }
    }

    fn series(&self, lane: usize) -> Series {
        let upto = self
            .recording
            .samples
            .partition_point(|s| s.sim <= self.cursor);
        let samples = &self.recording.samples[..upto];
        // Downsampled by stride, so a long recording draws as cheaply as a short one.
        let stride = samples.len().div_ceil(MAX_POINTS).max(1);
        let mut series = Series::default();
        let mut picked: Vec<&Sample> = samples.iter().step_by(stride).collect();
        if let Some(last) = samples.last()
            && (samples.len() - 1) % stride != 0
        {
            picked.push(last);
        }
        for sample in picked {
            let Some(snap) = sample.lanes.get(lane) else {
                continue;
            };
            let t = sample.sim - NIGHT_START;
            series.rows.push((t, snap.rows as f64));
            series.distinct.push((t, snap.distinct as f64));
            series.duplicated.push((t, snap.duplicated as f64));
            series
                .checkpoints
                .push((t, snap.checkpoints.unwrap_or(0) as f64));
            if let Some(age) = snap.heartbeat_age {
                series.heartbeat_age.push((t, age));
            }
        }
        series
    }

    fn events_shown(&self) -> usize {
        self.recording
            .events
            .partition_point(|e| e.sim <= self.cursor)
    }

    fn step_event(&mut self, forward: bool) {
        let events = &self.recording.events;
        let target = if forward {
            events
                .iter()
                .map(|e| e.sim)
                .find(|&t| t > self.cursor + 1e-6)
        } else {
            events
                .iter()
                .rev()
                .map(|e| e.sim)
                .find(|&t| t < self.cursor - 1e-6)
        };
        match target {
            Some(t) => self.seek(t),
            None if forward => self.seek(self.end()),
            None => self.seek(NIGHT_START),
        }
    }

    fn next_caption(&mut self) {
        let next = self
            .caption_times
            .iter()
            .flatten()
            .copied()
            .filter(|&t| t > self.cursor + 1e-6)
            .fold(None, |best: Option<f64>, t| {
                Some(best.map_or(t, |b| b.min(t)))
            });
        match next {
            Some(t) => self.seek(t),
            None if self.caption_times.iter().flatten().next().is_some() => {
                let first = self
                    .caption_times
                    .iter()
                    .flatten()
                    .copied()
                    .fold(f64::INFINITY, f64::min);
                self.seek(first);
            }
            None => self.notice = Some("this recording has no captions".into()),
        }
    }
}

impl Screen for ReplayApp {
    fn mode(&self) -> Mode {
        Mode::Replay
    }

    fn quit_requested(&self) -> bool {
        self.quit
    }

    fn lane_count(&self) -> usize {
        self.recording.header.lanes.len()
    }

    fn select(&mut self, lane: usize) {
        if lane < self.lane_count() {
            self.selected = lane;
        }
    }

    fn tick(&mut self, now: Instant) -> Result<(), String> {
        if let Some(last) = self.last_tick
            && self.playing
        {
            let real = now.saturating_duration_since(last).as_secs_f64();
            self.cursor += real * self.recording.header.scale * self.speed;
            if self.cursor >= self.end() {
                self.cursor = self.end();
                self.playing = false;
            }
        }
        self.last_tick = Some(now);
        Ok(())
    }

    fn update(&mut self, action: Action, _now: Instant) -> Result<(), String> {
        if self.help && action != Action::Quit {
            self.help = false;
            if action == Action::ToggleHelp {
                return Ok(());
            }
        }
        self.notice = None;
        match action {
            Action::Quit => self.quit = true,
            Action::TogglePause => {
                if !self.playing && self.cursor >= self.end() {
                    self.cursor = NIGHT_START;
                }
                self.playing = !self.playing;
            }
            Action::SpeedUp | Action::SpeedDown => {
                let factor = if action == Action::SpeedUp { 2.0 } else { 0.5 };
                self.speed = (self.speed * factor).clamp(MIN_SPEED, MAX_SPEED);
                self.notice = Some(format!("replay speed {}x", fmt_speed(self.speed)));
            }
            Action::ScrubBack => self.seek(self.cursor - SCRUB),
            Action::ScrubForward => self.seek(self.cursor + SCRUB),
            Action::PrevEvent => self.step_event(false),
            Action::NextEvent => self.step_event(true),
            Action::JumpStart => self.seek(NIGHT_START),
            Action::JumpEnd => self.seek(self.end()),
            Action::NextCaption => self.next_caption(),
            Action::NextLane => self.selected = (self.selected + 1) % self.lane_count().max(1),
            Action::PrevLane => {
                let n = self.lane_count().max(1);
                self.selected = (self.selected + n - 1) % n;
            }
            Action::ScrollUp => self.scroll = (self.scroll + 3).min(self.events_shown()),
            Action::ScrollDown => self.scroll = self.scroll.saturating_sub(3),
            Action::ScrollEnd => self.scroll = 0,
            Action::ToggleHelp => self.help = !self.help,
            // A replay has no processes: the live-only keys are not bound in this mode.
            Action::KillLane
            | Action::KillAll
            | Action::ToggleRandomKills
            | Action::ToggleHang
            | Action::CycleStrategy
            | Action::WipeCheckpoints
            | Action::AddWorker
            | Action::Restart
            | Action::Reset
            | Action::ToggleRecord => {}
        }
        Ok(())
    }

    fn view(&self) -> Dashboard {
        let header = &self.recording.header;
        let sample = self.sample();
        let ends = self.ends();
        let shown = self.events_shown();
        let events = &self.recording.events[..shown];
        let lanes: Vec<LaneView> = header
            .lanes
            .iter()
            .enumerate()
            .filter_map(|(i, info)| {
                let snap = sample?.lanes.get(i)?;
                let markers: Vec<Marker> = events
                    .iter()
                    .filter(|e| e.lane == Some(i))
                    .filter_map(|e| {
                        e.mark.map(|m| Marker {
                            at: e.sim - NIGHT_START,
                            kind: marker_kind(m),
                        })
                    })
                    .collect();
                let meta = LaneMeta {
                    name: &info.name,
                    strategy: &info.strategy,
                    items: info.items,
                    dead_man: header.dead_man,
                };
                Some(lane_view(
                    &meta,
                    snap,
                    self.series(i),
                    markers,
                    ends.get(i).and_then(Option::as_ref),
                ))
            })
            .collect();
        let multi = header.lanes.len() > 1;
        let width = header.lanes.iter().map(|l| l.name.len()).max().unwrap_or(0);
        let timeline = events
            .iter()
            .map(|e| {
                let name = e
                    .lane
                    .filter(|_| multi)
                    .and_then(|l| header.lanes.get(l))
                    .map(|l| l.name.as_str());
                e.line(name, width)
            })
            .collect();
        let snapshots = sample.map(|s| s.lanes.clone()).unwrap_or_default();
        let items: Vec<u64> = header.lanes.iter().map(|l| l.items).collect();
        let caption = scenario::current_caption(&self.caption_times, self.cursor)
            .and_then(|i| header.captions.get(i))
            .map(|c| c.text.clone());
        let clock = SimTime(self.cursor);
        Dashboard {
            title: header.title.clone(),
            scenario: header.scenario.clone(),
            clock,
            speed: self.speed,
            paused: !self.playing,
            seed: header.seed,
            random_kills: false,
            symptoms: symptoms(&snapshots, &items, &ends),
            lanes,
            selected: self.selected.min(header.lanes.len().saturating_sub(1)),
            timeline,
            timeline_scroll: self.scroll,
            help: self.help,
            notice: self.notice.clone(),
            x_max: (self.end() - NIGHT_START + 60.0).max(20.0 * 60.0),
            db_dir: header
                .lanes
                .first()
                .map(|l| l.db.display().to_string())
                .unwrap_or_default(),
            mode: Mode::Replay,
            caption,
            recording: None,
            replay: Some(ReplayBar {
                end: SimTime(self.end()),
                playing: self.playing,
                partial: self.recording.end.is_none() || self.recording.truncated,
            }),
        }
    }
}
