//! PostgreSQL as a warehouse: a server (a private cluster, or one someone else runs), one
//! schema per lane, named from the lane's SQLite path (`Server::schema_for`). Each operation is
//! the module's that does it; this is where they meet `Backend`.

use std::path::Path;

use super::follow::Follow;
use super::job::{self, JobFollow};
use super::outbox::PgOutbox;
use super::schema;
use super::server_events::ServerEvents;
use super::writer::PgWriter;
use super::{ENV_CONNINFO, ENV_PREFIX, ENV_WAIT, Server, inspect};
use crate::queue::Queue;
use crate::warehouse::backend::{
    Backend, Follower, JobFollower, Outbox, ServerWatch, Writer, WriterSpec,
};
use crate::warehouse::error::{KeysError, StoreError, WarehouseError};
use crate::warehouse::inspection::{DuplicatedId, Inspection};
use crate::warehouse::source::RowSource;

impl Backend for Server {
    /// The private cluster (its connection string is `key=value`), or the server's URL without
    /// its password.
    fn describe(&self) -> Option<String> {
        Some(if self.conninfo.is_url() {
            self.target()
        } else {
            "postgres (private cluster)".to_string()
        })
    }

    fn child_env(&self) -> Vec<(&'static str, String)> {
        vec![
            // reclaim's own children: their environment is readable only by their own user
            // (and root), through /proc/PID/environ.
            (ENV_CONNINFO, self.conninfo.expose().to_string()),
            (ENV_PREFIX, self.prefix.clone()),
            (ENV_WAIT, self.wait.as_secs().to_string()),
        ]
    }

    fn job_env(&self, db: &Path) -> Vec<(&'static str, String)> {
        job::job_env(self, db)
    }

    fn claim_lane(&self, db: &Path) -> Result<(), StoreError> {
        Ok(schema::claim_schema(self, &self.schema_for(db))?)
    }

    fn where_rows_are(&self, dir: &str) -> String {
        format!("the night's rows are on PostgreSQL; its other files are in {dir}")
    }

    /// In a schema per lane on the server: the closing lines say which.
    fn files_kept(&self) -> bool {
        false
    }

    fn watch(&self) -> Option<Box<dyn ServerWatch>> {
        Some(Box::new(ServerEvents::new(self)))
    }

    /// What only SQLite has yet is refused before any write.
    fn open_writer(&self, lane: &WriterSpec<'_>) -> Result<Box<dyn Writer>, StoreError> {
        if lane.steps {
            return Err(WarehouseError::NotYet { what: "--split" }.into());
        }
        let schema = self.schema_for(lane.db);
        Ok(Box::new(PgWriter::open(
            self,
            &schema,
            lane.needs,
            lane.outbox,
        )?))
    }

    fn open_outbox(&self, db: &Path) -> Result<Option<Box<dyn Outbox>>, StoreError> {
        Ok(Some(Box::new(PgOutbox::open(self, db)?)))
    }

    /// Not looked at on a server: the relay's own loop says what it finds.
    fn has_rows_and_no_outbox(&self, _db: &Path) -> bool {
        false
    }

    /// Not read on a server from the dashboard's thread: unknown.
    fn pending_entries(&self, _db: &Path) -> Option<u64> {
        None
    }

    fn follow(&self, db: &Path) -> Box<dyn Follower> {
        Box::new(Follow::new(self, db))
    }

    fn follow_job(&self, db: &Path, source: &RowSource) -> Box<dyn JobFollower> {
        Box::new(JobFollow::new(self, db, source))
    }

    fn inspect(&self, db: &Path, items: u64) -> Result<Inspection, StoreError> {
        Ok(inspect::inspect(self, db, items)?)
    }

    fn inspect_rows(
        &self,
        db: &Path,
        queue: &Queue,
        source: &RowSource,
    ) -> Result<Inspection, StoreError> {
        Ok(job::inspect_rows(self, db, queue, source)?)
    }

    fn duplicated_ids(
        &self,
        _db: &Path,
        _limit: usize,
    ) -> Result<(Vec<DuplicatedId>, u64), StoreError> {
        Err(WarehouseError::Flags(
            "--ids does not read PostgreSQL yet; look with psql: SELECT task_id, count(*) FROM records GROUP BY 1 HAVING count(*) > 1".into(),
        )
        .into())
    }

    fn read_state(
        &self,
        db: &Path,
        only: &[String],
    ) -> Result<crate::verdict::state::State, StoreError> {
        Ok(super::state::read_state(self, db, only)?)
    }

    fn wipe_checkpoints(&self, db: &Path) -> Result<usize, StoreError> {
        Ok(schema::wipe_checkpoints(self, db)?)
    }

    fn wipe_table(&self, db: &Path, table: &str) -> Result<Option<usize>, StoreError> {
        Ok(job::wipe_table(self, db, table)?)
    }

    fn run_setup(&self, db: &Path, sql: &str) -> Result<(), StoreError> {
        Ok(job::run_setup(self, db, sql)?)
    }

    /// Read on the server, in a trial rolled back (`job::keys_from_sql`).
    fn keys_from_sql(&self, setup: Option<&str>, sql: &str) -> Result<Queue, KeysError> {
        Ok(job::keys_from_sql(self, setup, sql)?)
    }
}
