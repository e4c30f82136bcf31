//! The private PostgreSQL cluster of `--warehouse postgres`: initdb in a folder of its own
//! (0700), a postmaster listening only on a Unix socket in that folder (`listen_addresses=''`),
//! stopped and removed on every way reclaim ends.
//!
//! A guard process (`reclaim pg-cluster`, hidden) owns the cluster: it runs initdb and the
//! postmaster as its children, says `ready` on stdout, and then waits for its stdin to close.
//! reclaim holds the write end of that pipe and nothing else does, so the pipe closes however
//! reclaim ends: returning, an error, a signal, a panic, or SIGKILL. On that EOF the guard stops
//! the postmaster (fast shutdown, then immediate, then SIGKILL), waits for it, and removes the
//! folder (unless `--keep`). The guard stays in reclaim's process group (Ctrl-C reaches it as it
//! reaches reclaim) and ignores the ending signals itself, so only the pipe ends it.
//!
//! PostgreSQL refuses to run as root. Run as root, reclaim creates no user: it runs initdb and
//! the postmaster as `nobody` (an existing unprivileged account), with the folder chowned to it,
//! and refuses with the fix when `nobody` cannot reach the folder.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::{Pid, Uid, User};

use crate::warehouse::error::WarehouseError;

/// Where Debian's `postgresql` package puts the server's programs, newest first.
const BIN_DIRS: [&str; 4] = [
    "/usr/lib/postgresql/17/bin",
    "/usr/lib/postgresql/16/bin",
    "/usr/lib/postgresql/15/bin",
    "/usr/lib/postgresql/14/bin",
];
/// The port number in the socket's name (`.s.PGSQL.5432`); no TCP port is opened.
const PORT: u16 = 5432;
/// The account the cluster runs as when reclaim runs as root.
const UNPRIVILEGED: &str = "nobody";
/// The role initdb makes, trusted on the socket (only the folder's owner and root reach it).
pub const ROLE: &str = "reclaim";
/// The longest initdb, or the postmaster's start, may take.
const START_BOUND: Duration = Duration::from_secs(60);
/// How long the guard waits for each step of a stop before the next, harder one.
const STOP_STEP: Duration = Duration::from_secs(5);

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
}

impl Cluster {
    /// Creates the folder, starts the guard and waits for its `ready`.
    pub fn start(keep: bool) -> Result<Self, WarehouseError> {
        let bin = bin_dir()?;
        let run_as = Uid::effective().is_root().then(|| UNPRIVILEGED.to_string());
        let dir = make_folder(run_as.as_deref())?;
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
            .stderr(Stdio::inherit());
        if keep {
            command.arg("--keep");
        }
        if let Some(user) = &run_as {
            command.arg("--run-as").arg(user);
        }
        let mut guard = command.spawn().map_err(|e| {
            let _ = std::fs::remove_dir_all(&dir);
            WarehouseError::Cluster(format!("cannot start its guard: {e}"))
        })?;
        // reclaim's own child, not a job's orphan: a sweep after a job's death leaves it.
        crate::base::orphans::own(guard.id());
        let stdin = guard.stdin.take();
        let stdout = guard.stdout.take();
        let mut cluster = Self {
            dir,
            keep,
            run_as,
            bin,
            guard,
            stdin,
        };
        // The guard's first line: `ready`, or the reason it could not start the cluster.
        let (tx, rx) = mpsc::channel();
        if let Some(stdout) = stdout {
            thread::spawn(move || {
                let mut line = String::new();
                let _ = BufReader::new(stdout).read_line(&mut line);
                let _ = tx.send(line);
            });
        }
        let line = rx
            .recv_timeout(START_BOUND + Duration::from_secs(5))
            .unwrap_or_default();
        if line.trim_end() == "ready" {
            return Ok(cluster);
        }
        cluster.stop();
        let reason = line
            .trim_end()
            .strip_prefix("failed: ")
            .unwrap_or("its guard said nothing within the bound (see the messages above)");
        Err(WarehouseError::Cluster(crate::base::text::escape_controls(
            reason,
        )))
    }

    /// The connection string for the cluster's socket.
    #[must_use]
    pub fn conninfo(&self) -> String {
        conninfo(&self.dir)
    }

    /// Whether the folder stays after the cluster stops (`--keep`).
    #[must_use]
    pub fn kept(&self) -> bool {
        self.keep
    }

