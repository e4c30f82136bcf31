//! Replaying a recording in the dashboard: no processes, no databases. A cursor moves through
//! the recorded night (playing, or scrubbed by hand) and every panel shows the values recorded
//! at that moment.

mod lecture;
mod view;

use std::time::Instant;

use crate::base::clock::{NIGHT_START, SimTime};
use crate::engine::LaneSnapshot;
use crate::error::Error;
use crate::record::{LaneEnd, Recording};
use crate::scenario::{self, CaptionEvent};
use crate::tui::captions::CaptionQueue;
use crate::tui::chrome::{Chrome, NoticeLife};
use crate::tui::keymap::{KeyAction, Mode};
use crate::tui::moment::{self, LaneOver};
use crate::tui::notes::NoteLine;
use crate::tui::screen::Screen;
use crate::tui::view::Dashboard;

use self::lecture::Lecture;
use self::view::filled_captions;

/// Sim seconds one scrub key moves the cursor.
const SCRUB: f64 = 15.0;

/// The replay's state.
#[derive(Debug)]
pub struct ReplayApp {
    recording: Recording,
    /// The moment shown, in seconds after midnight.
    cursor: f64,
    playing: bool,
    last_tick: Option<Instant>,
    /// Selection, scroll, help, speed, notice, quitting: as the live screen has them.
    chrome: Chrome,
    caption_times: Vec<Option<f64>>,
    /// Each caption's text and notes with the night's figures at its moment, as the live night
    /// showed them (the recording keeps the scenario's `{rows}`-style text).
    caption_texts: Vec<(String, Option<String>)>,
    /// Lecture mode: the moments to stop on, in time order, and where playing has stopped.
    lecture: Option<Lecture>,
    /// Each lane's verdict, shown once its lane is over (from the recording's `end`).
    lane_ends: Vec<Option<LaneEnd>>,
    /// When each lane ended (its last line before the figures first show it over: its `done`)
    /// and the sample that shows it over.
    overs: Vec<Option<LaneOver>>,
    /// The captions reached that the notes have had, and those they are still to get.
    noted: Vec<bool>,
    to_note: Vec<NoteLine>,
    /// Outside a lecture, playing holds at each caption's moment while it is read, for the
    /// live night's reading time (`CaptionQueue::hold_for`); which captions have been held.
    reading: CaptionQueue,
    held: Vec<bool>,
}

impl ReplayApp {
    /// A replay at the start of the night, playing.
    #[must_use]
    pub fn new(mut recording: Recording) -> Self {
        // In the order of the night (a line is logged a little after its moment at times): the
        // cursor finds what it has come to by time.
        recording.events.sort_by(|a, b| a.sim.total_cmp(&b.sim));
        let names: Vec<String> = recording
            .header
            .lanes
            .iter()
            .map(|l| l.name.clone())
            .collect();
        let events = recording.events.iter().map(|e| CaptionEvent {
            sim: e.sim,
            kind: e.kind,
            mark: e.mark,
            lane: e.lane,
        });
        let caption_times = scenario::caption_times(&recording.header.captions, &names, &events);
        let mut chrome = Chrome::new(NoticeLife::UntilNextKey);
        if recording.truncated {
            chrome.note("the recording's last line was cut short; playing what was written");
        }
        let caption_texts = filled_captions(&recording, &caption_times);
        let overs: Vec<_> = (0..recording.header.lanes.len())
            .map(|lane| moment::lane_over(&recording.samples, &recording.events, lane))
            .collect();
        let lane_ends = judged_ends(&recording, &overs);
        Self {
            lane_ends,
            overs,
            recording,
            cursor: NIGHT_START,
            playing: true,
            last_tick: None,
            chrome,
            caption_times,
            caption_texts,
            lecture: None,
            noted: Vec::new(),
            to_note: Vec::new(),
            reading: CaptionQueue::default(),
            held: Vec::new(),
        }
    }

    /// Each caption the cursor has reached and the notes have not had yet, for `take_notes`.
    fn note_captions(&mut self) {
        self.noted.resize(self.caption_times.len(), false);
        let mut reached: Vec<(f64, usize)> = (self.caption_times.iter().enumerate())
            .filter_map(|(i, t)| t.filter(|&t| t <= self.cursor).map(|t| (t, i)))
            .filter(|&(_, i)| !self.noted[i])
            .collect();
        reached.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (at, i) in reached {
            self.noted[i] = true;
            let (text, notes) = self.caption_texts[i].clone();
            self.to_note.push(NoteLine::Caption {
                at: SimTime(at),
                text,
                notes,
            });
        }
    }

    /// Whether the selected lane has the whole width (`z`).
    #[must_use]
    pub fn zoomed(&self) -> bool {
        self.chrome.zoom
    }

    /// The lane selected (`tab`, a click).
    #[must_use]
    pub fn selected(&self) -> usize {
        self.chrome.selected
    }

    /// Gives the selected lane the whole width, or every lane its share: a look back starts
    /// as the live screen was.
    pub fn set_zoom(&mut self, zoom: bool) {
        self.chrome.zoom = zoom;
    }

