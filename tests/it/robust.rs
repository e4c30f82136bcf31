//! reclaim's own robustness: no worker outlives reclaim however it ends (a key, a signal, SIGKILL,
//! a panic), and bad input (broken databases, a read-only or full disk, broken scenarios and
//! recordings, flags out of range) gets one line on stderr and exit 2, touching nothing reclaim
//! did not create.

use std::collections::BTreeSet;
use std::fs;
use std::io::Read as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::support::Dashboard;
use crate::support::{Run, assert_one_line_error, cmdline, count, open_ro, path_arg, read_bytes};
use crate::support::{
    assert_scenario_refused, mounted, reclaim_in, snapshot_tree, tempdir, warehouse,
};

/// How long after reclaim's exit a worker may still be alive (the "within one second").
const ORPHAN_GRACE: Duration = Duration::from_secs(1);
/// How long a night may take to show its first worker (a debug build, two cores shared).
const STARTUP: Duration = Duration::from_secs(15);
/// From a signal or a panic to reclaim gone; cleanup is a few SIGKILLs and waits.
const PROMPTLY: Duration = Duration::from_secs(5);
/// A hang guard for the short commands here, not a timing assertion.
const POLL: Duration = Duration::from_millis(10);

// ---------------------------------------------------------------------------------------------
// Processes, read from /proc.

/// The state letter and the parent of `pid`, from /proc/PID/stat.
fn stat(pid: i32) -> Option<(char, i32)> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((state, parent))
}

/// A live (not zombie) `reclaim worker --supervised` whose command line names a path under
/// `marker`: a test's own temporary folder, so neither another test's workers nor a reused pid
/// is ever taken for one of ours.
fn is_worker(pid: i32, marker: &str) -> bool {
    let args = cmdline(pid);
    !crate::support::process_gone(pid)
        && args.get(1).is_some_and(|a| a == "worker")
        && args.iter().any(|a| a == "--supervised")
        && args.iter().any(|a| a.contains(marker))
}

/// Every live worker under `marker`, whoever its parent now is (an orphan's is init).
fn workers_under(marker: &str) -> BTreeSet<i32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return BTreeSet::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| is_worker(pid, marker))
        .collect()
}

/// The live workers under `marker` whose parent is `parent`.
fn children_of(parent: i32, marker: &str) -> BTreeSet<i32> {
    workers_under(marker)
        .into_iter()
        .filter(|&pid| stat(pid).is_some_and(|(_, p)| p == parent))
        .collect()
}

/// Collects `parent`'s workers until at least `want` are alive at once, up to `STARTUP`.
fn collect_workers(parent: i32, marker: &str, want: usize) -> BTreeSet<i32> {
    let deadline = Instant::now() + STARTUP;
    let mut seen = BTreeSet::new();
    loop {
        let now = children_of(parent, marker);
        seen.extend(now.iter().copied());
        if now.len() >= want {
            return seen;
        }
        assert!(
            Instant::now() < deadline,
            "reclaim (pid {parent}) never had {want} workers running at once; saw {seen:?}"
        );
        thread::sleep(POLL);
    }
}

