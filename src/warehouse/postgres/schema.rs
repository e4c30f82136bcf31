//! A lane's schema on PostgreSQL: claimed by reclaim before the night (made only if it does not
//! exist, with reclaim's mark), the same tables and columns as on SQLite made in it for a
//! worker, what its catalogue guarantees (`schema_facts`), and its checkpoints wiped.
//!
//! SQLite's `rowid` is implicit; here `records` has an explicit `rowid` identity column, so the
//! observer follows both engines by the same name, and `checkpoints` a `seq` one (an upsert
//! keeps a key's first value); both are indexed, so the observer reads each row once
//! (`follow`).

use postgres::Client;

use super::{Server, quote_ident};
use crate::warehouse::error::WarehouseError;
use crate::warehouse::schema::{SchemaFacts, SchemaNeeds};

/// The tables, as reclaim makes them; `{unique}` is ` UNIQUE` for the strategies with a key.
const RECORDS_SQL: &str = "CREATE TABLE IF NOT EXISTS records(
    rowid      bigint GENERATED ALWAYS AS IDENTITY,
    task_id    text NOT NULL,
    payload    text NOT NULL,
    idem_key   text NOT NULL{unique},
    run_id     text NOT NULL,
    written_at double precision NOT NULL
)";
/// The index the observer follows `records` by.
const RECORDS_INDEX_SQL: &str = "CREATE INDEX IF NOT EXISTS records_rowid ON records(rowid)";
const CHECKPOINTS_SQL: &str = "CREATE TABLE IF NOT EXISTS checkpoints(
    task_id      text PRIMARY KEY,
    completed_at double precision NOT NULL,
    seq          bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX IF NOT EXISTS checkpoints_seq ON checkpoints(seq)";
/// The outbox, as SQLite's (`sqlite::writer`).
const OUTBOX_SQL: &str = "CREATE TABLE IF NOT EXISTS outbox(
    task_id    text PRIMARY KEY,
    idem_key   text NOT NULL,
    body       text NOT NULL,
    created_at double precision NOT NULL,
    sent_at    double precision
)";

/// Claims a lane's schema before the night: creates it, with reclaim's mark (`catalogue::mark`:
/// the night's name and the moment), only if no schema
/// of that name exists; otherwise refuses, changing nothing (saying whether it holds a `records`
/// table, which would be someone else's).
pub fn claim_schema(server: &Server, schema: &str) -> Result<(), WarehouseError> {
    let mut client = server.connect(None)?;
    let exists: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
            &[&schema],
        )
        .map_err(|e| WarehouseError::query("looking for the schema", &e))?
        .get(0);
    if exists {
        let records: bool = client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'records')",
                &[&schema],
            )
            .map_err(|e| WarehouseError::query("looking for a records table", &e))?
            .get(0);
        return Err(WarehouseError::SchemaExists {
            target: server.target(),
            schema: schema.to_string(),
            holding: if records {
                " and holds a records table reclaim did not create tonight"
            } else {
                ""
            },
        });
    }
    let made = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let sql = format!(
        "CREATE SCHEMA {s}; COMMENT ON SCHEMA {s} IS {mark}",
        s = quote_ident(schema),
        mark = quote_literal(&super::catalogue::mark(&server.prefix, made))
    );
    client
        .batch_execute(&format!("BEGIN; {sql}; COMMIT"))
        .map_err(|e| WarehouseError::query("creating the night's schema", &e))
}

