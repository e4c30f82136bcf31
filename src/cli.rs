//! The command line: one clap-derived enum of subcommands.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::store::SyncMode;
use crate::worker::{CrashAt, Strategy};

/// The largest queue reclaim accepts; a million items is an ordinary run.
pub const MAX_ITEMS: u64 = 100_000_000;

#[derive(Debug, Parser)]
#[command(
    name = "reclaim",
    version,
    about = "Replays the night a batch job wrote every row twice: real workers, real SQLite, real SIGKILLs",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one worker process against a warehouse (what the supervisor spawns)
    Worker(WorkerArgs),
    /// Report what a warehouse holds and derive the job's status from its rows
    Inspect(InspectArgs),
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// How the worker makes a restart safe (or does not)
    #[arg(long, value_enum)]
    pub strategy: Strategy,
    /// The warehouse database (created if absent)
    #[arg(long)]
    pub db: PathBuf,
    /// Items in the queue: task-000 .. task-(N-1)
    #[arg(long, default_value_t = 200, value_parser = items_parser())]
    pub items: u64,
    /// Pause after each item, in milliseconds
    #[arg(long, default_value_t = 10)]
    pub delay_ms: u64,
    /// Heartbeat file [default: beside the database, DB.heartbeat]
    #[arg(long)]
    pub heartbeat: Option<PathBuf>,
    /// Items per transaction (keyed and guarded)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub batch: u64,
    /// Die by SIGKILL at TASK:POINT (before-write, after-row-commit, after-commit, after-heartbeat)
    #[arg(long, value_name = "TASK:POINT")]
    pub crash_at: Option<CrashAt>,
    /// normal survives a process crash (what reclaim models); full also survives a power cut
    #[arg(long, value_enum, default_value_t = SyncMode::Normal)]
    pub sync: SyncMode,
    /// Accept pace changes on stdin (used by the supervisor)
    #[arg(long, hide = true)]
    pub control: bool,
}

impl WorkerArgs {
    #[must_use]
    pub fn delay(&self) -> Duration {
        Duration::from_millis(self.delay_ms)
    }
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The warehouse database (opened read-only)
    #[arg(long)]
    pub db: PathBuf,
    /// The queue size to judge the rows against
    #[arg(long, default_value_t = 200, value_parser = items_parser())]
    pub items: u64,
    /// Print the facts as one JSON object
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn items_parser() -> clap::builder::RangedU64ValueParser<u64> {
    clap::value_parser!(u64).range(1..=MAX_ITEMS)
}
