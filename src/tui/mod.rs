//! The dashboard: a terminal driver around the same engine the headless commands use.
//!
//! Threads feed one channel (terminal input); the loop receives, updates the app, ticks the
//! engine and draws. Every exit path (q, Ctrl-C, SIGTERM, SIGHUP, a panic) restores the terminal
//! and kills every worker.

mod captions;
mod chrome;
mod event_loop;
pub mod keymap;
pub mod lecture;
pub mod live;
pub mod map;
mod moment;
mod night;
pub mod notes;
pub mod replay;
mod screen;
pub mod settings;
mod tape;
mod terminal;
pub mod theme;
pub mod ui;
pub mod view;

pub(crate) use self::chrome::{MAX_SPEED, MIN_SPEED};
pub use self::screen::Screen;
pub use self::terminal::{restore_terminal, terminal_active};

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use crate::base::kept::{Keep, NightDir};
use crate::base::signals;
use crate::error::{Context as _, Error};
use crate::record::Recording;
use crate::scenario::Scenario;
use crate::warehouse::Warehouse;

use self::event_loop::event_loop;
use self::live::Live;
use self::notes::Notes;
use self::replay::ReplayApp;
use self::settings::{DashboardSettings, LectureMode};
use self::terminal::{TerminalGuard, require_terminal};

/// Runs `reclaim replay FILE`: the recorded night in the dashboard, no processes.
pub fn replay(file: &Path, settings: &DashboardSettings) -> Result<u8, Error> {
    let recording = Recording::load(file)?;
    if recording.truncated {
        eprintln!(
            "reclaim: warning: {}: the last line was cut short; replaying the rest",
            file.display()
        );
    }
    // The recorded night's warehouses (and their companions) are not the notes' to write.
    let warehouses: Vec<&Path> = (recording.header.lanes.iter())
        .map(|l| l.db.as_path())
        .collect();
    if let Some(path) = &settings.notes {
        Notes::check(path, &[file], &warehouses)?;
    }
    require_terminal("reclaim replay --check")?;
    let mut notes = match &settings.notes {
        Some(path) => Some(Notes::open(
            path,
            &recording.header.title,
            &[file],
            &warehouses,
        )?),
        None => None,
    };
    if let Some(notes) = notes.as_mut() {
        notes
            .night(&format!("a replay of {}", file.display()))
            .context(|| "cannot write the notes".into())?;
    }
    signals::install().context(|| "cannot install signal handlers".into())?;
    signals::catch_suspend().context(|| "cannot install signal handlers".into())?;
    let guard = TerminalGuard::enter().context(|| "cannot set up the terminal".into())?;
    let mut terminal =
        Terminal::new(CrosstermBackend::new(io::stdout())).context(|| "cannot draw".into())?;
    let mut app = ReplayApp::new(recording);
    if let Some(mode) = settings.lecture {
        app = app.lecture(mode == LectureMode::CaptionsOnly);
    }
    let outcome = event_loop(&mut terminal, &mut app, settings.theme, notes.as_mut());
    drop(terminal);
    drop(guard);
    outcome?;
    match notes.as_mut().and_then(Notes::failure) {
        Some(stopped) => Err(stopped),
        None => Ok(crate::base::exit::OK),
    }
}

/// `compare`: each lane that asks for it run undisturbed twice first (`--compare`), before the
/// dashboard takes the terminal, and said on stderr while it runs; an oracle per lane (`None`
/// for the others). Ctrl-C ends it as it ends a headless night.
fn undisturbed(
    scenario: &Scenario,
    warehouse: &Warehouse,
    (dir, exe): (&Path, &Path),
) -> Result<Vec<Option<std::sync::Arc<crate::harness::compare::Oracle>>>, Error> {
    let scopes: Vec<_> = scenario.lanes.iter().map(|l| l.compare.clone()).collect();
    if scopes.iter().all(Option::is_none) {
        return Ok(Vec::new());
    }
    for (lane, _) in (scenario.lanes.iter().zip(&scopes)).filter(|(_, s)| s.is_some()) {
        eprintln!(
            "reclaim: lane {}: the undisturbed night first, twice (its tables the reference the night is compared with)…",
            crate::base::text::escape_controls(&lane.name)
        );
    }
    let config = scenario
        .engine_config(dir, 1, exe.to_path_buf())
        .on(warehouse);
    crate::harness::compare::for_lanes(&config, &scopes, dir)
}