    /// The cluster's folder (data in `data/`, the socket beside it).
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops the cluster and waits for the guard (bounded); removes the folder unless kept.
    pub fn stop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + STOP_STEP * 3 + Duration::from_secs(2);
        while Instant::now() < deadline {
            if matches!(self.guard.try_wait(), Ok(Some(_)) | Err(_)) {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        // A guard that did not finish its stop: end it; its postmaster then dies on its own
        // when it finds its parent gone (PostgreSQL watches the postmaster, not the guard), so
        // at worst the folder is left, and it is named.
        let _ = self.guard.kill();
        let _ = self.guard.wait();
        eprintln!(
            "reclaim: the private PostgreSQL cluster did not stop in time; remove {} if it is still there",
            self.dir.display()
        );
    }

    /// What a kept cluster's user needs: where it is and how to start it and connect.
    #[must_use]
    pub fn closing_lines(&self, schemas: &[String]) -> Vec<String> {
        if !self.keep {
            // Said from what is there: a stop that did not finish in time leaves the folder.
            if self.dir.exists() {
                return vec![format!(
                    "postgres     private cluster NOT removed: its stop did not finish in time; remove {}",
                    self.dir.display()
                )];
            }
            return vec![format!(
                "postgres     private cluster stopped and removed ({})",
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
            format!("postgres     private cluster kept, stopped: {dir}"),
            format!(
                "postgres     start it:  {as_user}{} -D {dir}/data -l {dir}/postgres.log -o \"-c listen_addresses='' -k {dir}\" start",
                pg_ctl.display()
            ),
            format!(
                "postgres     look:      psql -h {dir} -U {ROLE} postgres -c 'SELECT count(*) FROM {}.records'",
                schemas.first().map_or("SCHEMA", String::as_str)
            ),
            format!("postgres     schemas:   {}", super::list_schemas(schemas)),
            format!(
                "postgres     stop it:   {as_user}{} -D {dir}/data stop, then rm -r {dir}",
                pg_ctl.display()
            ),
        ]
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            self.stop();
        }
    }
}

/// The connection string of a cluster in `dir`.
#[must_use]
pub fn conninfo(dir: &Path) -> String {
    format!(
        "host={} port={PORT} user={ROLE} dbname=postgres",
        dir.display()
    )
}

/// A new folder for the cluster under the temporary folder: mode 0700, owned by the account
/// that will run the server. Every folder above it must let that account through.
fn make_folder(run_as: Option<&str>) -> Result<PathBuf, WarehouseError> {
    let base = std::env::temp_dir();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let dir = base.join(format!("reclaim-pg-{stamp}-{}", std::process::id()));
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

/// `reclaim pg-cluster`'s arguments (what `Cluster::start` passes).
#[derive(Debug, clap::Args)]
pub struct GuardArgs {
    #[arg(long)]
    pub dir: PathBuf,
    #[arg(long)]
    pub bin: PathBuf,
    #[arg(long)]
    pub run_as: Option<String>,
    #[arg(long)]
    pub keep: bool,
}

/// `reclaim pg-cluster`: the guard. Prints `ready` or `failed: REASON`, then waits for stdin
/// to close and stops and removes the cluster. Exit 0 once it is gone.
#[must_use]
pub fn guard(args: &GuardArgs) -> u8 {
    let (dir, bin, run_as, keep) = (&args.dir, &args.bin, args.run_as.as_deref(), args.keep);
    // Only the pipe ends the guard: a Ctrl-C or SIGTERM meant for reclaim must not leave the
    // cluster without its keeper (reclaim closes the pipe as it ends anyway).
    let ignored = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGQUIT,
    ] {
        let _ = signal_hook::flag::register(signal, Arc::clone(&ignored));
    }
    let user = run_as.and_then(|name| User::from_name(name).ok().flatten());
    let outcome = start_postmaster(dir, bin, user.as_ref());
    let mut out = std::io::stdout();
    let mut postmaster = match outcome {
        Ok(child) => {
            let _ = writeln!(out, "ready");
            let _ = out.flush();
            Some(child)
        }
        Err(reason) => {
            let _ = writeln!(out, "failed: {reason}");
            let _ = out.flush();
            None
        }
    };
    // Waits for EOF (reclaim gone or done); nothing reclaim sends matters.
    let mut sink = [0u8; 64];
    let mut stdin = std::io::stdin();
    while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
    if let Some(child) = postmaster.as_mut() {
        stop_postmaster(child);
    }
    // A postmaster started again by someone else (`pg_ctl restart` mid-night) is not the
    // guard's child: it is found by its pid file and stopped the same way.
    stop_adopted(&dir.join("data"));
    if !keep {
        let _ = std::fs::remove_dir_all(dir);
    }
    0
}

/// Why the private cluster could not start: the guard prints it for reclaim to refuse with.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct StartFailure(String);

impl StartFailure {
    fn new(reason: impl Into<String>) -> Self {
        Self(reason.into())
    }
}

/// initdb (once) and the postmaster, as `user` when given; returns once it accepts connections.
fn start_postmaster(dir: &Path, bin: &Path, user: Option<&User>) -> Result<Child, StartFailure> {
    let data = dir.join("data");
    let as_user = |command: &mut Command| {
        command.env("LC_ALL", "C").env_remove("PGDATA");
        if let Some(user) = user {
            command
                .uid(user.uid.as_raw())
                .gid(user.gid.as_raw())
                .env("HOME", dir);
        }
    };
    let log = |name: &str| {
        std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(dir.join(name))
            .map_err(|e| StartFailure::new(format!("cannot create {name}: {e}")))
    };
    let initdb_log = log("initdb.log")?;
    let mut initdb = Command::new(bin.join("initdb"));
    initdb
        .arg("-D")
        .arg(&data)
        .args(["--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"])
        .arg(format!("--username={ROLE}"))
        .stdin(Stdio::null())
        .stdout(Stdio::from(
            initdb_log
                .try_clone()
                .map_err(|e| StartFailure::new(e.to_string()))?,
        ))
        .stderr(Stdio::from(initdb_log));
    as_user(&mut initdb);
    let status =
        run_bounded(initdb, START_BOUND).map_err(|e| StartFailure::new(format!("initdb: {e}")))?;
    if !status {
        let tail = last_line(&dir.join("initdb.log"));
        return Err(StartFailure::new(format!("initdb failed: {tail}")));
    }
    let server_log = log("postgres.log")?;
    if let Some(user) = user {
        // The logs were created by the guard (root): hand them over with the folder, so a kept
        // cluster started again by hand (`pg_ctl -l postgres.log`) can append to its log.
        for name in ["initdb.log", "postgres.log"] {
            let _ = nix::unistd::chown(&dir.join(name), Some(user.uid), Some(user.gid));
        }
    }
    let mut postgres = Command::new(bin.join("postgres"));
    postgres
        .arg("-D")
        .arg(&data)
        .args(["-c", "listen_addresses="])
        .arg("-c")
        .arg(format!("unix_socket_directories={}", dir.display()))
        .args(["-c", &format!("port={PORT}")])
        .args(["-c", "max_connections=200"])
        .stdin(Stdio::null())
        .stdout(Stdio::from(
            server_log
                .try_clone()
                .map_err(|e| StartFailure::new(e.to_string()))?,
        ))
        .stderr(Stdio::from(server_log));
    as_user(&mut postgres);
    let mut child = postgres
        .spawn()
        .map_err(|e| StartFailure::new(format!("cannot start postgres: {e}")))?;
    let deadline = Instant::now() + START_BOUND;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let tail = last_line(&dir.join("postgres.log"));
            return Err(StartFailure::new(format!(
                "postgres exited at start ({status}): {tail}"
            )));
        }
        let config: Result<postgres::Config, _> = conninfo(dir).parse();
        if let Ok(config) = config
            && super::connect_with(config, "the private cluster", None).is_ok()
        {
            return Ok(child);
        }
        if Instant::now() > deadline {
            stop_postmaster(&mut child);
            return Err(StartFailure::new(
                "postgres did not accept connections within 60 s",
            ));
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `command` to its end, killed past `bound`; returns whether it succeeded.
fn run_bounded(mut command: Command, bound: Duration) -> Result<bool, StartFailure> {
    let mut child = command
        .spawn()
        .map_err(|e| StartFailure::new(e.to_string()))?;
    let deadline = Instant::now() + bound;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status.success()),
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(StartFailure::new(format!(
                    "did not finish within {} s",
                    bound.as_secs()
                )));
            }
            Ok(None) => thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(StartFailure::new(e.to_string())),
        }
    }
}

