//! Reading a database someone else's job writes without taking any SQLite lock, so that reading
//! it can never make the job's write fail: on SQLite's default rollback journal, any reader's
//! SHARED lock held while the job commits fails that commit at once when the job has no busy
//! timeout (the `sqlite3` shell's default), as "database is locked".
//!
//! A connection opened `immutable=1` takes no lock and never looks at a journal (so it never
//! tries to roll back a hot one); it trusts the file not to change, so the read is made
//! consistent here: before the read the file's change counter (header bytes 24..28), then the
//! writer's locks (looked at with `F_GETLK`, which takes none), then the journal; after it, the
//! same in the reverse order. A read across which any of them moved, or that began beside a
//! writer or a live journal, is thrown away by the caller and made again at its next poll.
//!
//! Why those orders: a rollback-journal writer makes its journal live (first 8 bytes not zero)
//! before it writes any page of the database, and moves the counter (page 1) in each commit
//! before its journal stops being live. A commit whose writes overlap the read and whose
//! counter moved before the first look is still live at the journal's first look; one whose
//! counter moves after the read began either moved it by the last look, or is still live at
//! the journal's last look, which comes before it. The writer's EXCLUSIVE lock, held from
//! before its first write to the database file until its journal is finished, gives the same
//! guarantee without a journal, and catches a writer in exclusive locking mode, whose counter
//! moves only once; the journal alone tells a writer killed mid-commit (its lock died with it).
//!
//! Journal modes: DELETE removes the journal at commit, TRUNCATE empties it, PERSIST (and any
//! mode under `locking_mode=EXCLUSIVE`) zeroes its header: a journal that exists with a header
//! of zeros is not live and does not stop a read. A hot journal a killed job left is live: the
//! file may hold half a transaction, so nothing is read until the job's restart rolls it back.
//! MEMORY and OFF keep no journal file: the writer's lock and the counter guard those reads, and
//! a writer killed mid-commit leaves such a file half-written, which no reader can tell.
//! A WAL database (header bytes 18/19 == 2) is not read here: a WAL reader's locks never stop a
//! writer's commit, and the caller keeps its ordinary read-only connection for it.

use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::{FileExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::libc;
use rusqlite::{Connection, OpenFlags};

use super::{SQLITE_HEADER, StoreError};
use crate::base::paths;

/// SQLite's lock bytes on unix: PENDING, then RESERVED, then the 510 bytes of the SHARED range
/// (an EXCLUSIVE lock is a write lock over all of them).
const PENDING_BYTE: i64 = 0x4000_0000;
const SHARED_FIRST: i64 = PENDING_BYTE + 2;
const SHARED_SIZE: i64 = 510;

/// The database file as it stood at the look before a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Before {
    /// Header bytes 18/19 say WAL: read with a locking connection instead.
    pub wal: bool,
    /// Header bytes 24..28: moved by every commit in rollback-journal mode.
    pub counter: u32,
    /// A writer held PENDING or EXCLUSIVE, or a journal was live: the file may be mid-change.
    pub writing: bool,
}

impl Before {
    /// Looks at `path` before a read: `Ok(None)` while it is not a database yet (absent, empty,
    /// or its first page not written).
    ///
    /// INVARIANT: call only while this process holds no POSIX lock on `path`: the descriptor
    /// opened here is closed again, and closing any descriptor of a file drops every lock the
    /// process holds on it. The observer's lock-free reads hold none, and it looks only while
    /// it holds no WAL connection.
    pub fn look(path: &Path) -> Result<Option<Self>, StoreError> {
        let Some((file, header)) = header(path)? else {
            return Ok(None);
        };
        // Counter first, then the locks, then the journal (see the module's header).
        let counter = counter_of(&header);
        let writing = writer_locked(&file) || journal_live(path);
        Ok(Some(Self {
            wal: header[18] == 2 || header[19] == 2,
            counter,
            writing,
        }))
    }

