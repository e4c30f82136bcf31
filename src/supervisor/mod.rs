//! The supervisor's parts: spawning and signalling worker processes (`process`), one worker
//! position across its attempts with its exit classification and restart policy (`slot`), and
//! the host's seeded kill schedule (`schedule`), and the fork server that starts reclaim's own
//! worker with a fork instead of an exec (`fork_server`).

pub mod fork_server;
pub mod lines;
pub mod orphans;
pub mod process;
pub mod schedule;
pub mod service;
pub mod slot;
