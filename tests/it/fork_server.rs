//! The fork server (`supervisor::fork_server`): reclaim's own worker forked from one
//! pre-initialised process instead of exec'd per attempt. Each attempt is still a process of its
//! own, killed by a real SIGKILL and restarted by a new fork; the server and every worker die
//! with reclaim, SIGKILL included; and a night prints the same with the server as without it.

use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use crate::common::{BIN, cmdline, gone_within, json_of, path_arg, process_gone, reclaim_within};

/// A hang guard, not a timing assertion.
const LIMIT: Duration = Duration::from_secs(120);
/// How long after reclaim's death its server and workers may still be alive.
const ORPHAN_GRACE: Duration = Duration::from_secs(1);
const POLL: Duration = Duration::from_millis(5);

/// The parent of `pid` (none once it is gone or a zombie).
fn parent(pid: i32) -> Option<i32> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    (state != "Z").then_some(())?;
    fields.next()?.parse().ok()
}

fn pids() -> Vec<i32> {
    fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// reclaim's fork server: its child running `reclaim fork-server`.
fn fork_server_of(reclaim: i32) -> Option<i32> {
    pids().into_iter().find(|&pid| {
        parent(pid) == Some(reclaim) && cmdline(pid).get(1).is_some_and(|a| a == "fork-server")
    })
}

/// Live workers (their command line `reclaim worker ... <dir>...`) and their parents.
fn workers_in(dir: &Path) -> Vec<(i32, i32)> {
    let needle = dir.display().to_string();
    pids()
        .into_iter()
        .filter_map(|pid| {
            let args = cmdline(pid);
            let ours = args.get(1).is_some_and(|a| a == "worker")
                && args.iter().any(|a| a.contains(&needle));
            ours.then(|| Some((pid, parent(pid)?))).flatten()
        })
        .collect()
}

fn start(dir: &Path, args: &[&str]) -> Child {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run reclaim: {e}"))
}

/// Kills and reaps `child` if it still runs (a failed assertion leaves nothing behind).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn sigkill_of_reclaim_takes_the_fork_server_and_its_worker_with_it() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let db = tmp.path().join("w.db");
    let child = start(
        tmp.path(),
        &[
            "run",
            "--strategy",
            "guarded",
            "--items",
            "100000",
            "--delay-ms",
            "5",
            "--db",
            path_arg(&db),
        ],
    );
    let mut reclaim = Reaped(child);
    let me = i32::try_from(reclaim.0.id()).unwrap_or(i32::MAX);
    let deadline = Instant::now() + LIMIT;
    let (server, worker) = loop {
        if let Some(server) = fork_server_of(me)
            && let Some(&(worker, _)) = workers_in(tmp.path()).iter().find(|w| w.1 == server)
        {
            break (server, worker);
        }
        assert!(
            Instant::now() < deadline,
            "no worker forked by a fork server of reclaim {me} within {LIMIT:?}"
        );
        thread::sleep(POLL);
    };
    // The worker is a process of its own, leading its own group, the server's child.
    assert_ne!(worker, server);
    assert_eq!(
        nix::unistd::getpgid(Some(Pid::from_raw(worker))).ok(),
        Some(Pid::from_raw(worker))
    );
    kill(Pid::from_raw(me), Signal::SIGKILL).unwrap_or_else(|e| panic!("{e}"));
    let _ = reclaim.0.wait();
    assert!(
        gone_within(server, ORPHAN_GRACE),
        "the fork server {server} outlived reclaim"
    );
    assert!(
        gone_within(worker, ORPHAN_GRACE),
        "the forked worker {worker} outlived reclaim"
    );
    let left: Vec<i32> = workers_in(tmp.path()).into_iter().map(|w| w.0).collect();
    assert!(left.is_empty(), "workers left behind: {left:?}");
}

