//! Someone else's job (`--exec`) on PostgreSQL: the connection handed to it in the variables
//! libpq and most drivers read (`DATABASE_URL`, `PGHOST`, ...), its lane's schema first on its
//! search path; its `--setup-sql` run in that schema; its table followed and judged there, by
//! its key or by `--count-sql`, as on SQLite (`sqlite::inspect::inspect_rows`).

use std::path::Path;
use std::time::{Duration, Instant};

use postgres::{Client, GenericClient};

use super::{Server, quote_ident};
use crate::queue::Queue;
use crate::warehouse::backend::{CheckpointRead, JobFollower, JobRead, JobRows};
use crate::warehouse::error::{StoreError, WarehouseError};
use crate::warehouse::inspection::{Inspection, Judged, Matched};
use crate::warehouse::source::RowSource;

/// The variables a job is given to reach its lane's schema: the server in libpq's own
/// variables and as `DATABASE_URL`, and `PGOPTIONS` putting the schema first on the search
/// path and bounding each statement, as reclaim's own connections are.
#[must_use]
pub fn job_env(server: &Server, db: &Path) -> Vec<(&'static str, String)> {
    let mut env = Vec::new();
    let Ok(prepared) = server.conninfo.config() else {
        return env;
    };
    let config = prepared.config;
    let host = config.get_hosts().first().map(|h| match h {
        postgres::config::Host::Tcp(name) => name.clone(),
        postgres::config::Host::Unix(path) => path.display().to_string(),
    });
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("postgres").to_string();
    let dbname = config.get_dbname().unwrap_or(&user).to_string();
    let schema = server.schema_for(db);
    if let Some(host) = &host {
        env.push(("PGHOST", host.clone()));
    }
    env.push(("PGPORT", port.to_string()));
    env.push(("PGUSER", user.clone()));
    env.push(("PGDATABASE", dbname.clone()));
    if let Some(password) = config.get_password() {
        env.push(("PGPASSWORD", String::from_utf8_lossy(password).into_owned()));
    }
    env.push(("PGSSLMODE", prepared.tls.mode.as_str().to_string()));
    if let Some(rootcert) = &prepared.tls.rootcert {
        env.push(("PGSSLROOTCERT", rootcert.as_str()));
    }
    env.push((
        "PGCONNECT_TIMEOUT",
        super::CONNECT_TIMEOUT.as_secs().to_string(),
    ));
    env.push((
        "PGOPTIONS",
        format!(
            "-c search_path={schema} -c statement_timeout={} -c lock_timeout={}",
            super::STATEMENT_TIMEOUT_MS,
            super::LOCK_TIMEOUT_MS
        ),
    ));
    // The URL names the server; libpq takes the schema and bounds from PGOPTIONS beside it.
    let url = if server.conninfo.is_url() {
        server.conninfo.expose().to_string()
    } else {
        let host = host
            .map(|h| format!("host={}&", encode(&h)))
            .unwrap_or_default();
        format!(
            "postgresql://{}@/{}?{host}port={port}",
            encode(&user),
            encode(&dbname)
        )
    };
    env.push(("DATABASE_URL", url));
    env
}

/// Percent-encodes what a URL's parts may not hold as they are.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Runs the job's `--setup-sql` in its lane's schema, before the night (bounded like every
/// statement reclaim runs).
pub fn run_setup(server: &Server, db: &Path, sql: &str) -> Result<(), WarehouseError> {
    let mut client = server.connect(Some(&server.schema_for(db)))?;
    client
        .batch_execute(&format!("BEGIN; {sql}; COMMIT"))
        .map_err(|e| WarehouseError::query("running --setup-sql", &e))
}

/// Deletes every row of the job's `table` in its lane's schema (prove's wiped checkpoints):
/// how many, or `None` when the job never made that table.
pub fn wipe_table(
    server: &Server,
    db: &Path,
    table: &str,
) -> Result<Option<usize>, WarehouseError> {
    let mut client = server.connect(Some(&server.schema_for(db)))?;
    let failed = |e: postgres::Error| WarehouseError::query("deleting the job's checkpoints", &e);
    if !table_exists(&mut client, table).map_err(failed)? {
        return Ok(None);
    }
    let deleted = client
        .execute(&format!("DELETE FROM {}", quote_ident(table)), &[])
        .map_err(failed)?;
    Ok(Some(usize::try_from(deleted).unwrap_or(usize::MAX)))
}

