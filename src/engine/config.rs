//! What a night is made of: its lanes, the host's kill plan, and the supervisor's policy. Built
//! from a scenario or from `run`'s flags; the engine only reads it.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::pace::Pace;
use crate::store::SyncMode;
use crate::supervisor::schedule::KillPlan;
use crate::worker::{CrashAt, Strategy};

/// The dead-man's switch threshold of the postmortem's cron script, in sim seconds.
pub const DEFAULT_DEAD_MAN: f64 = 300.0;

/// One lane: a strategy, its own database, and its workers.
#[derive(Debug, Clone, Serialize)]
pub struct LaneConfig {
    pub name: String,
    pub strategy: Strategy,
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
    /// A crash point for each worker's first attempt.
    pub crash_at: Option<CrashAt>,
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
    /// Heartbeat age, in sim seconds, at which the dead-man's switch fires.
    pub dead_man: f64,
    /// The `reclaim` executable that runs `worker`.
    pub exe: PathBuf,
    /// Hang every worker (SIGSTOP) once the first lane has written this task.
    pub hang: Option<HangPlan>,
    /// Delete every checkpoint of every lane once the first lane has written this task.
    pub wipe_at_task: Option<u64>,
}

/// A scheduled hang: the worker stays alive and stops making progress.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HangPlan {
    pub at_task: u64,
    /// Sim seconds until SIGCONT; `None` hangs until someone acts.
    pub resume_after: Option<f64>,
}
