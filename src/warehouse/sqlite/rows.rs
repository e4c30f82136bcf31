//! Where someone else's job puts its work: a table and the column that names each unit of work
//! (`--table`, `--key`), or a query that counts them (`--count-sql`). reclaim's own warehouse is
//! the case `records`/`task_id`; an external worker's database was not made by reclaim, so it is
//! opened without the checks that insist on reclaim's schema, and never written.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::{BUSY_TIMEOUT, check_header, table_exists};
use crate::warehouse::error::{QueryError, StoreError, TrialError};
use crate::warehouse::source::{Checkpoints, RowSource, quote_identifier};

/// Whether the table exists and has the key column: `Ok(false)` while the job has not
/// created the table yet; an error naming both when the table has another shape.
pub fn check_shape(source: &RowSource, conn: &Connection, path: &Path) -> Result<bool, StoreError> {
    let failed = |e| StoreError::sqlite(path, e);
    if !table_exists(conn, &source.table).map_err(failed)? {
        return Ok(false);
    }
    let columns = columns_of(conn, &source.table).map_err(failed)?;
    if !columns.iter().any(|c| c == &source.key) {
        return Err(StoreError::NoKeyColumn {
            path: path.to_path_buf(),
            table: crate::base::text::escape_controls(&source.table),
            key: crate::base::text::escape_controls(&source.key),
            columns: listed(&columns),
        });
    }
    Ok(true)
}

/// Whether the checkpoint table, once the job has made it, has its key column: SQLite
/// reads a double-quoted name that is no column as a string, so without this check every
/// checkpoint reads as the key `"no_such_col"`, and each kill is misplaced.
pub fn check_checkpoint_shape(
    named: &Checkpoints,
    conn: &Connection,
    path: &Path,
) -> Result<(), StoreError> {
    let columns = columns_of(conn, &named.table).map_err(|e| StoreError::sqlite(path, e))?;
    if columns.iter().any(|c| c == &named.key) {
        return Ok(());
    }
    Err(StoreError::NoCheckpointKeyColumn {
        path: path.to_path_buf(),
        table: crate::base::text::escape_controls(&named.table),
        key: crate::base::text::escape_controls(&named.key),
        columns: listed(&columns),
    })
}

/// Runs `--count-sql` and reads its one row `(rows, distinct)`.
pub fn count(
    source: &RowSource,
    conn: &Connection,
    path: &Path,
) -> Result<Option<(u64, u64)>, StoreError> {
    let Some(sql) = &source.count_sql else {
        return Ok(None);
    };
    let wrong = |detail: String| StoreError::CountSql {
        path: path.to_path_buf(),
        detail,
    };
    let mut stmt = conn.prepare(sql).map_err(|e| wrong(e.to_string()))?;
    if stmt.column_count() != 2 {
        return Err(wrong(format!(
            "it returns {} columns, not two (rows, distinct)",
            stmt.column_count()
        )));
    }
    let named = format!("--count-sql {sql:?}");
    let first =
        super::bounded::limited(conn, &named, crate::warehouse::source::COUNT_LIMIT, || {
            let mut rows = stmt.query([])?;
            let Some(row) = rows.next()? else {
                return Ok(None);
            };
            Ok(Some((row.get::<_, i64>(0).ok(), row.get::<_, i64>(1).ok())))
        })
        .map_err(|e| match e {
            QueryError::TooLong { .. } => StoreError::CountSqlTooLong {
                path: path.to_path_buf(),
                detail: e.to_string(),
            },
            other => wrong(other.to_string()),
        })?;
    let Some(row) = first else {
        return Err(wrong("it returned no row".into()));
    };
    let number = |i: usize, n: Option<i64>| {
        n.and_then(|n| u64::try_from(n).ok())
            .ok_or_else(|| wrong(format!("column {} is not a count", i + 1)))
    };
    Ok(Some((number(0, row.0)?, number(1, row.1)?)))
}

