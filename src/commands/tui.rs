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
    // The scenario's warehouse (`warehouse = "postgres"`) unless --warehouse names a
    // PostgreSQL one; opened (a private cluster started) before the terminal is touched, and
    // closed after it is restored.
    let warehouse = args.warehouse.for_scenario(&scenario.warehouse);
    if warehouse.warehouse.is_postgres() {
        refuse_on_pg(&scenario, &warehouse.warehouse)?;
    }
    let mut night = warehouse.open().map_err(|e| Error::Store(e.into()))?;
    let code = crate::tui::run(
        (scenario, crate::warehouse::Warehouse::of(night.as_ref())),
        args.record.as_deref(),
        &settings(&args.presenting, args.theme),
        (args.warehouse.keep.unwrap_or_default(), night.as_mut()),
    );
    crate::warehouse::close(night, false, None, &mut crate::base::out::stdout());
    code
}

/// What the dashboard does not run on PostgreSQL yet, and a server restart planned on a server
/// reclaim did not start (`spec`, the command line's URL), refused before anything starts.
pub(super) fn refuse_on_pg(
    scenario: &Scenario,
    spec: &crate::warehouse::Spec,
) -> Result<(), Error> {
    if let (Some(when), crate::warehouse::Spec::Server(_)) = (scenario.server_restart_said(), spec)
    {
        return Err(Error::Refused(format!(
            "the scenario restarts the server {when}, and reclaim restarts only a server it started, never yours: leave out --warehouse to run it on a private cluster"
        )));
    }
    if scenario.loses_answers() {
        super::answers_can_be_lost(
            spec,
            "the scenario's lost answers (host.lose_answer_at, lose_answer_at_task, random_lost_answers)",
        )?;
    }
    for lane in &scenario.lanes {
        let what = if lane.worker.job().is_some() {
            "an exec lane"
        } else if lane.split > 1 {
            "a lane with split items"
        } else {
            continue;
        };
        return Err(Error::Refused(format!(
            "lane {}: {what} does not run on PostgreSQL yet; use --warehouse sqlite",
            crate::base::text::escape_controls(&lane.name)
        )));
    }
    Ok(())
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
