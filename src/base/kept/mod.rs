//! What reclaim keeps of its nights: one home per user under the temp dir
//! (`$TMPDIR/reclaim-UID`), a folder of reclaim's own per night inside it, named so a person can
//! tell them apart (`run-naive-20250314-021500-k3f9`), a marker in each saying what made it, and
//! the keep policy (`--keep always|failed|never`) carried out when the night ends, with a bound
//! on what the default keeps. `reclaim kept` lists and removes them through `list` and `remove`.
//!
//! The temp dir, not the user's state folder: a night is scratch a seed reproduces, written
//! hard (every commit synced) and best on a fast local disk or in memory; the system clears it
//! at boot, a second bound; and `TMPDIR` is how tests and CI already give reclaim a folder of
//! their own. `~/.local/state` may be on NFS, where SQLite's locks cannot be trusted.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::SystemTime;

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

mod list;
mod words;

pub use self::list::{Listed, RemoveError, list, prune, remove};
use self::words::name_part;
pub use self::words::{age, size, utc_stamp};

/// The marker file in every night folder reclaim made: only a folder holding it is ever
/// listed or removed by `reclaim kept`.
pub const MARKER: &str = ".reclaim-night";

/// The file that marks a folder outside the home as kept on purpose (a private PostgreSQL
/// cluster kept with its night): never swept as a leftover; removed with its night.
pub const COMPANION_MARK: &str = "kept-by-reclaim";

/// How many nights `--keep failed` (the default) keeps: a new one kept removes the oldest
/// beyond it, so a CI loop of failing nights holds at most this many.
pub const BOUND: usize = 20;

/// What becomes of a night's folder when the night ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Keep {
    /// Kept, whatever the verdict, until `reclaim kept --remove` or `--clean`.
    Always,
    /// Kept when the night failed (its data wrong, a test failed, an error), the newest
    /// `BOUND` of them; removed when it held.
    #[default]
    Failed,
    /// Removed, whatever the verdict.
    Never,
}

impl Keep {
    /// The policy's name, as `--keep` takes it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::Failed => "failed",
            Self::Never => "never",
        }
    }
}

impl std::fmt::Display for Keep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Keep {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "always" => Ok(Self::Always),
            "failed" => Ok(Self::Failed),
            "never" => Ok(Self::Never),
            other => Err(format!(
                "{} is not a keep policy: give always, failed or never",
                crate::base::text::escape_controls(other)
            )),
        }
    }
}

/// Why the home or a night's folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeptError {
    /// The home's name is taken by something that is not this user's private folder (a
    /// link, a file, another user's folder, one others can write in): never used, never
    /// removed.
    #[error(
        "{path} is not reclaim's folder of yours ({why}); reclaim keeps its nights only in a folder of its own: remove it, or set TMPDIR to another folder"
    )]
    NotOwn { path: String, why: String },
    /// The system refused.
    #[error("cannot create a folder for the night in {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

/// This user's home for kept nights: `$TMPDIR/reclaim-UID` (not created).
#[must_use]
pub fn home() -> PathBuf {
    std::env::temp_dir().join(format!("reclaim-{}", nix::unistd::geteuid()))
}

/// The home, created private (0700) if absent; refused when the name is taken by anything
/// else than this user's own private folder (a planted link is never followed).
pub fn ensure_home(home: &Path) -> Result<(), KeptError> {
    match fs::DirBuilder::new().mode(0o700).create(home) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(KeptError::Io {
                path: shown(home),
                source,
            });
        }
    }
    check_home(home)
}

/// Whether `home` is a folder of this user's that no one else can write in (never through a
/// link).
fn check_home(home: &Path) -> Result<(), KeptError> {
    let meta = fs::symlink_metadata(home).map_err(|source| KeptError::Io {
        path: shown(home),
        source,
    })?;
    let why = if meta.file_type().is_symlink() {
        Some("a symbolic link".to_string())
    } else if !meta.is_dir() {
        Some("not a folder".to_string())
    } else if meta.uid() != nix::unistd::geteuid().as_raw() {
        Some(format!("owned by uid {}", meta.uid()))
    } else if meta.mode() & 0o077 != 0 {
        Some(format!(
            "mode {:o}: others may use it",
            meta.permissions().mode() & 0o777
        ))
    } else {
        None
    };
    match why {
        Some(why) => Err(KeptError::NotOwn {
            path: shown(home),
            why,
        }),
        None => Ok(()),
    }
}

