//! The bounds reclaim accepts, in one place: the command line, scenarios and the dashboard all
//! check against these.

/// The largest queue reclaim accepts; a million items is an ordinary run.
pub const MAX_ITEMS: u64 = 100_000_000;

/// Workers running at once on one lane's database (duplicate delivery), from a flag, a scenario
/// or the dashboard's `a` key alike.
pub const MAX_WORKERS: usize = 64;

/// Items per transaction (keyed, guarded and outbox).
pub const MAX_BATCH: u64 = 100_000;

/// The most rows a `map` or a `shrink` may plan to write across its nights (two per item per
/// night: a crash and a restart): a typo or a doctored recording cannot start hours of work.
pub const MAX_PLANNED_ROWS: u64 = 200_000_000;

/// The largest recording reclaim reads (bytes): a night's samples are read whole into memory
/// (the incident's is about 1 MB), so a larger file is refused before any of it is read, and a
/// file that grows past it while it is read is refused there.
pub const MAX_RECORDING_BYTES: u64 = 256 * 1024 * 1024;