/// Readies a worker's session in its lane's schema: the schema must carry reclaim's mark; the
/// tables `needs` describes (and the outbox, with `outbox`) are made, or checked if there.
pub(super) fn prepare(
    client: &mut Client,
    schema: &str,
    needs: SchemaNeeds,
    outbox: bool,
) -> Result<(), WarehouseError> {
    let mark: Option<String> = client
        .query_opt(
            "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1",
            &[&schema],
        )
        .map_err(|e| WarehouseError::query("reading the schema's mark", &e))?
        .and_then(|row| row.get(0));
    if !mark.as_deref().is_some_and(super::catalogue::is_mark) {
        return Err(WarehouseError::Query {
            what: format!("schema {schema}"),
            detail: "it was not made by reclaim for this night (no reclaim mark); reclaim writes only into schemas it made".into(),
        });
    }
    let records = RECORDS_SQL.replace("{unique}", if needs.unique_key { " UNIQUE" } else { "" });
    let mut ddl = format!(
        "BEGIN; SELECT pg_advisory_xact_lock(hashtext({})); {records}; {RECORDS_INDEX_SQL};",
        quote_literal(schema)
    );
    if needs.checkpoints {
        ddl.push_str(CHECKPOINTS_SQL);
        ddl.push(';');
    }
    if outbox {
        ddl.push_str(OUTBOX_SQL);
        ddl.push(';');
    }
    ddl.push_str(" COMMIT");
    // Two workers of one lane may start together: the advisory lock makes their
    // CREATE ... IF NOT EXISTS one after the other (concurrently, one would fail).
    client
        .batch_execute(&ddl)
        .map_err(|e| WarehouseError::query("creating the tables", &e))?;
    let facts = schema_facts(client)
        .map_err(|e| WarehouseError::query("reading the tables' constraints", &e))?;
    if needs.unique_key && !facts.unique_idem_key {
        return Err(WarehouseError::Query {
            what: format!("schema {schema}"),
            detail: format!(
                "records has no UNIQUE constraint on idem_key, which the {} strategy relies on",
                needs.strategy
            ),
        });
    }
    Ok(())
}

/// A string as a SQL literal.
#[must_use]
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// What the schema's catalogue says about the constraints, as `sqlite::schema::read_facts`
/// does for SQLite; read on a connection whose search path is the lane's schema.
pub fn schema_facts(
    client: &mut impl postgres::GenericClient,
) -> Result<SchemaFacts, postgres::Error> {
    // A unique index of exactly one column, by table and column name, in the current schema.
    let unique_on = "SELECT EXISTS (
        SELECT 1 FROM pg_index i
        JOIN pg_class t ON t.oid = i.indrelid
        JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = i.indkey[0]
        WHERE i.indisunique AND i.indnatts = 1
          AND t.relnamespace = current_schema()::regnamespace
          AND t.relname = $1 AND a.attname = $2)";
    let record_columns: Vec<String> = client
        .query(
            "SELECT column_name::text FROM information_schema.columns
             WHERE table_schema = current_schema() AND table_name = 'records' ORDER BY ordinal_position",
            &[],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let unique_idem_key: bool = client
        .query_one(unique_on, &[&"records", &"idem_key"])?
        .get(0);
    let checkpoints_table: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'checkpoints')",
            &[],
        )?
        .get(0);
    let checkpoint_key: bool = checkpoints_table
        && client
            .query_one(unique_on, &[&"checkpoints", &"task_id"])?
            .get::<_, bool>(0);
    Ok(SchemaFacts {
        record_columns,
        unique_idem_key,
        checkpoints_table,
        checkpoint_key,
        task_id_type: Some("text".into()),
    })
}

/// Deletes every checkpoint of the lane whose SQLite path would be `db` (the table may not be
/// there: then there is nothing to delete). The dashboard's `w` and prove's third test.
pub fn wipe_checkpoints(server: &Server, db: &std::path::Path) -> Result<usize, WarehouseError> {
    let mut client = server.connect(Some(&server.schema_for(db)))?;
    let there: bool = client
        .query_one("SELECT to_regclass('checkpoints') IS NOT NULL", &[])
        .map_err(|e| WarehouseError::query("looking for the checkpoints", &e))?
        .get(0);
    if !there {
        return Ok(0);
    }
    client
        .execute("DELETE FROM checkpoints", &[])
        .map(|n| n as usize)
        .map_err(|e| WarehouseError::query("wiping the checkpoints", &e))
}