/// Fails when a worker seen in `seen`, or any worker under `marker`, is still alive
/// `ORPHAN_GRACE` after `exited` (when reclaim's exit was observed).
fn assert_no_worker_left(seen: &BTreeSet<i32>, marker: &str, exited: Instant, what: &str) {
    let deadline = exited + ORPHAN_GRACE;
    loop {
        let mut left: BTreeSet<i32> = seen
            .iter()
            .copied()
            .filter(|&p| is_worker(p, marker))
            .collect();
        left.extend(workers_under(marker));
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: workers {left:?} outlived reclaim by {ORPHAN_GRACE:?} (seen: {seen:?})"
        );
        thread::sleep(POLL);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `reclaim ARGS...` running with its output drained on threads (a full pipe would stall it);
/// SIGKILLed if dropped while still running, so a failed assertion never leaves it behind.
struct Live {
    child: Child,
    what: String,
    stderr: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
    exited: Option<(ExitStatus, Instant)>,
}

impl Live {
    fn start(args: &[&str], tmp: &Path, envs: &[(&str, &str)]) -> Self {
        let what = format!("reclaim {args:?}");
        let mut command = crate::support::reclaim_command();
        command
            .args(args)
            .env("TMPDIR", tmp)
            .current_dir(tmp)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in envs {
            command.env(key, value);
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut readers = Vec::new();
        if let Some(mut out) = child.stdout.take() {
            readers.push(thread::spawn(move || {
                let mut sink = Vec::new();
                let _ = out.read_to_end(&mut sink);
            }));
        }
        if let Some(mut err) = child.stderr.take() {
            let shared = Arc::clone(&stderr);
            readers.push(thread::spawn(move || {
                let mut buf = [0_u8; 4096];
                while let Ok(n) = err.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    lock(&shared).extend_from_slice(&buf[..n]);
                }
            }));
        }
        Self {
            child,
            what,
            stderr,
            readers,
            exited: None,
        }
    }

    fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap_or(i32::MAX)
    }

    fn signal(&self, signal: Signal) {
        assert!(
            self.exited.is_none(),
            "{} exited before it could be sent {signal}",
            self.what
        );
        // Not reaped yet, so the pid still names our child.
        kill(Pid::from_raw(self.pid()), signal)
            .unwrap_or_else(|e| panic!("cannot send {signal} to {}: {e}", self.what));
    }

    /// Waits up to `limit` for reclaim to exit; returns its status and when the exit was seen.
    fn exit_within(&mut self, limit: Duration) -> (ExitStatus, Instant) {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(exited) = self.exited {
                return exited;
            }
            match self.child.try_wait() {
                Ok(Some(status)) => self.exited = Some((status, Instant::now())),
                Ok(None) if Instant::now() < deadline => thread::sleep(POLL),
                Ok(None) => panic!("{} was still running after {limit:?}", self.what),
                Err(e) => panic!("cannot wait for {}: {e}", self.what),
            }
        }
    }

    /// Everything reclaim wrote on stderr (call after its exit: waits for the pipe to close).
    fn stderr(&mut self) -> String {
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        String::from_utf8_lossy(&lock(&self.stderr)).into_owned()
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn stderr_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.trim().is_empty()).collect()
}

/// The dashboard's terminal here.
const COLS: u16 = 100;
const ROWS: u16 = 30;

/// Waits up to `limit` for the dashboard to exit; returns its exit code and when it was seen.
fn exit_within(dashboard: &mut Dashboard, limit: Duration) -> (u32, Instant) {
    let status = dashboard.wait_exit(limit).unwrap_or_else(|e| panic!("{e}"));
    let at = dashboard
        .exited_at()
        .unwrap_or_else(|| panic!("the dashboard's exit was not seen"));
    (status.exit_code(), at)
}

// ---------------------------------------------------------------------------------------------
// No orphans.

#[test]
fn sigkill_of_the_dashboard_leaves_no_worker_within_a_second() {
    let tmp = tempdir();
    let marker = path_arg(tmp.path()).to_string();
    let mut dashboard = Dashboard::start(&[], tmp.path(), COLS, ROWS).unwrap();
    // The incident's two lanes, one worker each.
    let seen = collect_workers(dashboard.pid().as_raw(), &marker, 2);
    dashboard.signal(Signal::SIGKILL).unwrap();
    let (_, exited) = exit_within(&mut dashboard, PROMPTLY);
    // PR_SET_PDEATHSIG is the only layer left: no code of reclaim's ran after the SIGKILL.
    assert_no_worker_left(&seen, &marker, exited, "SIGKILL of the dashboard");
}

#[test]
fn sigkill_of_a_paused_dashboard_leaves_no_stopped_worker() {
    let tmp = tempdir();
    let marker = path_arg(tmp.path()).to_string();
    let mut dashboard = Dashboard::start(&[], tmp.path(), COLS, ROWS).unwrap();
    let seen = collect_workers(dashboard.pid().as_raw(), &marker, 2);
    // Pausing stops every worker (SIGSTOP); a stopped process must still die with reclaim.
    dashboard.send(b" ").unwrap();
    let deadline = Instant::now() + PROMPTLY;
    while !seen
        .iter()
        .filter(|&&p| is_worker(p, &marker))
        .all(|&p| stat(p).is_some_and(|(state, _)| state == 'T'))
    {
        assert!(
            Instant::now() < deadline,
            "space did not stop the workers {seen:?}:\n{}",
            dashboard.text()
        );
        thread::sleep(POLL);
    }
    assert!(
        seen.iter().any(|&p| is_worker(p, &marker)),
        "no worker is left to stop: {seen:?}"
    );
    dashboard.signal(Signal::SIGKILL).unwrap();
    let (_, exited) = exit_within(&mut dashboard, PROMPTLY);
    assert_no_worker_left(&seen, &marker, exited, "SIGKILL of a paused dashboard");
}