/// Fast shutdown (SIGINT: open transactions rolled back, clients disconnected), then immediate
/// (SIGQUIT), then SIGKILL, each given `STOP_STEP`; reaped.
fn stop_postmaster(child: &mut Child) {
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    for signal in [Signal::SIGINT, Signal::SIGQUIT, Signal::SIGKILL] {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = kill(pid, signal);
        let deadline = Instant::now() + STOP_STEP;
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_)) | Err(_)) {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
    let _ = child.wait();
}

/// Stops the postmaster named in `data/postmaster.pid` if it is one running in `data` (its
/// working folder there: a pid reused by something else is left alone): fast, immediate, then
/// SIGKILL, each given `STOP_STEP`, until it is gone.
fn stop_adopted(data: &Path) {
    let Some(pid) = std::fs::read_to_string(data.join("postmaster.pid"))
        .ok()
        .and_then(|text| text.lines().next()?.trim().parse::<i32>().ok())
    else {
        return;
    };
    let ours = |pid: i32| {
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd"));
        let data = std::fs::canonicalize(data);
        matches!((cwd, data), (Ok(c), Ok(d)) if c == d) && !zombie(pid)
    };
    for signal in [Signal::SIGINT, Signal::SIGQUIT, Signal::SIGKILL] {
        if !ours(pid) {
            return;
        }
        let _ = kill(Pid::from_raw(pid), signal);
        let deadline = Instant::now() + STOP_STEP;
        while Instant::now() < deadline && ours(pid) {
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A dead process not yet reaped by its parent.
fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            == Some("Z")
    })
}

/// The last non-empty line of a log, for a one-line error.
fn last_line(path: &Path) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| {
            text.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::to_string)
        })
        .map_or_else(
            || "no message".into(),
            |l| crate::base::text::escape_controls(&l),
        )
}