/// Runs the live dashboard on `scenario` (loaded and validated before the terminal is
/// touched), recording it to `record` when given; in lecture mode and with speaker notes as
/// `settings` ask.
/// The databases' folder is one of the nights reclaim keeps, as `keep` says: under `failed`,
/// kept when a lane's data went wrong (the screen points at its database) or the dashboard
/// ended in an error; under any policy, kept when it holds a recording saved into it.
pub fn run(
    (scenario, warehouse): (Scenario, Warehouse),
    record: Option<&Path>,
    settings: &DashboardSettings,
    (keep, night): (Keep, Option<&mut crate::warehouse::Night>),
) -> Result<u8, Error> {
    if let Some(path) = record {
        crate::base::paths::new_recording(path, None)?;
    }
    let others: Vec<&Path> = record.into_iter().collect();
    if let Some(path) = &settings.notes {
        Notes::check(path, &others, &[])?;
    }
    require_terminal("reclaim run")?;
    let mut notes = match &settings.notes {
        Some(path) => Some(Notes::open(path, &scenario.title, &others, &[])?),
        None => None,
    };
    let exe = std::env::current_exe().context(|| "cannot find reclaim's own executable".into())?;
    let what = scenario.source.clone();
    let mut folder = NightDir::create("reclaim tui", &what, keep, SystemTime::now())?;
    let dir = folder.path().to_path_buf();
    signals::install().context(|| "cannot install signal handlers".into())?;
    signals::catch_suspend().context(|| "cannot install signal handlers".into())?;
    let oracles = undisturbed(&scenario, &warehouse, (&dir, &exe))?;
    let guard = TerminalGuard::enter().context(|| "cannot set up the terminal".into())?;
    let mut terminal =
        Terminal::new(CrosstermBackend::new(io::stdout())).context(|| "cannot draw".into())?;
    let mut app = Live::start(
        (scenario, warehouse.clone()),
        exe,
        dir,
        record.map(Path::to_path_buf),
        Instant::now(),
    )?
    .comparing(oracles)
    .presenting(settings.lecture);
    let outcome = event_loop(&mut terminal, &mut app, settings.theme, notes.as_mut());
    // Workers first, then the terminal: nothing may outlive the dashboard.
    let recordings: Vec<PathBuf> = (app.recordings().into_iter())
        .map(Path::to_path_buf)
        .collect();
    let wrong = app.went_wrong();
    drop(app);
    drop(terminal);
    drop(guard);
    if recordings.iter().any(|r| r.starts_with(folder.path())) {
        folder.hold("it holds the recording you saved");
    }
    let failed = wrong || outcome.is_err();
    let verdict = if wrong {
        "a lane's data went wrong"
    } else {
        "every lane's data right (or not yet judged)"
    };
    let settled = crate::warehouse::settle(folder, night, failed, verdict);
    let db_dir = settled.path.display().to_string();
    let said = settled.said();
    if let Err(error) = outcome {
        let folder = if settled.kept {
            format!("{db_dir} {said}")
        } else {
            said
        };
        return Err(Error::NightEnded {
            error: Box::new(error),
            folder,
        });
    }
    if settled.kept {
        println!("reclaim: {}, {said}", warehouse.where_rows_are(&db_dir));
    } else {
        println!("reclaim: the night's folder {db_dir} was {said}");
    }
    // Each night recorded, the named file's first (one in the folder has kept the folder).
    for path in recordings
        .iter()
        .filter(|_| settled.kept || record.is_some())
    {
        let path = path.display();
        println!("reclaim: the session is recorded in {path} (reclaim replay {path})");
    }
    match notes.as_mut().and_then(Notes::failure) {
        Some(stopped) => Err(stopped),
        None => Ok(crate::base::exit::OK),
    }
}
