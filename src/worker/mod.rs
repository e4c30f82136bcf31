//! `reclaim worker`: one process working through the queue, in one of the strategies.
//!
//! Every strategy does the same unit of work (task id -> deterministic payload -> one row); they
//! differ only in what makes a restart safe. Each lives in its own file, and `strategy.rs` is
//! the table of what each one does; this module holds what they share: the connection, the crash points, the heartbeat, the pace and the worker's claim.

mod claim;
mod crash;
mod fenced;
mod guarded;
mod keyed;
mod long_item;
mod naive;
mod outbox;
mod pacing;
mod pause;
pub mod protocol;
pub mod relay;
mod strategy;
mod two_commit;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::Serialize;
use thiserror::Error;

pub use claim::LEASE_SECS;
pub use crash::{CrashAt, CrashPoint, KillWindow};
pub use long_item::LongItem;
use pacing::{Gate, LiveDelay};
pub(crate) use pause::pause_secs;
pub use pause::{PauseAt, PauseAtRows};
use protocol::{Resume, WorkerLine};
pub use strategy::Strategy;

use crate::heartbeat;
use crate::task::task_id;
use crate::warehouse::backend::Writer;
use crate::warehouse::{Batch, Row, StoreError, SyncMode, Warehouse, WriterSpec};

/// The shortest time between two heartbeats (see `Ctx::beat_due`).
const BEAT_EVERY: Duration = Duration::from_millis(10);

/// What else an item does besides its row.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum SideEffect {
    /// Sends the customer a message through the vendor, before the row's commit.
    Email,
}

/// Everything one worker process needs; `to_args` (in `protocol`) is its command line.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerConfig {
    pub strategy: Strategy,
    pub db: PathBuf,
    pub items: u64,
    /// Pause after each item, as the postmortem's `time.sleep(0.01)`.
    pub delay: Duration,
    pub heartbeat: PathBuf,
    /// Items per transaction (keyed, guarded).
    pub batch: u64,
    pub crash_at: Option<CrashAt>,
    /// Stopped at this task's write, its claim made, for a while of the night (`pause`).
    pub pause_at: Option<PauseAt>,
    pub sync: SyncMode,
    /// Started by reclaim's supervisor on a warehouse it created in this session: read commands
    /// (`grant N`, `delay-us N`) from stdin, and skip the integrity check before the first write
    /// (restarts must be cheap; the verdict runs `integrity_check` at the end anyway).
    pub supervised: bool,
    /// Paced by the supervisor's grants rather than by `delay` (see `Gate`).
    pub gated: bool,
    /// What each item also does outside the database, and the vendor it reaches.
    pub side_effect: Option<SideEffect>,
    pub vendor: Option<std::net::SocketAddr>,
    /// One item whose work (done before its commit, so a kill loses it) takes this long.
    pub long_item: Option<LongItem>,
    /// Sim seconds per real second, for a gated worker: a claim worker's lease on the long
    /// item covers its work in the night's time.
    pub scale: f64,
    /// That work in this many steps, each committed as it finishes (guarded, outbox).
    pub split: u64,
    /// A gated worker granted everything says only its latest `wrote` line, just before its
    /// next other line (`crash`, `done`, ...), instead of one per write: for a night nothing
    /// watches write by write (a map night, killed only by its own crash point), where a line
    /// per write costs the supervisor two wake-ups and most of its time.
    pub quiet_writes: bool,
    /// A write whose connection was lost under it (its commit's answer never came) is made
    /// again on a new connection, up to this many times (`--retry-writes`), as a job's retry
    /// loop would; past them (by default at once) the worker ends, and its supervisor restarts
    /// it.
    pub retry_writes: u32,
    /// Checkpoint the log every this many pages, not SQLite's 1,000: a map night's database in
    /// memory (`warehouse::sqlite::wal::SHORT_WAL_PAGES`).
    pub wal_autocheckpoint: Option<u32>,
    /// Where the rows go. Not on the command line (a server's connection string may hold a
    /// password): handed through the environment (`Warehouse::pass_to`), read once where the
    /// process starts (`Warehouse::from_env`).
    pub warehouse: Warehouse,
}

#[derive(Debug, Error)]
pub enum WorkerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "--batch {batch} applies to keyed, guarded and outbox only; {strategy} commits one item at a time"
    )]
    BatchUnsupported { batch: u64, strategy: Strategy },
    #[error(transparent)]
    Send(#[from] crate::fake_vendor::SendError),
    #[error("--side-effect email needs --vendor ADDR (a `reclaim vendor` listening on 127.0.0.1)")]
    NoVendor,
    #[error(
        "--split {split} needs a strategy that checkpoints in the row's transaction (guarded, outbox), not {strategy}"
    )]
    SplitUnsupported { split: u64, strategy: Strategy },
}

