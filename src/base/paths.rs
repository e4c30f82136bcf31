//! Paths checked before anything is opened: what a path names (a regular file, a folder, a FIFO,
//! a device, a link to nothing), resolved once, and whether it is a database's companion.
//!
//! Every path argument goes through here first, so a FIFO is never opened (opening one blocks
//! until a writer comes), a device is never replaced by a file, and a path naming a warehouse's
//! `-wal` is refused before the warehouse is touched. Nothing here opens a file for writing;
//! `claim_new` is the one function that creates anything, and it creates only a new, empty file.

use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::base::text::escape_controls;

/// A path refused, with what it was given as (`--db`, `--record`, ...).
#[derive(Debug, Error)]
pub enum PathError {
    #[error("{what} {path} does not exist")]
    Missing { what: &'static str, path: String },
    #[error("{what} {path} is a folder; give a file")]
    Folder { what: &'static str, path: String },
    #[error(
        "{what} {path} is a {kind}, not a regular file; reclaim reads and writes regular files only"
    )]
    Special {
        what: &'static str,
        path: String,
        kind: &'static str,
    },
    #[error("{what} {path} is a symbolic link to {target}, which does not exist; give a real path")]
    Dangling {
        what: &'static str,
        path: String,
        target: String,
    },
    #[error(
        "{what} {path} is a symbolic link; reclaim does not write through a link, give the real path"
    )]
    Link { what: &'static str, path: String },
    #[error("{what} {path} already exists; {advice}")]
    Exists {
        what: &'static str,
        path: String,
        advice: &'static str,
    },
    #[error("{what} {path}: folder {dir} does not exist; create it first or choose another path")]
    NoFolder {
        what: &'static str,
        path: String,
        dir: String,
    },
    #[error("{what} {path}: {dir} is not a folder")]
    NotFolder {
        what: &'static str,
        path: String,
        dir: String,
    },
    #[error("{what} {path}: folder {dir} is not writable; choose another path")]
    ReadOnlyFolder {
        what: &'static str,
        path: String,
        dir: String,
    },
    #[error(
        "{what} {path} is the {role} of the warehouse {db}; writing it would destroy the night's data, so reclaim refuses"
    )]
    Companion {
        what: &'static str,
        path: String,
        role: &'static str,
        db: String,
    },
    #[error(
        "{path} already exists beside the new warehouse {db} (it would be its {role}); reclaim leaves it untouched, give --db a path with none of -wal, -shm, -journal, .heartbeat, .keys, .vendor.sqlite beside it"
    )]
    Leftover {
        path: String,
        role: &'static str,
        db: String,
    },
    #[error("{what} {path}: {message}")]
    Io {
        what: &'static str,
        path: String,
        message: String,
    },
}

/// A path as shown in an error line: one line, whatever bytes it holds.
#[must_use]
pub fn shown(path: &Path) -> String {
    escape_controls(&crate::base::text::shorten(
        &path.display().to_string(),
        160,
    ))
}

/// What a path names, with its last symbolic link followed.
#[derive(Debug)]
pub enum PathKind {
    /// Nothing there, and no link either.
    Missing,
    /// A link whose target does not exist.
    Dangling(PathBuf),
    File(fs::Metadata),
    Folder,
    /// A FIFO, a socket, a character or block device: (its kind).
    Special(&'static str),
}

/// Looks at `path` without opening it.
pub fn look(path: &Path) -> io::Result<PathKind> {
    let link = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        // A path through a file (`afile/w.db`), or too long to be one, names nothing; the
        // folder check says why.
        Err(error)
            if error.kind() == io::ErrorKind::NotFound
                || error.raw_os_error() == Some(nix::libc::ENOTDIR)
                || error.raw_os_error() == Some(nix::libc::ENAMETOOLONG) =>
        {
            return Ok(PathKind::Missing);
        }
        Err(error) => return Err(error),
    };
    let meta = if link.file_type().is_symlink() {
        match fs::metadata(path) {
            Ok(meta) => meta,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Ok(PathKind::Dangling(fs::read_link(path).unwrap_or_default()));
            }
            Err(error) => return Err(error),
        }
    } else {
        link
    };
    let kind = meta.file_type();
    Ok(if kind.is_file() {
        PathKind::File(meta)
    } else if kind.is_dir() {
        PathKind::Folder
    } else if kind.is_fifo() {
        PathKind::Special("FIFO (named pipe)")
    } else if kind.is_socket() {
        PathKind::Special("socket")
    } else if kind.is_char_device() || kind.is_block_device() {
        PathKind::Special("device")
    } else {
        PathKind::Special("special file")
    })
}

