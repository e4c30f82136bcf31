//! The one home of what the integration modules share: running the real binary (to completion,
//! or against a deadline), decoding what it printed, reading its databases back independently,
//! and waiting on something observable. Beside it: `nights` (a night's text read back),
//! `screen` and `pty` (the dashboard in a pseudo-terminal), `pg` (PostgreSQL), `png` (a
//! rendered slide's pixels). `build.rs` is the package's build script, which only finds whether
//! the PostgreSQL tests can run.

pub(crate) mod fixtures;
mod nights;
pub(crate) mod pg;
pub(crate) mod png;
pub(crate) mod pty;
mod screen;

pub(crate) use nights::*;
pub(crate) use pg::*;
pub(crate) use pty::Dashboard;
pub(crate) use screen::*;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use rusqlite::{Connection, OpenFlags};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_reclaim");

/// The Python the example jobs run under, as the start of a shell command: the interpreter by
/// its own path, without `site` (`-S`). `python3` found on PATH may be a version manager's shim
/// (pyenv's is a bash script), and a site-packages' `.pth` files run at every start (on the
/// machine these figures come from, one imported certifi: 38 ms of CPU a start against 18 ms
/// without `site`); every job start in the suite would pay for both. The examples need only
/// the standard library and the helper beside them, which `-S` keeps (the script's own folder
/// stays on the path). Falls back to `python3 -S`.
pub(crate) fn python3() -> &'static str {
    static COMMAND: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    COMMAND.get_or_init(|| {
        let path = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty() && !s.contains(char::is_whitespace))
            .unwrap_or_else(|| "python3".to_owned());
        format!("{path} -S")
    })
}

/// One finished invocation of the binary, its output decoded.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: Option<i32>,
    pub(crate) signal: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    pub(crate) fn from_output(what: &str, output: &Output) -> Self {
        let run = Self {
            code: output.status.code(),
            signal: output.status.signal(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        };
        // Whatever the input, a panic (or its backtrace) is never what a user should see.
        assert!(
            !run.stderr.contains("panicked"),
            "{what} panicked:\n{}",
            run.stderr
        );
        run
    }

    /// The worker's `done` line, if it got that far.
    pub(crate) fn done_line(&self) -> Option<&str> {
        self.stdout.lines().find(|l| l.starts_with("done "))
    }

    /// `key=value` from the first stdout line starting with `prefix`.
    pub(crate) fn field(&self, prefix: &str, key: &str) -> Option<&str> {
        let line = self.stdout.lines().find(|l| l.starts_with(prefix))?;
        line.split_whitespace()
            .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
    }

    /// A numeric `key=value` from the `done` line.
    pub(crate) fn done_number(&self, key: &str) -> Option<u64> {
        self.field("done ", key)?.parse().ok()
    }

    /// The run id a worker announced in its `start` line.
    pub(crate) fn run_id(&self) -> Option<&str> {
        self.field("start ", "run_id")
    }

    pub(crate) fn pid(&self) -> Option<&str> {
        self.field("start ", "pid")
    }

    pub(crate) fn stderr_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect()
    }
}

/// Every strategy's name, from the binary's own table (`Strategy::all()`), so a new strategy is
/// in every test that loops over them.
pub(crate) fn strategies() -> Vec<&'static str> {
    strategies_that(|_| true)
}

/// The names of the strategies with a capability, such as `Strategy::batches`.
pub(crate) fn strategies_that(has: fn(reclaim::worker::Strategy) -> bool) -> Vec<&'static str> {
    reclaim::worker::Strategy::all()
        .iter()
        .copied()
        .filter(|&s| has(s))
        .map(reclaim::worker::Strategy::name)
        .collect()
}

/// reclaim, to be started with its TMPDIR in the suite's own scratch folder under `target/`
/// (cargo's `CARGO_TARGET_TMPDIR`): the nights it keeps by its policy land there, never in
/// the machine's shared temporary folder, where they would count against a person's bound.
/// PATH has the server programs' folder first where it holds psql (`pg::jobs_path`).
pub(crate) fn reclaim_command() -> Command {
    let mut command = Command::new(BIN);
    command.env("TMPDIR", env!("CARGO_TARGET_TMPDIR"));
    if let Some(path) = jobs_path() {
        command.env("PATH", path);
    }
    command
}

pub(crate) fn reclaim(args: &[&str]) -> Run {
    let output = reclaim_command()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {BIN} {args:?}: {e}"));
    Run::from_output(&format!("reclaim {args:?}"), &output)
}

