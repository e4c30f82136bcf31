//! The live screen: its UI state and `update`, which decides, without touching anything, what a
//! key should do to the night (`Command`s); and `Live`, the `Screen` that pairs it with the
//! `Night` and carries the commands out. No terminal I/O lives here.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::scenario::Scenario;
use crate::tui::Screen;
use crate::tui::chrome::{Chrome, NoticeLife};
use crate::tui::keymap::{Action, Mode};
use crate::tui::lecture::{self, Hold};
use crate::tui::night::Night;
use crate::tui::notes::NoteLine;
use crate::tui::replay::ReplayApp;
use crate::tui::view::{Dashboard, IdsView};
use crate::worker::Strategy;

use crate::limits::MAX_WORKERS;

/// How long a notice stays in the header.
const NOTICE_FOR: Duration = Duration::from_secs(4);

/// What should happen to the night: `update`'s answer, carried out by `Night::execute` in order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Command {
    /// The host reclaims this lane's workers (SIGKILL).
    Kill(usize),
    /// The host reclaims the instance: every lane at once.
    KillAll,
    SetRandomKills(bool),
    /// SIGSTOP the lane's workers, or SIGCONT them if they are hung.
    ToggleHang(usize),
    /// The lane runs this strategy from now on: the night starts again on fresh databases.
    SetStrategy(usize, Strategy),
    WipeCheckpoints(usize),
    AddWorker(usize),
    /// A new night from 02:00 on fresh databases (recorded if this one was).
    Restart,
    /// The scenario's own strategies, speed and random kills, from 02:00.
    Reset,
    /// The night starts again from 02:00, recorded into a session file.
    StartRecording,
    /// The recording gets its verdict (if the night has one) and is closed.
    FinishRecording,
    Pause,
    Resume,
    SetSpeed(f64),
    /// The next caption the night has reached, at once.
    NextCaption,
    /// List this lane's duplicated task ids (read from its rows).
    ShowIds(usize),
}

/// What `update` needs to know about the night to decide.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    pub lanes: Vec<LaneFacts>,
    /// Lines in the timeline.
    pub timeline: usize,
    pub paused: bool,
    pub random_kills: bool,
    pub seed: u64,
    pub recording: bool,
    /// How many captions the scenario has.
    pub captions: usize,
}

/// What `update` needs to know about one lane.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaneFacts {
    /// `None` for a lane running the user's own command (`exec`).
    pub strategy: Option<Strategy>,
    /// A worker process exists.
    pub alive: bool,
    pub finished: bool,
    pub workers: usize,
}

/// The live screen's UI state.
#[derive(Debug)]
pub struct App {
    chrome: Chrome,
    /// The duplicated ids shown over the dashboard (`i`), until the next key.
    ids: Option<IdsView>,
}

impl Default for App {
    fn default() -> Self {
        Self {
            chrome: Chrome::new(NoticeLife::For(NOTICE_FOR)),
            ids: None,
        }
    }
}

