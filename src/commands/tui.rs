//! `reclaim tui` (and `reclaim` alone) and `reclaim replay FILE`: the command line turned into
//! what the dashboard needs, everything checked before the terminal is touched.

use crate::cli::{ReplayArgs, TuiArgs};
use crate::error::Error;
use crate::scenario::Scenario;
use crate::tui::theme::Theme;

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
        &args.presenting,
        Theme::chosen(args.theme),
    )
}

pub(super) fn replay(args: &ReplayArgs) -> Result<u8, Error> {
    crate::tui::replay(&args.file, &args.presenting, Theme::chosen(args.theme))
}
