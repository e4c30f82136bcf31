//! `guarded`: the fix. The row and its checkpoint commit in one `BEGIN IMMEDIATE` transaction,
//! so no kill can separate them; the unique key catches whatever the checkpoint cannot (wiped
//! checkpoints, two workers on one queue); a heartbeat after each commit shows progress.

use std::time::Instant;

use super::{CrashPoint, Ctx, Row, WorkerError};
use crate::store::retry_busy;

pub(super) fn run(ctx: &mut Ctx<'_>) -> Result<(), WorkerError> {
    let items = ctx.config.items;
    let batch = ctx.config.batch.max(1) as usize;
    let mut pending: Vec<(u64, Row)> = Vec::with_capacity(batch);
    let mut started = Instant::now();
    for index in 0..items {
        let row = Row::new(index);
        // A cheap read outside the write lock; the unique key settles any race it misses.
        if retry_busy(|| ctx.has_checkpoint(&row.task_id)).map_err(|e| ctx.db_error(e))? {
            ctx.skip();
            continue;
        }
        if pending.is_empty() {
            started = Instant::now();
        }
        ctx.note_resume(index);
        pending.push((index, row));
        if pending.len() == batch || index + 1 == items {
            write_batch(ctx, &pending, started)?;
            pending.clear();
        }
    }
    if !pending.is_empty() {
        write_batch(ctx, &pending, started)?;
    }
    ctx.note_resume(items);
    Ok(())
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