fn io_error(what: &'static str, path: &Path, error: &io::Error) -> PathError {
    PathError::Io {
        what,
        path: shown(path),
        message: error.to_string(),
    }
}

/// An existing regular file reclaim will read (a recording, a scenario, a warehouse to inspect),
/// resolved to its real path so its companions (`-wal`) are looked for where SQLite keeps them.
pub fn existing_file(path: &Path, what: &'static str) -> Result<PathBuf, PathError> {
    match look(path).map_err(|e| io_error(what, path, &e))? {
        PathKind::File(_) => fs::canonicalize(path).map_err(|e| io_error(what, path, &e)),
        PathKind::Missing => Err(PathError::Missing {
            what,
            path: shown(path),
        }),
        other => Err(refusal(what, path, other)),
    }
}

/// A file reclaim will create: nothing may be there yet, not even a link (to nothing or to
/// something), and its folder must exist and be writable. Returns the path with its folder
/// resolved.
pub fn new_file(
    path: &Path,
    what: &'static str,
    advice: &'static str,
) -> Result<PathBuf, PathError> {
    match look(path).map_err(|e| io_error(what, path, &e))? {
        PathKind::Missing => writable_folder(path, what),
        PathKind::File(_) => Err(PathError::Exists {
            what,
            path: shown(path),
            advice,
        }),
        other => Err(refusal(what, path, other)),
    }
}

/// A file reclaim may write in place or create (a hand-started worker's warehouse, a heartbeat):
/// a regular file, resolved, or a new path; either way in a writable folder, since SQLite keeps
/// its `-wal` beside the file and a heartbeat is renamed into place.
pub fn file_or_new(path: &Path, what: &'static str) -> Result<PathBuf, PathError> {
    match look(path).map_err(|e| io_error(what, path, &e))? {
        PathKind::Missing => writable_folder(path, what),
        PathKind::File(_) => {
            let real = fs::canonicalize(path).map_err(|e| io_error(what, path, &e))?;
            writable_folder(&real, what)
        }
        other => Err(refusal(what, path, other)),
    }
}

fn refusal(what: &'static str, path: &Path, entry: PathKind) -> PathError {
    match entry {
        PathKind::Folder => PathError::Folder {
            what,
            path: shown(path),
        },
        PathKind::Special(kind) => PathError::Special {
            what,
            path: shown(path),
            kind,
        },
        PathKind::Dangling(target) => PathError::Dangling {
            what,
            path: shown(path),
            target: shown(&target),
        },
        PathKind::Missing | PathKind::File(_) => PathError::Missing {
            what,
            path: shown(path),
        },
    }
}

/// The folder of a new file: it must be a folder and writable. Returns the resolved folder
/// joined with the file's name.
fn writable_folder(path: &Path, what: &'static str) -> Result<PathBuf, PathError> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let Some(name) = path.file_name() else {
        return Err(PathError::Folder {
            what,
            path: shown(path),
        });
    };
    match look(dir).map_err(|e| io_error(what, path, &e))? {
        PathKind::Folder => {}
        PathKind::Missing | PathKind::Dangling(_) => {
            return Err(PathError::NoFolder {
                what,
                path: shown(path),
                dir: shown(dir),
            });
        }
        PathKind::File(_) | PathKind::Special(_) => {
            return Err(PathError::NotFolder {
                what,
                path: shown(path),
                dir: shown(dir),
            });
        }
    }
    if nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_err() {
        return Err(PathError::ReadOnlyFolder {
            what,
            path: shown(path),
            dir: shown(dir),
        });
    }
    let dir = fs::canonicalize(dir).map_err(|e| io_error(what, path, &e))?;
    Ok(dir.join(name))
}

