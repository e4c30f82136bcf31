//! `naive`: the postmortem's worker. Insert, commit, next; nothing remembers where it was, so a
//! restart begins again at task-000 and writes every finished row a second time.

use std::time::Instant;

use super::{CrashPoint, Ctx, Row, WorkerError};

pub(super) fn run(ctx: &mut Ctx<'_>) -> Result<(), WorkerError> {
    for index in 0..ctx.config.items {
        let started = Instant::now();
        let row = Row::new(index);
        ctx.crash_if(&[index], CrashPoint::BeforeWrite);
        ctx.write_rows(&[&row], false, false)?;
        ctx.committed(&[index], started);
    }
    Ok(())
}
