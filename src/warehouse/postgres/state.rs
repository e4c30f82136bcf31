//! The final state of a job's tables on PostgreSQL, for `--compare`: every table of the lane's
//! schema (or those named), its columns, its primary key, its rows (each value read as text, so
//! any type compares), in one REPEATABLE READ transaction, each statement under the session's
//! time limit, the rows counted before they are read.

use std::path::Path;

use postgres::GenericClient;

use super::{Server, quote_ident};
use crate::verdict::state::{Cell, State, Table, TooManyRows};
use crate::warehouse::error::WarehouseError;
use crate::warehouse::sqlite::state::MAX_ROWS;

/// The tables of the lane whose SQLite path would be `db` (those of `only` when it names any).
pub fn read_state(server: &Server, db: &Path, only: &[String]) -> Result<State, WarehouseError> {
    let schema = server.schema_for(db);
    let mut client = server.connect(Some(&schema))?;
    let mut tx = client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(|e| WarehouseError::query("starting the comparison's read", &e))?;
    let state = read(&mut tx, &schema, only)
        .map_err(|e| WarehouseError::query(&format!("reading schema {schema} to compare"), &e))?;
    tx.commit()
        .map_err(|e| WarehouseError::query("ending the comparison's read", &e))?;
    state.map_err(|why| WarehouseError::Query {
        what: format!("reading schema {schema} to compare"),
        detail: why.to_string(),
    })
}

fn read(
    client: &mut impl GenericClient,
    schema: &str,
    only: &[String],
) -> Result<Result<State, TooManyRows>, postgres::Error> {
    let mut names: Vec<String> = client
        .query(
            "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY 1",
            &[&schema],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if !only.is_empty() {
        names.retain(|n| only.contains(n));
    }
    let mut total = 0u64;
    for name in &names {
        let sql = format!(
            "SELECT count(*) FROM {}.{}",
            quote_ident(schema),
            quote_ident(name)
        );
        total += client
            .query_one(&sql, &[])?
            .get::<_, i64>(0)
            .cast_unsigned();
    }
    if total > MAX_ROWS {
        return Ok(Err(TooManyRows { limit: MAX_ROWS }));
    }
    let mut state = State::default();
    for name in names {
        let mut columns = Vec::new();
        let mut key: Vec<(i32, usize)> = Vec::new();
        for col in client.query(
            "SELECT a.attname::text, array_position(i.indkey::int2[], a.attnum)
             FROM pg_attribute a
             JOIN pg_class c ON c.oid = a.attrelid
             JOIN pg_namespace n ON n.oid = c.relnamespace
             LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
             WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped
             ORDER BY a.attnum",
            &[&schema, &name],
        )? {
            if let Some(at) = col.get::<_, Option<i32>>(1) {
                key.push((at, columns.len()));
            }
            columns.push(col.get::<_, String>(0));
        }
        key.sort_unstable();
        let key: Vec<usize> = key.into_iter().map(|(_, i)| i).collect();
        let list: Vec<String> = (columns.iter())
            .map(|c| format!("CAST({} AS TEXT)", quote_ident(c)))
            .collect();
        let sql = format!(
            "SELECT {} FROM {}.{}",
            if list.is_empty() {
                "NULL".to_string()
            } else {
                list.join(", ")
            },
            quote_ident(schema),
            quote_ident(&name)
        );
        let rows = (client.query(&sql, &[])?.iter())
            .map(|row| {
                (0..columns.len())
                    .map(|i| {
                        row.get::<_, Option<String>>(i)
                            .map_or(Cell::Null, Cell::Text)
                    })
                    .collect()
            })
            .collect();
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
