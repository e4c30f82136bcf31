//! The hostile pass of issue 24: each probe that once turned reclaim against its user (a
//! scenario that runs a command, a planted link or FIFO, an escaped child, an endless query, a
//! slow client, a full disk), now a test that fails on the old behaviour.

mod bounds;
mod children;
mod files;
mod hangs;
mod output;
mod scenario;
mod small;
mod vendor;
mod writes;

use std::path::Path;

pub(crate) use crate::support::tempdir;

pub(crate) fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}
