//! Someone else's job (`--exec`) on PostgreSQL: the connection handed to it in the variables
//! libpq and most drivers read (`DATABASE_URL`, `PGHOST`, ...), its lane's schema first on its
//! search path; its `--setup-sql` run in that schema; its table followed and judged there, by
//! its key or by `--count-sql`, as on SQLite (`store::inspect::inspect_rows`).

use std::path::Path;

use postgres::{Client, GenericClient};

use super::{Server, WarehouseError, quote_ident};
use crate::queue::Queue;
use crate::store::inspect::{Inspection, Judged};
use crate::store::rows::RowSource;

/// What a job's table holds now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobRead {
    /// The job has not made its table yet.
    NoTable,
    /// Each key (as text) with its rows.
    Keys(Vec<(Option<String>, u64)>),
    /// `--count-sql`'s `(rows, distinct)`.
    Counted(u64, u64),
}

/// The variables a job is given to reach its lane's schema: the server in libpq's own
/// variables and as `DATABASE_URL`, and `PGOPTIONS` putting the schema first on the search
/// path and bounding each statement, as reclaim's own connections are.
#[must_use]
pub fn job_env(server: &Server, db: &Path) -> Vec<(&'static str, String)> {
    let mut env = Vec::new();
    let Ok(config) = server.conninfo.parse::<postgres::Config>() else {
        return env;
    };
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
    let url = if server.conninfo.contains("://") {
        server.conninfo.clone()
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
    let there: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1)",
            &[&table],
        )
        .map_err(failed)?
        .get(0);
    if !there {
        return Ok(None);
    }
    let deleted = client
        .execute(&format!("DELETE FROM {}", quote_ident(table)), &[])
        .map_err(failed)?;
    Ok(Some(usize::try_from(deleted).unwrap_or(usize::MAX)))
}

/// The observer's connection to a job's lane.
pub struct JobFollow {
    schema: String,
    client: Option<Client>,
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
    pub fn new(server: &Server, db: &Path) -> Self {
        Self {
            schema: server.schema_for(db),
            client: None,
        }
    }

    /// What the job's table holds now, read in one snapshot.
    pub fn read(&mut self, server: &Server, source: &RowSource) -> Result<JobRead, WarehouseError> {
        if self.client.is_none() {
            self.client = Some(server.connect(Some(&self.schema))?);
        }
        let Some(client) = self.client.as_mut() else {
            return Ok(JobRead::NoTable);
        };
        let result = read_in_snapshot(client, source);
        if result.is_err() {
            // A broken session (a server restarted, say) is opened afresh next time.
            self.client = None;
        }
        result
    }
}

fn read_in_snapshot(client: &mut Client, source: &RowSource) -> Result<JobRead, WarehouseError> {
    let failed = |e: postgres::Error| WarehouseError::query("reading the job's table", &e);
    let mut tx = client
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(failed)?;
    let read = read_job(&mut tx, source)?;
    tx.commit().map_err(failed)?;
    Ok(read)
}

/// The job's rows by key (or counted by `--count-sql`), inside the caller's transaction.
fn read_job(
    client: &mut impl GenericClient,
    source: &RowSource,
) -> Result<JobRead, WarehouseError> {
    if let Some(sql) = &source.count_sql {
        let wrong = |detail: String| WarehouseError::Query {
            what: "--count-sql".into(),
            detail,
        };
        let row = client
            .query_opt(sql.as_str(), &[])
            .map_err(|e| wrong(super::describe(&e)))?
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
        return Ok(JobRead::Counted(number(0)?, number(1)?));
    }
    let failed = |e: postgres::Error| WarehouseError::query("reading the job's table", &e);
    let there: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1)",
            &[&source.table],
        )
        .map_err(failed)?
        .get(0);
    if !there {
        return Ok(JobRead::NoTable);
    }
    let columns: Vec<String> = client
        .query(
            "SELECT column_name::text FROM information_schema.columns
             WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position",
            &[&source.table],
        )
        .map_err(failed)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if !columns.iter().any(|c| c == &source.key) {
        return Err(WarehouseError::Query {
            what: format!("table {}", crate::text::escape_controls(&source.table)),
            detail: format!(
                "it has no column {} (its columns: {})",
                crate::text::escape_controls(&source.key),
                crate::text::escape_controls(&columns.join(", "))
            ),
        });
    }
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
    Ok(JobRead::Keys(groups))
}

/// The verdict's facts about a job's lane on PostgreSQL, by the rule `store::inspect_rows`
/// applies on SQLite: keys matched to the queue, or counts alone with `--count-sql`.
pub fn inspect_rows(
    server: &Server,
    db: &Path,
    queue: &Queue,
    source: &RowSource,
) -> Result<Inspection, WarehouseError> {
    let mut client = server.connect(Some(&server.schema_for(db)))?;
    let read = read_in_snapshot(&mut client, source)?;
    let items = queue.len();
    let (rows, distinct, duplicated, outside, judged) = match read {
        JobRead::NoTable => {
            return Err(WarehouseError::Query {
                what: format!("schema {}", server.schema_for(db)),
                detail: format!(
                    "the job never made its table {}",
                    crate::text::escape_controls(&source.table)
                ),
            });
        }
        JobRead::Counted(rows, distinct) => (
            rows,
            distinct.min(items),
            rows.saturating_sub(distinct),
            distinct.saturating_sub(items),
            Judged::Counts,
        ),
        JobRead::Keys(groups) => {
            let (mut rows, mut distinct, mut duplicated, mut outside) = (0, 0, 0, 0u64);
            for (key, count) in groups {
                rows += count;
                // INVARIANT: one group per key, so `distinct` never exceeds the queue.
                match key.and_then(|k| queue.index_of(&k)) {
                    Some(_) => {
                        distinct += 1;
                        if count > 1 {
                            duplicated += 1;
                        }
                    }
                    None => outside = outside.saturating_add(count),
                }
            }
            (rows, distinct, duplicated, outside, Judged::Keys)
        }
    };
    let missing = items.saturating_sub(distinct);
    let in_queue = rows.saturating_sub(outside);
    let mut inspection = Inspection {
        db: db.to_path_buf(),
        items,
        rows,
        distinct,
        duplicated_task_ids: duplicated,
        extra_rows: in_queue.saturating_sub(distinct),
        missing,
        unexpected: outside,
        checkpoints: None,
        rows_without_checkpoint: None,
        checkpoints_without_row: None,
        runs: 0,
        schema: crate::store::schema::SchemaFacts::default(),
        // Nothing checked the pages, and nothing is claimed of them (`pg_inspect::NOT_CHECKED`).
        integrity_ok: true,
        integrity: super::pg_inspect::NOT_CHECKED.into(),
        consistent: false,
        judged,
        queue: Some(queue.describe()),
    };
    inspection.consistent = inspection.derived().is_ok();
    Ok(inspection)
}
