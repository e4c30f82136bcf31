//! The observer: reads what the workers wrote, incrementally.
//!
//! Each poll reads only rows with a rowid above the last one seen (a high-water mark), so its cost
//! depends on what is new, not on the size of the table. Someone else's job's table is read by
//! `job`.

mod job;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rusqlite::Connection;

use self::job::FileStamps;
pub use self::job::LastRead;
use crate::queue::Queue;
use crate::task::TaskBits;
use crate::warehouse::RowSource;
use crate::warehouse::StoreError;
use crate::warehouse::sqlite::{self as store, table_exists};

/// How often an external job's table on PostgreSQL is read (whole, by key).
const PG_JOB_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// At most this many rows are taken per poll, so a tick stays short even when a million rows
/// arrive at once; the rest come on the next poll.
const MAX_ROWS_PER_POLL: i64 = 50_000;

/// What one poll found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Poll {
    pub new_rows: u64,
    /// A new writer (run_id) appeared and its first row was task-000 although task-000 was
    /// already written: the postmortem's "worker restarts at item zero".
    pub restarted_at_zero: bool,
}

/// Running totals over a warehouse's rows and checkpoints.
#[derive(Debug)]
pub struct Observer {
    db: PathBuf,
    /// The keys rows are matched to: `task-NNN`, or an external job's own.
    queue: Queue,
    /// An external job's table (`run --exec`); `None` for reclaim's own warehouse.
    source: Option<RowSource>,
    /// For a job's database: the size and modification time of the file and its `-wal` when
    /// everything had been read (see `poll_job`).
    files_read: Option<(FileStamps, SystemTime)>,
    conn: Option<Connection>,
    /// On PostgreSQL (`warehouse::active`): the lane's schema, followed there instead.
    pg: Option<crate::warehouse::postgres::follow::Follow>,
    /// On PostgreSQL, an external job's table in its lane's schema, and when it was last read.
    pg_job: Option<(
        crate::warehouse::postgres::job::JobFollow,
        Option<std::time::Instant>,
    )>,
    /// `PRAGMA data_version` of `conn` when a poll last read everything there was: while it
    /// stays the same no other connection has committed, and a poll has nothing to read.
    caught_up_at: Option<i64>,
    /// A job's rollback-journal database: its change counter when a lock-free read last read
    /// everything there was (`store::unlocked`); the same counter, nothing new.
    unlocked_at: Option<u32>,
    /// How the job's database was last read: what reclaim can say of a lock its error names.
    pub last_read: LastRead,
    /// Lock-free reads thrown away because the file changed under them (read again next poll).
    pub discarded_reads: u64,
    high_water: i64,
    checkpoint_high_water: i64,
    seen: TaskBits,
    duplicated_bits: TaskBits,
    checkpointed: TaskBits,
    pub rows: u64,
    pub distinct: u64,
    pub duplicated: u64,
    /// Rows whose task id is outside the queue.
    pub unexpected: u64,
    pub checkpoints: u64,
    /// Checkpoint rows whose key is not a key of the queue. A table of those alone is no
    /// checkpoint per key (a cursor: `progress(job, last_done)`), and cannot place a kill.
    pub checkpoints_outside: u64,
    /// The task of the newest row of the queue.
    pub last_task: Option<u64>,
    /// The key of the newest row, whatever it is (an external job's row may be outside the
    /// queue); `None` before any row, or when the rows are only counted.
    pub last_key: Option<String>,
    /// The external job's checkpoint table has been seen (its checkpoints are read from it).
    pub checkpoints_seen: bool,
    /// Whether the rows are read key by key, or only counted (`--count-sql`, a table without
    /// rowids), which names no key.
    follows: job::Follows,
    /// The first key seen with a checkpoint and no row, in one read of both: the job commits
    /// a checkpoint before its row, and a kill between the two loses that item on a resume
    /// that trusts the checkpoint.
    pub checkpoint_before_row: Option<String>,
    /// The first key seen with its row and no checkpoint, in one read of both, once the
    /// checkpoint table holds keys of the queue: the job commits a row before its checkpoint,
    /// so `after-row-commit` is a window of this job (a kill there redoes the item).
    pub row_before_checkpoint: Option<String>,
    /// The external job's table has been seen: a night that ends without it had it dropped,
    /// not never made.
    pub table_seen: bool,
    last_run: Option<String>,
    /// Distinct writers seen, in order of their first row.
    pub writers: u32,
    pub restarted_at_zero: bool,
}

