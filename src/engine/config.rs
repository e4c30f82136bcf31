//! What a night is made of: its lanes, the host's kill plan, and the supervisor's policy. Built
//! from a scenario or from `run`'s flags; the engine only reads it.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::pace::Pace;
use crate::fake_vendor::VendorModes;
use crate::queue::Queue;
use crate::supervisor::schedule::KillPlan;
use crate::warehouse::{RowSource, SyncMode, Warehouse};
use crate::worker::{CrashAt, LongItem, SideEffect, Strategy};

/// The dead-man's switch threshold of the postmortem's cron script, in sim seconds.
pub const DEFAULT_DEAD_MAN: f64 = 300.0;

/// Sim seconds per real second, unless a driver says otherwise.
const DEFAULT_SCALE: f64 = 600.0;

/// Who does a lane's work: reclaim's own worker in one of its strategies, or someone else's
/// program (`run --exec`, a scenario's `exec = ...`). Both are spawned through the same slots,
/// killed, restarted and judged from their rows the same way.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LaneWorker {
    Strategy(Strategy),
    Exec(Box<ExecJob>),
}

impl LaneWorker {
    /// The strategy, for reclaim's own worker.
    #[must_use]
    pub fn strategy(&self) -> Option<Strategy> {
        match self {
            Self::Strategy(strategy) => Some(*strategy),
            Self::Exec(_) => None,
        }
    }

    /// The external job, for a lane that runs one.
    #[must_use]
    pub fn job(&self) -> Option<&ExecJob> {
        match self {
            Self::Strategy(_) => None,
            Self::Exec(job) => Some(job),
        }
    }

    /// What reports and recordings call it: a strategy's name, or `exec`.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Self::Strategy(strategy) => strategy.name(),
            Self::Exec(_) => EXEC_LABEL,
        }
    }

    /// The key of the queue's item `task`: the job's queue's spelling, or the postmortem's for
    /// reclaim's own worker.
    #[must_use]
    pub fn task_key(&self, task: u64) -> String {
        match self {
            Self::Strategy(_) => crate::task::task_id(task),
            Self::Exec(job) => job.queue.key(task),
        }
    }

    /// Whether the lane's database has reclaim's checkpoints table to chart.
    #[must_use]
    pub fn has_checkpoints(&self) -> bool {
        self.strategy().is_some_and(|s| s.needs().checkpoints)
    }
}

/// What reports, recordings and `--json` call a lane that runs the user's own job.
pub const EXEC_LABEL: &str = "exec";

/// Someone else's batch job: a shell command run in the database's folder, whose rows land where
/// `rows` says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecJob {
    /// Run with `sh -c`, so a user pastes the command they already use.
    pub command: String,
    /// Run once on the new database before the first attempt (`None` once it has run, so a
    /// second night on the same database does not run it again).
    pub setup_sql: Option<String>,
    pub rows: RowSource,
    /// The keys its rows are judged against (`RECLAIM_KEYS_FILE` hands them to the job).
    pub queue: Queue,
    /// The point its first attempt is SIGKILLed at, when the job announces it (`--crash-at`).
    pub crash_at: Option<crate::worker::protocol::points::CrashPlan>,
    /// The job sends messages to a vendor reclaim starts for the night (`--vendor`), told by
    /// `RECLAIM_VENDOR_URL`; they are judged at the vendor against the queue.
    pub vendor: bool,
    /// The pace (`RECLAIM_DELAY_MS`) is told to the first attempt only, the restarts get 0: a
    /// map's night kills the first attempt, and its restart has only to finish.
    pub unpaced_restarts: bool,
    /// The folder of the scenario file whose exec lane this is (`RECLAIM_SCENARIO_DIR`), so a
    /// scenario can name a job beside it; `None` from the command line or a shipped scenario.
    pub scenario_dir: Option<PathBuf>,
}

/// The longest command a job may be: it goes to `sh -c` as one argument, which Linux caps
/// (MAX_ARG_STRLEN); past it the job failed after the header with "Argument list too long".
const MAX_COMMAND: usize = 128 * 1024 - 1;