/// `args` with each `TMP/NAME` replaced by the absolute path of NAME in `tmp` (worker command
/// lines must name the test's folder for `is_worker` to know them).
fn in_folder(args: &[&str], tmp: &Path) -> Vec<String> {
    args.iter()
        .map(|a| {
            a.strip_prefix("TMP/").map_or_else(
                || (*a).to_string(),
                |name| path_arg(&tmp.join(name)).to_string(),
            )
        })
        .collect()
}

/// Starts `reclaim ARGS` (TMPDIR and the working directory a fresh folder), waits until `want`
/// of its workers run at once, sends `signal`, and returns how it ended and its stderr, after
/// checking that no worker outlived it by more than a second.
fn signal_a_night(args: &[&str], want: usize, signal: Signal) -> (ExitStatus, String) {
    let tmp = tempdir();
    let marker = path_arg(tmp.path()).to_string();
    let args = in_folder(args, tmp.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut live = Live::start(&args, tmp.path(), &[]);
    let seen = collect_workers(live.pid(), &marker, want);
    live.signal(signal);
    let (status, exited) = live.exit_within(PROMPTLY);
    let what = format!("{signal} of reclaim {args:?}");
    assert_no_worker_left(&seen, &marker, exited, &what);
    let stderr = live.stderr();
    assert!(!stderr.contains("panicked"), "{what}:\n{stderr}");
    (status, stderr)
}

/// A caught signal: exit 2 and one line naming it.
fn assert_stopped_by(status: ExitStatus, stderr: &str, signal: Signal) {
    assert_eq!(status.code(), Some(2), "{status}: {stderr}");
    let lines = stderr_lines(stderr);
    assert_eq!(lines.len(), 1, "one line on stderr:\n{stderr}");
    assert!(
        lines[0].contains(&format!("stopped by {signal}")),
        "{stderr}"
    );
}

/// A guarded night of three workers on one queue, slow enough (50 ms an item) to interrupt.
const SLOW_RUN: [&str; 9] = [
    "run",
    "--strategy",
    "guarded",
    "--delay-ms",
    "50",
    "--workers",
    "3",
    "--db",
    "TMP/x.db",
];

#[test]
fn sigquit_sigusr1_and_sigalrm_of_reclaim_run_stop_it_cleanly_too() {
    for signal in [Signal::SIGQUIT, Signal::SIGUSR1, Signal::SIGALRM] {
        let (status, stderr) = signal_a_night(&SLOW_RUN, 3, signal);
        assert_stopped_by(status, &stderr, signal);
    }
}

#[test]
fn sighup_of_reclaim_run_stops_it_and_all_its_workers() {
    let (status, stderr) = signal_a_night(&SLOW_RUN, 3, Signal::SIGHUP);
    assert_stopped_by(status, &stderr, Signal::SIGHUP);
}

/// `reclaim prove` at 20 ms an item: its first test (random kills, restarts) runs for seconds.
const SLOW_PROVE: [&str; 5] = ["prove", "--delay-ms", "20", "--seed", "5"];

#[test]
fn sigkill_of_reclaim_prove_leaves_no_worker_within_a_second() {
    let (status, stderr) = signal_a_night(&SLOW_PROVE, 1, Signal::SIGKILL);
    assert_eq!(
        status.signal(),
        Some(Signal::SIGKILL as i32),
        "{status}: {stderr}"
    );
}

#[test]
fn sigterm_of_reclaim_prove_stops_it_and_its_workers() {
    let (status, stderr) = signal_a_night(&SLOW_PROVE, 1, Signal::SIGTERM);
    assert_stopped_by(status, &stderr, Signal::SIGTERM);
}

#[test]
fn sighup_of_reclaim_prove_stops_it_and_its_workers() {
    let (status, stderr) = signal_a_night(&SLOW_PROVE, 1, Signal::SIGHUP);
    assert_stopped_by(status, &stderr, Signal::SIGHUP);
}

/// `reclaim ARGS` with `RECLAIM_TEST_PANIC=place` (the hook in src/app.rs: `loop` panics in the
/// driving loop once a worker runs, `thread` in a thread of its own): reclaim must end promptly,
/// report the panic, and leave no worker. (`run` and the dashboard are covered in run.rs and
/// tui.rs.)
fn assert_a_panic_leaves_no_worker(args: &[&str], place: &str) {
    let tmp = tempdir();
    let marker = path_arg(tmp.path()).to_string();
    let args = in_folder(args, tmp.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut live = Live::start(&args, tmp.path(), &[("RECLAIM_TEST_PANIC", place)]);
    let deadline = Instant::now() + STARTUP;
    let mut seen = BTreeSet::new();
    // The panic comes as soon as a worker has written a row: collect what can be seen until then.
    while live.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
        seen.extend(children_of(live.pid(), &marker));
        thread::sleep(Duration::from_millis(2));
    }
    let (status, exited) = live.exit_within(PROMPTLY);
    let what = format!("RECLAIM_TEST_PANIC={place} reclaim {args:?}");
    assert_no_worker_left(&seen, &marker, exited, &what);
    let stderr = live.stderr();
    assert!(
        stderr.contains(&format!("RECLAIM_TEST_PANIC={place}")),
        "{what}: the panic was not reported ({status}):\n{stderr}"
    );
    assert_eq!(status.code(), Some(101), "{what}: {status}\n{stderr}");
    // A night had started: prove's databases were made under TMPDIR.
    assert!(
        fs::read_dir(tmp.path()).is_ok_and(|mut d| d.next().is_some()),
        "{what}: no night was started"
    );
}

#[test]
fn a_panic_in_the_loop_of_reclaim_prove_leaves_no_worker() {
    assert_a_panic_leaves_no_worker(&SLOW_PROVE, "loop");
}

#[test]
fn a_panic_in_another_thread_of_reclaim_prove_leaves_no_worker() {
    assert_a_panic_leaves_no_worker(&SLOW_PROVE, "thread");
}

// ---------------------------------------------------------------------------------------------
// Bad input: one line on stderr, exit 2, and nothing changed that reclaim did not create.

/// `inspect` and a worker of every strategy refuse `db` in one line naming `needle` (and the
/// file), and nothing in its folder changes.
pub(crate) fn assert_refused_by_inspect_and_workers(db: &Path, needle: &str) {
    let dir = db.parent().unwrap_or(Path::new("."));
    let name = db
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let before = snapshot_tree(dir);
    let run = reclaim_in(dir, &["inspect", "--db", path_arg(db)]);
    assert_one_line_error(&run, needle);
    assert!(run.stderr.contains(&name), "inspect: {}", run.stderr);
    // Nothing may appear beside it, not even SQLite's -wal and -shm.
    assert!(
        snapshot_tree(dir) == before,
        "inspect changed {}",
        dir.display()
    );
    for strategy in crate::support::strategies() {
        let args = ["worker", "--strategy", strategy, "--items", "10"];
        let run = reclaim_in(dir, &[&args[..], &["--db", path_arg(db)]].concat());
        assert_eq!(
            run.code,
            Some(2),
            "{strategy}: {}\n{}",
            run.stdout,
            run.stderr
        );
        assert_eq!(run.stderr_lines().len(), 1, "{strategy}: {}", run.stderr);
        assert!(run.stderr.contains(&name), "{strategy}: {}", run.stderr);
        assert!(run.done_line().is_none(), "{strategy}: {}", run.stdout);
        assert!(
            snapshot_tree(dir) == before,
            "worker --strategy {strategy} changed {} ({})",
            dir.display(),
            run.stderr.trim()
        );
    }
}

#[test]
fn a_warehouse_cut_short_is_corrupt_to_inspect_and_every_worker() {
    let tmp = tempdir();
    let db = tmp.path().join("warehouse.db");
    warehouse(&db, "3000");
    let bytes = read_bytes(&db);
    assert!(bytes.len() > 40_000, "the warehouse is too small to cut");
    // A copy cut off at 20 000 bytes, as a full disk or an interrupted copy leaves one.
    fs::write(&db, &bytes[..20_000]).unwrap();
    fs::remove_file(tmp.path().join("warehouse.db.heartbeat")).unwrap();
    assert_refused_by_inspect_and_workers(&db, "corrupt");
}

#[test]
fn a_folder_given_as_the_database_is_refused() {
    let tmp = tempdir();
    let db = tmp.path().join("warehouse.db");
    fs::create_dir(&db).unwrap();
    fs::write(db.join("inside.txt"), "kept").unwrap();
    assert_refused_by_inspect_and_workers(&db, "is a folder");
}

#[test]
fn a_records_table_of_another_shape_is_refused() {
    let tmp = tempdir();
    let db = tmp.path().join("warehouse.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE records(id INTEGER PRIMARY KEY, body TEXT);
         INSERT INTO records(body) VALUES ('someone else''s row');",
    )
    .unwrap();
    drop(conn);
    // Each refusal names what is missing: the column (or, for a strategy relying on the
    // unique key, that key).
    assert_refused_by_inspect_and_workers(&db, "task_id");
    assert_eq!(count(&open_ro(&db), "SELECT count(*) FROM records"), 1);
}

#[test]
fn inspect_leaves_nothing_beside_a_database_it_refuses() {
    let tmp = tempdir();
    // Someone else's database, in WAL mode as many applications keep theirs.
    let app = tmp.path().join("app.db");
    let conn = rusqlite::Connection::open(&app).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (42);")
        .unwrap();
    drop(conn);
    // And a reclaim warehouse (WAL, as every one is) cut short.
    let cut = tmp.path().join("cut.db");
    warehouse(&cut, "3000");
    let bytes = read_bytes(&cut);
    fs::write(&cut, &bytes[..20_000]).unwrap();
    let before = snapshot_tree(tmp.path());
    for (db, needle) in [(&app, "no records table"), (&cut, "corrupt")] {
        let run = reclaim_in(tmp.path(), &["inspect", "--db", path_arg(db)]);
        assert_one_line_error(&run, needle);
        let added: Vec<PathBuf> = snapshot_tree(tmp.path())
            .into_keys()
            .filter(|p| !before.contains_key(p))
            .collect();
        assert!(
            added.is_empty(),
            "inspect of {} added {added:?}",
            db.display()
        );
    }
}

/// `run` stopped because its worker failed: exit 2 and one line, which names `reason` (the
/// worker's own error line).
fn assert_worker_failed(run: &Run, reason: &str) {
    assert_one_line_error(run, reason);
}

#[test]
fn run_names_why_its_worker_failed_every_time() {
    let tmp = tempdir();
    let mut lost = 0;
    let tries = 30;
    for i in 0..tries {
        let db = tmp.path().join(format!("n{i}.db"));
        let args = [
            "run",
            "--strategy",
            "naive",
            "--batch",
            "5",
            "--db",
            path_arg(&db),
        ];
        let run = reclaim_in(tmp.path(), &args);
        assert_eq!(run.code, Some(2), "{}", run.stderr);
        if !run
            .stderr
            .contains("applies to keyed, guarded and outbox only")
        {
            lost += 1;
        }
    }
    assert_eq!(lost, 0, "{lost} of {tries} failures did not say why");
}

#[test]
fn a_read_only_folder_is_refused_in_one_line_by_every_command_that_writes() {
    let Some((tmp, ro, mount)) = mounted("size=1m") else {
        return;
    };
    warehouse(&ro.join("w.db"), "50");
    mount.remount("ro");
    let before = snapshot_tree(&ro);
    // Elsewhere, so what reclaim may create for itself does not land in the read-only folder.
    let work = tmp.path().join("work");
    fs::create_dir(&work).unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &["worker", "--strategy", "guarded", "--db", "TMP/w.db"],
            "not writable",
        ),
        (
            &["worker", "--strategy", "naive", "--db", "TMP/new.db"],
            "not writable",
        ),
        (
            &[
                "run",
                "--strategy",
                "guarded",
                "--items",
                "5",
                "--delay-ms",
                "0",
                "--record",
                "TMP/r.jsonl",
            ],
            "is not writable; choose another path",
        ),
    ];
    for (args, needle) in cases {
        let args = in_folder(args, &ro);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = reclaim_in(&work, &args);
        assert_one_line_error(&run, needle);
        assert!(
            snapshot_tree(&ro) == before,
            "reclaim {args:?} changed the read-only folder"
        );
    }
    let args = in_folder(&["run", "--strategy", "guarded", "--db", "TMP/r.db"], &ro);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = reclaim_in(&work, &args);
    // Refused up front now, before any worker starts.
    assert_one_line_error(&run, "not writable");
    assert!(
        snapshot_tree(&ro) == before,
        "run changed the read-only folder"
    );
    // prove makes its databases under TMPDIR: a read-only one is refused at once.
    let run = reclaim_in(&ro, &["prove", "--delay-ms", "0"]);
    assert_one_line_error(&run, "Read-only file system");
    assert!(
        snapshot_tree(&ro) == before,
        "prove changed the read-only folder"
    );
}

