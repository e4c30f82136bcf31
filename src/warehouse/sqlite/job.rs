//! The observer's reads of someone else's job on SQLite (`run --exec`): its table, created when
//! the job likes, read above a high-water mark on rowid, counted whole when it has no rowid or
//! by `--count-sql`; and its checkpoint table, when named. Watching must not change the night:
//! a rollback-journal database is read without any lock (`unlocked`), a WAL one in short read
//! transactions, and most polls take no read at all (the files' size and time unchanged).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rusqlite::Connection;

use super::follow::{MAX_ROWS_PER_POLL, capped};
use super::{is_busy, rows, table_exists, unlocked};
use crate::warehouse::backend::{CheckpointRead, JobFollower, JobRead, JobRows};
use crate::warehouse::error::StoreError;
use crate::warehouse::source::{Checkpoints, RowSource, quote_identifier};

/// Size and modification time of a job's database and of its `-wal`.
type FileStamps = [(u64, Option<SystemTime>); 2];

/// Longer than the kernel's tick for file times, so a stamp older than this is final.
pub const STAMP_TICK: Duration = Duration::from_millis(10);

/// How reclaim last read a job's database: what it can say of a lock the job's error names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LastRead {
    /// Not yet: reclaim had held nothing on the file.
    #[default]
    Nothing,
    /// Without any lock (`unlocked`): a rollback-journal database.
    Unlocked,
    /// As a WAL reader, whose locks never stop a commit.
    WalReader,
}

impl LastRead {
    /// What reclaim can say beside a line of the job's that names a lock (`database is locked`,
    /// `busy`): whether its own reads could have held it. `None` for any other line.
    #[must_use]
    pub fn beside(self, line: &str) -> Option<&'static str> {
        let lower = line.to_ascii_lowercase();
        // SQLite's own words for a lock (`database is locked`, `database is busy`, SQLITE_BUSY),
        // not any line that says busy (`vendor busy (503), retrying`).
        if !(lower.contains("database is locked")
            || lower.contains("database is busy")
            || lower.contains("sqlite_busy"))
        {
            return None;
        }
        Some(match self {
            Self::Nothing | Self::Unlocked => {
                "reclaim held no lock on the database (its reads take none), so the lock was the job's own or another process's"
            }
            Self::WalReader => {
                "reclaim reads this WAL database as a reader, never a log the job has just made and not yet committed in (a first reader's index build would lock it a moment), and a reader's lock never stops a commit (only a change of journal mode or an exclusive lock), so the lock was most likely the job's own or another process's"
            }
        })
    }
}

/// Whether the database's `-wal` is there without a frame past its 32-byte header: a log just
/// made, that no commit has gone into yet. Its size is looked at, nothing opened.
fn wal_just_made(db: &Path) -> bool {
    std::fs::metadata(crate::base::paths::with_suffix(db, "-wal")).is_ok_and(|m| m.len() <= 32)
}

/// A job's database, followed.
#[derive(Debug)]
pub struct SqliteJobFollow {
    db: PathBuf,
    source: RowSource,
    /// A WAL database's connection, kept between reads (a rollback-journal one opens one per
    /// read, lock-free, closed before the file is looked at again).
    conn: Option<Connection>,
    /// The size and modification time of the file and its `-wal` when everything had been
    /// read, and when.
    files_read: Option<(FileStamps, SystemTime)>,
    /// `PRAGMA data_version` of `conn` when a read last read everything there was.
    caught_up_at: Option<i64>,
    /// A rollback-journal database: its change counter when a lock-free read last read
    /// everything there was; the same counter, nothing new.
    unlocked_at: Option<u32>,
    /// How the job's database was last read: what reclaim can say of a lock its error names.
    pub last_read: LastRead,
    /// Lock-free reads thrown away because the file changed under them (read again next poll).
    pub discarded_reads: u64,
    high_water: i64,
    checkpoint_high_water: i64,
}