impl App {
    /// Decides what `action` does, given the night as `facts` says it is at `now`: the UI
    /// state changes here, and what should happen to the night comes back as commands.
    pub fn update(&mut self, action: Action, facts: &Facts, now: Instant) -> Vec<Command> {
        let Some(action) = self
            .chrome
            .update(action, facts.lanes.len(), facts.timeline)
        else {
            return Vec::new();
        };
        let lane = self.chrome.selected;
        let this = facts.lanes.get(lane);
        match action {
            Action::Quit => vec![Command::FinishRecording],
            Action::SpeedUp | Action::SpeedDown => {
                let speed = self.chrome.speed;
                self.say(
                    format!("speed {}x", crate::tui::ui::speed_label(speed)),
                    now,
                );
                vec![Command::SetSpeed(speed)]
            }
            Action::TogglePause if facts.paused => vec![Command::Resume],
            Action::TogglePause => vec![Command::Pause],
            Action::KillLane if this.is_some_and(|l| l.alive) => vec![Command::Kill(lane)],
            Action::KillLane => {
                self.say("no worker is running in this lane", now);
                Vec::new()
            }
            Action::KillAll => vec![Command::KillAll],
            Action::ToggleRandomKills => {
                let on = !facts.random_kills;
                let state = if on { "on" } else { "off" };
                self.say(format!("random kills {state} (seed {})", facts.seed), now);
                vec![Command::SetRandomKills(on)]
            }
            Action::ToggleHang => vec![Command::ToggleHang(lane)],
            Action::CycleStrategy => match this.map(|l| l.strategy) {
                Some(Some(strategy)) => {
                    self.restarted(facts);
                    vec![Command::SetStrategy(lane, next_strategy(strategy))]
                }
                Some(None) => {
                    self.say(
                        format!(
                            "lane {} runs your own command: s cycles reclaim's strategies",
                            lane + 1
                        ),
                        now,
                    );
                    Vec::new()
                }
                None => Vec::new(),
            },
            Action::WipeCheckpoints => vec![Command::WipeCheckpoints(lane)],
            Action::AddWorker if this.is_some_and(|l| l.workers >= MAX_WORKERS) => {
                self.say(format!("at most {MAX_WORKERS} workers per lane"), now);
                Vec::new()
            }
            Action::AddWorker if this.is_some_and(|l| l.finished) => {
                self.say("this lane has finished; n starts the night again", now);
                Vec::new()
            }
            Action::AddWorker => vec![Command::AddWorker(lane)],
            Action::Restart => {
                self.restarted(facts);
                vec![Command::Restart]
            }
            Action::Reset => {
                self.chrome.speed = 1.0;
                self.chrome.selected = 0;
                self.restarted(facts);
                vec![Command::Reset]
            }
            Action::ToggleRecord if facts.recording => vec![Command::FinishRecording],
            Action::ToggleRecord => {
                self.restarted(facts);
                vec![Command::StartRecording]
            }
            Action::NextCaption if facts.captions == 0 => {
                self.say("this scenario has no captions", now);
                Vec::new()
            }
            Action::NextCaption => vec![Command::NextCaption],
            Action::ShowIds => this.map(|_| Command::ShowIds(lane)).into_iter().collect(),
            // The chrome's own keys, the replay's, and Ctrl-Z (the event loop suspends: it owns
            // the terminal, see `Screen::suspend`).
            Action::NextLane
            | Action::PrevLane
            | Action::ScrollUp
            | Action::ScrollDown
            | Action::ScrollEnd
            | Action::ToggleHelp
            | Action::ScrubBack
            | Action::ScrubForward
            | Action::PrevEvent
            | Action::NextEvent
            | Action::JumpStart
            | Action::JumpEnd
            | Action::BackToNow
            | Action::Suspend => Vec::new(),
        }
    }

    /// Shows `text` in the header from `now`.
    fn say(&mut self, text: impl Into<String>, now: Instant) {
        self.chrome.say(text, now);
    }

    /// The night starts again from 02:00: the timeline follows it and its captions are its own.
    fn restarted(&mut self, facts: &Facts) {
        self.chrome.scroll = 0;
        self.chrome.selected = self
            .chrome
            .selected
            .min(facts.lanes.len().saturating_sub(1));
    }
}

fn next_strategy(strategy: Strategy) -> Strategy {
    let all = Strategy::all();
    let i = all.iter().position(|&s| s == strategy).unwrap_or(0);
    all[(i + 1) % all.len()]
}

/// The live dashboard: the screen's state and the night it drives.
#[derive(Debug)]
#[allow(clippy::struct_excessive_bools)] // Reason: independent states of the screen, each its own.
pub struct Live {
    app: App,
    night: Night,
    /// The window is below the minimum size: the night is paused until it is not.
    small: bool,
    /// Lecture mode.
    lecture: bool,
    /// A lecture that stops at its captions only (`--lecture captions`).
    captions_only: bool,
    /// Where a lecture holds the night (paused) until `space`.
    hold: Option<Hold>,
    /// The night the notes have been told about.
    noted_night: u32,
    /// A look back at the night so far (`b`, `[`), while it waits.
    review: Option<Review>,
    /// The help paused the night (it was running): closing the help resumes it.
    help_paused: bool,
}

