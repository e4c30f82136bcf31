//! `inspect`: every fact about a warehouse that the verdict needs, read from the rows themselves.

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde::Serialize;

use super::{SchemaFacts, StoreError, open_snapshot};
use crate::queue::Queue;
use crate::task::canonical_index;
use crate::verdict::{Derived, RowFacts};

/// What a warehouse holds, as `reclaim inspect` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Inspection {
    pub db: PathBuf,
    /// The queue size the rows are judged against.
    pub items: u64,
    pub rows: u64,
    /// Distinct task ids among the rows.
    pub distinct: u64,
    /// Task ids that have more than one row.
    pub duplicated_task_ids: u64,
    /// Rows beyond the first of their task id.
    pub extra_rows: u64,
    /// Task ids of the queue with no row at all.
    pub missing: u64,
    /// Rows whose task id is not one of the queue's: `task-NNN` beyond `--items`, or any other
    /// spelling than `task::task_id`'s (`task-01`, `task-0000`, a number, NULL).
    pub unexpected: u64,
    /// `None` when the warehouse has no checkpoints table.
    pub checkpoints: Option<u64>,
    pub rows_without_checkpoint: Option<u64>,
    pub checkpoints_without_row: Option<u64>,
    /// Distinct `run_id` values: how many attempts wrote rows.
    pub runs: u64,
    pub schema: SchemaFacts,
    pub integrity_ok: bool,
    /// The first line `PRAGMA integrity_check` returned.
    pub integrity: String,
    /// Every task present exactly once, nothing else, and SQLite's own check passes: the derived
    /// verdict's yes or no (`derived().is_ok()`), set from it, never by a rule of its own.
    pub consistent: bool,
    /// Whether each row's key was matched to the queue, or only counted (`--count-sql`).
    pub judged: Judged,
    /// The queue judged against, in a few words (an external job's; `None` for reclaim's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
}

/// How a job's rows were judged against its queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Judged {
    /// Every row's key matched to the queue's keys.
    #[default]
    Keys,
    /// `--count-sql`'s counts against the queue's size: a missing key and a key outside the
    /// queue cancel out, unseen.
    Counts,
}

impl Inspection {
    /// The derived status: the only status reclaim believes.
    #[must_use]
    pub fn derived(&self) -> Derived {
        Derived::from_facts(RowFacts {
            integrity_ok: self.integrity_ok,
            duplicated: self.duplicated_task_ids,
            extra: self.extra_rows,
            missing: self.missing,
            unexpected: self.unexpected,
            orphan_checkpoints: self.checkpoints_without_row.unwrap_or(0),
        })
    }

    /// `consistent` set from the derived verdict: one rule for the printed status, the JSON and
    /// the exit code.
    #[must_use]
    fn with_verdict(mut self) -> Self {
        self.consistent = self.derived().is_ok();
        self
    }

    /// What a reader needs beside the verdict of an external job's rows: keys that do not
    /// match the queue (and the options that would name them), or a judgement by counts alone.
    #[must_use]
    pub fn queue_notes(&self) -> Vec<String> {
        let Some(queue) = &self.queue else {
            return Vec::new();
        };
        let mut notes = Vec::new();
        if self.judged == Judged::Counts {
            notes.push(format!(
                "judged by --count-sql's counts against the queue ({queue}): which keys are missing or outside it, counts cannot tell"
            ));
        }
        if self.unexpected > 0 {
            let none = self.distinct == 0 && self.judged == Judged::Keys;
            notes.push(format!(
                "{} of {} {} outside the queue ({queue}){}",
                self.unexpected,
                self.rows,
                if self.rows == 1 { "row is" } else { "rows are" },
                if none {
                    "; no key matched: tell reclaim the job's keys with --key-format, --keys-from or --keys-sql"
                } else {
                    ""
                }
            ));
        }
        notes
    }

    /// The postmortem's closing line.
    #[must_use]
    pub fn summary_line(&self) -> String {
        format!(
            "rows={} duplicated_task_ids={}",
            self.rows, self.duplicated_task_ids
        )
    }
}

/// A task id written more than once: how many rows it has and the runs that wrote them, in the
/// order they wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DuplicatedId {
    pub task_id: String,
    pub count: u64,
    /// The `run_id` of each row, oldest first (a naive worker's is `pid-N`).
    pub runs: Vec<String>,
}

