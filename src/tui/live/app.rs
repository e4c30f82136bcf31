//! The live screen's UI state and its pure decisions: `LiveApp::update` decides what a key does
//! to the night (`NightCommand`s), and `LiveApp::route` what it does to the screen as a whole
//! (a look back, a lecture's stop, the help over a running night), as `LiveEffect` values that
//! `Live` carries out. Nothing here touches the night, a process or the terminal.

use std::time::{Duration, Instant};

use crate::base::limits::MAX_WORKERS;
use crate::tui::chrome::{Chrome, NoticeLife};
use crate::tui::keymap::KeyAction;
use crate::tui::night::{NightCommand, NightFacts};
use crate::tui::view::IdsView;
use crate::worker::Strategy;

/// What one key does to the live screen, in order: `LiveApp::route`'s answer, carried out by
/// `Live`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LiveEffect {
    /// A key for the look back's replay (scrubbing, stepping, its chrome).
    Review(KeyAction),
    /// The night waits (paused) and what has happened so far is shown as a replay, then moved
    /// by this key (`b`, `[`).
    LookBack(KeyAction),
    /// Back to the live night from a look back: it goes on where it was if it was running.
    BackToNow,
    /// The look back ends without resuming the night (quitting from it).
    EndReview,
    /// `space` at a lecture's stop: the next caption reached here, else on to the next stop.
    StepStop,
    /// The help opens over a running night: the night waits while the help is read.
    PauseForHelp,
    /// The lane's duplicated task ids, read for the screen (no change to the night).
    ShowIds(usize),
    /// Something for the night to do.
    Night(NightCommand),
}

/// Where the live screen stands, besides its chrome: what routing a key needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScreenFacts {
    /// A look back (`b`, `[`) is on screen.
    pub looking_back: bool,
    /// A lecture holds the night at a stop.
    pub at_stop: bool,
}

/// How long a notice stays in the header.
const NOTICE_FOR: Duration = Duration::from_secs(4);

/// The live screen's UI state.
#[derive(Debug)]
pub struct LiveApp {
    pub(super) chrome: Chrome,
    /// The duplicated ids shown over the dashboard (`i`), until the next key.
    pub(super) ids: Option<IdsView>,
}

impl Default for LiveApp {
    fn default() -> Self {
        Self {
            chrome: Chrome::new(NoticeLife::For(NOTICE_FOR)),
            ids: None,
        }
    }
}

impl LiveApp {
    /// Decides what `action` does to the live screen standing as `screen` says, its night as
    /// `facts` says, at `now`: the effects in the order they are to be carried out.
    pub fn route(
        &mut self,
        action: KeyAction,
        screen: ScreenFacts,
        facts: &NightFacts,
        now: Instant,
    ) -> Vec<LiveEffect> {
        let mut effects = Vec::new();
        if screen.looking_back {
            match action {
                KeyAction::BackToNow => return vec![LiveEffect::BackToNow],
                // Quitting goes on below: the recording is closed as from the live night.
                KeyAction::Quit => effects.push(LiveEffect::EndReview),
                _ => return vec![LiveEffect::Review(action)],
            }
        } else if matches!(action, KeyAction::ScrubBack | KeyAction::PrevEvent) {
            return vec![LiveEffect::LookBack(action)];
        }
        if action == KeyAction::TogglePause && !self.chrome.help && screen.at_stop {
            // Space at a lecture's stop: the next caption reached here, one at a time (every
            // one is on screen at its stop), then on to the next stop.
            return vec![LiveEffect::StepStop];
        }
        if action == KeyAction::ToggleHelp && !self.chrome.help && !facts.paused {
            // Nothing happens unseen behind the help: the night waits while it is read.
            effects.push(LiveEffect::PauseForHelp);
        }
        effects.extend((self.update(action, facts, now).into_iter()).map(
            |command| match command {
                // What the screen shows, read for it: no change to the night.
                NightCommand::ShowIds(lane) => LiveEffect::ShowIds(lane),
                command => LiveEffect::Night(command),
            },
        ));
        effects
    }

