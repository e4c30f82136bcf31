//! The tables a strategy needs, and what a warehouse's tables really guarantee, on either
//! engine: each reads the second from its own catalogue (`sqlite::schema::read_facts`,
//! `postgres::schema::schema_facts`), and refuses a table without what the first asks.

use serde::Serialize;

/// The shape of the `records` table a strategy needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaNeeds {
    /// `records.idem_key` must carry a UNIQUE constraint.
    pub unique_key: bool,
    /// A `checkpoints` table keyed by `task_id` must exist.
    pub checkpoints: bool,
    /// The strategy's name, for error messages.
    pub strategy: &'static str,
}

/// What the schema of a warehouse really guarantees, read from the engine's own catalogue.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SchemaFacts {
    #[serde(skip)]
    pub record_columns: Vec<String>,
    /// `records.idem_key` is covered by a UNIQUE index of exactly that column.
    pub unique_idem_key: bool,
    /// A `checkpoints` table exists.
    pub checkpoints_table: bool,
    /// `checkpoints.task_id` is its PRIMARY KEY or has a UNIQUE index of its own.
    pub checkpoint_key: bool,
    /// The declared type of `records.task_id` (`None` without that column).
    #[serde(skip)]
    pub task_id_type: Option<String>,
}
