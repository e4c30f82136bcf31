//! A worker's writes on SQLite: each in one `BEGIN IMMEDIATE` transaction, retried whole on
//! SQLITE_BUSY, with its statements prepared once per transaction; what goes in it is
//! `batch::write_in`'s. A guarded worker's look at the checkpoints (one scan, then
//! `PRAGMA data_version` to tell whether anyone else has committed since), the claim queue
//! (`claim`) and the long item's steps are here too.

use std::path::PathBuf;

use rusqlite::{Connection, TransactionBehavior};

use super::batch::{CHECKPOINT_SQL, write_batch};
use super::wal::WalBound;
use super::{open_for_worker, retry_busy};
use crate::heartbeat::unix_now;
use crate::task::{TaskBits, task_id};
use crate::warehouse::backend::{Writer, WriterSpec};
use crate::warehouse::batch::{Batch, Row};
use crate::warehouse::claim::{Fence, Lease, LeaseClock, Next};
use crate::warehouse::error::StoreError;

/// The outbox. `task_id` is its primary key, so `ENTRY_SQL`'s `ON CONFLICT(task_id)` fails at
/// the first write on a table made without it, rather than queueing a message twice.
const OUTBOX_SQL: &str = "CREATE TABLE IF NOT EXISTS outbox(
    task_id TEXT PRIMARY KEY,
    idem_key TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL,
    sent_at REAL
)";

/// The long item's finished steps (`--split`).
const STEPS_SQL: &str = "CREATE TABLE IF NOT EXISTS steps(
    task_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    done_at REAL NOT NULL,
    PRIMARY KEY (task_id, step)
)";

/// A worker's connection to its lane's file, and the bound that keeps its log short.
pub struct SqliteWriter {
    pub(super) conn: Connection,
    wal: WalBound,
    pub(super) db: PathBuf,
    strategy: &'static str,
}

/// Opens (creating if needed) the lane's file for a worker: every refusal first
/// (`open_for_worker`), then the outbox beside the rows for the strategy that relays.
pub fn open(spec: &WriterSpec<'_>) -> Result<SqliteWriter, StoreError> {
    let conn = open_for_worker(spec.db, spec.sync, spec.needs, spec.check_integrity)?;
    let failed = |e| StoreError::sqlite(spec.db, e);
    let wal = WalBound::new(&conn, spec.db, spec.wal_autocheckpoint).map_err(failed)?;
    if spec.outbox {
        retry_busy(|| conn.execute_batch(OUTBOX_SQL)).map_err(failed)?;
    }
    Ok(SqliteWriter {
        conn,
        wal,
        db: spec.db.to_path_buf(),
        strategy: spec.needs.strategy,
    })
}

impl SqliteWriter {
    fn failed(&self, source: rusqlite::Error) -> StoreError {
        StoreError::sqlite(&self.db, source)
    }

    /// A failed write: a constraint that refused `row` (the strategy did not expect it), or
    /// SQLite's own error.
    pub(super) fn refused(&self, row: Option<&Row>, source: rusqlite::Error) -> StoreError {
        match row {
            Some(row)
                if source.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation) =>
            {
                StoreError::Refused {
                    task: row.task_id.clone(),
                    strategy: self.strategy,
                    source,
                }
            }
            _ => self.failed(source),
        }
    }

    /// `PRAGMA data_version`: it changes when another connection commits, and only then (this
    /// worker's own commits leave it alone).
    fn data_version(conn: &Connection) -> rusqlite::Result<i64> {
        conn.prepare_cached("PRAGMA data_version")?
            .query_row([], |row| row.get(0))
    }
}

