//! What more than one bench measures the same way.

// Reason: each bench compiles this module on its own and calls only part of it.
#![allow(dead_code)]

use reclaim::heartbeat::unix_now;
use reclaim::task::{idem_key, payload, task_id};
use rusqlite::{Connection, TransactionBehavior, params};

/// Guarded's transactions with nothing of the worker around them: tasks `0..items`, `batch` to a
/// transaction (`guarded_transaction`), on a connection opened with guarded's schema.
pub fn guarded_transactions(
    conn: &mut Connection,
    items: u64,
    batch: u64,
    run_id: &str,
) -> rusqlite::Result<()> {
    let mut next = 0;
    while next < items {
        guarded_transaction(conn, next..items.min(next + batch), run_id)?;
        next += batch;
    }
    Ok(())
}

/// One of guarded's transactions: `BEGIN IMMEDIATE`, then each task of `tasks` a row (its
/// idempotency key, `ON CONFLICT DO NOTHING`) and its checkpoint.
pub fn guarded_transaction(
    conn: &mut Connection,
    tasks: std::ops::Range<u64>,
    run_id: &str,
) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO records(task_id, payload, idem_key, run_id, written_at)
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(idem_key) DO NOTHING",
        )?;
        let mut mark = tx.prepare_cached(
            "INSERT OR REPLACE INTO checkpoints(task_id, completed_at) VALUES (?1, ?2)",
        )?;
        for i in tasks {
            let task = task_id(i);
            let body = payload(i);
            let key = idem_key(&task, &body);
            let now = unix_now();
            insert.execute(params![task, body, key, run_id, now])?;
            mark.execute(params![task, now])?;
        }
    }
    tx.commit()
}
