//! SQLite as a warehouse: a file per lane, named by the lane's path. Each operation is the
//! module's that does it; this is where they meet `Backend`.

use std::path::Path;

use super::follow::SqliteFollow;
use super::job::SqliteJobFollow;
use super::outbox::{self, SqliteOutbox};
use super::{inspect, keys_sql, rows, writer};
use crate::queue::Queue;
use crate::warehouse::backend::{
    Backend, Follower, JobFollower, Outbox, ServerWatch, Writer, WriterSpec,
};
use crate::warehouse::error::{KeysError, StoreError};
use crate::warehouse::inspection::{DuplicatedId, Inspection};
use crate::warehouse::source::RowSource;

/// SQLite files, one per lane: the default warehouse.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sqlite;

impl Backend for Sqlite {
    fn describe(&self) -> Option<String> {
        None
    }

    /// A child finds its file by the path it is given: nothing else to hand it.
    fn child_env(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    fn job_env(&self, _db: &Path) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// The worker creates its file (refusing one that is not a warehouse it may touch).
    fn claim_lane(&self, _db: &Path) -> Result<(), StoreError> {
        Ok(())
    }

    fn where_rows_are(&self, dir: &str) -> String {
        format!("the night's databases are kept in {dir} (open them with sqlite3)")
    }

    fn files_kept(&self) -> bool {
        true
    }

    fn watch(&self) -> Option<Box<dyn ServerWatch>> {
        None
    }

    fn open_writer(&self, lane: &WriterSpec<'_>) -> Result<Box<dyn Writer>, StoreError> {
        Ok(Box::new(writer::open(lane)?))
    }

    fn open_outbox(&self, db: &Path) -> Result<Option<Box<dyn Outbox>>, StoreError> {
        Ok(SqliteOutbox::open(db)?.map(|o| Box::new(o) as Box<dyn Outbox>))
    }

    fn has_rows_and_no_outbox(&self, db: &Path) -> bool {
        outbox::has_rows_and_no_outbox(db)
    }

    fn pending_entries(&self, db: &Path) -> Option<u64> {
        outbox::pending_entries(db)
    }

    fn follow(&self, db: &Path) -> Box<dyn Follower> {
        Box::new(SqliteFollow::new(db))
    }

    fn follow_job(&self, db: &Path, source: &RowSource) -> Box<dyn JobFollower> {
        Box::new(SqliteJobFollow::new(db, source))
    }

    fn inspect(&self, db: &Path, items: u64) -> Result<Inspection, StoreError> {
        inspect::inspect(db, items)
    }

    fn inspect_rows(
        &self,
        db: &Path,
        queue: &Queue,
        source: &RowSource,
    ) -> Result<Inspection, StoreError> {
        inspect::inspect_rows(db, queue, source)
    }

    fn duplicated_ids(
        &self,
        db: &Path,
        limit: usize,
    ) -> Result<(Vec<DuplicatedId>, u64), StoreError> {
        inspect::duplicated_ids(db, limit)
    }

    fn read_state(
        &self,
        db: &Path,
        only: &[String],
    ) -> Result<crate::verdict::state::State, StoreError> {
        super::state::read_state(db, only)
    }

    fn wipe_checkpoints(&self, db: &Path) -> Result<usize, StoreError> {
        super::wipe_checkpoints(db)
    }

    fn wipe_table(&self, db: &Path, table: &str) -> Result<Option<usize>, StoreError> {
        rows::wipe_table(db, table)
    }

    fn run_setup(&self, db: &Path, sql: &str) -> Result<(), StoreError> {
        rows::run_setup(db, sql)
    }

    /// Read from the setup's trial in memory, which is the new warehouse after its setup.
    fn keys_from_sql(&self, setup: Option<&str>, sql: &str) -> Result<Queue, KeysError> {
        let conn = rows::trial_setup(setup)?;
        Ok(keys_sql::keys_from_sql(&conn, sql)?)
    }
}
