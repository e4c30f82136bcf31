//! The outbox on SQLite, from the other side: the relay's reads and marks (`reclaim relay`),
//! and the looks at it that change nothing (the dashboard's count of entries still to send,
//! the relay command's check that the lane is the outbox strategy's).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension as _};

use super::{is_busy, open_observing, open_snapshot, retry_busy, table_exists};
use crate::heartbeat::unix_now;
use crate::warehouse::backend::{Outbox, Pending};
use crate::warehouse::error::StoreError;

/// The relay's connection to a lane's file.
pub struct SqliteOutbox {
    conn: Connection,
    db: PathBuf,
}

impl SqliteOutbox {
    /// Opens the lane's file for the relay; `None` while the worker has not created it.
    pub fn open(db: &Path) -> Result<Option<Self>, StoreError> {
        if !db.exists() {
            return Ok(None);
        }
        let failed = |source| StoreError::Sqlite {
            path: db.to_path_buf(),
            source,
        };
        let conn =
            Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_WRITE).map_err(failed)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(failed)?;
        Ok(Some(Self {
            conn,
            db: db.to_path_buf(),
        }))
    }

    fn failed(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.db.clone(),
            source,
        }
    }
}

impl Outbox for SqliteOutbox {
    /// Read in one snapshot: read apart, an entry committed between the two reads is counted
    /// in the total but never seen pending, and the relay stops with it unsent.
    fn next_pending(&mut self) -> Result<(Option<Pending>, u64), StoreError> {
        let conn = &self.conn;
        retry_busy(|| {
            let snapshot = conn.unchecked_transaction()?;
            let read = read_pending(&snapshot);
            snapshot.commit()?;
            read
        })
        .map_err(|e| self.failed(e))
    }

    fn mark_sent(&mut self, task: &str) -> Result<(), StoreError> {
        retry_busy(|| {
            self.conn.execute(
                "UPDATE outbox SET sent_at = ?2 WHERE task_id = ?1",
                rusqlite::params![task, unix_now()],
            )
        })
        .map(drop)
        .map_err(|e| self.failed(e))
    }
}

fn read_pending(conn: &Connection) -> rusqlite::Result<(Option<Pending>, u64)> {
    let exists: bool = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'outbox'",
            [],
            |_| Ok(true),
        )
        .optional()?
        .unwrap_or(false);
    if !exists {
        return Ok((None, 0));
    }
    let pending = conn
        .query_row(
            "SELECT task_id, idem_key, body FROM outbox WHERE sent_at IS NULL ORDER BY task_id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let total: u64 = conn.query_row("SELECT count(*) FROM outbox", [], |r| r.get(0))?;
    Ok((pending, total))
}

/// Whether `db` is a warehouse with rows and no outbox table, read without changing any file
/// (no `-wal` or `-shm` left beside it). The outbox strategy makes its table before its first
/// row, so a night still starting is never taken for one; anything unreadable is not one.
#[must_use]
pub fn has_rows_and_no_outbox(db: &Path) -> bool {
    if !db.exists() {
        return false;
    }
    let Ok(snapshot) = open_snapshot(db) else {
        return false;
    };
    let outbox = table_exists(&snapshot.conn, "outbox").unwrap_or(true);
    let rows: i64 = snapshot
        .conn
        .query_row(
            "SELECT count(*) FROM (SELECT 1 FROM records LIMIT 1)",
            [],
            |r| r.get(0),
        )
        .unwrap_or(0);
    !outbox && rows > 0
}

/// How many of the outbox's entries are not marked sent yet; `None` when it cannot be read.
/// Read on the dashboard's thread, so a lock held by a writer is not waited out: the entries
/// are taken to be pending still, and looked at again next tick.
#[must_use]
pub fn pending_entries(db: &Path) -> Option<u64> {
    let conn = open_observing(db).ok()?;
    let sql = "SELECT count(*) FROM outbox WHERE sent_at IS NULL";
    match conn.query_row(sql, [], |r| r.get(0)) {
        Ok(n) => Some(n),
        Err(e) if is_busy(&e) => Some(1),
        Err(_) => None,
    }
}
