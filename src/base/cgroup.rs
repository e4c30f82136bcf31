//! A job's processes in a cgroup (v2) of their own, where the machine lets reclaim make one:
//! a cgroup holds every descendant however it forks (`setsid`, a double fork, a loop that
//! re-forks faster than `/proc` can be read), and `cgroup.kill` ends them all in one write. Where
//! no writable cgroup v2 is offered (no v2 mount, a cgroup not delegated to this user, a kernel
//! without `cgroup.kill` or `cgroup.freeze`), or `RECLAIM_CGROUP=off` is set, the subreaper
//! (`orphans`) is the way, and reclaim says which way is in use (`way`).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Why a cgroup cannot be used, in words for the run header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CgroupError(pub String);

impl From<String> for CgroupError {
    fn from(said: String) -> Self {
        Self(said)
    }
}

impl From<&str> for CgroupError {
    fn from(said: &str) -> Self {
        Self(said.to_owned())
    }
}

/// The variable that turns the cgroup off (`off`), so the subreaper is used even where a cgroup
/// could be made.
pub const ENV: &str = "RECLAIM_CGROUP";

/// How long a kill waits for the group to empty before it says it could not.
const EMPTY_WITHIN: Duration = Duration::from_secs(2);

/// The prefix of every cgroup reclaim makes (`reclaim-job-PID`, `reclaim-probe-PID`).
const PREFIX: &str = "reclaim-";

/// How a job's descendants are held and ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Way {
    /// In a cgroup of its own under this folder (this process's own cgroup).
    Cgroup(PathBuf),
    /// As a child subreaper, stopped then killed from `/proc`'s parent links; why not a cgroup.
    Subreaper(String),
}

impl Way {
    /// One line saying the way, for a run's header and the docs.
    #[must_use]
    pub fn line(&self) -> String {
        match self {
            Self::Cgroup(under) => format!(
                "in a cgroup of their own under {}, killed as one group",
                under.display()
            ),
            Self::Subreaper(why) => {
                format!("followed as their subreaper, stopped then killed ({why})")
            }
        }
    }
}

/// The way this process's jobs would be held: it makes (and removes) a probe cgroup beside
/// where a job's would go.
#[must_use]
pub fn way() -> Way {
    match parent().and_then(|under| {
        let probe = under.join(format!("{PREFIX}probe-{}", std::process::id()));
        fs::create_dir(&probe).map_err(|e| format!("cannot make a cgroup: {e}"))?;
        let usable = usable(&probe);
        let _ = fs::remove_dir(&probe);
        usable.map(|()| under)
    }) {
        Ok(under) => {
            end_stale(&under);
            Way::Cgroup(under)
        }
        Err(why) => Way::Subreaper(why.0),
    }
}

/// This process's own cgroup (v2) folder, or why there is none to use.
fn parent() -> Result<PathBuf, CgroupError> {
    if std::env::var(ENV).is_ok_and(|v| v == "off") {
        return Err(format!("{ENV}=off").into());
    }
    let mountinfo = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let mount = v2_mount(&mountinfo).ok_or("no cgroup v2 mounted")?;
    let own = fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let own = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or("this process is in no cgroup v2")?;
    let own = own.trim().trim_start_matches('/');
    Ok(if own.is_empty() {
        mount
    } else {
        mount.join(own)
    })
}

/// Where the cgroup v2 hierarchy is mounted, from `/proc/self/mountinfo`.
fn v2_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        // `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER`
        let (before, after) = line.split_once(" - ")?;
        (after.split_whitespace().next()? == "cgroup2")
            .then(|| before.split_whitespace().nth(4).map(PathBuf::from))?
    })
}

/// Whether a cgroup made at `dir` can take processes and end them all.
fn usable(dir: &Path) -> Result<(), CgroupError> {
    let writable = |name: &str| {
        fs::OpenOptions::new()
            .write(true)
            .open(dir.join(name))
            .is_ok()
    };
    if !writable("cgroup.procs") {
        return Err("cannot move a process into a cgroup".into());
    }
    if !writable("cgroup.kill") && !writable("cgroup.freeze") {
        return Err("the kernel has neither cgroup.kill nor cgroup.freeze".into());
    }
    Ok(())
}

/// A job's own cgroup, made by its guard; `end` kills what is in it and removes it.
#[derive(Debug)]
pub struct JobGroup {
    dir: PathBuf,
}

impl JobGroup {
    /// The cgroup of the job guarded by `guard` for the reclaim `reclaim`.
    fn at(reclaim: i32, guard: i32) -> Option<Self> {
        let dir = parent()
            .ok()?
            .join(format!("{PREFIX}job-{reclaim}-{guard}"));
        Some(Self { dir })
    }