/// What a worker that ran to the end says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Claim {
    /// Rows in the warehouse when this worker finished, as it reports them: its word, unchecked.
    pub rows_written: u64,
    /// Rows this process itself inserted.
    pub inserted: u64,
}

/// Runs the job to the end (or to its crash point), writing the worker's log lines to `out`.
pub fn run(config: &WorkerConfig, out: &mut dyn Write) -> Result<Claim, WorkerError> {
    if config.batch > 1 && !config.strategy.batches() {
        return Err(WorkerError::BatchUnsupported {
            batch: config.batch,
            strategy: config.strategy,
        });
    }
    if config.split > 1 && !config.strategy.splits() {
        return Err(WorkerError::SplitUnsupported {
            split: config.split,
            strategy: config.strategy,
        });
    }
    if config.side_effect.is_some() && config.vendor.is_none() && !config.strategy.relays() {
        return Err(WorkerError::NoVendor);
    }
    let db = config.warehouse.open_writer(&writer_spec(config))?;
    let pace = LiveDelay::new(config.delay);
    let gate = config.gated.then(Gate::default);
    if config.supervised {
        pace.follow_stdin(gate.clone());
    }
    let pid = std::process::id();
    let started_ms = (heartbeat::unix_now() * 1000.0) as u64;
    // INVARIANT: every row carries the process that wrote it, even the naive worker's, so the
    // observer can tell one attempt from the next.
    let run_id = if config.strategy.names_its_run() {
        format!("run-{pid}-{started_ms}")
    } else {
        format!("pid-{pid}")
    };
    let mut ctx = Ctx {
        db,
        config,
        run_id: run_id.clone(),
        heartbeat: heartbeat::Writer::new(config.heartbeat.clone()),
        heartbeat_failing: false,
        last_beat: None,
        pace,
        gate,
        writes: 0,
        asked: 0,
        paused: false,
        lease: None,
        unsaid: None,
        out,
        inserted: 0,
        skipped: 0,
        resumed: false,
    };
    ctx.say(&WorkerLine::Start {
        run_id: config.strategy.names_its_run().then(|| run_id.clone()),
        items: config.items,
        strategy: config.strategy,
        pid,
    });
    config.strategy.run(&mut ctx)?;
    // The worker's own word: it counts the table, not what it did, and says ok regardless.
    let rows_written = ctx.db.count()?;
    let claim = Claim {
        rows_written,
        inserted: ctx.inserted,
    };
    ctx.say(&WorkerLine::Done {
        rows_written: claim.rows_written,
        inserted: claim.inserted,
    });
    Ok(claim)
}

/// Where and how a worker writes.
fn writer_spec(config: &WorkerConfig) -> WriterSpec<'_> {
    WriterSpec {
        db: &config.db,
        needs: config.strategy.needs(),
        outbox: config.strategy.relays(),
        sync: config.sync,
        check_integrity: !config.supervised,
        wal_autocheckpoint: config.wal_autocheckpoint,
        steps: config.split > 1,
    }
}

/// The retries a supervised worker makes of a lost write in a lane whose answers are lost.
pub const LOST_ANSWER_RETRIES: u32 = 3;

/// How a worker's line about a write it makes again begins (`--retry-writes`).
pub const RETRY: &str = "retry   ";

/// The state a strategy works with.
struct Ctx<'a> {
    db: Box<dyn Writer>,
    config: &'a WorkerConfig,
    run_id: String,
    heartbeat: heartbeat::Writer,
    heartbeat_failing: bool,
    last_beat: Option<Instant>,
    pace: LiveDelay,
    /// Set for a gated worker: what the supervisor has granted.
    gate: Option<Gate>,
    /// Writes (transactions' items) this process has committed, as a gated worker counts them.
    writes: u64,
    /// The writes in all it has asked for and been granted (`await_grant`).
    asked: u64,
    /// Whether this process made its `--pause-at` stop already.
    paused: bool,
    /// A claim worker's lease on the item it is about to write: its number (1 for the item's
    /// first lease).
    lease: Option<u64>,
    /// The latest `wrote` line of a quiet worker, said before its next line (`quiet_writes`).
    unsaid: Option<WorkerLine>,
    out: &'a mut dyn Write,
    inserted: u64,
    skipped: u64,
    resumed: bool,
}

