//! `inspect --table T --key K --ids`: which keys of a job's own table are wrong against its
//! queue, by name: the keys of the queue with no row, those with more than one, and the rows'
//! keys outside the queue. `inspect_rows` counts them; this names them.

use std::path::Path;

use rusqlite::Connection;
use serde::Serialize;

use crate::queue::Queue;
use crate::task::TaskBits;
use crate::warehouse::error::StoreError;
use crate::warehouse::source::RowSource;

/// The keys behind `inspect_rows`'s counts, each escaped for printing (a job's key is data).
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct KeyIds {
    /// Keys of the queue with no row, in the queue's order.
    pub missing: Vec<String>,
    /// Keys of the queue with more than one row, and how many each, in key order.
    pub duplicated: Vec<(String, u64)>,
    /// Keys of rows outside the queue (`NULL` for a row without one), and how many rows each.
    pub outside: Vec<(String, u64)>,
}

/// Reads the keys of `source`'s table in one snapshot and sorts them against `queue`.
pub fn key_ids(path: &Path, queue: &Queue, source: &RowSource) -> Result<KeyIds, StoreError> {
    let real = crate::base::paths::existing_file(path, "--db")?;
    let snapshot = super::Snapshot::open(&real)?;
    let conn = &snapshot.conn;
    let failed = |e| StoreError::sqlite(path, e);
    conn.execute_batch("BEGIN").map_err(failed)?;
    let result = read(conn, path, queue, source);
    conn.execute_batch("COMMIT").map_err(failed)?;
    result
}

fn read(
    conn: &Connection,
    path: &Path,
    queue: &Queue,
    source: &RowSource,
) -> Result<KeyIds, StoreError> {
    let failed = |e| StoreError::sqlite(path, e);
    if !super::rows::check_shape(source, conn, path)? {
        return Err(StoreError::NoTable {
            path: path.to_path_buf(),
            table: source.table.clone(),
        });
    }
    // The grouping `inspect_rows` judges by: a key that is neither text nor an integer (a
    // blob, a real) is no key of the queue, whatever it reads as.
    let sql = format!(
        "SELECT CAST({key} AS TEXT), max(typeof({key}) IN ('text', 'integer')), count(*) FROM {table} GROUP BY CAST({key} AS TEXT) ORDER BY 1",
        key = source.key_sql(),
        table = source.table_sql()
    );
    let mut stmt = conn.prepare(&sql).map_err(failed)?;
    let mut groups = stmt.query([]).map_err(failed)?;
    let mut seen = TaskBits::with_len(queue.len());
    let mut ids = KeyIds::default();
    while let Some(group) = groups.next().map_err(failed)? {
        let (key, utf8) = super::rows::key_text(group, 0)
            .map_err(failed)?
            .map_or((None, true), |(k, utf8)| (Some(k), utf8));
        let is_key = utf8 && group.get::<_, bool>(1).map_err(failed)?;
        let count: u64 = group.get(2).map_err(failed)?;
        let shown = crate::base::text::escape_controls(key.as_deref().unwrap_or("NULL"));
        match key
            .as_deref()
            .filter(|_| is_key)
            .and_then(|k| queue.index_of(k))
        {
            Some(index) => {
                seen.set(index);
                if count > 1 {
                    ids.duplicated.push((shown, count));
                }
            }
            None => ids.outside.push((shown, count)),
        }
    }
    ids.missing = (0..queue.len())
        .filter(|&i| !seen.get(i))
        .map(|i| crate::base::text::escape_controls(&queue.key(i)))
        .collect();
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobs_keys_are_named_missing_duplicated_and_outside_its_queue() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let db = dir.path().join("w.db");
        let conn = Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
        conn.execute_batch(
            "CREATE TABLE orders(order_id TEXT, amount INT);
             INSERT INTO orders VALUES ('task-000', 1), ('task-002', 1), ('task-002', 2),
               ('stray', 1), (NULL, 1), ('bad' || char(27), 1),
               (CAST(X'7461736b2d303031ff' AS TEXT), 1);",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let source = RowSource {
            table: "orders".into(),
            key: "order_id".into(),
            ..RowSource::default()
        };
        let ids = key_ids(&db, &Queue::tasks(4), &source).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ids.missing, ["task-001", "task-003"]);
        assert_eq!(ids.duplicated, [("task-002".to_string(), 2)]);
        assert_eq!(
            ids.outside,
            [
                ("NULL".to_string(), 1),
                ("bad\\u{1b}".to_string(), 1),
                ("stray".to_string(), 1),
                // Not UTF-8: outside the queue, said escaped, never an error.
                ("task-001\\xff".to_string(), 1)
            ]
        );
    }
}
