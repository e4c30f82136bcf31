//! `Screen`: what the event loop drives, the live night (`live::Live`) or a replay
//! (`replay::ReplayApp`), through one interface.

use std::time::Instant;

use crate::error::Error;
use crate::tui::keymap::{KeyAction, Mode};
use crate::tui::notes::NoteLine;
use crate::tui::view::Dashboard;

/// What the event loop drives: the live night or a replay.
pub trait Screen {
    fn mode(&self) -> Mode;
    fn quit_requested(&self) -> bool;
    fn lane_count(&self) -> usize;
    fn select(&mut self, lane: usize);
    /// Advances time to `now`.
    fn tick(&mut self, now: Instant) -> Result<(), Error>;
    /// How often to tick while the screen moves; `None` (the default): the loop's own rate.
    fn tick_every(&self) -> Option<std::time::Duration> {
        None
    }
    /// `Some(t)` when nothing on the screen moves by itself before `t` (paused, held while a
    /// caption is read, over): the loop then ticks only once a frame, or at `t` if sooner. A key
    /// still acts at once. `None` (the default) while it moves: a tick every `TICK`.
    fn still_until(&self, _now: Instant) -> Option<Instant> {
        None
    }
    /// Applies one user action.
    fn update(&mut self, action: KeyAction, now: Instant) -> Result<(), Error>;
    /// The frame's view model.
    fn view(&self) -> Dashboard;
    /// Closes the help overlay; whether it was open.
    fn close_help(&mut self, now: Instant) -> bool;
    /// The window is below the dashboard's minimum size (`true`) or large enough again: a
    /// live night pauses while nobody can see it.
    fn too_small(&mut self, _small: bool, _now: Instant) {}
    /// The dashboard is about to stop (Ctrl-Z, SIGTSTP): nothing may go on while nobody watches.
    fn suspend(&mut self, _now: Instant) {}
    /// The dashboard was continued (`fg`) after `suspend`.
    fn unsuspend(&mut self, _now: Instant) {}
    /// What the speaker notes should get since the last call: nights begun, captions reached.
    fn take_notes(&mut self) -> Vec<NoteLine> {
        Vec::new()
    }
    /// Shows `text` in the header, as a notice of the screen's own.
    fn notice(&mut self, _text: String, _now: Instant) {}
    /// The frame of the current view is on the terminal now.
    fn drawn(&mut self) {}
}
