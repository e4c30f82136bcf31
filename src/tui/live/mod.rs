//! The live dashboard: `Live`, the `Screen` that pairs the screen's state (`LiveApp`, whose
//! pure `route` and `update` decide what each key does) with the `LiveNight` it drives, and
//! carries the decided effects out. A look back and a lecture's stops live here too. No
//! terminal I/O lives here.

mod app;

pub use self::app::{LiveApp, LiveEffect, ScreenFacts};

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::error::Error;
use crate::scenario::Scenario;
use crate::tui::keymap::{KeyAction, Mode};
use crate::tui::lecture::{self, Hold};
use crate::tui::night::{LiveNight, NightCommand};
use crate::tui::notes::NoteLine;
use crate::tui::replay::ReplayApp;
use crate::tui::screen::Screen;
use crate::tui::settings::LectureMode;
use crate::tui::view::Dashboard;
use crate::warehouse::Warehouse;

/// The live dashboard: the screen's state and the night it drives.
#[derive(Debug)]
#[allow(clippy::struct_excessive_bools)] // Reason: independent states of the screen, each its own.
pub struct Live {
    app: LiveApp,
    night: LiveNight,
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
    /// The lecture's stop has been drawn: a space typed before it was on screen was meant for
    /// the night playing (a pause) and does not go on from a stop nobody has seen.
    hold_drawn: bool,
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
        night: (Scenario, Warehouse),
        exe: PathBuf,
        dir: PathBuf,
        record: Option<PathBuf>,
        now: Instant,
    ) -> Result<Self, Error> {
        Ok(Self {
            app: LiveApp::default(),
            night: LiveNight::start(night, exe, dir, record, now)?,
            small: false,
            lecture: false,
            captions_only: false,
            hold: None,
            noted_night: 0,
            review: None,
            help_paused: false,
            hold_drawn: false,
        })
    }

    /// `b` or `[`: the night waits (paused: workers stopped, clock frozen) and what has
    /// happened so far is shown as a replay, at now, then scrubbed by `action`.
    fn look_back(&mut self, action: KeyAction, now: Instant) -> Result<(), Error> {
        let was_running = !self.night.facts().paused;
        if was_running {
            self.night.execute(NightCommand::Pause, now)?;
        }
        let mut replay =
            ReplayApp::new(self.night.past(now)).with_lane_ends(self.night.lane_ends());
        replay.seek(f64::INFINITY);
        replay.select(self.app.chrome.selected);
        replay.set_zoom(self.app.chrome.zoom);
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
        let Some(review) = self.review.take() else {
            return Ok(());
        };
        // The lane selected and zoomed (or not) while looking back stays so.
        self.app.chrome.zoom = review.replay.zoomed();
        (self.app.chrome).select(review.replay.selected(), self.night.lane_count());
        if review.was_running && self.hold.is_none() {
            self.night.execute(NightCommand::Resume, now)?;
        }
        Ok(())
    }

    /// `compare`: the lanes' undisturbed nights, each lane's tables compared with its own once
    /// it is over (`LiveNight::compare_with`).
    #[must_use]
    pub fn comparing(
        mut self,
        oracles: Vec<Option<std::sync::Arc<crate::harness::compare::Oracle>>>,
    ) -> Self {
        self.night.compare_with(oracles);
        self
    }

    /// For a teacher: lecture mode (the night stops at each moment worth talking about).
    #[must_use]
    pub fn presenting(mut self, lecture: Option<LectureMode>) -> Self {
        if let Some(mode) = lecture {
            self.lecture = true;
            self.captions_only = mode == LectureMode::CaptionsOnly;
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
        if self.hold.is_none() {
            self.hold_drawn = false;
        }
        let hold = self.hold.get_or_insert_with(|| Hold::new(clock));
        // The first caption of a stop is shown as it stops; one reached after (a tick later,
        // at the same stop) waits for space, or the first would be replaced unread.
        let caption =
            moments.contains(&lecture::Why::Caption) && !hold.why.contains(&lecture::Why::Caption);
        for why in moments {
            hold.add(why);
        }
        hold.in_lane_order(&self.night.lane_names());
        if caption {
            // The caption it stopped for is on screen now, not after the one before is read.
            self.night.step_caption(now);
        }
        if !self.night.facts().paused {
            self.night.execute(NightCommand::Pause, now)?;
        }
        Ok(())
    }

    /// Carries out one effect `LiveApp::route` decided.
    fn carry_out(&mut self, effect: LiveEffect, now: Instant) -> Result<(), Error> {
        match effect {
            LiveEffect::Review(action) => {
                if let Some(review) = self.review.as_mut() {
                    review.replay.update(action, now)?;
                }
            }
            LiveEffect::LookBack(action) => self.look_back(action, now)?,
            LiveEffect::BackToNow => self.back_to_now(now)?,
            LiveEffect::EndReview => self.review = None,
            // Typed before the stop was on screen: the night is stopped already, as a pause
            // there would have left it; it goes on once the stop has been seen.
            LiveEffect::StepStop if !self.hold_drawn => {}
            LiveEffect::StepStop => {
                if !self.night.step_caption(now) {
                    self.hold = None;
                    self.night.execute(NightCommand::Resume, now)?;
                }
            }
            LiveEffect::PauseForHelp => {
                self.night.execute(NightCommand::Pause, now)?;
                self.help_paused = true;
            }
            LiveEffect::ShowIds(lane) => self.app.ids = Some(self.night.ids_view(lane)),
            LiveEffect::Night(command) => {
                self.night.execute(command, now)?;
                self.listen(now);
            }
        }
        Ok(())
    }

    /// Where the night's databases are kept.
    #[must_use]
    pub fn db_dir(&self) -> &Path {
        self.night.db_dir()
    }

    /// Whether a lane's data went wrong in any night of this session.
    #[must_use]
    pub fn went_wrong(&self) -> bool {
        self.night.went_wrong()
    }

    /// Every recording of this session, closed or being written, oldest first.
    #[must_use]
    pub fn recordings(&self) -> Vec<&Path> {
        self.night.recordings()
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

    fn drawn(&mut self) {
        self.hold_drawn = self.hold.is_some();
    }

    fn tick_every(&self) -> Option<std::time::Duration> {
        Some(self.night.tick_every())
    }

    fn still_until(&self, now: Instant) -> Option<Instant> {
        self.night.still_until(now)
    }

    fn tick(&mut self, now: Instant) -> Result<(), Error> {
        self.night.tick(now)?;
        self.listen(now);
        self.lecture_stops(now)?;
        self.app.chrome.expire(now);
        Ok(())
    }

    fn update(&mut self, action: KeyAction, now: Instant) -> Result<(), Error> {
        let screen = ScreenFacts {
            looking_back: self.review.is_some(),
            at_stop: self.hold.is_some(),
        };
        let facts = self.night.facts();
        let night = self.night.number();
        for effect in self.app.route(action, screen, &facts, now) {
            self.carry_out(effect, now)?;
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
            let _ = self.night.execute(NightCommand::Resume, now);
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
mod tests;