#[test]
fn inspect_reads_a_warehouse_in_a_read_only_folder() {
    let Some((_tmp, ro, mount)) = mounted("size=1m") else {
        return;
    };
    let db = ro.join("w.db");
    warehouse(&db, "50");
    mount.remount("ro");
    let before = snapshot_tree(&ro);
    let run = reclaim_in(&ro, &["inspect", "--db", path_arg(&db), "--items", "50"]);
    // Reading needs no write: the report, as from any other folder (or at the very least one
    // line saying the folder is read-only, rather than "unable to open database file").
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout.lines().last(),
        Some("rows=50 duplicated_task_ids=0"),
        "{}",
        run.stdout
    );
    assert!(snapshot_tree(&ro) == before);
}

/// Facts about a warehouse, read with a connection of our own: integrity, rows, distinct task
/// ids, checkpoints, and rows without a checkpoint or checkpoints without a row.
fn consistency(db: &Path) -> (String, u64, u64, u64, u64) {
    let conn = open_ro(db);
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("integrity_check of {}: {e}", db.display()));
    let rows = count(&conn, "SELECT count(*) FROM records");
    let distinct = count(&conn, "SELECT count(DISTINCT task_id) FROM records");
    let checkpoints = count(&conn, "SELECT count(*) FROM checkpoints");
    let unmatched = count(
        &conn,
        "SELECT (SELECT count(*) FROM records WHERE task_id NOT IN (SELECT task_id FROM checkpoints))
              + (SELECT count(*) FROM checkpoints WHERE task_id NOT IN (SELECT task_id FROM records))",
    );
    (integrity, rows, distinct, checkpoints, unmatched)
}

