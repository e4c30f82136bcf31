//! The map screen: one band per strategy and crash point, one column per task (binned when the
//! terminal is narrower than the queue), each cell the verdict of a real night. `MapState` is a
//! pure state machine (cells arrive, keys move the cursor, `enter` asks for a night to be
//! opened); `render_to` draws it with no I/O and no clock; `run` is the loop around both.

mod draw;

pub use draw::{cell_at, plain_text, render_to};

use std::io;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEventKind,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;

use crate::error::{Context as _, Error};
use crate::harness::pool::Pool;
use crate::map::{Cell, Kill, Plan};
use crate::scenario::{Caption, Scenario, ScenarioLane};
use crate::signals;
use crate::worker::Strategy;

use super::theme::Theme;

/// Width of the band labels: the longest strategy, a space, the longest point, a space.
const LABEL: u16 = 11 + 17;

/// What the user asked the map for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapAction {
    Left,
    Right,
    Up,
    Down,
    PageLeft,
    PageRight,
    Home,
    End,
    Open,
    ToggleHelp,
    Quit,
}

/// One binding: the keys, how they are written, what they do, and whether the footer shows it.
pub struct MapBinding {
    pub keys: &'static [KeyCode],
    pub label: &'static str,
    pub action: MapAction,
    pub help: &'static str,
    pub footer: Option<&'static str>,
}

/// The map's keymap, in the order the help lists it: the keys, the footer and the help all
/// come from here.
pub const MAP_KEYS: &[MapBinding] = &[
    MapBinding {
        keys: &[KeyCode::Left, KeyCode::Char('h')],
        label: "←/→",
        action: MapAction::Left,
        help: "the previous/next task",
        footer: Some("task"),
    },
    MapBinding {
        keys: &[KeyCode::Right, KeyCode::Char('l')],
        label: "→",
        action: MapAction::Right,
        help: "",
        footer: None,
    },
    MapBinding {
        keys: &[KeyCode::Up, KeyCode::Char('k')],
        label: "↑/↓",
        action: MapAction::Up,
        help: "the band above/below (strategy and crash point)",
        footer: Some("band"),
    },
    MapBinding {
        keys: &[KeyCode::Down, KeyCode::Char('j')],
        label: "↓",
        action: MapAction::Down,
        help: "",
        footer: None,
    },
    MapBinding {
        keys: &[KeyCode::PageUp, KeyCode::Char('H')],
        label: "PgUp/PgDn",
        action: MapAction::PageLeft,
        help: "a tenth of the queue left/right",
        footer: None,
    },
    MapBinding {
        keys: &[KeyCode::PageDown, KeyCode::Char('L')],
        label: "PgDn",
        action: MapAction::PageRight,
        help: "",
        footer: None,
    },
    MapBinding {
        keys: &[KeyCode::Home, KeyCode::Char('g')],
        label: "Home/End",
        action: MapAction::Home,
        help: "the first/last task",
        footer: None,
    },
    MapBinding {
        keys: &[KeyCode::End, KeyCode::Char('G')],
        label: "End",
        action: MapAction::End,
        help: "",
        footer: None,
    },
    MapBinding {
        keys: &[KeyCode::Enter],
        label: "enter",
        action: MapAction::Open,
        help: "watch this night in the dashboard, beside guarded under the same kill (q comes back)",
        footer: Some("watch"),
    },
    MapBinding {
        keys: &[KeyCode::Char('?')],
        label: "?",
        action: MapAction::ToggleHelp,
        help: "this help",
        footer: Some("help"),
    },
    MapBinding {
        keys: &[KeyCode::Char('q'), KeyCode::Esc],
        label: "q",
        action: MapAction::Quit,
        help: "quit (the nights in flight are finished or killed, none left behind)",
        footer: Some("quit"),
    },
];

