//! The observer on someone else's job (`run --exec`): its table, created when the job likes,
//! read above a high-water mark on rowid, counted whole when it has no rowid or by `--count-sql`;
//! and its checkpoint table, when named. Watching must not change the night: a rollback-journal
//! database is read without any lock (`store::unlocked`), a WAL one in short read transactions.

use std::path::Path;
use std::time::{Duration, SystemTime};

use rusqlite::Connection;

use super::{CheckpointRead, MAX_ROWS_PER_POLL, Poll};
use crate::store::rows::{self, RowSource};
use crate::store::{self, StoreError, table_exists, unlocked};

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

/// How reclaim last read a job's database: what it can say of a lock the job's error names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LastRead {
    /// Not yet: reclaim had held nothing on the file.
    #[default]
    Nothing,
    /// Without any lock (`store::unlocked`): a rollback-journal database.
    Unlocked,
    /// As a WAL reader, whose locks never stop a commit.
    WalReader,
}

/// Whether the database's `-wal` is there without a frame past its 32-byte header: a log just
/// made, that no commit has gone into yet. Its size is looked at, nothing opened.
fn wal_just_made(db: &Path) -> bool {
    std::fs::metadata(crate::base::paths::with_suffix(db, "-wal")).is_ok_and(|m| m.len() <= 32)
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

impl super::Observer {
    /// `poll` for an external job: a database and a table the job creates when it likes, read
    /// with the same high-water mark on rowid (or counted whole by `--count-sql`).
    pub(super) fn poll_job(&mut self, source: &RowSource) -> Result<Poll, StoreError> {
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
                return Ok(Poll::default());
            }
        }
        self.files_read = None;
        if self.conn.is_none() {
            // INVARIANT: no connection of reclaim's holds a lock on the job's file here: this
            // observer holds no WAL connection, its lock-free reads take none, and no other
            // connection of reclaim's is open on it while the job runs. So its header may be
            // read through std::fs (`Before::look`) without dropping anyone's lock.
            let Some(before) = unlocked::Before::look(&self.db)? else {
                return Ok(Poll::default());
            };
            if !before.wal {
                return self.poll_job_unlocked(source, before, (files, now));
            }
            // The first reader of a log just made builds its index, holding the log's recovery
            // lock while it does, and a job's write then fails at once without a busy timeout
            // (seen: the sqlite3 shell's line after its `PRAGMA journal_mode=WAL`). A log there
            // but without a frame yet is the job's to start: reclaim reads once it has committed
            // in it. (No log at all is a database whose log was checkpointed away on its last
            // close: read as before.)
            if wal_just_made(&self.db) {
                return Ok(Poll::default());
            }
            self.conn = rows::open_following(&self.db)?;
        }
        let Some(conn) = self.conn.as_ref() else {
            return Ok(Poll::default());
        };
        self.last_read = LastRead::WalReader;
        let version: Option<i64> = conn
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .ok();
        if version.is_some() && self.caught_up_at == version {
            return Ok(Poll::default());
        }
        // One short read transaction: a WAL reader never stops a writer's commit, and holds
        // the log only as long as it reads.
        let db = self.db.clone();
        let failed = |e| StoreError::sqlite(&db, e);
        let read = conn
            .prepare_cached("BEGIN")
            .and_then(|mut s| s.execute([]))
            .map_err(failed)
            .and_then(|_| query_job(conn, source, &db, self.marks()));
        let _ = conn
            .prepare_cached("COMMIT")
            .and_then(|mut s| s.execute([]));
        match &read {
            Ok(_) => {}
            // A killed job's hot journal cannot be rolled back by a read-only connection; the
            // restarted job does that, and meanwhile there is simply nothing new to see.
            Err(StoreError::Sqlite { source, .. })
                if source.sqlite_error_code() == Some(rusqlite::ErrorCode::ReadOnly)
                    || store::is_busy(source) =>
            {
                self.conn = None;
                self.caught_up_at = None;
                return Ok(Poll::default());
            }
            Err(_) => {
                self.conn = None;
                self.caught_up_at = None;
            }
        }
        let (poll, complete) = self.apply_job(read?);
        self.caught_up_at = version.filter(|_| complete);
        if complete {
            self.files_read = Some((files, now));
        }
        Ok(poll)
    }

    /// A rollback-journal database read without any lock (`store::unlocked`), on a connection
    /// of its own closed before the file is looked at again. A read that did not see one state
    /// of the file is thrown away whole, its errors too (a torn page may look like anything):
    /// the high-water marks move only with a read that holds, so the next poll reads it again.
    fn poll_job_unlocked(
        &mut self,
        source: &RowSource,
        before: unlocked::Before,
        (files, now): (FileStamps, SystemTime),
    ) -> Result<Poll, StoreError> {
        self.last_read = LastRead::Unlocked;
        // A writer inside its commit, or a journal a killed one left for its restart to roll
        // back: the next poll looks again.
        if before.writing {
            return Ok(Poll::default());
        }
        // Every commit moves the counter: the same counter as a complete read, nothing new.
        if self.unlocked_at == Some(before.counter) {
            self.files_read = Some((files, now));
            return Ok(Poll::default());
        }
        let read = unlocked::open(&self.db)
            .map_err(|e| StoreError::sqlite(&self.db, e))
            .and_then(|conn| query_job(&conn, source, &self.db, self.marks()));
        if !before.still_holds(&self.db) {
            self.discarded_reads += 1;
            return Ok(Poll::default());
        }
        let (poll, complete) = self.apply_job(read?);
        if complete {
            self.unlocked_at = Some(before.counter);
            self.files_read = Some((files, now));
        }
        Ok(poll)
    }

    /// What reclaim can say beside a line of the job's naming a lock on its SQLite database
    /// (`LastRead::beside`); `None` for reclaim's own workers and on PostgreSQL.
    #[must_use]
    pub fn lock_said(&self, line: &str) -> Option<&'static str> {
        if self.source.is_none() || self.pg_job.is_some() {
            return None;
        }
        self.last_read.beside(line)
    }

    /// The high-water marks a read starts above: rows, checkpoints.
    fn marks(&self) -> (i64, i64) {
        (self.high_water, self.checkpoint_high_water)
    }

    /// Counts what one read of a job's database found; also whether it read everything.
    fn apply_job(&mut self, read: JobRead) -> (Poll, bool) {
        let mut poll = Poll::default();
        self.table_seen |= !matches!(read, JobRead::NoTable);
        let complete = match read {
            JobRead::NoTable => false,
            JobRead::Whole((rows, distinct, duplicated)) => {
                self.follows = Follows::Counts;
                poll.new_rows = rows.saturating_sub(self.rows);
                self.rows = rows;
                self.distinct = distinct;
                self.duplicated = duplicated;
                true
            }
            JobRead::Counted(rows, distinct) => {
                self.follows = Follows::Counts;
                poll.new_rows = rows.saturating_sub(self.rows);
                self.rows = rows;
                self.distinct = distinct;
                self.duplicated = rows.saturating_sub(distinct);
                true
            }
            JobRead::Rows(new_rows, checkpoints) => {
                let limited = |n: usize| i64::try_from(n).is_ok_and(|n| n >= MAX_ROWS_PER_POLL);
                let complete = !limited(new_rows.len())
                    && checkpoints.as_ref().is_none_or(|c| !limited(c.rows.len()));
                let mut checkpointed_now = Vec::new();
                let with_checkpoints = checkpoints.is_some();
                let mut new_indexes = Vec::new();
                if let Some(checkpoints) = checkpoints {
                    self.checkpoints_seen = true;
                    checkpointed_now = self.apply_checkpoints(checkpoints);
                }
                for (rowid, key) in new_rows {
                    self.high_water = rowid;
                    self.rows += 1;
                    poll.new_rows += 1;
                    let index = key.as_deref().and_then(|k| self.queue.index_of(k));
                    new_indexes.extend(index);
                    self.last_key.clone_from(&key);
                    // Without a run id, a second row for the first key, once the job had gone
                    // past it, is the restart at item zero (a kill at the first key, redone, is
                    // not).
                    if index == Some(0)
                        && self.seen.get(0)
                        && self.distinct > 1
                        && !self.restarted_at_zero
                    {
                        self.restarted_at_zero = true;
                        poll.restarted_at_zero = true;
                    }
                    self.count_key(index);
                }
                // Rows and checkpoints were read in one snapshot: a checkpoint whose row is not
                // there was committed first.
                if complete && self.checkpoint_before_row.is_none() {
                    self.checkpoint_before_row = checkpointed_now
                        .into_iter()
                        .find(|&index| !self.seen.get(index))
                        .map(|index| self.queue.key(index));
                }
                // And a new row whose checkpoint is not there was committed first; only once
                // the table holds keys of the queue (a cursor's row names none).
                if complete
                    && with_checkpoints
                    && self.checkpoints > 0
                    && self.row_before_checkpoint.is_none()
                {
                    self.row_before_checkpoint = (new_indexes.into_iter())
                        .find(|&index| !self.checkpointed.get(index))
                        .map(|index| self.queue.key(index));
                }
                complete
            }
        };
        (poll, complete)
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
            // A key that is not UTF-8 is no key of the queue: a row outside it.
            let key = rows::key_text(row, 1)?.and_then(|(k, utf8)| utf8.then_some(k));
            Ok((row.get::<_, i64>(0)?, key))
        })
        .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
        .map_err(failed)?;
    let checkpoints = match &source.checkpoints {
        Some(named) if table_exists(conn, &named.table).map_err(failed)? => {
            match RowSource::check_checkpoint_shape(named, conn, &db) {
                Ok(()) => Some(read_job_checkpoints(conn, named, high_water.1).map_err(failed)?),
                // A guessed table of another shape is not the job's checkpoints: unread.
                Err(_) if named.guessed => None,
                Err(error) => return Err(error),
            }
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
            let key = rows::key_text(row, 1)?.and_then(|(k, utf8)| utf8.then_some(k));
            Ok((row.get(0)?, key.unwrap_or_default()))
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
    fn a_rollback_journal_database_is_read_without_a_lock_and_never_beside_a_live_journal() {
        let (_dir, db) = db_with(
            "CREATE TABLE jobs(id TEXT UNIQUE); INSERT INTO jobs VALUES ('task-000'), ('task-001');",
        );
        let mut observer = Observer::of_job(&db, Queue::tasks(10), source("jobs", "id"));
        // A journal left live (a job killed inside its commit): the file may hold half a
        // transaction, so nothing is read and no mark moves.
        let journal = crate::base::paths::with_suffix(&db, "-journal");
        std::fs::write(&journal, [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(observer.poll().ok(), Some(Poll::default()));
        assert_eq!(observer.rows, 0);
        std::fs::remove_file(&journal).unwrap_or_else(|e| panic!("{e}"));
        let poll = observer.poll().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((poll.new_rows, observer.rows), (2, 2));
        assert_eq!(observer.last_read, LastRead::Unlocked);
        // A commit while reclaim watches needs no busy timeout at all.
        let writer = Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
        writer
            .execute("INSERT INTO jobs VALUES ('task-002')", [])
            .unwrap_or_else(|e| panic!("{e}"));
        observer.poll_to_the_end();
        assert_eq!((observer.rows, observer.distinct), (3, 3));
        let said = observer.lock_said("Error: stepping, database is locked (5)");
        assert!(
            said.is_some_and(|s| s.starts_with("reclaim held no lock")),
            "{said:?}"
        );
        assert_eq!(observer.lock_said("Error: no such table: jobs"), None);
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

    /// What a poll of a job's database costs, one new row each time, on 10k and 1M rows: a
    /// rollback journal read lock-free (a fresh connection per read) beside WAL (one connection
    /// kept). BENCHMARKS.md has the figures; run it with
    /// `cargo test --release -j 1 --lib -- --ignored poll_cost --nocapture`.
    #[test]
    #[ignore = "a measurement, run by hand"]
    fn poll_cost_of_one_new_row_stays_flat_from_10k_to_1m_rows() {
        use std::time::Instant;
        for journal in ["DELETE", "WAL"] {
            let mut medians = Vec::new();
            for size in [10_000u64, 1_000_000] {
                let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
                let db = dir.path().join("job.db");
                let writer = Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
                writer
                    .execute_batch(&format!(
                        "PRAGMA journal_mode={journal}; CREATE TABLE jobs(id TEXT UNIQUE, payload TEXT);
                         WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM n WHERE i < {size} - 1)
                         INSERT INTO jobs SELECT printf('k-%08d', i), 'payload payload payload' FROM n;"
                    ))
                    .unwrap_or_else(|e| panic!("{e}"));
                let mut observer = Observer::of_job(&db, Queue::tasks(10), source("jobs", "id"));
                observer.poll_to_the_end();
                assert_eq!(observer.rows, size);
                let mut times = Vec::new();
                for i in 0..300 {
                    writer
                        .execute("INSERT INTO jobs VALUES (?1, 'p')", [format!("new-{i}")])
                        .unwrap_or_else(|e| panic!("{e}"));
                    // Past the file times' tick, so the poll reads rather than skips.
                    std::thread::sleep(STAMP_TICK + std::time::Duration::from_millis(2));
                    let t = Instant::now();
                    let poll = observer.poll().unwrap_or_else(|e| panic!("{e}"));
                    times.push(t.elapsed());
                    assert_eq!(poll.new_rows, 1, "{journal} {size} {i}");
                }
                times.sort();
                eprintln!(
                    "poll cost: journal={journal} rows={size} poll median={:?} p90={:?} min={:?}",
                    times[times.len() / 2],
                    times[times.len() * 9 / 10],
                    times[0]
                );
                medians.push(times[times.len() / 2]);
            }
            // The cost follows what is new, not the table: a read starts at the high-water mark.
            assert!(medians[1] < medians[0] * 2, "{journal}: {medians:?}");
        }
    }
}
