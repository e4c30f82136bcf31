//! A job's table as the user names it, on either engine: where its rows land and what names a
//! unit of work (`--table`, `--key`), or a query that counts them (`--count-sql`), and its
//! checkpoint table when told (`--checkpoint-table`). reclaim's own warehouse is the case
//! `records`/`task_id`.

use std::time::Duration;

use serde::Serialize;

/// How long a query reading a job's rows on its behalf may take (`--count-sql` each time the
/// observer runs it, `--keys-sql`), on either engine.
pub const COUNT_LIMIT: Duration = Duration::from_secs(10);

/// The table reclaim's own workers write, and the postmortem's harness creates.
pub const DEFAULT_TABLE: &str = "records";
/// The column naming the unit of work in it.
pub const DEFAULT_KEY: &str = "task_id";

/// Where the rows of a job land, and how to count them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RowSource {
    pub table: String,
    pub key: String,
    /// A query returning one row `(rows, distinct)`, for shapes a table and a key cannot name.
    pub count_sql: Option<String>,
    /// Where the job checkpoints its work (`--checkpoint-table`), if reclaim is told.
    pub checkpoints: Option<Checkpoints>,
}

/// A job's checkpoint table and the column naming the unit of work in it: what lets reclaim
/// tell a kill after a row's commit from one after its checkpoint's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checkpoints {
    pub table: String,
    pub key: String,
    /// reclaim's guess (prove's `checkpoints`, keyed by `--key`), not named by the user: a
    /// table of that name without the key column is someone else's table, left unread, never
    /// a reason to stop the night.
    pub guessed: bool,
}

impl Default for RowSource {
    fn default() -> Self {
        Self {
            table: DEFAULT_TABLE.into(),
            key: DEFAULT_KEY.into(),
            count_sql: None,
            checkpoints: None,
        }
    }
}

impl RowSource {
    /// The table's name quoted as an SQL identifier (a name from the command line is data, never
    /// SQL).
    #[must_use]
    pub fn table_sql(&self) -> String {
        quote_identifier(&self.table)
    }

    #[must_use]
    pub fn key_sql(&self) -> String {
        quote_identifier(&self.key)
    }
}

/// `"name"`, with every `"` doubled: an identifier quoted as SQL quotes it (SQLite and
/// PostgreSQL alike).
#[must_use]
pub fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