impl SqliteJobFollow {
    #[must_use]
    pub fn new(db: &Path, source: &RowSource) -> Self {
        Self {
            db: db.to_path_buf(),
            source: source.clone(),
            conn: None,
            files_read: None,
            caught_up_at: None,
            unlocked_at: None,
            last_read: LastRead::Nothing,
            discarded_reads: 0,
            high_water: 0,
            checkpoint_high_water: 0,
        }
    }

    /// Size and modification time of the database and its `-wal`.
    fn file_stamps(&self) -> FileStamps {
        let stamp = |path: &Path| {
            std::fs::metadata(path).map_or((0, None), |m| (m.len(), m.modified().ok()))
        };
        [
            stamp(&self.db),
            stamp(&crate::base::paths::with_suffix(&self.db, "-wal")),
        ]
    }

    /// Moves the high-water marks past what a read that holds returned.
    fn advance(&mut self, read: &Read) {
        if let JobRows::New(_) = &read.rows
            && let Some(&last) = read.rowids.last()
        {
            self.high_water = last;
        }
        if let Some((rows, wiped)) = &read.checkpoints {
            if *wiped {
                self.checkpoint_high_water = 0;
            }
            self.checkpoint_high_water =
                (rows.iter().map(|(rowid, _)| *rowid)).fold(self.checkpoint_high_water, i64::max);
        }
    }

    /// A rollback-journal database read without any lock (`unlocked`), on a connection of its
    /// own closed before the file is looked at again. A read that did not see one state of the
    /// file is thrown away whole, its errors too (a torn page may look like anything): the
    /// high-water marks move only with a read that holds, so the next poll reads it again.
    fn read_unlocked(
        &mut self,
        before: unlocked::Before,
        (files, now): (FileStamps, SystemTime),
    ) -> Result<Option<JobRead>, StoreError> {
        self.last_read = LastRead::Unlocked;
        // A writer inside its commit, or a journal a killed one left for its restart to roll
        // back: the next poll looks again.
        if before.writing {
            return Ok(None);
        }
        // Every commit moves the counter: the same counter as a complete read, nothing new.
        if self.unlocked_at == Some(before.counter) {
            self.files_read = Some((files, now));
            return Ok(None);
        }
        let read = unlocked::open(&self.db)
            .map_err(|e| StoreError::sqlite(&self.db, e))
            .and_then(|conn| query_job(&conn, &self.source, &self.db, self.marks()));
        // A `--count-sql` that used its whole time limit is no torn page's doing: thrown away,
        // it would be run again for another whole limit (a night once took three).
        if let Err(error @ StoreError::CountSqlTooLong { .. }) = read {
            return Err(error);
        }
        if !before.still_holds(&self.db) {
            self.discarded_reads += 1;
            return Ok(None);
        }
        let read = read?;
        self.advance(&read);
        let read = read.into_job_read();
        if read.complete {
            self.unlocked_at = Some(before.counter);
            self.files_read = Some((files, now));
        }
        Ok(Some(read))
    }

    /// The high-water marks a read starts above: rows, checkpoints.
    fn marks(&self) -> (i64, i64) {
        (self.high_water, self.checkpoint_high_water)
    }
}

