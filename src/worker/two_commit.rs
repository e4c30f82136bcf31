//! `two-commit`: checkpoints, but in a transaction of their own. Restarts skip finished work, yet
//! a kill between the row's commit and the checkpoint's commit leaves a row the checkpoint does
//! not know about, and the rerun writes it again (there is no unique key to stop it).

use std::time::Instant;

use super::{CrashPoint, Ctx, Row, WorkerError};

pub(super) fn run(ctx: &mut Ctx<'_>) -> Result<(), WorkerError> {
    for index in 0..ctx.config.items {
        let started = Instant::now();
        let row = Row::new(index);
        if ctx.has_checkpoint(&row.task_id)? {
            ctx.skip();
            continue;
        }
        ctx.note_resume(index);
        ctx.crash_if(&[index], CrashPoint::BeforeWrite);
        ctx.write_rows(&[&row], false, false)?;
        // The window this strategy leaves open: the row is durable, its checkpoint is not.
        ctx.crash_if(&[index], CrashPoint::AfterRowCommit);
        ctx.write_checkpoint(&row)?;
        ctx.committed(&[index], started);
    }
    ctx.note_resume(ctx.config.items);
    Ok(())
}
