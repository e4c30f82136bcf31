//! The observer on someone else's job (`run --exec`): its table, created when the job likes,
//! read above a high-water mark on rowid, counted whole when it has no rowid or by `--count-sql`;
//! and its checkpoint table, when named.

use std::path::Path;
use std::time::{Duration, SystemTime};

use rusqlite::Connection;

use super::{CheckpointRead, MAX_ROWS_PER_POLL};
use crate::store::StoreError;
use crate::store::rows::{self, RowSource};
use crate::store::table_exists;

/// Size and modification time of a job's database and of its `-wal`.
pub(super) type FileStamps = [(u64, Option<SystemTime>); 2];

/// Longer than the kernel's tick for file times, so a stamp older than this is final.
pub(super) const STAMP_TICK: Duration = Duration::from_millis(10);

/// What one read of a job's database found.
pub(super) enum JobRead {
    /// The job has not created its table yet.
    NoTable,
    /// `--count-sql`'s `(rows, distinct)`.
    Counted(u64, u64),
    /// A table without rowids, counted whole: rows, distinct keys, duplicated keys.
    Whole((u64, u64, u64)),
    /// New rows: rowid and key; and the checkpoint table's new rows, when it is named and there.
    Rows(Vec<(i64, Option<String>)>, Option<CheckpointRead>),
}

/// How a job's rows are read: key by key, or only counted (no key to look up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Follows {
    Keys,
    Counts,
}

impl super::Observer {
    /// Whether the row of `key` has been seen; `None` when reclaim cannot tell: the key is
    /// outside the queue, or the rows are only counted (`JobRead::Counted`, `Whole`).
    #[must_use]
    pub fn has_key(&self, key: &str) -> Option<bool> {
        let index = (self.queue.index_of(key)).filter(|_| self.follows == Follows::Keys)?;
        Some(self.has_task(index))
    }
}

/// One read of a job's table (and its checkpoint table, when named): what is new above the
/// high-water marks `(rows, checkpoints)`, inside the caller's read transaction.
pub(super) fn query_job(
    conn: &Connection,
    source: &RowSource,
    db: &Path,
    high_water: (i64, i64),
) -> Result<JobRead, StoreError> {
    let db = db.to_path_buf();
    let failed = |e| StoreError::sqlite(&db, e);
    match source.count(conn, &db) {
        Ok(Some((rows, distinct))) => return Ok(JobRead::Counted(rows, distinct)),
        Ok(None) => {}
        // The job has not made the tables its count reads yet: nothing to see, no error.
        Err(StoreError::CountSql { detail, .. }) if detail.contains("no such table") => {
            return Ok(JobRead::NoTable);
        }
        Err(error) => return Err(error),
    }
    if !source.check_shape(conn, &db)? {
        return Ok(JobRead::NoTable);
    }
    let sql = format!(
        "SELECT rowid, CAST({key} AS TEXT) FROM {table} WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
        key = source.key_sql(),
        table = source.table_sql()
    );
    let mut stmt = match conn.prepare_cached(&sql) {
        Ok(stmt) => stmt,
        // A WITHOUT ROWID table has no order of arrival to follow: counted whole.
        Err(e) if e.to_string().contains("no such column: rowid") => {
            let whole = format!(
                "SELECT count(*), count(DISTINCT {key}), \
                     (SELECT count(*) FROM (SELECT 1 FROM {table} GROUP BY {key} HAVING count(*) > 1)) \
                     FROM {table}",
                key = source.key_sql(),
                table = source.table_sql()
            );
            let counts = conn
                .prepare_cached(&whole)
                .and_then(|mut s| s.query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))))
                .map_err(failed)?;
            return Ok(JobRead::Whole(counts));
        }
        Err(e) => return Err(failed(e)),
    };
    let rows = stmt
        .query_map(rusqlite::params![high_water.0, MAX_ROWS_PER_POLL], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, Option<String>>(1)?))
        })
        .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
        .map_err(failed)?;
    let checkpoints = match &source.checkpoints {
        Some(named) if table_exists(conn, &named.table).map_err(failed)? => {
            RowSource::check_checkpoint_shape(named, conn, &db)?;
            Some(read_job_checkpoints(conn, named, high_water.1).map_err(failed)?)
        }
        _ => None,
    };
    Ok(JobRead::Rows(rows, checkpoints))
}

