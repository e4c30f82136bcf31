//! The map screen: one band per strategy and crash point (or per point of a user's own job), one
//! column per task or key (binned when the terminal is narrower than the queue), each cell the
//! verdict of a real night. `MapState` is a
//! pure state machine (cells arrive, keys move the cursor, `enter` asks for a night to be
//! opened); `render_to` draws it with no I/O and no clock; `run` is the loop around both.

mod draw;
mod keys;
mod screen_loop;

pub use self::draw::{cell_at, plain_text, render_to};
pub use self::keys::{MAP_KEYS, MapAction, action_for};
pub use self::screen_loop::{MapRun, run, scenario_for};

use crate::map::{Cell, Plan};
pub use crate::map::{Columns, Layout, MapCell};

/// Width of the band labels: the longest strategy, a space, the longest point, a space.
const LABEL: u16 = 11 + 17;

/// What the map asks its loop to do.
#[derive(Debug, Clone, PartialEq)]
pub enum MapCommand<C = Cell> {
    /// Open this cell's night in the dashboard.
    Open(C),
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
