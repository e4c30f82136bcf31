//! The host's server restart (`run --restart-server-at-rows N`, a scenario's
//! `host.restart_server_at_rows`, the dashboard's `D`): the private cluster stopped
//! immediately (`pg_ctl restart -m immediate`: every session ended, every transaction in flight
//! rolled back, crash recovery at the start) and started again with the options it ran with.
//! The new postmaster is `pg_ctl`'s child, not the guard's: the guard, and reclaim when the
//! guard is gone, find it by its pid file and stop it as they stop the first
//! (`cluster_guard::stop_adopted`); under an `--exec` job's subreaper it is marked reclaim's own,
//! so the sweep of the job's orphans leaves it.

use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use nix::unistd::User;

/// How long `pg_ctl` may wait for the stop and for the start (`-t`).
const WAIT_SECS: &str = "60";

/// Why the restart did not happen: one line, said on the night's timeline.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RestartError(String);

/// What restarting a private cluster takes: its `pg_ctl`, its folder, and the account its
/// server runs as (`nobody` when reclaim is root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restarter {
    pub(super) pg_ctl: PathBuf,
    pub(super) dir: PathBuf,
    pub(super) run_as: Option<String>,
}

impl Restarter {
    /// Restarts the cluster, immediately; back when `pg_ctl` says it started (its own wait,
    /// bounded). Its server's log goes on in `postgres.log`. The error is `pg_ctl`'s last line.
    pub fn restart(&self) -> Result<(), RestartError> {
        let mut command = Command::new(&self.pg_ctl);
        command
            .arg("-D")
            .arg(self.dir.join("data"))
            .arg("-l")
            .arg(self.dir.join("postgres.log"))
            .args(["-m", "immediate", "-w", "-t", WAIT_SECS, "restart"])
            .env("LC_ALL", "C")
            .env_remove("PGDATA")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(name) = &self.run_as {
            let user = User::from_name(name).ok().flatten().ok_or_else(|| {
                RestartError(format!("no account {name} to restart the server as"))
            })?;
            command
                .uid(user.uid.as_raw())
                .gid(user.gid.as_raw())
                .env("HOME", &self.dir);
        }
        let output = command
            .output()
            .map_err(|e| RestartError(format!("cannot run {}: {e}", self.pg_ctl.display())))?;
        if output.status.success() {
            // pg_ctl's postmaster outlives pg_ctl: under a job's subreaper it becomes reclaim's
            // child, and must never be swept as the job's orphan.
            let pid = std::fs::read_to_string(self.dir.join("data/postmaster.pid"))
                .ok()
                .and_then(|file| file.lines().next()?.trim().parse::<u32>().ok());
            if let Some(pid) = pid {
                crate::base::orphans::own(pid);
            }
            return Ok(());
        }
        let said = String::from_utf8_lossy(&output.stderr);
        Err(RestartError(format!(
            "pg_ctl restart failed ({}): {}",
            output.status,
            crate::base::text::escape_controls(said.lines().last().unwrap_or("").trim())
        )))
    }
}
