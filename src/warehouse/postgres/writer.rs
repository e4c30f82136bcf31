//! A worker's writes on PostgreSQL, in its lane's schema: each in one transaction (READ
//! COMMITTED, the server's default: a unique violation between two workers waits for the
//! other's commit and then either inserts or, with `ON CONFLICT DO NOTHING`, does not), retried
//! whole after a serialization failure, a deadlock or a lock timeout. A batch of distinct tasks
//! is one statement (`one_statement`: its inserts as data-modifying CTEs, so the row, its
//! checkpoint and its outbox entry commit together or not at all), prepared once per
//! connection: one round trip per transaction. Anything else goes through `batch::write_in`
//! in an explicit transaction. The claim queue is `claim`'s.

use postgres::Client;

use super::Server;
use crate::heartbeat::unix_now;
use crate::task::{TaskBits, task_id};
use crate::warehouse::backend::Writer;
use crate::warehouse::batch::{Batch, Row, Statements, write_in};
use crate::warehouse::claim::{Fence, Lease, LeaseClock, Next};
use crate::warehouse::error::{StoreError, WarehouseError};
use crate::warehouse::schema::SchemaNeeds;

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

/// A worker's connection to its lane's schema, with the tables its strategy needs.
pub struct PgWriter {
    pub(super) client: Client,
    pub(super) strategy: &'static str,
    /// `one_statement`'s statements, prepared on this connection, by their shape.
    prepared: std::collections::HashMap<Shape, postgres::Statement>,
    /// Every other statement a worker runs once per item, prepared on this connection.
    cached: std::collections::HashMap<&'static str, postgres::Statement>,
}

/// What a batch writes beside its rows, which decides its statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Shape {
    ignore_conflicts: bool,
    checkpoint: bool,
    outbox: bool,
}

/// A batch's transaction as one statement: its rows (`$1` task ids, `$2` payloads, `$3` keys,
/// `$4` run id, `$5` the time), each one's checkpoint and outbox entry (`$6` bodies) when the
/// batch has them; returns the rows inserted. The same writes `batch::write_in` makes, in one
/// statement, which PostgreSQL runs as one transaction.
fn one_statement(shape: Shape) -> String {
    let mut sql = format!(
        "WITH r AS (INSERT INTO records(task_id, payload, idem_key, run_id, written_at)
           SELECT t, p, k, $4, $5 FROM unnest($1::text[], $2::text[], $3::text[]) AS u(t, p, k){}
           RETURNING 1)",
        if shape.ignore_conflicts {
            " ON CONFLICT (idem_key) DO NOTHING"
        } else {
            ""
        }
    );
    if shape.checkpoint {
        // INVARIANT: a checkpoint commits with its row: the same statement, or neither.
        sql.push_str(
            ", c AS (INSERT INTO checkpoints(task_id, completed_at)
               SELECT t, $5 FROM unnest($1::text[]) AS u(t)
               ON CONFLICT (task_id) DO UPDATE SET completed_at = EXCLUDED.completed_at)",
        );
    }
    if shape.outbox {
        // INVARIANT: an outbox entry commits with its row, or neither does.
        sql.push_str(
            ", o AS (INSERT INTO outbox(task_id, idem_key, body, created_at)
               SELECT t, k, b, $5 FROM unnest($1::text[], $3::text[], $6::text[]) AS u(t, k, b)
               ON CONFLICT (task_id) DO NOTHING)",
        );
    }
    sql.push_str(" SELECT count(*) FROM r");
    sql
}

impl PgWriter {
    /// Connects to the lane's schema (which must carry reclaim's mark) and makes the tables
    /// `needs` describes, or checks the ones there (`schema::prepare`).
    pub fn open(
        server: &Server,
        schema: &str,
        needs: SchemaNeeds,
        outbox: bool,
    ) -> Result<Self, WarehouseError> {
        let mut client = server.connect_patiently(Some(schema))?;
        super::schema::prepare(&mut client, schema, needs, outbox)?;
        Ok(Self {
            client,
            strategy: needs.strategy,
            prepared: std::collections::HashMap::new(),
            cached: std::collections::HashMap::new(),
        })
    }

    /// `sql`, prepared once on this connection (a statement prepared per use is a round trip
    /// more each time).
    fn cached(&mut self, sql: &'static str) -> Result<postgres::Statement, postgres::Error> {
        if let Some(statement) = self.cached.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        self.cached.insert(sql, statement.clone());
        Ok(statement)
    }
}

