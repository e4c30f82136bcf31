//! What a map screen draws, apart from how: its layout (bands, columns, what they are named) and
//! the cells it takes (`MapCell`), reclaim's own worker's or a user's own job's. Here, below the
//! dashboard, so the headless map of a job can describe its screen without depending on it.

use super::{Cell, Outcome, Plan, Point, expected_duplicates};

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
            Self::Keys(queue) => crate::base::text::escape_controls(&queue.key(column)),
            Self::Rows => format!(
                "after {}",
                crate::base::text::count(column + 1, "row", "rows")
            ),
        }
    }

    /// The axis's word, and what its first column is numbered.
    #[must_use]
    pub fn axis(&self) -> (&'static str, u64) {
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

/// What a cell of `plan`'s map is, for the help's last line: the faults its bands name.
fn about(plan: &Plan) -> &'static str {
    let crash = plan.points.iter().any(|p| matches!(p, Point::Crash(_)));
    let (lost, pause) = (
        plan.points.contains(&Point::LostAnswer),
        plan.points.contains(&Point::Pause),
    );
    match (crash, lost, pause) {
        (_, false, false) => {
            "Each cell is a real night: the worker dies at that task and point on its first attempt, is restarted, finishes; the verdict comes from the rows."
        }
        (_, true, false) => {
            "Each cell is a real night: the worker dies at that task and point on its first attempt, is restarted, finishes (or, lost-answer, the answer to that task's commit is lost and the worker writes it again on a new connection); the verdict comes from the rows."
        }
        (false, false, true) => {
            "Each cell is a real night: two workers claim the queue; the one at that task's write is stopped for twice its lease while the other takes the item over, then continued; the verdict comes from the rows."
        }
        (true, false, true) => {
            "Each cell is a real night put through its band's fault at that task (a crash on the first attempt, or a pause past the lease), then finished; the verdict comes from the rows."
        }
        (false, true, true) => {
            "Each cell is a real night put through its band's fault at that task (a lost answer, or a pause past the lease), then finished; the verdict comes from the rows."
        }
        (true, true, true) => {
            "Each cell is a real night put through its band's fault at that task (a crash on the first attempt, a lost answer, a pause past the lease), then finished; the verdict comes from the rows."
        }
    }
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
            about: about(plan),
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
    #[must_use]
    pub fn first_of_group(&self, i: usize) -> bool {
        i == 0 || self.bands[i - 1].0 != self.bands[i].0
    }
}