/// What a night's marker says: what made the folder, when, under which policy, and, once the
/// night ended, its verdict. Never a command line (a URL in it may hold a password).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// `reclaim run`, `reclaim prove`, ...
    pub command: String,
    /// What ran: the strategy, the scenario, `exec`.
    pub what: String,
    /// Unix seconds.
    pub started: u64,
    /// Unix milliseconds: orders nights started within the same second.
    #[serde(default)]
    pub started_ms: u64,
    pub policy: Keep,
    /// Unix seconds, once the night ended.
    #[serde(default)]
    pub ended: Option<u64>,
    /// The verdict in a few words, once known.
    #[serde(default)]
    pub verdict: Option<String>,
    /// Whether the night failed, once known.
    #[serde(default)]
    pub failed: Option<bool>,
    /// Kept whatever the policy, and why (a recording the user saved in it): never pruned.
    #[serde(default)]
    pub held: Option<String>,
    /// A folder outside the home kept with the night and removed with it (`companion`): the
    /// night's private PostgreSQL cluster, which must stay where its server's account can
    /// reach it.
    #[serde(default)]
    pub companion: Option<PathBuf>,
}

/// A night's folder of reclaim's own, in the home, locked for as long as this handle lives
/// (a listing says it is in use; nothing removes it). Settled by `settle`; dropped unsettled
/// (an error ended the night), it is kept unless the policy is `never`.
#[derive(Debug)]
pub struct NightDir {
    path: PathBuf,
    home: PathBuf,
    marker: Marker,
    /// Kept whatever the policy, and why (a recording the user saved in it).
    hold: Option<String>,
    lock: Option<Flock<fs::File>>,
}

/// What became of a night's folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    pub path: PathBuf,
    pub kept: bool,
    pub policy: Keep,
    /// Why it was kept despite the policy.
    pub held: Option<String>,
    /// Older nights removed to stay within the bound.
    pub pruned: usize,
}

impl Settled {
    /// The policy's word on the folder, for the line that names it: `kept (--keep failed: the
    /// night failed; ...)` or `removed (--keep failed: nothing failed; ...)`.
    #[must_use]
    pub fn said(&self) -> String {
        let policy = self.policy;
        let mut said = match (self.kept, policy, &self.held) {
            (true, _, Some(why)) if policy != Keep::Always => {
                format!("kept (--keep {policy}, but {why})")
            }
            (true, Keep::Always, _) => {
                "kept (--keep always; `reclaim kept --remove NAME` removes it)".to_string()
            }
            (true, _, _) => {
                format!("kept (--keep {policy}: the night failed; `reclaim kept` lists it)")
            }
            (false, Keep::Never, _) => "removed (--keep never)".to_string(),
            (false, _, _) => {
                format!("removed (--keep {policy}: nothing failed; --keep always keeps it)")
            }
        };
        if self.pruned > 0 {
            let _ = write!(
                said,
                "; {} removed (--keep failed keeps the newest {BOUND})",
                crate::base::text::count(self.pruned as u64, "older night", "older nights")
            );
        }
        said
    }
}

impl NightDir {
    /// A new night folder in this user's home (`home()`), named after `command`, `what` and
    /// `now`, with a short random id: made exclusively (a name taken or planted is never
    /// used), private (0700), its marker written, locked.
    pub fn create(
        command: &str,
        what: &str,
        policy: Keep,
        now: SystemTime,
    ) -> Result<Self, KeptError> {
        Self::create_in(&home(), command, what, policy, now)
    }