    /// Whether a read made since `look` saw one state of the file: no journal live and no
    /// writer's lock now, and the counter where it was (looked at in that order).
    ///
    /// INVARIANT: as for `look`; the read's connection must be closed already.
    #[must_use]
    pub fn still_holds(&self, path: &Path) -> bool {
        if self.writing || journal_live(path) {
            return false;
        }
        // The writer's locks before the counter, as the module's header says: a writer with
        // no journal file (MEMORY, OFF) that moves the counter and lets go of its lock between
        // two looks taken the other way round would pass both.
        let Ok(Some(file)) = open_database(path) else {
            return false;
        };
        if writer_locked(&file) {
            return false;
        }
        matches!(read_header(&file, path), Ok(Some(header)) if counter_of(&header) == self.counter)
    }
}

/// Opens `path` to read it without any lock: read-only and `immutable`, so SQLite neither locks
/// the file nor looks at (or rolls back) its journal. It caches pages as if the file never
/// changed: open one per read, and close it before `Before::still_holds`.
pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    Connection::open_with_flags(
        format!("file:{}?immutable=1", super::snapshot::uri_path(path)),
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
}

/// The file, still open for `writer_locked`, and its 100-byte header; `None` while there is
/// no whole header (no file, an empty one, or its first page still being written).
fn header(path: &Path) -> Result<Option<(File, [u8; 100])>, StoreError> {
    let Some(file) = open_database(path)? else {
        return Ok(None);
    };
    Ok(read_header(&file, path)?.map(|header| (file, header)))
}

/// The database file, opened to read (`None` while there is none).
fn open_database(path: &Path) -> Result<Option<File>, StoreError> {
    // Non-blocking, and judged by what was opened, as `check_header`: a FIFO in the file's
    // place must not hang a poll.
    match File::options()
        .read(true)
        .custom_flags(OFlag::O_NONBLOCK.bits())
        .open(path)
    {
        Ok(file) if file.metadata().is_ok_and(|m| m.is_file()) => Ok(Some(file)),
        Ok(_) => Err(StoreError::NotSqlite(path.to_path_buf())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(StoreError::Sqlite {
            path: path.to_path_buf(),
            source: rusqlite::Error::InvalidPath(PathBuf::from(error.to_string())),
        }),
    }
}

/// The file's 100-byte header; `None` while it is not whole yet.
fn read_header(file: &File, path: &Path) -> Result<Option<[u8; 100]>, StoreError> {
    let mut header = [0u8; 100];
    let mut read = 0;
    while read < header.len() {
        match file.read_at(&mut header[read..], read as u64) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(_) => return Err(StoreError::NotSqlite(path.to_path_buf())),
        }
    }
    if read >= SQLITE_HEADER.len() && header[..SQLITE_HEADER.len()] != SQLITE_HEADER[..] {
        return Err(StoreError::NotSqlite(path.to_path_buf()));
    }
    Ok((read == header.len()).then_some(header))
}

fn counter_of(header: &[u8; 100]) -> u32 {
    u32::from_be_bytes([header[24], header[25], header[26], header[27]])
}

/// Whether another process holds a write lock on the PENDING byte or the SHARED range: a writer
/// about to write, or writing, the database file. `F_GETLK` only asks; it takes nothing. A file
/// system without POSIX locks says nothing here, and the journal and counter still guard.
fn writer_locked(file: &File) -> bool {
    [(PENDING_BYTE, 1), (SHARED_FIRST, SHARED_SIZE)]
        .into_iter()
        .any(|(start, len)| {
            let mut lock = libc::flock {
                // A read lock conflicts only with write locks: other readers' SHARED locks
                // (and their brief read lock on PENDING) are not a writer.
                l_type: libc::F_RDLCK as libc::c_short,
                l_whence: libc::SEEK_SET as libc::c_short,
                l_start: start,
                l_len: len,
                l_pid: 0,
            };
            fcntl(file, FcntlArg::F_GETLK(&mut lock)).is_ok()
                && lock.l_type != libc::F_UNLCK as libc::c_short
        })
}

