//! What every engine offers, whatever it is: `Backend`, the operations a night asks of its
//! warehouse (a worker's writes, the observer's reads, the verdict's, the operator's wipe, a
//! job's setup and keys), and the handles some of them return: `Writer` (one worker's
//! connection), `Follower` and `JobFollower` (the observer's, reading what is new since the
//! last read), `Outbox` (the relay's) and `ServerWatch` (the night's look at a server). Each
//! engine implements them in its own folder (`sqlite/`, `postgres/`); `Warehouse` picks one.

use std::fmt::Debug;
use std::path::Path;
use std::time::Instant;

use super::batch::{Batch, Row};
use super::claim::{Fence, Lease, LeaseClock, Next};
use super::error::{KeysError, StoreError};
use super::inspection::{DuplicatedId, Inspection};
use super::schema::SchemaNeeds;
use super::source::RowSource;
use super::sqlite::SyncMode;
use crate::queue::Queue;
use crate::task::TaskBits;

/// The operations of one engine. Every lane is named by its SQLite path (`db`): on SQLite the
/// file itself, elsewhere what names the lane's place (its schema on PostgreSQL).
pub trait Backend: Sync {
    /// What the dashboard's header and a recording say of the warehouse; `None` for SQLite
    /// files (the default, said by nothing).
    fn describe(&self) -> Option<String>;
    /// The variables that hand the warehouse to a child process reclaim spawns (a worker, the
    /// relay, `inspect`), which reads them back once at its start (`Warehouse::from_env`).
    fn child_env(&self) -> Vec<(&'static str, String)>;
    /// The variables a job of the user's own (`--exec`) is handed to reach its lane, beside
    /// `RECLAIM_DB`.
    fn job_env(&self, db: &Path) -> Vec<(&'static str, String)>;
    /// Readies a lane before its night starts (on a server, its schema is claimed).
    fn claim_lane(&self, db: &Path) -> Result<(), StoreError>;
    /// Where a night's rows are, said when the dashboard closes (`dir`: its other files).
    fn where_rows_are(&self, dir: &str) -> String;
    /// Whether each lane's rows are in the file its path names, kept on this machine.
    fn files_kept(&self) -> bool;
    /// The night's look at the engine's server, when it has one.
    fn watch(&self) -> Option<Box<dyn ServerWatch>>;

    /// A worker's connection to its lane, with the tables its strategy needs.
    fn open_writer(&self, lane: &WriterSpec<'_>) -> Result<Box<dyn Writer>, StoreError>;
    /// The relay's side of a lane's outbox; `None` while the worker has not made the lane yet.
    fn open_outbox(&self, db: &Path) -> Result<Option<Box<dyn Outbox>>, StoreError>;
    /// A lane with rows and no outbox (so not the outbox strategy's), read without changing
    /// anything; anything unreadable is not one.
    fn has_rows_and_no_outbox(&self, db: &Path) -> bool;
    /// How many outbox entries are not marked sent yet; `None` when that cannot be read now.
    fn pending_entries(&self, db: &Path) -> Option<u64>;

    /// The observer's reader of reclaim's own lane.
    fn follow(&self, db: &Path) -> Box<dyn Follower>;
    /// The observer's reader of a job's table (and its checkpoint table, when named).
    fn follow_job(&self, db: &Path, source: &RowSource) -> Box<dyn JobFollower>;

    /// Every fact about reclaim's own lane, against a queue of `items`, in one snapshot.
    fn inspect(&self, db: &Path, items: u64) -> Result<Inspection, StoreError>;
    /// Every fact about a job's table, against its queue.
    fn inspect_rows(
        &self,
        db: &Path,
        queue: &Queue,
        source: &RowSource,
    ) -> Result<Inspection, StoreError>;
    /// The task ids with more than one row, at most `limit` of them, and how many in all.
    fn duplicated_ids(
        &self,
        db: &Path,
        limit: usize,
    ) -> Result<(Vec<DuplicatedId>, u64), StoreError>;
    /// The final state of a job's tables (`only` those, when it names any), read in one
    /// snapshot, for `--compare`.
    fn read_state(
        &self,
        db: &Path,
        only: &[String],
    ) -> Result<crate::verdict::state::State, StoreError>;
    /// Deletes every checkpoint of reclaim's own lane (none there: nothing to delete).
    fn wipe_checkpoints(&self, db: &Path) -> Result<usize, StoreError>;
    /// Deletes every row of a job's `table`; `None` when the job never made it.
    fn wipe_table(&self, db: &Path, table: &str) -> Result<Option<usize>, StoreError>;
    /// Runs a job's `--setup-sql` on its lane before the first attempt.
    fn run_setup(&self, db: &Path, sql: &str) -> Result<(), StoreError>;
    /// A job's queue from `--keys-sql`, read after its `--setup-sql` in a trial that leaves
    /// nothing behind.
    fn keys_from_sql(&self, setup: Option<&str>, sql: &str) -> Result<Queue, KeysError>;
}

/// What a worker opens its lane with.
#[derive(Debug, Clone, Copy)]
pub struct WriterSpec<'a> {
    pub db: &'a Path,
    pub needs: SchemaNeeds,
    /// The outbox strategy: an outbox table beside the rows.
    pub outbox: bool,
    pub sync: SyncMode,
    /// A worker started by hand checks an existing warehouse whole before its first write.
    pub check_integrity: bool,
    /// Checkpoint SQLite's log every this many pages (`sqlite::wal`).
    pub wal_autocheckpoint: Option<u32>,
    /// The long item's work is split in committed steps (`--split`).
    pub steps: bool,
}

/// One worker's connection to its lane: every write a strategy makes, each in one
/// transaction (retried whole when the engine says it may be).
pub trait Writer {
    /// Writes `batch` in one transaction (`batch::write_in`); returns the rows inserted.
    fn write(&mut self, batch: &Batch<'_>) -> Result<u64, StoreError>;
    /// Commits a task's checkpoint in a transaction of its own (two-commit's second commit).
    fn write_checkpoint(&mut self, task: &str) -> Result<(), StoreError>;
    fn has_checkpoint(&mut self, task: &str) -> Result<bool, StoreError>;
    /// The queue's tasks with a checkpoint now, read in one snapshot, and a mark of that
    /// snapshot for `changed_since` (`None`: the engine cannot tell, so every later look asks).
    fn checkpointed(&mut self, items: u64) -> Result<(TaskBits, Option<i64>), StoreError>;
    /// Whether another connection has committed since the snapshot `mark` names.
    fn changed_since(&mut self, mark: i64) -> Result<bool, StoreError>;
    /// The tasks among `candidates` with no checkpoint now, in one read.
    fn unchecked(&mut self, candidates: &[u64]) -> Result<Vec<u64>, StoreError>;
    /// The rows in the table: the worker's own word at its end.
    fn count(&mut self) -> Result<u64, StoreError>;
    /// After every commit (SQLite keeps its log short here).
    fn after_commit(&mut self);

    /// Makes the claim strategy's queue, if no worker has yet.
    fn prepare_claims(&mut self) -> Result<(), StoreError>;
    /// Claims the first item not done whose lease has ended at `clock`'s moment, for `me`.
    fn claim_next(&mut self, me: &str, items: u64, clock: LeaseClock) -> Result<Next, StoreError>;
    /// Commits `row`, its checkpoint and the claimed item's done mark in one transaction, if
    /// the fence holds (`Fence`); whether it committed.
    fn claim_commit(
        &mut self,
        claimed: (Lease, Fence),
        me: &str,
        row: &Row,
    ) -> Result<bool, StoreError>;

    /// The long item's steps already committed (`--split`).
    fn steps_done(&mut self, task: &str) -> Result<u64, StoreError>;
    /// Commits one of the long item's steps.
    fn mark_step(&mut self, task: &str, step: u64) -> Result<(), StoreError>;
}

/// An outbox entry to deliver: task, idempotency key, body.
pub type Pending = (String, String, String);

/// The relay's side of a lane's outbox.
pub trait Outbox {
    /// The first entry not yet sent, and how many entries there are, read in one snapshot.
    fn next_pending(&mut self) -> Result<(Option<Pending>, u64), StoreError>;
    fn mark_sent(&mut self, task: &str) -> Result<(), StoreError>;
}

/// What one read of reclaim's own lane found since the last.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LaneRead {
    /// New rows, each `(task_id, run_id)`, in the order they were written.
    pub rows: Vec<(String, String)>,
    /// The checkpoints read, when there was something to say of them.
    pub checkpoints: Option<CheckpointRead>,
}

/// Checkpoints read: keys, and whether the totals start again from these (a wipe, or a table
/// read whole).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CheckpointRead {
    pub keys: Vec<String>,
    pub wiped: bool,
}

/// What one read of a job's table found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobRows {
    /// The job has not made its table yet.
    NoTable,
    /// `--count-sql`'s `(rows, distinct)`.
    Counted(u64, u64),
    /// A table with no order of arrival, counted whole: rows, distinct keys, duplicated keys.
    Whole(u64, u64, u64),
    /// The whole table by key: each key (as text) with its rows.
    Keys(Vec<(Option<String>, u64)>),
    /// The rows since the last read, in the order they arrived: each one's key.
    New(Vec<Option<String>>),
}