/// A live night looked back at: a replay of it up to now, while it waits.
#[derive(Debug)]
struct Review {
    replay: ReplayApp,
    /// The night was running when the look back began: it goes on when the look back ends.
    was_running: bool,
}

impl Live {
    /// Starts the scenario's night; workers run from here on. With `record`, the night is
    /// recorded to that file from 02:00.
    pub fn start(
        scenario: Scenario,
        exe: PathBuf,
        dir: PathBuf,
        record: Option<PathBuf>,
        now: Instant,
    ) -> Result<Self, Error> {
        Ok(Self {
            app: App::default(),
            night: Night::start(scenario, exe, dir, record, now)?,
            small: false,
            lecture: false,
            captions_only: false,
            hold: None,
            noted_night: 0,
            review: None,
            help_paused: false,
        })
    }

    /// `b` or `[`: the night waits (paused: workers stopped, clock frozen) and what has
    /// happened so far is shown as a replay, at now, then scrubbed by `action`.
    fn look_back(&mut self, action: Action, now: Instant) -> Result<(), Error> {
        let was_running = !self.night.facts().paused;
        if was_running {
            self.night.execute(Command::Pause, now)?;
        }
        let mut replay =
            ReplayApp::new(self.night.past(now)).with_lane_ends(self.night.lane_ends());
        replay.seek(f64::INFINITY);
        replay.select(self.app.chrome.selected);
        replay.update(action, now)?;
        self.review = Some(Review {
            replay,
            was_running,
        });
        Ok(())
    }

    /// Back to the live night: it goes on where it was if it was running (and no lecture
    /// holds it).
    fn back_to_now(&mut self, now: Instant) -> Result<(), Error> {
        if let Some(review) = self.review.take()
            && review.was_running
            && self.hold.is_none()
        {
            self.night.execute(Command::Resume, now)?;
        }
        Ok(())
    }

    /// For a teacher: lecture mode (the night stops at each moment worth talking about).
    #[must_use]
    pub fn presenting(mut self, lecture: Option<crate::cli::LectureStops>) -> Self {
        if let Some(stops) = lecture {
            self.lecture = true;
            self.captions_only = stops == crate::cli::LectureStops::Captions;
            self.night.stop_on_captions(self.captions_only);
        }
        self
    }

    /// Lecture mode: stops the night (as `space` would) at what it has just reached.
    fn lecture_stops(&mut self, now: Instant) -> Result<(), Error> {
        let mut moments = self.night.take_moments();
        if self.captions_only {
            moments.retain(|why| *why == lecture::Why::Caption);
        }
        if !self.lecture || moments.is_empty() {
            return Ok(());
        }
        let clock = self.night.clock();
        let hold = self.hold.get_or_insert_with(|| Hold::new(clock));
        let caption = moments.contains(&lecture::Why::Caption);
        for why in moments {
            hold.add(why);
        }
        hold.in_lane_order(&self.night.lane_names());
        if caption {
            // The caption it stopped for is on screen now, not after the one before is read.
            self.night.step_caption(now);
        }
        if !self.night.facts().paused {
            self.night.execute(Command::Pause, now)?;
        }
        Ok(())
    }

    /// Where the night's databases are kept.
    #[must_use]
    pub fn db_dir(&self) -> &Path {
        self.night.db_dir()
    }

    /// The recording written (or being written) last, if any.
    #[must_use]
    pub fn saved_recording(&self) -> Option<&Path> {
        self.night.saved_recording()
    }

    /// Shows, in order, what the night has said.
    fn listen(&mut self, now: Instant) {
        for text in self.night.take_said() {
            self.app.say(text, now);
        }
    }
}

impl Screen for Live {
    fn mode(&self) -> Mode {
        if self.review.is_some() {
            Mode::Review
        } else {
            Mode::Live
        }
    }

