//! The verdict's facts read from a lane's schema on PostgreSQL: the same figures
//! `sqlite::inspect` reads from SQLite, judged by the same rule (`Inspection::of_records`).
//! Where the SQL can be the same it is; the differences are SQLite's `typeof()` (every PostgreSQL `task_id` here is `text`) and
//! `PRAGMA integrity_check`, which PostgreSQL has no counterpart of: it is reported as not
//! checked, never as passed.

use std::path::Path;

use std::collections::{HashMap, HashSet};

use postgres::GenericClient;
use postgres::fallible_iterator::FallibleIterator as _;

use super::Server;
use crate::task::{TaskBits, canonical_index, task_id};
use crate::warehouse::error::WarehouseError;
use crate::warehouse::inspection::{CheckpointFigures, Inspection, Integrity, Tally};

/// A statement's parameters, when it has none.
const NO_PARAMS: [&(dyn postgres::types::ToSql + Sync); 0] = [];

/// The verdict's figures, counted row by row as the tables stream in: each task of the queue
/// by its index (four bytes a task), any other task id by its text.
struct Count {
    rows: u64,
    runs: HashSet<String>,
    /// Rows per task of the queue.
    of_queue: Vec<u32>,
    /// Rows per task id that is not one of the queue's (`None`: not text).
    others: HashMap<Option<String>, u64>,
    checkpoints: u64,
    /// The task ids with a checkpoint: of the queue, and not.
    checkpointed: TaskBits,
    checkpointed_others: HashSet<Option<String>>,
    without_row: u64,
}

impl Count {
    fn new(items: u64) -> Self {
        Self {
            rows: 0,
            runs: HashSet::new(),
            of_queue: vec![0; usize::try_from(items).unwrap_or(0)],
            others: HashMap::new(),
            checkpoints: 0,
            checkpointed: TaskBits::with_len(items),
            checkpointed_others: HashSet::new(),
            without_row: 0,
        }
    }

    /// The queue's index of `task`, when it is one of the queue's.
    fn index(&self, task: Option<&str>) -> Option<usize> {
        let index = usize::try_from(task.and_then(canonical_index)?).ok()?;
        (index < self.of_queue.len()).then_some(index)
    }

    /// One row of `records`.
    fn row(&mut self, task: Option<&str>, run: &str) {
        self.rows += 1;
        if !self.runs.contains(run) {
            self.runs.insert(run.to_string());
        }
        match self.index(task) {
            Some(index) => self.of_queue[index] = self.of_queue[index].saturating_add(1),
            None => *self.others.entry(task.map(str::to_string)).or_default() += 1,
        }
    }

    /// One row of `checkpoints`, after every row of `records`.
    fn checkpoint(&mut self, task: Option<&str>) {
        self.checkpoints += 1;
        let has_row = if let Some(index) = self.index(task) {
            self.checkpointed.set(index as u64);
            self.of_queue[index] > 0
        } else {
            let key = task.map(str::to_string);
            let has_row = self.others.contains_key(&key);
            self.checkpointed_others.insert(key);
            has_row
        };
        if !has_row {
            self.without_row += 1;
        }
    }

    fn checkpoint_figures(&self) -> CheckpointFigures {
        let of_queue = (self.of_queue.iter().enumerate())
            .filter(|&(index, &n)| n > 0 && !self.checkpointed.get(index as u64))
            .count() as u64;
        let others = (self.others.keys())
            .filter(|key| !self.checkpointed_others.contains(*key))
            .count() as u64;
        CheckpointFigures {
            count: self.checkpoints,
            rows_without: of_queue + others,
            without_row: self.without_row,
        }
    }

    /// Rows, runs, and each task id's rows tallied (`Tally`).
    fn records(self, items: u64) -> (u64, u64, Tally) {
        let mut tally = Tally::default();
        for (index, &n) in self.of_queue.iter().enumerate() {
            if n > 0 {
                tally.add(Some(&task_id(index as u64)), u64::from(n), items);
            }
        }
        for (task, &n) in &self.others {
            tally.add(task.as_deref(), n, items);
        }
        (self.rows, self.runs.len() as u64, tally)
    }
}

