//! The dashboard's own settings: what `commands` builds from the command line for it, so the
//! dashboard never reads clap's types (the layer above it).

use std::path::PathBuf;

use crate::tui::theme::Theme;

/// What a lecture stops at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LectureMode {
    /// Every moment worth talking about: captions, kills, restarts, hangs, alerts, symptoms,
    /// `done` lines and verdicts.
    AllMoments,
    /// The captions only.
    CaptionsOnly,
}

/// How the dashboard is shown: for a teacher (lecture mode, speaker notes) and in which colours.
#[derive(Debug, Clone, PartialEq)]
pub struct DashboardSettings {
    /// Lecture mode, if on: the night stops at each moment and goes on with `space`.
    pub lecture: Option<LectureMode>,
    /// The speaker notes' file, if any: each caption reached is appended to it.
    pub notes: Option<PathBuf>,
    pub theme: Theme,
}