/// The task ids with more than one row, in task id order, at most `limit` of them, and how many
/// there are in all. Read-only, like `inspect`.
pub fn duplicated_ids(path: &Path, limit: usize) -> Result<(Vec<DuplicatedId>, u64), StoreError> {
    let real = crate::base::paths::existing_file(path, "--db")?;
    let snapshot = open_snapshot(&real)?;
    let query = || -> rusqlite::Result<(Vec<DuplicatedId>, u64)> {
        let conn = &snapshot.conn;
        conn.execute_batch("BEGIN")?;
        let total: u64 = conn.query_row(
            "SELECT count(*) FROM (SELECT 1 FROM records GROUP BY task_id HAVING count(*) > 1)",
            [],
            |r| r.get(0),
        )?;
        // The inner ORDER BY rowid keeps each group's runs in the order they wrote.
        let mut stmt = conn.prepare(
            "SELECT task_id, count(*), group_concat(run_id, char(31))
             FROM (SELECT task_id, run_id FROM records ORDER BY rowid)
             GROUP BY task_id HAVING count(*) > 1 ORDER BY task_id LIMIT ?1",
        )?;
        let ids = stmt
            .query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
                let task: Option<String> = r.get(0)?;
                let runs: Option<String> = r.get(2)?;
                Ok(DuplicatedId {
                    task_id: crate::base::text::escape_controls(task.as_deref().unwrap_or("NULL")),
                    count: r.get(1)?,
                    runs: runs
                        .unwrap_or_default()
                        .split('\u{1f}')
                        .map(crate::base::text::escape_controls)
                        .collect(),
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        conn.execute_batch("COMMIT")?;
        Ok((ids, total))
    };
    query().map_err(|e| StoreError::sqlite(path, e))
}

/// `task-000  x2  pid-1234, pid-5678`: one duplicated id as `inspect --ids` and the dashboard
/// list it.
#[must_use]
pub fn duplicated_line(id: &DuplicatedId) -> String {
    format!("{}  x{}  {}", id.task_id, id.count, id.runs.join(", "))
}

/// Reads every fact `Inspection` holds from `path`, changing no file (see `store::Snapshot`).
/// A link is followed once, up front, so the `-wal` beside the real file counts.
pub fn inspect(path: &Path, items: u64) -> Result<Inspection, StoreError> {
    let real = crate::base::paths::existing_file(path, "--db")?;
    let snapshot = open_snapshot(&real)?;
    let mut inspection =
        read(&snapshot.conn, &real, items).map_err(|e| StoreError::sqlite(path, e))?;
    inspection.db = path.to_path_buf();
    Ok(inspection)
}

fn read(conn: &Connection, path: &Path, items: u64) -> rusqlite::Result<Inspection> {
    // One read transaction, so every figure describes the same moment even while workers write.
    conn.execute_batch("BEGIN")?;
    let result = read_in_transaction(conn, path, items);
    conn.execute_batch("COMMIT")?;
    result
}

fn read_in_transaction(conn: &Connection, path: &Path, items: u64) -> rusqlite::Result<Inspection> {
    let rows: u64 = conn.query_row("SELECT count(*) FROM records", [], |r| r.get(0))?;
    let mut distinct = 0;
    let mut duplicated_task_ids = 0;
    let mut present_in_queue: u64 = 0;
    let mut unexpected: u64 = 0;
    {
        // Read as text whatever the column's type, so a table someone else made (an INTEGER
        // task_id) is judged, not a crash: a non-text id is never one of the queue's.
        let mut stmt = conn.prepare(
            "SELECT CAST(task_id AS TEXT), typeof(task_id) = 'text', count(*)
             FROM records GROUP BY task_id",
        )?;
        let mut groups = stmt.query([])?;
        while let Some(group) = groups.next()? {
            let task: Option<String> = group.get(0)?;
            let is_text: bool = group.get(1)?;
            let count: u64 = group.get(2)?;
            distinct += 1;
            if count > 1 {
                duplicated_task_ids += 1;
            }
            // INVARIANT: only the spelling `task_id()` writes counts as a task of the queue, so
            // each index is present through one group at most and `missing` cannot underflow.
            match task
                .filter(|_| is_text)
                .as_deref()
                .and_then(canonical_index)
            {
                Some(index) if index < items => present_in_queue += 1,
                _ => unexpected = unexpected.saturating_add(count),
            }
        }
    }
    let schema = SchemaFacts::read(conn)?;
    let (checkpoints, rows_without_checkpoint, checkpoints_without_row) = if schema
        .checkpoints_table
    {
        let count: u64 = conn.query_row("SELECT count(*) FROM checkpoints", [], |r| r.get(0))?;
        let rows_without: u64 = conn.query_row(
            "SELECT count(DISTINCT task_id) FROM records
                 WHERE task_id NOT IN (SELECT task_id FROM checkpoints)",
            [],
            |r| r.get(0),
        )?;
        let without_row: u64 = conn.query_row(
            "SELECT count(*) FROM checkpoints
                 WHERE task_id NOT IN (SELECT task_id FROM records)",
            [],
            |r| r.get(0),
        )?;
        (Some(count), Some(rows_without), Some(without_row))
    } else {
        (None, None, None)
    };
    let runs: u64 = conn.query_row("SELECT count(DISTINCT run_id) FROM records", [], |r| {
        r.get(0)
    })?;
    let report: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    let integrity_ok = report == "ok";
    let integrity = super::one_line(&report);
    let missing = items.saturating_sub(present_in_queue);
    Ok(Inspection {
        db: path.to_path_buf(),
        items,
        rows,
        distinct,
        duplicated_task_ids,
        extra_rows: rows.saturating_sub(distinct),
        missing,
        unexpected,
        checkpoints,
        rows_without_checkpoint,
        checkpoints_without_row,
        runs,
        schema,
        integrity_ok,
        integrity,
        consistent: false,
        judged: Judged::Keys,
        queue: None,
    }
    .with_verdict())
}

/// The human report of `reclaim inspect`, ending with the postmortem's line.
#[must_use]
pub fn render(inspection: &Inspection) -> String {
    use std::fmt::Write as _;
    let i = inspection;
    let mut out = String::new();
    let key = if i.schema.unique_idem_key {
        "UNIQUE idem_key (the database refuses duplicates)"
    } else {
        "no unique key (nothing stops a duplicate row)"
    };
    let checkpoint_schema = match (i.schema.checkpoints_table, i.schema.checkpoint_key) {
        (false, _) => "no checkpoints table",
        (true, true) => "checkpoints keyed by task_id",
        (true, false) => "checkpoints table WITHOUT a key on task_id",
    };
    let _ = writeln!(
        out,
        "database     {}",
        crate::base::text::escape_controls(&i.db.display().to_string())
    );
    let _ = writeln!(out, "schema       {key}; {checkpoint_schema}");
    let _ = writeln!(out, "rows         {} (queue of {})", i.rows, i.items);
    let _ = writeln!(out, "distinct     {} task ids", i.distinct);
    let _ = writeln!(
        out,
        "duplicated   {} task ids with more than one row ({} extra rows)",
        i.duplicated_task_ids, i.extra_rows
    );
    let _ = writeln!(out, "missing      {} task ids with no row", i.missing);
    if i.unexpected > 0 {
        let rows = crate::base::text::count(i.unexpected, "row", "rows");
        let _ = writeln!(out, "unexpected   {rows} outside the queue");
    }
    match (
        i.checkpoints,
        i.rows_without_checkpoint,
        i.checkpoints_without_row,
    ) {
        (Some(count), Some(rows_without), Some(without_row)) => {
            let _ = writeln!(
                out,
                "checkpoints  {count} ({rows_without} task ids with rows but no checkpoint, {without_row} checkpoints with no row)"
            );
        }
        _ => {
            let _ = writeln!(out, "checkpoints  none (no checkpoints table)");
        }
    }
    let _ = writeln!(out, "runs         {} distinct run_id values", i.runs);
    let _ = writeln!(out, "integrity    {}", i.integrity);
    let _ = writeln!(out, "verdict      {}", i.derived());
    let _ = writeln!(out, "{}", i.summary_line());
    out
}

/// Reads what an external job's database holds (`run --exec`): the rows of `source`'s table
/// matched key by key to the job's `queue` (or counted by `--count-sql`, and then judged by
/// counts alone), judged as reclaim's own warehouse is, changing no file.
pub fn inspect_rows(
    path: &Path,
    queue: &Queue,
    source: &super::rows::RowSource,
) -> Result<Inspection, StoreError> {
    if matches!(
        crate::base::paths::look(path),
        Ok(crate::base::paths::PathKind::Missing)
    ) {
        return Err(StoreError::NoTable {
            path: path.to_path_buf(),
            table: source.table.clone(),
        });
    }
    let real = crate::base::paths::existing_file(path, "--db")?;
    let snapshot = super::Snapshot::open(&real)?;
    let conn = &snapshot.conn;
    let failed = |e| StoreError::sqlite(path, e);
    conn.execute_batch("BEGIN").map_err(failed)?;
    let result = read_rows(conn, path, queue, source);
    conn.execute_batch("COMMIT").map_err(failed)?;
    result
}

/// What a job's rows hold against its queue: `(rows, distinct keys of the queue, keys of the
/// queue with more than one row, rows outside the queue)`.
#[derive(Default)]
struct Matched {
    rows: u64,
    distinct: u64,
    duplicated: u64,
    outside: u64,
}

fn read_rows(
    conn: &Connection,
    path: &Path,
    queue: &Queue,
    source: &super::rows::RowSource,
) -> Result<Inspection, StoreError> {
    let failed = |e| StoreError::sqlite(path, e);
    let items = queue.len();
    let (matched, judged) = if let Some((rows, distinct)) = source.count(conn, path)? {
        // Counts name no key: the distinct keys beyond the queue's size are outside it, those
        // short of it missing; which keys they are, reclaim cannot tell.
        let matched = Matched {
            rows,
            distinct: distinct.min(items),
            duplicated: rows.saturating_sub(distinct),
            outside: distinct.saturating_sub(items),
        };
        (matched, Judged::Counts)
    } else {
        if !source.check_shape(conn, path)? {
            return Err(StoreError::NoTable {
                path: path.to_path_buf(),
                table: source.table.clone(),
            });
        }
        let sql = format!(
            "SELECT CAST({key} AS TEXT), max(typeof({key}) IN ('text', 'integer')), count(*) FROM {table} GROUP BY CAST({key} AS TEXT)",
            key = source.key_sql(),
            table = source.table_sql()
        );
        let mut stmt = conn.prepare(&sql).map_err(failed)?;
        let mut groups = stmt.query([]).map_err(failed)?;
        let mut m = Matched::default();
        while let Some(group) = groups.next().map_err(failed)? {
            let (key, utf8) = super::rows::key_text(group, 0)
                .map_err(failed)?
                .map_or((None, true), |(k, utf8)| (Some(k), utf8));
            let is_key = utf8 && group.get::<_, bool>(1).map_err(failed)?;
            let count: u64 = group.get(2).map_err(failed)?;
            m.rows += count;
            // INVARIANT: a key of the queue is one group at most (GROUP BY the key), so
            // `distinct` never exceeds the queue's size and `missing` cannot underflow.
            match key.filter(|_| is_key).and_then(|k| queue.index_of(&k)) {
                Some(_) => {
                    m.distinct += 1;
                    if count > 1 {
                        m.duplicated += 1;
                    }
                }
                None => m.outside = m.outside.saturating_add(count),
            }
        }
        (m, Judged::Keys)
    };
    let report: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(failed)?;
    let integrity_ok = report == "ok";
    let missing = items.saturating_sub(matched.distinct);
    let in_queue_rows = matched.rows.saturating_sub(matched.outside);
    Ok(Inspection {
        db: path.to_path_buf(),
        items,
        rows: matched.rows,
        distinct: matched.distinct,
        duplicated_task_ids: matched.duplicated,
        extra_rows: in_queue_rows.saturating_sub(matched.distinct),
        missing,
        unexpected: matched.outside,
        checkpoints: None,
        rows_without_checkpoint: None,
        checkpoints_without_row: None,
        runs: 0,
        schema: SchemaFacts::default(),
        integrity_ok,
        integrity: super::one_line(&report),
        consistent: false,
        judged,
        queue: Some(queue.describe()),
    }
    .with_verdict())
}
