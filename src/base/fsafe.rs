//! Files reclaim creates in folders it does not own (the user's `--db` folder, /dev/shm, the
//! system temp dir): created exclusively, never through a link, never waiting on a FIFO, so a
//! name planted there by someone else is refused instead of followed; and files replaced whole,
//! through a temporary file renamed into place, so a failure never leaves half of one.

use std::fs;
use std::io::{self, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use nix::fcntl::OFlag;

/// Creates `path` as a new file for writing: `O_EXCL` (anything already there, a link or a
/// FIFO included, is `AlreadyExists` and is not touched), `O_NOFOLLOW`, `O_NONBLOCK`.
pub fn create_new(path: &Path) -> io::Result<fs::File> {
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC).bits())
        .open(path)
}

/// Writes `bytes` as the whole of `path`: into a new temporary file beside it (a random name,
/// created exclusively), flushed, then renamed onto `path`. A failure (a full disk) removes the
/// temporary file and leaves `path` as it was.
pub fn replace_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut temp = temp_beside(path)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_data()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Writes `bytes` as a new file at `path`: as `replace_whole`, but the rename never replaces
/// anything (`AlreadyExists` if `path` appeared meanwhile).
pub fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut temp = temp_beside(path)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_data()?;
    temp.persist_noclobber(path).map_err(|e| e.error)?;
    Ok(())
}

/// A new temporary file beside `path` (created exclusively) to write a new `path` into, a
/// piece at a time; `finish_new` puts it in place. Dropped unfinished, it is removed.
pub fn begin_new(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    temp_beside(path)
}

/// Flushes `temp` (from `begin_new`) to disk and renames it onto `path`, never replacing
/// anything (`AlreadyExists` if `path` appeared meanwhile; the temporary file is then removed).
pub fn finish_new(temp: tempfile::NamedTempFile, path: &Path) -> io::Result<()> {
    temp.as_file().sync_data()?;
    temp.persist_noclobber(path).map_err(|e| e.error)?;
    Ok(())
}

/// The mode of a file reclaim writes for the user to keep (an export, a JUnit report), before
/// the umask: readable by others, as a file the user made by hand would be.
pub const KEPT_FILE_MODE: u32 = 0o644;

/// A new temporary file in `path`'s folder, named after it (`.NAME.XXXXXX.tmp`), made with
/// `KEPT_FILE_MODE`.
fn temp_beside(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(path.file_name().unwrap_or_default());
    prefix.push(".");
    tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(KEPT_FILE_MODE))
        .tempfile_in(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_link_or_fifo_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let victim = dir.path().join("victim.txt");
        fs::write(&victim, "keep me").unwrap_or_else(|e| panic!("{e}"));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap_or_else(|e| panic!("{e}"));
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap_or_else(|e| panic!("{e}"));
        for path in [&link, &fifo, &victim] {
            let err = create_new(path).err().map(|e| e.kind());
            assert_eq!(
                err,
                Some(io::ErrorKind::AlreadyExists),
                "{}",
                path.display()
            );
        }
        assert_eq!(fs::read_to_string(&victim).unwrap_or_default(), "keep me");
        assert!(create_new(&dir.path().join("new")).is_ok());
    }

    #[test]
    fn a_file_written_new_is_whole_or_absent() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("out.svg");
        write_new(&path, b"<svg/>").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fs::read(&path).unwrap_or_default(), b"<svg/>");
        assert!(write_new(&path, b"again").is_err());
        replace_whole(&path, b"again").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fs::read(&path).unwrap_or_default(), b"again");
        // Only the file itself: no temporary left behind.
        assert_eq!(fs::read_dir(dir.path()).map_or(0, Iterator::count), 1);
        // Made as a kept file is (the umask may take more away, never add).
        let mode = fs::metadata(&path).map_or(0, |m| {
            std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777
        });
        assert_eq!(mode & !KEPT_FILE_MODE, 0, "{mode:o}");
        assert_eq!(mode & 0o600, 0o600, "{mode:o}");
    }
}