/// What `Inspection::integrity` says on PostgreSQL.
pub const NOT_CHECKED: &str =
    "not checked: PostgreSQL has no PRAGMA integrity_check (pages are the server's to guard)";

/// The longest a statement of the verdict's read may run: each sends a whole table (a night of
/// millions of rows), beside the 10 s every other statement has.
pub const VERDICT_TIMEOUT_MS: u32 = 60_000;

/// Every fact about the lane whose SQLite path would be `db`, in one REPEATABLE READ
/// transaction so the figures describe one moment.
pub fn inspect(server: &Server, db: &Path, items: u64) -> Result<Inspection, WarehouseError> {
    let schema = server.schema_for(db);
    let mut client = server.connect(Some(&schema))?;
    let mut tx = client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(|e| WarehouseError::query("starting the verdict's read", &e))?;
    tx.batch_execute(&format!(
        "SET LOCAL statement_timeout = {VERDICT_TIMEOUT_MS}"
    ))
    .map_err(|e| WarehouseError::query("bounding the verdict's read", &e))?;
    let mut inspection = read(&mut tx, items)
        .map_err(|e| WarehouseError::query(&format!("reading schema {schema}"), &e))?;
    tx.commit()
        .map_err(|e| WarehouseError::query("ending the verdict's read", &e))?;
    inspection.db = db.to_path_buf();
    Ok(inspection)
}

/// The figures, inside the caller's transaction, judged by the rule SQLite's are
/// (`Inspection::of_records`). Each table is read once, whole, in the order it lies
/// (`records`' task ids and runs, then the checkpoints' keys), and counted here as the rows
/// stream in (`Count`): the server does a sequential scan of each and nothing else, so the read
/// grows with the rows on any server, with no plan that changes as the tables grow (a `NOT IN`
/// subquery was hashed below about 200,000 checkpoints and run again per row above).
pub fn read(client: &mut impl GenericClient, items: u64) -> Result<Inspection, postgres::Error> {
    let schema = super::schema::schema_facts(client)?;
    let mut count = Count::new(items);
    {
        let mut rows = client.query_raw("SELECT task_id, run_id FROM records", NO_PARAMS)?;
        while let Some(row) = rows.next()? {
            count.row(row.get(0), row.get(1));
        }
    }
    let checkpoints = if schema.checkpoints_table {
        let mut keys = client.query_raw("SELECT task_id FROM checkpoints", NO_PARAMS)?;
        while let Some(row) = keys.next()? {
            count.checkpoint(row.get(0));
        }
        Some(count.checkpoint_figures())
    } else {
        None
    };
    let (rows, runs, tally) = count.records(items);
    Ok(Inspection::of_records(
        Path::new(""),
        (items, rows, runs),
        tally,
        (schema, checkpoints),
        not_checked(),
    ))
}

/// The pages, on PostgreSQL: nothing checked them, and nothing is claimed of them (the rule
/// needs a value, and "corrupt" would be a claim reclaim cannot make here either way).
#[must_use]
pub fn not_checked() -> Integrity {
    Integrity {
        ok: true,
        said: NOT_CHECKED.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_checkpoints_are_counted_as_they_stream_in() {
        let mut count = Count::new(3);
        // task-000 twice, task-001 once, one id outside the queue, one NULL.
        for (task, run) in [
            (Some("task-000"), "a"),
            (Some("task-000"), "b"),
            (Some("task-001"), "b"),
            (Some("task-7"), "b"),
            (None, "b"),
        ] {
            count.row(task, run);
        }
        // task-001 has a row, task-002 none; task-7 is outside the queue with a row, task-9 not.
        for task in ["task-001", "task-002", "task-7", "task-9"] {
            count.checkpoint(Some(task));
        }
        let figures = count.checkpoint_figures();
        assert_eq!(
            (figures.count, figures.rows_without, figures.without_row),
            (4, 2, 2),
            "task-000 and NULL have rows and no checkpoint; task-002 and task-9 the reverse"
        );
        let (rows, runs, tally) = count.records(3);
        assert_eq!((rows, runs), (5, 2));
        assert_eq!(
            (
                tally.distinct,
                tally.duplicated,
                tally.present,
                tally.unexpected
            ),
            (4, 1, 2, 2)
        );
    }
}