impl Observer {
    #[must_use]
    pub fn new(db: &Path, items: u64) -> Self {
        Self {
            db: db.to_path_buf(),
            queue: Queue::tasks(items),
            source: None,
            files_read: None,
            conn: None,
            pg: crate::warehouse::active()
                .map(|server| crate::warehouse::postgres::follow::Follow::new(server, db)),
            pg_job: None,
            caught_up_at: None,
            unlocked_at: None,
            last_read: LastRead::Nothing,
            discarded_reads: 0,
            high_water: 0,
            checkpoint_high_water: 0,
            seen: TaskBits::with_len(items),
            duplicated_bits: TaskBits::with_len(items),
            checkpointed: TaskBits::with_len(items),
            rows: 0,
            distinct: 0,
            duplicated: 0,
            unexpected: 0,
            checkpoints: 0,
            checkpoints_outside: 0,
            table_seen: false,
            last_task: None,
            last_key: None,
            checkpoints_seen: false,
            follows: job::Follows::Keys,
            checkpoint_before_row: None,
            row_before_checkpoint: None,
            last_run: None,
            writers: 0,
            restarted_at_zero: false,
        }
    }

    /// An observer of an external job's rows, wherever `source` says they land, matched to
    /// the job's `queue`.
    #[must_use]
    pub fn of_job(db: &Path, queue: Queue, source: RowSource) -> Self {
        let items = queue.len();
        Self {
            source: Some(source),
            queue,
            pg_job: crate::warehouse::active().map(|server| {
                (
                    crate::warehouse::postgres::job::JobFollow::new(server, db),
                    None,
                )
            }),
            ..Self::new(db, items)
        }
    }

    /// The key at `index` of the queue the rows are matched to.
    #[must_use]
    pub fn key(&self, index: u64) -> String {
        self.queue.key(index)
    }

    /// Whether the row for task `index` has been seen.
    #[must_use]
    pub fn has_task(&self, index: u64) -> bool {
        self.seen.get(index)
    }

    /// Whether task `index` has a checkpoint.
    #[must_use]
    pub fn has_checkpoint(&self, index: u64) -> bool {
        self.checkpointed.get(index)
    }

    /// The keys of the queue with a checkpoint and no row: each committed its checkpoint first,
    /// and its row has not come.
    #[must_use]
    pub fn checkpoints_without_row(&self) -> crate::task::TaskBits {
        self.checkpointed.without(&self.seen)
    }

    /// Whether the checkpoint table read so far holds keys, none of them a key of the queue:
    /// not a checkpoint per key (a cursor, a job's name), so it places no kill.
    #[must_use]
    pub fn checkpoints_not_keyed(&self) -> bool {
        self.checkpoints == 0 && self.checkpoints_outside > 0
    }

    /// Whether the newest row's item has its checkpoint: the newest row's, when the rows say
    /// which is newest; on PostgreSQL, where a job's table is read whole (no rowid orders it),
    /// whether every item with a row has one, so a row whose checkpoint never came is seen.
    #[must_use]
    pub fn newest_checkpointed(&self) -> bool {
        match self.last_task {
            Some(task) => self.has_checkpoint(task),
            None => self.pg_job.is_some() && self.rows > 0 && self.seen.within(&self.checkpointed),
        }
    }

    /// Closes the connection (the next poll opens one again), once a writer has died. A writer
    /// killed inside its commit may leave the transaction's frames in the `-wal` without the
    /// shared index that names them: every connection open then, this one included, goes on
    /// reading the index it knows, while the next connection to open the database alone
    /// recovers the log and finds the transaction (as `sqlite3` afterwards did: a verdict said
    /// 28 rows of a database that held 29). Closed, it lets that next opener recover.
    pub fn release(&mut self) {
        self.conn = None;
        self.caught_up_at = None;
        self.unlocked_at = None;
        self.files_read = None;
    }

    /// Reads everything there is, now: the shortcut that skips a job's database while its files
    /// look unchanged is not taken (a commit in the same kernel tick as the last read leaves the
    /// stamps as they were), so what a killed job left is all counted.
    pub fn poll_to_the_end(&mut self) {
        self.files_read = None;
        // On PostgreSQL too: a read now, whenever the last one was.
        if let Some((_, last)) = self.pg_job.as_mut() {
            *last = None;
        }
        self.caught_up_at = None;
        while self.poll().is_ok_and(|p| p.new_rows > 0) {
            self.files_read = None;
        }
    }

