//! The bounds reclaim accepts, in one place: the command line, scenarios and the dashboard all
//! check against these.

/// The largest queue reclaim accepts; a million items is an ordinary run.
pub const MAX_ITEMS: u64 = 100_000_000;

/// Workers running at once on one lane's database (duplicate delivery), from a flag, a scenario
/// or the dashboard's `a` key alike.
pub const MAX_WORKERS: usize = 64;

/// Items per transaction (keyed, guarded and outbox).
pub const MAX_BATCH: u64 = 100_000;