/// The action a key stands for on the map. Ctrl-C quits: in raw mode it arrives as a key.
#[must_use]
pub fn action_for(key: KeyEvent) -> Option<MapAction> {
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return (key.code == KeyCode::Char('c')).then_some(MapAction::Quit);
    }
    MAP_KEYS
        .iter()
        .find(|b| b.keys.contains(&key.code))
        .map(|b| b.action)
}

/// What the map asks its loop to do.
#[derive(Debug, Clone, PartialEq)]
pub enum MapCommand {
    /// Open this cell's night in the dashboard.
    Open(Cell),
}

/// The map's state: the plan, the cells as they arrive, the cursor.
#[derive(Debug, Clone)]
pub struct MapState {
    plan: Plan,
    /// Band-major: `cells[band * tasks + (task - first)]`.
    cells: Vec<Option<Cell>>,
    done: usize,
    band: usize,
    task: u64,
    help: bool,
    quit: bool,
    notice: Option<String>,
    /// Seconds since the map started, or the time it took once finished (set by the loop).
    pub elapsed_s: f64,
}

impl MapState {
    #[must_use]
    pub fn new(plan: Plan) -> Self {
        let size = plan.bands().len() * plan.task_count() as usize;
        let task = plan.tasks.0;
        Self {
            plan,
            cells: vec![None; size],
            done: 0,
            band: 0,
            task,
            help: false,
            quit: false,
            notice: None,
            elapsed_s: 0.0,
        }
    }

    fn index(&self, band: usize, task: u64) -> usize {
        band * self.plan.task_count() as usize + (task - self.plan.tasks.0) as usize
    }

    /// A finished night: its cell takes its place.
    pub fn add(&mut self, cell: Cell) {
        let Some(band) = self
            .plan
            .bands()
            .iter()
            .position(|&(s, p)| s == cell.strategy && p.name() == cell.point)
        else {
            return;
        };
        if !(self.plan.tasks.0..=self.plan.tasks.1).contains(&cell.task) {
            return;
        }
        let i = self.index(band, cell.task);
        if self.cells[i].is_none() {
            self.done += 1;
        }
        self.cells[i] = Some(cell);
    }

    #[must_use]
    pub fn total(&self) -> usize {
        self.cells.len()
    }

    #[must_use]
    pub fn done(&self) -> usize {
        self.done
    }

    #[must_use]
    pub fn finished(&self) -> bool {
        self.done == self.cells.len()
    }

    #[must_use]
    pub fn quit_requested(&self) -> bool {
        self.quit
    }

    /// The cells that have arrived, in map order.
    #[must_use]
    pub fn cells(&self) -> Vec<Cell> {
        self.cells.iter().flatten().cloned().collect()
    }

    /// The cell under the cursor, if its night has finished.
    #[must_use]
    pub fn selected(&self) -> Option<&Cell> {
        self.cells[self.index(self.band, self.task)].as_ref()
    }

    /// Moves the cursor to a band and task (the mouse), when they are on the map.
    pub fn select(&mut self, band: usize, task: u64) {
        if band < self.plan.bands().len() && (self.plan.tasks.0..=self.plan.tasks.1).contains(&task)
        {
            self.band = band;
            self.task = task;
            self.notice = None;
        }
    }

    /// Says something on the status line until the next key.
    pub fn notify(&mut self, text: String) {
        self.notice = Some(text);
    }

