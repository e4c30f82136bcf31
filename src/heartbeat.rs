//! The heartbeat file: written atomically after each commit, read by the observer and by the
//! dead-man's switch (`reclaim heartbeat-check`).
//!
//! Reading never trusts the file: only a regular file is opened (a FIFO would block the reader
//! forever), and only its first line, at most `MAX_READ` bytes, is read (a beat is one short line;
//! the engine reads heartbeats 50 times a second).

use std::fs;
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The most of a heartbeat file ever read: a beat is `task-000118 1796023776.697 pid=8776`.
pub const MAX_READ: u64 = 256;

/// The default heartbeat path: beside the database, `warehouse.db` -> `warehouse.db.heartbeat`.
#[must_use]
pub fn default_path(db: &Path) -> PathBuf {
    let mut name = db.file_name().map(ToOwned::to_owned).unwrap_or_default();
    name.push(".heartbeat");
    db.with_file_name(name)
}

/// The temporary file a writer with process id `pid` renames onto `heartbeat`:
/// `DB.heartbeat` -> `DB.heartbeat.PID.tmp`. The supervisor removes a reaped worker's with this
/// same derivation, since a SIGKILL between create and rename leaves it behind.
#[must_use]
pub fn temp_path(heartbeat: &Path, pid: u32) -> PathBuf {
    let mut name = heartbeat
        .file_name()
        .map(ToOwned::to_owned)
        .unwrap_or_default();
    name.push(format!(".{pid}.tmp"));
    heartbeat.with_file_name(name)
}

/// Removes the temporary file a dead writer (`pid`, reaped: it can write nothing more) may
/// have left beside `heartbeat`. Only a regular file is removed; a missing one is the usual case.
pub fn remove_dead_writers_temp(heartbeat: &Path, pid: u32) {
    let temp = temp_path(heartbeat, pid);
    if fs::symlink_metadata(&temp).is_ok_and(|m| m.is_file()) {
        let _ = fs::remove_file(&temp);
    }
}

/// The most a heartbeat file holds (one line: a task id, a time, a pid).
const MAX_BEAT_BYTES: u64 = 256;

/// Whether a worker may replace the file at `path` with its heartbeat: nothing there, an empty
/// file, or a heartbeat (`task-NNN SECONDS pid=N`). Anything else (a warehouse, a text, a FIFO,
/// a folder) is someone's data and is not to be replaced.
pub fn replaceable(path: &Path) -> io::Result<bool> {
    let meta = match fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
        other => other?,
    };
    if !meta.is_file() || meta.len() > MAX_BEAT_BYTES {
        return Ok(false);
    }
    if meta.len() == 0 {
        return Ok(true);
    }
    Ok(is_beat(&first_line(path)?))
}

/// A line as `Writer::beat` writes it.
fn is_beat(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    matches!(words.as_slice(), [_, at, pid]
        if at.parse::<f64>().is_ok()
            && pid.strip_prefix("pid=").is_some_and(|n| n.parse::<u32>().is_ok()))
}

/// Seconds since the Unix epoch, as the heartbeat and `written_at` store them.
#[must_use]
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Writes the heartbeat file atomically: a temporary file beside it, then a rename, so a reader
/// sees the old beat or the new one and never half of one.
#[derive(Debug)]
pub struct Writer {
    path: PathBuf,
    temp: PathBuf,
    pid: u32,
}

impl Writer {
    #[must_use]
    pub fn new(path: PathBuf) -> Self {
        let pid = std::process::id();
        let temp = temp_path(&path, pid);
        Self { path, temp, pid }
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records that `task` has been committed.
    pub fn beat(&self, task: &str) -> io::Result<()> {
        let line = format!("{task} {:.3} pid={}\n", unix_now(), self.pid);
        let mut file = match crate::base::fsafe::create_new(&self.temp) {
            // This process's own leftover (a beat cut short), or an earlier process's of the
            // same pid: a regular file is removed (never written through) and made anew.
            Err(e)
                if e.kind() == io::ErrorKind::AlreadyExists
                    && fs::symlink_metadata(&self.temp).is_ok_and(|m| m.file_type().is_file()) =>
            {
                fs::remove_file(&self.temp)?;
                crate::base::fsafe::create_new(&self.temp)?
            }
            // A link, a FIFO, a folder: not reclaim's, so never followed or waited on.
            other => other?,
        };
        file.write_all(line.as_bytes())?;
        drop(file);
        fs::rename(&self.temp, &self.path)
    }
}

/// One heartbeat as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Beat {
    /// The last task the worker committed.
    pub task: Option<String>,
    /// How long ago the file was last replaced (its modification time, as a cron check sees it);
    /// zero when that time is in the future.
    pub age: Duration,
    /// How far in the future the modification time is (zero for any beat of this machine's
    /// clock): a clock that cannot be trusted to judge the age.
    pub ahead: Duration,
}

