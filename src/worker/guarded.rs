//! `guarded`: the fix. The row and its checkpoint commit in one `BEGIN IMMEDIATE` transaction,
//! so no kill can separate them; the unique key catches whatever the checkpoint cannot (wiped
//! checkpoints, two workers on one queue); a heartbeat after each commit shows progress.

use std::time::Instant;

use super::{CrashPoint, Ctx, Row, WorkerError};
use crate::store::retry_busy;

pub(super) fn run(ctx: &mut Ctx<'_>) -> Result<(), WorkerError> {
    let items = ctx.config.items;
    let batch = ctx.config.batch.max(1);
    let mut next = 0;
    while next < items {
        let window = next..items.min(next + batch);
        let started = Instant::now();
        // A cheap read outside the write lock; the unique key settles any race it misses.
        let todo = retry_busy(|| unchecked(ctx, window.clone())).map_err(|e| ctx.db_error(e))?;
        for _ in 0..(window.end - window.start) - todo.len() as u64 {
            ctx.skip();
        }
        if let Some(&first) = todo.first() {
            ctx.note_resume(first);
            let pending: Vec<(u64, Row)> = todo.iter().map(|&i| (i, Row::new(i))).collect();
            write_batch(ctx, &pending, started)?;
        }
        next = window.end;
    }
    ctx.note_resume(items);
    Ok(())
}

/// The tasks of `window` that have no checkpoint, looked up in one read transaction: a read per
/// item would take the WAL's read lock once per item, which costs more than the lookup.
fn unchecked(ctx: &Ctx<'_>, window: std::ops::Range<u64>) -> rusqlite::Result<Vec<u64>> {
    let tx = ctx.conn.unchecked_transaction()?;
    let mut todo = Vec::new();
    {
        let mut stmt = tx.prepare_cached("SELECT 1 FROM checkpoints WHERE task_id = ?1")?;
        for index in window {
            if !stmt.exists([crate::task::task_id(index)])? {
                todo.push(index);
            }
        }
    }
    tx.commit()?;
    Ok(todo)
}

fn write_batch(
    ctx: &mut Ctx<'_>,
    pending: &[(u64, Row)],
    started: Instant,
) -> Result<(), WorkerError> {
    let tasks: Vec<u64> = pending.iter().map(|(i, _)| *i).collect();
    let rows: Vec<&Row> = pending.iter().map(|(_, row)| row).collect();
    ctx.crash_if(&tasks, CrashPoint::BeforeWrite);
    // INVARIANT: the checkpoint commits in the same transaction as its row.
    ctx.write_rows(&rows, true, true)?;
    ctx.committed(&tasks, started);
    Ok(())
}