/// `--keys-sql` on the server: the job's `--setup-sql`, then the query, in a schema of their
/// own inside one transaction that is rolled back (the trial SQLite makes in memory): nothing is
/// left on the server. The query runs read-only, within `COUNT_LIMIT`, and must return one
/// column of text or integer keys; what it returns is checked as any listed queue is.
pub fn keys_from_sql(
    server: &Server,
    setup: Option<&str>,
    sql: &str,
) -> Result<Queue, WarehouseError> {
    let wrong = |detail: String| WarehouseError::Query {
        what: "--keys-sql".into(),
        detail,
    };
    // Under the night's prefix, so it cannot be someone's schema on a server (the prefix was
    // checked free); gone with the rollback.
    let trial = format!("{}_keys_trial", server.prefix);
    let mut client = server.connect(None)?;
    let mut tx = client
        .transaction()
        .map_err(|e| WarehouseError::query("starting the --keys-sql trial", &e))?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA {0}; SET LOCAL search_path TO {0}",
        quote_ident(&trial)
    ))
    .map_err(|e| WarehouseError::query("making the --keys-sql trial's schema", &e))?;
    if let Some(setup) = setup {
        tx.batch_execute(setup).map_err(|e| WarehouseError::Query {
            what: "--setup-sql (tried for --keys-sql on the server)".into(),
            detail: crate::warehouse::error::describe(&e),
        })?;
    }
    tx.batch_execute(&format!(
        "SET LOCAL transaction_read_only = on; SET LOCAL statement_timeout = {}",
        crate::warehouse::source::COUNT_LIMIT.as_millis()
    ))
    .map_err(|e| WarehouseError::query("bounding --keys-sql", &e))?;
    let statement = tx
        .prepare(sql)
        .map_err(|e| wrong(crate::warehouse::error::describe(&e)))?;
    if statement.columns().len() != 1 {
        return Err(wrong(format!(
            "returns {} columns; it must return one, the key",
            statement.columns().len()
        )));
    }
    let rows = tx
        .query(&statement, &[])
        .map_err(|e| wrong(crate::warehouse::error::describe(&e)))?;
    let mut keys = Vec::with_capacity(rows.len());
    for (n, row) in rows.iter().enumerate() {
        let key = row
            .try_get::<_, Option<String>>(0)
            .ok()
            .flatten()
            .or_else(|| {
                row.try_get::<_, Option<i64>>(0)
                    .ok()
                    .flatten()
                    .map(|k| k.to_string())
            })
            .or_else(|| {
                row.try_get::<_, Option<i32>>(0)
                    .ok()
                    .flatten()
                    .map(|k| k.to_string())
            })
            .or_else(|| {
                row.try_get::<_, Option<i16>>(0)
                    .ok()
                    .flatten()
                    .map(|k| k.to_string())
            })
            .ok_or_else(|| {
                wrong(format!(
                    "row {} is not a text or integer key (NULL, or another type)",
                    n + 1
                ))
            })?;
        keys.push(key);
    }
    drop(statement);
    tx.rollback()
        .map_err(|e| WarehouseError::query("ending the --keys-sql trial", &e))?;
    // A setup that commits on its own (a COMMIT in it) would have kept the trial's schema.
    let left: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
            &[&trial],
        )
        .map_err(|e| WarehouseError::query("checking the --keys-sql trial", &e))?
        .get(0);
    if left {
        return Err(WarehouseError::Query {
            what: "--setup-sql (tried for --keys-sql on the server)".into(),
            detail: format!(
                "it ends its own transaction (COMMIT), so its trial schema {trial} was kept; take the COMMIT out"
            ),
        });
    }
    Queue::listed(&keys, "--keys-sql").map_err(|e| match e {
        crate::queue::QueueError::List { detail, .. } => wrong(detail),
        other => wrong(other.to_string()),
    })
}

/// How often a job's table on PostgreSQL is read (whole, by key).
const READ_EVERY: Duration = Duration::from_millis(100);

/// The observer's connection to a job's lane: its table read whole by key (or counted by
/// `--count-sql`) in one snapshot, at most every `READ_EVERY`.
pub struct JobFollow {
    server: Server,
    schema: String,
    source: RowSource,
    client: Option<Client>,
    /// When the table was last read.
    last: Option<Instant>,
}

