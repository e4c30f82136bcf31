//! `two-commit`: checkpoints, but in a transaction of their own. Restarts skip finished work, yet
//! a kill between the row's commit and the checkpoint's commit leaves a row the checkpoint does
//! not know about, and the rerun writes it again (there is no unique key to stop it).

use std::time::Instant;

use rusqlite::TransactionBehavior;

use super::{CrashPoint, Ctx, Row, WorkerError};
use crate::store::retry_busy;

pub(super) fn run(ctx: &mut Ctx<'_>) -> Result<(), WorkerError> {
    for index in 0..ctx.config.items {
        let started = Instant::now();
        let row = Row::new(index);
        if retry_busy(|| ctx.has_checkpoint(&row.task_id)).map_err(|e| ctx.db_error(e))? {
            ctx.skip();
            continue;
        }
        ctx.note_resume(index);
        ctx.crash_if(&[index], CrashPoint::BeforeWrite);
        let inserted = retry_busy(|| {
            let tx = ctx
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            let n = super::insert_row(&tx, &row, &ctx.run_id, false)?;
            tx.commit()?;
            Ok(n)
        })
        .map_err(|e| ctx.refused(&row, e))?;
        ctx.inserted += inserted as u64;
        // The window this strategy leaves open: the row is durable, its checkpoint is not.
        ctx.crash_if(&[index], CrashPoint::AfterRowCommit);
        retry_busy(|| {
            let tx = ctx
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.prepare_cached(
                "INSERT OR REPLACE INTO checkpoints(task_id, completed_at) VALUES (?1, ?2)",
            )?
            .execute(rusqlite::params![row.task_id, crate::heartbeat::unix_now()])?;
            tx.commit()
        })
        .map_err(|e| ctx.db_error(e))?;
        ctx.committed(&[index], started);
    }
    ctx.note_resume(ctx.config.items);
    Ok(())
}
