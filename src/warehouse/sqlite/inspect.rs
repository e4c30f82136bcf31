//! `inspect` on SQLite: every fact about a warehouse file that the verdict needs, read from the
//! rows themselves in one read transaction, changing no file (`Snapshot`); a job's table judged
//! against its queue; the task ids written more than once (`inspect --ids`).

use std::path::Path;

use rusqlite::Connection;

use super::schema::read_facts;
use super::snapshot::Snapshot;
use super::{open_snapshot, rows};
use crate::queue::Queue;
use crate::warehouse::error::StoreError;
use crate::warehouse::inspection::{
    CheckpointFigures, DuplicatedId, Inspection, Integrity, Judged, Matched, Tally,
};
use crate::warehouse::source::RowSource;

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

/// Reads every fact `Inspection` holds from `path`, changing no file (see `Snapshot`). A link
/// is followed once, up front, so the `-wal` beside the real file counts.
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
    let mut tally = Tally::default();
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
            tally.add(task.as_deref().filter(|_| is_text), group.get(2)?, items);
        }
    }
    let schema = read_facts(conn)?;
    let checkpoints = if schema.checkpoints_table {
        Some(CheckpointFigures {
            count: conn.query_row("SELECT count(*) FROM checkpoints", [], |r| r.get(0))?,
            rows_without: conn.query_row(
                "SELECT count(DISTINCT task_id) FROM records
                 WHERE task_id NOT IN (SELECT task_id FROM checkpoints)",
                [],
                |r| r.get(0),
            )?,
            without_row: conn.query_row(
                "SELECT count(*) FROM checkpoints
                 WHERE task_id NOT IN (SELECT task_id FROM records)",
                [],
                |r| r.get(0),
            )?,
        })
    } else {
        None
    };
    let runs: u64 = conn.query_row("SELECT count(DISTINCT run_id) FROM records", [], |r| {
        r.get(0)
    })?;
    Ok(Inspection::of_records(
        path,
        (items, rows, runs),
        tally,
        (schema, checkpoints),
        integrity_check(conn)?,
    ))
}

/// `PRAGMA integrity_check`: its first line, and whether it said `ok`.
fn integrity_check(conn: &Connection) -> rusqlite::Result<Integrity> {
    let report: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    Ok(Integrity {
        ok: report == "ok",
        said: super::one_line(&report),
    })
}

/// Reads what an external job's database holds (`run --exec`): the rows of `source`'s table
/// matched key by key to the job's `queue` (or counted by `--count-sql`, and then judged by
/// counts alone), judged as reclaim's own warehouse is, changing no file.
pub fn inspect_rows(
    path: &Path,
    queue: &Queue,
    source: &RowSource,
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
    let snapshot = Snapshot::open(&real)?;
    let conn = &snapshot.conn;
    let failed = |e| StoreError::sqlite(path, e);
    conn.execute_batch("BEGIN").map_err(failed)?;
    let result = read_rows(conn, path, queue, source);
    conn.execute_batch("COMMIT").map_err(failed)?;
    result
}

fn read_rows(
    conn: &Connection,
    path: &Path,
    queue: &Queue,
    source: &RowSource,
) -> Result<Inspection, StoreError> {
    let failed = |e| StoreError::sqlite(path, e);
    let counted = if let Some((rows, distinct)) = rows::count(source, conn, path)? {
        (
            Matched::counted(rows, distinct, queue.len()),
            Judged::Counts,
        )
    } else {
        if !rows::check_shape(source, conn, path)? {
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
        let mut matched = Matched::default();
        while let Some(group) = groups.next().map_err(failed)? {
            let (key, utf8) = super::rows::key_text(group, 0)
                .map_err(failed)?
                .map_or((None, true), |(k, utf8)| (Some(k), utf8));
            let is_key = utf8 && group.get::<_, bool>(1).map_err(failed)?;
            let count: u64 = group.get(2).map_err(failed)?;
            matched.add(key.as_deref().filter(|_| is_key), count, queue);
        }
        (matched, Judged::Keys)
    };
    let integrity = integrity_check(conn).map_err(failed)?;
    Ok(Inspection::of_job(path, queue, counted, integrity))
}
