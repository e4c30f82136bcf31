//! The supervisor's parts: spawning and signalling worker processes, and the kill schedule.
//! The restart policy itself lives in the engine, which owns the processes.

pub mod process;
pub mod schedule;
