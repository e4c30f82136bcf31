//! `naive`: the postmortem's worker. Insert, commit, next; nothing remembers where it was, so a
//! restart begins again at task-000 and writes every finished row a second time.

use std::time::Instant;

use rusqlite::TransactionBehavior;

use super::{CrashPoint, Ctx, Row, WorkerError};
use crate::store::retry_busy;

pub(super) fn run(ctx: &mut Ctx<'_>) -> Result<(), WorkerError> {
    for index in 0..ctx.config.items {
        let started = Instant::now();
        let row = Row::new(index);
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
        ctx.committed(&[index], started);
    }
    Ok(())
}