    fn quit_requested(&self) -> bool {
        self.app.chrome.quit
    }

    fn lane_count(&self) -> usize {
        self.night.lane_count()
    }

    fn select(&mut self, lane: usize) {
        match self.review.as_mut() {
            Some(review) => review.replay.select(lane),
            None => self.app.chrome.select(lane, self.night.lane_count()),
        }
    }

    fn tick(&mut self, now: Instant) -> Result<(), Error> {
        self.night.tick(now)?;
        self.listen(now);
        self.lecture_stops(now)?;
        self.app.chrome.expire(now);
        Ok(())
    }

    fn update(&mut self, action: Action, now: Instant) -> Result<(), Error> {
        if let Some(review) = self.review.as_mut() {
            match action {
                Action::BackToNow => return self.back_to_now(now),
                // Quitting goes on below: the recording is closed as from the live night.
                Action::Quit => self.review = None,
                _ => return review.replay.update(action, now),
            }
        } else if matches!(action, Action::ScrubBack | Action::PrevEvent) {
            return self.look_back(action, now);
        }
        if action == Action::TogglePause && !self.app.chrome.help && self.hold.is_some() {
            // Space at a lecture's stop: the next caption reached here, one at a time (every
            // one is on screen at its stop), then on to the next stop.
            if !self.night.step_caption(now) {
                self.hold = None;
                self.night.execute(Command::Resume, now)?;
            }
            return Ok(());
        }
        let facts = self.night.facts();
        let night = self.night.number();
        if action == Action::ToggleHelp && !self.app.chrome.help && !facts.paused {
            // Nothing happens unseen behind the help: the night waits while it is read.
            self.night.execute(Command::Pause, now)?;
            self.help_paused = true;
        }
        for command in self.app.update(action, &facts, now) {
            if let Command::ShowIds(lane) = command {
                // What the screen shows, read for it: no change to the night.
                self.app.ids = Some(self.night.ids_view(lane));
                continue;
            }
            self.night.execute(command, now)?;
            self.listen(now);
        }
        if self.night.number() != night {
            // A new night from 02:00: nothing of the old one holds it.
            self.hold = None;
        }
        Ok(())
    }

    fn suspend(&mut self, now: Instant) {
        self.night.suspend(now);
    }

    fn unsuspend(&mut self, now: Instant) {
        self.night.unsuspend(now);
    }

    fn view(&self) -> Dashboard {
        if let Some(review) = &self.review {
            let mut dashboard = review.replay.view();
            dashboard.mode = Mode::Review;
            return dashboard;
        }
        let mut dashboard = self.app.chrome.dashboard(self.night.scene());
        dashboard.ids.clone_from(&self.app.ids);
        dashboard.lecture = self
            .lecture
            .then(|| lecture::line(self.hold.as_ref(), dashboard.paused, self.night.over()));
        dashboard
    }

    fn take_notes(&mut self) -> Vec<NoteLine> {
        let mut lines = Vec::new();
        if self.noted_night != self.night.number() {
            self.noted_night = self.night.number();
            let night = format!("night {}, from 02:00", self.noted_night);
            // The lanes are not the scenario's: the heading says which they are.
            let what = match self.night.changed_title() {
                Some(changed) => format!("{night} as {changed}"),
                None => night,
            };
            lines.push(NoteLine::Night(what));
        }
        lines.extend(
            (self.night.take_reached().into_iter()).map(|(at, text, notes)| NoteLine::Caption {
                at,
                text,
                notes,
            }),
        );
        lines
    }

    fn notice(&mut self, text: String, now: Instant) {
        self.app.say(text, now);
    }

    fn close_help(&mut self, now: Instant) -> bool {
        if let Some(review) = self.review.as_mut() {
            return review.replay.close_help(now);
        }
        // The ids list is an overlay too: any key closes it and does nothing else.
        let ids = self.app.ids.take().is_some();
        let help = std::mem::replace(&mut self.app.chrome.help, false);
        if help && std::mem::take(&mut self.help_paused) && self.hold.is_none() {
            // The help paused the night: closing it lets the night go on.
            let _ = self.night.execute(Command::Resume, now);
        }
        help || ids
    }

