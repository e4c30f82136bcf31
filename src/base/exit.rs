//! Exit codes, as ripgrep's: 0 the data holds, 1 the data verdict failed, 2 an error. Every
//! command returns one of these; the binary's glue maps an error to `ERROR`.

/// The verdict held.
pub const OK: u8 = 0;
/// The data verdict failed (duplicates, missing rows, a job that never completed).
pub const DATA_WRONG: u8 = 1;
/// An error: bad input, a database reclaim will not touch, a worker that could not run.
pub const ERROR: u8 = 2;