    /// Makes `reclaim-job-RECLAIM-GUARD` under this process's (the guard's) own cgroup, for the
    /// reclaim `reclaim`; `None` where the way is the subreaper.
    #[must_use]
    pub fn make(reclaim: i32) -> Option<Self> {
        let me = i32::try_from(std::process::id()).ok()?;
        let Self { dir } = Self::at(reclaim, me)?;
        fs::create_dir(&dir).ok()?;
        if usable(&dir).is_err() {
            let _ = fs::remove_dir(&dir);
            return None;
        }
        Some(Self { dir })
    }

    /// Its `cgroup.procs`, opened for writing: a child writes `0` to it between fork and exec
    /// to enter the group before it can start anything.
    pub fn procs(&self) -> io::Result<fs::File> {
        fs::OpenOptions::new()
            .write(true)
            .open(self.dir.join("cgroup.procs"))
    }

    /// Whether a process is still in the group.
    fn populated(&self) -> bool {
        match fs::read_to_string(self.dir.join("cgroup.events")) {
            Ok(events) => events
                .lines()
                .any(|l| l.split_whitespace().eq(["populated", "1"])),
            // Removed already (by the guard or by reclaim, whichever came first).
            Err(e) => e.kind() != io::ErrorKind::NotFound,
        }
    }

    /// SIGKILLs every process in the group (`cgroup.kill`; else frozen, killed pid by pid and
    /// thawed), waits for it to empty (at most `EMPTY_WITHIN`) and removes it. Returns whether
    /// it emptied.
    #[must_use]
    pub fn end(self) -> bool {
        let deadline = Instant::now() + EMPTY_WITHIN;
        while self.populated() {
            if fs::write(self.dir.join("cgroup.kill"), "1").is_err() {
                // A frozen process cannot fork, so one pass over `cgroup.procs` ends them all.
                let _ = fs::write(self.dir.join("cgroup.freeze"), "1");
                for pid in fs::read_to_string(self.dir.join("cgroup.procs"))
                    .unwrap_or_default()
                    .lines()
                    .filter_map(|p| p.trim().parse::<i32>().ok())
                {
                    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                }
                let _ = fs::write(self.dir.join("cgroup.freeze"), "0");
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = fs::remove_dir(&self.dir);
        true
    }
}

/// Ends the cgroup a job's guard `guard`, reaped, may have left (the host's SIGKILL of its
/// process group reaches neither the guard's cleanup nor what left the group): called by
/// reclaim as it forgets the guard.
pub fn end_left_by(guard: i32) {
    let Ok(me) = i32::try_from(std::process::id()) else {
        return;
    };
    if let Some(group) = JobGroup::at(me, guard).filter(|g| g.dir.is_dir()) {
        let _ = group.end();
    }
}

/// Ends the job cgroups left beside this process's by a reclaim that is gone (SIGKILLed with
/// its guards, nothing of it left to clean up): each is named for its reclaim's pid.
fn end_stale(under: &Path) {
    let Ok(entries) = fs::read_dir(under) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(reclaim) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX)?.strip_prefix("job-"))
            .and_then(|rest| rest.split('-').next()?.parse::<i32>().ok())
        else {
            continue;
        };
        // A pid in use may be a new process by chance: only a pid free for sure is gone.
        if kill(Pid::from_raw(reclaim), None) == Err(nix::errno::Errno::ESRCH) {
            let _ = JobGroup { dir: entry.path() }.end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v2_mount_is_found_among_v1_mounts_and_only_it() {
        let hybrid = "\
35 25 0:30 / /sys/fs/cgroup/freezer rw,relatime shared:14 - cgroup cgroup rw,freezer
40 25 0:35 / /sys/fs/cgroup/unified rw,relatime shared:19 - cgroup2 cgroup2 rw
41 25 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids";
        assert_eq!(
            v2_mount(hybrid),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let v1_only = "35 25 0:30 / /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer";
        assert_eq!(v2_mount(v1_only), None);
    }

    #[test]
    fn each_way_says_itself_in_one_line() {
        let cgroup = Way::Cgroup(PathBuf::from("/sys/fs/cgroup/user.slice")).line();
        assert!(cgroup.contains("cgroup") && cgroup.contains("/sys/fs/cgroup/user.slice"));
        let subreaper = Way::Subreaper(format!("{ENV}=off")).line();
        assert!(subreaper.contains("subreaper") && subreaper.contains("RECLAIM_CGROUP=off"));
        assert!(!cgroup.contains('\n') && !subreaper.contains('\n'));
    }
}
