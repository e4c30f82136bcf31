//! PostgreSQL for the tests: the server programs, a folder its unprivileged account can enter,
//! the kept cluster started and stopped again, and `psql` as the independent client.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::cmdline;
use super::process_gone;

/// The server programs, as reclaim looks for them. A test that needs them is ignored, with its
/// reason, where the build script (`tests/it/support/build.rs`) found none; so here they are.
pub(crate) fn pg_bin() -> PathBuf {
    (std::env::var_os("RECLAIM_PG_BIN")
        .map(PathBuf::from)
        .into_iter())
    .chain(
        ["17", "16", "15", "14"]
            .iter()
            .map(|v| PathBuf::from(format!("/usr/lib/postgresql/{v}/bin"))),
    )
    .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
    .unwrap_or_else(|| {
        panic!("PostgreSQL's server programs were there when the tests were built, and are gone")
    })
}

/// A test folder the cluster's unprivileged account can enter (reclaim run as root runs the
/// cluster as `nobody`, which needs to pass through every folder above its own).
pub(crate) fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711))
        .unwrap_or_else(|e| panic!("{e}"));
    dir
}

/// The one `reclaim-pg-*` folder under `dir`, if there is one.
pub(crate) fn cluster_folder(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("reclaim-pg-"))
        })
}

/// Live processes (not zombies) whose command line mentions `dir`, or whose working folder is
/// under it (a PostgreSQL backend's is its data folder; its command line names no path).
pub(crate) fn processes_under(dir: &Path) -> Vec<(i32, String)> {
    let needle = dir.display().to_string();
    let works_in = |pid: i32| {
        std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(dir))
    };
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .filter(|&pid| !process_gone(pid))
                .map(|pid| (pid, cmdline(pid).join(" ")))
                .filter(|(pid, line)| line.contains(&needle) || works_in(*pid))
                .collect()
        })
        .unwrap_or_default()
}

/// A command run as the cluster's owner (`nobody` when the tests run as root).
pub(crate) fn as_owner(program: &Path) -> Command {
    if nix::unistd::Uid::effective().is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "nobody", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

/// Starts a kept cluster again, as reclaim's closing lines say to.
pub(crate) fn start_kept(bin: &Path, cluster: &Path) {
    start_kept_with(
        bin,
        cluster,
        &format!("-c listen_addresses='' -k {}", cluster.display()),
    );
}

/// Starts a kept cluster with the server `options` given (`pg_ctl -o`).
pub(crate) fn start_kept_with(bin: &Path, cluster: &Path, options: &str) {
    let status = as_owner(&bin.join("pg_ctl"))
        .arg("-D")
        .arg(cluster.join("data"))
        .arg("-l")
        .arg(cluster.join("postgres.log"))
        .arg("-o")
        .arg(options)
        .args(["-w", "-t", "60", "start"])
        .stdout(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("pg_ctl: {e}"));
    assert!(status.success(), "pg_ctl start failed");
}

/// Stops a cluster (fast: sessions end, nothing is waited for); whether `pg_ctl` said so.
pub(crate) fn stop_kept(bin: &Path, cluster: &Path) -> bool {
    as_owner(&bin.join("pg_ctl"))
        .arg("-D")
        .arg(cluster.join("data"))
        .args(["-m", "fast", "-w", "-t", "60", "stop"])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `check` against the kept cluster under `dir`, started for it; stopped and removed after,
/// whether `check` passes or panics.
pub(crate) fn on_kept(bin: &Path, dir: &Path, check: impl FnOnce(&Path)) {
    let cluster = cluster_folder(dir).unwrap_or_else(|| panic!("no kept cluster"));
    start_kept(bin, &cluster);
    let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&cluster)));
    stop_kept(bin, &cluster);
    let _ = std::fs::remove_dir_all(&cluster);
    if let Err(panic) = checked {
        std::panic::resume_unwind(panic);
    }
}

/// `psql -Atc SQL` on the cluster in `cluster`, as role `user`: its output, trimmed.
pub(crate) fn psql(cluster: &Path, sql: &str) -> String {
    let output = Command::new("psql")
        .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
        .arg(cluster)
        .args(["-U", "reclaim", "-d", "postgres", "-c", sql])
        .env("PGCONNECT_TIMEOUT", "5")
        // The password reclaim made for the cluster, which a kept one keeps there.
        .env("PGPASSFILE", cluster.join("pgpass"))
        .output()
        .unwrap_or_else(|e| panic!("psql: {e}"));
    assert!(
        output.status.success(),
        "psql {sql}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// A timeline without what differs from night to night (pids, run ids, folders), sorted: two
/// lines of the same second may be printed in either order. What only a server shows (the
/// night's watch on it: what a killed worker's session had open) is left out.
pub(crate) fn timeline(stdout: &str) -> Vec<String> {
    let mut lines: Vec<String> = stdout
        .lines()
        .filter(|l| l.starts_with("02:"))
        .filter(|l| !l.contains("the killed worker") && !l.contains("server aborted"))
        .map(|l| {
            l.split_whitespace()
                .map(|w| {
                    if w.starts_with("run_id=run-") {
                        "run_id=RUN"
                    } else if w.starts_with("pid=")
                        || w.chars().all(|c| c.is_ascii_digit() || c == ')')
                    {
                        "N"
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    lines.sort();
    lines
}
