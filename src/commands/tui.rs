//! `reclaim tui` (and `reclaim` alone) and `reclaim replay FILE`: the command line turned into
//! what the dashboard needs (its own `DashboardSettings`), everything checked before the
//! terminal is touched.

use crate::cli::{LectureStops, PresentingArgs, ReplayArgs, TuiArgs};
use crate::error::Error;
use crate::scenario::Scenario;
use crate::tui::settings::{DashboardSettings, LectureMode};
use crate::tui::theme::{Theme, ThemeChoice};

pub(super) fn live(args: &TuiArgs) -> Result<u8, Error> {
    let mut scenario = match &args.scenario {
        Some(name) => Scenario::load(name),
        None => Scenario::default_incident(),
    }?;
    super::consent::for_dashboard(&scenario, args.allow_exec)?;
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    crate::tui::run(
        scenario,
        args.record.as_deref(),
        &settings(&args.presenting, args.theme),
    )
}

pub(super) fn replay(args: &ReplayArgs) -> Result<u8, Error> {
    crate::tui::replay(&args.file, &settings(&args.presenting, args.theme))
}

/// The dashboard's settings from the command line's.
fn settings(presenting: &PresentingArgs, theme: ThemeChoice) -> DashboardSettings {
    DashboardSettings {
        lecture: presenting.lecture.map(|stops| match stops {
            LectureStops::All => LectureMode::AllMoments,
            LectureStops::Captions => LectureMode::CaptionsOnly,
        }),
        notes: presenting.notes.clone(),
        theme: Theme::chosen(theme),
    }
}
