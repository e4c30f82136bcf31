//! The warehouse's schema: created for a strategy's needs, and verified before any write (the
//! columns, the task id's type, the unique key a strategy relies on), since `CREATE TABLE IF NOT
//! EXISTS` silently keeps an older table without it; and the facts `inspect` reports of it.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior};

use super::{retry_busy, table_exists};
use crate::warehouse::error::StoreError;
use crate::warehouse::schema::{SchemaFacts, SchemaNeeds};

pub(super) fn create_schema(
    conn: &mut Connection,
    path: &Path,
    needs: SchemaNeeds,
) -> Result<(), StoreError> {
    let unique = if needs.unique_key { " UNIQUE" } else { "" };
    let records = format!(
        "CREATE TABLE IF NOT EXISTS records(
            task_id    TEXT NOT NULL,
            payload    TEXT NOT NULL,
            idem_key   TEXT NOT NULL{unique},
            run_id     TEXT NOT NULL,
            written_at REAL NOT NULL
        )"
    );
    // A rowid table, not WITHOUT ROWID (one B-tree fewer per checkpoint): the observer follows
    // checkpoints by rowid, reading only what is new.
    let checkpoints = "CREATE TABLE IF NOT EXISTS checkpoints(
            task_id      TEXT PRIMARY KEY,
            completed_at REAL NOT NULL
        )";
    retry_busy(|| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(&records)?;
        if needs.checkpoints {
            tx.execute_batch(checkpoints)?;
        }
        // Verified inside the transaction: dropping it on a refusal rolls the creation back.
        if let Err(refusal) = verify_schema(&tx, path, needs, true) {
            return Ok(Err(refusal));
        }
        tx.commit()?;
        Ok(Ok(()))
    })
    .map_err(|e| StoreError::sqlite(path, e))?
}

/// Checks the tables a strategy needs. With `complete` false, only the tables that exist are
/// judged (the check before anything is created).
pub(super) fn verify_schema(
    conn: &Connection,
    path: &Path,
    needs: SchemaNeeds,
    complete: bool,
) -> Result<(), StoreError> {
    let facts = read_facts(conn).map_err(|e| StoreError::sqlite(path, e))?;
    // First: a table of another shape is not reclaim's at all, whatever constraints it has.
    verify_task_id_type(&facts, path)?;
    if needs.unique_key && !facts.unique_idem_key {
        return Err(StoreError::MissingConstraint {
            path: path.to_path_buf(),
            table: "records",
            constraint: "a UNIQUE constraint on idem_key",
            strategy: needs.strategy,
        });
    }
    if needs.checkpoints && (complete || facts.checkpoints_table) && !facts.checkpoint_key {
        return Err(StoreError::MissingConstraint {
            path: path.to_path_buf(),
            table: "checkpoints",
            constraint: "a PRIMARY KEY or UNIQUE constraint on task_id",
            strategy: needs.strategy,
        });
    }
    for column in RECORD_COLUMNS {
        if !facts.record_columns.iter().any(|c| c == column) {
            return Err(StoreError::MissingColumn {
                path: path.to_path_buf(),
                table: "records",
                column,
            });
        }
    }
    Ok(())
}

/// Every column the workers do not write must accept a row without it (NULL allowed, or a
/// default), or the first insert would fail after the file had been switched to WAL.
pub(super) fn verify_insertable(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let mut stmt = conn
        .prepare(
            "SELECT name FROM pragma_table_info('records')
             WHERE \"notnull\" = 1 AND dflt_value IS NULL AND pk = 0",
        )
        .map_err(|e| StoreError::sqlite(path, e))?;
    let required: Vec<String> = stmt
        .query_map([], |row| row.get(0))
        .and_then(Iterator::collect)
        .map_err(|e| StoreError::sqlite(path, e))?;
    match required
        .into_iter()
        .find(|c| !RECORD_COLUMNS.contains(&c.as_str()))
    {
        Some(column) => Err(StoreError::ExtraColumn {
            path: path.to_path_buf(),
            column: crate::base::text::escape_controls(&column),
        }),
        None => Ok(()),
    }
}

/// `records.task_id` must have TEXT affinity, as reclaim declares it: in a table whose ids are
/// INTEGERs (the postmortem's own shape, or one made by hand) a worker's `task-001` would sit
/// beside `1`, and no count could tell them apart.
pub(super) fn verify_task_id_type(facts: &SchemaFacts, path: &Path) -> Result<(), StoreError> {
    match &facts.task_id_type {
        Some(declared) if !has_text_affinity(declared) => Err(StoreError::ColumnType {
            path: path.to_path_buf(),
            table: "records",
            column: "task_id",
            found: if declared.trim().is_empty() {
                "without a type".to_string()
            } else {
                crate::base::text::escape_controls(&crate::base::text::shorten(declared, 40))
            },
        }),
        _ => Ok(()),
    }
}