#[test]
fn each_killed_attempt_is_restarted_by_a_new_fork_and_the_data_stays_exact() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let db = tmp.path().join("w.db");
    // Each attempt is held at its kill's row for about a second of 10 ms items, long enough to
    // be seen in /proc at any load.
    let child = start(
        tmp.path(),
        &[
            "run",
            "--strategy",
            "guarded",
            "--items",
            "250",
            "--delay-ms",
            "10",
            "--kills",
            "2",
            "--kill-rows",
            "100..100",
            "--restart-delay",
            "0",
            "--db",
            path_arg(&db),
        ],
    );
    let mut reclaim = Reaped(child);
    let me = i32::try_from(reclaim.0.id()).unwrap_or(i32::MAX);
    let deadline = Instant::now() + LIMIT;
    let mut seen: Vec<(i32, i32)> = Vec::new();
    let mut servers = Vec::new();
    let status = loop {
        if let Some(server) = fork_server_of(me)
            && !servers.contains(&server)
        {
            servers.push(server);
        }
        for w in workers_in(tmp.path()) {
            if !seen.contains(&w) {
                seen.push(w);
            }
        }
        if let Ok(Some(status)) = reclaim.0.try_wait() {
            break status;
        }
        assert!(Instant::now() < deadline, "the run took over {LIMIT:?}");
        thread::sleep(POLL);
    };
    assert!(status.success(), "{status}");
    assert_eq!(
        servers.len(),
        1,
        "one fork server for the night: {servers:?}"
    );
    let pids: Vec<i32> = seen.iter().map(|w| w.0).collect();
    assert_eq!(pids.len(), 3, "three attempts, three processes: {seen:?}");
    assert!(
        seen.iter().all(|&(_, p)| p == servers[0]),
        "every attempt forked by the server {}, none exec'd by reclaim {me}: {seen:?}",
        servers[0]
    );
    assert!(pids.iter().all(|&p| process_gone(p)));
    let conn = crate::common::open_ro(&db);
    assert_eq!(crate::common::rows(&conn), 250);
    assert_eq!(crate::common::distinct(&conn), 250);
}

/// The `--json` of a seeded storm, with `RECLAIM_FORK_SERVER` set to `server`.
fn storm_json(dir: &Path, server: &str) -> Value {
    let db = dir.join(format!("storm-{server}.db"));
    let run = reclaim_within(
        &[
            "run",
            "--strategy",
            "guarded",
            "--items",
            "400",
            "--delay-ms",
            "0",
            "--kills",
            "5",
            "--kill-rows",
            "5..30",
            "--restart-delay",
            "0",
            "--seed",
            "26",
            "--db",
            path_arg(&db),
            "--json",
        ],
        &[("RECLAIM_FORK_SERVER", Path::new(server))],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    json_of(&run)
}

/// What a night's report says, less what differs between any two runs: the real time it took,
/// its file (a folder of its own each),
/// and in its timeline each line's clock (a storm at full speed is timed by the machine), the
/// pids and run ids, and so the lines' order.
fn comparable(mut json: Value) -> Value {
    let plain = |line: &str| -> String {
        let mut kept: Vec<&str> = Vec::new();
        for word in line.split_whitespace().skip(1) {
            let a_pid = kept.last() == Some(&"pid");
            if !(a_pid || word.starts_with("run_id=") || word.starts_with("pid=")) {
                kept.push(word);
            }
        }
        kept.join(" ")
    };
    if let Some(object) = json.as_object_mut() {
        object.remove("elapsed_ms");
        object.remove("db");
        if let Some(Value::Array(lines)) = object.get_mut("timeline") {
            // Lines of one second are in lane order, so lines whose clocks differ may swap.
            let mut texts: Vec<String> =
                lines.iter().filter_map(Value::as_str).map(plain).collect();
            texts.sort();
            *lines = texts.into_iter().map(Value::String).collect();
        }
    }
    json
}

#[test]
fn a_night_reports_the_same_with_the_fork_server_as_without() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let with = comparable(storm_json(tmp.path(), "1"));
    let without = comparable(storm_json(tmp.path(), "0"));
    assert_eq!(with, without);
    assert_eq!(crate::common::number(&with, "restarts"), 5, "{with}");
}

#[test]
fn the_fork_server_refuses_to_run_by_hand() {
    let run = crate::common::reclaim(&["fork-server"]);
    crate::common::assert_one_line_error(&run, "fork-server");
}
