//! `keyed`: a UNIQUE idempotency key and `ON CONFLICT DO NOTHING`, but no checkpoint. A restart
//! redoes every item from task-000; the database refuses each duplicate, so the only cost is the
//! wasted work.

use std::time::Instant;

use super::{CrashPoint, Ctx, Row, WorkerError};

pub(super) fn run(ctx: &mut Ctx<'_>) -> Result<(), WorkerError> {
    let items = ctx.config.items;
    let batch = ctx.config.batch.max(1);
    let mut start = 0;
    while start < items {
        let started = Instant::now();
        let tasks: Vec<u64> = (start..items.min(start + batch)).collect();
        let rows: Vec<Row> = tasks.iter().map(|&i| Row::new(i)).collect();
        ctx.crash_if(&tasks, CrashPoint::BeforeWrite);
        ctx.write_rows(&rows.iter().collect::<Vec<_>>(), true, false)?;
        ctx.committed(&tasks, started);
        start += batch;
    }
    Ok(())
}
