//! The private cluster's guard (`reclaim pg-cluster`, hidden): it runs initdb and the
//! postmaster as its children, says `ready PASSWORD` on its stdout (a pipe only reclaim
//! reads), and stops the postmaster and removes the folder when its stdin closes (see
//! `cluster`).
//!
//! The cluster asks for a password (scram-sha-256, on its socket as on any address), made for
//! this night only: initdb reads it from a file created 0600 inside the cluster's own 0700
//! folder, removed once initdb has read it, never from a command line or an environment. The
//! guard hands it to reclaim on the pipe; reclaim hands it to its own workers and to a job in
//! their environment, which only their own user (and root) can read (`/proc/PID/environ`): run
//! as root, the cluster's account (`nobody`) cannot, and neither can any other `nobody`
//! process. The folder holds it in `pgpass` (0600), for psql (`PGPASSFILE`), a kept one too.
//!
//! The postmaster dies with the guard: PR_SET_PDEATHSIG(SIGQUIT), PostgreSQL's immediate
//! shutdown, which ends its backends and removes its shared memory; its dynamic shared memory
//! is in files in the data folder (`dynamic_shared_memory_type=mmap`), never in /dev/shm, so
//! nothing of it outlives the folder.

use std::io::{Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::{Pid, User};

use super::conninfo::Conninfo;

/// The file initdb reads the password from (removed once it has), and the one the folder
/// keeps it in for psql.
const PWFILE: &str = "initdb.pw";
pub const PGPASS: &str = "pgpass";

/// What reclaim writes to the guard before closing its stdin to keep the folder after all.
pub const KEEP_LINE: &[u8] = b"keep\n";

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

/// `reclaim pg-cluster`: the guard. Prints `ready PASSWORD` or `failed: REASON`, then waits
/// for stdin to close and stops and removes the cluster. Exit 0 once it is gone.
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
    // The pipe is watched from the start: reclaim gone (Ctrl-C) while initdb runs ends the start.
    let closed = Arc::new(AtomicBool::new(false));
    let (eof_tx, eof_rx) = std::sync::mpsc::channel::<bool>();
    let watch = Arc::clone(&closed);
    thread::spawn(move || {
        // The end, and whether reclaim said `KEEP_LINE` before it (the night's policy keeps
        // the cluster after all); anything else reclaim sends does not matter.
        let mut heard = Vec::new();
        let mut chunk = [0u8; 64];
        let mut stdin = std::io::stdin();
        while let Ok(n @ 1..) = stdin.read(&mut chunk) {
            if heard.len() < 1024 {
                heard.extend_from_slice(&chunk[..n]);
            }
        }
        let keep = heard.windows(KEEP_LINE.len()).any(|w| w == KEEP_LINE);
        watch.store(true, Ordering::SeqCst);
        let _ = eof_tx.send(keep);
    });
    let user = run_as.and_then(|name| User::from_name(name).ok().flatten());
    let password = new_password();
    let outcome = start_postmaster(dir, bin, user.as_ref(), &password, &closed);
    let mut out = std::io::stdout();
    let mut postmaster = match outcome {
        Ok(child) => {
            let _ = writeln!(out, "ready {password}");
            let _ = out.flush();
            Some(child)
        }
        Err(reason) => {
            let _ = writeln!(out, "failed: {reason}");
            let _ = out.flush();
            None
        }
    };
    // Waits for EOF (reclaim gone or done).
    let keep = eof_rx.recv().unwrap_or(false) || keep;
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

/// A password for one night: 128 random bits from the operating system's generator (rand's
/// thread generator, a CSPRNG seeded by it), as hex.
fn new_password() -> String {
    rand::random::<[u8; 16]>()
        .iter()
        .fold(String::with_capacity(32), |mut hex, b| {
            use std::fmt::Write as _;
            let _ = write!(hex, "{b:02x}");
            hex
        })
}

/// Writes `text` to a new file `name` in the cluster's folder: created exclusively, 0600, no
/// link followed, owned by the server's account.
fn write_secret(
    dir: &Path,
    name: &str,
    text: &str,
    user: Option<&User>,
) -> Result<PathBuf, StartFailure> {
    let path = dir.join(name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| StartFailure::new(format!("cannot create {name}: {e}")))?;
    file.write_all(text.as_bytes())
        .map_err(|e| StartFailure::new(format!("cannot write {name}: {e}")))?;
    if let Some(user) = user {
        nix::unistd::chown(&path, Some(user.uid), Some(user.gid))
            .map_err(|e| StartFailure::new(format!("cannot give {name} to its account: {e}")))?;
    }
    Ok(path)
}

/// Makes the child die by `signal` when the guard does (PR_SET_PDEATHSIG, after the account is
/// changed: a change of user clears it), or not start when the guard is already gone.
fn die_with_guard(command: &mut Command, signal: Signal) {
    let guard = nix::unistd::getpid();
    // SAFETY: the closure runs in the forked child before exec; it calls only prctl and getppid
    // (async-signal-safe system calls) and allocates nothing on its success path.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(signal).map_err(std::io::Error::from)?;
            if nix::unistd::getppid() != guard {
                return Err(std::io::Error::from_raw_os_error(nix::libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// initdb (once) and the postmaster, as `user` when given; returns once it accepts connections
/// with `password` (written in `pgpass` too).
fn start_postmaster(
    dir: &Path,
    bin: &Path,
    user: Option<&User>,
    password: &str,
    closed: &AtomicBool,
) -> Result<Child, StartFailure> {
    let data = dir.join("data");
    let as_user = |command: &mut Command| {
        command.env("LC_ALL", "C").env_remove("PGDATA");
        for name in ["PGPASSWORD", "PGPASSFILE", "PGSERVICE", "PGSERVICEFILE"] {
            command.env_remove(name);
        }
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
    let pwfile = write_secret(dir, PWFILE, password, user)?;
    let mut initdb = Command::new(bin.join("initdb"));
    initdb
        .arg("-D")
        .arg(&data)
        .args([
            "--auth=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        ])
        .arg(format!("--pwfile={}", pwfile.display()))
        .arg(format!("--username={ROLE}"))
        .stdin(Stdio::null())
        .stdout(Stdio::from(
            initdb_log
                .try_clone()
                .map_err(|e| StartFailure::new(e.to_string()))?,
        ))
        .stderr(Stdio::from(initdb_log));
    as_user(&mut initdb);
    die_with_guard(&mut initdb, Signal::SIGKILL);
    let status = run_bounded(initdb, START_BOUND, closed);
    let _ = std::fs::remove_file(&pwfile);
    let status = status.map_err(|e| StartFailure::new(format!("initdb: {e}")))?;
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
        .args(["-c", "dynamic_shared_memory_type=mmap"])
        .stdin(Stdio::null())
        .stdout(Stdio::from(
            server_log
                .try_clone()
                .map_err(|e| StartFailure::new(e.to_string()))?,
        ))
        .stderr(Stdio::from(server_log));
    as_user(&mut postgres);
    die_with_guard(&mut postgres, Signal::SIGQUIT);
    // For psql on the cluster while it runs, or kept, by whoever may enter its folder.
    write_secret(dir, PGPASS, &format!("*:*:*:{ROLE}:{password}\n"), user)?;
    let child = postgres
        .spawn()
        .map_err(|e| StartFailure::new(format!("cannot start postgres: {e}")))?;
    wait_ready(child, dir, password, closed)
}

/// Waits until the postmaster `child` accepts connections with `password` (bounded, and ended
/// early once reclaim is gone); stopped when it does not.
fn wait_ready(
    mut child: Child,
    dir: &Path,
    password: &str,
    closed: &AtomicBool,
) -> Result<Child, StartFailure> {
    let deadline = Instant::now() + START_BOUND;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let tail = last_line(&dir.join("postgres.log"));
            return Err(StartFailure::new(format!(
                "postgres exited at start ({status}): {tail}"
            )));
        }
        if let Ok(prepared) = conninfo(dir, password).config()
            && super::connect_with(prepared.config, &prepared.tls, "the private cluster", None)
                .is_ok()
        {
            return Ok(child);
        }
        if closed.load(Ordering::SeqCst) {
            stop_postmaster(&mut child);
            return Err(StartFailure::new("reclaim ended while the server started"));
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

/// Runs `command` to its end, killed past `bound` or once `closed`; returns whether it
/// succeeded.
fn run_bounded(
    mut command: Command,
    bound: Duration,
    closed: &AtomicBool,
) -> Result<bool, StartFailure> {
    let mut child = command
        .spawn()
        .map_err(|e| StartFailure::new(e.to_string()))?;
    let deadline = Instant::now() + bound;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status.success()),
            Ok(None) if closed.load(Ordering::SeqCst) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(StartFailure::new("reclaim ended while it ran"));
            }
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
pub(super) fn stop_adopted(data: &Path) {
    let Some(pid) = crate::base::postmaster::pid_named(data) else {
        return;
    };
    let ours = |pid: i32| crate::base::postmaster::runs_in(pid, data);
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

/// The port number in the socket's name (`.s.PGSQL.5432`); no TCP port is opened.
pub(super) const PORT: u16 = 5432;
/// The role initdb makes, with the night's password.
pub const ROLE: &str = "reclaim";
/// The longest initdb, or the postmaster's start, may take: a bound against a hang, not a
/// speed. initdb alone takes about 2 s on a quiet machine; with several clusters starting at
/// once at a load of 40 it took over 60 s, the bound before. Ctrl-C ends a start at once.
pub(super) const START_BOUND: Duration = Duration::from_secs(180);
/// How long the guard waits for each step of a stop before the next, harder one.
pub(super) const STOP_STEP: Duration = Duration::from_secs(5);

/// The connection string of a cluster in `dir`, with its password.
#[must_use]
pub fn conninfo(dir: &Path, password: &str) -> Conninfo {
    Conninfo::new(format!(
        "host={} port={PORT} user={ROLE} dbname=postgres password={password}",
        dir.display()
    ))
}
