//! The warehouse on SQLite: a file per lane, opened with reclaim's pragmas after every refusal
//! of a file that is not a warehouse reclaim may touch (`schema` creates and verifies the
//! tables a strategy needs); read without changing any file (`snapshot`, `unlocked`); and the
//! reading of a job's own database (`rows`, `key_ids`, `keys_sql`, `bounded`).

mod backend;
mod batch;
pub mod bounded;
mod claim;
mod follow;
pub mod inspect;
pub mod job;
pub mod key_ids;
pub mod keys_sql;
mod outbox;
pub mod rows;
pub mod schema;
mod snapshot;
pub mod state;
pub mod unlocked;
pub mod wal;
mod writer;

pub use backend::Sqlite;

use schema::{columns, create_schema, verify_insertable, verify_key_form, verify_schema};
pub use snapshot::Snapshot;

use std::fs::{self, File};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, ErrorCode, OpenFlags};
use serde::Serialize;

use crate::base::paths;
use crate::warehouse::error::StoreError;
use crate::warehouse::schema::SchemaNeeds;

/// How long one statement waits on another connection's lock before SQLite returns BUSY.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// The first 16 bytes of every SQLite 3 database file.
pub(super) const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// `PRAGMA synchronous` for the workers' connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
    /// WAL + NORMAL: a commit survives the death of the process (what reclaim models), though
    /// not necessarily a power cut.
    #[default]
    Normal,
    /// WAL + FULL: a commit is fsynced before it returns, and survives a power cut too.
    Full,
}

/// SQLite's check reports come as several lines; errors are shown as one.
#[must_use]
pub fn one_line(report: &str) -> String {
    let mut lines = report.lines().filter(|l| !l.starts_with("***"));
    let first = lines.next().unwrap_or(report).trim().to_string();
    let more = lines.count();
    if more > 0 {
        format!("{first} (and {more} more problems)")
    } else {
        first
    }
}

