//! What can go wrong in a warehouse, on either engine: `StoreError`, what every operation
//! returns (a SQLite file refused or failing, a job's table of the wrong shape, or the server's
//! `WarehouseError`), and how a PostgreSQL error is read (`describe`, `is_lost`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::ErrorCode;
use thiserror::Error;

use crate::base::paths::PathError;
use crate::queue::QueueError;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error(
        "{log} is there beside a new, empty database {path}; SQLite would replay it into the new file, so reclaim leaves both untouched: move it away or choose another --db path"
    )]
    OrphanLog { path: PathBuf, log: PathBuf },
    #[error("cannot copy {path} to read it without changing it: {message}")]
    Copy { path: PathBuf, message: String },
    #[error("database {0} does not exist")]
    Missing(PathBuf),
    #[error(
        "{path}: table {table} has no column {key} (--key); its columns are {columns}: name the column that identifies a unit of work with --key, or count with --count-sql"
    )]
    NoKeyColumn {
        path: PathBuf,
        table: String,
        key: String,
        columns: String,
    },
    #[error(
        "{path}: checkpoint table {table} has no column {key} (--checkpoint-key); its columns are {columns}: name the column that holds each checkpoint's key with --checkpoint-key"
    )]
    NoCheckpointKeyColumn {
        path: PathBuf,
        table: String,
        key: String,
        columns: String,
    },
    #[error(
        "{path}: the job never created table {table} (--table), so there are no rows to judge; name the table it writes with --table (it runs in the database's folder, with RECLAIM_DB set), or create it with --setup-sql"
    )]
    NoTable { path: PathBuf, table: String },
    #[error(
        "{path}: table {table} (--table) is gone at the end of the night: reclaim had seen it (with {rows} rows), so the job dropped it, and there are no rows to judge"
    )]
    TableGone {
        path: PathBuf,
        table: String,
        rows: u64,
    },
    #[error("{path}: --count-sql must return one row (rows, distinct): {detail}")]
    CountSql { path: PathBuf, detail: String },
    /// `--count-sql` stopped at its time limit (`source::COUNT_LIMIT`).
    #[error("{path}: {detail}")]
    CountSqlTooLong { path: PathBuf, detail: String },
    #[error("{path}: --setup-sql failed: {detail}")]
    Setup { path: PathBuf, detail: String },
    #[error("{0} is not a SQLite database; reclaim leaves it untouched")]
    NotSqlite(PathBuf),
    #[error("{path} is a corrupt SQLite database ({detail}); reclaim leaves it untouched")]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "{path} holds tables reclaim did not create ({tables}); reclaim leaves it untouched, use a new --db path"
    )]
    Foreign { path: PathBuf, tables: String },
    #[error("{path} has no records table, so it is not a reclaim warehouse")]
    NotWarehouse { path: PathBuf },
    #[error(
        "{path}: table {table} has no column {column}, so reclaim did not create it; use a new --db path"
    )]
    MissingColumn {
        path: PathBuf,
        table: &'static str,
        column: &'static str,
    },
    #[error(
        "{path}: the existing {table} table lacks {constraint}, which the {strategy} strategy relies on (CREATE TABLE IF NOT EXISTS would keep it silently); refusing before any row is written, use a new --db path"
    )]
    MissingConstraint {
        path: PathBuf,
        table: &'static str,
        constraint: &'static str,
        strategy: &'static str,
    },
    #[error(
        "{path}: its rows carry idempotency keys of another form ({task} is keyed {found:?}, reclaim would key it {expected:?}), perhaps from an earlier reclaim; the {strategy} strategy's unique key could not catch a duplicate of them, so reclaim leaves it untouched, use a new --db path"
    )]
    KeyForm {
        path: PathBuf,
        task: String,
        found: String,
        expected: String,
        strategy: &'static str,
    },
    #[error(
        "{path}: records has a NOT NULL column {column} with no default, which reclaim's workers do not write, so reclaim did not create it; it leaves it untouched, use a new --db path"
    )]
    ExtraColumn { path: PathBuf, column: String },
    #[error(
        "{path}: {table}.{column} is declared {found}, not TEXT, so reclaim did not create this table (its ids would not be reclaim's); reclaim leaves it untouched, use a new --db path"
    )]
    ColumnType {
        path: PathBuf,
        table: &'static str,
        column: &'static str,
        found: String,
    },
    #[error(
        "{task}: the database refused the row ({source}); this warehouse has a constraint the {strategy} strategy does not expect"
    )]
    Refused {
        task: String,
        strategy: &'static str,
        #[source]
        source: rusqlite::Error,
    },
    #[error(transparent)]
    Warehouse(#[from] WarehouseError),
    /// Reading the tables' final state for `--compare` failed or went past its bounds.
    #[error("{path}: reading the tables to compare: {detail}")]
    State { path: PathBuf, detail: String },
    #[error("{path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
}

impl StoreError {
    /// A table of the job's without the column it was said to have, or a `--count-sql` that
    /// took its whole time limit: the same on every poll (a count only grows with the rows),
    /// so the night cannot be judged and is stopped at the first look, after one time limit
    /// rather than one per poll and another at the end.
    #[must_use]
    pub fn is_wrong_shape(&self) -> bool {
        matches!(
            self,
            Self::NoKeyColumn { .. }
                | Self::NoCheckpointKeyColumn { .. }
                | Self::CountSqlTooLong { .. }
                | Self::Warehouse(WarehouseError::NoColumn { .. })
        )
    }