/// Whether the database's rollback journal is live: there, and its header (the first 8 bytes,
/// SQLite's journal magic) not zeros. A journal that cannot be read is live if it is not empty.
/// No lock is ever held on a journal, so opening and closing it here is always safe.
fn journal_live(path: &Path) -> bool {
    let journal = paths::with_suffix(path, "-journal");
    let mut file = match File::options()
        .read(true)
        .custom_flags(OFlag::O_NONBLOCK.bits())
        .open(&journal)
    {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return false,
        Err(_) => return std::fs::metadata(&journal).is_ok_and(|m| m.len() > 0),
    };
    let mut magic = [0u8; 8];
    let mut read = 0;
    while read < magic.len() {
        match file.read(&mut magic[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(_) => return true,
        }
    }
    // A journal still shorter than its magic is being written: live.
    read > 0 && (read < magic.len() || magic != [0; 8])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(dir: &Path, journal: &str) -> PathBuf {
        let path = dir.join("job.db");
        let conn = Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
        conn.execute_batch(&format!(
            "PRAGMA journal_mode={journal}; CREATE TABLE t(k TEXT UNIQUE); INSERT INTO t VALUES ('a');"
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        path
    }

    #[test]
    fn a_commit_moves_the_counter_and_a_read_across_it_does_not_hold() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = db(dir.path(), "DELETE");
        let before = Before::look(&path)
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("a database"));
        assert!(!before.wal && !before.writing, "{before:?}");
        assert!(before.still_holds(&path));
        let writer = Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
        writer
            .execute("INSERT INTO t VALUES ('b')", [])
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!before.still_holds(&path), "a commit came between");
    }

    #[test]
    fn a_live_journal_stops_a_read_and_a_lock_free_reader_stops_no_commit() {
        for mode in ["DELETE", "TRUNCATE", "PERSIST"] {
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let path = db(dir.path(), mode);
            let look = || {
                Before::look(&path)
                    .unwrap_or_else(|e| panic!("{e}"))
                    .unwrap_or_else(|| panic!("a database"))
            };
            // Between two transactions a TRUNCATE or PERSIST journal is there, and not live.
            assert!(!look().writing, "{mode}");
            // A hot journal, as a writer killed inside its commit leaves one.
            let journal = paths::with_suffix(&path, "-journal");
            std::fs::write(
                &journal,
                [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7, 0, 0],
            )
            .unwrap_or_else(|e| panic!("{e}"));
            assert!(look().writing, "{mode}: a hot journal");
            std::fs::remove_file(&journal).unwrap_or_else(|e| panic!("{e}"));
            // Lock-free reads of the file, as the observer makes, leave the job free to commit
            // with no busy timeout at all.
            let reader = open(&path).unwrap_or_else(|e| panic!("{e}"));
            reader
                .execute_batch("BEGIN")
                .unwrap_or_else(|e| panic!("{e}"));
            let rows: i64 = reader
                .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(rows, 1);
            let writer = Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
            writer
                .execute("INSERT INTO t VALUES ('b')", [])
                .unwrap_or_else(|e| panic!("{mode}: the job's commit failed beside a reader: {e}"));
            let _ = reader.execute_batch("COMMIT");
        }
    }

    #[test]
    fn another_process_holding_the_exclusive_lock_is_a_writer() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = db(dir.path(), "DELETE");
        // A process of its own: F_GETLK reports only other processes' locks.
        let Ok(mut shell) = std::process::Command::new("sqlite3")
            .arg(&path)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
        else {
            eprintln!("skipped: no sqlite3 shell to hold a lock");
            return;
        };
        let mut stdin = shell.stdin.take().unwrap_or_else(|| panic!("stdin"));
        writeln!(stdin, "BEGIN EXCLUSIVE; SELECT 'held';").unwrap_or_else(|e| panic!("{e}"));
        let mut stdout = shell.stdout.take().unwrap_or_else(|| panic!("stdout"));
        let mut said = [0u8; 5];
        stdout
            .read_exact(&mut said)
            .unwrap_or_else(|e| panic!("{e}"));
        let before = Before::look(&path).unwrap_or_else(|e| panic!("{e}"));
        drop(stdin);
        let _ = shell.wait();
        assert!(before.is_some_and(|b| b.writing), "{before:?}");
        let after = Before::look(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(after.is_some_and(|b| !b.writing), "{after:?}");
    }

    #[test]
    fn a_wal_database_is_said_to_be_one() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = db(dir.path(), "WAL");
        let before = Before::look(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(before.is_some_and(|b| b.wal));
        assert!(matches!(
            Before::look(&dir.path().join("none.db")),
            Ok(None)
        ));
    }
}
