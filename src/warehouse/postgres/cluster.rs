//! The private PostgreSQL cluster of `--warehouse postgres`: initdb in a folder of its own
//! (0700), a postmaster listening only on a Unix socket in that folder (`listen_addresses=''`)
//! and asking for a password made for the night (`cluster_guard`), stopped and removed on
//! every way reclaim ends.
//!
//! A guard process (`reclaim pg-cluster`, hidden) owns the cluster: it runs initdb and the
//! postmaster as its children, says `ready` and the password on stdout, and then waits for its
//! stdin to close. reclaim holds the write end of that pipe and nothing else does, so the pipe
//! closes however reclaim ends: returning, an error, a signal, a panic, or SIGKILL. On that EOF
//! the guard stops the postmaster (fast shutdown, then immediate, then SIGKILL), waits for it,
//! and removes the folder (unless `--keep`). The guard leads a process group of its own and
//! ignores the ending signals, so neither Ctrl-C nor a SIGKILL of reclaim's group (a CI's
//! cancel) reaches it: only the pipe ends it. The postmaster dies with the guard (a SIGKILL of
//! the guard itself: PR_SET_PDEATHSIG), and reclaim, finding the guard gone, removes the
//! folder. A folder whose reclaim and guard were both killed is removed by the next
//! `--warehouse postgres`, which says so (`sweep_leftovers`).
//!
//! PostgreSQL refuses to run as root. Run as root, reclaim creates no user: it runs initdb and
//! the postmaster as `nobody` (an existing unprivileged account), with the folder chowned to it,
//! and refuses with the fix when `nobody` cannot reach the folder. The password keeps every
//! other `nobody` process out.

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use nix::unistd::{Uid, User};

use super::cluster_guard::KEEP_LINE;
pub use super::cluster_guard::{GuardArgs, ROLE, conninfo, guard};
use super::cluster_guard::{PGPASS, stop_adopted};
use super::cluster_guard::{START_BOUND, STOP_STEP};
use super::conninfo::Conninfo;
use crate::warehouse::error::WarehouseError;

/// Where Debian's `postgresql` package puts the server's programs, newest first.
const BIN_DIRS: [&str; 4] = [
    "/usr/lib/postgresql/17/bin",
    "/usr/lib/postgresql/16/bin",
    "/usr/lib/postgresql/15/bin",
    "/usr/lib/postgresql/14/bin",
];
/// The account the cluster runs as when reclaim runs as root.
const UNPRIVILEGED: &str = "nobody";
/// How a cluster folder's name starts (`reclaim-pg-MILLIS-PID`, PID reclaim's).
const FOLDER_PREFIX: &str = "reclaim-pg-";
// The file that marks a folder kept on purpose (`--keep always`, or a failed night's under
// `--keep failed`): never swept; `reclaim kept` removes it with its night.
use crate::base::kept::COMPANION_MARK as KEPT_MARK;

/// The folder with PostgreSQL's server programs (`initdb`, `postgres`), or why there is none.
pub fn bin_dir() -> Result<PathBuf, WarehouseError> {
    if let Some(dir) = std::env::var_os("RECLAIM_PG_BIN") {
        let dir = PathBuf::from(dir);
        if dir.join("initdb").is_file() && dir.join("postgres").is_file() {
            return Ok(dir);
        }
        return Err(WarehouseError::Cluster(format!(
            "RECLAIM_PG_BIN={} holds no initdb and postgres: name the folder of PostgreSQL's server programs (e.g. /usr/lib/postgresql/15/bin), or unset it",
            crate::base::text::escape_controls(&dir.display().to_string())
        )));
    }
    BIN_DIRS
        .iter()
        .map(PathBuf::from)
        .find(|d| d.join("initdb").is_file() && d.join("postgres").is_file())
        .ok_or_else(|| {
            WarehouseError::Cluster(
                "no PostgreSQL server programs found (initdb, postgres under /usr/lib/postgresql/N/bin): install them with `apt-get install postgresql`, or set RECLAIM_PG_BIN".into(),
            )
        })
}

