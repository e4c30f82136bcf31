//! The map screen: one band per strategy and crash point (or per point of a user's own job), one
//! column per task or key (binned when the terminal is narrower than the queue), each cell the
//! verdict of a real night. `MapState` is a
//! pure state machine (cells arrive, keys move the cursor, `enter` asks for a night to be
//! opened); `render_to` draws it with no I/O and no clock; `run` is the loop around both.

mod draw;
mod keys;
mod watch;

pub use self::draw::{cell_at, plain_text, render_to};
pub use self::keys::{MAP_KEYS, MapAction, action_for};
pub use self::watch::{MapRun, run, scenario_for};

use crate::map::{Cell, Outcome, Plan, expected_duplicates};

/// Width of the band labels: the longest strategy, a space, the longest point, a space.
const LABEL: u16 = 11 + 17;

/// What the map asks its loop to do.
#[derive(Debug, Clone, PartialEq)]
pub enum MapCommand<C = Cell> {
    /// Open this cell's night in the dashboard.
    Open(C),
}

/// A finished night as the map screen draws it: reclaim's own worker's (`Cell`), or a user's
/// own job's (`ExecCell`), on the same screen.
pub trait MapCell: Clone {
    /// The band it is drawn in: its group (a strategy, or `exec`) and its name (a point).
    fn band(&self) -> (String, String);
    /// Its column: the task's (the key's) index, or the row count less one.
    fn column(&self) -> u64;
    fn outcome(&self) -> Outcome;
    /// The verdict in a word or two.
    fn verdict(&self) -> String;
    /// The line under the verdict: the counts read from the rows, and what they are set against.
    fn detail(&self) -> String;
    /// The night in a few words: `naive at task-002:after-commit`.
    fn name(&self) -> String;
    fn is_right(&self) -> bool {
        self.outcome() == Outcome::Right
    }
}

impl MapCell for Cell {
    fn band(&self) -> (String, String) {
        (self.strategy.name().to_string(), self.point.clone())
    }

    fn column(&self) -> u64 {
        self.task
    }

    fn outcome(&self) -> Outcome {
        Cell::outcome(self)
    }

    fn verdict(&self) -> String {
        Cell::verdict(self)
    }

    fn detail(&self) -> String {
        let implied = expected_duplicates(self.strategy, self.kill());
        let agree = if implied == self.duplicated_task_ids {
            "as the code implies".to_string()
        } else {
            format!("the code implies {implied} duplicated")
        };
        format!("{}; {agree}", self.counts())
    }

    fn name(&self) -> String {
        format!("{} at {}", self.strategy, self.kill())
    }
}

/// What the columns stand for, so the cursor can name the one it is on.
#[derive(Debug, Clone)]
pub enum Columns {
    /// reclaim's queue: `task-042`.
    Tasks,
    /// A job's own queue: its keys.
    Keys(crate::queue::Queue),
    /// A job that announces no point: a kill after each row count (column 0: after 1 row).
    Rows,
}

impl Columns {
    /// The column's name under the cursor.
    #[must_use]
    pub fn name(&self, column: u64) -> String {
        match self {
            Self::Tasks => crate::task::task_id(column),
            Self::Keys(queue) => crate::text::escape_controls(&queue.key(column)),
            Self::Rows => format!("after {}", crate::text::count(column + 1, "row", "rows")),
        }
    }

    /// The axis's word, and what its first column is numbered.
    fn axis(&self) -> (&'static str, u64) {
        match self {
            Self::Tasks => ("task", 0),
            Self::Keys(_) => ("key", 0),
            Self::Rows => ("rows", 1),
        }
    }
}

/// The map's shape: its bands, its columns, what its title and help say.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The title line's left part.
    pub title: String,
    /// Each band, top to bottom: its group (a strategy, or `exec`) and its name (a point).
    pub bands: Vec<(String, String)>,
    /// First and last column, inclusive.
    pub columns: (u64, u64),
    pub names: Columns,
    pub items: u64,
    /// The help's last line: what a cell is.
    pub about: &'static str,
}

