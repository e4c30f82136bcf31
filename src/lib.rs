//! reclaim: replays a batch job that wrote every row twice after a SIGKILL, with real worker
//! processes, real SQLite databases and real signals, and derives the job's status from its rows.
//!
//! The engine (workers, supervisor, observer, clock, verdict) knows nothing of terminals; the
//! dashboard and the headless commands both drive it.

pub mod base;
pub mod cli;
pub mod commands;
pub mod engine;
pub mod error;
pub mod export;
pub mod fake_vendor;
pub mod harness;
pub mod heartbeat;
pub mod map;
pub mod observer;
pub mod queue;
pub mod record;
pub mod scenario;
pub mod supervisor;
pub mod task;
pub mod tui;
pub mod verdict;
pub mod warehouse;
pub mod worker;
