//! Keeping a warehouse's write-ahead log bounded while readers come and go.
//!
//! SQLite's auto-checkpoint is PASSIVE: it copies the frames no reader still needs and never
//! rewinds the log while a reader uses it, and the `-wal` file is never shrunk. The observer
//! polls every few milliseconds and `inspect` holds one read transaction for its whole report,
//! so some reader nearly always uses the log, which then grew without bound (6 GB beside a
//! 90 MB database: four guarded workers, 300,000 items, `inspect` in a loop).
//!
//! So each worker, after each commit, looks at the size of the `-wal` file; past `WAL_LIMIT` it
//! runs `PRAGMA wal_checkpoint(TRUNCATE)`. That holds the writer lock (no frame is added
//! meanwhile), copies every frame into the database, then waits (the connection's busy timeout)
//! for the readers that began before the copy finished. A reader that begins after the copy
//! reads the database file alone and does not hold the log, so a stream of new readers cannot
//! starve the checkpoint: only one reader's transaction that outlasts the busy timeout can. Then
//! the log is truncated to zero bytes. `journal_size_limit` also caps what a natural rewind
//! (the log fully copied with no reader on it) leaves on disk.
//!
//! A night's database in memory (a map night, on tmpfs) is checkpointed far more often
//! (`SHORT_WAL_PAGES`): there a checkpoint's syncs cost nothing, while every page the log grows
//! by is a fresh page of memory for the kernel to allocate, zero and, when the night's files are
//! removed, free again. A 300-transaction night's log grew to about 2 MB; it now wraps at 400
//! KB. On a disk the default stays: each checkpoint syncs the log and the database.
//!
//! INVARIANT (the bound, README/RELIABILITY): the `-wal` file stays under `WAL_LIMIT` plus what
//! the workers commit between two looks at its size (at most `LOOK_EVERY` apart, or one commit)
//! and before the checkpoint takes the writer lock, as long as no reader keeps one read transaction open
//! longer than the busy timeout (5 s). When one does, the checkpoint gives up, and the worker
//! tries again only after as long again, so such a reader costs the writers at most about half
//! their time rather than all of it; meanwhile the log grows.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::Connection;

/// The `-wal` size past which a worker checkpoints and truncates it: 16 times the
/// auto-checkpoint's 1,000 pages of 4 KiB, so a night without long readers never reaches it.
pub const WAL_LIMIT: u64 = 64 * 1024 * 1024;

/// The auto-checkpoint of a database in memory, in pages (SQLite's default is 1,000): the full
/// map took 0.87 of its CPU at 100, and 50 was no better (docs/history/benchmarks.md, "A short
/// log for a night in memory").
pub const SHORT_WAL_PAGES: u32 = 100;

/// The auto-checkpoint of a night's worker whose database is in `dir`: `SHORT_WAL_PAGES` when
/// `dir` is in memory, SQLite's own (`None`) on a disk.
#[must_use]
pub fn night_autocheckpoint(dir: &Path) -> Option<u32> {
    crate::base::paths::in_memory(dir).then_some(SHORT_WAL_PAGES)
}

/// A checkpoint that returned busy sooner than this lost a race with another worker's
/// checkpoint, not a wait for a reader: the next commit tries again at once.
const QUICK: Duration = Duration::from_millis(100);

/// The most often a worker looks at the log's size: a stat after every commit cost a few
/// percent of guarded's batch-1 throughput, and the log grows well under a MiB in this time.
const LOOK_EVERY: Duration = Duration::from_millis(1);

/// How long a worker keeps trying for the checkpoint lock before it goes on with its work.
const CONTENDED: Duration = Duration::from_millis(50);

/// One worker's watch over the log of the warehouse it writes.
#[derive(Debug)]
pub struct WalBound {
    wal: PathBuf,
    /// No new look at the log before this: after a checkpoint that waited for a reader in
    /// vain, or `LOOK_EVERY` after the last look.
    next_try: Option<Instant>,
}

impl WalBound {
    /// Sets `journal_size_limit` on `conn` (a worker's connection to `db`, in WAL mode), and
    /// the auto-checkpoint when one is given (`SHORT_WAL_PAGES` for a database in memory).
    pub fn new(
        conn: &Connection,
        db: &Path,
        autocheckpoint: Option<u32>,
    ) -> rusqlite::Result<Self> {
        conn.pragma_update(
            None,
            "journal_size_limit",
            i64::try_from(WAL_LIMIT).unwrap_or(i64::MAX),
        )?;
        if let Some(pages) = autocheckpoint {
            conn.pragma_update(None, "wal_autocheckpoint", pages)?;
        }
        Ok(Self {
            wal: crate::base::paths::with_suffix(db, "-wal"),
            next_try: None,
        })
    }

    /// After a commit: checkpoints and truncates the log when it has outgrown `WAL_LIMIT`.
    /// Advisory: a checkpoint that fails leaves the rows as they are, and the next commit (or
    /// the next write's own error) says more.
    pub fn after_commit(&mut self, conn: &Connection) {
        let now = Instant::now();
        if self.next_try.is_some_and(|at| now < at) {
            return;
        }
        // A stat, not an open: closing a descriptor of the database's files would drop this
        // process's POSIX locks on them.
        self.next_try = Some(now + LOOK_EVERY);
        let size = std::fs::metadata(&self.wal).map_or(0, |m| m.len());
        if size <= WAL_LIMIT {
            return;
        }
        loop {
            let started = Instant::now();
            let result = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                r.get::<_, i64>(0)
            });
            let busy = !matches!(result, Ok(0));
            if !busy {
                return;
            }
            if started.elapsed() >= QUICK {
                // It waited for a reader in vain: leave the writers alone as long again.
                let waited = now.elapsed();
                self.next_try = Some(Instant::now() + waited);
                return;
            }
            // Another connection held the checkpoint lock (SQLite does not wait for it: every
            // other worker's auto-checkpoint takes it after each commit while the log is long).
            // Try again at once rather than after a commit that makes the log longer still.
            if now.elapsed() >= CONTENDED {
                return;
            }
            std::thread::sleep(Duration::from_micros(500));
        }
    }
}