    /// `create` in `home` (tests give their own).
    pub fn create_in(
        home: &Path,
        command: &str,
        what: &str,
        policy: Keep,
        now: SystemTime,
    ) -> Result<Self, KeptError> {
        ensure_home(home)?;
        let started = unix_secs(now);
        // `reclaim run --scenario` -> `scenario`, `reclaim prove` -> `prove`.
        let word = (command.rsplit(' '))
            .map(|w| w.trim_start_matches('-'))
            .find(|w| !w.is_empty())
            .unwrap_or(command);
        let prefix = format!(
            "{}-{}-{}-",
            name_part(word),
            name_part(what),
            utc_stamp(started)
        );
        let io = |source| KeptError::Io {
            path: shown(home),
            source,
        };
        let new_folder = || {
            tempfile::Builder::new()
                .prefix(&prefix)
                .rand_bytes(4)
                .permissions(fs::Permissions::from_mode(0o700))
                .tempdir_in(home)
        };
        // Another reclaim may have removed the home, empty, a moment ago: made again once.
        let made = match new_folder() {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                ensure_home(home)?;
                new_folder()
            }
            made => made,
        };
        let path = made.map_err(io)?.keep();
        let marker = Marker {
            command: command.to_string(),
            what: what.to_string(),
            started,
            started_ms: now
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            policy,
            ended: None,
            verdict: None,
            failed: None,
            held: None,
            companion: None,
        };
        let night = Self {
            lock: lock_new(&path),
            path,
            home: home.to_path_buf(),
            marker,
            hold: None,
        };
        night.write_marker().map_err(io)?;
        Ok(night)
    }

    /// The night's folder.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The policy the night runs under.
    #[must_use]
    pub fn policy(&self) -> Keep {
        self.marker.policy
    }

    /// Names `folder` (outside the home) as kept with this night when it is kept: listed in
    /// its size, removed with it (`list::companion` says which folders qualify).
    pub fn attach(&mut self, folder: &Path) {
        self.marker.companion = Some(folder.to_path_buf());
    }

    /// Keep the folder whatever the policy, for `why` (said on its line).
    pub fn hold(&mut self, why: &str) {
        self.hold = Some(why.to_string());
    }

    /// The night is over: its verdict written in the marker, the folder kept or removed as
    /// the policy says, and the oldest nights beyond the bound removed.
    #[must_use]
    pub fn settle(mut self, failed: bool, verdict: &str, now: SystemTime) -> Settled {
        let keep = self.hold.is_some()
            || match self.marker.policy {
                Keep::Always => true,
                Keep::Failed => failed,
                Keep::Never => false,
            };
        self.marker.ended = Some(unix_secs(now));
        self.marker.verdict = Some(verdict.to_string());
        self.marker.failed = Some(failed);
        self.marker.held.clone_from(&self.hold);
        let kept = keep && self.write_marker().is_ok();
        if !kept {
            let _ = fs::remove_dir_all(&self.path);
        }
        // Unlocked first: the prune below must see this night as finished, not in use.
        self.lock = None;
        let pruned = prune(&self.home, BOUND);
        remove_if_empty(&self.home);
        Settled {
            path: std::mem::take(&mut self.path),
            kept,
            policy: self.marker.policy,
            held: self.hold.take().filter(|_| kept),
            pruned,
        }
    }

    fn write_marker(&self) -> io::Result<()> {
        let text = serde_json::to_string(&self.marker).map_err(io::Error::other)?;
        crate::base::fsafe::replace_whole(&self.path.join(MARKER), text.as_bytes())
    }
}

impl Drop for NightDir {
    /// Unsettled: an error ended the night. Kept as failed (unless `never`), its marker saying
    /// it ended without a verdict.
    fn drop(&mut self) {
        if self.path.as_os_str().is_empty() {
            return;
        }
        if self.marker.policy == Keep::Never && self.hold.is_none() {
            let _ = fs::remove_dir_all(&self.path);
        } else {
            self.marker.failed = Some(true);
            self.marker.verdict = Some("ended in an error".into());
            let _ = self.write_marker();
        }
        self.lock = None;
        let _ = prune(&self.home, BOUND);
        remove_if_empty(&self.home);
    }
}

/// The home goes once nothing is kept in it: `--keep never` leaves nothing behind.
pub fn remove_if_empty(home: &Path) {
    // `rmdir` removes only an empty folder; a night made meanwhile keeps it.
    let _ = fs::remove_dir(home);
}

/// An exclusive lock on `dir` for as long as the handle lives (closed on exec: a worker never
/// holds it): a listing or a prune that cannot take it leaves the folder alone.
fn lock(dir: &Path) -> Option<Flock<fs::File>> {
    let file = fs::File::open(dir).ok()?;
    Flock::lock(file, FlockArg::LockExclusiveNonblock).ok()
}

/// `lock`, waiting for a listing that holds it a moment to look (a new night's folder has no
/// marker yet, so nothing removes it meanwhile).
fn lock_new(dir: &Path) -> Option<Flock<fs::File>> {
    let file = fs::File::open(dir).ok()?;
    Flock::lock(file, FlockArg::LockExclusive).ok()
}

fn shown(path: &Path) -> String {
    crate::base::text::escape_controls(&path.display().to_string())
}