    /// Reads what is new. A database that does not exist yet (no worker has started) is not an
    /// error: there is simply nothing to see.
    pub fn poll(&mut self) -> Result<Poll, StoreError> {
        if let Some(source) = self.source.clone() {
            if self.pg_job.is_some() {
                return self.poll_job_pg(&source);
            }
            return self.poll_job(&source);
        }
        if self.pg.is_some() {
            return self.poll_pg();
        }
        if self.conn.is_none() {
            match store::open_observing(&self.db) {
                Ok(conn) => self.conn = Some(conn),
                Err(StoreError::Missing(_) | StoreError::NotWarehouse { .. }) => {
                    return Ok(Poll::default());
                }
                // A worker holds the database locked (setting it up, perhaps paused there):
                // nothing new to see this tick; the dashboard must not wait on it.
                Err(StoreError::Sqlite { source, .. }) if store::is_busy(&source) => {
                    return Ok(Poll::default());
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
            Err(error) if store::is_busy(&error) => Ok(Poll::default()),
            result => result.map_err(|e| StoreError::sqlite(&self.db, e)),
        }
    }

    /// `poll` on PostgreSQL: the new rows (and late ones below the mark, `warehouse::postgres::follow`)
    /// counted as on SQLite; the checkpoints read whole when their number changed.
    fn poll_pg(&mut self) -> Result<Poll, StoreError> {
        let (Some(server), Some(follow)) = (crate::warehouse::active(), self.pg.as_mut()) else {
            return Ok(Poll::default());
        };
        let Some(read) = follow.read(server, self.checkpoints)? else {
            return Ok(Poll::default());
        };
        let poll = self.count_rows(read.rows);
        if let Some(tasks) = read.checkpoints {
            self.apply_checkpoints(CheckpointRead {
                rows: tasks.into_iter().map(|task| (0, task)).collect(),
                wiped: true,
            });
        }
        Ok(poll)
    }

    /// `poll` for an external job on PostgreSQL: its table read whole by key (or counted by
    /// `--count-sql`) in one snapshot, at most every `PG_JOB_EVERY`; the figures recounted.
    fn poll_job_pg(&mut self, source: &RowSource) -> Result<Poll, StoreError> {
        use crate::warehouse::postgres::job::JobRead;
        let (Some(server), Some((follow, last))) =
            (crate::warehouse::active(), self.pg_job.as_mut())
        else {
            return Ok(Poll::default());
        };
        if last.is_some_and(|at| at.elapsed() < PG_JOB_EVERY) {
            return Ok(Poll::default());
        }
        *last = Some(std::time::Instant::now());
        let read = follow.read(server, source)?;
        let mut poll = Poll::default();
        if let Some(keys) = read.checkpoints {
            self.checkpoints_seen = true;
            // Read whole each time: the totals start again from what the table holds now.
            self.apply_checkpoints(CheckpointRead {
                rows: keys.into_iter().map(|key| (0, key)).collect(),
                wiped: true,
            });
        }
        let (rows, distinct, duplicated, unexpected) = match read.rows {
            JobRead::NoTable => return Ok(poll),
            JobRead::Counted(rows, distinct) => {
                self.follows = job::Follows::Counts;
                (rows, distinct, rows.saturating_sub(distinct), 0)
            }
            JobRead::Keys(groups) => {
                self.seen.clear();
                self.duplicated_bits.clear();
                let (mut rows, mut distinct, mut duplicated, mut outside) = (0, 0, 0, 0u64);
                for (key, count) in groups {
                    rows += count;
                    match key.as_deref().and_then(|k| self.queue.index_of(k)) {
                        Some(index) => {
                            self.seen.set(index);
                            distinct += 1;
                            if count > 1 {
                                self.duplicated_bits.set(index);
                                duplicated += 1;
                            }
                        }
                        None => outside += count,
                    }
                }
                (rows, distinct, duplicated, outside)
            }
        };
        self.table_seen = true;
        poll.new_rows = rows.saturating_sub(self.rows);
        self.rows = rows;
        self.distinct = distinct;
        self.duplicated = duplicated;
        self.unexpected = unexpected;
        Ok(poll)
    }

    /// Counts one row of task `index` (`None`: a key outside the queue).
    fn count_key(&mut self, index: Option<u64>) {
        let Some(index) = index else {
            self.unexpected += 1;
            return;
        };
        self.last_task = Some(index);
        if self.seen.set(index) {
            if !self.duplicated_bits.set(index) {
                self.duplicated += 1;
            }
        } else {
            self.distinct += 1;
        }
    }

    fn read_new(&mut self) -> rusqlite::Result<Poll> {
        let Some(conn) = self.conn.as_ref() else {
            return Ok(Poll::default());
        };
        let poll = Poll::default();
        // Every statement here is prepared once per connection: at 50 polls a second per lane,
        // parsing the SQL again each time was most of the poll's cost. Most polls end at the
        // first one: a worker at the shipped pace commits less often than the engine ticks.
        let version: i64 = conn
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |r| r.get(0))?;
        if self.caught_up_at == Some(version) {
            return Ok(poll);
        }
        conn.prepare_cached("BEGIN")?.execute([])?;
        let mut new_rows: Vec<(i64, String, String)> = Vec::new();
        {
            let mut stmt = conn.prepare_cached(
                "SELECT rowid, task_id, run_id FROM records WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
            )?;
            let mut rows = stmt.query(rusqlite::params![self.high_water, MAX_ROWS_PER_POLL])?;
            while let Some(row) = rows.next()? {
                new_rows.push((row.get(0)?, row.get(1)?, row.get(2)?));
            }
        }
        let checkpoint_rows = if table_exists(conn, "checkpoints")? {
            Some(read_checkpoints(conn, self.checkpoint_high_water)?)
        } else {
            None
        };
        conn.prepare_cached("COMMIT")?.execute([])?;
        let limited = |n: usize| i64::try_from(n).is_ok_and(|n| n >= MAX_ROWS_PER_POLL);
        let complete = !limited(new_rows.len())
            && checkpoint_rows
                .as_ref()
                .is_none_or(|c| !limited(c.rows.len()));
        self.caught_up_at = complete.then_some(version);
        // INVARIANT: records rows are never deleted, so every new row has a rowid above the
        // high-water mark (SQLite assigns max(rowid)+1).
        let poll = self.count_rows(new_rows);
        if let Some(checkpoints) = checkpoint_rows {
            self.apply_checkpoints(checkpoints);
        }
        Ok(poll)
    }

    /// Counts new rows (rowid, task, run), in the order they were written: writers, the
    /// restart at item zero, duplicates.
    fn count_rows(&mut self, new_rows: Vec<(i64, String, String)>) -> Poll {
        let mut poll = Poll::default();
        for (rowid, task, run) in new_rows {
            self.high_water = rowid;
            self.rows += 1;
            poll.new_rows += 1;
            let index = self.queue.index_of(&task);
            if self.last_run.as_deref() != Some(run.as_str()) {
                self.writers += 1;
                if index == Some(0) && self.seen.get(0) {
                    self.restarted_at_zero = true;
                    poll.restarted_at_zero = true;
                }
                self.last_run = Some(run);
            }
            self.count_key(index);
        }
        poll
    }

    /// Counts what a poll read of the checkpoints; returns the items checkpointed in it.
    fn apply_checkpoints(&mut self, read: CheckpointRead) -> Vec<u64> {
        if read.wiped {
            self.reset_checkpoints();
        }
        let mut new = Vec::new();
        for (rowid, task) in read.rows {
            self.checkpoint_high_water = self.checkpoint_high_water.max(rowid);
            match self.queue.index_of(&task) {
                Some(index) if !self.checkpointed.set(index) => {
                    self.checkpoints += 1;
                    new.push(index);
                }
                Some(_) => {}
                None => self.checkpoints_outside += 1,
            }
        }
        new
    }

    /// Forgets the checkpoint totals, for after a wipe that this process made itself.
    pub fn reset_checkpoints(&mut self) {
        self.caught_up_at = None;
        self.checkpointed.clear();
        self.checkpoints = 0;
        self.checkpoints_outside = 0;
        self.checkpoint_high_water = 0;
    }
}

struct CheckpointRead {
    rows: Vec<(i64, String)>,
    /// Rows were deleted since the last poll: the totals start again from these rows.
    wiped: bool,
}

fn read_checkpoints(conn: &Connection, high_water: i64) -> rusqlite::Result<CheckpointRead> {
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
    Ok(CheckpointRead { rows, wiped })
}