impl JobFollower for SqliteJobFollow {
    /// A database and a table the job creates when it likes, read with a high-water mark on
    /// rowid (or counted whole by `--count-sql`).
    fn read(&mut self) -> Result<Option<JobRead>, StoreError> {
        // A look at the files' size and time takes no lock and skips most ticks: the database
        // is read only when its files changed since the last complete read.
        let files = self.file_stamps();
        let now = SystemTime::now();
        if let Some((read, read_at)) = self.files_read
            && read == files
        {
            // A file's time moves in kernel ticks (a few ms), so a commit in the same tick as the
            // last read leaves the stamps as they were: a read that late enough after the newest
            // stamp saw everything; otherwise look again, but no more than once per tick.
            let newest = files.iter().filter_map(|f| f.1).max();
            let settled = newest.is_none_or(|m| read_at >= m + STAMP_TICK);
            if settled || now.duration_since(read_at).unwrap_or_default() < STAMP_TICK {
                return Ok(None);
            }
        }
        self.files_read = None;
        if self.conn.is_none() {
            // INVARIANT: no connection of reclaim's holds a lock on the job's file here: this
            // follower holds no WAL connection, its lock-free reads take none, and no other
            // connection of reclaim's is open on it while the job runs. So its header may be
            // read through std::fs (`Before::look`) without dropping anyone's lock.
            let Some(before) = unlocked::Before::look(&self.db)? else {
                return Ok(None);
            };
            if !before.wal {
                return self.read_unlocked(before, (files, now));
            }
            // The first reader of a log just made builds its index, holding the log's recovery
            // lock while it does, and a job's write then fails at once without a busy timeout
            // (seen: the sqlite3 shell's line after its `PRAGMA journal_mode=WAL`). A log there
            // but without a frame yet is the job's to start: reclaim reads once it has committed
            // in it. (No log at all is a database whose log was checkpointed away on its last
            // close: read as before.)
            if wal_just_made(&self.db) {
                return Ok(None);
            }
            self.conn = rows::open_following(&self.db)?;
        }
        let Some(conn) = self.conn.as_ref() else {
            return Ok(None);
        };
        self.last_read = LastRead::WalReader;
        let version: Option<i64> = conn
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .ok();
        if version.is_some() && self.caught_up_at == version {
            return Ok(None);
        }
        // One short read transaction: a WAL reader never stops a writer's commit, and holds
        // the log only as long as it reads.
        let read = conn
            .prepare_cached("BEGIN")
            .and_then(|mut s| s.execute([]))
            .map_err(|e| StoreError::sqlite(&self.db, e))
            .and_then(|_| query_job(conn, &self.source, &self.db, self.marks()));
        let _ = conn
            .prepare_cached("COMMIT")
            .and_then(|mut s| s.execute([]));
        let read = match read {
            Ok(read) => read,
            // A killed job's hot journal cannot be rolled back by a read-only connection; the
            // restarted job does that, and meanwhile there is simply nothing new to see.
            Err(StoreError::Sqlite { source, .. })
                if source.sqlite_error_code() == Some(rusqlite::ErrorCode::ReadOnly)
                    || is_busy(&source) =>
            {
                self.conn = None;
                self.caught_up_at = None;
                return Ok(None);
            }
            Err(error) => {
                self.conn = None;
                self.caught_up_at = None;
                return Err(error);
            }
        };
        self.advance(&read);
        let read = read.into_job_read();
        self.caught_up_at = version.filter(|_| read.complete);
        if read.complete {
            self.files_read = Some((files, now));
        }
        Ok(Some(read))
    }

    fn read_all_next(&mut self) {
        self.files_read = None;
        self.caught_up_at = None;
    }

    fn release(&mut self) {
        self.conn = None;
        self.caught_up_at = None;
        self.unlocked_at = None;
        self.files_read = None;
    }

    fn forget_checkpoints(&mut self) {
        self.caught_up_at = None;
        self.checkpoint_high_water = 0;
    }

    fn in_arrival_order(&self) -> bool {
        true
    }

    fn lock_said(&self, line: &str) -> Option<&'static str> {
        self.last_read.beside(line)
    }
}

/// One read, with the rowids the marks move by.
struct Read {
    rows: JobRows,
    /// The rowids of `JobRows::New`'s rows, in order.
    rowids: Vec<i64>,
    /// The checkpoint table's rows above its mark, `(rowid, key)`, and whether it was wiped.
    checkpoints: Option<(Vec<(i64, String)>, bool)>,
}