/// reclaim's handle on the running cluster: the guard and the pipe that keeps it waiting.
#[derive(Debug)]
pub struct Cluster {
    dir: PathBuf,
    keep: bool,
    run_as: Option<String>,
    bin: PathBuf,
    guard: Child,
    /// Closing it (dropping) tells the guard to stop the cluster.
    stdin: Option<ChildStdin>,
    /// How to connect, the night's password in it.
    conninfo: Conninfo,
    /// What reclaim saw of the guard's end when it was not the stop it asked for.
    guard_lost: Option<String>,
    /// The policy's words on why the folder is kept (`--keep always`).
    kept_why: String,
}

impl Cluster {
    /// Creates the folder, starts the guard and waits for its `ready` (an ending signal
    /// meanwhile stops it and is said as the refusal).
    pub fn start(keep: bool) -> Result<Self, WarehouseError> {
        let bin = bin_dir()?;
        let run_as = Uid::effective().is_root().then(|| UNPRIVILEGED.to_string());
        for line in sweep_leftovers(&std::env::temp_dir(), run_as.as_deref()) {
            eprintln!("reclaim: {line}");
        }
        let dir = make_folder(run_as.as_deref(), keep)?;
        let exe = std::env::current_exe()
            .map_err(|e| WarehouseError::Cluster(format!("cannot find reclaim itself: {e}")))?;
        let mut command = Command::new(exe);
        command
            .arg("pg-cluster")
            .arg("--dir")
            .arg(&dir)
            .arg("--bin")
            .arg(&bin)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // Out of reclaim's group: a SIGKILL of the group must leave it to clean up.
            .process_group(0);
        if keep {
            command.arg("--keep");
        }
        if let Some(user) = &run_as {
            command.arg("--run-as").arg(user);
        }
        // Ctrl-C while the cluster starts is caught and said, once the guard has cleaned up.
        let _ = crate::base::signals::install();
        let mut guard = command.spawn().map_err(|e| {
            let _ = std::fs::remove_dir_all(&dir);
            WarehouseError::Cluster(format!("cannot start its guard: {e}"))
        })?;
        // reclaim's own child, not a job's orphan: a sweep after a job's death leaves it.
        crate::base::orphans::own(guard.id());
        let stdin = guard.stdin.take();
        let stdout = guard.stdout.take();
        let mut cluster = Self {
            conninfo: conninfo(&dir, ""),
            dir,
            keep,
            run_as,
            bin,
            guard,
            stdin,
            guard_lost: None,
            kept_why: "--keep always".into(),
        };
        // The guard's first line: `ready PASSWORD`, or the reason it could not start the cluster.
        let (tx, rx) = mpsc::channel();
        if let Some(stdout) = stdout {
            thread::spawn(move || {
                let mut line = String::new();
                let _ = BufReader::new(stdout).read_line(&mut line);
                let _ = tx.send(line);
            });
        }
        // initdb and the postmaster's start are bounded each: the guard's whole start, both.
        let deadline = Instant::now() + START_BOUND * 2 + Duration::from_secs(5);
        let line = loop {
            if let Some(signal) = crate::base::signals::received() {
                cluster.stop();
                return Err(WarehouseError::Cluster(format!(
                    "stopped by {signal} while it started; {}",
                    cluster.what_is_left()
                )));
            }
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(line) => break line,
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {}
                Err(_) => break String::new(),
            }
        };
        if let Some(password) = line.trim_end().strip_prefix("ready ") {
            cluster.conninfo = conninfo(&cluster.dir, password);
            return Ok(cluster);
        }
        // Its stdout closed with no line: the guard is ending (its exit follows its pipe's end).
        let ended = line.is_empty().then(|| {
            let deadline = Instant::now() + Duration::from_secs(1);
            loop {
                match cluster.guard.try_wait() {
                    Ok(Some(status)) => break Some(status),
                    Ok(None) if Instant::now() < deadline => {
                        thread::sleep(Duration::from_millis(10));
                    }
                    _ => break None,
                }
            }
        });
        let ended = ended.flatten();
        cluster.stop();
        let reason = match (line.trim_end().strip_prefix("failed: "), ended) {
            (Some(reason), _) => crate::base::text::escape_controls(reason),
            (None, Some(status)) => format!(
                "its guard ended before the cluster was ready ({status}); {}",
                cluster.what_is_left()
            ),
            (None, None) => format!(
                "its guard said nothing within {} s (see the messages above); {}",
                START_BOUND.as_secs() * 2 + 5,
                cluster.what_is_left()
            ),
        };
        Err(WarehouseError::Cluster(reason))
    }

    /// How to connect to the cluster's socket, with the night's password.
    #[must_use]
    pub fn conninfo(&self) -> Conninfo {
        self.conninfo.clone()
    }

    /// Whether the folder stays after the cluster stops (`--keep`).
    #[must_use]
    pub fn kept(&self) -> bool {
        self.keep
    }

    /// Keeps the folder after all, as the night's policy says at its end (`--keep failed` and
    /// the night failed): the guard is told before the pipe closes, and the folder marked.
    /// Said on the closing lines as `why`.
    pub fn keep_as(&mut self, why: &str) {
        self.kept_why = why.to_string();
        if self.keep {
            return;
        }
        let told = self.stdin.as_mut().is_some_and(|pipe| {
            use std::io::Write as _;
            pipe.write_all(KEEP_LINE)
                .and_then(|()| pipe.flush())
                .is_ok()
        });
        let marked = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.dir.join(KEPT_MARK))
            .is_ok();
        // A guard that could not be told is gone: the stop is reclaim's, which keeps it too.
        let guard_gone = matches!(self.guard.try_wait(), Ok(Some(_)));
        self.keep = marked && (told || guard_gone);
    }

    /// What restarting this cluster takes, for the host's restart (`--restart-server-at-rows`).
    #[must_use]
    pub fn restarter(&self) -> super::restart::Restarter {
        super::restart::Restarter {
            pg_ctl: self.bin.join("pg_ctl"),
            dir: self.dir.clone(),
            run_as: self.run_as.clone(),
        }
    }

    /// The cluster's folder (data in `data/`, the socket beside it).
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops the cluster and waits for the guard (bounded); removes the folder unless kept.
    /// A guard that ended before it was asked to (killed) left the stop to reclaim: its
    /// postmaster, told of its death, is waited for (and stopped if it is not going), then the
    /// folder removed.
    pub fn stop(&mut self) {
        if self.stdin.is_none() {
            return;
        }
        if let Ok(Some(status)) = self.guard.try_wait() {
            self.guard_lost = Some(format!("its guard ended by itself ({status})"));
        }
        drop(self.stdin.take());
        let deadline = Instant::now() + STOP_STEP * 3 + Duration::from_secs(2);
        let mut ended = false;
        while Instant::now() < deadline {
            if matches!(self.guard.try_wait(), Ok(Some(_)) | Err(_)) {
                ended = true;
                break;
            }
            thread::sleep(Duration::from_millis(20));
        }
        if !ended {
            let _ = self.guard.kill();
            let _ = self.guard.wait();
            self.guard_lost = Some("its guard did not finish the stop in time".into());
        }
        if self.guard_lost.is_some() {
            stop_adopted(&self.dir.join("data"));
            if !self.keep {
                let _ = std::fs::remove_dir_all(&self.dir);
            }
        }
    }

    /// What is left of the cluster once stopped, said with how to remove it.
    fn what_is_left(&self) -> String {
        let running = crate::base::postmaster::running_in(&self.dir.join("data"));
        match (self.dir.exists(), running) {
            (false, _) => format!("it is stopped and removed ({})", self.dir.display()),
            (true, Some(pid)) => format!(
                "its server (pid {pid}) is still running: stop it with `kill -QUIT {pid}`, then `rm -r {}`",
                self.dir.display()
            ),
            (true, None) => format!(
                "it is stopped, its folder NOT removed: remove it with `rm -r {}`",
                self.dir.display()
            ),
        }
    }

    /// What a kept cluster's user needs: where it is and how to start it and connect.
    #[must_use]
    pub fn closing_lines(&self, schemas: &[String]) -> Vec<String> {
        if !self.keep {
            let how = self
                .guard_lost
                .as_ref()
                .map_or(String::new(), |lost| format!(" by reclaim ({lost})"));
            // Said from what is there.
            if self.dir.exists()
                || crate::base::postmaster::running_in(&self.dir.join("data")).is_some()
            {
                return vec![format!(
                    "postgres     private cluster NOT removed{how}: {}",
                    self.what_is_left()
                )];
            }
            return vec![format!(
                "postgres     private cluster stopped and removed{how} ({})",
                self.dir.display()
            )];
        }
        let dir = self.dir.display();
        let pg_ctl = self.bin.join("pg_ctl");
        let as_user = self
            .run_as
            .as_ref()
            .map_or(String::new(), |u| format!("runuser -u {u} -- "));
        vec![
            format!(
                "postgres     private cluster kept ({}), stopped: {dir}",
                self.kept_why
            ),
            format!(
                "postgres     start it:  {as_user}{} -D {dir}/data -l {dir}/postgres.log -o \"-c listen_addresses='' -k {dir}\" start",
                pg_ctl.display()
            ),
            // A night that ended by an error never listed its schemas: psql lists them.
            match schemas.first() {
                Some(schema) => format!(
                    "postgres     look:      PGPASSFILE={dir}/{PGPASS} psql -h {dir} -U {ROLE} postgres -c 'SELECT count(*) FROM {schema}.records'"
                ),
                None => format!(
                    "postgres     look:      PGPASSFILE={dir}/{PGPASS} psql -h {dir} -U {ROLE} postgres -c '\\dn'"
                ),
            },
            format!(
                "postgres     schemas:   {}",
                if schemas.is_empty() {
                    "not listed: the night ended before it could ask the server".to_string()
                } else {
                    super::list_schemas(schemas)
                }
            ),
            format!(
                "postgres     stop it:   {as_user}{} -D {dir}/data stop, then rm -r {dir}",
                pg_ctl.display()
            ),
        ]
    }
}