/// `read_checkpoints` for an external job's checkpoint table, named by the user.
fn read_job_checkpoints(
    conn: &Connection,
    named: &rows::Checkpoints,
    high_water: i64,
) -> rusqlite::Result<CheckpointRead> {
    let table = rows::quote_identifier(&named.table);
    let key = rows::quote_identifier(&named.key);
    let max_rowid: i64 = conn
        .prepare_cached(&format!("SELECT coalesce(max(rowid), 0) FROM {table}"))?
        .query_row([], |r| r.get(0))?;
    let wiped = max_rowid < high_water;
    let from = if wiped { 0 } else { high_water };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT rowid, CAST({key} AS TEXT) FROM {table} WHERE rowid > ?1 ORDER BY rowid LIMIT ?2"
    ))?;
    let rows = stmt
        .query_map(rusqlite::params![from, MAX_ROWS_PER_POLL], |row| {
            Ok((
                row.get(0)?,
                row.get::<_, Option<String>>(1)?.unwrap_or_default(),
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(CheckpointRead { rows, wiped })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::observer::{Observer, Poll};
    use crate::queue::Queue;

    fn db_with(sql: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let db = dir.path().join("warehouse.db");
        let conn = Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
        conn.execute_batch(sql).unwrap_or_else(|e| panic!("{e}"));
        (dir, db)
    }

    fn source(table: &str, key: &str) -> RowSource {
        RowSource {
            table: table.into(),
            key: key.into(),
            count_sql: None,
            checkpoints: None,
        }
    }

    #[test]
    fn a_job_table_is_followed_by_its_key_until_it_exists_and_after() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let db = dir.path().join("warehouse.db");
        let mut observer = Observer::of_job(&db, Queue::tasks(10), source("jobs", "id"));
        // No database yet, then no table yet: nothing to see, and no error.
        assert_eq!(observer.poll().ok(), Some(Poll::default()));
        let conn = Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(observer.poll().ok(), Some(Poll::default()));
        conn.execute_batch(
            "CREATE TABLE jobs(id TEXT); INSERT INTO jobs VALUES ('task-000'), ('task-001'), ('task-000');",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let poll = observer.poll().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(poll.new_rows, 3);
        assert!(poll.restarted_at_zero, "task-000 came back");
        assert_eq!(
            (observer.rows, observer.distinct, observer.duplicated),
            (3, 2, 1)
        );
        assert!(observer.has_task(1));
    }

    #[test]
    fn a_table_without_rowids_or_a_count_query_is_counted_whole() {
        let (_dir, db) = db_with(
            "CREATE TABLE jobs(id TEXT, n INT, PRIMARY KEY (id, n)) WITHOUT ROWID;
             INSERT INTO jobs VALUES ('a', 1), ('a', 2), ('b', 1);",
        );
        let mut observer = Observer::of_job(&db, Queue::tasks(10), source("jobs", "id"));
        observer.poll().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (observer.rows, observer.distinct, observer.duplicated),
            (3, 2, 1)
        );
        let counted = RowSource {
            count_sql: Some("SELECT count(*), count(DISTINCT n) FROM jobs".into()),
            ..source("jobs", "id")
        };
        let mut observer = Observer::of_job(&db, Queue::tasks(10), counted);
        observer.poll().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (observer.rows, observer.distinct, observer.duplicated),
            (3, 2, 1)
        );
    }

    #[test]
    fn a_job_table_of_another_shape_is_an_error_naming_its_columns() {
        let (_dir, db) = db_with("CREATE TABLE records(id TEXT, body TEXT);");
        let mut observer = Observer::of_job(&db, Queue::tasks(10), RowSource::default());
        let error = observer
            .poll()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error.contains("no column task_id (--key); its columns are id, body"),
            "{error}"
        );
    }
}
