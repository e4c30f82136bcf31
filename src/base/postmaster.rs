//! A PostgreSQL server's own mark of where it runs: the first line of `DATA/postmaster.pid` is
//! its pid. Read here once for everything that must know whether a cluster's server still runs:
//! stopping one reclaim adopted, sweeping leftovers, and never removing a kept night from under
//! its server.

use std::path::Path;

/// The pid `data/postmaster.pid` names, whether or not it runs (none for 0 or less: a
/// single-user backend writes its pid negated, and no signal may go to a group by mistake).
#[must_use]
pub fn pid_named(data: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(data.join("postmaster.pid")).ok()?;
    let pid: i32 = text.lines().next()?.trim().parse().ok()?;
    (pid > 0).then_some(pid)
}

/// Whether `pid` is a live process working in `data` (a pid reused by something else is not
/// the server, nor is one dead and not yet reaped).
#[must_use]
pub fn runs_in(pid: i32, data: &Path) -> bool {
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd"));
    let data = std::fs::canonicalize(data);
    matches!((cwd, data), (Ok(c), Ok(d)) if c == d) && !zombie(pid)
}

/// The pid of the server running in `data`, if one is (`runs_in`).
#[must_use]
pub fn running_in(data: &Path) -> Option<i32> {
    pid_named(data).filter(|&pid| runs_in(pid, data))
}

/// The pid of a server that may be running in `data`, for a caller about to remove it: as
/// `running_in`, but a live process whose working folder this account cannot read (another
/// account's) counts as running, since removing a live server's files is the worse mistake.
#[must_use]
pub fn may_run_in(data: &Path) -> Option<i32> {
    let pid = pid_named(data)?;
    let alive = match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) | Err(nix::errno::Errno::EPERM) => !zombie(pid),
        Err(_) => false,
    };
    let unreadable = std::fs::read_link(format!("/proc/{pid}/cwd")).is_err();
    (alive && (unreadable || runs_in(pid, data))).then_some(pid)
}

/// A dead process not yet reaped by its parent.
#[must_use]
pub fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            == Some("Z")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pid_file_naming_this_process_elsewhere_is_no_server_there() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let data = dir.path();
        assert_eq!(pid_named(data), None);
        assert_eq!(running_in(data), None);
        let me = std::process::id();
        std::fs::write(
            data.join("postmaster.pid"),
            format!("{me}\n{}\n", data.display()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pid_named(data), i32::try_from(me).ok());
        // This test runs, but not in `data`: a reused pid is not the server.
        assert_eq!(running_in(data), None);
        assert_eq!(may_run_in(data), None);
        // Where it does work, it is.
        let cwd = std::env::current_dir().unwrap_or_else(|e| panic!("{e}"));
        let here = i32::try_from(me).unwrap_or(0);
        assert!(runs_in(here, &cwd));
        assert!(!zombie(here));
    }

    #[test]
    fn a_pid_file_naming_no_process_is_no_server() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        // Above the kernel's pid limit: no process has it.
        std::fs::write(dir.path().join("postmaster.pid"), "2147483646\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pid_named(dir.path()), Some(2_147_483_646));
        assert_eq!(running_in(dir.path()), None);
        assert_eq!(may_run_in(dir.path()), None);
        // Nor one naming 0 or a negative pid (a group, or a single-user backend).
        for pid in ["0", "-1", "-42"] {
            std::fs::write(dir.path().join("postmaster.pid"), format!("{pid}\n"))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(pid_named(dir.path()), None, "{pid}");
            assert_eq!(may_run_in(dir.path()), None, "{pid}");
        }
    }
}