    /// Decides what `action` does, given the night as `facts` says it is at `now`: the UI
    /// state changes here, and what should happen to the night comes back as commands.
    /// `s`: the selected lane's next strategy, on fresh databases (not for a lane running
    /// someone else's command).
    fn cycle_strategy(&mut self, facts: &NightFacts, now: Instant) -> Vec<NightCommand> {
        let lane = self.chrome.selected;
        match facts.lanes.get(lane).map(|l| l.strategy) {
            Some(Some(strategy)) => {
                self.restarted(facts);
                vec![NightCommand::SetStrategy(lane, next_strategy(strategy))]
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
        }
    }

    pub fn update(
        &mut self,
        action: KeyAction,
        facts: &NightFacts,
        now: Instant,
    ) -> Vec<NightCommand> {
        let Some(action) = self
            .chrome
            .update(action, facts.lanes.len(), facts.timeline)
        else {
            return Vec::new();
        };
        let lane = self.chrome.selected;
        let this = facts.lanes.get(lane);
        match action {
            KeyAction::Quit => vec![NightCommand::FinishRecording],
            KeyAction::SpeedUp | KeyAction::SpeedDown => {
                let speed = self.chrome.speed;
                self.say(
                    format!("speed {}x", crate::tui::ui::speed_label(speed)),
                    now,
                );
                vec![NightCommand::SetSpeed(speed)]
            }
            KeyAction::TogglePause if facts.paused => vec![NightCommand::Resume],
            KeyAction::TogglePause => vec![NightCommand::Pause],
            KeyAction::KillLane if this.is_some_and(|l| l.alive) => vec![NightCommand::Kill(lane)],
            KeyAction::KillLane => {
                self.say("no worker is running in this lane", now);
                Vec::new()
            }
            KeyAction::KillAll => vec![NightCommand::KillAll],
            KeyAction::ToggleRandomKills => {
                let on = !facts.random_kills;
                let state = if on { "on" } else { "off" };
                self.say(format!("random kills {state} (seed {})", facts.seed), now);
                vec![NightCommand::SetRandomKills(on)]
            }
            KeyAction::ToggleHang => vec![NightCommand::ToggleHang(lane)],
            KeyAction::PauseWorker => vec![NightCommand::PauseWorker(lane)],
            KeyAction::RestartServer => vec![NightCommand::RestartServer],
            KeyAction::LoseAnswer => vec![NightCommand::LoseAnswer(lane)],
            KeyAction::CycleStrategy => self.cycle_strategy(facts, now),
            KeyAction::WipeCheckpoints => vec![NightCommand::WipeCheckpoints(lane)],
            KeyAction::AddWorker if this.is_some_and(|l| l.workers >= MAX_WORKERS) => {
                self.say(format!("at most {MAX_WORKERS} workers per lane"), now);
                Vec::new()
            }
            KeyAction::AddWorker if this.is_some_and(|l| l.finished) => {
                self.say("this lane has finished; n starts the night again", now);
                Vec::new()
            }
            KeyAction::AddWorker => vec![NightCommand::AddWorker(lane)],
            KeyAction::Restart => {
                self.restarted(facts);
                vec![NightCommand::Restart]
            }
            KeyAction::Reset => {
                self.chrome.speed = 1.0;
                self.chrome.selected = 0;
                self.restarted(facts);
                vec![NightCommand::Reset]
            }
            KeyAction::ToggleRecord if facts.recording => vec![NightCommand::FinishRecording],
            KeyAction::ToggleRecord => {
                self.restarted(facts);
                vec![NightCommand::StartRecording]
            }
            KeyAction::NextCaption if facts.captions == 0 => {
                self.say("this scenario has no captions", now);
                Vec::new()
            }
            KeyAction::NextCaption => vec![NightCommand::NextCaption],
            KeyAction::ShowIds => this
                .map(|_| NightCommand::ShowIds(lane))
                .into_iter()
                .collect(),
            // The chrome's own keys, the replay's, and Ctrl-Z (the event loop suspends: it owns
            // the terminal, see `Screen::suspend`).
            KeyAction::NextLane
            | KeyAction::PrevLane
            | KeyAction::ScrollUp
            | KeyAction::ScrollDown
            | KeyAction::ScrollEnd
            | KeyAction::ToggleHelp
            | KeyAction::ToggleZoom
            | KeyAction::ScrubBack
            | KeyAction::ScrubForward
            | KeyAction::PrevEvent
            | KeyAction::NextEvent
            | KeyAction::JumpStart
            | KeyAction::JumpEnd
            | KeyAction::BackToNow
            | KeyAction::Suspend => Vec::new(),
        }
    }

    /// Shows `text` in the header from `now`.
    pub(super) fn say(&mut self, text: impl Into<String>, now: Instant) {
        self.chrome.say(text, now);
    }

    /// The night starts again from 02:00: the timeline follows it and its captions are its own.
    fn restarted(&mut self, facts: &NightFacts) {
        self.chrome.scroll = 0;
        self.chrome.selected = self
            .chrome
            .selected
            .min(facts.lanes.len().saturating_sub(1));
    }
}

pub(super) fn next_strategy(strategy: Strategy) -> Strategy {
    let all = Strategy::all();
    let i = all.iter().position(|&s| s == strategy).unwrap_or(0);
    all[(i + 1) % all.len()]
}