fn unix_secs(now: SystemTime) -> u64 {
    now.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::time::Duration;

    pub(super) fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    pub(super) fn home_in(dir: &tempfile::TempDir) -> PathBuf {
        dir.path().join("reclaim-test")
    }

    #[test]
    fn a_night_is_named_for_a_person_and_marked() -> Result<(), KeptError> {
        let dir = tempfile::tempdir().map_err(|source| KeptError::Io {
            path: String::new(),
            source,
        })?;
        let home = home_in(&dir);
        let night = NightDir::create_in(
            &home,
            "reclaim run",
            "naive",
            Keep::Failed,
            at(1_710_382_500),
        )?;
        let name = night
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        let name = name.unwrap_or_default();
        assert!(name.starts_with("run-naive-20240314-021500-"), "{name}");
        assert_eq!(name.len(), "run-naive-20240314-021500-".len() + 4, "{name}");
        let mode = fs::metadata(night.path()).map(|m| m.mode() & 0o777).ok();
        assert_eq!(mode, Some(0o700));
        let listed = list(&home);
        assert_eq!(listed.len(), 1);
        assert!(listed[0].in_use, "a running night is in use");
        assert_eq!(
            listed[0].marker.as_ref().map(|m| m.what.as_str()),
            Some("naive")
        );
        assert_eq!(remove(&home, &name), Err(RemoveError::InUse(name.clone())));
        let settled = night.settle(
            true,
            "DATA WRONG (3 duplicated task ids)",
            at(1_710_382_600),
        );
        assert!(settled.kept && settled.path.is_dir());
        let listed = list(&home);
        assert!(!listed[0].in_use);
        assert_eq!(listed[0].verdict(), "DATA WRONG (3 duplicated task ids)");
        Ok(())
    }

    #[test]
    fn each_policy_keeps_what_it_says() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = home_in(&dir);
        for (policy, failed, kept) in [
            (Keep::Always, false, true),
            (Keep::Failed, true, true),
            (Keep::Failed, false, false),
            (Keep::Never, true, false),
        ] {
            let night = NightDir::create_in(&home, "reclaim prove", "guarded", policy, at(0))
                .unwrap_or_else(|e| panic!("{e}"));
            let settled = night.settle(failed, "v", at(1));
            assert_eq!(settled.kept, kept, "{policy} failed={failed}");
            assert_eq!(settled.path.exists(), kept);
            let said = settled.said();
            assert!(said.contains(&format!("--keep {policy}")), "{said}");
        }
        // Held (a recording saved in it): kept even under never, and said why.
        let mut night = NightDir::create_in(&home, "reclaim tui", "incident", Keep::Never, at(0))
            .unwrap_or_else(|e| panic!("{e}"));
        night.hold("it holds the recording you saved");
        let settled = night.settle(false, "right", at(1));
        assert!(settled.kept);
        assert_eq!(
            settled.said(),
            "kept (--keep never, but it holds the recording you saved)"
        );
    }

    #[test]
    fn an_unsettled_night_is_kept_as_an_error_unless_never() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = home_in(&dir);
        let kept = NightDir::create_in(&home, "reclaim run", "exec", Keep::Failed, at(0))
            .unwrap_or_else(|e| panic!("{e}"));
        let gone = NightDir::create_in(&home, "reclaim run", "exec", Keep::Never, at(0))
            .unwrap_or_else(|e| panic!("{e}"));
        let (kept_path, gone_path) = (kept.path().to_path_buf(), gone.path().to_path_buf());
        drop((kept, gone));
        assert!(kept_path.is_dir() && !gone_path.exists());
        assert_eq!(list(&home)[0].verdict(), "ended in an error");
    }

    #[test]
    fn a_home_that_is_not_ours_is_refused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let target = dir.path().join("elsewhere");
        fs::create_dir(&target).unwrap_or_else(|e| panic!("{e}"));
        let link = dir.path().join("reclaim-link");
        std::os::unix::fs::symlink(&target, &link).unwrap_or_else(|e| panic!("{e}"));
        let err = NightDir::create_in(&link, "reclaim run", "naive", Keep::Failed, at(0));
        assert!(matches!(err, Err(KeptError::NotOwn { ref why, .. }) if why == "a symbolic link"));
        assert_eq!(fs::read_dir(&target).map(Iterator::count).ok(), Some(0));
        let open = dir.path().join("reclaim-open");
        fs::create_dir(&open).unwrap_or_else(|e| panic!("{e}"));
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(ensure_home(&open), Err(KeptError::NotOwn { .. })));
        assert!(list(&open).is_empty());
    }
}