impl std::fmt::Debug for JobFollow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobFollow")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl JobFollow {
    #[must_use]
    pub fn new(server: &Server, db: &Path, source: &RowSource) -> Self {
        Self {
            server: server.clone(),
            schema: server.schema_for(db),
            source: source.clone(),
            client: None,
            last: None,
        }
    }
}

impl JobFollower for JobFollow {
    /// What the job's table (and its checkpoint table, when named) holds now, in one snapshot.
    fn read(&mut self) -> Result<Option<JobRead>, StoreError> {
        if self.last.is_some_and(|at| at.elapsed() < READ_EVERY) {
            return Ok(None);
        }
        self.last = Some(Instant::now());
        if self.client.is_none() {
            self.client = Some(self.server.connect(Some(&self.schema))?);
        }
        let Some(client) = self.client.as_mut() else {
            return Ok(None);
        };
        let result = read_in_snapshot(client, &self.source);
        if result.is_err() {
            // A broken session (a server restarted, say) is opened afresh next time.
            self.client = None;
        }
        let (rows, checkpoints) = result?;
        Ok(Some(JobRead {
            rows: match rows {
                TableRead::NoTable => JobRows::NoTable,
                TableRead::Keys(groups) => JobRows::Keys(groups),
                TableRead::Counted(rows, distinct) => JobRows::Counted(rows, distinct),
            },
            // Read whole each time: the totals start again from what the table holds now.
            checkpoints: checkpoints.map(|keys| CheckpointRead { keys, wiped: true }),
            complete: true,
        }))
    }

    fn read_all_next(&mut self) {
        self.last = None;
    }

    /// The session stays: a server's sessions see each commit as it lands.
    fn release(&mut self) {}

    /// Nothing to forget: the checkpoints are read whole each time.
    fn forget_checkpoints(&mut self) {}

    /// Read whole by key, no order of arrival: issue 46's identity column would give one.
    fn in_arrival_order(&self) -> bool {
        false
    }

    /// A server's locks are not SQLite's: nothing of reclaim's to say.
    fn lock_said(&self, _line: &str) -> Option<&'static str> {
        None
    }
}

/// What a job's table holds now.
enum TableRead {
    /// The job has not made its table yet.
    NoTable,
    /// Each key (as text) with its rows.
    Keys(Vec<(Option<String>, u64)>),
    /// `--count-sql`'s `(rows, distinct)`.
    Counted(u64, u64),
}

/// A job's rows, and the keys in its checkpoint table (`None` when no table was named or the
/// job has not made it yet), read in one snapshot.
fn read_in_snapshot(
    client: &mut Client,
    source: &RowSource,
) -> Result<(TableRead, Option<Vec<String>>), WarehouseError> {
    let failed = |e: postgres::Error| WarehouseError::query("reading the job's table", &e);
    let mut tx = client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(failed)?;
    let rows = read_job(&mut tx, source)?;
    let checkpoints = match &source.checkpoints {
        Some(named) => match read_checkpoints(&mut tx, &named.table, &named.key) {
            Ok(read) => read,
            // A guessed table of another shape is not the job's checkpoints: unread.
            Err(WarehouseError::NoColumn { .. }) if named.guessed => None,
            Err(error) => return Err(error),
        },
        None => None,
    };
    tx.commit().map_err(failed)?;
    Ok((rows, checkpoints))
}

/// Whether `table` is a table of the current schema (the night's, on the search path).
fn table_exists(client: &mut impl GenericClient, table: &str) -> Result<bool, postgres::Error> {
    Ok(client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1)",
            &[&table],
        )?
        .get(0))
}

/// The columns of `table` in the current schema; `None` when there is no such table.
fn columns_of(
    client: &mut impl GenericClient,
    table: &str,
) -> Result<Option<Vec<String>>, WarehouseError> {
    let failed = |e: postgres::Error| WarehouseError::query("reading the job's table", &e);
    if !table_exists(client, table).map_err(failed)? {
        return Ok(None);
    }
    let columns = client
        .query(
            "SELECT column_name::text FROM information_schema.columns
             WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position",
            &[&table],
        )
        .map_err(failed)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    Ok(Some(columns))
}

