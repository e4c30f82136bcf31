//! The map screen: one band per strategy and crash point, one column per task (binned when the
//! terminal is narrower than the queue), each cell the verdict of a real night. `MapState` is a
//! pure state machine (cells arrive, keys move the cursor, `enter` asks for a night to be
//! opened); `render_to` draws it with no I/O and no clock; `run` is the loop around both.

mod draw;
mod keys;
mod watch;

pub use self::draw::{cell_at, plain_text, render_to};
pub use self::keys::{MAP_KEYS, MapAction, action_for};
pub use self::watch::{MapRun, run, scenario_for};

use crate::map::{Cell, Plan};

/// Width of the band labels: the longest strategy, a space, the longest point, a space.
const LABEL: u16 = 11 + 17;

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

#[cfg(test)]
mod tests;
