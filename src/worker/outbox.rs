//! `outbox`: guarded, and the message leaves through an outbox. Each row commits with its
//! checkpoint and an outbox entry in one transaction, and nothing is sent inside it; the relay
//! (`reclaim relay`, `worker::relay`) delivers the pending entries with the row's idempotency
//! key and marks them sent. A kill anywhere leaves either the row with its entry or neither, and
//! a kill in the relay leaves an entry delivered but unmarked, which the next relay delivers
//! again: whether the customer sees it twice is now the vendor's key store's decision.

use super::{Ctx, WorkerError, guarded};
use crate::warehouse::sqlite::retry_busy;

/// The outbox. `task_id` is its primary key, so `ENTRY_SQL`'s `ON CONFLICT(task_id)` fails at
/// the first write on a table made without it, rather than queueing a message twice.
const TABLE_SQL: &str = "CREATE TABLE IF NOT EXISTS outbox(
    task_id TEXT PRIMARY KEY,
    idem_key TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL,
    sent_at REAL
)";

/// One entry, written in the row's transaction (`Ctx::write_rows`).
pub(super) const ENTRY_SQL: &str = "INSERT INTO outbox(task_id, idem_key, body, created_at)
    VALUES (?1, ?2, ?3, ?4) ON CONFLICT(task_id) DO NOTHING";

pub(super) fn run(ctx: &mut Ctx<'_>) -> Result<(), WorkerError> {
    // On PostgreSQL the outbox was made with the other tables (`warehouse::postgres::sink::Sink::open`).
    if let super::Db::Sqlite(conn, _) = &ctx.db {
        retry_busy(|| conn.execute_batch(TABLE_SQL)).map_err(|e| ctx.db_error(e))?;
    }
    // The rest is guarded's loop: `write_rows` adds each row's outbox entry for this strategy.
    guarded::run(ctx)
}