/// SQLite's affinity rules (datatype3.html, 3.1): a declared type containing `INT` is INTEGER;
/// otherwise one containing `CHAR`, `CLOB` or `TEXT` is TEXT.
fn has_text_affinity(declared: &str) -> bool {
    let upper = declared.to_ascii_uppercase();
    !upper.contains("INT") && ["CHAR", "CLOB", "TEXT"].iter().any(|t| upper.contains(t))
}

/// For a strategy that relies on the unique key: the warehouse's first row must be keyed as
/// `task::idem_key` keys it, or a row written now would not collide with its duplicate there.
pub(super) fn verify_key_form(
    conn: &Connection,
    path: &Path,
    needs: SchemaNeeds,
) -> Result<(), StoreError> {
    if !needs.unique_key {
        return Ok(());
    }
    let first: Option<[Option<String>; 3]> = retry_busy(|| {
        conn.query_row(
            "SELECT CAST(task_id AS TEXT), CAST(payload AS TEXT), CAST(idem_key AS TEXT)
             FROM records ORDER BY rowid LIMIT 1",
            [],
            |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?]),
        )
        .optional()
    })
    .map_err(|e| StoreError::sqlite(path, e))?;
    let Some([task, payload, found]) = first.map(|row| row.map(Option::unwrap_or_default)) else {
        return Ok(());
    };
    let expected = crate::task::idem_key(&task, &payload);
    if found == expected {
        return Ok(());
    }
    let short = |key: &str| {
        let mut cut: String = crate::base::text::escape_controls(key)
            .chars()
            .take(24)
            .collect();
        if key.chars().count() > 24 {
            cut.push('…');
        }
        cut
    };
    Err(StoreError::KeyForm {
        path: path.to_path_buf(),
        task: crate::base::text::escape_controls(&task),
        found: short(&found),
        expected: short(&expected),
        strategy: needs.strategy,
    })
}

/// The columns every strategy writes.
const RECORD_COLUMNS: [&str; 5] = ["task_id", "payload", "idem_key", "run_id", "written_at"];

/// What the schema of a warehouse really guarantees, read from SQLite's own catalogue.
pub fn read_facts(conn: &Connection) -> rusqlite::Result<SchemaFacts> {
    let record_columns = columns(conn, "records")?;
    let unique_idem_key = has_unique_on(conn, "records", "idem_key")?;
    let checkpoints_table = table_exists(conn, "checkpoints")?;
    let checkpoint_key = checkpoints_table && has_unique_on(conn, "checkpoints", "task_id")?;
    let task_id_type = conn
        .query_row(
            "SELECT type FROM pragma_table_info('records') WHERE name = 'task_id'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    Ok(SchemaFacts {
        record_columns,
        unique_idem_key,
        checkpoints_table,
        checkpoint_key,
        task_id_type,
    })
}

pub(super) fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
    stmt.query_map([table], |row| row.get(0))?.collect()
}

/// True when `table` has a UNIQUE index (a PRIMARY KEY on a non-INTEGER column is one) whose only
/// column is `column`.
pub(super) fn has_unique_on(
    conn: &Connection,
    table: &str,
    column: &str,
) -> rusqlite::Result<bool> {
    let mut indexes =
        conn.prepare("SELECT name FROM pragma_index_list(?1) WHERE \"unique\" = 1")?;
    let names: Vec<String> = indexes
        .query_map([table], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut cols = conn.prepare("SELECT name FROM pragma_index_info(?1)")?;
    for name in names {
        let covered: Vec<Option<String>> = cols
            .query_map([&name], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if covered.len() == 1 && covered[0].as_deref() == Some(column) {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_text_affinity_task_id_is_reclaims() {
        for text in ["TEXT", "text not null", "VARCHAR(20)", "NCHAR", "CLOB"] {
            assert!(has_text_affinity(text), "{text}");
        }
        // SQLite's rule 1 comes first: `CHARINT` is INTEGER.
        for other in [
            "INTEGER", "INT", "BIGINT", "CHARINT", "", "BLOB", "REAL", "NUMERIC",
        ] {
            assert!(!has_text_affinity(other), "{other}");
        }
    }
}