/// One read of a job's table, and of its checkpoint table in the same snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRead {
    pub rows: JobRows,
    pub checkpoints: Option<CheckpointRead>,
    /// Everything there was has been read (no cap reached).
    pub complete: bool,
}

/// The observer's reader of reclaim's own lane: what is new since its last read (its cursor is
/// its own, so a poll costs what is new, not what is there).
pub trait Follower: Send + Debug {
    /// What is new; `None` while there is nothing to read yet (no table, the server down).
    fn read(&mut self) -> Result<Option<LaneRead>, StoreError>;
    /// The next read reads whatever there is, taking no shortcut that skips a read.
    fn read_all_next(&mut self);
    /// Lets go of the connection, once a writer has died (the next read opens one again).
    fn release(&mut self);
    /// Forgets the checkpoints read: the next read reads them all (after a wipe made here).
    fn forget_checkpoints(&mut self);
}

/// The observer's reader of a job's table.
pub trait JobFollower: Send + Debug {
    /// What is new; `None` when nothing was read this time (nothing new, or a read thrown
    /// away to be made again).
    fn read(&mut self) -> Result<Option<JobRead>, StoreError>;
    fn read_all_next(&mut self);
    fn release(&mut self);
    fn forget_checkpoints(&mut self);
    /// Whether rows are read in their order of arrival (so the newest is known), rather than
    /// the table read whole.
    fn in_arrival_order(&self) -> bool;
    /// What reclaim can say beside a line of the job's that names a lock: whether its own
    /// reads could have held it. `None` for any other line.
    fn lock_said(&self, line: &str) -> Option<&'static str>;
}