    /// A `NoTable` at the end of a night whose table the observer had seen (`seen`, with `rows`
    /// rows) is a table the job dropped: said so, never "never created".
    #[must_use]
    pub fn seen_before(self, seen: bool, rows: u64) -> Self {
        match self {
            Self::NoTable { path, table } if seen => Self::TableGone { path, table, rows },
            other => other,
        }
    }

    /// Wraps a SQLite error, naming corruption and foreign files as such.
    #[must_use]
    pub fn sqlite(path: &Path, source: rusqlite::Error) -> Self {
        match source.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => Self::NotSqlite(path.to_path_buf()),
            Some(ErrorCode::DatabaseCorrupt) => Self::Corrupt {
                path: path.to_path_buf(),
                detail: source.to_string(),
            },
            _ => Self::Sqlite {
                path: path.to_path_buf(),
                source,
            },
        }
    }
}

#[derive(Debug, Error)]
pub enum WarehouseError {
    #[error("PostgreSQL at {target}: {detail}")]
    Connect { target: String, detail: String },
    #[error(
        "PostgreSQL at {target} is version {found}; reclaim needs 13 or later (pg_current_snapshot)"
    )]
    TooOld { target: String, found: String },
    #[error(
        "schema {schema} already exists on {target}{holding}; reclaim works only in schemas it creates for the night, so it leaves it untouched: give another --pg-schema"
    )]
    SchemaExists {
        target: String,
        schema: String,
        holding: &'static str,
    },
    #[error("PostgreSQL ({what}): {detail}")]
    Query { what: String, detail: String },
    /// A job's table without the column it was said to have (`flag`): the same on every read.
    #[error("PostgreSQL: table {table} has no column {key} ({flag}); its columns are {columns}")]
    NoColumn {
        table: String,
        key: String,
        flag: &'static str,
        columns: String,
    },
    /// The session ended under a statement: the server restarted or went away. Its text
    /// starts with `LOST`, which the engine reads in a worker's last line (`is_lost_reason`).
    #[error("{LOST} ({what}): {detail}")]
    Lost { what: String, detail: String },
    #[error("the private PostgreSQL cluster: {0}")]
    Cluster(String),
    #[error("{0}")]
    Flags(String),
    #[error("{what} is not available on PostgreSQL yet; run it with --warehouse sqlite")]
    NotYet { what: &'static str },
    #[error(
        "{task}: PostgreSQL refused the row ({detail}); this warehouse has a constraint the {strategy} strategy does not expect"
    )]
    Refused {
        task: String,
        strategy: &'static str,
        detail: String,
    },
}

impl WarehouseError {
    /// A failed statement, with what reclaim was doing; the server's own message when it sent
    /// one (the driver's `Display` says only "db error").
    #[must_use]
    pub fn query(what: &str, error: &postgres::Error) -> Self {
        let (what, detail) = (what.to_string(), describe(error));
        if is_lost(error) {
            Self::Lost { what, detail }
        } else {
            Self::Query { what, detail }
        }
    }
}

/// The server's message when there is one, else the driver's.
#[must_use]
pub fn describe(error: &postgres::Error) -> String {
    let text = error.as_db_error().map_or_else(
        || {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(inner) = source {
                text = format!("{text}: {inner}");
                source = inner.source();
            }
            text
        },
        |db| db.message().to_string(),
    );
    // A driver's error may echo a connection string it was given.
    crate::base::text::escape_controls(&super::postgres::conninfo::redact(&text))
}

/// How a lost session's error begins, in a worker's last line too.
pub const LOST: &str = "lost the connection to PostgreSQL";

/// Whether the reason a worker gave for ending (its error line read by the worker protocol,
/// `protocol::error_reason`) says it lost its session (`WarehouseError::Lost`).
#[must_use]
pub fn is_lost_reason(reason: &str) -> bool {
    reason.starts_with(LOST)
}

/// The session is gone, or the server will not take one now: it shut down (a restart's first
/// half, SQLSTATE 57P01/57P02), is starting (57P03), or the connection closed or was refused
/// (its socket not there yet). Such an error is the server's state, not the statement's fault.
#[must_use]
pub fn is_lost(error: &postgres::Error) -> bool {
    if error.is_closed() {
        return true;
    }
    if let Some(code) = error.code() {
        return matches!(code.code(), "57P01" | "57P02" | "57P03") || code.code().starts_with("08");
    }
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        if let Some(io) = inner.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                std::io::ErrorKind::NotFound
                    | std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::UnexpectedEof
            );
        }
        source = inner.source();
    }
    false
}

/// A query run on a user's behalf that did not finish: stopped, or failed in SQLite. `what` is the
/// flag and its SQL, shortened, control characters escaped.
#[derive(Debug, Error)]
pub enum QueryError {
    #[error("{what} was stopped after {} s without finishing; make it end sooner", limit.as_secs())]
    TooLong { what: String, limit: Duration },
    #[error("{what} was stopped by a signal")]
    Signalled { what: String },
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

/// Why `--setup-sql` was refused before anything was created: its trial on an empty database in
/// memory did not run.
#[derive(Debug, Error)]
pub enum TrialError {
    #[error("cannot open a database in memory to try --setup-sql on: {0}")]
    Open(#[source] rusqlite::Error),
    #[error("--setup-sql does not run on an empty database: {0}")]
    Setup(#[source] QueryError),
}

/// Why a job's `--keys-sql` gave no queue: its setup's trial, the query's result, or the server.
#[derive(Debug, Error)]
pub enum KeysError {
    #[error(transparent)]
    Trial(#[from] TrialError),
    #[error(transparent)]
    Queue(#[from] QueueError),
    #[error(transparent)]
    Server(#[from] WarehouseError),
}