/// A column the job's table must have (`flag` names it), refused by name (with the columns it
/// has) otherwise.
fn require_column(
    table: &str,
    columns: &[String],
    (key, flag): (&str, &'static str),
) -> Result<(), WarehouseError> {
    if columns.iter().any(|c| c == key) {
        return Ok(());
    }
    Err(WarehouseError::NoColumn {
        table: crate::base::text::escape_controls(table),
        key: crate::base::text::escape_controls(key),
        flag,
        columns: crate::base::text::escape_controls(&columns.join(", ")),
    })
}

/// The distinct keys of the job's checkpoint table, as text (`None` before the job made it).
fn read_checkpoints(
    client: &mut impl GenericClient,
    table: &str,
    key: &str,
) -> Result<Option<Vec<String>>, WarehouseError> {
    let Some(columns) = columns_of(client, table)? else {
        return Ok(None);
    };
    require_column(table, &columns, (key, "--checkpoint-key"))?;
    let sql = format!(
        "SELECT DISTINCT CAST({} AS text) FROM {} WHERE {0} IS NOT NULL",
        quote_ident(key),
        quote_ident(table)
    );
    let keys = client
        .query(sql.as_str(), &[])
        .map_err(|e| WarehouseError::query("reading the job's checkpoints", &e))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    Ok(Some(keys))
}

/// The job's rows by key (or counted by `--count-sql`), inside the caller's transaction.
fn read_job(
    client: &mut impl GenericClient,
    source: &RowSource,
) -> Result<TableRead, WarehouseError> {
    if let Some(sql) = &source.count_sql {
        let wrong = |detail: String| WarehouseError::Query {
            what: "--count-sql".into(),
            detail,
        };
        let row = client
            .query_opt(sql.as_str(), &[])
            .map_err(|e| wrong(crate::warehouse::error::describe(&e)))?
            .ok_or_else(|| wrong("it returned no row".into()))?;
        if row.len() != 2 {
            return Err(wrong(format!(
                "it returns {} columns, not two (rows, distinct)",
                row.len()
            )));
        }
        let number = |i: usize| -> Result<u64, WarehouseError> {
            let n = row
                .try_get::<_, i64>(i)
                .or_else(|_| row.try_get::<_, i32>(i).map(i64::from))
                .map_err(|_| wrong(format!("column {} is not a count", i + 1)))?;
            u64::try_from(n).map_err(|_| wrong(format!("column {} is negative", i + 1)))
        };
        return Ok(TableRead::Counted(number(0)?, number(1)?));
    }
    let failed = |e: postgres::Error| WarehouseError::query("reading the job's table", &e);
    let Some(columns) = columns_of(client, &source.table)? else {
        return Ok(TableRead::NoTable);
    };
    require_column(&source.table, &columns, (&source.key, "--key"))?;
    let sql = format!(
        "SELECT CAST({key} AS text), count(*) FROM {table} GROUP BY 1",
        key = quote_ident(&source.key),
        table = quote_ident(&source.table)
    );
    let groups = client
        .query(sql.as_str(), &[])
        .map_err(failed)?
        .iter()
        .map(|r| (r.get(0), r.get::<_, i64>(1).cast_unsigned()))
        .collect();
    Ok(TableRead::Keys(groups))
}

/// The verdict's facts about a job's lane on PostgreSQL, counted and judged as
/// `sqlite::inspect::inspect_rows` does on SQLite: keys matched to the queue, or counts alone
/// with `--count-sql`.
pub fn inspect_rows(
    server: &Server,
    db: &Path,
    queue: &Queue,
    source: &RowSource,
) -> Result<Inspection, WarehouseError> {
    let mut client = server.connect(Some(&server.schema_for(db)))?;
    let read = read_in_snapshot(&mut client, source)?.0;
    let counted = match read {
        TableRead::NoTable => {
            return Err(WarehouseError::Query {
                what: format!("schema {}", server.schema_for(db)),
                detail: format!(
                    "the job never made its table {}",
                    crate::base::text::escape_controls(&source.table)
                ),
            });
        }
        TableRead::Counted(rows, distinct) => (
            Matched::counted(rows, distinct, queue.len()),
            Judged::Counts,
        ),
        TableRead::Keys(groups) => {
            let mut matched = Matched::default();
            for (key, count) in groups {
                matched.add(key.as_deref(), count, queue);
            }
            (matched, Judged::Keys)
        }
    };
    Ok(Inspection::of_job(
        db,
        queue,
        counted,
        super::inspect::not_checked(),
    ))
}