pub(crate) fn path_arg(path: &Path) -> &str {
    path.to_str()
        .unwrap_or_else(|| panic!("temporary path {} is not UTF-8", path.display()))
}

/// reclaim's own refusal: exit 2 and exactly one line on stderr naming `needle`.
pub(crate) fn assert_one_line_error(run: &Run, needle: &str) {
    assert_eq!(
        run.code,
        Some(2),
        "expected exit 2:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    let lines = run.stderr_lines();
    assert_eq!(
        lines.len(),
        1,
        "expected one line on stderr:\n{}",
        run.stderr
    );
    assert!(
        lines[0].contains(needle),
        "stderr does not mention {needle:?}: {}",
        lines[0]
    );
}

/// clap's usage error: exit 2, and its first line names the offending flag.
pub(crate) fn assert_usage_error(run: &Run, flag: &str) {
    assert_eq!(run.code, Some(2), "expected exit 2:\n{}", run.stderr);
    assert_eq!(
        run.stderr_lines().len(),
        1,
        "one line on stderr:\n{}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let first = run.stderr_lines().first().copied().unwrap_or_default();
    assert!(
        first.contains(flag),
        "first stderr line does not name {flag}: {}",
        run.stderr
    );
}

/// Every file directly inside `dir` with its bytes, so a test can tell that nothing changed.
pub(crate) fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let entries =
        fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    entries
        .map(|entry| {
            let path = entry
                .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
                .path();
            let bytes = fs::read(&path).unwrap_or_default();
            (path, bytes)
        })
        .collect()
}

pub(crate) fn read_bytes(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// A read-only connection of our own, independent of anything reclaim reports.
pub(crate) fn open_ro(db: &Path) -> Connection {
    Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap_or_else(|e| panic!("cannot open {} read-only: {e}", db.display()))
}

pub(crate) fn count(conn: &Connection, sql: &str) -> u64 {
    conn.query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

pub(crate) fn rows(conn: &Connection) -> u64 {
    count(conn, "SELECT count(*) FROM records")
}

pub(crate) fn distinct(conn: &Connection) -> u64 {
    count(conn, "SELECT count(DISTINCT task_id) FROM records")
}

/// The task ids with more than one row, in order.
pub(crate) fn duplicated_ids(conn: &Connection) -> Vec<String> {
    let sql = "SELECT task_id FROM records GROUP BY task_id HAVING count(*) > 1 ORDER BY task_id";
    let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    stmt.query_map([], |r| r.get(0))
        .and_then(Iterator::collect)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// `(rows, distinct)` of `table`'s `key` as the `sqlite3` shell reads them, opened read-only, as
/// a user would check a night; `None` when the shell is not installed.
pub(crate) fn rows_by_sqlite3(db: &Path, table: &str, key: &str) -> Option<(u64, u64)> {
    let sql = format!("SELECT count(*), count(DISTINCT {key}) FROM {table}");
    let numbers = numbers_by_sqlite3(db, &sql, 2)?;
    Some((numbers[0], numbers[1]))
}

/// The `width` numbers of `sql`'s one row as the `sqlite3` shell prints them, the database
/// opened read-only; `None` when the shell is not installed.
pub(crate) fn numbers_by_sqlite3(db: &Path, sql: &str, width: usize) -> Option<Vec<u64>> {
    let output = Command::new("sqlite3")
        .arg("-readonly")
        .arg(db)
        .arg(sql)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let numbers: Vec<u64> = text
        .trim()
        .split('|')
        .filter_map(|n| n.parse().ok())
        .collect();
    assert_eq!(numbers.len(), width, "sqlite3 printed {text:?} for {sql}");
    Some(numbers)
}

/// A shipped example's path (`examples/NAME`), checked to be there.
pub(crate) fn example(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    assert!(path.is_file(), "{} is shipped", path.display());
    path.display().to_string()
}

/// Where the tests make their folders. A TMPDIR of your own is kept; without one, RAM
/// (`/dev/shm`) when it is a folder the tests can write with 2 GiB free, else the system's
/// temporary folder. The suite creates and removes tens of thousands of files (each night's
/// databases and heartbeats, each private cluster's initdb), and on a disk's file system that
/// churn cost about a tenth of the suite's CPU (ext4 searches its recently deleted inodes for
/// each new one; BENCHMARKS.md, "The test suite's time"). The reclaim a test starts in its
/// folder (`reclaim_in_dir`, the dashboard) gets that folder as its TMPDIR, so what it makes
/// lands there too; `reclaim()` gets cargo's `CARGO_TARGET_TMPDIR`, where kept nights collect.
pub(crate) fn scratch() -> &'static Path {
    static BASE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BASE.get_or_init(|| {
        const ROOM: u64 = 2 << 30;
        let shm = Path::new("/dev/shm");
        let roomy = || {
            nix::sys::statvfs::statvfs(shm)
                .is_ok_and(|s| s.blocks_available().saturating_mul(s.fragment_size()) >= ROOM)
        };
        let writable = || nix::unistd::access(shm, nix::unistd::AccessFlags::W_OK).is_ok();
        if std::env::var_os("TMPDIR").is_none() && shm.is_dir() && writable() && roomy() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        }
    })
}

/// A temporary folder of the test's own under `scratch()`, removed when dropped.
pub(crate) fn try_tempdir() -> std::io::Result<tempfile::TempDir> {
    tempfile::tempdir_in(scratch())
}

/// `try_tempdir`, failing the test if the folder cannot be made.
pub(crate) fn tempdir() -> tempfile::TempDir {
    try_tempdir().unwrap_or_else(|e| panic!("cannot make a temporary folder: {e}"))
}

/// `reclaim run --exec CMD` on a new database `dir/night/warehouse.db`, with `extra` flags,
/// against `limit`; the run and the database's path.
pub(crate) fn run_exec_within(
    dir: &Path,
    command: &str,
    extra: &[&str],
    limit: Duration,
) -> (Run, PathBuf) {
    let db = dir.join("night").join("warehouse.db");
    fs::create_dir_all(db.parent().unwrap_or(dir)).unwrap_or_else(|e| panic!("{e}"));
    let mut args = vec!["run", "--exec", command, "--db", path_arg(&db)];
    args.extend_from_slice(extra);
    (reclaim_in_dir(dir, &args, limit), db)
}

/// Whether the `sqlite3` shell is installed (some tests' jobs are written with it).
pub(crate) fn has_sqlite3() -> bool {
    Command::new("sqlite3")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `reclaim ARGS...` with `envs` set, its output collected, as `reclaim` does; but a run still
/// going after `limit` is SIGKILLed (its workers die with it) and the test fails, so a hang is a
/// failure with a message rather than a test that never ends.
pub(crate) fn reclaim_within(args: &[&str], envs: &[(&str, &Path)], limit: Duration) -> Run {
    let mut command = reclaim_command();
    command.args(args);
    for (key, value) in envs {
        command.env(key, value);
    }
    run_within(command, &format!("reclaim {args:?}"), limit)
}

/// `reclaim ARGS...` as `reclaim_within` runs it, with `dir` as its working directory and its
/// TMPDIR, so whatever it creates lands there.
pub(crate) fn reclaim_in_dir(dir: &Path, args: &[&str], limit: Duration) -> Run {
    let mut command = reclaim_command();
    command.args(args).env("TMPDIR", dir).current_dir(dir);
    run_within(command, &format!("reclaim {args:?}"), limit)
}

/// How many times its bound a process may take before a test calls it hung. Every bound a
/// test gives is for a hang, never a speed: a loaded machine stretches a night several times
/// (at a load of 40 beside a CI run, a worker's 2,500 rows took over 20 s and a private
/// cluster's first night over 180 s), and a test must not fail on that.
pub(crate) const SLACK: u32 = 3;

/// Runs `command` to its end, output collected; SIGKILLed, and the test failed, after `limit`
/// times `SLACK`.
pub(crate) fn run_within(mut command: Command, what: &str, limit: Duration) -> Run {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    finish_within(child, what, limit)
}

/// Waits for a started `child` to end, its piped output collected; SIGKILLed, and the test
/// failed, after `limit` times `SLACK`.
pub(crate) fn finish_within(child: std::process::Child, what: &str, limit: Duration) -> Run {
    let limit = limit.saturating_mul(SLACK);
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(output) = rx.recv_timeout(limit) else {
        // The waiting thread has not reaped it, so the pid still names our child.
        let _ = kill(pid, Signal::SIGKILL);
        panic!("{what} was still running after {limit:?}; killed it");
    };
    let output = output.unwrap_or_else(|e| panic!("waiting for {what}: {e}"));
    Run::from_output(what, &output)
}

/// `run_within`, and the bytes the process read (`rchar` of `/proc/PID/io`, read once it has
/// exited and before it is reaped): a bound on work measured by the work, not by the time taken.
pub(crate) fn run_counting_reads(mut command: Command, what: &str, limit: Duration) -> (Run, u64) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let pid = child.id();
    let state = || fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let exited = poll_until(limit, || {
        (state().rsplit_once(')')).is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    });
    if !exited {
        let _ = child.kill();
        panic!("{what} was still running after {limit:?}; killed it");
    }
    let io = fs::read_to_string(format!("/proc/{pid}/io"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/io: {e}"));
    let read = (io.lines())
        .find_map(|l| l.strip_prefix("rchar: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no rchar in /proc/{pid}/io: {io}"));
    let status = child
        .wait()
        .unwrap_or_else(|e| panic!("waiting for {what}: {e}"));
    let output = Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    };
    (Run::from_output(what, &output), read)
}

// -------------------------------------------------------------------------------------------
// Processes, as /proc shows them.

/// The arguments a process was started with (empty once it is gone).
pub(crate) fn cmdline(pid: impl std::fmt::Display) -> Vec<String> {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| {
            bytes
                .split(|&b| b == 0)
                .map(|arg| String::from_utf8_lossy(arg).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// No such process any more, a zombie (dead, only waiting for whoever reaps it), or killed: a
/// SIGKILL pending, so it runs none of its own code again, however long a loaded machine takes
/// to let it finish dying. A test that a process did not outlive reclaim asks this, so that
/// the machine's load does not decide it.
pub(crate) fn process_gone(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            state == Some("Z") || sigkill_pending(pid)
        }
    }
}

/// Whether a SIGKILL waits to be taken by `pid` (the kernel marks each of its threads with it
/// as it is sent: `SigPnd`, or `ShdPnd` for the whole process, in `/proc/PID/status`).
fn sigkill_pending(pid: i32) -> bool {
    const SIGKILL_BIT: u64 = 1 << (9 - 1);
    let Ok(status) = fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status.lines().any(|line| {
        line.split_once(':')
            .filter(|(key, _)| matches!(*key, "SigPnd" | "ShdPnd"))
            .and_then(|(_, mask)| u64::from_str_radix(mask.trim(), 16).ok())
            .is_some_and(|mask| mask & SIGKILL_BIT != 0)
    })
}

/// Polls for up to `limit` until `pid` is gone.
pub(crate) fn gone_within(pid: i32, limit: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while !process_gone(pid) {
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    true
}

/// Pids of the live `reclaim worker` processes whose command line names a path under `dir`
/// (a test's own temporary folder, so no other test's workers are counted).
pub(crate) fn workers_under(dir: &Path) -> Vec<i32> {
    let needle = dir.display().to_string();
    fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .filter(|&pid| {
                    let args = cmdline(pid);
                    !process_gone(pid)
                        && args.iter().any(|a| a == "worker")
                        && args.iter().any(|a| a.contains(&needle))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The single JSON object a `--json` command printed (one line, nothing else on stdout).
pub(crate) fn json_of(run: &Run) -> serde_json::Value {
    assert_eq!(
        run.stdout.lines().count(),
        1,
        "--json prints one line:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}):\n{}\n{}", run.stdout, run.stderr))
}

/// `json[key]` as a count.
pub(crate) fn number(json: &serde_json::Value, key: &str) -> u64 {
    json[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not a number in {json}"))
}

/// The recording of a short guarded night (20 items, full speed) made in `dir`, as bytes: a real
/// recording for the tests that spoil or fuzz one.
pub(crate) fn record_short_night(dir: &Path) -> Vec<u8> {
    let record = dir.join("night.jsonl");
    let db = dir.join("night.db");
    let args = [
        "run",
        "--strategy",
        "guarded",
        "--items",
        "20",
        "--delay-ms",
        "0",
        "--db",
        path_arg(&db),
        "--record",
        path_arg(&record),
    ];
    let run = reclaim_in_dir(dir, &args, Duration::from_secs(60));
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    read_bytes(&record)
}

/// Polls until `done` holds or `limit` times `SLACK` passes; returns whether it held. Every
/// caller waits for something that should come: the bound is for a hang, as in `run_within`.
pub(crate) fn poll_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit.saturating_mul(SLACK);
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Whether a shipped scenario can run where the tests were built: one on PostgreSQL needs it
/// installed (its tests are said skipped elsewhere, as every PostgreSQL test is).
pub(crate) fn runs_here(name: &str) -> bool {
    let scenario =
        reclaim::scenario::Scenario::load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    let runs = cfg!(not(reclaim_no_pg)) || !scenario.warehouse.is_postgres();
    if !runs {
        eprintln!(
            "skipped: the scenario {name} needs PostgreSQL, not found when the tests were built"
        );
    }
    runs
}
