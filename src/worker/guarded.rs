//! `guarded`: the fix. The row and its checkpoint commit in one `BEGIN IMMEDIATE` transaction,
//! so no kill can separate them; the unique key catches whatever the checkpoint cannot (wiped
//! checkpoints, two workers on one queue); a heartbeat after each commit shows progress.

use std::time::Instant;

use super::{CrashPoint, Ctx, Db, Row, WorkerError};
use crate::task::{TaskBits, task_id};
use crate::warehouse::StoreError;
use crate::warehouse::sqlite::retry_busy;

pub(super) fn run(ctx: &mut Ctx<'_>) -> Result<(), WorkerError> {
    let items = ctx.config.items;
    let batch = ctx.config.batch.max(1);
    // What was done before this process started, read in one scan: a restart late in a long
    // night then skips the finished tasks without a lookup each.
    let (done, seen) = match &mut ctx.db {
        Db::Sqlite(..) => retry_busy(|| checkpointed(ctx)).map_err(|e| ctx.db_error(e))?,
        // PostgreSQL has no data_version: `seen` stays None, and every window is looked up.
        Db::Pg(sink) => {
            let tasks = sink.checkpointed().map_err(StoreError::from)?;
            (TaskBits::of(tasks.iter().map(String::as_str), items), None)
        }
    };
    // Whether another connection has committed since that scan: until one has, `done` is the
    // whole truth and no task needs a lookup.
    let mut shared = false;
    let mut next = 0;
    while next < items {
        let window = next..items.min(next + batch);
        let started = Instant::now();
        let candidates: Vec<u64> = window.clone().filter(|&i| !done.get(i)).collect();
        // What another worker may have done since the scan: once another connection has
        // committed, every later window is looked up, outside the write lock (its checkpoints
        // may cover any task). The unique key settles any race a look misses.
        if !shared && !candidates.is_empty() {
            shared = match seen {
                Some(seen) => {
                    retry_busy(|| data_version(ctx)).map_err(|e| ctx.db_error(e))? != seen
                }
                None => true,
            };
        }
        let todo = if shared && !candidates.is_empty() {
            match &mut ctx.db {
                Db::Sqlite(..) => {
                    retry_busy(|| unchecked(ctx, &candidates)).map_err(|e| ctx.db_error(e))?
                }
                Db::Pg(sink) => {
                    let ids: Vec<String> = candidates.iter().map(|&i| task_id(i)).collect();
                    let left = sink.unchecked(&ids).map_err(StoreError::from)?;
                    let left = TaskBits::of(left.iter().map(String::as_str), items);
                    candidates.into_iter().filter(|&i| left.get(i)).collect()
                }
            }
        } else {
            candidates
        };
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

/// The tasks of the queue that have a checkpoint now, and the `data_version` they were read at.
fn checkpointed(ctx: &Ctx<'_>) -> rusqlite::Result<(TaskBits, Option<i64>)> {
    let items = ctx.config.items;
    let mut done = TaskBits::with_len(items);
    // One read transaction, so the version names the snapshot the scan saw.
    let Db::Sqlite(conn, _) = &ctx.db else {
        return Err(rusqlite::Error::InvalidQuery);
    };
    let tx = conn.unchecked_transaction()?;
    let version = data_version(ctx)?;
    {
        let mut stmt = tx.prepare("SELECT task_id FROM checkpoints")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            // Borrowed, not copied: a restart late in a long night reads every checkpoint.
            done.insert_id(row.get_ref(0)?.as_str()?, items);
        }
    }
    tx.commit()?;
    Ok((done, Some(version)))
}

/// `PRAGMA data_version`: it changes when another connection commits, and only then (this
/// worker's own commits leave it alone), so an unchanged value means no one else has written a
/// checkpoint since it was last read.
fn data_version(ctx: &Ctx<'_>) -> rusqlite::Result<i64> {
    let Db::Sqlite(conn, _) = &ctx.db else {
        return Err(rusqlite::Error::InvalidQuery);
    };
    conn.prepare_cached("PRAGMA data_version")?
        .query_row([], |row| row.get(0))
}

/// The tasks among `candidates` that have no checkpoint, looked up in one read transaction: a
/// read per item would take the WAL's read lock once per item, which costs more than the lookup.
fn unchecked(ctx: &Ctx<'_>, candidates: &[u64]) -> rusqlite::Result<Vec<u64>> {
    let Db::Sqlite(conn, _) = &ctx.db else {
        return Err(rusqlite::Error::InvalidQuery);
    };
    let tx = conn.unchecked_transaction()?;
    let mut todo = Vec::new();
    {
        let mut stmt = tx.prepare_cached("SELECT 1 FROM checkpoints WHERE task_id = ?1")?;
        for &index in candidates {
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
