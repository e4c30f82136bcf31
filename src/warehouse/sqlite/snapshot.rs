//! Reading a database without changing any file around it: the snapshot every check that can
//! refuse runs on, and what `inspect` reads.

use std::fs;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::{BUSY_TIMEOUT, StoreError};
use crate::base::paths;

/// A connection that reads a database as it stands without changing any file: not the
/// database, not its `-wal`, and no new `-wal` or `-shm` beside it.
///
/// SQLite's read-only connections still create `-wal` and `-shm` when they are missing, so the
/// way in depends on what is beside the file:
/// - `-wal` and `-shm` both there (a writer running, or killed): read-only, in place; it creates
///   nothing, and a read-only connection never checkpoints, whatever the `-wal` holds.
/// - a `-wal` without its `-shm`, or a hot `-journal` (a copied database, an interrupted write):
///   no writer can be running, so the files are copied into a private folder and read there,
///   where SQLite may recover or roll back as it likes.
/// - neither: every committed row is in the file, which is opened `immutable`.
pub struct Snapshot {
    // Declared first: dropped before the copy's folder is removed.
    pub conn: Connection,
    _copy: Option<PrivateCopy>,
}

impl Snapshot {
    /// `path` must exist; resolve it first (`paths::existing_file`) so its companions are looked
    /// for where SQLite keeps them.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let present = |suffix: &str| {
            fs::symlink_metadata(paths::with_suffix(path, suffix)).is_ok_and(|m| m.len() > 0)
        };
        // A writer opening or closing a WAL database has its `-wal` for a moment without its
        // `-shm`, and one switching a new database to WAL has a `-journal` for a moment: only
        // what lasts is a log left behind. Look again, briefly, before copying.
        let mut look = 0;
        let (wal, shm, journal) = loop {
            let seen = (present("-wal"), present("-shm"), present("-journal"));
            let (wal, shm, journal) = seen;
            if !(journal || (wal && !shm)) || look == SETTLE_LOOKS {
                break seen;
            }
            look += 1;
            std::thread::sleep(SETTLE);
        };
        if journal || (wal && !shm) {
            let copy = PrivateCopy::of(path)?;
            let conn = Connection::open_with_flags(
                &copy.db,
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(|e| StoreError::sqlite(path, e))?;
            conn.busy_timeout(BUSY_TIMEOUT)
                .map_err(|e| StoreError::sqlite(path, e))?;
            return Ok(Self {
                conn,
                _copy: Some(copy),
            });
        }
        let conn = if wal {
            Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
        } else {
            Connection::open_with_flags(
                format!("file:{}?immutable=1", uri_path(path)),
                OpenFlags::SQLITE_OPEN_READ_ONLY
                    | OpenFlags::SQLITE_OPEN_URI
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
        }
        .map_err(|e| StoreError::sqlite(path, e))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| StoreError::sqlite(path, e))?;
        Ok(Self { conn, _copy: None })
    }
}

/// How long and how often `Snapshot::open` looks again at a log without its companion.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(20);
const SETTLE_LOOKS: u32 = 10;

/// A database and its `-wal`/`-journal` copied into a folder of reclaim's own, removed on drop.
struct PrivateCopy {
    /// Removed, with the copy in it, when dropped.
    _dir: tempfile::TempDir,
    db: PathBuf,
}

impl PrivateCopy {
    fn of(path: &Path) -> Result<Self, StoreError> {
        let failed = |error: std::io::Error| StoreError::Copy {
            path: path.to_path_buf(),
            message: error.to_string(),
        };
        let dir = paths::private_dir_in(&std::env::temp_dir(), "snapshot").map_err(failed)?;
        let copy = Self {
            db: dir.path().join("snapshot.db"),
            _dir: dir,
        };
        fs::copy(path, &copy.db).map_err(failed)?;
        for suffix in ["-wal", "-journal"] {
            let from = paths::with_suffix(path, suffix);
            match fs::copy(&from, paths::with_suffix(&copy.db, suffix)) {
                // Gone since it was seen: a writer finished with it, and the file holds it all.
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                other => {
                    other.map_err(failed)?;
                }
            }
        }
        Ok(copy)
    }
}

/// A path percent-encoded for a `file:` URI.
pub(super) fn uri_path(path: &Path) -> String {
    use std::fmt::Write as _;
    use std::os::unix::ffi::OsStrExt as _;
    let mut out = String::new();
    for &byte in path.as_os_str().as_bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}
