//! The ground floor: what every other module may use and that uses nothing of reclaim's above it.
//! Text, the sim clock, paths and files, the nights kept, exit codes, signals, bounds, the seeded stream, the
//! escaped standard output and the robustness tests' hooks.

pub mod cgroup;
pub mod clock;
pub mod exit;
pub mod fsafe;
pub mod kept;
pub mod limits;
pub mod orphans;
pub mod out;
pub mod paths;
pub mod postmaster;
pub mod seeded;
pub mod signals;
pub mod test_hooks;
pub mod text;