/// Why a job of the user's own (`--exec`, or a scenario's exec lane) was refused before anything
/// was created; each names the flag and what to do.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("--exec is empty: give the command that runs your job")]
    EmptyCommand,
    #[error(
        "the command to run is {0} bytes, more than the {MAX_COMMAND} that sh -c can take as one argument; put it in a script and run the script"
    )]
    CommandTooLong(usize),
    #[error("the command to run holds a NUL byte, which no command line can carry")]
    NulInCommand,
    #[error("{flag} {name:?} is not a name SQLite can use")]
    BadName { flag: &'static str, name: String },
    #[error(transparent)]
    SetupPath(#[from] crate::base::paths::PathError),
    #[error("--setup-sql {file}: {source}")]
    SetupRead {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("--setup-sql {file} is {bytes} bytes; a setup script is expected to be under 1 MiB")]
    SetupTooBig { file: String, bytes: u64 },
    #[error(transparent)]
    Setup(#[from] crate::warehouse::TrialError),
    #[error(transparent)]
    Queue(#[from] crate::queue::QueueError),
    /// `--keys-sql`, read where the night's rows go.
    #[error(transparent)]
    Keys(#[from] crate::warehouse::KeysError),
}

impl ExecJob {
    /// A job from its parts (the command line's or a scenario lane's): `setup_sql` as SQL or
    /// `@FILE`, every SQL checked on an empty database in memory, so a bad input is refused
    /// before anything is created.
    pub fn new(
        command: &str,
        setup_sql: Option<&str>,
        rows: RowSource,
        queue: Queue,
    ) -> Result<Self, JobError> {
        if command.trim().is_empty() {
            return Err(JobError::EmptyCommand);
        }
        if command.len() > MAX_COMMAND {
            return Err(JobError::CommandTooLong(command.len()));
        }
        if command.contains('\0') {
            return Err(JobError::NulInCommand);
        }
        let setup_sql = match setup_sql {
            Some(text) => Some(read_sql(text)?),
            None => None,
        };
        if let Some(sql) = &setup_sql {
            crate::warehouse::sqlite::rows::check_setup(sql)?;
        }
        let checkpoint_names = rows.checkpoints.iter().flat_map(|c| {
            [
                ("--checkpoint-table", &c.table),
                ("--checkpoint-key", &c.key),
            ]
        });
        for (flag, name) in [("--table", &rows.table), ("--key", &rows.key)]
            .into_iter()
            .chain(checkpoint_names)
        {
            if name.is_empty() || name.contains('\0') {
                return Err(JobError::BadName {
                    flag,
                    name: name.clone(),
                });
            }
        }
        Ok(Self {
            command: command.to_string(),
            setup_sql,
            rows,
            queue,
            crash_at: None,
            vendor: false,
            unpaced_restarts: false,
            scenario_dir: None,
        })
    }
}

/// `SQL` as given, or the contents of `@FILE`.
pub fn read_sql(text: &str) -> Result<String, JobError> {
    let Some(file) = text.strip_prefix('@') else {
        return Ok(text.to_string());
    };
    let path = crate::base::paths::existing_file(std::path::Path::new(file), "--setup-sql")?;
    let unreadable = |source| JobError::SetupRead {
        file: file.to_string(),
        source,
    };
    let meta = std::fs::metadata(&path).map_err(unreadable)?;
    // A setup is a few statements; a huge file is a mistake (a database given by accident).
    if meta.len() > 1 << 20 {
        return Err(JobError::SetupTooBig {
            file: file.to_string(),
            bytes: meta.len(),
        });
    }
    std::fs::read_to_string(&path).map_err(unreadable)
}

/// One lane: who does the work, its own database, and its workers.
#[derive(Debug, Clone, Serialize)]
pub struct LaneConfig {
    pub name: String,
    pub worker: LaneWorker,
    pub db: PathBuf,
    pub items: u64,
    /// Real pause after each item at speed 1 (what a worker started by hand would take).
    #[serde(serialize_with = "serialize_ms")]
    pub delay: Duration,
    /// The sim time each attempt's writes take: the first for the first attempt, and so on;
    /// the last for every later one.
    pub paces: Vec<Pace>,
    pub batch: u64,
    /// Workers running at once on this lane's database (duplicate delivery when above 1).
    pub workers: usize,
    pub sync: SyncMode,
    /// A crash point for each worker's first attempt (and the relay's, for `after-relay-send`).
    pub crash_at: Option<CrashAt>,
    /// A pause for the first attempt of each worker: the one that reaches the task's write is
    /// stopped there (SIGSTOP) for a while of the night (`--pause-at`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_at: Option<crate::worker::PauseAt>,
    /// An `--exec` job stopped (SIGSTOP to its group) once the lane's table holds N rows, for
    /// a while of the night (`--pause-at-rows`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_at_rows: Option<crate::worker::PauseAtRows>,
    /// The row counts at which the answer to the commit that reaches them is lost
    /// (`--lose-answer-at`): the lane's workers reach the server through a proxy of reclaim's
    /// own that closes the connection after the commit, before its answer
    /// (`warehouse::postgres::answers`). PostgreSQL only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lose_answers: Vec<u64>,
    /// The tasks whose first commit's answer is lost (`--lose-answer-at-task`): the first
    /// commit, by any worker, after which the task's row is in. PostgreSQL only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lose_answer_tasks: Vec<u64>,
    /// Run the lane's workers through a proxy even with no loss planned, so the dashboard's
    /// `L` can lose one by hand (its workers do not retry a lost write: they die, and are
    /// restarted, as a worker without a retry loop does).
    #[serde(skip)]
    pub answer_proxy: bool,
    /// What each item also does outside the database (`--side-effect`).
    pub side_effect: Option<SideEffect>,
    /// How the lane's vendor behaves, when it has one (`needs_vendor`).
    pub vendor: VendorModes,
    /// One item that takes longer than the others (`--long-item`), and its work in steps.
    pub long_item: Option<LongItem>,
    pub split: u64,
    /// reclaim's own worker says only its latest `wrote` line before its next other line, when
    /// granted everything (`WorkerConfig::quiet_writes`): for a night nothing watches write by
    /// write (a map night, with no host kill and no dashboard).
    pub quiet_writes: bool,
    /// reclaim's own worker checkpoints its log every this many pages
    /// (`WorkerConfig::wal_autocheckpoint`): for a night's database in memory.
    pub wal_autocheckpoint: Option<u32>,
    /// Where the lane's rows go (the night's warehouse, `EngineConfig::on`). Never recorded:
    /// a server's connection string may hold a password.
    #[serde(skip)]
    pub warehouse: Warehouse,
}

impl From<Strategy> for LaneWorker {
    fn from(strategy: Strategy) -> Self {
        Self::Strategy(strategy)
    }
}

impl LaneConfig {
    /// The answers its proxy loses: at row counts, and at the commits of tasks, by their keys
    /// (the job's queue's spelling, or the postmortem's for reclaim's own worker).
    #[must_use]
    pub fn answer_plan(&self) -> crate::warehouse::postgres::answers::AnswerPlan {
        crate::warehouse::postgres::answers::AnswerPlan {
            rows: self.lose_answers.clone(),
            keys: (self.lose_answer_tasks.iter())
                .map(|&t| self.task_key(t))
                .collect(),
        }
    }

    /// Whether its workers try a write again after its answer was lost: only where losses are
    /// planned, as a job's retry loop would (elsewhere a lost connection ends the worker).
    #[must_use]
    pub fn retries_writes(&self) -> bool {
        !self.lose_answers.is_empty() || !self.lose_answer_tasks.is_empty()
    }

    /// The key of the queue's item `task` (`LaneWorker::task_key`).
    #[must_use]
    pub fn task_key(&self, task: u64) -> String {
        self.worker.task_key(task)
    }

    /// One worker on `db` at the postmortem's pace (10 ms an item, 6 sim seconds at the default
    /// 600x), one item per transaction, no crash point, named after what does the work; set what
    /// differs with struct update syntax (a driver that changes `delay` or the scale sets `paces`
    /// too). An external job's lane has no pace: it cannot be gated (see `Lane::pace`).
    #[must_use]
    pub fn new(worker: impl Into<LaneWorker>, db: PathBuf, items: u64) -> Self {
        let worker = worker.into();
        // An external job's queue says how many items it has.
        let items = worker.job().map_or(items, |job| job.queue.len());
        Self {
            name: worker.label().to_string(),
            worker,
            db,
            items,
            delay: Duration::from_millis(10),
            paces: vec![Pace::per_item(0.010 * DEFAULT_SCALE)],
            batch: 1,
            workers: 1,
            sync: SyncMode::Normal,
            crash_at: None,
            pause_at: None,
            pause_at_rows: None,
            lose_answers: Vec::new(),
            lose_answer_tasks: Vec::new(),
            answer_proxy: false,
            side_effect: None,
            vendor: VendorModes::default(),
            long_item: None,
            split: 1,
            quiet_writes: false,
            wal_autocheckpoint: None,
            warehouse: Warehouse::Sqlite,
        }
    }

    /// Its items reach a vendor: a side effect from the worker, or the outbox's relay.
    #[must_use]
    pub fn needs_vendor(&self) -> bool {
        self.side_effect.is_some() || self.relays() || self.worker.job().is_some_and(|j| j.vendor)
    }

    /// The messages at the lane's vendor, each matched to the lane's queue.
    pub fn read_messages(
        &self,
    ) -> Result<crate::fake_vendor::Counts, crate::fake_vendor::VendorError> {
        match self.worker.job() {
            Some(job) => crate::fake_vendor::Counts::read_queue(&self.vendor_db(), &job.queue),
            None => crate::fake_vendor::Counts::read(&self.vendor_db(), self.items),
        }
    }

    /// A relay runs beside its workers (the outbox strategy).
    #[must_use]
    pub fn relays(&self) -> bool {
        self.worker.strategy().is_some_and(Strategy::relays)
    }

    /// The vendor's database for this lane, beside the warehouse.
    #[must_use]
    pub fn vendor_db(&self) -> PathBuf {
        crate::fake_vendor::db_path(&self.db)
    }

    /// The keys the lane's rows are judged against: the external job's queue, or the
    /// postmortem's `task-NNN` for reclaim's own worker.
    #[must_use]
    pub fn queue(&self) -> Queue {
        match &self.worker {
            LaneWorker::Exec(job) => job.queue.clone(),
            LaneWorker::Strategy(_) => Queue::tasks(self.items),
        }
    }

    /// Every fact about the lane's rows, read from its database: reclaim's warehouse, or where
    /// the external job's rows land. The one place a finished lane is judged (`run`, `prove`,
    /// the dashboard).
    pub fn inspect(&self) -> Result<crate::warehouse::Inspection, crate::warehouse::StoreError> {
        match &self.worker {
            LaneWorker::Strategy(_) => self.warehouse.inspect(&self.db, self.items),
            LaneWorker::Exec(job) => self.warehouse.inspect_rows(&self.db, &job.queue, &job.rows),
        }
    }
}

fn serialize_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// The night: its lanes and the host's behaviour.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub lanes: Vec<LaneConfig>,
    pub kills: KillPlan,
    /// Sim seconds after 02:00:00 at which the first workers start.
    pub start_at: f64,
    /// Sim seconds the supervisor waits before restarting a dead worker.
    pub restart_delay: f64,
    /// Restarts per lane before the supervisor gives up, so a job that never finishes ends.
    pub max_restarts: u32,
    /// Sim seconds per real second.
    pub scale: f64,
    /// How fast the night is shown relative to `scale` at its start (the dashboard's speed
    /// keys change it later; `run --scenario --speed`): the same night in less real time.
    pub speed: f64,
    /// Heartbeat age, in sim seconds, at which the dead-man's switch fires.
    pub dead_man: f64,
    /// The `reclaim` executable that runs `worker`.
    pub exe: PathBuf,
    /// Hang every worker (SIGSTOP) once the first lane has written this task.
    pub hang: Option<HangPlan>,
    /// Delete every checkpoint of every lane once the first lane has written this task.
    pub wipe_at_task: Option<u64>,
    /// A headless night is given up on after this much real time without progress
    /// (`--progress-deadline`; `None`: `DEFAULT_PROGRESS_DEADLINE`, or ten items' pause).
    pub progress_deadline: Option<Duration>,
    /// Restart the night's private cluster (its `Server::restarter`) once the first lane's
    /// table holds this many rows (`--restart-server-at-rows`, `host.restart_server_at_rows`).
    pub restart_server_at_rows: Option<u64>,
    /// The private cluster restarted once the first lane commits this task
    /// (`--restart-server-at-task`, `host.restart_server_at_task`).
    pub restart_server_at_task: Option<u64>,
}

impl EngineConfig {
    /// A night of `lanes` under `kills`, with the supervisor's and the dashboard's defaults for
    /// the rest (the first workers at 02:00:00, an 18 sim-second restart delay (30 ms of real
    /// time at 600x), 100 restarts, 600 sim seconds a second, the postmortem's 300 s dead-man's
    /// switch, no hang, no wipe). Every driver starts from here and sets what
    /// it needs, so a new field is added in one place.
    #[must_use]
    pub fn new(lanes: Vec<LaneConfig>, kills: KillPlan, exe: PathBuf) -> Self {
        Self {
            lanes,
            kills,
            start_at: 0.0,
            restart_delay: 18.0,
            max_restarts: 100,
            scale: DEFAULT_SCALE,
            speed: 1.0,
            dead_man: DEFAULT_DEAD_MAN,
            exe,
            hang: None,
            wipe_at_task: None,
            progress_deadline: None,
            restart_server_at_rows: None,
            restart_server_at_task: None,
        }
    }

    /// The night on `warehouse`: every lane's rows go there.
    #[must_use]
    pub fn on(mut self, warehouse: &Warehouse) -> Self {
        for lane in &mut self.lanes {
            lane.warehouse = warehouse.clone();
        }
        self
    }

    /// The night's warehouse: its lanes' (SQLite files for a night without lanes).
    #[must_use]
    pub fn warehouse(&self) -> Warehouse {
        self.lanes
            .first()
            .map_or(Warehouse::Sqlite, |lane| lane.warehouse.clone())
    }
}

/// A scheduled hang: the worker stays alive and stops making progress.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HangPlan {
    pub at_task: u64,
    /// Sim seconds until SIGCONT; `None` hangs until someone acts.
    pub resume_after: Option<f64>,
}
