//! The warehouse on PostgreSQL: the lane's schema (claimed by reclaim before the night, made only
//! if it does not exist), the same tables and columns as on SQLite, and the worker's writes in
//! each strategy's own transaction shape.
//!
//! SQLite's `rowid` is implicit; here `records` has an explicit `rowid` identity column, so the
//! observer follows both engines by the same name. Transactions are READ COMMITTED (the server's
//! default): a unique violation between two workers waits for the other's commit and then either
//! inserts or, with `ON CONFLICT DO NOTHING`, does not.

use postgres::Client;

use super::{Server, quote_ident};
use crate::warehouse::error::WarehouseError;
use crate::warehouse::schema::SchemaNeeds;

/// What reclaim writes on every schema it makes, and reads back before it writes into one.
pub const MARK: &str = "made by reclaim for one night";

/// The tables, as reclaim makes them; `{unique}` is ` UNIQUE` for the strategies with a key.
const RECORDS_SQL: &str = "CREATE TABLE IF NOT EXISTS records(
    rowid      bigint GENERATED ALWAYS AS IDENTITY,
    task_id    text NOT NULL,
    payload    text NOT NULL,
    idem_key   text NOT NULL{unique},
    run_id     text NOT NULL,
    written_at double precision NOT NULL
)";
const CHECKPOINTS_SQL: &str = "CREATE TABLE IF NOT EXISTS checkpoints(
    task_id      text PRIMARY KEY,
    completed_at double precision NOT NULL
)";
/// The outbox, as `worker::outbox` makes it on SQLite.
pub const OUTBOX_SQL: &str = "CREATE TABLE IF NOT EXISTS outbox(
    task_id    text PRIMARY KEY,
    idem_key   text NOT NULL,
    body       text NOT NULL,
    created_at double precision NOT NULL,
    sent_at    double precision
)";

/// The row insert. On PostgreSQL `ON CONFLICT (idem_key)` needs the unique index it names.
pub(super) const INSERT_SQL: &str =
    "INSERT INTO records(task_id, payload, idem_key, run_id, written_at)
    VALUES ($1, $2, $3, $4, $5)";
const INSERT_KEYED_SQL: &str = "INSERT INTO records(task_id, payload, idem_key, run_id, written_at)
    VALUES ($1, $2, $3, $4, $5) ON CONFLICT (idem_key) DO NOTHING";
/// SQLite's `INSERT OR REPLACE` is PostgreSQL's upsert.
pub(super) const CHECKPOINT_SQL: &str =
    "INSERT INTO checkpoints(task_id, completed_at) VALUES ($1, $2)
    ON CONFLICT (task_id) DO UPDATE SET completed_at = EXCLUDED.completed_at";
const OUTBOX_ENTRY_SQL: &str = "INSERT INTO outbox(task_id, idem_key, body, created_at)
    VALUES ($1, $2, $3, $4) ON CONFLICT (task_id) DO NOTHING";

/// SQLSTATEs after which the whole transaction is tried again: serialization failure,
/// deadlock, lock timeout (the other holder may be a killed worker's session being ended).
fn retryable(error: &postgres::Error) -> bool {
    error
        .code()
        .is_some_and(|c| matches!(c.code(), "40001" | "40P01" | "55P03"))
}

/// Runs `attempt` (one whole transaction) again after a retryable failure, a bounded number of
/// times.
pub(super) fn retry<T>(
    client: &mut Client,
    mut attempt: impl FnMut(&mut Client) -> Result<T, postgres::Error>,
) -> Result<T, postgres::Error> {
    let mut tries = 0;
    loop {
        match attempt(client) {
            Err(error) if retryable(&error) && tries < 20 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(5 * tries));
            }
            other => return other,
        }
    }
}

/// Claims a lane's schema before the night: creates it, with reclaim's mark, only if no schema
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
    let sql = format!(
        "CREATE SCHEMA {s}; COMMENT ON SCHEMA {s} IS '{MARK}'",
        s = quote_ident(schema)
    );
    client
        .batch_execute(&format!("BEGIN; {sql}; COMMIT"))
        .map_err(|e| WarehouseError::query("creating the night's schema", &e))
}