    /// Moves the cursor to `at` (seconds after midnight) and stops playing.
    pub fn seek(&mut self, at: f64) {
        self.cursor = at.clamp(NIGHT_START, self.end());
        self.playing = false;
        // Played on from here, the captions ahead are held again, those behind are not.
        let cursor = self.cursor;
        self.held = (self.caption_times.iter())
            .map(|t| t.is_some_and(|t| t < cursor))
            .collect();
        self.reading = CaptionQueue::default();
        if let Some(lecture) = self.lecture.as_mut() {
            // Playing on from here stops at the next moment, not at this one again.
            lecture.behind = self.cursor;
            lecture.hold = None;
            lecture.captions.clear();
        }
    }

    /// The frame at `at` (seconds after midnight) as the replay shows it while it plays there:
    /// what an export draws.
    pub fn frame_at(&mut self, at: f64) -> Dashboard {
        self.cursor = at.clamp(NIGHT_START, self.end());
        self.playing = self.cursor < self.end();
        self.view()
    }

    /// Each caption the night reached: its place among the header's captions, its text with
    /// its figures filled as the replay shows it, and its moment (seconds after midnight).
    #[must_use]
    pub fn caption_moments(&self) -> Vec<(usize, String, f64)> {
        (self
            .caption_times
            .iter()
            .zip(&self.caption_texts)
            .enumerate())
        .filter_map(|(i, (at, (text, _)))| at.map(|at| (i, text.clone(), at)))
        .collect()
    }

    fn end(&self) -> f64 {
        self.recording.last_sim()
    }

    /// Where playing toward `to` may go at `now` outside a lecture: not past a caption's moment
    /// not held yet (it is held there from now, with every caption of that moment, for as long
    /// as the live night holds for it), nor anywhere while one is being read.
    fn hold_for_captions(&mut self, to: f64, now: Instant) -> f64 {
        if self.lecture.is_some() {
            return to;
        }
        if self.reading.holding(now) {
            return self.cursor;
        }
        self.held.resize(self.caption_times.len(), false);
        let next = (self.caption_times.iter().enumerate())
            .filter_map(|(i, t)| t.map(|t| (i, t)))
            .filter(|&(i, t)| !self.held[i] && t >= self.cursor - 1e-9 && t <= to)
            .map(|(_, t)| t)
            .reduce(f64::min);
        let Some(at) = next else {
            return to;
        };
        for (i, t) in self.caption_times.iter().enumerate() {
            if t.is_some_and(|t| (t - at).abs() < 1e-9) && !self.held[i] {
                self.held[i] = true;
                let chars =
                    (self.recording.header.captions.get(i)).map_or(0, |c| c.text.chars().count());
                self.reading.hold_for(chars, now);
            }
        }
        at
    }

    /// Each lane's verdict at the cursor: once the night's end is reached, or once the lane has
    /// ended (a lane ends before the night does, and live shows its verdict then).
    fn ends(&self) -> Vec<Option<LaneEnd>> {
        self.ends_at(self.cursor)
    }

    /// Each lane's verdict as shown at `at` (seconds after midnight): from its last line on.
    fn ends_at(&self, at: f64) -> Vec<Option<LaneEnd>> {
        // A lane the figures never show over has its verdict at the night's end.
        let night_over = self.recording.end.as_ref().is_some_and(|end| at >= end.sim);
        (self.lane_ends.iter().zip(&self.overs))
            .map(|(end, over)| {
                let ended = moment::ended(*over, at) || (over.is_none() && night_over);
                end.clone().filter(|_| ended)
            })
            .collect()
    }

    /// Each lane's figures at `at`: the lane still working before its last line, over from it
    /// on (empty before any sample).
    fn snapshots_at(&self, at: f64) -> Vec<LaneSnapshot> {
        moment::snapshots_at(&self.recording.samples, at, &self.overs)
            .into_iter()
            .map_while(|s| s.map(|(_, snap)| snap))
            .collect()
    }

    /// The verdicts known of a night not over yet (a live night looked back at): each shows
    /// once its lane's figures show it over.
    #[must_use]
    pub fn with_lane_ends(mut self, ends: Vec<Option<LaneEnd>>) -> Self {
        if self.recording.end.is_none() {
            self.lane_ends = ends;
            self.lane_ends
                .resize(self.recording.header.lanes.len(), None);
        }
        self
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
            None => self.chrome.note("this recording has no captions"),
        }
    }
}

impl Screen for ReplayApp {
    fn mode(&self) -> Mode {
        Mode::Replay
    }

    fn quit_requested(&self) -> bool {
        self.chrome.quit
    }

    fn close_help(&mut self, _now: Instant) -> bool {
        std::mem::replace(&mut self.chrome.help, false)
    }

    fn lane_count(&self) -> usize {
        self.recording.header.lanes.len()
    }

    fn select(&mut self, lane: usize) {
        self.chrome.select(lane, self.lane_count());
    }