/// A night that ends by an error never reaches its closing lines: what is left is said here.
impl Drop for Cluster {
    fn drop(&mut self) {
        if self.stdin.is_none() {
            return;
        }
        self.stop();
        if self.keep && self.dir.exists() {
            // Kept (`--keep always`): where it is and how to look, as a night's end says.
            for line in self.closing_lines(&[]) {
                eprintln!("{line}");
            }
        } else if !self.keep && self.dir.exists() {
            eprintln!(
                "reclaim: the private PostgreSQL cluster: {}",
                self.what_is_left()
            );
        }
    }
}

/// Removes the cluster folders in `base` that a reclaim ended by SIGKILL together with its
/// guard left (the reclaim named in the folder's name gone, no server running there, not kept
/// on purpose, owned by the account reclaim's clusters run as); says each.
fn sweep_leftovers(base: &Path, run_as: Option<&str>) -> Vec<String> {
    let owner = match run_as {
        Some(name) => User::from_name(name).ok().flatten().map(|u| u.uid.as_raw()),
        None => Some(Uid::effective().as_raw()),
    };
    let Ok(entries) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    let mut said = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(FOLDER_PREFIX))
            .and_then(|rest| rest.rsplit_once('-'))
            .and_then(|(_, pid)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let dir = entry.path();
        let ours =
            std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir() && Some(m.uid()) == owner);
        let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
            || std::path::Path::new(&format!("/proc/{pid}")).exists();
        if !ours || alive || dir.join(KEPT_MARK).exists() {
            continue;
        }
        if let Some(server) = crate::base::postmaster::may_run_in(&dir.join("data")) {
            said.push(format!(
                "a private PostgreSQL cluster of an ended reclaim (pid {pid}) is still running (server pid {server}) in {}: left alone; stop it with `kill -QUIT {server}`, then `rm -r {}`",
                dir.display(),
                dir.display()
            ));
            continue;
        }
        said.push(match std::fs::remove_dir_all(&dir) {
            Ok(()) => format!(
                "removed {}, a private PostgreSQL cluster left by a reclaim that was killed (pid {pid})",
                dir.display()
            ),
            Err(e) => format!(
                "cannot remove {}, a private PostgreSQL cluster left by a reclaim that was killed (pid {pid}): {e}; remove it with `rm -r {}`",
                dir.display(),
                dir.display()
            ),
        });
    }
    said
}

