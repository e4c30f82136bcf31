//! A batch's statements on SQLite: the row insert, its checkpoint and its outbox entry, each
//! prepared once per transaction and run in the order `batch::write_in` gives (which keeps the
//! promises); the transaction is the caller's.

use rusqlite::{CachedStatement, Transaction};

use crate::warehouse::batch::{Batch, Row, Statements, write_in};

/// The row insert; with `ignore_conflicts` the unique key refuses a duplicate silently.
fn insert_sql(ignore_conflicts: bool) -> &'static str {
    if ignore_conflicts {
        "INSERT INTO records(task_id, payload, idem_key, run_id, written_at)
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(idem_key) DO NOTHING"
    } else {
        "INSERT INTO records(task_id, payload, idem_key, run_id, written_at)
         VALUES (?1, ?2, ?3, ?4, ?5)"
    }
}

/// Records that a task is done.
pub(super) const CHECKPOINT_SQL: &str =
    "INSERT OR REPLACE INTO checkpoints(task_id, completed_at) VALUES (?1, ?2)";

/// One outbox entry, written in its row's transaction.
const ENTRY_SQL: &str = "INSERT INTO outbox(task_id, idem_key, body, created_at)
    VALUES (?1, ?2, ?3, ?4) ON CONFLICT(task_id) DO NOTHING";

/// A batch's statements in one open transaction: prepared once per transaction, not looked up
/// per row (at `--batch 100` the statement cache's lookups showed in the profile).
struct Prepared<'t, 'b> {
    insert: CachedStatement<'t>,
    mark: Option<CachedStatement<'t>>,
    entry: Option<CachedStatement<'t>>,
    run_id: &'b str,
}

impl<'t, 'b> Prepared<'t, 'b> {
    fn new(tx: &'t Transaction<'_>, batch: &Batch<'b>) -> rusqlite::Result<Self> {
        Ok(Self {
            insert: tx.prepare_cached(insert_sql(batch.ignore_conflicts))?,
            mark: batch
                .checkpoint
                .then(|| tx.prepare_cached(CHECKPOINT_SQL))
                .transpose()?,
            entry: batch
                .outbox
                .map(|_| tx.prepare_cached(ENTRY_SQL))
                .transpose()?,
            run_id: batch.run_id,
        })
    }
}

impl Statements for Prepared<'_, '_> {
    type Error = rusqlite::Error;

    fn insert(&mut self, row: &Row, now: f64) -> rusqlite::Result<u64> {
        let params = rusqlite::params![row.task_id, row.payload, row.idem_key, self.run_id, now];
        self.insert.execute(params).map(|n| n as u64)
    }

    fn checkpoint(&mut self, task: &str, now: f64) -> rusqlite::Result<()> {
        if let Some(mark) = self.mark.as_mut() {
            mark.execute(rusqlite::params![task, now])?;
        }
        Ok(())
    }

    fn outbox_entry(&mut self, row: &Row, body: &str, now: f64) -> rusqlite::Result<()> {
        if let Some(entry) = self.entry.as_mut() {
            entry.execute(rusqlite::params![row.task_id, row.idem_key, body, now])?;
        }
        Ok(())
    }
}

/// Writes `batch` inside `tx`, which the caller commits; the rows inserted.
pub(super) fn write_batch(tx: &Transaction<'_>, batch: &Batch<'_>) -> rusqlite::Result<u64> {
    let mut prepared = Prepared::new(tx, batch)?;
    write_in(&mut prepared, batch)
}