/// A key column's value (read `CAST(key AS TEXT)`) and whether it can be a key of the queue:
/// bytes that are not UTF-8 (a job may store any) come back escaped (`task-\xff`) with
/// `false`, to be judged as a row outside the queue and said as written, never an error.
pub fn key_text(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<Option<(String, bool)>> {
    use rusqlite::types::ValueRef;
    Ok(match row.get_ref(index)? {
        ValueRef::Null => None,
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => Some(match std::str::from_utf8(bytes) {
            Ok(text) => (text.to_owned(), true),
            Err(_) => (crate::base::text::escape_bytes(bytes), false),
        }),
        ValueRef::Integer(n) => Some((n.to_string(), true)),
        ValueRef::Real(x) => Some((x.to_string(), true)),
    })
}

/// The column names of `table`, in order.
fn columns_of(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    conn.prepare("SELECT name FROM pragma_table_info(?1)")
        .and_then(|mut s| {
            s.query_map([table], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()
        })
}

/// Column names for a message: control characters escaped (a job names its own columns).
fn listed(columns: &[String]) -> String {
    let escaped: Vec<String> = columns
        .iter()
        .map(|c| crate::base::text::escape_controls(c))
        .collect();
    escaped.join(", ")
}

/// Opens a job's database read-only to follow it, whatever its schema; `Ok(None)` while it is
/// not a database yet (the job has not created it, or it is still empty).
pub fn open_following(path: &Path) -> Result<Option<Connection>, StoreError> {
    if !check_header(path)? {
        return Ok(None);
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| StoreError::sqlite(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| StoreError::sqlite(path, e))?;
    // Its `LIMIT ?` is bound again on every poll: planned once (see `open_observing`).
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )
    .map_err(|e| StoreError::sqlite(path, e))?;
    Ok(Some(conn))
}

/// Deletes every row of a job's checkpoint table, as an operator might "to force a rerun";
/// `None` when the job has no such table (nothing to wipe, and the test that wipes it does not
/// apply).
pub fn wipe_table(path: &Path, table: &str) -> Result<Option<usize>, StoreError> {
    let failed = |e| StoreError::sqlite(path, e);
    if !check_header(path)? {
        return Ok(None);
    }
    let conn = Connection::open(path).map_err(failed)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(failed)?;
    if !table_exists(&conn, table).map_err(failed)? {
        return Ok(None);
    }
    let deleted = conn
        .execute(&format!("DELETE FROM {}", quote_identifier(table)), [])
        .map_err(failed)?;
    Ok(Some(deleted))
}

/// Runs `--setup-sql` once on a new database, before the job's first attempt.
pub fn run_setup(path: &Path, sql: &str) -> Result<(), StoreError> {
    let failed = |e: rusqlite::Error| StoreError::Setup {
        path: path.to_path_buf(),
        detail: e.to_string(),
    };
    let conn = Connection::open(path).map_err(failed)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(failed)?;
    super::bounded::confine(&conn);
    super::bounded::limited(
        &conn,
        &format!("--setup-sql {sql:?}"),
        super::bounded::SETUP_LIMIT,
        || conn.execute_batch(sql),
    )
    .map_err(|e| StoreError::Setup {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })
}

/// Checks `--setup-sql` (and `--count-sql`) on an empty database in memory, so a typo is refused
/// before any file is created or any job started.
pub fn check_setup(sql: &str) -> Result<(), TrialError> {
    trial_setup(Some(sql)).map(drop)
}

/// An empty database in memory with `--setup-sql` run on it: what a new warehouse holds before
/// the job's first attempt, for checks (and `--keys-sql`) that must not touch a file.
pub fn trial_setup(sql: Option<&str>) -> Result<Connection, TrialError> {
    let conn = Connection::open_in_memory().map_err(TrialError::Open)?;
    // A trial: it may touch nothing but its own database in memory.
    super::bounded::confine(&conn);
    if let Some(sql) = sql {
        super::bounded::limited(
            &conn,
            &format!("--setup-sql {sql:?} (tried on an empty database)"),
            super::bounded::TRIAL_LIMIT,
            || conn.execute_batch(sql),
        )
        .map_err(TrialError::Setup)?;
    }
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identifier_with_quotes_stays_one_identifier() {
        assert_eq!(quote_identifier("records"), "\"records\"");
        assert_eq!(quote_identifier("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn the_shape_of_a_table_is_checked_before_it_is_counted() {
        let conn = Connection::open_in_memory().unwrap_or_else(|e| panic!("{e}"));
        let path = Path::new("mem.db");
        let source = RowSource::default();
        assert!(matches!(check_shape(&source, &conn, path), Ok(false)));
        conn.execute_batch("CREATE TABLE records(id TEXT, payload TEXT)")
            .unwrap_or_else(|e| panic!("{e}"));
        let error = check_shape(&source, &conn, path)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("no column task_id"), "{error}");
        assert!(error.contains("id, payload"), "{error}");
        let counted = RowSource {
            count_sql: Some("SELECT count(*), count(DISTINCT id) FROM records".into()),
            ..RowSource::default()
        };
        assert!(matches!(count(&counted, &conn, path), Ok(Some((0, 0)))));
        let wrong = RowSource {
            count_sql: Some("SELECT 1".into()),
            ..RowSource::default()
        };
        assert!(count(&wrong, &conn, path).is_err());
    }
}
