//! The warehouse a worker writes: its SQLite file, or its lane's schema on the night's
//! PostgreSQL (`crate::warehouse`). The strategies see one `Ctx`; where the engines differ,
//! `Ctx`'s methods match on this.

use rusqlite::Connection;

use super::{StoreError, WorkerConfig, WorkerError};
use crate::warehouse::sqlite as store;

/// Opens the lane's warehouse: its SQLite file, or its schema on the night's PostgreSQL
/// (`warehouse::active`), where what only SQLite has yet is refused before any write.
pub(super) fn open_db(config: &WorkerConfig) -> Result<Db, WorkerError> {
    if let Some(server) = crate::warehouse::active() {
        if config.split > 1 {
            return Err(WorkerError::NotOnPostgres { what: "--split" });
        }
        let schema = server.schema_for(&config.db);
        let sink = crate::warehouse::postgres::sink::Sink::open(
            server,
            &schema,
            config.strategy.needs(),
            config.strategy.relays(),
        )
        .map_err(StoreError::from)?;
        return Ok(Db::Pg(Box::new(sink)));
    }
    let conn = store::open_for_worker(
        &config.db,
        config.sync,
        config.strategy.needs(),
        !config.supervised,
    )?;
    let wal = store::wal::WalBound::new(&conn, &config.db, config.wal_autocheckpoint)
        .map_err(|e| StoreError::sqlite(&config.db, e))?;
    Ok(Db::Sqlite(conn, wal))
}

/// The warehouse a worker writes: a SQLite connection (and the bound that keeps its log short,
/// `store::wal`), or a PostgreSQL session in the lane's schema.
// Reason: one per worker process, never moved in a hot path; boxing SQLite's side would add an
// indirection to every statement of the default engine.
#[allow(clippy::large_enum_variant)]
pub(super) enum Db {
    Sqlite(Connection, store::wal::WalBound),
    Pg(Box<crate::warehouse::postgres::sink::Sink>),
}