    fn tick(&mut self, now: Instant) -> Result<(), Error> {
        if self.playing {
            let real = self.last_tick.map_or(0.0, |last| {
                now.saturating_duration_since(last).as_secs_f64()
            });
            let to = self.cursor + real * self.recording.header.scale * self.chrome.speed;
            let to = self.hold_for_captions(to, now);
            self.cursor = self.play_to(to.min(self.end()));
            if self.cursor >= self.end() {
                self.cursor = self.end();
                self.playing = false;
            }
        }
        self.last_tick = Some(now);
        self.note_captions();
        Ok(())
    }

    fn update(&mut self, action: KeyAction, _now: Instant) -> Result<(), Error> {
        let Some(action) = self
            .chrome
            .update(action, self.lane_count(), self.events_shown())
        else {
            return Ok(());
        };
        match action {
            KeyAction::TogglePause => {
                let more =
                    (self.lecture.as_mut()).filter(|l| l.hold.is_some() && l.captions.len() > 1);
                if let Some(lecture) = more {
                    // The next caption of this stop, still held.
                    lecture.captions.remove(0);
                } else if let Some(hold) = self.lecture.as_mut().and_then(|l| l.hold.take()) {
                    // Goes on from the stop to the next one.
                    self.cursor = hold.at.0;
                    self.playing = true;
                } else {
                    if !self.playing && self.cursor >= self.end() {
                        self.seek(NIGHT_START);
                        if let Some(lecture) = self.lecture.as_mut() {
                            // Played again from the start: every stop again, 02:00:00's too.
                            lecture.behind = f64::NEG_INFINITY;
                        }
                    }
                    self.playing = !self.playing;
                }
            }
            KeyAction::SpeedUp | KeyAction::SpeedDown => self.chrome.note(format!(
                "replay speed {}x",
                crate::tui::ui::speed_label(self.chrome.speed)
            )),
            KeyAction::ScrubBack => self.seek(self.cursor - SCRUB),
            KeyAction::ScrubForward => self.seek(self.cursor + SCRUB),
            KeyAction::PrevEvent => self.step_event(false),
            KeyAction::NextEvent => self.step_event(true),
            KeyAction::JumpStart => self.seek(NIGHT_START),
            KeyAction::JumpEnd => self.seek(self.end()),
            KeyAction::NextCaption => self.next_caption(),
            // Quitting and the chrome's own keys are the chrome's; a replay has no processes (and
            // not necessarily its databases): the live-only keys are not bound in this mode.
            KeyAction::Quit
            | KeyAction::ShowIds
            | KeyAction::NextLane
            | KeyAction::PrevLane
            | KeyAction::ScrollUp
            | KeyAction::ScrollDown
            | KeyAction::ScrollEnd
            | KeyAction::ToggleHelp
            | KeyAction::ToggleZoom
            | KeyAction::KillLane
            | KeyAction::KillAll
            | KeyAction::ToggleRandomKills
            | KeyAction::ToggleHang
            | KeyAction::PauseWorker
            | KeyAction::RestartServer
            | KeyAction::LoseAnswer
            | KeyAction::CycleStrategy
            | KeyAction::WipeCheckpoints
            | KeyAction::AddWorker
            | KeyAction::Restart
            | KeyAction::Reset
            | KeyAction::ToggleRecord
            | KeyAction::BackToNow
            | KeyAction::Suspend => {}
        }
        self.note_captions();
        Ok(())
    }

    fn take_notes(&mut self) -> Vec<NoteLine> {
        std::mem::take(&mut self.to_note)
    }

    fn notice(&mut self, text: String, _now: Instant) {
        self.chrome.note(text);
    }

    /// The time spent suspended is not played: playback goes on from where it stopped.
    fn unsuspend(&mut self, now: Instant) {
        self.last_tick = Some(now);
    }

    fn view(&self) -> Dashboard {
        self.frame()
    }
}

#[cfg(test)]
mod tests;

/// Each lane's verdict once the night has ended, judged from the figures the samples show it
/// over with (the last sample for a lane never shown over), never read from the `end` line's
/// words: an `end` line edited to say `ok` over duplicates still shows DATA WRONG. What the
/// worker claimed, whether it completed and how its tables compared (`compare`: the samples
/// do not hold the tables) are the end line's.
fn judged_ends(recording: &Recording, overs: &[Option<moment::LaneOver>]) -> Vec<Option<LaneEnd>> {
    let samples = &recording.samples;
    (recording.header.lanes.iter().enumerate())
        .map(|(i, info)| {
            let end = recording.end.as_ref()?.lanes.get(i)?;
            let at = overs
                .get(i)
                .copied()
                .flatten()
                .map_or(samples.len().checked_sub(1)?, |o| o.sample);
            let snap = samples.get(at)?.lanes.get(i)?;
            Some(LaneEnd {
                state: end.state.clone(),
                state_differs: end.state_differs,
                ..LaneEnd::from_sample(
                    snap,
                    info.items,
                    end.claimed_status.as_deref(),
                    end.completed,
                )
            })
        })
        .collect()
}