/// True for the errors that mean "another connection holds the lock; try again".
#[must_use]
pub fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Runs `attempt` until it does not fail with SQLITE_BUSY. Each attempt must be a whole
/// transaction (a dropped `Transaction` rolls back), so a retry never repeats half of one.
pub fn retry_busy<T>(mut attempt: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let mut backoff = Duration::from_millis(1);
    loop {
        match attempt() {
            Err(error) if is_busy(&error) => {
                thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Checks, without opening a connection, that `path` is absent, empty, or starts with the SQLite
/// header. Returns whether the file exists.
///
/// This reads the file with `std::fs` and closes it again, which is only safe before any
/// connection to it exists in this process (closing a descriptor drops its POSIX locks).
pub fn check_header(path: &Path) -> Result<bool, StoreError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    // Non-blocking, and judged by what was opened: a FIFO put in the file's place after the path
    // checks must not hang the open or the read.
    let mut file = match File::options()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)
    {
        Ok(file) if file.metadata().is_ok_and(|m| m.is_file()) => file,
        Ok(_) => return Err(StoreError::NotSqlite(path.to_path_buf())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(_) if path.is_dir() => return Err(StoreError::NotSqlite(path.to_path_buf())),
        Err(error) => {
            return Err(StoreError::Sqlite {
                path: path.to_path_buf(),
                source: rusqlite::Error::InvalidPath(PathBuf::from(error.to_string())),
            });
        }
    };
    let mut header = [0u8; 16];
    let mut read = 0;
    while read < header.len() {
        match file.read(&mut header[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(_) => return Err(StoreError::NotSqlite(path.to_path_buf())),
        }
    }
    // An empty file is a valid, empty database to SQLite.
    if read == 0 || &header == SQLITE_HEADER {
        Ok(true)
    } else {
        Err(StoreError::NotSqlite(path.to_path_buf()))
    }
}

/// Opens (creating if needed) a warehouse for a worker: WAL, `busy_timeout`, the chosen
/// `synchronous`, and the schema `needs` describes, verified if it already existed.
///
/// Every check that can refuse runs first, on a connection that cannot write (`Snapshot`): a
/// refused file, its `-wal` and its journal stay byte for byte as they were, and no file is left
/// beside it. With `check_integrity`, an existing warehouse must also pass `PRAGMA quick_check`
/// (a scan of the whole file: a hand-started worker pays it, a supervised restart does not).
pub fn open_for_worker(
    path: &Path,
    sync: SyncMode,
    needs: SchemaNeeds,
    check_integrity: bool,
) -> Result<Connection, StoreError> {
    let path = &paths::file_or_new(path, "--db")?;
    if check_integrity {
        refuse_orphan_log(path)?;
    }
    if check_header(path)? {
        check_before_writing(path, needs, check_integrity)?;
    }
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| StoreError::sqlite(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| StoreError::sqlite(path, e))?;
    retry_busy(|| conn.pragma_update(None, "journal_mode", "WAL"))
        .map_err(|e| StoreError::sqlite(path, e))?;
    let sync_value = match sync {
        SyncMode::Normal => "NORMAL",
        SyncMode::Full => "FULL",
    };
    conn.pragma_update(None, "synchronous", sync_value)
        .map_err(|e| StoreError::sqlite(path, e))?;
    create_schema(&mut conn, path, needs)?;
    Ok(conn)
}

/// A hand-started worker given a new (or empty) database with a `-wal` already beside it:
/// SQLite would replay that log, someone else's, into the new file.
///
/// The log is looked at before the database: a worker starting at the same moment writes the
/// database's first page before it creates its `-wal`, so a log seen first with an empty
/// database after it cannot be that worker's. (A `-journal` beside an empty database can be: the
/// switch to WAL goes through one, and rolling one back into an empty file restores nothing.)
fn refuse_orphan_log(path: &Path) -> Result<(), StoreError> {
    let log = paths::with_suffix(path, "-wal");
    let log_there = fs::symlink_metadata(&log).is_ok();
    if log_there && fs::metadata(path).map_or(0, |m| m.len()) == 0 {
        return Err(StoreError::OrphanLog {
            path: path.to_path_buf(),
            log,
        });
    }
    Ok(())
}

/// The refusals a worker makes before its first write, on a snapshot that cannot write.
fn check_before_writing(
    path: &Path,
    needs: SchemaNeeds,
    check_integrity: bool,
) -> Result<(), StoreError> {
    if fs::metadata(path).map_or(0, |m| m.len()) == 0 {
        // An empty file is a new database to SQLite: nothing to refuse yet.
        return Ok(());
    }
    let snapshot = Snapshot::open(path)?;
    let conn = &snapshot.conn;
    refuse_foreign(conn, path)?;
    if !table_exists(conn, "records").map_err(|e| StoreError::sqlite(path, e))? {
        return Ok(());
    }
    verify_schema(conn, path, needs, false)?;
    verify_insertable(conn, path)?;
    verify_key_form(conn, path, needs)?;
    if check_integrity {
        let verdict: String = retry_busy(|| conn.query_row("PRAGMA quick_check", [], |r| r.get(0)))
            .map_err(|e| StoreError::sqlite(path, e))?;
        if verdict != "ok" {
            return Err(StoreError::Corrupt {
                path: path.to_path_buf(),
                detail: format!("quick_check: {}", one_line(&verdict)),
            });
        }
    }
    Ok(())
}

/// Opens an existing warehouse read-only, to follow it while workers write (the observer).
pub fn open_read_only(path: &Path) -> Result<Connection, StoreError> {
    open_read_only_waiting(path, BUSY_TIMEOUT)
}

/// How long the observer waits on a worker's lock: it reads on the dashboard's own thread, and
/// a worker paused (SIGSTOP) inside its setup holds an exclusive lock until it is resumed.
pub const OBSERVER_BUSY: Duration = Duration::from_millis(20);

/// `open_read_only` for the observer: BUSY after `OBSERVER_BUSY`, never seconds of waiting.
pub fn open_observing(path: &Path) -> Result<Connection, StoreError> {
    open_read_only_waiting(path, OBSERVER_BUSY)
}

/// An existing warehouse opened read-only, waiting `busy` on a writer's lock, checked to be one.
fn open_read_only_waiting(path: &Path, busy: Duration) -> Result<Connection, StoreError> {
    if !check_header(path)? {
        return Err(StoreError::Missing(path.to_path_buf()));
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| StoreError::sqlite(path, e))?;
    conn.busy_timeout(busy)
        .map_err(|e| StoreError::sqlite(path, e))?;
    // The query planner's stability guarantee: without it, a statement whose `LIMIT ?` is bound
    // again (the observer's every poll, 50 a second per lane) is parsed and planned again on
    // its next step, which was a third of a poll's cost.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(|e| StoreError::sqlite(path, e))?;
    check_warehouse_ref(&conn, path)?;
    Ok(conn)
}

/// Opens an existing warehouse to read it once (`inspect`), changing nothing (see `Snapshot`).
pub fn open_snapshot(path: &Path) -> Result<Snapshot, StoreError> {
    let snapshot = Snapshot::open(path)?;
    check_warehouse_ref(&snapshot.conn, path)?;
    Ok(snapshot)
}

/// Only a database whose `records` table reclaim could have made: the table and its `task_id` and
/// `run_id` columns are there.
fn check_warehouse_ref(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    if !table_exists(conn, "records").map_err(|e| StoreError::sqlite(path, e))? {
        return Err(StoreError::NotWarehouse {
            path: path.to_path_buf(),
        });
    }
    let columns = columns(conn, "records").map_err(|e| StoreError::sqlite(path, e))?;
    for column in ["task_id", "run_id"] {
        if !columns.iter().any(|c| c == column) {
            return Err(StoreError::MissingColumn {
                path: path.to_path_buf(),
                table: "records",
                column,
            });
        }
    }
    Ok(())
}

/// Deletes every checkpoint (the table may not exist: then there is nothing to delete).
pub fn wipe_checkpoints(db: &Path) -> Result<usize, StoreError> {
    let failed = |e| StoreError::sqlite(db, e);
    let conn = Connection::open(db).map_err(failed)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(failed)?;
    if !table_exists(&conn, "checkpoints").map_err(failed)? {
        return Ok(0);
    }
    retry_busy(|| conn.execute("DELETE FROM checkpoints", [])).map_err(failed)
}

/// The user tables in the database, by name.
fn user_tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )?;
    stmt.query_map([], |row| row.get(0))?.collect()
}

/// Cached: the observer asks on every poll.
pub(crate) fn table_exists(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1")?
        .query_row([table], |row| row.get::<_, i64>(0))
        .map(|n| n > 0)
}

fn refuse_foreign(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let tables = retry_busy(|| user_tables(conn)).map_err(|e| StoreError::sqlite(path, e))?;
    let foreign: Vec<&str> = tables
        .iter()
        .map(String::as_str)
        .filter(|t| !matches!(*t, "records" | "checkpoints"))
        .collect();
    if !foreign.is_empty() && !tables.iter().any(|t| t == "records") {
        return Err(StoreError::Foreign {
            path: path.to_path_buf(),
            tables: foreign.join(", "),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::StatementStatus;

    #[test]
    fn the_observers_connection_plans_a_poll_once_whatever_its_bindings() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let path = dir.path().join("w.db");
        let writer = open_for_worker(
            &path,
            SyncMode::Normal,
            crate::worker::Strategy::Guarded.needs(),
            false,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let observer = open_observing(&path).unwrap_or_else(|e| panic!("{e}"));
        let sql = "SELECT rowid FROM records WHERE rowid > ?1 ORDER BY rowid LIMIT ?2";
        for (i, limit) in (0..5_i64).zip([10_i64, 20, 10, 50_000, 3]) {
            writer
                .execute(
                    "INSERT INTO records(task_id, payload, idem_key, run_id, written_at) \
                     VALUES (?1, 'p', ?1, 'r', 0)",
                    [format!("task-{i:03}")],
                )
                .unwrap_or_else(|e| panic!("{e}"));
            let mut stmt = observer
                .prepare_cached(sql)
                .unwrap_or_else(|e| panic!("{e}"));
            let n = stmt
                .query_map(rusqlite::params![i - 1, limit], |r| r.get::<_, i64>(0))
                .unwrap_or_else(|e| panic!("{e}"))
                .count();
            assert!(n >= 1);
            // A `LIMIT ?` bound again used to expire the statement: parsed and planned again.
            assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0, "poll {i}");
        }
    }
}