#[test]
fn a_full_disk_stops_the_worker_in_one_line_and_the_warehouse_stays_consistent() {
    let Some((_tmp, dir, mount)) = mounted("size=256k") else {
        return;
    };
    let db = dir.join("w.db");
    let guarded = [
        "worker",
        "--strategy",
        "guarded",
        "--items",
        "100000",
        "--delay-ms",
        "0",
        "--db",
        path_arg(&db),
    ];
    let run = reclaim_in(&dir, &guarded);
    // The heartbeat (a file beside the database, written at most every so often) may meet the
    // full disk first: it says so once, that the rows are unaffected, and the worker goes on
    // until its next commit cannot be written. That stops it, in one line.
    let beat = |l: &&str| {
        l.starts_with("heartbeat: cannot write")
            && l.ends_with("No space left on device (os error 28) (rows are unaffected)")
    };
    assert!(
        run.stderr.lines().filter(beat).count() <= 1,
        "{}",
        run.stderr
    );
    let others: Vec<&str> = run.stderr.lines().filter(|l| !beat(l)).collect();
    let stopped = Run {
        stderr: others.join("\n"),
        ..run
    };
    assert_one_line_error(&stopped, "database or disk is full");
    assert!(stopped.done_line().is_none(), "{}", stopped.stdout);

    // What was committed before the disk filled is whole: each row with its checkpoint, once.
    let (integrity, rows, distinct, checkpoints, unmatched) = consistency(&db);
    assert_eq!(integrity, "ok");
    assert!(rows > 0, "nothing was written before the disk filled");
    assert!(rows < 100_000, "the disk never filled");
    assert_eq!((distinct, checkpoints, unmatched), (rows, rows, 0));

    // Room again: the same warehouse resumes after its last checkpoint and finishes exactly once.
    mount.remount("size=16m");
    let finish = rows + 500;
    let items = finish.to_string();
    let resumed = [&guarded[..3], &["--items", &items], &guarded[5..]].concat();
    let run = reclaim_in(&dir, &resumed);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(&format!("skipped={rows}")),
        "it did not resume after the {rows} checkpointed tasks:\n{}",
        run.stdout
    );
    let (integrity, rows, distinct, checkpoints, unmatched) = consistency(&db);
    assert_eq!(integrity, "ok");
    assert_eq!(
        (rows, distinct, checkpoints, unmatched),
        (finish, finish, finish, 0)
    );
}