impl Writer for SqliteWriter {
    fn write(&mut self, batch: &Batch<'_>) -> Result<u64, StoreError> {
        let conn = &mut self.conn;
        let inserted = retry_busy(|| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let n = write_batch(&tx, batch)?;
            tx.commit()?;
            Ok(n)
        });
        inserted.map_err(|error| self.refused(batch.rows.first().copied(), error))
    }

    fn write_checkpoint(&mut self, task: &str) -> Result<(), StoreError> {
        let conn = &mut self.conn;
        let written = retry_busy(|| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.prepare_cached(CHECKPOINT_SQL)?
                .execute(rusqlite::params![task, unix_now()])?;
            tx.commit()
        });
        written.map_err(|e| self.failed(e))
    }

    fn has_checkpoint(&mut self, task: &str) -> Result<bool, StoreError> {
        retry_busy(|| {
            self.conn
                .prepare_cached("SELECT 1 FROM checkpoints WHERE task_id = ?1")?
                .exists([task])
        })
        .map_err(|e| self.failed(e))
    }

    fn checkpointed(&mut self, items: u64) -> Result<(TaskBits, Option<i64>), StoreError> {
        let conn = &self.conn;
        let read = retry_busy(|| {
            let mut done = TaskBits::with_len(items);
            // One read transaction, so the version names the snapshot the scan saw.
            let tx = conn.unchecked_transaction()?;
            let version = Self::data_version(conn)?;
            {
                let mut stmt = tx.prepare("SELECT task_id FROM checkpoints")?;
                let mut rows = stmt.query([])?;
                while let Some(row) = rows.next()? {
                    // Borrowed, not copied: a restart late in a long night reads every one.
                    done.insert_id(row.get_ref(0)?.as_str()?, items);
                }
            }
            tx.commit()?;
            Ok((done, Some(version)))
        });
        read.map_err(|e| self.failed(e))
    }

    fn changed_since(&mut self, mark: i64) -> Result<bool, StoreError> {
        retry_busy(|| Self::data_version(&self.conn))
            .map(|version| version != mark)
            .map_err(|e| self.failed(e))
    }

    fn unchecked(&mut self, candidates: &[u64]) -> Result<Vec<u64>, StoreError> {
        let conn = &self.conn;
        // One read transaction: a read per item would take the WAL's read lock once per item,
        // which costs more than the lookup.
        let read = retry_busy(|| {
            let tx = conn.unchecked_transaction()?;
            let mut todo = Vec::new();
            {
                let mut stmt = tx.prepare_cached("SELECT 1 FROM checkpoints WHERE task_id = ?1")?;
                for &index in candidates {
                    if !stmt.exists([task_id(index)])? {
                        todo.push(index);
                    }
                }
            }
            tx.commit()?;
            Ok(todo)
        });
        read.map_err(|e| self.failed(e))
    }

    fn count(&mut self) -> Result<u64, StoreError> {
        retry_busy(|| {
            self.conn
                .query_row("SELECT count(*) FROM records", [], |r| r.get(0))
        })
        .map_err(|e| self.failed(e))
    }

    fn after_commit(&mut self) {
        self.wal.after_commit(&self.conn);
    }

    fn prepare_claims(&mut self) -> Result<(), StoreError> {
        super::claim::prepare(&self.conn).map_err(|e| self.failed(e))
    }

    fn claim_next(&mut self, me: &str, items: u64, clock: LeaseClock) -> Result<Next, StoreError> {
        let conn = &mut self.conn;
        retry_busy(|| super::claim::next(conn, me, items, clock)).map_err(|e| self.failed(e))
    }

    fn claim_commit(
        &mut self,
        claimed: (Lease, Fence),
        me: &str,
        row: &Row,
    ) -> Result<bool, StoreError> {
        let conn = &mut self.conn;
        retry_busy(|| super::claim::commit(conn, claimed, me, row))
            .map_err(|e| self.refused(Some(row), e))
    }

    fn steps_done(&mut self, task: &str) -> Result<u64, StoreError> {
        retry_busy(|| {
            self.conn.execute_batch(STEPS_SQL)?;
            self.conn.query_row(
                "SELECT count(*) FROM steps WHERE task_id = ?1",
                [task],
                |r| r.get::<_, u64>(0),
            )
        })
        .map_err(|e| self.failed(e))
    }

    fn mark_step(&mut self, task: &str, step: u64) -> Result<(), StoreError> {
        retry_busy(|| {
            self.conn.execute(
                "INSERT OR IGNORE INTO steps(task_id, step, done_at) VALUES (?1, ?2, ?3)",
                rusqlite::params![task, step, unix_now()],
            )
        })
        .map(drop)
        .map_err(|e| self.failed(e))
    }
}