    /// Applies one action; returns what the loop must do, if anything.
    pub fn update(&mut self, action: MapAction) -> Option<MapCommand> {
        self.notice = None;
        let (first, last) = self.plan.tasks;
        let page = (self.plan.task_count() / 10).max(1);
        let bands = self.plan.bands().len();
        match action {
            MapAction::Left => self.task = self.task.saturating_sub(1).max(first),
            MapAction::Right => self.task = (self.task + 1).min(last),
            MapAction::PageLeft => self.task = self.task.saturating_sub(page).max(first),
            MapAction::PageRight => self.task = (self.task + page).min(last),
            MapAction::Home => self.task = first,
            MapAction::End => self.task = last,
            MapAction::Up => self.band = self.band.saturating_sub(1),
            MapAction::Down => self.band = (self.band + 1).min(bands.saturating_sub(1)),
            MapAction::ToggleHelp => self.help = !self.help,
            MapAction::Quit => {
                if self.help {
                    self.help = false;
                } else {
                    self.quit = true;
                }
            }
            MapAction::Open => {
                if let Some(cell) = self.selected() {
                    return Some(MapCommand::Open(cell.clone()));
                }
                self.notice =
                    Some("this night has not finished yet; enter opens it once it has".into());
            }
        }
        None
    }
}

/// The dashboard's night for a cell: the cell's strategy beside guarded, each killed by the same
/// crash on its first attempt, at the shipped scenarios' pace so it can be watched.
#[must_use]
pub fn scenario_for(cell: &Cell, items: u64) -> Scenario {
    let Kill::Crash(crash) = cell.kill();
    let mut strategies = vec![cell.strategy];
    if cell.strategy != Strategy::Guarded {
        strategies.push(Strategy::Guarded);
    }
    Scenario {
        source: "map".into(),
        title: format!("The map's night: {} at {crash}", cell.strategy),
        about: format!("the map found: {}", cell.figures()),
        scale: 100.0,
        items,
        delay: Duration::from_millis(63),
        start_at: 0.0,
        // 63 ms an item at 100x.
        paces: vec![crate::engine::Pace::per_item(6.3)],
        restart_delay: 18.0,
        max_restarts: 100,
        dead_man: crate::engine::DEFAULT_DEAD_MAN,
        seed: 0,
        kill_at_task: None,
        kill_at_rows: None,
        random_kills: 0,
        kill_window: crate::supervisor::schedule::DEFAULT_WINDOW,
        hang_at_task: None,
        hang_for: None,
        wipe_at_task: None,
        lanes: strategies
            .into_iter()
            .map(|strategy| ScenarioLane {
                name: strategy.name().to_string(),
                worker: strategy.into(),
                workers: 1,
                batch: 1,
                crash_at: Some(crash),
                side_effect: None,
                vendor: crate::fake_vendor::VendorModes::default(),
                long_item: None,
                split: 1,
            })
            .collect(),
        captions: vec![Caption {
            at: None,
            on: Some("kill".into()),
            lane: None,
            text: format!(
                "The crash the map's cell ran: {crash}. The map found {}.",
                cell.figures()
            ),
            notes: None,
        }],
    }
}

/// Everything the map's loop needs besides the terminal.
pub struct MapRun {
    pub state: MapState,
    pub pool: Pool<Cell>,
    pub exe: std::path::PathBuf,
    /// Where the dashboard's nights (opened with enter) keep their databases.
    pub dir: std::path::PathBuf,
    pub started: Instant,
}

/// Runs the map screen until the user quits; returns the state (the cells that arrived). The
/// terminal is restored on every path; the pool's nights are finished or stopped by its owner.
pub fn run(map: &mut MapRun) -> Result<(), Error> {
    super::require_terminal("reclaim map --json")?;
    let theme = Theme::from_env();
    let guard = super::TerminalGuard::enter().context(|| "cannot set up the terminal".into())?;
    let mut terminal =
        Terminal::new(CrosstermBackend::new(io::stdout())).context(|| "cannot draw".into())?;
    let input = super::spawn_input()?;
    let outcome = map_loop(&mut terminal, map, theme, &input);
    drop(terminal);
    drop(guard);
    outcome
}

