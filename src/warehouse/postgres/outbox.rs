//! The outbox on PostgreSQL, from the relay's side (`reclaim relay`): the next entry to deliver
//! and the count, in one snapshot, and each entry marked sent once delivered.

use postgres::Client;

use super::Server;
use crate::warehouse::backend::{Outbox, Pending};
use crate::warehouse::error::{StoreError, WarehouseError};

/// The relay's side of the outbox on PostgreSQL (`worker::relay`).
pub struct PgOutbox {
    client: Client,
}

impl PgOutbox {
    pub fn open(server: &Server, db: &std::path::Path) -> Result<Self, WarehouseError> {
        Ok(Self {
            client: server.connect_patiently(Some(&server.schema_for(db)))?,
        })
    }
}

impl Outbox for PgOutbox {
    /// The first entry not yet sent, and how many entries there are (0 before the worker has
    /// made the table).
    fn next_pending(&mut self) -> Result<(Option<Pending>, u64), StoreError> {
        let failed = |e: postgres::Error| WarehouseError::query("reading the outbox", &e);
        // One snapshot for both reads: read apart, an entry committed between them would be
        // counted in the total and missing from the pending, and the relay would end without
        // delivering it.
        let mut tx = self
            .client
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .start()
            .map_err(failed)?;
        let there: bool = tx
            .query_one("SELECT to_regclass('outbox') IS NOT NULL", &[])
            .map_err(failed)?
            .get(0);
        if !there {
            return Ok((None, 0));
        }
        let total = tx
            .query_one("SELECT count(*) FROM outbox", &[])
            .map_err(failed)?
            .get::<_, i64>(0) as u64;
        let pending = tx
            .query_opt(
                "SELECT task_id, idem_key, body FROM outbox WHERE sent_at IS NULL ORDER BY task_id LIMIT 1",
                &[],
            )
            .map_err(failed)?
            .map(|r| (r.get(0), r.get(1), r.get(2)));
        tx.commit().map_err(failed)?;
        Ok((pending, total))
    }

    fn mark_sent(&mut self, task: &str) -> Result<(), StoreError> {
        Ok(self
            .client
            .execute(
                "UPDATE outbox SET sent_at = $2 WHERE task_id = $1",
                &[&task, &crate::heartbeat::unix_now()],
            )
            .map(|_| ())
            .map_err(|e| WarehouseError::query("marking an entry sent", &e))?)
    }
}
