//! The observer's reads of reclaim's own lane on SQLite: only rows with a rowid above the last
//! one read (a high-water mark), so a poll costs what is new, not the size of the table; the
//! checkpoints the same way, a wipe told by `max(rowid)` falling below the mark.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::{is_busy, open_observing, table_exists};
use crate::warehouse::backend::{CheckpointRead, Follower, LaneRead};
use crate::warehouse::error::StoreError;

/// At most this many rows are taken per read, so a tick stays short even when a million rows
/// arrive at once; the rest come on the next read.
pub(super) const MAX_ROWS_PER_POLL: i64 = 50_000;

/// Whether a read of `n` rows reached the cap (so there may be more).
pub(super) fn capped(n: usize) -> bool {
    i64::try_from(n).is_ok_and(|n| n >= MAX_ROWS_PER_POLL)
}

/// A lane's file, followed.
#[derive(Debug)]
pub struct SqliteFollow {
    db: PathBuf,
    conn: Option<Connection>,
    /// `PRAGMA data_version` of `conn` when a read last read everything there was: while it
    /// stays the same no other connection has committed, and there is nothing to read.
    caught_up_at: Option<i64>,
    high_water: i64,
    checkpoint_high_water: i64,
}

impl SqliteFollow {
    #[must_use]
    pub fn new(db: &Path) -> Self {
        Self {
            db: db.to_path_buf(),
            conn: None,
            caught_up_at: None,
            high_water: 0,
            checkpoint_high_water: 0,
        }
    }

    fn read_new(&mut self) -> rusqlite::Result<LaneRead> {
        let Some(conn) = self.conn.as_ref() else {
            return Ok(LaneRead::default());
        };
        // Every statement here is prepared once per connection: at 50 polls a second per lane,
        // parsing the SQL again each time was most of the poll's cost. Most polls end at the
        // first one: a worker at the shipped pace commits less often than the engine ticks.
        let version: i64 = conn
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |r| r.get(0))?;
        if self.caught_up_at == Some(version) {
            return Ok(LaneRead::default());
        }
        conn.prepare_cached("BEGIN")?.execute([])?;
        let mut rows: Vec<(i64, String, String)> = Vec::new();
        {
            let mut stmt = conn.prepare_cached(
                "SELECT rowid, task_id, run_id FROM records WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
            )?;
            let mut found = stmt.query(rusqlite::params![self.high_water, MAX_ROWS_PER_POLL])?;
            while let Some(row) = found.next()? {
                rows.push((row.get(0)?, row.get(1)?, row.get(2)?));
            }
        }
        let checkpoints = if table_exists(conn, "checkpoints")? {
            Some(read_checkpoints(conn, self.checkpoint_high_water)?)
        } else {
            None
        };
        conn.prepare_cached("COMMIT")?.execute([])?;
        let complete =
            !capped(rows.len()) && checkpoints.as_ref().is_none_or(|(c, _)| !capped(c.len()));
        self.caught_up_at = complete.then_some(version);
        // INVARIANT: records rows are never deleted, so every new row has a rowid above the
        // high-water mark (SQLite assigns max(rowid)+1).
        if let Some(&(rowid, _, _)) = rows.last() {
            self.high_water = rowid;
        }
        let checkpoints = checkpoints.map(|(read, wiped)| {
            if wiped {
                self.checkpoint_high_water = 0;
            }
            (self.checkpoint_high_water) =
                (read.iter().map(|(rowid, _)| *rowid)).fold(self.checkpoint_high_water, i64::max);
            CheckpointRead {
                keys: read.into_iter().map(|(_, key)| key).collect(),
                wiped,
            }
        });
        Ok(LaneRead {
            rows: rows.into_iter().map(|(_, task, run)| (task, run)).collect(),
            checkpoints,
        })
    }
}

impl Follower for SqliteFollow {
    /// A database that does not exist yet (no worker has started) is not an error: there is
    /// simply nothing to see.
    fn read(&mut self) -> Result<Option<LaneRead>, StoreError> {
        if self.conn.is_none() {
            match open_observing(&self.db) {
                Ok(conn) => self.conn = Some(conn),
                Err(StoreError::Missing(_) | StoreError::NotWarehouse { .. }) => {
                    return Ok(None);
                }
                // A worker holds the database locked (setting it up, perhaps paused there):
                // nothing new to see this tick; the dashboard must not wait on it.
                Err(StoreError::Sqlite { source, .. }) if is_busy(&source) => {
                    return Ok(None);
                }
                Err(error) => return Err(error),
            }
        }
        let result = self.read_new();
        if result.is_err() {
            // A failed read may leave the read transaction open; start afresh next time.
            self.conn = None;
            self.caught_up_at = None;
        }
        match result {
            Err(error) if is_busy(&error) => Ok(None),
            result => result
                .map(Some)
                .map_err(|e| StoreError::sqlite(&self.db, e)),
        }
    }

    fn read_all_next(&mut self) {
        self.caught_up_at = None;
    }

    /// A writer killed inside its commit may leave the transaction's frames in the `-wal`
    /// without the shared index that names them: every connection open then, this one included,
    /// goes on reading the index it knows, while the next connection to open the database alone
    /// recovers the log and finds the transaction (as `sqlite3` afterwards did: a verdict said
    /// 28 rows of a database that held 29). Closed, it lets that next opener recover.
    fn release(&mut self) {
        self.conn = None;
        self.caught_up_at = None;
    }

    fn forget_checkpoints(&mut self) {
        self.caught_up_at = None;
        self.checkpoint_high_water = 0;
    }
}

/// The checkpoints above `high_water`, each `(rowid, task_id)`, and whether the table was
/// wiped since (then they are read from the start).
fn read_checkpoints(
    conn: &Connection,
    high_water: i64,
) -> rusqlite::Result<(Vec<(i64, String)>, bool)> {
    let max_rowid: i64 = conn
        .prepare_cached("SELECT coalesce(max(rowid), 0) FROM checkpoints")?
        .query_row([], |r| r.get(0))?;
    // A wipe (DELETE FROM checkpoints) drops max(rowid) below what was seen; `INSERT OR REPLACE`
    // only ever moves a key to a higher rowid.
    let wiped = max_rowid < high_water;
    let from = if wiped { 0 } else { high_water };
    let mut stmt = conn.prepare_cached(
        "SELECT rowid, task_id FROM checkpoints WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
    )?;
    let rows = stmt
        .query_map(rusqlite::params![from, MAX_ROWS_PER_POLL], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok((rows, wiped))
}
