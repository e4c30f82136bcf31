//! What leaves the database and whose job runs: the side-effect flags, and `--exec` with its
//! setup, rows and queue, turned into the engine's `ExecJob` (refused whole before anything
//! is created).

use std::path::PathBuf;

use clap::Args;

/// What leaves the database: a side effect per item and the vendor that receives it.
#[derive(Debug, Args, Default)]
pub struct SideEffectArgs {
    /// Each item also sends a message to a vendor, before its row commits (the outbox
    /// strategy sends through its relay instead)
    #[arg(long, value_enum)]
    pub side_effect: Option<crate::worker::SideEffect>,
    /// The vendor's key policy: honour, ignore, or expire=SECS [default: honour]
    #[arg(long, value_name = "POLICY", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<crate::fake_vendor::Keys>()))]
    pub vendor_keys: Option<crate::fake_vendor::Keys>,
    /// The chance (0..=1) that the vendor acts on a request and never answers it
    #[arg(long, value_name = "P", value_parser = crate::fake_vendor::parse_probability)]
    pub vendor_drop_responses: Option<f64>,
    /// With --exec: start a vendor on 127.0.0.1 for your job (RECLAIM_VENDOR_URL), with this
    /// key policy [default: honour]; its messages are judged against the queue
    #[arg(long, value_name = "POLICY", num_args = 0..=1, default_missing_value = "honour", requires = "exec", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<crate::fake_vendor::Keys>()))]
    pub vendor: Option<crate::fake_vendor::Keys>,
    /// SIGKILL the job when the vendor has received message N, before it answers: a kill
    /// after the send and before the commit, in any job
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub kill_at_message: Option<u64>,
}

/// `--vendor` for the commands that run an `--exec` job many times over (`prove`, `map`): a
/// vendor for each night, judged like its rows.
#[derive(Debug, Args, Default)]
pub struct JobVendorArgs {
    /// With --exec: start a vendor on 127.0.0.1 for each night of your job (it is told
    /// RECLAIM_VENDOR_URL), with this key policy [default: honour]; its messages are judged
    /// against the queue (doubled, missing or outside it is wrong), and after-send is a window
    /// the kills must reach (--strict)
    #[arg(long, value_name = "POLICY", num_args = 0..=1, default_missing_value = "honour", requires = "exec", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<crate::fake_vendor::Keys>()))]
    pub vendor: Option<crate::fake_vendor::Keys>,
}

/// Your own worker instead of reclaim's: the command, its setup, where its rows land, and the
/// queue they are judged against.
#[derive(Debug, Args, Default)]
pub struct ExecArgs {
    /// Your own batch job instead of reclaim's: run with `sh -c` in the database's folder, with
    /// RECLAIM_DB, RECLAIM_KEYS_FILE, HEARTBEAT_FILE, RECLAIM_ITEMS, RECLAIM_ATTEMPT,
    /// RECLAIM_WORKER, RECLAIM_WORKERS and RECLAIM_DELAY_MS set
    #[arg(long, value_name = "CMD")]
    pub exec: Option<String>,
    /// SQL run once on the new database before the first attempt (or @FILE to read it)
    #[arg(long, value_name = "SQL|@FILE", requires = "exec")]
    pub setup_sql: Option<String>,
    /// The table the job writes its rows to
    #[arg(long, default_value = crate::warehouse::DEFAULT_TABLE, requires = "exec")]
    pub table: String,
    /// The column that names a unit of work in that table; its values are matched to the queue
    #[arg(long, default_value = crate::warehouse::DEFAULT_KEY, requires = "exec")]
    pub key: String,
    /// A query returning one row (rows, distinct), for shapes a table and a key cannot name
    /// (the queue is then judged by counts alone)
    #[arg(long, value_name = "SQL", requires = "exec")]
    pub count_sql: Option<String>,
    /// The queue's keys as a printf format of the item's number: 'ord-%05d' is ord-00000 ..
    /// [default: task-%03d]
    #[arg(long, value_name = "FORMAT", requires = "exec", conflicts_with_all = ["keys_from", "keys_sql"])]
    pub key_format: Option<String>,
    /// The queue's keys, one a line (`-`: standard input); the queue's size is their count
    #[arg(long, value_name = "FILE|-", requires = "exec", conflicts_with_all = ["keys_sql", "items"])]
    pub keys_from: Option<PathBuf>,
    /// The queue's keys, read by a query of one column on the new database after --setup-sql
    #[arg(long, value_name = "SQL", requires = "exec", conflicts_with = "items")]
    pub keys_sql: Option<String>,
    /// The job's checkpoint table: where a kill landed (after-row-commit or after-commit) is
    /// read from it; without it reclaim cannot tell those windows apart, and says so
    #[arg(long, value_name = "TABLE", requires = "exec")]
    pub checkpoint_table: Option<String>,
    /// The column of the checkpoint table that names the unit of work [default: --key]
    #[arg(long, value_name = "COLUMN", requires = "checkpoint_table")]
    pub checkpoint_key: Option<String>,
}