impl Read {
    fn into_job_read(self) -> JobRead {
        let complete = match &self.rows {
            JobRows::NoTable => false,
            JobRows::New(rows) => {
                !capped(rows.len()) && self.checkpoints.as_ref().is_none_or(|c| !capped(c.0.len()))
            }
            JobRows::Counted(..) | JobRows::Whole(..) | JobRows::Keys(_) => true,
        };
        JobRead {
            rows: self.rows,
            checkpoints: self.checkpoints.map(|(rows, wiped)| CheckpointRead {
                keys: rows.into_iter().map(|(_, key)| key).collect(),
                wiped,
            }),
            complete,
        }
    }

    fn of(rows: JobRows) -> Self {
        Self {
            rows,
            rowids: Vec::new(),
            checkpoints: None,
        }
    }
}

/// One read of a job's table (and its checkpoint table, when named): what is new above the
/// high-water marks `(rows, checkpoints)`, inside the caller's read transaction.
fn query_job(
    conn: &Connection,
    source: &RowSource,
    db: &Path,
    high_water: (i64, i64),
) -> Result<Read, StoreError> {
    let db = db.to_path_buf();
    let failed = |e| StoreError::sqlite(&db, e);
    match rows::count(source, conn, &db) {
        Ok(Some((rows, distinct))) => return Ok(Read::of(JobRows::Counted(rows, distinct))),
        Ok(None) => {}
        // The job has not made the tables its count reads yet: nothing to see, no error.
        Err(StoreError::CountSql { detail, .. }) if detail.contains("no such table") => {
            return Ok(Read::of(JobRows::NoTable));
        }
        Err(error) => return Err(error),
    }
    if !rows::check_shape(source, conn, &db)? {
        return Ok(Read::of(JobRows::NoTable));
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
            let (rows, distinct, duplicated) = conn
                .prepare_cached(&whole)
                .and_then(|mut s| s.query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))))
                .map_err(failed)?;
            return Ok(Read::of(JobRows::Whole(rows, distinct, duplicated)));
        }
        Err(e) => return Err(failed(e)),
    };
    let rows: Vec<(i64, Option<String>)> = stmt
        .query_map(rusqlite::params![high_water.0, MAX_ROWS_PER_POLL], |row| {
            // A key that is not UTF-8 is no key of the queue: a row outside it.
            let key = super::rows::key_text(row, 1)?.and_then(|(k, utf8)| utf8.then_some(k));
            Ok((row.get::<_, i64>(0)?, key))
        })
        .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
        .map_err(failed)?;
    let checkpoints = match &source.checkpoints {
        Some(named) if table_exists(conn, &named.table).map_err(failed)? => {
            match rows::check_checkpoint_shape(named, conn, &db) {
                Ok(()) => Some(read_job_checkpoints(conn, named, high_water.1).map_err(failed)?),
                // A guessed table of another shape is not the job's checkpoints: unread.
                Err(_) if named.guessed => None,
                Err(error) => return Err(error),
            }
        }
        _ => None,
    };
    let (rowids, keys) = rows.into_iter().unzip();
    Ok(Read {
        rows: JobRows::New(keys),
        rowids,
        checkpoints,
    })
}

/// The job's checkpoint table above `high_water`, each `(rowid, key)`, and whether it was wiped
/// since (then read from the start).
fn read_job_checkpoints(
    conn: &Connection,
    named: &Checkpoints,
    high_water: i64,
) -> rusqlite::Result<(Vec<(i64, String)>, bool)> {
    let table = quote_identifier(&named.table);
    let key = quote_identifier(&named.key);
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
            let key = super::rows::key_text(row, 1)?.and_then(|(k, utf8)| utf8.then_some(k));
            Ok((row.get(0)?, key.unwrap_or_default()))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok((rows, wiped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sqlites_own_words_for_a_lock_get_a_note() {
        for line in [
            "Error: stepping, database is locked (5)",
            "sqlite3.OperationalError: database is busy",
            "rc=SQLITE_BUSY",
        ] {
            assert!(LastRead::Unlocked.beside(line).is_some(), "{line}");
        }
        for line in ["vendor busy (503), retrying", "the line is busy", "ok"] {
            assert_eq!(LastRead::Unlocked.beside(line), None, "{line}");
        }
    }
}