impl Layout {
    /// The built-in map's: a band per strategy and point, a column per task.
    #[must_use]
    pub fn of_plan(plan: &Plan) -> Self {
        let names: Vec<&str> = plan.strategies.iter().map(|s| s.name()).collect();
        Self {
            title: format!(
                "reclaim map  {} · {} items · {}..{}",
                names.join(" "),
                plan.items,
                crate::task::task_id(plan.tasks.0),
                crate::task::task_id(plan.tasks.1)
            ),
            bands: (plan.bands().iter())
                .map(|(s, p)| (s.name().to_string(), p.name().to_string()))
                .collect(),
            columns: plan.tasks,
            names: Columns::Tasks,
            items: plan.items,
            about: "Each cell is a real night: the worker dies at that task and point on its first attempt, is restarted, finishes; the verdict comes from the rows.",
        }
    }

    /// How many columns each band spans.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.columns.1 - self.columns.0 + 1
    }

    /// The groups, in order of their first band.
    #[must_use]
    pub fn groups(&self) -> Vec<&str> {
        let mut groups: Vec<&str> = Vec::new();
        for (group, _) in &self.bands {
            if !groups.contains(&group.as_str()) {
                groups.push(group);
            }
        }
        groups
    }

    /// Whether band `i` is the first of its group (its label shows the group's name).
    fn first_of_group(&self, i: usize) -> bool {
        i == 0 || self.bands[i - 1].0 != self.bands[i].0
    }
}

/// The map's state: its layout, the cells as they arrive, the cursor.
#[derive(Debug, Clone)]
pub struct MapState<C = Cell> {
    layout: Layout,
    /// Band-major: `cells[band * columns + (column - first)]`.
    cells: Vec<Option<C>>,
    done: usize,
    band: usize,
    task: u64,
    help: bool,
    quit: bool,
    notice: Option<String>,
    /// Seconds since the map started, or the time it took once finished (set by the loop).
    pub elapsed_s: f64,
}

impl MapState<Cell> {
    /// The built-in map's screen for `plan`.
    #[must_use]
    pub fn new(plan: &Plan) -> Self {
        Self::with_layout(Layout::of_plan(plan))
    }
}

impl<C: MapCell> MapState<C> {
    #[must_use]
    pub fn with_layout(layout: Layout) -> Self {
        let size = layout.bands.len() * layout.count() as usize;
        let task = layout.columns.0;
        Self {
            layout,
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

    #[must_use]
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    fn index(&self, band: usize, task: u64) -> usize {
        band * self.layout.count() as usize + (task - self.layout.columns.0) as usize
    }

    /// A finished night: its cell takes its place.
    pub fn add(&mut self, cell: C) {
        let (group, name) = cell.band();
        let Some(band) = (self.layout.bands.iter()).position(|(g, n)| *g == group && *n == name)
        else {
            return;
        };
        let column = cell.column();
        if !(self.layout.columns.0..=self.layout.columns.1).contains(&column) {
            return;
        }
        let i = self.index(band, column);
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
    pub fn cells(&self) -> Vec<C> {
        self.cells.iter().flatten().cloned().collect()
    }

    /// The cell under the cursor, if its night has finished.
    #[must_use]
    pub fn selected(&self) -> Option<&C> {
        self.cells[self.index(self.band, self.task)].as_ref()
    }

    /// Moves the cursor to a band and task (the mouse), when they are on the map.
    pub fn select(&mut self, band: usize, task: u64) {
        if band < self.layout.bands.len()
            && (self.layout.columns.0..=self.layout.columns.1).contains(&task)
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
    pub fn update(&mut self, action: MapAction) -> Option<MapCommand<C>> {
        self.notice = None;
        let (first, last) = self.layout.columns;
        let page = (self.layout.count() / 10).max(1);
        let bands = self.layout.bands.len();
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

#[cfg(test)]
mod tests;