/// Reads the heartbeat at `path` once; `now` is passed in so callers control the clock.
pub fn read(path: &Path, now: SystemTime) -> io::Result<Beat> {
    Follower::new(path.to_path_buf()).read(now)
}

/// Reads one heartbeat over and over (the engine, 50 times a second): the file's metadata every
/// time, its contents only when a beat has replaced it since the last read.
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    /// The inode and modification time of the file last read, and the task it named. Each beat
    /// is a new file renamed into place, so either changes with every beat.
    last: Option<(u64, SystemTime, Option<String>)>,
}

impl Follower {
    #[must_use]
    pub fn new(path: PathBuf) -> Self {
        Self { path, last: None }
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Fails, without opening it, on anything but a regular file (a FIFO, a device, a socket, a
    /// directory).
    pub fn read(&mut self, now: SystemTime) -> io::Result<Beat> {
        use std::os::unix::fs::MetadataExt as _;
        let meta = fs::metadata(&self.path)?;
        refuse_non_regular(&meta)?;
        let modified = meta.modified()?;
        let task = match &self.last {
            Some((ino, at, task)) if *ino == meta.ino() && *at == modified => task.clone(),
            _ => {
                refuse_pseudo(&self.path)?;
                // Its age is known from the metadata even when its words cannot be read; a
                // file that turned out not to be regular is refused.
                let line = match first_line(&self.path) {
                    Err(e) if e.kind() == io::ErrorKind::InvalidInput => return Err(e),
                    read => read.unwrap_or_default(),
                };
                let task = line.split_whitespace().next().map(ToOwned::to_owned);
                self.last = Some((meta.ino(), modified, task.clone()));
                task
            }
        };
        Ok(Beat {
            task,
            age: now.duration_since(modified).unwrap_or_default(),
            ahead: modified.duration_since(now).unwrap_or_default(),
        })
    }
}

/// A file of a kernel's pseudo file system (/proc, /sys, cgroups, ...) is no heartbeat: its
/// time is always now, so it would always read as fresh.
fn refuse_pseudo(path: &Path) -> io::Result<()> {
    use nix::sys::statfs::{
        BPF_FS_MAGIC, CGROUP_SUPER_MAGIC, DEBUGFS_MAGIC, PROC_SUPER_MAGIC, SECURITYFS_MAGIC,
        SYSFS_MAGIC, TRACEFS_MAGIC, statfs,
    };
    let Ok(fs) = statfs(path) else {
        return Ok(());
    };
    let kind = fs.filesystem_type();
    let pseudo = [
        (PROC_SUPER_MAGIC, "/proc"),
        (SYSFS_MAGIC, "/sys"),
        (CGROUP_SUPER_MAGIC, "a cgroup file system"),
        (DEBUGFS_MAGIC, "debugfs"),
        (TRACEFS_MAGIC, "tracefs"),
        (SECURITYFS_MAGIC, "securityfs"),
        (BPF_FS_MAGIC, "bpffs"),
    ];
    // cgroup2's magic, which nix does not name.
    let cgroup2 = kind.0 == 0x6367_7270;
    match pseudo.iter().find(|(magic, _)| *magic == kind) {
        Some((_, name)) => Err(not_a_heartbeat(name)),
        None if cgroup2 => Err(not_a_heartbeat("a cgroup file system")),
        None => Ok(()),
    }
}

fn not_a_heartbeat(on: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("a file of {on}, whose time is always now: not a heartbeat"),
    )
}

fn refuse_non_regular(meta: &fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::FileTypeExt as _;
    let kind = meta.file_type();
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a file"
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what}, not a regular file"),
    ))
}

/// The first line of the file at `path`, from its first `MAX_READ` bytes. Opened non-blocking
/// and checked again on the open descriptor, so a FIFO swapped in after the caller's `stat`
/// cannot block the reader.
fn first_line(path: &Path) -> io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)?;
    refuse_non_regular(&file.metadata()?)?;
    let mut bytes = Vec::with_capacity(MAX_READ as usize);
    file.take(MAX_READ).read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(text.lines().next().unwrap_or_default().to_string())
}

