//! The verdict's facts read from a lane's schema on PostgreSQL: the same figures
//! `sqlite::inspect` reads from SQLite, judged by the same rule (`Inspection::of_records`).
//! Where the SQL can be the same it is; the differences are SQLite's `typeof()` (every PostgreSQL `task_id` here is `text`) and
//! `PRAGMA integrity_check`, which PostgreSQL has no counterpart of: it is reported as not
//! checked, never as passed.

use std::path::Path;

use postgres::GenericClient;

use super::Server;
use crate::warehouse::error::WarehouseError;
use crate::warehouse::inspection::{CheckpointFigures, Inspection, Integrity, Tally};

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

/// The figures, inside the caller's transaction, judged by the rule SQLite's are
/// (`Inspection::of_records`).
pub fn read(client: &mut impl GenericClient, items: u64) -> Result<Inspection, postgres::Error> {
    let mut count = |sql: &str| -> Result<u64, postgres::Error> {
        client
            .query_one(sql, &[])
            .map(|r| r.get::<_, i64>(0).cast_unsigned())
    };
    let rows = count("SELECT count(*) FROM records")?;
    let runs = count("SELECT count(DISTINCT run_id) FROM records")?;
    let mut tally = Tally::default();
    for group in client.query(
        "SELECT CAST(task_id AS TEXT), count(*) FROM records GROUP BY task_id",
        &[],
    )? {
        // Every PostgreSQL `task_id` here is `text` (SQLite's `typeof()` has nothing to do).
        let task: Option<String> = group.get(0);
        tally.add(
            task.as_deref(),
            group.get::<_, i64>(1).cast_unsigned(),
            items,
        );
    }
    let schema = super::schema::schema_facts(client)?;
    let checkpoints = if schema.checkpoints_table {
        let mut count = |sql: &str| -> Result<u64, postgres::Error> {
            client
                .query_one(sql, &[])
                .map(|r| r.get::<_, i64>(0).cast_unsigned())
        };
        Some(CheckpointFigures {
            count: count("SELECT count(*) FROM checkpoints")?,
            rows_without: count(
                "SELECT count(DISTINCT task_id) FROM records
                 WHERE task_id NOT IN (SELECT task_id FROM checkpoints)",
            )?,
            without_row: count(
                "SELECT count(*) FROM checkpoints
                 WHERE task_id NOT IN (SELECT task_id FROM records)",
            )?,
        })
    } else {
        None
    };
    Ok(Inspection::of_records(
        Path::new(""),
        (items, rows, runs),
        tally,
        (schema, checkpoints),
        not_checked(),
    ))
}

/// The pages, on PostgreSQL: nothing checked them, and nothing is claimed of them (the rule
/// needs a value, and "corrupt" would be a claim reclaim cannot make here either way).
#[must_use]
pub fn not_checked() -> Integrity {
    Integrity {
        ok: true,
        said: NOT_CHECKED.into(),
    }
}