fn map_loop(
    terminal: &mut Terminal<CrosstermBackend<io::Stdout>>,
    map: &mut MapRun,
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
            terminal
                .draw(|frame| render_to(frame.area(), frame.buffer_mut(), &map.state, theme))
                .context(|| "cannot draw".into())?;
            dirty = false;
        }
        match input.recv_timeout(Duration::from_millis(100)) {
            Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => {
                if let Some(action) = action_for(key) {
                    dirty = true;
                    if let Some(MapCommand::Open(cell)) = map.state.update(action) {
                        watched += 1;
                        watch(terminal, map, &cell, watched, theme, input)?;
                        map.state
                            .notify(format!("back from {} at {}", cell.strategy, cell.kill()));
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
fn watch(
    terminal: &mut Terminal<CrosstermBackend<io::Stdout>>,
    map: &MapRun,
    cell: &Cell,
    n: u32,
    theme: Theme,
    input: &mpsc::Receiver<Event>,
) -> Result<(), Error> {
    let dir = map.dir.join(format!("watch-{n}"));
    std::fs::create_dir_all(&dir).context(|| format!("cannot create {}", dir.display()))?;
    let scenario = scenario_for(cell, map.state.plan.items);
    let mut live = super::app::Live::start(scenario, map.exe.clone(), dir, None, Instant::now())?;
    super::drive_screen(terminal, &mut live, theme, input, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::expected_duplicates;
    use crate::verdict::Status;
    use crate::worker::CrashPoint;
    use ratatui::buffer::Buffer;

    /// The map's four strategies (`all`): the outbox is mapped only when named.
    fn four() -> Vec<Strategy> {
        Strategy::all()
            .iter()
            .copied()
            .filter(|s| !s.relays())
            .collect()
    }

    fn plan(strategies: Vec<Strategy>, items: u64) -> Plan {
        Plan {
            strategies,
            points: CrashPoint::ROWS.to_vec(),
            tasks: (0, items - 1),
            items,
        }
    }

    /// A map whose every cell is what the code implies.
    fn finished(plan: &Plan) -> MapState {
        let mut state = MapState::new(plan.clone());
        for night in plan.nights() {
            let dup = expected_duplicates(night.strategy, night.kill);
            state.add(Cell {
                strategy: night.strategy,
                kill: night.kill,
                task: night.kill.task(),
                point: night.kill.point().to_string(),
                rows: plan.items + dup,
                distinct: plan.items,
                duplicated_task_ids: dup,
                missing: 0,
                derived_status: if dup > 0 {
                    Status::DataWrong
                } else {
                    Status::Ok
                },
                completed: true,
                killed: true,
                db: None,
            });
        }
        state.elapsed_s = 41.3;
        state
    }

    fn screen(state: &MapState, width: u16, height: u16) -> String {
        let area = Rect::new(0, 0, width, height);
        let mut buf = Buffer::empty(area);
        render_to(area, &mut buf, state, Theme::monochrome());
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_whole_map_at_120x40() {
        let plan = plan(four(), 200);
        let mut state = finished(&plan);
        state.update(MapAction::Down);
        for _ in 0..50 {
            state.update(MapAction::Right);
        }
        let text = screen(&state, 120, 40);
        assert!(text.contains("naive      after-row-commit"), "{text}");
        assert!(
            text.contains(
                "task-050: DUPLICATED 51\n251 rows, 200 distinct, 51 duplicated, 0 missing; as the code implies"
            ),
            "{text}"
        );
        assert!(text.contains("guarded    800/800 right"), "{text}");
        insta::assert_snapshot!(text);
    }

    #[test]
    fn the_whole_map_at_80x24() {
        let plan = plan(four(), 200);
        let mut state = finished(&plan);
        for _ in 0..5 {
            state.update(MapAction::Down);
        }
        let text = screen(&state, 80, 24);
        assert!(text.contains("two-commit after-row-commit"), "{text}");
        assert!(text.contains("1 duplicated"), "{text}");
        assert!(text.contains("enter watch"), "{text}");
        insta::assert_snapshot!(text);
    }

    #[test]
    fn a_map_in_progress_shows_what_is_running() {
        let plan = plan(vec![Strategy::TwoCommit], 12);
        let full = finished(&plan);
        let mut state = MapState::new(plan.clone());
        for cell in full.cells().into_iter().filter(|c| c.task < 5) {
            state.add(cell);
        }
        state.elapsed_s = 0.4;
        let text = screen(&state, 80, 24);
        assert!(text.contains("20/48 nights"), "{text}");
        assert!(text.contains('░'), "{text}");
        state.update(MapAction::End);
        assert_eq!(state.update(MapAction::Open), None);
        insta::assert_snapshot!(text);
    }

    #[test]
    fn a_narrow_column_shows_its_worst_night() {
        // 200 tasks in about 50 columns: the single duplicated row of two-commit must show.
        let plan = plan(vec![Strategy::TwoCommit], 200);
        let state = finished(&plan);
        let text = screen(&state, 80, 24);
        let band = text
            .lines()
            .find(|l| l.contains("after-row-commit"))
            .unwrap_or_default();
        assert!(!band.contains('·'), "{band}");
        assert!(band.contains('1'), "{band}");
    }

    #[test]
    fn enter_asks_for_the_night_under_the_cursor() {
        let plan = plan(vec![Strategy::Naive], 10);
        let mut state = finished(&plan);
        state.update(MapAction::Down);
        state.update(MapAction::PageRight);
        let Some(MapCommand::Open(cell)) = state.update(MapAction::Open) else {
            panic!("enter opened nothing");
        };
        assert_eq!((cell.task, cell.point.as_str()), (1, "after-row-commit"));
        let scenario = scenario_for(&cell, 10);
        let lanes: Vec<&str> = scenario.lanes.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(lanes, ["naive", "guarded"]);
        let crash = crate::worker::CrashAt {
            task: 1,
            point: CrashPoint::AfterRowCommit,
        };
        assert!(scenario.lanes.iter().all(|l| l.crash_at == Some(crash)));
    }

    #[test]
    fn pointing_at_a_glyph_selects_the_night_it_shows() {
        // 200 tasks in 51 columns at 80x24: the first column holds tasks 0..=3 and shows the
        // worst, task-003 before-write with 3 duplicated.
        let plan = plan(four(), 200);
        let mut state = finished(&plan);
        let area = Rect::new(0, 0, 80, 24);
        let text = screen(&state, 80, 24);
        let y = text
            .lines()
            .position(|l| l.starts_with("naive      before-write"))
            .unwrap_or_default() as u16;
        assert_eq!(cell_at(area, &state, LABEL, y), Some((0, 3)));
        let (band, task) = cell_at(area, &state, LABEL, y).unwrap_or_default();
        state.select(band, task);
        assert_eq!(state.selected().map(|c| c.duplicated_task_ids), Some(3));
        // The label, the axis and the gap between strategies are no cell.
        assert_eq!(cell_at(area, &state, 3, y), None);
        assert_eq!(cell_at(area, &state, LABEL, 1), None);
        assert_eq!(cell_at(area, &state, LABEL, y + 4), None);
        // Two-commit's after-row-commit band, one band below the gap.
        assert_eq!(
            cell_at(area, &state, LABEL + 10, y + 6).map(|(b, _)| b),
            Some(5)
        );
    }

    #[test]
    fn tiny_terminals_do_not_panic() {
        let plan = plan(four(), 30);
        let mut state = finished(&plan);
        state.update(MapAction::ToggleHelp);
        for (w, h) in [(0, 0), (1, 1), (10, 3), (29, 5), (40, 10), (300, 80)] {
            let _ = screen(&state, w, h);
        }
    }

    #[test]
    fn no_key_is_bound_twice() {
        let mut seen = Vec::new();
        for binding in MAP_KEYS {
            for key in binding.keys {
                assert!(!seen.contains(key), "{key:?} is bound twice");
                seen.push(*key);
            }
        }
    }
}