/// A new folder for the cluster under the temporary folder: mode 0700, owned by the account
/// that will run the server. Every folder above it must let that account through.
fn make_folder(run_as: Option<&str>, keep: bool) -> Result<PathBuf, WarehouseError> {
    let base = std::env::temp_dir();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let dir = base.join(format!("{FOLDER_PREFIX}{stamp}-{}", std::process::id()));
    if let Err(e) = std::fs::metadata(&base) {
        return Err(WarehouseError::Cluster(format!(
            "cannot use the temporary folder {} for it ({e}): set TMPDIR to a folder reclaim can write",
            base.display()
        )));
    }
    let user = match run_as {
        Some(name) => Some(
            User::from_name(name)
                .ok()
                .flatten()
                .ok_or_else(|| {
                    WarehouseError::Cluster(format!(
                        "PostgreSQL refuses to run as root, and there is no `{name}` account to run it as; run reclaim as an unprivileged user"
                    ))
                })?,
        ),
        None => None,
    };
    if user.is_some() {
        // Root may enter any folder; the server's account only those that let others through.
        let mut above = Some(base.as_path());
        while let Some(folder) = above {
            let mode = std::fs::metadata(folder).map_or(0, |m| m.permissions().mode());
            if mode & 0o001 == 0 {
                return Err(WarehouseError::Cluster(format!(
                    "reclaim runs as root, so the cluster runs as `{UNPRIVILEGED}`, which cannot enter {} (mode {:o}); set TMPDIR to a folder it can reach (e.g. TMPDIR=/tmp), or run reclaim as an unprivileged user",
                    folder.display(),
                    mode & 0o7777
                )));
            }
            above = folder.parent();
        }
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| WarehouseError::Cluster(format!("cannot create {}: {e}", dir.display())))?;
    if keep {
        // Inside the night's own folder (0700): a mark, never swept as a leftover.
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.join(KEPT_MARK));
    }
    if let Some(user) = user {
        nix::unistd::chown(&dir, Some(user.uid), Some(user.gid)).map_err(|e| {
            let _ = std::fs::remove_dir(&dir);
            WarehouseError::Cluster(format!(
                "cannot give {} to {UNPRIVILEGED}: {e}",
                dir.display()
            ))
        })?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_left_by_a_killed_reclaim_is_removed_and_said_and_no_other() {
        let base = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        // A pid that has ended: a process of this test's, reaped.
        let mut ended = Command::new("true")
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let _ = ended.wait();
        let dead = ended.id();
        let folder = |name: String| {
            let dir = base.path().join(name);
            std::fs::create_dir_all(dir.join("data")).unwrap_or_else(|e| panic!("{e}"));
            dir
        };
        let left = folder(format!("{FOLDER_PREFIX}1-{dead}"));
        let kept = folder(format!("{FOLDER_PREFIX}2-{dead}"));
        std::fs::write(kept.join(KEPT_MARK), "").unwrap_or_else(|e| panic!("{e}"));
        let running = folder(format!("{FOLDER_PREFIX}3-{}", std::process::id()));
        let other = folder(format!("elsewhere-{dead}"));
        let said = sweep_leftovers(base.path(), None);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with(&format!("removed {}", left.display()))
                && said[0].contains(&format!("(pid {dead})")),
            "{said:?}"
        );
        assert!(!left.exists());
        assert!(kept.exists() && running.exists() && other.exists());
        // Nothing left to say the second time.
        assert!(sweep_leftovers(base.path(), None).is_empty());
    }
}