#[test]
fn a_full_disk_stops_run_in_one_line() {
    let Some((_tmp, dir, _mount)) = mounted("size=256k") else {
        return;
    };
    let db = dir.join("w.db");
    let args = [
        "run",
        "--strategy",
        "guarded",
        "--items",
        "100000",
        "--delay-ms",
        "0",
        "--db",
        path_arg(&db),
    ];
    let run = reclaim_in(&dir, &args);
    assert_worker_failed(&run, "database or disk is full");
    let (integrity, rows, distinct, checkpoints, unmatched) = consistency(&db);
    assert_eq!(integrity, "ok");
    assert_eq!((distinct, checkpoints, unmatched), (rows, rows, 0));
}

#[test]
fn the_dashboard_with_a_read_only_tmpdir_refuses_before_the_terminal() {
    let Some((_tmp, ro, mount)) = mounted("size=64k") else {
        return;
    };
    mount.remount("ro");
    let mut dashboard = Dashboard::start(&[], &ro, COLS, ROWS).unwrap();
    let (code, _) = exit_within(&mut dashboard, PROMPTLY);
    let text = dashboard.text();
    assert_eq!(code, 2, "{text}");
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line on the terminal:\n{text}");
    assert!(lines[0].contains("cannot create a folder"), "{text}");
    assert!(
        !dashboard.entered_alternate_screen(),
        "it switched to the alternate screen before refusing"
    );
}

