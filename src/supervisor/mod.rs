//! The supervisor's parts: spawning and signalling worker processes (`process`), one worker
//! position across its attempts with its exit classification and restart policy (`slot`), and
//! the host's seeded kill schedule (`schedule`).

pub mod lines;
pub mod process;
pub mod schedule;
pub mod service;
pub mod slot;