/// A line the night's look at a server has to say: for a lane (a kill's outcome) or for the
/// night.
#[derive(Debug, Clone, PartialEq)]
pub struct Said {
    pub lane: Option<usize>,
    pub error: bool,
    pub text: String,
    /// The night's moment it is about (a kill's), when not the clock's present reading.
    pub at: Option<f64>,
}

/// The night's look at the engine's server itself, beside the lanes' observers: a restart
/// under the night, and what the server did with a killed worker's open transaction.
pub trait ServerWatch: Send + Debug {
    /// The earliest kill whose outcome the server has not told yet: the clock waits there.
    fn awaited(&self, now: Instant) -> Option<f64>;
    /// The moment the server was first found gone, while the workers may still be waiting for
    /// it: the clock stands there, but for the restarts due.
    fn down_since(&self, now: Instant) -> Option<f64>;
    /// A worker started at `now`: while the server is gone it waits for it, its whole wait,
    /// and the clock stands with it (`down_since`) however long its start took.
    fn worker_started(&mut self, now: Instant);
    /// The host restarted the server at `sim` (`--restart-server-at-rows`): the restart the
    /// next look finds is said at that moment, not between two looks.
    fn host_restarted(&mut self, sim: f64);
    /// Looks at the server; `sim` is the night's clock now.
    fn look(&mut self, now: Instant, sim: f64) -> Vec<Said>;
    /// Reads the sessions of `pids` (stopped, about to be killed), to follow what they had open.
    fn before_kill(&mut self, lane: usize, pids: &[i32], at: (Instant, f64)) -> Vec<Said>;
    /// The same for a worker found dead (killed by someone else).
    fn after_death(&mut self, lane: usize, pid: i32, at: (Instant, f64)) -> Vec<Said>;
}