impl ExecArgs {
    /// The job these arguments describe, `--setup-sql @FILE` read, every SQL checked on an
    /// empty database in memory, its queue made (`items` long unless listed): a bad input is
    /// refused before anything is created.
    pub fn to_job(
        &self,
        items: u64,
    ) -> Result<Option<crate::engine::ExecJob>, crate::engine::JobError> {
        self.to_job_on(items, &crate::warehouse::Warehouse::Sqlite)
    }

    /// Whether the queue is read on the server (`--keys-sql` with a PostgreSQL warehouse): the
    /// warehouse is then opened before the job is made (`to_job_on`).
    #[must_use]
    pub fn keys_on_server(&self, warehouse: &crate::warehouse::Spec) -> bool {
        self.exec.is_some() && self.keys_sql.is_some() && warehouse.is_postgres()
    }

    /// `to_job`, with `--keys-sql` read where the night's rows go (`warehouse`).
    pub fn to_job_on(
        &self,
        items: u64,
        warehouse: &crate::warehouse::Warehouse,
    ) -> Result<Option<crate::engine::ExecJob>, crate::engine::JobError> {
        let Some(command) = &self.exec else {
            return Ok(None);
        };
        let rows = crate::warehouse::RowSource {
            table: self.table.clone(),
            key: self.key.clone(),
            count_sql: self.count_sql.clone(),
            checkpoints: self.checkpoint_table.as_ref().map(|table| {
                crate::warehouse::Checkpoints {
                    table: table.clone(),
                    key: self
                        .checkpoint_key
                        .clone()
                        .unwrap_or_else(|| self.key.clone()),
                    guessed: false,
                }
            }),
        };
        let queue = self.queue(items, warehouse)?;
        crate::engine::ExecJob::new(command, self.setup_sql.as_deref(), rows, queue).map(Some)
    }

    /// The queue: listed, formatted, or the postmortem's `task-NNN`. `--keys-sql` is read after
    /// the job's setup in a trial that leaves nothing behind (`Backend::keys_from_sql`): on
    /// SQLite in memory, on a server in a transaction rolled back.
    fn queue(
        &self,
        items: u64,
        warehouse: &crate::warehouse::Warehouse,
    ) -> Result<crate::queue::Queue, crate::engine::JobError> {
        use crate::queue::{KeyFormat, Queue};
        if let Some(file) = &self.keys_from {
            return Ok(Queue::from_file(file)?);
        }
        if let Some(sql) = &self.keys_sql {
            let setup = match &self.setup_sql {
                Some(text) => Some(crate::engine::read_sql(text)?),
                None => None,
            };
            return Ok(warehouse.keys_from_sql(setup.as_deref(), sql)?);
        }
        Ok(match &self.key_format {
            Some(format) => Queue::formatted(KeyFormat::parse(format)?, items),
            None => Queue::tasks(items),
        })
    }
}

/// `--compare`: the job judged by its effects too, against the undisturbed night.
#[derive(Debug, Args, Default, Clone)]
pub struct CompareArgs {
    /// With --exec: also judge each night by its effects. reclaim first runs the job to its
    /// end twice without a fault on the same queue (the undisturbed night), then compares the
    /// final state of the tables it wrote with each night's: rows by primary key (whole rows
    /// where there is none); what the two undisturbed nights disagree on is said, not judged
    #[arg(long, requires = "exec")]
    pub compare: bool,
    /// A table to compare (repeat it) [default: every table the job's database holds]
    #[arg(long = "compare-table", value_name = "TABLE", requires = "compare")]
    pub tables: Vec<String>,
    /// A column that may differ from night to night (a timestamp, a run id): TABLE.COLUMN,
    /// left out of the comparison (repeat it)
    #[arg(long = "ignore-column", value_name = "TABLE.COLUMN", requires = "compare", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<crate::verdict::state::ColumnName>()))]
    pub ignore: Vec<crate::verdict::state::ColumnName>,
}

impl CompareArgs {
    /// The columns left out, as the comparison takes them.
    #[must_use]
    pub fn ignored(&self) -> std::collections::BTreeSet<crate::verdict::state::ColumnName> {
        self.ignore.iter().cloned().collect()
    }
}