impl Ctx<'_> {
    /// A line on stdout, in the protocol's words; a supervisor stamps it with the sim time.
    fn say(&mut self, line: &WorkerLine) {
        // The log is advisory: a closed pipe must not stop the work.
        if let Some(wrote) = self.unsaid.take() {
            let _ = writeln!(self.out, "{wrote}");
        }
        let _ = writeln!(self.out, "{line}");
        let _ = self.out.flush();
    }

    /// Dies here, by SIGKILL, if `--crash-at` names this task and point.
    fn crash_if(&mut self, tasks: &[u64], point: CrashPoint) {
        let Some(crash) = self.config.crash_at else {
            return;
        };
        let point_matches = crash.point == point
            || (point == CrashPoint::AfterCommit
                && crash.point == CrashPoint::AfterRowCommit
                && !self.config.strategy.checkpoints_apart());
        if point_matches && tasks.contains(&crash.task) {
            self.say(&WorkerLine::Crash { at: crash });
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
        }
    }

    /// For strategies that skip checkpointed work: counts a skipped task.
    fn skip(&mut self) {
        self.skipped += 1;
    }

    /// Says once where a restarted worker picks up, after the tasks it skipped.
    fn note_resume(&mut self, index: u64) {
        if !self.resumed {
            self.resumed = true;
            let skipped = self.skipped;
            if index >= self.config.items {
                self.say(&WorkerLine::Resume(Resume::NothingLeft { skipped }));
            } else if skipped > 0 {
                self.say(&WorkerLine::Resume(Resume::From {
                    task: index,
                    skipped,
                }));
            }
        }
    }

    /// Writes `rows` in one transaction, with each row's checkpoint in it when `checkpoint`
    /// is set, and, for the strategy that relays, each row's outbox entry (`batch::write_in`
    /// keeps both promises). With `ignore_conflicts` the unique key refuses duplicates
    /// silently (`ON CONFLICT DO NOTHING`). Returns how many rows this process inserted.
    fn write_rows(
        &mut self,
        rows: &[&Row],
        ignore_conflicts: bool,
        checkpoint: bool,
    ) -> Result<u64, WorkerError> {
        let count = rows.len() as u64;
        self.before_write(rows)?;
        // The messages the relay sends once their rows have committed.
        let bodies: Option<Vec<String>> = self.config.strategy.relays().then(|| {
            (rows.iter())
                .map(|r| crate::fake_vendor::Message::for_task(&r.task_id, &r.payload).body())
                .collect()
        });
        let what = rows.first().map_or_else(String::new, |r| r.task_id.clone());
        let inserted = self.retrying(&what, |ctx| {
            ctx.db.write(&Batch {
                rows,
                run_id: &ctx.run_id,
                ignore_conflicts,
                checkpoint,
                outbox: bodies.as_deref(),
            })
        })?;
        Ok(self.after_write(rows, count, inserted))
    }

    /// Runs `write` and, with `--retry-writes N`, runs it again (up to N times) on a new
    /// connection after one lost under it, as a job's retry loop does: the worker cannot know
    /// whether the lost commit happened, so a write that is not idempotent may land twice. Said
    /// first, naming `what` (the write's first task).
    fn retrying<T>(
        &mut self,
        what: &str,
        mut write: impl FnMut(&mut Self) -> Result<T, StoreError>,
    ) -> Result<T, WorkerError> {
        let mut tries = 0;
        loop {
            match write(self) {
                Err(
                    error @ StoreError::Warehouse(crate::warehouse::WarehouseError::Lost { .. }),
                ) if tries < self.config.retry_writes => {
                    tries += 1;
                    self.say(&WorkerLine::Other(format!(
                        "{RETRY}{what}: {error}; the commit may have happened, and the worker cannot know: writing it again on a new connection"
                    )));
                    self.db = self
                        .config
                        .warehouse
                        .open_writer(&writer_spec(self.config))?;
                    // A claim worker's statements are prepared per connection.
                    if self.config.strategy.claims_items() {
                        self.db.prepare_claims()?;
                    }
                }
                other => return Ok(other?),
            }
        }
    }

    /// A gated worker's wait for the grant of its writes up to `need` (said first, so the
    /// supervisor's clock can move on to that write's moment and no further), and, with `wake`,
    /// for a grant at that moment or later. Returns the night's moment of the write granted,
    /// when the night has one to give (a paced night: not one granted everything at once). A
    /// write already granted is not asked for again.
    fn await_grant(&mut self, need: u64, wake: Option<f64>) -> Option<f64> {
        let gate = self.gate.clone()?;
        if need <= self.asked && wake.is_none() {
            return gate.wait_for(need, None).filter(|_| !gate.unlimited());
        }
        // Granted everything (a night at full speed): nothing waits on this line, and a line
        // per write costs the supervisor a wake-up each.
        if !gate.unlimited() {
            let line = match wake {
                Some(at) => WorkerLine::Wake {
                    at: protocol::Moment(at),
                },
                None => WorkerLine::Wait { need },
            };
            self.say(&line);
        }
        let at = gate.wait_for(need, wake);
        self.asked = self.asked.max(need);
        at.filter(|_| !gate.unlimited())
    }

    /// Everything before the transaction that writes `rows`: a gated worker's wait for its
    /// grant, the long item's work, the side effects sent before the commit and the crash
    /// point after them.
    fn before_write(&mut self, rows: &[&Row]) -> Result<(), WorkerError> {
        let at = self.await_grant(self.writes + rows.len() as u64, None);
        let tasks: Vec<u64> = rows
            .iter()
            .filter_map(|r| crate::task::parse_task_id(&r.task_id))
            .collect();
        self.pause_if(&tasks, at);
        self.work_long_item(rows)?;
        self.send_side_effects(rows)?;
        self.crash_if(&tasks, CrashPoint::AfterSend);
        Ok(())
    }

    /// What follows a committed write of `count` rows, `inserted` of them new: the counts, and
    /// a gated worker's `wrote` line.
    fn after_write(&mut self, rows: &[&Row], count: u64, inserted: u64) -> u64 {
        self.inserted += inserted;
        if self.gate.is_some() {
            self.writes += count;
            if let Some(last) = rows
                .last()
                .and_then(|r| crate::task::parse_task_id(&r.task_id))
            {
                let writes = self.writes;
                let line = WorkerLine::Wrote { writes, last };
                if self.config.quiet_writes && self.gate.as_ref().is_some_and(Gate::unlimited) {
                    self.unsaid = Some(line);
                } else {
                    self.say(&line);
                }
            }
        }
        inserted
    }

    /// A naive job's side effect: each row's message, sent before its commit and without a key,
    /// so a restart that redoes the item sends it again. The outbox strategy sends nothing here.
    fn send_side_effects(&mut self, rows: &[&Row]) -> Result<(), WorkerError> {
        if self.config.side_effect.is_none() || self.config.strategy.relays() {
            return Ok(());
        }
        let vendor = self.config.vendor.ok_or(WorkerError::NoVendor)?;
        for row in rows {
            let message = crate::fake_vendor::Message::for_task(&row.task_id, &row.payload);
            crate::fake_vendor::send(vendor, &message, None)?;
        }
        Ok(())
    }

    /// Commits a row's checkpoint in a transaction of its own (two-commit's second commit).
    fn write_checkpoint(&mut self, row: &Row) -> Result<(), WorkerError> {
        let task = row.task_id.clone();
        self.retrying(&task, |ctx| ctx.db.write_checkpoint(&task))
    }

    fn has_checkpoint(&mut self, task: &str) -> Result<bool, WorkerError> {
        Ok(self.db.has_checkpoint(task)?)
    }

    /// Everything after a transaction holding `tasks` has committed: the crash points around the
    /// heartbeat, the heartbeat itself, and the pause before the next item.
    fn committed(&mut self, tasks: &[u64], item_started: Instant) {
        self.crash_if(tasks, CrashPoint::AfterCommit);
        self.db.after_commit();
        if let Some(&last) = tasks.last()
            && self.beat_due(tasks)
        {
            self.last_beat = Some(Instant::now());
            match self.heartbeat.beat(&task_id(last)) {
                Ok(()) if self.heartbeat_failing => {
                    self.heartbeat_failing = false;
                    eprintln!(
                        "heartbeat: writing {} again",
                        self.heartbeat.path().display()
                    );
                }
                Err(error) if !self.heartbeat_failing => {
                    // Reported once; the rows do not depend on the heartbeat.
                    self.heartbeat_failing = true;
                    eprintln!(
                        "heartbeat: cannot write {}: {error} (rows are unaffected)",
                        self.heartbeat.path().display()
                    );
                }
                Ok(()) | Err(_) => {}
            }
        }
        self.crash_if(tasks, CrashPoint::AfterHeartbeat);
        // Each item takes its time, batched or not: a batch only shares the commit. A gated
        // worker's time is the supervisor's to give.
        if self.gate.is_none() {
            self.pace
                .wait(item_started, u32::try_from(tasks.len()).unwrap_or(u32::MAX));
        }
    }

    /// A heartbeat is written after a commit unless one was written less than `BEAT_EVERY` ago:
    /// at the shipped paces that is every item, and at full speed it keeps the file's churn off
    /// the hot path. The last task and an `after-heartbeat` crash point always get their beat,
    /// and so does every write of a worker paced by the supervisor's grants: there the night's
    /// clock gives each write its moment, and a beat skipped because the dashboard was sped up
    /// would move the moment the heartbeat goes stale (the dead-man's alert) with the speed key.
    fn beat_due(&self, tasks: &[u64]) -> bool {
        let last_task = tasks.last().is_some_and(|&t| t + 1 == self.config.items);
        let crash_here = self
            .config
            .crash_at
            .is_some_and(|c| c.point == CrashPoint::AfterHeartbeat && tasks.contains(&c.task));
        let paced_by_grants = self.gate.is_some() && !self.config.delay.is_zero();
        last_task
            || crash_here
            || paced_by_grants
            || self.last_beat.is_none_or(|at| at.elapsed() >= BEAT_EVERY)
    }
}