/// A batch's statements in one open transaction, prepared for it: only the tables it writes
/// (those a strategy does not need are not there).
struct Prepared<'t, 'c, 'b> {
    tx: &'t mut postgres::Transaction<'c>,
    insert: postgres::Statement,
    mark: Option<postgres::Statement>,
    entry: Option<postgres::Statement>,
    run_id: &'b str,
}

impl Statements for Prepared<'_, '_, '_> {
    type Error = postgres::Error;

    fn insert(&mut self, row: &Row, now: f64) -> Result<u64, postgres::Error> {
        let params: [&(dyn postgres::types::ToSql + Sync); 5] = [
            &row.task_id,
            &row.payload,
            &row.idem_key,
            &self.run_id,
            &now,
        ];
        self.tx.execute(&self.insert, &params)
    }

    fn checkpoint(&mut self, task: &str, now: f64) -> Result<(), postgres::Error> {
        if let Some(mark) = &self.mark {
            self.tx.execute(mark, &[&task, &now])?;
        }
        Ok(())
    }

    fn outbox_entry(&mut self, row: &Row, body: &str, now: f64) -> Result<(), postgres::Error> {
        if let Some(entry) = &self.entry {
            self.tx
                .execute(entry, &[&row.task_id, &row.idem_key, &body, &now])?;
        }
        Ok(())
    }
}

/// Writes `batch` inside `tx`, which the caller commits.
pub(super) fn write_batch(
    tx: &mut postgres::Transaction<'_>,
    batch: &Batch<'_>,
) -> Result<u64, postgres::Error> {
    let insert = tx.prepare(if batch.ignore_conflicts {
        INSERT_KEYED_SQL
    } else {
        INSERT_SQL
    })?;
    let mark = batch
        .checkpoint
        .then(|| tx.prepare(CHECKPOINT_SQL))
        .transpose()?;
    let entry = batch
        .outbox
        .map(|_| tx.prepare(OUTBOX_ENTRY_SQL))
        .transpose()?;
    let mut prepared = Prepared {
        tx,
        insert,
        mark,
        entry,
        run_id: batch.run_id,
    };
    write_in(&mut prepared, batch)
}

impl PgWriter {
    /// A failed write (`what`): a constraint that refused `task`'s row (the strategy did not
    /// expect it), or the server's error.
    pub(super) fn refused(
        &self,
        task: &str,
        what: &str,
        error: &postgres::Error,
    ) -> WarehouseError {
        if error.code().is_some_and(|c| c.code().starts_with("23")) {
            WarehouseError::Refused {
                task: task.to_string(),
                strategy: self.strategy,
                detail: crate::warehouse::error::describe(error),
            }
        } else {
            WarehouseError::query(what, error)
        }
    }
}

impl Writer for PgWriter {
    fn write(&mut self, batch: &Batch<'_>) -> Result<u64, StoreError> {
        let task = batch.rows.first().map_or("?", |r| r.task_id.as_str());
        let tasks: Vec<&str> = batch.rows.iter().map(|r| r.task_id.as_str()).collect();
        let distinct = tasks.iter().collect::<std::collections::HashSet<_>>().len() == tasks.len();
        let bodies = batch.outbox.filter(|b| b.len() >= batch.rows.len());
        if !distinct || (batch.outbox.is_some() && bodies.is_none()) {
            // One statement cannot upsert one checkpoint twice: an explicit transaction.
            let result = retry(&mut self.client, |client| {
                let mut tx = client.transaction()?;
                let inserted = write_batch(&mut tx, batch)?;
                tx.commit()?;
                Ok(inserted)
            });
            return Ok(result.map_err(|e| self.refused(task, "writing rows", &e))?);
        }
        let shape = Shape {
            ignore_conflicts: batch.ignore_conflicts,
            checkpoint: batch.checkpoint,
            outbox: bodies.is_some(),
        };
        let statement = if let Some(statement) = self.prepared.get(&shape) {
            statement.clone()
        } else {
            let statement = self
                .client
                .prepare(&one_statement(shape))
                .map_err(|e| WarehouseError::query("preparing the write", &e))?;
            self.prepared.insert(shape, statement.clone());
            statement
        };
        let payloads: Vec<&str> = batch.rows.iter().map(|r| r.payload.as_str()).collect();
        let keys: Vec<&str> = batch.rows.iter().map(|r| r.idem_key.as_str()).collect();
        let bodies: Vec<&str> = bodies.map_or_else(Vec::new, |b| {
            b.iter().take(tasks.len()).map(String::as_str).collect()
        });
        let run_id = batch.run_id;
        let result = retry(&mut self.client, |client| {
            let now = unix_now();
            let params: [&(dyn postgres::types::ToSql + Sync); 6] =
                [&tasks, &payloads, &keys, &run_id, &now, &bodies];
            let params = if shape.outbox {
                &params[..]
            } else {
                &params[..5]
            };
            client
                .query_one(&statement, params)
                .map(|row| row.get::<_, i64>(0).cast_unsigned())
        });
        Ok(result.map_err(|e| self.refused(task, "writing rows", &e))?)
    }

