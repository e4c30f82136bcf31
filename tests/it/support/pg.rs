//! PostgreSQL for the tests: the server programs, a folder its unprivileged account can enter,
//! the kept cluster started and stopped again, and `psql` as the independent client.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use std::time::Duration;

use super::cmdline;
use super::process_gone;
use super::reclaim_in_dir;

/// The server programs, as reclaim looks for them. A test that needs them is ignored, with its
/// reason, where the build script (`tests/it/support/build.rs`) found none; so here they are.
pub(crate) fn pg_bin() -> PathBuf {
    let Some(dir) = server_programs() else {
        panic!("PostgreSQL's server programs were there when the tests were built, and are gone")
    };
    dir.to_path_buf()
}

/// The folder of the server programs, looked for once: `RECLAIM_PG_BIN`, else the newest
/// `/usr/lib/postgresql/N/bin` that has `initdb` and `pg_ctl`.
fn server_programs() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            (std::env::var_os("RECLAIM_PG_BIN")
                .map(PathBuf::from)
                .into_iter())
            .chain(
                ["17", "16", "15", "14"]
                    .iter()
                    .map(|v| PathBuf::from(format!("/usr/lib/postgresql/{v}/bin"))),
            )
            .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
        })
        .as_deref()
}

/// The `psql` beside the server programs, looked for once.
fn server_psql() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            server_programs()
                .map(|d| d.join("psql"))
                .filter(|p| p.is_file())
        })
        .as_deref()
}

/// `psql` itself, from the server programs' folder when it is there. On Debian the `psql` on
/// PATH is postgresql-common's `pg_wrapper`, a Perl script that picks a version and then runs
/// this one: 28 ms of CPU a start against 5 ms (2026-12-07), and the suite starts psql (the
/// tests' own reads and the example jobs') thousands of times. Falls back to `psql` on PATH.
pub(crate) fn psql_program() -> &'static Path {
    server_psql().unwrap_or(Path::new("psql"))
}

/// PATH for the processes the tests start: the server programs' folder first, when it holds
/// `psql`, so a job's `psql` is the program itself rather than Debian's wrapper (see
/// `psql_program`); the same client, found by the same name. `None` leaves PATH as it is.
pub(crate) fn jobs_path() -> Option<&'static OsStr> {
    static PATH: OnceLock<Option<OsString>> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = server_psql()?.parent()?;
        let inherited = std::env::var_os("PATH").unwrap_or_default();
        std::env::join_paths(
            std::iter::once(dir.to_path_buf()).chain(std::env::split_paths(&inherited)),
        )
        .ok()
    })
    .as_deref()
}

/// A test folder the cluster's unprivileged account can enter (reclaim run as root runs the
/// cluster as `nobody`, which needs to pass through every folder above its own).
pub(crate) fn folder() -> tempfile::TempDir {
    let dir = crate::support::tempdir();
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

/// `psql -Atc SQL` on the cluster in `cluster`, as role `reclaim`, run to its end.
pub(crate) fn psql_output(cluster: &Path, sql: &str) -> std::io::Result<std::process::Output> {
    Command::new(psql_program())
        .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
        .arg(cluster)
        .args(["-U", "reclaim", "-d", "postgres", "-c", sql])
        .env("PGCONNECT_TIMEOUT", "5")
        // The password reclaim made for the cluster, which a kept one keeps there.
        .env("PGPASSFILE", cluster.join("pgpass"))
        .output()
}

/// `psql_output`, its output trimmed; the test fails when psql does.
pub(crate) fn psql(cluster: &Path, sql: &str) -> String {
    let output = psql_output(cluster, sql).unwrap_or_else(|e| panic!("psql: {e}"));
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

/// A cluster reclaim kept after a one-item night, started again as its owner would: a server
/// reclaim did not start. Stopped, and its folder removed, when dropped (a failed assertion
/// included).
pub(crate) struct KeptServer {
    bin: PathBuf,
    pub(crate) cluster: PathBuf,
    _dir: tempfile::TempDir,
}

impl KeptServer {
    pub(crate) fn start(bin: &Path) -> Self {
        let dir = folder();
        let args = [
            "run",
            "--strategy",
            "keyed",
            "--items",
            "1",
            "--warehouse",
            "postgres",
            "--keep",
        ];
        let run = reclaim_in_dir(dir.path(), &args, Duration::from_secs(120));
        assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
        let cluster = cluster_folder(dir.path()).unwrap_or_else(|| panic!("no kept cluster"));
        // As a server someone else runs: its owner trusted on the socket (a URL with no
        // password), everyone else asked for one. The private cluster's own rule (the night's
        // password for everyone) ended with its night.
        std::fs::write(
            cluster.join("data").join("pg_hba.conf"),
            "local all reclaim trust\nlocal all all scram-sha-256\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        start_kept(bin, &cluster);
        Self {
            bin: bin.to_path_buf(),
            cluster,
            _dir: dir,
        }
    }

    /// The cluster's socket folder as a URL's host.
    pub(crate) fn host(&self) -> String {
        self.cluster
            .display()
            .to_string()
            .replace('%', "%25")
            .replace('/', "%2F")
    }
}

impl Drop for KeptServer {
    fn drop(&mut self) {
        stop_kept(&self.bin, &self.cluster);
        let _ = std::fs::remove_dir_all(&self.cluster);
    }
}

/// The cluster reclaim makes asks for its password: psql without it is refused, and with the
/// password reclaim keeps beside a kept cluster it gets in.
pub(crate) fn assert_refused_without_password(cluster: &Path) {
    let psql = |as_nobody: bool, with_password: bool| {
        let mut command = if as_nobody {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(psql_program());
            c
        } else {
            Command::new(psql_program())
        };
        command
            .args(["-X", "-w", "-At", "-h"])
            .arg(cluster)
            .args(["-U", "reclaim", "-d", "postgres", "-c", "SELECT 1"])
            .env("PGCONNECT_TIMEOUT", "5")
            .env_remove("PGPASSWORD")
            .env(
                "PGPASSFILE",
                if with_password {
                    cluster.join("pgpass")
                } else {
                    "/nonexistent".into()
                },
            );
        command.output().unwrap_or_else(|e| panic!("psql: {e}"))
    };
    let refused = psql(false, false);
    assert!(
        !refused.status.success(),
        "a connection without the password got in"
    );
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("no password supplied"), "{said}");
    if nix::unistd::Uid::effective().is_root() {
        // The cluster runs as `nobody`: another `nobody` process is refused as well.
        let refused = psql(true, false);
        assert!(!refused.status.success(), "a nobody process got in");
    }
    let admitted = psql(false, true);
    assert!(
        admitted.status.success(),
        "{}",
        String::from_utf8_lossy(&admitted.stderr)
    );
}
