//! The map screen's loop: cells arrive from the pool and keys move the cursor; `enter` opens a
//! cell's night in the live dashboard, in the same terminal, until its `q`.

use std::io;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyEventKind, MouseButton, MouseEventKind};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;

use crate::base::signals;
use crate::error::{Context as _, Error};
use crate::harness::pool::Pool;
use crate::map::{Cell, Kill};
use crate::scenario::{Scenario, ScenarioLane};
use crate::tui::theme::Theme;
use crate::worker::Strategy;

use super::{MapCell, MapCommand, MapState, action_for, cell_at, render_to};

/// The dashboard's night for a cell: the cell's strategy beside guarded (a pause: claim beside
/// fenced, two workers each), each put through the same fault on its first attempt (the same
/// crash, the same answer lost, the same pause), at the shipped scenarios' pace so it can be
/// watched.
#[must_use]
pub fn scenario_for(cell: &Cell, items: u64) -> Scenario {
    let kill = cell.kill();
    let beside = match kill {
        Kill::Pause { .. } if cell.strategy == Strategy::Claim => Strategy::Fenced,
        Kill::Pause { .. } => Strategy::Claim,
        Kill::Crash(_) | Kill::LostAnswer { .. } => Strategy::Guarded,
    };
    let mut strategies = vec![cell.strategy];
    if cell.strategy != beside {
        strategies.push(beside);
    }
    let (what, workers) = match kill {
        Kill::Crash(_) => ("The crash the map's cell ran", 1),
        Kill::LostAnswer { .. } => ("The answer the map's cell lost", 1),
        Kill::Pause { .. } => ("The pause the map's cell ran", 2),
    };
    // 63 ms an item at 100x.
    let mut night = Scenario::map_night(
        format!("The map's night: {} at {kill}", cell.strategy),
        format!("the map found: {}", cell.figures()),
        items,
        Duration::from_millis(63),
        strategies
            .into_iter()
            .map(|strategy| ScenarioLane {
                crash_at: kill.crash(),
                workers,
                ..ScenarioLane::plain(strategy.name().to_string(), strategy.into())
            })
            .collect(),
        format!("{what}: {kill}. The map found {}.", cell.figures()),
    );
    match kill {
        Kill::LostAnswer { task } => night.lose_answers = vec![task + 1],
        Kill::Pause { task } => {
            night.pause_at = Some(crate::worker::PauseAt::past_lease(task));
            // A pause kills nothing: its caption is on screen from the start.
            for caption in &mut night.captions {
                caption.on = Some("start".into());
            }
        }
        Kill::Crash(_) => {}
    }
    night
}

/// The dashboard's night for a cell, built when enter opens it.
pub type Opener<C> = Box<dyn Fn(&C) -> Scenario>;

/// Everything the map's loop needs besides the terminal.
pub struct MapRun<C: MapCell = Cell> {
    pub state: MapState<C>,
    pub pool: Pool<C>,
    pub exe: std::path::PathBuf,
    /// Where the dashboard's nights (opened with enter) keep their databases.
    pub dir: std::path::PathBuf,
    pub started: Instant,
    /// The night a cell opens: `scenario_for` for reclaim's own workers.
    pub open: Opener<C>,
}

/// Runs the map screen until the user quits; returns the state (the cells that arrived). The
/// terminal is restored on every path; the pool's nights are finished or stopped by its owner.
pub fn run<C: MapCell + Send + 'static>(map: &mut MapRun<C>) -> Result<(), Error> {
    crate::tui::terminal::require_terminal("reclaim map --json")?;
    let theme = Theme::from_env();
    let guard = crate::tui::terminal::TerminalGuard::enter()
        .context(|| "cannot set up the terminal".into())?;
    let mut terminal =
        Terminal::new(CrosstermBackend::new(io::stdout())).context(|| "cannot draw".into())?;
    let input = crate::tui::terminal::spawn_input()?;
    let outcome = map_loop(&mut terminal, map, theme, &input);
    drop(terminal);
    drop(guard);
    outcome
}

fn map_loop<C: MapCell + Send + 'static>(
    terminal: &mut Terminal<CrosstermBackend<io::Stdout>>,
    map: &mut MapRun<C>,
    theme: Theme,
    input: &mpsc::Receiver<Event>,
) -> Result<(), Error> {
    let mut watched = 0u32;
    let mut dirty = true;
    loop {
        // Everything that finished since the last frame.
        while let Some((_, result)) = map.pool.try_next() {
            map.state.add(result?);
            dirty = true;
        }
        if !map.state.finished() {
            map.state.elapsed_s = map.started.elapsed().as_secs_f64();
            dirty = true;
        }
        if dirty {
            crate::tui::terminal::draw_frame(terminal, |frame| {
                render_to(frame.area(), frame.buffer_mut(), &map.state, theme);
            })
            .context(|| "cannot draw".into())?;
            dirty = false;
        }
        match input.recv_timeout(Duration::from_millis(100)) {
            Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => {
                if let Some(action) = action_for(key) {
                    dirty = true;
                    if let Some(MapCommand::Open(cell)) = map.state.update(action) {
                        watched += 1;
                        open_night(terminal, map, &cell, watched, theme, input)?;
                        map.state.notify(format!("back from {}", cell.name()));
                    }
                }
            }
            Ok(Event::Mouse(mouse))
                if matches!(
                    mouse.kind,
                    MouseEventKind::Moved | MouseEventKind::Down(MouseButton::Left)
                ) =>
            {
                let size = terminal
                    .size()
                    .context(|| "cannot read the terminal's size".into())?;
                let area = Rect::new(0, 0, size.width, size.height);
                if let Some((band, task)) = cell_at(area, &map.state, mouse.column, mouse.row) {
                    map.state.select(band, task);
                    dirty = true;
                }
            }
            Ok(Event::Resize(..)) => dirty = true,
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Error::Refused("the terminal input closed".into()));
            }
        }
        if map.state.quit_requested() {
            return Ok(());
        }
        if let Some(signal) = signals::received() {
            return Err(Error::Stopped(signal));
        }
    }
}

/// The dashboard on one cell's night, in the same terminal, until its `q`.
fn open_night<C: MapCell + Send + 'static>(
    terminal: &mut Terminal<CrosstermBackend<io::Stdout>>,
    map: &MapRun<C>,
    cell: &C,
    n: u32,
    theme: Theme,
    input: &mpsc::Receiver<Event>,
) -> Result<(), Error> {
    let dir = map.dir.join(format!("watch-{n}"));
    std::fs::create_dir_all(&dir).context(|| format!("cannot create {}", dir.display()))?;
    let scenario = (map.open)(cell);
    // The map's screen runs only on SQLite files (`commands::map`).
    let night = (scenario, crate::warehouse::Warehouse::Sqlite);
    let mut live =
        crate::tui::live::Live::start(night, map.exe.clone(), dir, None, Instant::now())?;
    crate::tui::event_loop::drive_screen(terminal, &mut live, theme, input, None)
}