const LANE: &str = "[[lane]]\nstrategy = \"guarded\"\n";

/// `title = "t"`, then `body`, then one guarded lane.
fn scenario(body: &str) -> Vec<u8> {
    format!("title = \"t\"\n{body}\n{LANE}").into_bytes()
}

#[test]
fn a_lane_name_of_thirteen_accented_characters_is_accepted() {
    // "must be 1..=24 characters": 12 of them (24 bytes in UTF-8) pass, 13 (26 bytes) do not.
    for name in ["éééééééééééé", "ééééééééééééé"] {
        let text = format!("title = \"t\"\n{LANE}name = \"{name}\"\n");
        let parsed = reclaim::scenario::Scenario::parse("t.toml", &text);
        assert!(
            parsed.is_ok(),
            "{name} ({} characters): {parsed:?}",
            name.chars().count()
        );
    }
}

/// `reclaim ARGS` is refused in one line naming `needle`, exit 2, with nothing on stdout and
/// nothing created in its working directory (also its TMPDIR).
fn assert_flag_refused(dir: &Path, args: &[&str], needle: &str) {
    let run = reclaim_in(dir, args);
    assert_one_line_error(&run, needle);
    assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
    let left: Vec<_> = snapshot_tree(dir).into_keys().collect();
    assert!(left.is_empty(), "{args:?} created {left:?}");
}

/// Each `(flags, needle)` appended to `base` (where `TMP/x` names a file in the folder).
fn assert_flags_refused(base: &[&str], cases: &[(&[&str], &str)]) {
    let tmp = tempdir();
    let base = in_folder(base, tmp.path());
    for (flags, needle) in cases {
        let mut args: Vec<&str> = base.iter().map(String::as_str).collect();
        args.extend_from_slice(flags);
        assert_flag_refused(tmp.path(), &args, needle);
    }
}

#[test]
fn every_numeric_flag_of_run_out_of_range_is_one_line() {
    assert_flags_refused(
        &["run", "--strategy", "guarded", "--db", "TMP/x.db"],
        &[
            (&["--items", "0"], "--items"),
            (&["--items", "100000001"], "--items"),
            (&["--delay-ms=-1"], "--delay-ms"),
            // clap takes a bare -1 for a flag: the line names it, if not the flag before it.
            (&["--delay-ms", "-1"], "'-1'"),
            (&["--delay-ms", "60001"], "--delay-ms"),
            (&["--delay-ms", "nan"], "--delay-ms"),
            (&["--delay-ms", "ten"], "--delay-ms"),
            (&["--kills=-1"], "--kills"),
            (&["--kills", "4294967296"], "--kills"),
            (&["--kill-window", "2..1"], "ends before it starts"),
            (&["--kill-window", "0..0"], "--kill-window"),
            (&["--kill-window", "0..3601"], "--kill-window"),
            (&["--kill-window", "soon"], "--kill-window"),
            (&["--kill-at-task", "task-x"], "--kill-at-task"),
            (&["--crash-at", "task-1:nowhere"], "--crash-at"),
            (&["--crash-at", "5"], "--crash-at"),
            (&["--workers", "0"], "--workers"),
            (&["--workers", "65"], "--workers"),
            (&["--restart-delay=-1"], "--restart-delay"),
            (&["--restart-delay", "86401"], "--restart-delay"),
            (&["--max-restarts=-1"], "--max-restarts"),
            (&["--max-restarts", "4294967296"], "--max-restarts"),
            (&["--seed=-1"], "--seed"),
            (&["--seed", "18446744073709551616"], "--seed"),
            (&["--scale", "0"], "--scale"),
            (&["--scale", "1000001"], "--scale"),
            (&["--scale", "inf"], "--scale"),
            (&["--batch", "0"], "--batch"),
            (&["--batch", "100001"], "--batch"),
            (&["--sync", "sometimes"], "--sync"),
            // A scenario's flags without a scenario.
            (&["--speed", "2"], "--speed is for a scenario"),
            (&["--allow-exec"], "--allow-exec is for a scenario"),
        ],
    );
    assert_flags_refused(
        &["run", "--scenario", "incident"],
        &[
            (&["--speed", "0.1"], "--speed"),
            (&["--speed", "17"], "--speed"),
            (&["--speed", "nan"], "--speed"),
        ],
    );
}