/// `db` with a suffix added to its file name (`warehouse.db` -> `warehouse.db-wal`).
#[must_use]
pub fn with_suffix(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The files SQLite and reclaim keep beside a warehouse, each with the role it plays.
pub const COMPANIONS: [(&str, &str); 5] = [
    ("-wal", "write-ahead log"),
    ("-shm", "shared-memory index"),
    ("-journal", "rollback journal"),
    (".heartbeat", "heartbeat file"),
    (".keys", "queue's keys file"),
];

/// Whether `a` and `b` (both resolved) name one file: the same path, or, for files that exist,
/// the same inode (a hard link counts).
#[must_use]
pub fn same_file(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// `path` resolved for comparing: its real path if it exists, else its folder's real path (`.`
/// for a bare name) joined with its name; as given when neither can be found.
#[must_use]
pub fn resolved(path: &Path) -> PathBuf {
    fs::canonicalize(path)
        .ok()
        .or_else(|| {
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            let parent = fs::canonicalize(parent.unwrap_or(Path::new("."))).ok()?;
            Some(parent.join(path.file_name()?))
        })
        .unwrap_or_else(|| path.to_path_buf())
}

/// Refuses `path` (resolved) when it is the warehouse `db` (resolved) itself or one of its
/// companions, by name or (for files that exist) by identity, so a hard link counts too.
/// `allowed` names a companion suffix the caller may write (the heartbeat's own).
pub fn refuse_companion(
    path: &Path,
    what: &'static str,
    db: &Path,
    allowed: Option<&str>,
) -> Result<(), PathError> {
    let same = |other: &Path| same_file(path, other);
    let companion = |role: &'static str| PathError::Companion {
        what,
        path: shown(path),
        role,
        db: shown(db),
    };
    if same(db) {
        return Err(companion("database file"));
    }
    for (suffix, role) in COMPANIONS {
        if Some(suffix) != allowed && same(&with_suffix(db, suffix)) {
            return Err(companion(role));
        }
    }
    // The vendor's files a night with a side effect makes beside it: refused before the night,
    // not once they exist (or after the whole night).
    let vendor = vendor_db_path(db);
    for (suffix, role) in VENDOR_FILES {
        if same(&with_suffix(&vendor, suffix)) {
            return Err(companion(role));
        }
    }
    Ok(())
}

/// The files of the vendor a night with a side effect starts beside its warehouse
/// (`NAME.vendor.sqlite`, from `vendor_db_path`), each with its role.
const VENDOR_FILES: [(&str, &str); 4] = [
    ("", "vendor's database"),
    ("-wal", "vendor's write-ahead log"),
    ("-shm", "vendor's shared-memory index"),
    ("-journal", "vendor's rollback journal"),
];

/// Refuses a new warehouse path when any companion is already there: a stale `-wal` would be
/// replayed into the new database (or emptied), an old heartbeat overwritten; the vendor's
/// database beside it and its own companions likewise (its `-wal` was overwritten).
pub fn refuse_leftovers(db: &Path) -> Result<(), PathError> {
    let vendor = vendor_db_path(db);
    let companions = COMPANIONS
        .into_iter()
        .map(|(suffix, role)| (with_suffix(db, suffix), role))
        .chain(
            VENDOR_FILES
                .into_iter()
                .map(|(suffix, role)| (with_suffix(&vendor, suffix), role)),
        );
    for (companion, role) in companions {
        if !matches!(look(&companion), Ok(PathKind::Missing)) {
            return Err(PathError::Leftover {
                path: shown(&companion),
                role,
                db: shown(db),
            });
        }
    }
    Ok(())
}

/// Creates `path` as a new, empty file, atomically: if anything is there (a file, a link,
/// another reclaim's database created a moment ago), nothing is changed and `Exists` comes back.
pub fn claim_new(path: &Path, what: &'static str, advice: &'static str) -> Result<(), PathError> {
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Err(PathError::Exists {
            what,
            path: shown(path),
            advice,
        }),
        Err(error) => Err(io_error(what, path, &error)),
    }
}

/// Writes `path` as a new file, exclusively (`O_EXCL`) and never through a link (`O_NOFOLLOW`):
/// anything already there is left alone and refused.
pub fn write_new(
    path: &Path,
    write: impl FnOnce(&mut dyn io::Write) -> io::Result<()>,
) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)?;
    write(&mut file)?;
    file.sync_all()
}

/// Whether `dir` is in memory (tmpfs, as `/dev/shm` is): a sync there costs nothing, and every
/// page a file grows by is freshly allocated memory.
#[must_use]
pub fn in_memory(dir: &Path) -> bool {
    nix::sys::statfs::statfs(dir)
        .is_ok_and(|fs| fs.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC)
}

/// A folder of reclaim's own under `base`: made exclusively under a random name (a name already
/// taken, or planted, is never used), private (0700), and removed when the handle drops unless
/// it is kept (`TempDir::keep`).
pub fn private_dir_in(base: &Path, label: &str) -> io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt as _;
    tempfile::Builder::new()
        .prefix(&format!("reclaim-{label}-{}-", std::process::id()))
        .permissions(fs::Permissions::from_mode(0o700))
        .tempdir_in(base)
}

