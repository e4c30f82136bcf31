//! `guarded`: the fix. The row and its checkpoint commit in one transaction (`BEGIN IMMEDIATE`
//! on SQLite), so no kill can separate them; the unique key catches whatever the checkpoint cannot (wiped
//! checkpoints, two workers on one queue); a heartbeat after each commit shows progress.

use std::time::Instant;

use super::{CrashPoint, Ctx, Row, WorkerError};

pub(super) fn run(ctx: &mut Ctx<'_>) -> Result<(), WorkerError> {
    let items = ctx.config.items;
    let batch = ctx.config.batch.max(1);
    // What was done before this process started, read in one scan: a restart late in a long
    // night then skips the finished tasks without a lookup each. `seen` marks the snapshot the
    // scan saw, when the warehouse can tell whether anyone has committed since.
    let (done, seen) = ctx.db.checkpointed(items)?;
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
                Some(seen) => ctx.db.changed_since(seen)?,
                None => true,
            };
        }
        let todo = if shared && !candidates.is_empty() {
            ctx.db.unchecked(&candidates)?
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