#[test]
fn every_numeric_flag_of_prove_worker_and_the_rest_out_of_range_is_one_line() {
    assert_flags_refused(
        &["prove"],
        &[
            (&["--items", "2"], "--items"),
            (&["--items", "1000001"], "--items"),
            (&["--delay-ms=-1"], "--delay-ms"),
            (&["--delay-ms", "60001"], "--delay-ms"),
            (&["--kills", "0"], "--kills"),
            (&["--kills", "1001"], "--kills"),
            (&["--seed=-1"], "--seed"),
        ],
    );
    assert_flags_refused(
        &["worker", "--strategy", "guarded", "--db", "TMP/x.db"],
        &[
            (&["--items=-1"], "--items"),
            (&["--delay-ms=-1"], "--delay-ms"),
            (&["--delay-ms", "60001"], "--delay-ms"),
            (&["--batch", "0"], "--batch"),
            (&["--batch", "100001"], "--batch"),
            (&["--crash-at", "task-1:nowhere"], "--crash-at"),
            (&["--sync", "sometimes"], "--sync"),
        ],
    );
    assert_flags_refused(
        &["heartbeat-check", "--file", "TMP/h"],
        &[
            (&["--max-age=-1"], "--max-age"),
            (&["--max-age", "soon"], "--max-age"),
            (&["--max-age", "18446744073709551616"], "--max-age"),
        ],
    );
    assert_flags_refused(
        &["inspect", "--db", "TMP/x.db"],
        &[(&["--items=-1"], "--items")],
    );
    assert_flags_refused(&["tui"], &[(&["--seed=-1"], "--seed")]);
    // Not clap's to refuse, but the same one line: naive commits one item at a time.
    assert_flags_refused(
        &["worker", "--strategy", "naive", "--db", "TMP/x.db"],
        &[(
            &["--batch", "5"],
            "applies to keyed, guarded and outbox only",
        )],
    );
}

#[test]
fn a_kill_or_crash_beyond_the_queue_is_refused() {
    let night = [
        "run",
        "--strategy",
        "guarded",
        "--items",
        "20",
        "--delay-ms",
        "0",
        "--db",
        "TMP/x.db",
    ];
    let worker = [
        "worker",
        "--strategy",
        "guarded",
        "--items",
        "20",
        "--delay-ms",
        "0",
        "--db",
        "TMP/x.db",
    ];
    // A scenario refuses the same ("is beyond the queue"); a green night that never saw the
    // kill it was asked for proves nothing.
    assert_flags_refused(
        &night,
        &[(&["--kill-at-task", "task-500"], "beyond the queue")],
    );
    assert_flags_refused(
        &night,
        &[(&["--crash-at", "task-500:after-commit"], "beyond the queue")],
    );
    assert_flags_refused(
        &worker,
        &[(&["--crash-at", "task-20:after-commit"], "beyond the queue")],
    );
}

#[test]
fn an_error_naming_a_value_with_a_newline_is_still_one_line() {
    // TOML and JSON both spell a newline inside a string as \n; the refusal quotes the value.
    let cases = [
        (
            "variant.toml",
            "[[lane]]\nstrategy = \"lazy\\nworker\"\nname = \"z\"",
        ),
        ("task.toml", "[host]\nkill_at_task = \"task-\\n1\""),
        (
            "caption.toml",
            "[[caption]]\non = \"kill\\nnow\"\ntext = \"t\"",
        ),
    ];
    for (name, body) in cases {
        assert_scenario_refused(name, &scenario(body), "scenario");
    }
    // A recording's (`recordings/refused/newline-in-type.jsonl`): `recording_files`.
}

#[test]
fn a_lane_name_with_a_control_character_is_refused() {
    for name in ["a\\nb", "a\\u0000b", "a\\tb"] {
        let text = format!("title = \"t\"\n{LANE}name = \"{name}\"\n");
        let parsed = reclaim::scenario::Scenario::parse("t.toml", &text);
        assert!(parsed.is_err(), "name = \"{name}\" was accepted");
    }
}