/// The dead-man's switch message, in the postmortem's words.
#[must_use]
pub fn stale_message(age: Duration) -> String {
    format!("runner heartbeat stale: {}s", age.as_secs())
}

/// How far in the future a heartbeat may be before it is not trusted: file systems round
/// times, and a network share's clock may be a little ahead.
pub const FUTURE_TOLERANCE: Duration = Duration::from_secs(2);

/// A heartbeat judged by a dead-man's switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// No older than the switch allows.
    Fresh(Duration),
    /// Older: the job may be dead.
    Stale(Duration),
    /// Written at a time this clock has not reached: a clock that cannot judge the age, which
    /// must alert, never pass for fresh.
    FromTheFuture(Duration),
}

impl Judged {
    /// The alert, if any: the same words from `heartbeat-check` and the live switch.
    #[must_use]
    pub fn alert(self) -> Option<String> {
        match self {
            Self::Fresh(_) => None,
            Self::Stale(age) => Some(stale_message(age)),
            Self::FromTheFuture(ahead) => Some(format!(
                "runner heartbeat from the future: {}s ahead of this clock (clock skew?)",
                ahead.as_secs()
            )),
        }
    }
}

/// INVARIANT: the one rule by which every dead-man's switch judges a heartbeat
/// (`heartbeat-check` for cron, and the live switch of every night): `ahead` is how far in the
/// future it was written, `age` how old it is and `max_age` the switch's limit, in one unit
/// (real seconds for cron, the night's own seconds live).
#[must_use]
pub fn judge(ahead: Duration, age: Duration, max_age: Duration) -> Judged {
    if ahead > FUTURE_TOLERANCE {
        Judged::FromTheFuture(ahead)
    } else if age <= max_age {
        Judged::Fresh(age)
    } else {
        Judged::Stale(age)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rule_judges_a_beat_fresh_stale_or_from_the_future() {
        let s = Duration::from_secs;
        assert_eq!(judge(s(0), s(300), s(300)), Judged::Fresh(s(300)));
        assert_eq!(judge(s(0), s(301), s(300)), Judged::Stale(s(301)));
        // Ahead within the tolerance: fresh; beyond it, never fresh, however young.
        assert_eq!(judge(s(2), s(0), s(300)), Judged::Fresh(s(0)));
        assert_eq!(judge(s(3), s(0), s(300)), Judged::FromTheFuture(s(3)));
        assert_eq!(
            Judged::FromTheFuture(s(86_399)).alert().as_deref(),
            Some("runner heartbeat from the future: 86399s ahead of this clock (clock skew?)")
        );
        assert_eq!(
            Judged::Stale(s(312)).alert().as_deref(),
            Some("runner heartbeat stale: 312s")
        );
    }

    #[test]
    fn a_file_of_proc_is_not_a_heartbeat() {
        let read = read(Path::new("/proc/self/status"), SystemTime::now());
        let err = read.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("not a heartbeat"), "{err}");
    }

    #[test]
    fn only_a_beat_reads_as_a_heartbeat() {
        assert!(is_beat("task-012 1764460800.123 pid=4242"));
        for line in [
            "SQLite format 3",
            "my notes",
            "task-012 soon pid=1",
            "a b c d",
        ] {
            assert!(!is_beat(line), "{line}");
        }
    }

    #[test]
    fn default_path_sits_beside_the_database() {
        assert_eq!(
            default_path(Path::new("/tmp/x/warehouse.db")),
            PathBuf::from("/tmp/x/warehouse.db.heartbeat")
        );
    }

    #[test]
    fn a_beat_reads_back_with_its_task_and_a_small_age() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let writer = Writer::new(dir.path().join("hb"));
        writer.beat("task-118")?;
        let beat = read(writer.path(), SystemTime::now() + Duration::from_secs(312))?;
        assert_eq!(beat.task.as_deref(), Some("task-118"));
        assert!(beat.age >= Duration::from_secs(311));
        assert_eq!(
            stale_message(beat.age),
            format!("runner heartbeat stale: {}s", beat.age.as_secs())
        );
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(dir.path())?.count(), 1);
        Ok(())
    }

    #[test]
    fn a_follower_sees_every_beat_even_within_one_clock_tick() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let writer = Writer::new(dir.path().join("hb"));
        let mut follower = Follower::new(writer.path().to_path_buf());
        assert!(follower.read(SystemTime::now()).is_err(), "no beat yet");
        // Beats far faster than the file system's timestamp granularity: each is a new file.
        for task in 0..50 {
            let name = format!("task-{task:03}");
            writer.beat(&name)?;
            let beat = follower.read(SystemTime::now())?;
            assert_eq!(beat.task.as_deref(), Some(name.as_str()));
        }
        let later = follower.read(SystemTime::now() + Duration::from_secs(60))?;
        assert_eq!(later.task.as_deref(), Some("task-049"));
        assert!(later.age >= Duration::from_secs(59));
        Ok(())
    }

    #[test]
    fn the_temp_name_is_derived_in_one_place() {
        let hb = Path::new("/tmp/x/w.db.heartbeat");
        assert_eq!(
            temp_path(hb, 4242),
            PathBuf::from("/tmp/x/w.db.heartbeat.4242.tmp")
        );
        assert_eq!(
            Writer::new(hb.to_path_buf()).temp,
            temp_path(hb, std::process::id())
        );
    }

    #[test]
    fn a_dead_writers_temp_is_removed_and_nothing_else() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let hb = dir.path().join("w.db.heartbeat");
        fs::write(&hb, "task-001 1.0 pid=7\n")?;
        fs::write(temp_path(&hb, 7), "")?;
        fs::write(temp_path(&hb, 8), "")?;
        remove_dead_writers_temp(&hb, 7);
        remove_dead_writers_temp(&hb, 9);
        assert!(!temp_path(&hb, 7).exists());
        assert!(temp_path(&hb, 8).exists(), "another writer's temp is kept");
        assert!(hb.exists());
        Ok(())
    }

    #[test]
    fn anything_but_a_regular_file_is_refused_without_blocking() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU)?;
        // Opening a FIFO for reading would block until a writer came: it must not be opened.
        for (path, kind) in [
            (fifo.as_path(), "FIFO"),
            (dir.path(), "directory"),
            (Path::new("/dev/null"), "device"),
        ] {
            let error = read(path, SystemTime::now()).err();
            let error = error.map(|e| e.to_string()).unwrap_or_default();
            assert!(error.contains(kind), "{}: {error}", path.display());
        }
        Ok(())
    }

    #[test]
    fn only_the_first_line_of_a_bounded_prefix_is_read() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("hb");
        let long = "x".repeat(10_000);
        fs::write(&path, format!("{long} 1.0 pid=1\nsecond line\n"))?;
        let beat = read(&path, SystemTime::now())?;
        assert_eq!(beat.task.map(|t| t.len()), Some(MAX_READ as usize));
        // A huge file costs what its first bytes cost (a sparse GiB: no disk needed).
        let huge = dir.path().join("huge");
        fs::write(&huge, "task-007 1.0 pid=1\n")?;
        fs::OpenOptions::new()
            .write(true)
            .open(&huge)?
            .set_len(1 << 30)?;
        // Counted in bytes this thread read (Linux's own count), not in time: a busy machine
        // slows a read but does not lengthen it.
        let read_so_far = || -> io::Result<u64> {
            let io = fs::read_to_string("/proc/thread-self/io")?;
            Ok(io
                .lines()
                .find_map(|l| l.strip_prefix("rchar: "))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0))
        };
        let before = read_so_far()?;
        let beat = read(&huge, SystemTime::now())?;
        let cost = read_so_far()? - before;
        assert_eq!(beat.task.as_deref(), Some("task-007"));
        assert!(cost < 1 << 20, "{cost} bytes read for one beat");
        Ok(())
    }

    #[test]
    fn a_beat_from_the_future_is_ahead_not_merely_young() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let writer = Writer::new(dir.path().join("hb"));
        writer.beat("task-001")?;
        let beat = read(
            writer.path(),
            SystemTime::now() - Duration::from_secs(86_400),
        )?;
        assert_eq!(beat.age, Duration::ZERO);
        assert!(beat.ahead >= Duration::from_secs(86_399), "{beat:?}");
        let now = read(writer.path(), SystemTime::now() + Duration::from_secs(5))?;
        assert_eq!(now.ahead, Duration::ZERO);
        Ok(())
    }
}
