//! The heartbeat file: written atomically after each commit, read by the observer and by the
//! dead-man's switch (`reclaim heartbeat-check`).

use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The default heartbeat path: beside the database, `warehouse.db` -> `warehouse.db.heartbeat`.
#[must_use]
pub fn default_path(db: &Path) -> PathBuf {
    let mut name = db.file_name().map(ToOwned::to_owned).unwrap_or_default();
    name.push(".heartbeat");
    db.with_file_name(name)
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
        let mut temp_name = path.file_name().map(ToOwned::to_owned).unwrap_or_default();
        temp_name.push(format!(".{pid}.tmp"));
        let temp = path.with_file_name(temp_name);
        Self { path, temp, pid }
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records that `task` has been committed.
    pub fn beat(&self, task: &str) -> io::Result<()> {
        let line = format!("{task} {:.3} pid={}\n", unix_now(), self.pid);
        let mut file = fs::File::create(&self.temp)?;
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
    /// How long ago the file was last replaced (its modification time, as a cron check sees it).
    pub age: Duration,
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

    pub fn read(&mut self, now: SystemTime) -> io::Result<Beat> {
        use std::os::unix::fs::MetadataExt as _;
        let meta = fs::metadata(&self.path)?;
        let modified = meta.modified()?;
        let task = match &self.last {
            Some((ino, at, task)) if *ino == meta.ino() && *at == modified => task.clone(),
            _ => {
                let text = fs::read_to_string(&self.path).unwrap_or_default();
                let task = text.split_whitespace().next().map(ToOwned::to_owned);
                self.last = Some((meta.ino(), modified, task.clone()));
                task
            }
        };
        Ok(Beat {
            task,
            age: now.duration_since(modified).unwrap_or_default(),
        })
    }
}

/// The dead-man's switch message, in the postmortem's words.
#[must_use]
pub fn stale_message(age: Duration) -> String {
    format!("runner heartbeat stale: {}s", age.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
