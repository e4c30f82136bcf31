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

pub use self::screen::Screen;
pub use self::terminal::{restore_terminal, terminal_active};

use std::io;
use std::path::Path;
use std::time::Instant;

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

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
    outcome.map(|()| crate::base::exit::OK)
}

/// Runs the live dashboard on `scenario` (loaded and validated before the terminal is
/// touched), recording it to `record` when given; in lecture mode and with speaker notes as
/// `settings` ask.
pub fn run(
    (scenario, warehouse): (Scenario, Warehouse),
    record: Option<&Path>,
    settings: &DashboardSettings,
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
    let dir = crate::base::paths::fresh_db_path("tui")
        .context(|| "cannot create a folder for the databases".into())?
        .with_file_name("");
    signals::install().context(|| "cannot install signal handlers".into())?;
    signals::catch_suspend().context(|| "cannot install signal handlers".into())?;
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
    .presenting(settings.lecture);
    let outcome = event_loop(&mut terminal, &mut app, settings.theme, notes.as_mut());
    // Workers first, then the terminal: nothing may outlive the dashboard.
    let db_dir = app.db_dir().display().to_string();
    let recording = app.saved_recording().map(|p| p.display().to_string());
    drop(app);
    drop(terminal);
    drop(guard);
    outcome?;
    println!("reclaim: {}", warehouse.where_rows_are(&db_dir));
    if let Some(path) = recording {
        println!("reclaim: the session is recorded in {path} (reclaim replay {path})");
    }
    Ok(crate::base::exit::OK)
}
