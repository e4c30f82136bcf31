//! `--keys-sql` read from a SQLite database: a read-only query of one column, each row a key.

use crate::queue::{MAX_LISTED, Queue, QueueError};

/// Runs `--keys-sql` on `conn` (the setup's trial in memory, or a database `inspect` reads): a
/// read-only query of one column, each row a key (text, or an integer written as text), within
/// the time `--count-sql` has and stopped by a signal.
pub fn keys_from_sql(conn: &rusqlite::Connection, sql: &str) -> Result<Queue, QueueError> {
    let wrong = |detail: String| QueueError::List {
        origin: "--keys-sql".into(),
        detail,
    };
    {
        let stmt = conn.prepare(sql).map_err(|e| wrong(e.to_string()))?;
        if !stmt.readonly() {
            return Err(wrong(
                "writes to the database; it must only read the keys (SELECT ...)".into(),
            ));
        }
        if stmt.column_count() != 1 {
            return Err(wrong(format!(
                "returns {} columns; it must return one, the key",
                stmt.column_count()
            )));
        }
    }
    let read = || -> rusqlite::Result<Result<Vec<String>, QueueError>> {
        let mut stmt = conn.prepare(sql)?;
        let mut rows = stmt.query([])?;
        let mut keys = Vec::new();
        while let Some(row) = rows.next()? {
            let key = match row.get_ref(0)? {
                rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                rusqlite::types::ValueRef::Integer(n) => n.to_string(),
                _ => {
                    return Ok(Err(wrong(format!(
                        "row {} is not a text key (NULL, a real or a blob)",
                        keys.len() + 1
                    ))));
                }
            };
            keys.push(key);
            if keys.len() > MAX_LISTED {
                return Ok(Err(wrong(format!("returns over {MAX_LISTED} keys"))));
            }
        }
        Ok(Ok(keys))
    };
    let keys = super::bounded::limited(
        conn,
        &format!("--keys-sql {sql:?}"),
        crate::warehouse::source::COUNT_LIMIT,
        read,
    )
    .map_err(|e| wrong(e.to_string()))??;
    Queue::listed(&keys, "--keys-sql")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sql_reads_one_column_and_never_writes() {
        let conn = rusqlite::Connection::open_in_memory().unwrap_or_else(|e| panic!("{e}"));
        conn.execute_batch(
            "CREATE TABLE q(k TEXT, n INT); INSERT INTO q VALUES ('x', 1), ('y', 2);",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let q =
            keys_from_sql(&conn, "SELECT k FROM q ORDER BY n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(q.len(), 2);
        assert_eq!(q.key(1), "y");
        assert!(keys_from_sql(&conn, "SELECT k, n FROM q").is_err());
        assert!(keys_from_sql(&conn, "DELETE FROM q").is_err());
        assert!(keys_from_sql(&conn, "SELECT NULL").is_err());
        assert!(keys_from_sql(&conn, "SELECT k FROM q WHERE 0").is_err());
        let ints = keys_from_sql(&conn, "SELECT n FROM q").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ints.index_of("2"), Some(1));
    }
}