/// The vendor's database for a lane's warehouse: beside it, `NAME.vendor.sqlite` (here, with
/// the other companions, so paths needs nothing from the vendor).
#[must_use]
pub fn vendor_db_path(warehouse: &Path) -> PathBuf {
    let stem = warehouse
        .file_stem()
        .map_or_else(|| "warehouse".into(), |s| s.to_string_lossy().into_owned());
    warehouse.with_file_name(format!("{stem}.vendor.sqlite"))
}

/// What `--db` must be for a new night: a new path, no companion of an earlier warehouse beside
/// it. Returns the path with its folder resolved. Nothing is created.
pub fn new_warehouse(path: &Path) -> Result<PathBuf, PathError> {
    let db = new_file(
        path,
        "--db",
        "reclaim run starts a fresh night, so give a new --db path",
    )?;
    refuse_leftovers(&db)?;
    Ok(db)
}

/// A recording must go to a new file in a folder that can be written, and never to the
/// warehouse `db` or a companion of it: checked before any worker starts. Returns the path with
/// its folder resolved.
pub fn new_recording(path: &Path, db: Option<&Path>) -> Result<PathBuf, PathError> {
    let record = new_file(path, "--record", "give --record a new file")?;
    if let Some(db) = db {
        refuse_companion(&record, "--record", db, None)?;
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn companions_are_found_by_name_and_by_identity() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let db = dir.path().join("w.db");
        fs::write(&db, b"")?;
        let wal = with_suffix(&db, "-wal");
        assert!(matches!(
            refuse_companion(&wal, "--heartbeat", &db, Some(".heartbeat")),
            Err(PathError::Companion { role, .. }) if role == "write-ahead log"
        ));
        let hb = with_suffix(&db, ".heartbeat");
        assert!(refuse_companion(&hb, "--heartbeat", &db, Some(".heartbeat")).is_ok());
        // The vendor's files, which do not exist yet: refused by name.
        for name in [
            "w.vendor.sqlite",
            "w.vendor.sqlite-wal",
            "w.vendor.sqlite-journal",
        ] {
            assert!(
                matches!(
                    refuse_companion(&dir.path().join(name), "--record", &db, None),
                    Err(PathError::Companion { role, .. }) if role.starts_with("vendor's")
                ),
                "{name}"
            );
        }
        assert!(refuse_companion(&hb, "--record", &db, None).is_err());
        let link = dir.path().join("hard");
        fs::hard_link(&db, &link)?;
        assert!(refuse_companion(&link, "--heartbeat", &db, None).is_err());
        assert!(refuse_companion(&dir.path().join("other"), "--record", &db, None).is_ok());
        Ok(())
    }

    #[test]
    fn links_to_nothing_and_special_files_are_named() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link)?;
        assert!(matches!(look(&link)?, PathKind::Dangling(_)));
        assert!(matches!(
            new_file(&link, "--db", "give a new path"),
            Err(PathError::Dangling { .. })
        ));
        assert!(matches!(
            look(Path::new("/dev/null"))?,
            PathKind::Special("device")
        ));
        assert!(matches!(
            file_or_new(Path::new("/dev/null"), "--db"),
            Err(PathError::Special { .. })
        ));
        let file = dir.path().join("afile");
        fs::write(&file, b"x")?;
        assert!(matches!(
            new_file(&file.join("w.db"), "--db", ""),
            Err(PathError::NotFolder { .. })
        ));
        Ok(())
    }

    #[test]
    fn claiming_a_path_twice_fails_the_second_time() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let db = dir.path().join("w.db");
        assert!(claim_new(&db, "--db", "").is_ok());
        assert!(matches!(
            claim_new(&db, "--db", ""),
            Err(PathError::Exists { .. })
        ));
        Ok(())
    }

    /// Judged as /proc/mounts judges the mount each path is on.
    #[test]
    fn in_memory_is_what_the_mount_table_says() {
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
        let fs_type = |point: &str| {
            mounts
                .lines()
                .filter_map(|line| {
                    let mut fields = line.split_whitespace().skip(1);
                    Some((fields.next()?, fields.next()?))
                })
                .rfind(|&(at, _)| at == point)
                .map(|(_, kind)| kind.to_string())
        };
        for point in ["/", "/dev/shm", "/proc"] {
            if let Some(kind) = fs_type(point) {
                assert_eq!(
                    in_memory(Path::new(point)),
                    kind == "tmpfs",
                    "{point}: {kind}"
                );
            }
        }
    }
}
