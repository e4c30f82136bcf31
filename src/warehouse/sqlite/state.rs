//! The final state of a job's tables on SQLite, for `--compare`: every table of the database
//! (or those named), its columns, its primary key, its rows, read in one snapshot that changes
//! no file, within a time limit and a bound on the rows held.

use std::path::Path;

use rusqlite::Connection;
use rusqlite::types::ValueRef;

use super::bounded::limited;
use super::snapshot::Snapshot;
use crate::verdict::state::{Cell, State, Table, TooManyRows};
use crate::warehouse::error::StoreError;

/// How long reading the state may take.
pub const READ_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The most rows read over all the tables: a comparison holds them in memory.
pub const MAX_ROWS: u64 = 20_000_000;

/// The tables of `path` (those of `only` when it names any), read in one snapshot.
pub fn read_state(path: &Path, only: &[String]) -> Result<State, StoreError> {
    let failed = |detail: String| StoreError::State {
        path: path.to_path_buf(),
        detail,
    };
    if !path.exists() {
        return Err(StoreError::Missing(path.to_path_buf()));
    }
    let snapshot = Snapshot::open(path)?;
    let conn = &snapshot.conn;
    limited(conn, "reading the tables to compare", READ_LIMIT, || {
        conn.execute_batch("BEGIN")?;
        let state = read(conn, only);
        conn.execute_batch("COMMIT")?;
        state
    })
    .map_err(|e| failed(e.to_string()))?
    .map_err(|e| failed(e.to_string()))
}

/// Inside a read transaction: `Err` (the outer one) is SQLite's; the inner is a bound passed.
fn read(conn: &Connection, only: &[String]) -> rusqlite::Result<Result<State, TooManyRows>> {
    let mut names: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if !only.is_empty() {
        names.retain(|n| only.contains(n));
    }
    let mut state = State::default();
    let mut rows_read = 0u64;
    for name in names {
        let quoted = quote(&name);
        let mut columns = Vec::new();
        let mut key: Vec<(i64, usize)> = Vec::new();
        let mut info = conn.prepare(&format!("PRAGMA table_info({quoted})"))?;
        let mut cols = info.query([])?;
        while let Some(col) = cols.next()? {
            let pk: i64 = col.get(5)?;
            if pk > 0 {
                key.push((pk, columns.len()));
            }
            columns.push(col.get::<_, String>(1)?);
        }
        key.sort_unstable();
        let key: Vec<usize> = key.into_iter().map(|(_, i)| i).collect();
        let list: Vec<String> = columns.iter().map(|c| quote(c)).collect();
        // In key order (or whole-row order), so the first differences said are the first keys.
        let order: Vec<String> = if key.is_empty() {
            (1..=columns.len()).map(|i| i.to_string()).collect()
        } else {
            key.iter().map(|&i| (i + 1).to_string()).collect()
        };
        let sql = format!(
            "SELECT {} FROM {quoted} ORDER BY {}",
            list.join(", "),
            order.join(", ")
        );
        let mut select = conn.prepare(&sql)?;
        let mut found = select.query([])?;
        let mut rows = Vec::new();
        while let Some(row) = found.next()? {
            rows_read += 1;
            if rows_read > MAX_ROWS {
                return Ok(Err(TooManyRows { limit: MAX_ROWS }));
            }
            let mut cells = Vec::with_capacity(columns.len());
            for i in 0..columns.len() {
                cells.push(cell(row.get_ref(i)?));
            }
            rows.push(cells);
        }
        state.tables.insert(
            name.clone(),
            Table {
                name,
                columns,
                key,
                rows,
            },
        );
    }
    Ok(Ok(state))
}

fn cell(value: ValueRef<'_>) -> Cell {
    match value {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(n) => Cell::Int(n),
        ValueRef::Real(x) => Cell::Real(x.to_bits()),
        ValueRef::Text(bytes) => Cell::Text(String::from_utf8_lossy(bytes).into_owned()),
        ValueRef::Blob(bytes) => Cell::Blob(bytes.to_vec()),
    }
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_is_read_with_its_key_its_values_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE accounts(balance INTEGER, id TEXT PRIMARY KEY);
             INSERT INTO accounts VALUES (150, 'b'), (100, 'a');
             CREATE TABLE \"odd \"\"name\"(x REAL, y BLOB);
             INSERT INTO \"odd \"\"name\" VALUES (1.5, x'00ff'), (NULL, NULL);
             CREATE TABLE t(a INTEGER PRIMARY KEY AUTOINCREMENT);",
        )
        .unwrap();
        drop(conn);
        let state = read_state(&path, &[]).unwrap();
        // sqlite_sequence is SQLite's own, not the job's.
        let names: Vec<&String> = state.tables.keys().collect();
        assert_eq!(names, ["accounts", "odd \"name", "t"]);
        let accounts = &state.tables["accounts"];
        assert_eq!(accounts.key, vec![1]);
        assert_eq!(
            accounts.rows,
            vec![
                vec![Cell::Int(100), Cell::Text("a".into())],
                vec![Cell::Int(150), Cell::Text("b".into())]
            ]
        );
        let odd = &state.tables["odd \"name"];
        assert!(odd.key.is_empty());
        assert!(odd.rows.contains(&vec![
            Cell::Real(1.5f64.to_bits()),
            Cell::Blob(vec![0, 255])
        ]));
        let only = read_state(&path, &["t".to_string()]).unwrap();
        assert_eq!(only.tables.len(), 1);
        assert!(matches!(
            read_state(&dir.path().join("none.db"), &[]),
            Err(StoreError::Missing(_))
        ));
    }
}