/// A worker's connection to its lane's schema, with the tables its strategy needs.
pub struct Sink {
    pub(super) client: Client,
    pub(super) strategy: &'static str,
}

impl Sink {
    /// Connects to the lane's schema (which must carry reclaim's mark) and makes the tables
    /// `needs` describes, or checks the ones there.
    pub fn open(
        server: &Server,
        schema: &str,
        needs: SchemaNeeds,
        outbox: bool,
    ) -> Result<Self, WarehouseError> {
        let mut client = server.connect_patiently(Some(schema))?;
        let mark: Option<String> = client
            .query_opt(
                "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1",
                &[&schema],
            )
            .map_err(|e| WarehouseError::query("reading the schema's mark", &e))?
            .and_then(|row| row.get(0));
        if mark.as_deref() != Some(MARK) {
            return Err(WarehouseError::Query {
                what: format!("schema {schema}"),
                detail: "it was not made by reclaim for this night (no reclaim mark); reclaim writes only into schemas it made".into(),
            });
        }
        let records =
            RECORDS_SQL.replace("{unique}", if needs.unique_key { " UNIQUE" } else { "" });
        let mut ddl = format!(
            "BEGIN; SELECT pg_advisory_xact_lock(hashtext({})); {records};",
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
        let facts = schema_facts(&mut client)
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
        Ok(Self {
            client,
            strategy: needs.strategy,
        })
    }

    /// Writes `rows` (task, payload, key) in one transaction: with `keyed`, `ON CONFLICT DO
    /// NOTHING`; with `checkpoint`, each row's checkpoint in the same transaction; with
    /// `outbox`, each row's entry (its body given) in it too. Returns the rows inserted.
    pub fn write_rows(
        &mut self,
        rows: &[(&str, &str, &str)],
        run_id: &str,
        keyed: bool,
        checkpoint: bool,
        outbox: Option<&[String]>,
    ) -> Result<u64, WarehouseError> {
        let strategy = self.strategy;
        let result = retry(&mut self.client, |client| {
            let mut tx = client.transaction()?;
            let insert = tx.prepare(if keyed { INSERT_KEYED_SQL } else { INSERT_SQL })?;
            // Prepared only where used: the tables a strategy does not need are not there.
            let mark = if checkpoint {
                Some(tx.prepare(CHECKPOINT_SQL)?)
            } else {
                None
            };
            let entry = if outbox.is_some() {
                Some(tx.prepare(OUTBOX_ENTRY_SQL)?)
            } else {
                None
            };
            let mut inserted = 0;
            for (i, (task, payload, key)) in rows.iter().enumerate() {
                let now = crate::heartbeat::unix_now();
                inserted += tx.execute(&insert, &[task, payload, key, &run_id, &now])?;
                if let Some(mark) = &mark {
                    // INVARIANT: with `checkpoint`, a row and its checkpoint commit together.
                    tx.execute(mark, &[task, &now])?;
                }
                if let (Some(entry), Some(body)) = (&entry, outbox.and_then(|b| b.get(i))) {
                    tx.execute(entry, &[task, key, body, &now])?;
                }
            }
            tx.commit()?;
            Ok(inserted)
        });
        result.map_err(|e| {
            if e.code().is_some_and(|c| c.code().starts_with("23")) {
                WarehouseError::Refused {
                    task: rows.first().map_or("?", |r| r.0).to_string(),
                    strategy,
                    detail: crate::warehouse::error::describe(&e),
                }
            } else {
                WarehouseError::query("writing rows", &e)
            }
        })
    }

    /// Commits a task's checkpoint in a transaction of its own (two-commit's second commit).
    pub fn write_checkpoint(&mut self, task: &str) -> Result<(), WarehouseError> {
        retry(&mut self.client, |client| {
            client
                .execute(CHECKPOINT_SQL, &[&task, &crate::heartbeat::unix_now()])
                .map(|_| ())
        })
        .map_err(|e| WarehouseError::query("writing a checkpoint", &e))
    }

    pub fn has_checkpoint(&mut self, task: &str) -> Result<bool, WarehouseError> {
        self.client
            .query_opt("SELECT 1 FROM checkpoints WHERE task_id = $1", &[&task])
            .map(|row| row.is_some())
            .map_err(|e| WarehouseError::query("reading a checkpoint", &e))
    }

    /// Every checkpointed task id, in one statement.
    pub fn checkpointed(&mut self) -> Result<Vec<String>, WarehouseError> {
        self.client
            .query("SELECT task_id FROM checkpoints", &[])
            .map(|rows| rows.iter().map(|r| r.get(0)).collect())
            .map_err(|e| WarehouseError::query("reading the checkpoints", &e))
    }

    /// The tasks among `tasks` with no checkpoint now.
    pub fn unchecked(&mut self, tasks: &[String]) -> Result<Vec<String>, WarehouseError> {
        let done: Vec<String> = self
            .client
            .query(
                "SELECT task_id FROM checkpoints WHERE task_id = ANY($1)",
                &[&tasks],
            )
            .map(|rows| rows.iter().map(|r| r.get(0)).collect())
            .map_err(|e| WarehouseError::query("reading the checkpoints", &e))?;
        Ok(tasks
            .iter()
            .filter(|t| !done.contains(t))
            .cloned()
            .collect())
    }

    /// The worker's own word at the end: the rows in the table.
    pub fn count(&mut self) -> Result<u64, WarehouseError> {
        self.client
            .query_one("SELECT count(*) FROM records", &[])
            .map(|row| row.get::<_, i64>(0) as u64)
            .map_err(|e| WarehouseError::query("counting the rows", &e))
    }
}

/// A string as a SQL literal.
#[must_use]
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// What the schema's catalogue says about the constraints, as `store::SchemaFacts` does for
/// SQLite; read on a connection whose search path is the lane's schema.
pub fn schema_facts(
    client: &mut impl postgres::GenericClient,
) -> Result<crate::warehouse::SchemaFacts, postgres::Error> {
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
    Ok(crate::warehouse::SchemaFacts {
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

/// The relay's side of the outbox on PostgreSQL (`worker::relay`).
pub struct Outbox {
    client: Client,
}

/// An outbox entry to deliver: task, key, body.
pub type Pending = (String, String, String);

impl Outbox {
    pub fn open(server: &Server, db: &std::path::Path) -> Result<Self, WarehouseError> {
        Ok(Self {
            client: server.connect_patiently(Some(&server.schema_for(db)))?,
        })
    }

    /// The first entry not yet sent, and how many entries there are (0 before the worker has
    /// made the table).
    pub fn next_pending(&mut self) -> Result<(Option<Pending>, u64), WarehouseError> {
        let failed = |e: postgres::Error| WarehouseError::query("reading the outbox", &e);
        // One snapshot for both reads: read apart, an entry committed between them would be
        // counted in the total and missing from the pending, and the relay would end without
        // delivering it.
        let mut tx = self
            .client
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .start()
            .map_err(failed)?;
        let there: bool = tx
            .query_one("SELECT to_regclass('outbox') IS NOT NULL", &[])
            .map_err(failed)?
            .get(0);
        if !there {
            return Ok((None, 0));
        }
        let total = tx
            .query_one("SELECT count(*) FROM outbox", &[])
            .map_err(failed)?
            .get::<_, i64>(0) as u64;
        let pending = tx
            .query_opt(
                "SELECT task_id, idem_key, body FROM outbox WHERE sent_at IS NULL ORDER BY task_id LIMIT 1",
                &[],
            )
            .map_err(failed)?
            .map(|r| (r.get(0), r.get(1), r.get(2)));
        tx.commit().map_err(failed)?;
        Ok((pending, total))
    }

    pub fn mark_sent(&mut self, task: &str) -> Result<(), WarehouseError> {
        self.client
            .execute(
                "UPDATE outbox SET sent_at = $2 WHERE task_id = $1",
                &[&task, &crate::heartbeat::unix_now()],
            )
            .map(|_| ())
            .map_err(|e| WarehouseError::query("marking an entry sent", &e))
    }
}