    fn write_checkpoint(&mut self, task: &str) -> Result<(), StoreError> {
        let failed = |e: postgres::Error| WarehouseError::query("writing a checkpoint", &e);
        let statement = self.cached(CHECKPOINT_SQL).map_err(failed)?;
        Ok(retry(&mut self.client, |client| {
            client
                .execute(&statement, &[&task, &unix_now()])
                .map(|_| ())
        })
        .map_err(failed)?)
    }

    fn has_checkpoint(&mut self, task: &str) -> Result<bool, StoreError> {
        let failed = |e: postgres::Error| WarehouseError::query("reading a checkpoint", &e);
        let statement = self
            .cached("SELECT 1 FROM checkpoints WHERE task_id = $1")
            .map_err(failed)?;
        Ok(self
            .client
            .query_opt(&statement, &[&task])
            .map(|row| row.is_some())
            .map_err(failed)?)
    }

    /// Every checkpoint, in one statement. PostgreSQL has no `data_version`: no mark, so every
    /// later window is looked up.
    fn checkpointed(&mut self, items: u64) -> Result<(TaskBits, Option<i64>), StoreError> {
        let tasks: Vec<String> = self
            .client
            .query("SELECT task_id FROM checkpoints", &[])
            .map(|rows| rows.iter().map(|r| r.get(0)).collect())
            .map_err(|e| WarehouseError::query("reading the checkpoints", &e))?;
        Ok((TaskBits::of(tasks.iter().map(String::as_str), items), None))
    }

    fn changed_since(&mut self, _mark: i64) -> Result<bool, StoreError> {
        Ok(true)
    }

    fn unchecked(&mut self, candidates: &[u64]) -> Result<Vec<u64>, StoreError> {
        let tasks: Vec<String> = candidates.iter().map(|&i| task_id(i)).collect();
        let statement = self
            .cached("SELECT task_id FROM checkpoints WHERE task_id = ANY($1)")
            .map_err(|e| WarehouseError::query("reading the checkpoints", &e))?;
        let done: Vec<String> = self
            .client
            .query(&statement, &[&tasks])
            .map(|rows| rows.iter().map(|r| r.get(0)).collect())
            .map_err(|e| WarehouseError::query("reading the checkpoints", &e))?;
        Ok(candidates
            .iter()
            .zip(&tasks)
            .filter(|(_, task)| !done.contains(task))
            .map(|(&index, _)| index)
            .collect())
    }

    fn count(&mut self) -> Result<u64, StoreError> {
        Ok(self
            .client
            .query_one("SELECT count(*) FROM records", &[])
            .map(|row| row.get::<_, i64>(0).cast_unsigned())
            .map_err(|e| WarehouseError::query("counting the rows", &e))?)
    }

    fn after_commit(&mut self) {}

    fn prepare_claims(&mut self) -> Result<(), StoreError> {
        Ok(self.claim_setup()?)
    }

    fn claim_next(&mut self, me: &str, items: u64, clock: LeaseClock) -> Result<Next, StoreError> {
        Ok(PgWriter::claim_next(self, me, items, clock)?)
    }

    fn claim_commit(
        &mut self,
        claimed: (Lease, Fence),
        me: &str,
        row: &Row,
    ) -> Result<bool, StoreError> {
        Ok(PgWriter::claim_commit(self, claimed, me, row)?)
    }

    /// Never reached: a worker with `--split` is refused at `open` on PostgreSQL.
    fn steps_done(&mut self, _task: &str) -> Result<u64, StoreError> {
        Err(WarehouseError::NotYet { what: "--split" }.into())
    }

    fn mark_step(&mut self, _task: &str, _step: u64) -> Result<(), StoreError> {
        Err(WarehouseError::NotYet { what: "--split" }.into())
    }
}