    fn too_small(&mut self, small: bool, now: Instant) {
        // Nothing may happen while nobody can see it: a kill would go by unseen.
        if small != self.small {
            self.night.freeze(small, now);
        }
        self.small = small;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(alive: bool) -> LaneFacts {
        LaneFacts {
            strategy: Some(Strategy::Naive),
            alive,
            finished: false,
            workers: 1,
        }
    }

    /// Two lanes running, ten lines of timeline, one caption not yet reached.
    fn facts() -> Facts {
        Facts {
            lanes: vec![lane(true), lane(true)],
            timeline: 10,
            paused: false,
            random_kills: false,
            seed: 214,
            recording: false,
            captions: 2,
        }
    }

    fn notice(app: &App) -> Option<&str> {
        app.chrome.notice()
    }

    #[test]
    fn k_kills_the_selected_lane_and_only_a_live_one() {
        let mut app = App::default();
        let now = Instant::now();
        let mut f = facts();
        assert_eq!(app.update(Action::KillLane, &f, now), [Command::Kill(0)]);
        app.update(Action::NextLane, &f, now);
        assert_eq!(app.update(Action::KillLane, &f, now), [Command::Kill(1)]);
        f.lanes[1].alive = false;
        assert_eq!(app.update(Action::KillLane, &f, now), []);
        assert_eq!(notice(&app), Some("no worker is running in this lane"));
        assert_eq!(app.update(Action::KillAll, &f, now), [Command::KillAll]);
    }

    #[test]
    fn speed_keys_step_within_bounds_and_tell_the_night() {
        let mut app = App::default();
        let now = Instant::now();
        let f = facts();
        assert_eq!(
            app.update(Action::SpeedUp, &f, now),
            [Command::SetSpeed(2.0)]
        );
        assert_eq!(notice(&app), Some("speed 2x"));
        for _ in 0..10 {
            app.update(Action::SpeedUp, &f, now);
        }
        assert_eq!(
            app.update(Action::SpeedUp, &f, now),
            [Command::SetSpeed(16.0)]
        );
        for _ in 0..20 {
            app.update(Action::SpeedDown, &f, now);
        }
        assert_eq!(
            app.update(Action::SpeedDown, &f, now),
            [Command::SetSpeed(0.125)]
        );
    }

    #[test]
    fn space_pauses_a_running_night_and_resumes_a_paused_one() {
        let mut app = App::default();
        let now = Instant::now();
        let mut f = facts();
        assert_eq!(app.update(Action::TogglePause, &f, now), [Command::Pause]);
        f.paused = true;
        assert_eq!(app.update(Action::TogglePause, &f, now), [Command::Resume]);
    }

    #[test]
    fn help_closes_on_the_next_key_which_does_nothing_else_and_quit_closes_the_recording() {
        let mut app = App::default();
        let now = Instant::now();
        let f = facts();
        assert_eq!(app.update(Action::ToggleHelp, &f, now), []);
        assert!(app.chrome.help);
        assert_eq!(app.update(Action::ToggleHelp, &f, now), []);
        assert!(!app.chrome.help);
        app.update(Action::ToggleHelp, &f, now);
        assert_eq!(
            app.update(Action::KillLane, &f, now),
            [],
            "k only closed the help"
        );
        assert!(!app.chrome.help);
        assert_eq!(app.update(Action::KillLane, &f, now), [Command::Kill(0)]);
        assert!(!app.chrome.quit);
        assert_eq!(
            app.update(Action::Quit, &f, now),
            [Command::FinishRecording]
        );
        assert!(app.chrome.quit);
    }

    #[test]
    fn s_cycles_the_selected_lanes_strategy_and_the_timeline_follows_the_new_night() {
        let mut app = App::default();
        let now = Instant::now();
        let mut f = facts();
        f.lanes[1].strategy = Some(Strategy::Outbox);
        app.update(Action::NextLane, &f, now);
        app.update(Action::ScrollUp, &f, now);
        assert_eq!(app.chrome.scroll, 3);
        assert_eq!(
            app.update(Action::CycleStrategy, &f, now),
            [Command::SetStrategy(1, Strategy::Naive)]
        );
        assert_eq!(app.chrome.scroll, 0);
        assert_eq!(app.chrome.selected, 1);
    }

    #[test]
    fn reset_puts_speed_and_selection_back_and_restarts() {
        let mut app = App::default();
        let now = Instant::now();
        let f = facts();
        app.update(Action::SpeedUp, &f, now);
        app.update(Action::NextLane, &f, now);
        assert_eq!(app.update(Action::Reset, &f, now), [Command::Reset]);
        assert!((app.chrome.speed - 1.0).abs() < f64::EPSILON);
        assert_eq!(app.chrome.selected, 0);
        assert_eq!(app.update(Action::Restart, &f, now), [Command::Restart]);
    }

    #[test]
    fn o_starts_a_recording_or_finishes_the_one_running() {
        let mut app = App::default();
        let now = Instant::now();
        let mut f = facts();
        assert_eq!(
            app.update(Action::ToggleRecord, &f, now),
            [Command::StartRecording]
        );
        f.recording = true;
        assert_eq!(
            app.update(Action::ToggleRecord, &f, now),
            [Command::FinishRecording]
        );
    }

    #[test]
    fn random_kills_toggle_and_say_the_seed() {
        let mut app = App::default();
        let now = Instant::now();
        let mut f = facts();
        assert_eq!(
            app.update(Action::ToggleRandomKills, &f, now),
            [Command::SetRandomKills(true)]
        );
        assert_eq!(notice(&app), Some("random kills on (seed 214)"));
        f.random_kills = true;
        assert_eq!(
            app.update(Action::ToggleRandomKills, &f, now),
            [Command::SetRandomKills(false)]
        );
        assert_eq!(notice(&app), Some("random kills off (seed 214)"));
    }

    #[test]
    fn a_worker_is_added_only_to_a_running_lane_below_the_limit() {
        let mut app = App::default();
        let now = Instant::now();
        let mut f = facts();
        assert_eq!(
            app.update(Action::AddWorker, &f, now),
            [Command::AddWorker(0)]
        );
        f.lanes[0].workers = MAX_WORKERS;
        assert_eq!(app.update(Action::AddWorker, &f, now), []);
        assert_eq!(notice(&app), Some("at most 64 workers per lane"));
        f.lanes[0].workers = 1;
        f.lanes[0].finished = true;
        assert_eq!(app.update(Action::AddWorker, &f, now), []);
        assert_eq!(
            notice(&app),
            Some("this lane has finished; n starts the night again")
        );
    }

    #[test]
    fn c_asks_the_night_for_its_next_caption_and_says_when_there_are_none() {
        let mut app = App::default();
        let now = Instant::now();
        let mut f = facts();
        assert_eq!(
            app.update(Action::NextCaption, &f, now),
            [Command::NextCaption]
        );
        f.captions = 0;
        assert_eq!(app.update(Action::NextCaption, &f, now), []);
        assert_eq!(notice(&app), Some("this scenario has no captions"));
    }

    #[test]
    fn i_asks_for_the_selected_lanes_duplicated_ids() {
        let mut app = App::default();
        let now = Instant::now();
        let f = facts();
        app.update(Action::NextLane, &f, now);
        assert_eq!(app.update(Action::ShowIds, &f, now), [Command::ShowIds(1)]);
    }

    #[test]
    fn strategies_cycle_through_all_five() {
        let mut s = Strategy::Naive;
        let mut seen = Vec::new();
        for _ in 0..5 {
            s = next_strategy(s);
            seen.push(s);
        }
        assert_eq!(
            seen,
            [
                Strategy::TwoCommit,
                Strategy::Keyed,
                Strategy::Guarded,
                Strategy::Outbox,
                Strategy::Naive
            ]
        );
    }
}
