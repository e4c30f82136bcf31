//! Replaying a recording in the dashboard: no processes, no databases. A cursor moves through
//! the recorded night (playing, or scrubbed by hand) and every panel shows the values recorded
//! at that moment.

use std::time::Instant;

use crate::clock::{NIGHT_START, SimTime};
use crate::engine::LaneSnapshot;
use crate::error::Error;
use crate::record::{LaneEnd, Recording, Sample};
use crate::scenario::{self, CaptionEvent};
use crate::tui::Screen;
use crate::tui::chrome::{
    Chrome, LaneMeta, MAX_POINTS, NoticeLife, Scene, lane_view, marker_kind, symptoms, x_max,
};
use crate::tui::keymap::{Action, Mode};
use crate::tui::lecture::{self, Hold, Why};
use crate::tui::moment::{self, LaneOver};
use crate::tui::notes::NoteLine;
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
}

/// A replay's lecture: its stops, and the one it holds at.
#[derive(Debug)]
struct Lecture {
    stops: Vec<(f64, Why)>,
    /// Stops at or before this moment are behind: playing from here stops only after it.
    behind: f64,
    hold: Option<Hold>,
    /// The captions of the stop held at not shown yet, the one on screen first: space shows
    /// the next before going on, so every caption is on screen at its stop.
    captions: Vec<usize>,
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
        let lane_ends = match &recording.end {
            Some(end) => end.lanes.iter().cloned().map(Some).collect(),
            None => vec![None; recording.header.lanes.len()],
        };
        let overs = (0..recording.header.lanes.len())
            .map(|lane| moment::lane_over(&recording.samples, &recording.events, lane))
            .collect();
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
        }
    }

    /// Lecture mode: playing stops at each caption, kill, restart, alert, symptom, `done` and
    /// verdict, and goes on with `space`.
    #[must_use]
    pub fn lecture(mut self, captions_only: bool) -> Self {
        let header = &self.recording.header;
        let name = |lane: Option<usize>| {
            lane.and_then(|l| header.lanes.get(l))
                .map(|l| l.name.as_str())
        };
        let mut stops: Vec<(f64, Why)> = (self.recording.events.iter())
            .filter_map(|e| Some((e.sim, lecture::why(e.kind, e.mark, name(e.lane), &e.text)?)))
            .collect();
        stops.extend(
            self.caption_times
                .iter()
                .flatten()
                .map(|&t| (t, Why::Caption)),
        );
        // Each lane's verdict at its end (as live, where it is read once the lane has ended),
        // and the symptoms the timeline does not log where the figures first show them.
        let samples = &self.recording.samples;
        for (i, (end, over)) in self.lane_ends.iter().zip(&self.overs).enumerate() {
            if let (Some(end), Some(over)) = (end, over) {
                // What the receiving end held when the lane ended, not at the night's end.
                let messages =
                    (samples[over.sample].lanes.get(i)).and_then(|l| l.messages.as_ref());
                let name = header.lanes.get(i).map_or("", |l| l.name.as_str());
                stops.push((over.at, Why::verdict(name, &end.derived, messages)));
            }
        }
        let items: Vec<u64> = header.lanes.iter().map(|l| l.items).collect();
        let mut moments: Vec<f64> = (samples.iter().map(|s| s.sim))
            .chain(self.overs.iter().flatten().map(|o| o.at))
            .collect();
        moments.sort_by(f64::total_cmp);
        let mut lit = Vec::new();
        for at in moments {
            let snaps = self.snapshots_at(at);
            if snaps.is_empty() {
                continue;
            }
            let now = symptoms(&snaps, &items, &self.ends_at(at));
            let newly = lecture::newly_lit(&mut lit, &now);
            stops.extend(newly.into_iter().map(|why| (at, why)));
        }
        if captions_only {
            stops.retain(|(_, why)| *why == Why::Caption);
        }
        stops.sort_by(|a, b| a.0.total_cmp(&b.0));
        self.lecture = Some(Lecture {
            stops,
            behind: f64::NEG_INFINITY,
            hold: None,
            captions: Vec::new(),
        });
        self
    }

    /// Playing from the cursor to `to`: where it stops (a lecture's next stop, if one comes
    /// first), holding there.
    fn play_to(&mut self, to: f64) -> f64 {
        let Some(lecture) = self.lecture.as_mut() else {
            return to;
        };
        let Some(&(at, _)) = (lecture.stops.iter()).find(|(t, _)| *t > lecture.behind + 1e-6)
        else {
            return to;
        };
        if at > to {
            return to;
        }
        // What falls within the same second of the night is one stop (a symptom the figures
        // show a sample after the line that caused it).
        let mut hold = Hold::new(SimTime(at));
        let mut behind = at;
        for (t, why) in lecture
            .stops
            .iter()
            .filter(|(t, _)| *t >= at && *t < at + 1.0)
        {
            hold.add(why.clone());
            behind = behind.max(*t);
        }
        lecture.behind = behind;
        lecture.hold = Some(hold);
        let mut captions: Vec<(f64, usize)> = (self.caption_times.iter().enumerate())
            .filter_map(|(i, t)| t.filter(|&t| t >= at && t <= behind).map(|t| (t, i)))
            .collect();
        captions.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        lecture.captions = captions.into_iter().map(|(_, i)| i).collect();
        self.playing = false;
        at
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

    /// Moves the cursor to `at` (seconds after midnight) and stops playing.
    pub fn seek(&mut self, at: f64) {
        self.cursor = at.clamp(NIGHT_START, self.end());
        self.playing = false;
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

    /// Each caption's text and the moment (seconds after midnight) the night reached it.
    #[must_use]
    pub fn caption_moments(&self) -> Vec<(String, f64)> {
        self.recording
            .header
            .captions
            .iter()
            .zip(&self.caption_times)
            .zip(&self.caption_texts)
            .filter_map(|((_, at), (text, _))| at.map(|at| (text.clone(), at)))
            .collect()
    }

    fn end(&self) -> f64 {
        self.recording.last_sim()
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

    fn series(&self, lane: usize) -> Series {
        let upto = moment::lane_sample_index(
            &self.recording.samples,
            self.cursor,
            self.overs.get(lane).copied().flatten(),
        )
        .map_or(0, |i| i + 1);
        let samples = &self.recording.samples[..upto];
        // Downsampled by stride, so a long recording draws as cheaply as a short one.
        let stride = samples.len().div_ceil(MAX_POINTS).max(1);
        let mut series = Series::default();
        let mut picked: Vec<&Sample> = samples.iter().step_by(stride).collect();
        if let Some(last) = samples.last()
            && !(samples.len() - 1).is_multiple_of(stride)
        {
            picked.push(last);
        }
        // As live: a lane's curves end where it finished.
        let mut ended = false;
        for sample in picked {
            let Some(snap) = sample.lanes.get(lane) else {
                continue;
            };
            let was_ended = std::mem::replace(&mut ended, snap.finished());
            if was_ended {
                continue;
            }
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

    fn update(&mut self, action: Action, _now: Instant) -> Result<(), Error> {
        let Some(action) = self
            .chrome
            .update(action, self.lane_count(), self.events_shown())
        else {
            return Ok(());
        };
        match action {
            Action::TogglePause => {
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
            Action::SpeedUp | Action::SpeedDown => self.chrome.note(format!(
                "replay speed {}x",
                crate::tui::ui::speed_label(self.chrome.speed)
            )),
            Action::ScrubBack => self.seek(self.cursor - SCRUB),
            Action::ScrubForward => self.seek(self.cursor + SCRUB),
            Action::PrevEvent => self.step_event(false),
            Action::NextEvent => self.step_event(true),
            Action::JumpStart => self.seek(NIGHT_START),
            Action::JumpEnd => self.seek(self.end()),
            Action::NextCaption => self.next_caption(),
            // Quitting and the chrome's own keys are the chrome's; a replay has no processes (and
            // not necessarily its databases): the live-only keys are not bound in this mode.
            Action::Quit
            | Action::ShowIds
            | Action::NextLane
            | Action::PrevLane
            | Action::ScrollUp
            | Action::ScrollDown
            | Action::ScrollEnd
            | Action::ToggleHelp
            | Action::KillLane
            | Action::KillAll
            | Action::ToggleRandomKills
            | Action::ToggleHang
            | Action::CycleStrategy
            | Action::WipeCheckpoints
            | Action::AddWorker
            | Action::Restart
            | Action::Reset
            | Action::ToggleRecord
            | Action::BackToNow
            | Action::Suspend => {}
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
        let header = &self.recording.header;
        let snapshots = self.snapshots_at(self.cursor);
        let ends = self.ends();
        let shown = self.events_shown();
        let events = &self.recording.events[..shown];
        let lanes: Vec<LaneView> = header
            .lanes
            .iter()
            .enumerate()
            .filter_map(|(i, info)| {
                let snap = snapshots.get(i)?;
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
                (e.line(name, width), e.kind.tone(e.mark))
            })
            .collect();
        let items: Vec<u64> = header.lanes.iter().map(|l| l.items).collect();
        let held = (self.lecture.as_ref())
            .filter(|l| l.hold.is_some())
            .and_then(|l| l.captions.first().copied());
        let caption = held
            .or_else(|| scenario::current_caption(&self.caption_times, self.cursor))
            .and_then(|i| self.caption_texts.get(i))
            .map(|(text, _)| text.clone());
        let mut dashboard = self.chrome.dashboard(Scene {
            title: header.title.clone(),
            scenario: header.scenario.clone(),
            clock: SimTime(self.cursor),
            paused: !self.playing,
            seed: header.seed,
            random_kills: false,
            symptoms: symptoms(&snapshots, &items, &ends),
            lanes,
            timeline,
            x_max: x_max(self.end() - NIGHT_START),
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
        });
        dashboard.lecture = (self.lecture.as_ref()).map(|l| {
            let over = self.cursor >= self.end() && l.hold.is_none();
            lecture::line(l.hold.as_ref(), !self.playing, over)
        });
        dashboard
    }
}

/// Each caption's text and notes with the lane's figures as recorded at its moment (the first
/// sample at or after it: the live night fills them in on the tick that reaches it).
fn filled_captions(recording: &Recording, times: &[Option<f64>]) -> Vec<(String, Option<String>)> {
    let header = &recording.header;
    let names: Vec<&str> = header.lanes.iter().map(|l| l.name.as_str()).collect();
    header
        .captions
        .iter()
        .zip(times)
        .map(|(caption, at)| {
            caption.filled(&names, |lane| {
                let at = (*at)?;
                let samples = &recording.samples;
                let mut i = samples.partition_point(|s| s.sim < at - 1e-6);
                // Never a figure from after the lane's last line, before it.
                let over = moment::lane_over(samples, &recording.events, lane);
                if let Some(over) = over.filter(|o| !moment::ended(Some(*o), at)) {
                    i = i.min(over.sample.saturating_sub(1));
                }
                let sample = samples.get(i).or(samples.last())?;
                let info = header.lanes.get(lane)?;
                let snap = sample.lanes.get(lane)?;
                Some(scenario::CaptionFigures::of(snap, &info.name, info.items).at(at))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{ClaimedDone, LaneSnapshot, Mark, Source, StateKind};
    use crate::record::{End, Event, Header, LaneInfo};
    use crate::scenario::Caption;

    const KILL: f64 = 707.0;
    const RESTART: f64 = 725.0;

    /// A naive night, sampled every 10 sim seconds: one row per 6.3 sim seconds, killed at
    /// 02:11:47 (707 s) and restarted from task-000 18 s later.
    fn samples() -> Vec<Sample> {
        let (kill, restart) = (KILL, RESTART);
        let rows_at = |t: f64| -> u64 {
            if t < restart {
                ((t / 6.3) as u64).min(112)
            } else {
                112 + (((t - restart) / 6.3) as u64).min(200)
            }
        };
        (0..=200)
            .map(|i| {
                let t = f64::from(i) * 10.0;
                let rows = rows_at(t);
                let distinct = rows.min(112).max(rows.saturating_sub(112).min(200));
                let done = rows >= 312;
                Sample {
                    real_ms: (t * 10.0) as u64,
                    sim: NIGHT_START + t,
                    lanes: vec![LaneSnapshot {
                        rows,
                        distinct,
                        duplicated: rows.saturating_sub(112).min(112),
                        outside: 0,
                        checkpoints: None,
                        heartbeat_age: Some(4.0),
                        alive: !done && !(kill..restart).contains(&t),
                        progress: true,
                        stale: false,
                        state: if done {
                            "done".into()
                        } else {
                            "running pid 4242".into()
                        },
                        state_kind: if done {
                            StateKind::Done
                        } else {
                            StateKind::Running
                        },
                        task: Some(crate::task::task_id((rows.max(1) - 1) % 200)),
                        restarts: u32::from(t >= restart),
                        kills: u32::from(t >= kill),
                        workers: 1,
                        messages: None,
                        claimed: done.then(|| ClaimedDone {
                            rows_written: 312,
                            status: "ok".into(),
                        }),
                        restarted_at_zero: t >= restart + 10.0,
                        no_heartbeat: false,
                    }],
                }
            })
            .collect()
    }

    fn recording() -> Recording {
        let (kill, restart) = (KILL, RESTART);
        let samples = samples();
        let event = |t: f64, source, kind: crate::engine::Kind, text: &str, mark| Event {
            real_ms: (t * 10.0) as u64,
            sim: NIGHT_START + t,
            lane: Some(0),
            source,
            kind,
            text: text.into(),
            mark,
        };
        Recording {
            header: Header {
                format: crate::record::FORMAT.into(),
                version: crate::record::VERSION,
                reclaim: "0.1.0".into(),
                started_unix: 0.0,
                title: "A recorded night".into(),
                scenario: "incident".into(),
                seed: 214,
                scale: 100.0,
                dead_man: 300.0,
                lanes: vec![LaneInfo {
                    name: "naive".into(),
                    strategy: "naive".into(),
                    items: 200,
                    db: "/tmp/night1-1-naive.db".into(),
                }],
                captions: vec![Caption {
                    at: None,
                    on: Some("kill".into()),
                    lane: None,
                    text: "The host reclaims the instance.".into(),
                    notes: None,
                }],
            },
            events: vec![
                event(
                    1.0,
                    Source::Worker,
                    crate::engine::Kind::Start,
                    "run_id=(none)  items=200",
                    None,
                ),
                event(
                    kill,
                    Source::Runner,
                    crate::engine::Kind::Notice,
                    "instance reclaimed by host",
                    Some(Mark::Kill),
                ),
                event(
                    restart,
                    Source::Runner,
                    crate::engine::Kind::Notice,
                    "supervisor restarts the worker",
                    Some(Mark::Restart),
                ),
                event(
                    1970.0,
                    Source::Worker,
                    crate::engine::Kind::Done,
                    "rows_written=312  status=ok",
                    None,
                ),
            ],
            samples,
            end: Some(End {
                real_ms: 20_000,
                sim: NIGHT_START + 2000.0,
                lanes: vec![LaneEnd {
                    items: 200,
                    rows: 312,
                    distinct: 200,
                    duplicated_task_ids: 112,
                    missing: 0,
                    derived_status: crate::verdict::Status::DataWrong,
                    derived: "DATA WRONG (112 duplicated task ids)".into(),
                    claimed_status: Some("ok".into()),
                    completed: true,
                }],
            }),
            truncated: false,
        }
    }

    fn screen(app: &ReplayApp) -> String {
        crate::tui::ui::render_text(&app.view(), 100, 30)
    }

    #[test]
    fn scrubbing_shows_the_values_recorded_at_that_moment() {
        let mut app = ReplayApp::new(recording());
        app.seek(NIGHT_START + 700.0);
        let view = app.view();
        // The sample at 700 s: 111 rows, nothing duplicated yet, no verdict.
        assert_eq!(view.clock.to_string(), "02:11:40");
        assert_eq!(view.lanes[0].rows, 111);
        assert_eq!(view.lanes[0].duplicated, 0);
        assert_eq!(view.lanes[0].derived_ok, None);
        assert_eq!(view.timeline.len(), 1);
        insta::assert_snapshot!(screen(&app));

        app.update(Action::ScrubForward, Instant::now())
            .unwrap_or_default();
        let view = app.view();
        assert_eq!(view.clock.to_string(), "02:11:55");
        assert_eq!(view.lanes[0].kills, 1);
        assert_eq!(
            view.caption.as_deref(),
            Some("The host reclaims the instance.")
        );
    }

    #[test]
    fn the_end_shows_the_recorded_verdict() {
        let mut app = ReplayApp::new(recording());
        app.update(Action::JumpEnd, Instant::now())
            .unwrap_or_default();
        let view = app.view();
        assert_eq!(view.lanes[0].rows, 312);
        assert_eq!(
            view.lanes[0].derived,
            "DATA WRONG (112 duplicated task ids)"
        );
        assert_eq!(
            view.lanes[0].claimed.as_deref(),
            Some("rows_written=312 status=ok")
        );
        assert!(
            view.symptoms.iter().all(|(_, seen)| *seen),
            "{:?}",
            view.symptoms
        );
        insta::assert_snapshot!(screen(&app));
    }

    #[test]
    fn stepping_moves_from_event_to_event_and_caption_to_caption() {
        let mut app = ReplayApp::new(recording());
        let now = Instant::now();
        app.update(Action::NextEvent, now).unwrap_or_default();
        assert_eq!(app.view().clock.to_string(), "02:00:01");
        app.update(Action::NextEvent, now).unwrap_or_default();
        assert_eq!(app.view().clock.to_string(), "02:11:47");
        app.update(Action::PrevEvent, now).unwrap_or_default();
        assert_eq!(app.view().clock.to_string(), "02:00:01");
        app.update(Action::NextCaption, now).unwrap_or_default();
        assert_eq!(app.view().clock.to_string(), "02:11:47");
    }

    #[test]
    fn playing_advances_at_the_recorded_scale_and_stops_at_the_end() {
        let mut app = ReplayApp::new(recording());
        let t0 = Instant::now();
        app.tick(t0).unwrap_or_default();
        app.tick(t0 + std::time::Duration::from_secs(2))
            .unwrap_or_default();
        // 2 real seconds at 100 sim seconds per second.
        assert_eq!(app.view().clock.to_string(), "02:03:20");
        app.tick(t0 + std::time::Duration::from_secs(600))
            .unwrap_or_default();
        let view = app.view();
        assert_eq!(view.clock.to_string(), "02:33:20");
        assert!(view.paused);
    }

    #[test]
    fn time_spent_suspended_is_not_played() {
        let mut app = ReplayApp::new(recording());
        let t0 = Instant::now();
        app.tick(t0).unwrap_or_default();
        app.tick(t0 + std::time::Duration::from_secs(1))
            .unwrap_or_default();
        app.suspend(t0 + std::time::Duration::from_secs(1));
        // Stopped for an hour, then one more second of playing.
        let back = t0 + std::time::Duration::from_secs(3601);
        app.unsuspend(back);
        app.tick(back + std::time::Duration::from_secs(1))
            .unwrap_or_default();
        assert_eq!(app.view().clock.to_string(), "02:03:20");
    }

    #[test]
    fn a_lecture_stops_at_each_moment_and_space_goes_on() {
        let mut app = ReplayApp::new(recording()).lecture(false);
        let t0 = Instant::now();
        let later = |s: u64| t0 + std::time::Duration::from_secs(s);
        app.tick(t0).unwrap_or_default();
        // An hour of real time: playing would reach the end, but stops at the kill.
        app.tick(later(3600)).unwrap_or_default();
        let view = app.view();
        assert_eq!(view.clock.to_string(), "02:11:47");
        assert!(view.paused);
        assert_eq!(
            view.lecture.as_ref().map(|l| l.full.as_str()),
            Some("stopped at 02:11:47: the host kills naive; a caption. space goes on")
        );
        assert_eq!(
            view.caption.as_deref(),
            Some("The host reclaims the instance.")
        );
        // Nothing moves until space.
        app.tick(later(7200)).unwrap_or_default();
        assert_eq!(app.view().clock.to_string(), "02:11:47");
        app.update(Action::TogglePause, later(7200))
            .unwrap_or_default();
        app.tick(later(7300)).unwrap_or_default();
        let view = app.view();
        assert_eq!(view.clock.to_string(), "02:12:05");
        assert_eq!(
            view.lecture.as_ref().map(|l| l.full.as_str()),
            Some("stopped at 02:12:05: the supervisor restarts naive. space goes on")
        );
        app.update(Action::TogglePause, later(7300))
            .unwrap_or_default();
        app.tick(later(7400)).unwrap_or_default();
        // The 201st row, where the recorded figures first show it (a sample every 10 s).
        let view = app.view();
        assert_eq!(view.clock.to_string(), "02:21:30");
        assert_eq!(
            view.lecture.as_ref().map(|l| l.full.as_str()),
            Some("stopped at 02:21:30: symptom: row count exceeds queue size. space goes on")
        );
        app.update(Action::TogglePause, later(7400))
            .unwrap_or_default();
        app.tick(later(7500)).unwrap_or_default();
        // The lane's done line, with its verdict, its claim and the symptom they make together:
        // the lane ended there (live reads the verdict then), not at the recording's last line,
        // and its figures are those that show it over.
        let view = app.view();
        assert_eq!(view.clock.to_string(), "02:32:50");
        assert_eq!(
            view.lecture.as_ref().map(|l| l.full.as_str()),
            Some(
                "stopped at 02:32:50: symptom: status ok, data wrong; naive says done; naive's \
                 rows say DATA WRONG (112 duplicated task ids). space goes on"
            )
        );
        assert_eq!(
            view.lanes[0].derived,
            "DATA WRONG (112 duplicated task ids)"
        );
        assert_eq!(view.lanes[0].rows, 312);
        assert_eq!(
            view.lanes[0].claimed.as_deref(),
            Some("rows_written=312 status=ok")
        );
        // Nothing is left: space plays to the end and the line says so.
        app.update(Action::TogglePause, later(7600))
            .unwrap_or_default();
        app.tick(later(7700)).unwrap_or_default();
        assert_eq!(
            app.view().lecture.map(|l| l.full),
            Some("the night is over: nothing left to stop at".into())
        );
    }

    #[test]
    fn a_caption_shows_the_figures_recorded_at_its_moment() {
        let mut rec = recording();
        rec.header.captions[0].text = "{rows} rows, {kills} kill".into();
        rec.header.captions[0].notes = Some("say {rows}".into());
        let mut app = ReplayApp::new(rec);
        app.seek(NIGHT_START + 750.0);
        // The first sample at or after the kill (707 s) is the one at 710 s: 112 rows.
        assert_eq!(app.view().caption.as_deref(), Some("112 rows, 1 kill"));
        assert_eq!(app.caption_texts[0].1.as_deref(), Some("say 112"));
    }
}
