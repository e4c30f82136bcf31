//! The observer: reads what the workers wrote, incrementally.
//!
//! Each poll reads only rows with a rowid above the last one seen (a high-water mark), so its cost
//! depends on what is new, not on the size of the table.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use crate::store::{self, StoreError, table_exists};
use crate::task::canonical_index;

/// At most this many rows are taken per poll, so a tick stays short even when a million rows
/// arrive at once; the rest come on the next poll.
const MAX_ROWS_PER_POLL: i64 = 50_000;

/// A set of task indices below a bound, one bit each.
#[derive(Debug, Clone, Default)]
struct Bits {
    words: Vec<u64>,
}

impl Bits {
    fn with_len(len: u64) -> Self {
        Self {
            words: vec![0; len.div_ceil(64) as usize],
        }
    }

    /// Sets bit `i`; returns whether it was already set.
    fn set(&mut self, i: u64) -> bool {
        let (word, bit) = ((i / 64) as usize, i % 64);
        let mask = 1u64 << bit;
        let was = self.words[word] & mask != 0;
        self.words[word] |= mask;
        was
    }

    fn get(&self, i: u64) -> bool {
        self.words
            .get((i / 64) as usize)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    fn clear(&mut self) {
        self.words.fill(0);
    }
}

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
    items: u64,
    conn: Option<Connection>,
    /// `PRAGMA data_version` of `conn` when a poll last read everything there was: while it
    /// stays the same no other connection has committed, and a poll has nothing to read.
    caught_up_at: Option<i64>,
    high_water: i64,
    checkpoint_high_water: i64,
    seen: Bits,
    duplicated_bits: Bits,
    checkpointed: Bits,
    pub rows: u64,
    pub distinct: u64,
    pub duplicated: u64,
    /// Rows whose task id is outside the queue.
    pub unexpected: u64,
    pub checkpoints: u64,
    /// The task of the newest row.
    pub last_task: Option<u64>,
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
            items,
            conn: None,
            caught_up_at: None,
            high_water: 0,
            checkpoint_high_water: 0,
            seen: Bits::with_len(items),
            duplicated_bits: Bits::with_len(items),
            checkpointed: Bits::with_len(items),
            rows: 0,
            distinct: 0,
            duplicated: 0,
            unexpected: 0,
            checkpoints: 0,
            last_task: None,
            last_run: None,
            writers: 0,
            restarted_at_zero: false,
        }
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

    /// Reads what is new. A database that does not exist yet (no worker has started) is not an
    /// error: there is simply nothing to see.
    pub fn poll(&mut self) -> Result<Poll, StoreError> {
        if self.conn.is_none() {
            match store::open_read_only(&self.db) {
                Ok(conn) => self.conn = Some(conn),
                Err(StoreError::Missing(_) | StoreError::NotWarehouse { .. }) => {
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
        result.map_err(|e| StoreError::sqlite(&self.db, e))
    }

    fn read_new(&mut self) -> rusqlite::Result<Poll> {
        let Some(conn) = self.conn.as_ref() else {
            return Ok(Poll::default());
        };
        let mut poll = Poll::default();
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
        for (rowid, task, run) in new_rows {
            self.high_water = rowid;
            self.rows += 1;
            poll.new_rows += 1;
            let index = canonical_index(&task).filter(|&i| i < self.items);
            if self.last_run.as_deref() != Some(run.as_str()) {
                self.writers += 1;
                if index == Some(0) && self.seen.get(0) {
                    self.restarted_at_zero = true;
                    poll.restarted_at_zero = true;
                }
                self.last_run = Some(run);
            }
            let Some(index) = index else {
                self.unexpected += 1;
                continue;
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
        if let Some(checkpoints) = checkpoint_rows {
            self.apply_checkpoints(checkpoints);
        }
        Ok(poll)
    }

    fn apply_checkpoints(&mut self, read: CheckpointRead) {
        if read.wiped {
            self.reset_checkpoints();
        }
        for (rowid, task) in read.rows {
            self.checkpoint_high_water = self.checkpoint_high_water.max(rowid);
            if let Some(index) = canonical_index(&task).filter(|&i| i < self.items)
                && !self.checkpointed.set(index)
            {
                self.checkpoints += 1;
            }
        }
    }

    /// Forgets the checkpoint totals, for after a wipe that this process made itself.
    pub fn reset_checkpoints(&mut self) {
        self.caught_up_at = None;
        self.checkpointed.clear();
        self.checkpoints = 0;
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
