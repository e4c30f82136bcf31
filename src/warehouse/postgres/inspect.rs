//! The verdict's facts read from a lane's schema on PostgreSQL: the same figures `store::inspect`
//! reads from SQLite, by the same rule (`Inspection::derived`). Where the SQL can be the same it
//! is; the differences are SQLite's `typeof()` (every PostgreSQL `task_id` here is `text`) and
//! `PRAGMA integrity_check`, which PostgreSQL has no counterpart of: it is reported as not
//! checked, never as passed.

use std::path::Path;

use postgres::GenericClient;

use super::Server;
use crate::task::canonical_index;
use crate::warehouse::error::WarehouseError;
use crate::warehouse::inspection::{Inspection, Judged};

/// What `Inspection::integrity` says on PostgreSQL.
pub const NOT_CHECKED: &str =
    "not checked: PostgreSQL has no PRAGMA integrity_check (pages are the server's to guard)";

/// Every fact about the lane whose SQLite path would be `db`, in one REPEATABLE READ
/// transaction so the figures describe one moment.
pub fn inspect(server: &Server, db: &Path, items: u64) -> Result<Inspection, WarehouseError> {
    let schema = server.schema_for(db);
    let mut client = server.connect(Some(&schema))?;
    let mut tx = client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(|e| WarehouseError::query("starting the verdict's read", &e))?;
    let mut inspection = read(&mut tx, items)
        .map_err(|e| WarehouseError::query(&format!("reading schema {schema}"), &e))?;
    tx.commit()
        .map_err(|e| WarehouseError::query("ending the verdict's read", &e))?;
    inspection.db = db.to_path_buf();
    Ok(inspection)
}

/// The figures, inside the caller's transaction.
pub fn read(client: &mut impl GenericClient, items: u64) -> Result<Inspection, postgres::Error> {
    let count = |client: &mut dyn FnMut(&str) -> Result<i64, postgres::Error>, sql: &str| {
        client(sql).map(|n| n as u64)
    };
    let mut one = |sql: &str| -> Result<i64, postgres::Error> {
        client.query_one(sql, &[]).map(|r| r.get::<_, i64>(0))
    };
    let rows = count(&mut one, "SELECT count(*) FROM records")?;
    let runs = count(&mut one, "SELECT count(DISTINCT run_id) FROM records")?;
    let mut distinct = 0;
    let mut duplicated_task_ids = 0;
    let mut present_in_queue: u64 = 0;
    let mut unexpected: u64 = 0;
    for group in client.query(
        "SELECT CAST(task_id AS TEXT), count(*) FROM records GROUP BY task_id",
        &[],
    )? {
        let task: Option<String> = group.get(0);
        let count = group.get::<_, i64>(1) as u64;
        distinct += 1;
        if count > 1 {
            duplicated_task_ids += 1;
        }
        // INVARIANT: only the spelling `task_id()` writes counts as a task of the queue, as on
        // SQLite, so `missing` cannot underflow.
        match task.as_deref().and_then(canonical_index) {
            Some(index) if index < items => present_in_queue += 1,
            _ => unexpected = unexpected.saturating_add(count),
        }
    }
    let schema = super::sink::schema_facts(client)?;
    let (checkpoints, rows_without_checkpoint, checkpoints_without_row) =
        if schema.checkpoints_table {
            let mut one = |sql: &str| -> Result<u64, postgres::Error> {
                client
                    .query_one(sql, &[])
                    .map(|r| r.get::<_, i64>(0) as u64)
            };
            (
                Some(one("SELECT count(*) FROM checkpoints")?),
                Some(one("SELECT count(DISTINCT task_id) FROM records
                 WHERE task_id NOT IN (SELECT task_id FROM checkpoints)")?),
                Some(one("SELECT count(*) FROM checkpoints
                 WHERE task_id NOT IN (SELECT task_id FROM records)")?),
            )
        } else {
            (None, None, None)
        };
    let missing = items.saturating_sub(present_in_queue);
    // Nothing checked the pages, and nothing is claimed of them: the verdict's rule needs a
    // value, and "corrupt" would be a claim reclaim cannot make here either way.
    let integrity_ok = true;
    let consistent = rows == items
        && distinct == items
        && missing == 0
        && unexpected == 0
        && checkpoints_without_row.unwrap_or(0) == 0;
    Ok(Inspection {
        db: std::path::PathBuf::new(),
        items,
        rows,
        distinct,
        duplicated_task_ids,
        extra_rows: rows.saturating_sub(distinct),
        missing,
        unexpected,
        checkpoints,
        rows_without_checkpoint,
        checkpoints_without_row,
        runs,
        schema,
        integrity_ok,
        integrity: NOT_CHECKED.into(),
        consistent,
        judged: Judged::Keys,
        queue: None,
    })
}
