//! Integration tests of `reclaim run`, `reclaim prove` and `reclaim heartbeat-check`: whole nights
//! under the real supervisor, seeded SIGKILLs, signals sent to reclaim itself, and every figure
//! that matters read back from the database independently.

use std::fs;
use std::io::{BufRead as _, BufReader, Read as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::support::{
    BIN, Run, assert_one_line_error, cmdline, distinct, duplicated_ids, gone_within, json_of,
    number, open_ro, path_arg, process_gone, reclaim_within, rows, snapshot, workers_under,
};
use crate::support::{after_clock, without_pids_and_paths};

/// A hang guard, not a timing assertion: every night here takes a few seconds at most.
const LIMIT: Duration = Duration::from_secs(90);

/// The lesson a failure caused by duplicate rows must teach.
const UNIQUE_KEY_LESSON: &str = "is there a unique key on the work id?";

/// `reclaim run --db DB EXTRA...`, against the hang guard.
fn night(db: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["run", "--db", path_arg(db)];
    args.extend_from_slice(extra);
    reclaim_within(&args, &[], LIMIT)
}

/// The index of the first timeline line from `from` on whose text starts with `prefix`.
fn find_line(lines: &[&str], from: usize, prefix: &str) -> usize {
    lines
        .iter()
        .enumerate()
        .skip(from)
        .find(|(_, line)| after_clock(line).is_some_and(|text| text.starts_with(prefix)))
        .map_or_else(
            || {
                panic!(
                    "no timeline line `HH:MM:SS  {prefix}...` after line {from}:\n{}",
                    lines.join("\n")
                )
            },
            |(i, _)| i,
        )
}

/// `pid=NNN` from a worker's `start` line.
fn pid_in(line: &str) -> Option<i32> {
    line.split_whitespace()
        .find_map(|word| word.strip_prefix("pid="))
        .and_then(|pid| pid.parse().ok())
}

/// A `reclaim run` still going, its stdout read line by line on a thread.
struct LiveNight {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl LiveNight {
    /// A guarded night slow enough (50 ms an item, ten seconds in all) to be interrupted.
    fn start(db: &Path) -> Self {
        let mut child = crate::support::reclaim_command()
            .args(["run", "--strategy", "guarded", "--delay-ms", "50", "--db"])
            .arg(db)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {BIN}: {e}"));
        let stdout = child
            .stdout
            .take()
            .unwrap_or_else(|| panic!("reclaim run has no stdout pipe"));
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    fn pid(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(i32::MAX))
    }

    /// The pid in the first worker's `start` line, once the timeline shows it.
    fn worker_pid(&mut self) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|e| {
                panic!(
                    "no worker start line ({e}); stdout so far:\n{}",
                    self.seen.join("\n")
                )
            });
            let start = after_clock(&line).is_some_and(|text| text.starts_with("worker  start"));
            let pid = pid_in(&line);
            self.seen.push(line);
            if let (true, Some(pid)) = (start, pid) {
                return pid;
            }
        }
    }

    /// Waits up to `limit` for reclaim to exit.
    fn exit_within(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                Ok(None) | Err(_) => return None,
            }
        }
    }

    fn stderr(&mut self) -> String {
        let mut text = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = pipe.read_to_string(&mut text);
        }
        text
    }
}

impl Drop for LiveNight {
    fn drop(&mut self) {
        // A failed assertion must not leave reclaim running; its workers follow it (PDEATHSIG).
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Starts a slow night, checks its worker is really running, sends `signal` to reclaim alone,
/// and returns how reclaim ended, its stderr, and the worker's pid.
fn interrupt_a_night(signal: Signal) -> (ExitStatus, String, i32) {
    let dir = crate::support::tempdir();
    let mut live = LiveNight::start(&dir.path().join("x.db"));
    let worker = live.worker_pid();
    assert!(
        !process_gone(worker),
        "the worker (pid {worker}) should be running"
    );
    let args = cmdline(worker);
    assert!(
        args.iter().any(|a| a == "worker") && args.iter().any(|a| a == "--supervised"),
        "pid {worker} is not a supervised reclaim worker: {args:?}"
    );
    kill(live.pid(), signal).unwrap_or_else(|e| panic!("cannot send {signal} to reclaim: {e}"));
    let status = live
        .exit_within(Duration::from_secs(10))
        .unwrap_or_else(|| panic!("reclaim run did not exit after {signal}"));
    let stderr = live.stderr();
    (status, stderr, worker)
}

#[test]
fn naive_night_reproduces_the_postmortem() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("x.db");
    let run = night(
        &db,
        &[
            "--strategy",
            "naive",
            "--crash-at",
            "task-111:after-commit",
            "--delay-ms",
            "2",
        ],
    );
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines.last().copied(),
        Some("rows=312 duplicated_task_ids=112")
    );
    let verdict = lines
        .iter()
        .find(|l| l.starts_with("verdict "))
        .unwrap_or_else(|| panic!("no verdict line:\n{}", run.stdout));
    assert!(
        verdict.contains("claimed=ok derived=DATA WRONG (112 duplicated task ids)"),
        "{verdict}"
    );
    assert!(
        lines.iter().any(|l| l.contains(UNIQUE_KEY_LESSON)),
        "{}",
        run.stdout
    );

    // The night, in the postmortem's own log format and order.
    let first = find_line(&lines, 0, "worker  start   run_id=(none)  items=200");
    let reclaimed = find_line(
        &lines,
        first + 1,
        "runner  notice  instance reclaimed by host",
    );
    assert!(
        lines[reclaimed].contains("crash point task-111:after-commit"),
        "{}",
        lines[reclaimed]
    );
    assert_eq!(
        after_clock(lines[reclaimed - 1]),
        Some("worker  item    task-112  in flight, not committed (last committed: task-111)"),
        "the item in flight when it died"
    );
    let again = find_line(
        &lines,
        reclaimed + 1,
        "worker  start   run_id=(none)  items=200",
    );
    find_line(
        &lines,
        again + 1,
        "worker  done    rows_written=312  status=ok",
    );

    let conn = open_ro(&db);
    assert_eq!(rows(&conn), 312);
    assert_eq!(distinct(&conn), 200);
    let dups = duplicated_ids(&conn);
    assert_eq!(dups.len(), 112);
    assert_eq!(dups.first().map(String::as_str), Some("task-000"));
    assert_eq!(dups.last().map(String::as_str), Some("task-111"));
}

#[test]
fn naive_night_as_json_reports_the_postmortem_figures() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("x.db");
    let run = night(
        &db,
        &[
            "--strategy",
            "naive",
            "--crash-at",
            "task-111:after-commit",
            "--delay-ms",
            "2",
            "--seed",
            "3",
            "--json",
        ],
    );
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    assert_eq!(json["strategy"], "naive");
    assert_eq!(json["seed"], 3);
    assert_eq!(json["items"], 200);
    assert_eq!(json["rows"], 312);
    assert_eq!(json["distinct"], 200);
    assert_eq!(json["duplicated_task_ids"], 112);
    assert_eq!(json["missing"], 0);
    assert_eq!(json["kills"], 1);
    assert_eq!(json["restarts"], 1);
    assert_eq!(json["completed"], true);
    assert_eq!(json["claimed_status"], "ok");
    assert_eq!(json["derived_status"], "data_wrong");
    assert_eq!(json["db"], path_arg(&db));

    // The figures are the database's, not the worker's word.
    let conn = open_ro(&db);
    assert_eq!(rows(&conn), 312);
    assert_eq!(duplicated_ids(&conn).len(), 112);
}

#[test]
fn guarded_survives_many_seeded_random_kills_exactly_once() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("x.db");
    let run = night(
        &db,
        &[
            "--strategy",
            "guarded",
            "--kills",
            "20",
            "--kill-window",
            "0.01..0.08",
            "--delay-ms",
            "2",
            "--seed",
            "11",
            "--json",
        ],
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    let kills = number(&json, "kills");
    assert!(kills > 1, "only {kills} kills landed: {json}");
    assert_eq!(json["completed"], true);
    assert_eq!(json["claimed_status"], "ok");
    assert_eq!(json["derived_status"], "ok");
    let reclaimed = json["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| {
            l.as_str()
                .is_some_and(|l| l.contains("instance reclaimed by host"))
        })
        .count();
    assert_eq!(reclaimed as u64, kills, "one timeline notice per kill");

    let conn = open_ro(&db);
    assert_eq!(rows(&conn), 200);
    assert_eq!(distinct(&conn), 200);
    assert!(duplicated_ids(&conn).is_empty());
}

/// The kill plan of a short night with `seed`: the JSON delays, and the human `kill plan` line.
fn kill_plan(dir: &Path, seed: &str) -> (Vec<u64>, String) {
    let common = [
        "--strategy",
        "guarded",
        "--items",
        "20",
        "--delay-ms",
        "0",
        "--kills",
        "6",
        "--kill-window",
        "0.01..0.08",
        "--seed",
        seed,
    ];
    let json_db = dir.join(format!("{seed}-json.db"));
    let run = night(&json_db, &[&common[..], &["--json"]].concat());
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let delays = json_of(&run)["kill_delays_ms"]
        .as_array()
        .unwrap_or_else(|| panic!("no kill_delays_ms: {}", run.stdout))
        .iter()
        .map(|d| d.as_u64().unwrap_or(u64::MAX))
        .collect();

    let human = night(&dir.join(format!("{seed}-human.db")), &common);
    assert_eq!(human.code, Some(0), "{}\n{}", human.stdout, human.stderr);
    let line = human
        .stdout
        .lines()
        .find(|l| l.starts_with("kill plan "))
        .unwrap_or_else(|| panic!("no kill plan line:\n{}", human.stdout))
        .to_string();
    (delays, line)
}

/// The delays the `kill plan` line lists, without the seed it names.
fn listed_delays(plan: &str) -> &str {
    plan.split_once('(')
        .and_then(|(_, rest)| rest.split_once("; seed"))
        .map_or(plan, |(delays, _)| delays)
}

#[test]
fn the_same_seed_gives_the_same_kill_schedule() {
    let dir = crate::support::tempdir();
    let first = tempfile::tempdir_in(dir.path()).unwrap();
    let second = tempfile::tempdir_in(dir.path()).unwrap();
    let (delays, plan) = kill_plan(first.path(), "7");
    let (again, plan_again) = kill_plan(second.path(), "7");
    let (other, other_plan) = kill_plan(first.path(), "8");

    assert_eq!(delays.len(), 6, "{delays:?}");
    assert!(
        delays.iter().all(|d| (10..=80).contains(d)),
        "every delay falls in the 10..80 ms window: {delays:?}"
    );
    assert_eq!(delays, again, "seed 7 twice");
    assert_ne!(delays, other, "seed 7 and seed 8");

    assert_eq!(plan, plan_again, "the human kill plan of seed 7 twice");
    assert!(plan.contains("seed 7"), "{plan}");
    assert_ne!(listed_delays(&plan), listed_delays(&other_plan));
    // The plan printed is the plan used: the same delays, to the printed 10 ms precision.
    let printed: Vec<f64> = listed_delays(&plan)
        .split(", ")
        .filter_map(|d| d.strip_suffix('s')?.parse().ok())
        .collect();
    assert_eq!(printed.len(), 6, "{plan}");
    for (shown, used) in printed.iter().zip(&delays) {
        assert!(
            (shown * 1000.0 - *used as f64).abs() <= 6.0,
            "{plan} vs {delays:?}"
        );
    }
}

#[test]
fn two_workers_at_once_duplicate_only_without_a_key() {
    let dir = crate::support::tempdir();
    let guarded_db = dir.path().join("guarded.db");
    let guarded = night(
        &guarded_db,
        &["--strategy", "guarded", "--workers", "2", "--delay-ms", "2"],
    );
    assert_eq!(
        guarded.code,
        Some(0),
        "{}\n{}",
        guarded.stdout,
        guarded.stderr
    );
    let conn = open_ro(&guarded_db);
    assert_eq!(rows(&conn), 200);
    assert!(duplicated_ids(&conn).is_empty());
    drop(conn);

    let naive_db = dir.path().join("naive.db");
    let naive = night(
        &naive_db,
        &["--strategy", "naive", "--workers", "2", "--delay-ms", "2"],
    );
    assert_eq!(naive.code, Some(1), "{}\n{}", naive.stdout, naive.stderr);
    assert_eq!(
        naive.stdout.lines().last(),
        Some("rows=400 duplicated_task_ids=200")
    );
    let conn = open_ro(&naive_db);
    assert_eq!(rows(&conn), 400);
    assert_eq!(distinct(&conn), 200);
    assert_eq!(duplicated_ids(&conn).len(), 200);
}

#[test]
fn a_naive_night_killed_every_time_gives_up_and_says_it_never_completed() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("x.db");
    // Two seconds of work per attempt, a kill 50..100 ms into each: no attempt can finish.
    let run = night(
        &db,
        &[
            "--strategy",
            "naive",
            "--delay-ms",
            "10",
            "--kills",
            "50",
            "--kill-window",
            "0.05..0.1",
            "--max-restarts",
            "3",
            "--json",
        ],
    );
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    assert_eq!(json["completed"], false);
    assert_eq!(json["restarts"], 3);
    assert_eq!(json["kills"], 4, "the first attempt and three restarts");
    assert_eq!(json["claimed_status"], "none");
    let reason = json["never_completed"]
        .as_str()
        .unwrap_or_else(|| panic!("never_completed is not a string: {json}"));
    assert!(reason.contains("never completed"), "{reason}");
    assert!(number(&json, "missing") > 0, "{json}");

    let conn = open_ro(&db);
    assert!(distinct(&conn) < 200, "the queue was not finished");
}

#[test]
fn run_refuses_an_existing_db_and_leaves_it_alone() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("x.db");
    fs::write(&db, b"last night's warehouse").unwrap();
    let before = snapshot(dir.path());

    let run = night(&db, &["--strategy", "guarded", "--delay-ms", "0"]);
    assert_one_line_error(&run, "already exists");
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert_eq!(snapshot(dir.path()), before, "nothing written or added");
}

#[test]
fn sigkill_of_reclaim_run_leaves_no_worker_alive() {
    let (status, _, worker) = interrupt_a_night(Signal::SIGKILL);
    assert_eq!(status.signal(), Some(9), "{status}");
    assert!(
        gone_within(worker, Duration::from_secs(1)),
        "worker {worker} outlived a SIGKILLed reclaim: {:?}",
        fs::read_to_string(format!("/proc/{worker}/stat"))
    );
}

/// SIGTERM and SIGINT end the night: exit 2, one line naming the signal, no worker left.
fn assert_stopped_cleanly(signal: Signal) {
    let (status, stderr, worker) = interrupt_a_night(signal);
    assert_eq!(status.code(), Some(2), "{status}: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line on stderr:\n{stderr}");
    assert!(
        lines[0].contains(&format!("stopped by {signal}")),
        "{stderr}"
    );
    assert!(
        gone_within(worker, Duration::from_secs(1)),
        "worker {worker} outlived reclaim stopped by {signal}"
    );
}

#[test]
fn sigterm_of_reclaim_run_stops_it_and_its_worker() {
    assert_stopped_cleanly(Signal::SIGTERM);
}

#[test]
fn sigint_of_reclaim_run_stops_it_and_its_worker() {
    assert_stopped_cleanly(Signal::SIGINT);
}

/// `reclaim prove --strategy STRATEGY --delay-ms 2 --seed 5`, its databases under `tmp`.
fn prove(strategy: &str, tmp: &Path, json: bool) -> Run {
    let mut args = vec![
        "prove",
        "--strategy",
        strategy,
        "--delay-ms",
        "2",
        "--seed",
        "5",
    ];
    if json {
        args.push("--json");
    }
    reclaim_within(&args, &[("TMPDIR", tmp)], LIMIT)
}

/// One `prove --json` trial: its exit code, each test's verdict in order (`None`: not asserted),
/// and where its databases went (removed when everything passed, kept under `tmp` otherwise).
fn assert_trial(strategy: &str, code: i32, passes: [Option<bool>; 4], tmp: &Path, run: &Run) {
    assert_eq!(
        run.code,
        Some(code),
        "{strategy}:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    let json = json_of(run);
    assert_eq!(json["strategy"], strategy);
    assert_eq!(json["seed"], 5);
    assert_eq!(json["items"], 200);
    let tests = json["tests"]
        .as_array()
        .unwrap_or_else(|| panic!("{strategy}: no tests in {json}"));
    let got: Vec<bool> = tests.iter().map(|t| t["pass"] == true).collect();
    assert_eq!(got.len(), 4, "{strategy}: {json}");
    for (number, (got, want)) in got.iter().zip(passes).enumerate() {
        if let Some(want) = want {
            assert_eq!(*got, want, "{strategy}, test {}: {json}", number + 1);
        }
    }
    // A test that did not pass failed, or was left untested: counted apart.
    let failed = got.iter().filter(|p| !**p).count();
    let not_passed =
        json["failed"].as_u64().unwrap_or(0) + json["not_tested"].as_u64().unwrap_or(0);
    assert_eq!(not_passed, failed as u64, "{strategy}");
    assert_eq!(json["passed"], 4 - failed, "{strategy}");
    let names = [
        "kill test",
        "two workers",
        "checkpoints wiped",
        "crash-point sweep",
    ];
    for (test, name) in tests.iter().zip(names) {
        assert!(
            test["name"].as_str().is_some_and(|n| n.starts_with(name)),
            "{strategy}: {test}"
        );
    }
    let left: Vec<_> = fs::read_dir(tmp)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    if failed == 0 {
        assert!(json["kept"].is_null(), "{strategy}: {json}");
        assert!(
            left.is_empty(),
            "{strategy}: a passing trial leaves no databases behind: {left:?}"
        );
    } else {
        let kept = json["kept"].as_str().unwrap_or_default();
        assert!(
            kept.starts_with(path_arg(tmp)),
            "{strategy}: kept in {kept:?}"
        );
        let dbs = fs::read_dir(kept).map_or(0, Iterator::count);
        assert!(dbs > 0, "{strategy}: nothing kept in {kept}");
        // With the checkpoints gone, a rerun without a unique key writes everything again.
        assert_eq!(tests[2]["rows"], 400, "{strategy}: {}", tests[2]);
        assert_eq!(tests[2]["duplicated_task_ids"], 200, "{strategy}");
    }
}

#[test]
fn prove_passes_guarded_and_keyed_and_convicts_naive_and_two_commit() {
    // (strategy, exit code, pass or fail of tests 1..4)
    let expected: [(&str, i32, [Option<bool>; 4]); 4] = [
        ("guarded", 0, [Some(true); 4]),
        ("keyed", 0, [Some(true); 4]),
        ("naive", 1, [Some(false); 4]),
        // Tests 1 and 2 catch two-commit only when a kill, or the other worker, lands between
        // its two commits: a genuine race (the lesson itself), so their verdict is left open.
        ("two-commit", 1, [None, None, Some(false), Some(false)]),
    ];
    let dirs: Vec<_> = expected.iter().map(|_| crate::support::tempdir()).collect();
    // The four trials run at once: each spends most of its time waiting on its workers.
    let runs: Vec<Run> = thread::scope(|scope| {
        let handles: Vec<_> = expected
            .iter()
            .zip(&dirs)
            .map(|((strategy, _, _), dir)| scope.spawn(move || prove(strategy, dir.path(), true)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    for (((strategy, code, passes), dir), run) in expected.iter().zip(&dirs).zip(&runs) {
        assert_trial(strategy, *code, *passes, dir.path(), run);
    }

    // two-commit's one gap: the row committed, its checkpoint not yet.
    let detail = json_of(&runs[3])["tests"][3]["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        detail.starts_with("3 of 12 crashes broke the data"),
        "{detail}"
    );
    assert_eq!(detail.matches("after-row-commit").count(), 3, "{detail}");
    for point in ["before-write", "after-commit:", "after-heartbeat"] {
        assert!(!detail.contains(point), "{detail}");
    }
}

#[test]
fn prove_follows_every_naive_failure_with_the_unique_key_lesson() {
    let dir = crate::support::tempdir();
    let run = prove("naive", dir.path(), false);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    let numbered = |l: &str| {
        l.split_once(". ")
            .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
    };
    let fails: Vec<usize> = (0..lines.len())
        .filter(|&i| numbered(lines[i]) && lines[i].contains(". FAIL  "))
        .collect();
    assert_eq!(fails.len(), 4, "{}", run.stdout);
    assert!(!run.stdout.contains("PASS  "), "{}", run.stdout);
    for &fail in &fails {
        let lessons: Vec<&str> = lines[fail + 1..]
            .iter()
            .take_while(|l| !numbered(l) && !l.starts_with("result:"))
            .copied()
            .filter(|l| l.trim_start().starts_with("-> "))
            .collect();
        assert!(
            lessons.iter().any(|l| l.contains(UNIQUE_KEY_LESSON)),
            "`{}` has no unique-key lesson: {lessons:?}",
            lines[fail]
        );
    }
    assert!(
        lines.contains(&"result: 0 PASS, 4 FAIL of 4 tests for naive"),
        "{}",
        run.stdout
    );
    let kept = lines
        .iter()
        .find_map(|l| l.strip_prefix("databases    "))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(kept.starts_with(path_arg(dir.path())), "{kept}");
    // The default policy, named on the line.
    assert!(
        kept.contains(" kept (--keep failed: the night failed"),
        "{kept}"
    );
}

/// A heartbeat file as a worker writes it, last modified `age` ago.
fn heartbeat(path: &Path, age: Duration) {
    fs::write(path, "task-042 1700000000.000 pid=4242\n").unwrap_or_else(|e| panic!("{e}"));
    let file = fs::File::options()
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    file.set_modified(SystemTime::now() - age)
        .unwrap_or_else(|e| panic!("cannot age {}: {e}", path.display()));
}

fn heartbeat_check(extra: &[&str]) -> Run {
    let mut args = vec!["heartbeat-check"];
    args.extend_from_slice(extra);
    reclaim_within(&args, &[], LIMIT)
}

#[test]
fn heartbeat_check_of_a_fresh_file_is_quiet_success() {
    let dir = crate::support::tempdir();
    let beat = dir.path().join("x.db.heartbeat");
    heartbeat(&beat, Duration::ZERO);
    let out = dir.path().join("alert.txt");
    let exec = format!("echo \"$RECLAIM_ALERT\" > '{}'", path_arg(&out));

    let run = heartbeat_check(&["--file", path_arg(&beat), "--exec", &exec]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("fresh"), "{}", run.stdout);
    assert!(run.stdout.contains("task-042"), "{}", run.stdout);
    assert!(!out.exists(), "--exec ran for a fresh heartbeat");
}

#[test]
fn heartbeat_check_of_a_stale_file_alerts_and_runs_exec() {
    let dir = crate::support::tempdir();
    let beat = dir.path().join("x.db.heartbeat");
    heartbeat(&beat, Duration::from_secs(400));
    let out = dir.path().join("alert.txt");
    assert!(!path_arg(&out).contains('\''));
    let exec = format!("echo \"$RECLAIM_ALERT\" > '{}'", path_arg(&out));

    let run = heartbeat_check(&[
        "--file",
        path_arg(&beat),
        "--max-age",
        "300",
        "--exec",
        &exec,
    ]);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let message = run.stdout.trim_end();
    assert!(
        [
            "runner heartbeat stale: 400s",
            "runner heartbeat stale: 401s"
        ]
        .contains(&message),
        "{}",
        run.stdout
    );
    let alert = fs::read_to_string(&out).unwrap();
    assert_eq!(alert.trim_end(), message, "--exec got the same message");
}

#[test]
fn heartbeat_check_of_a_missing_file_is_one_line_and_exit_2() {
    let dir = crate::support::tempdir();
    let beat = dir.path().join("never-written.heartbeat");
    let run = heartbeat_check(&["--file", path_arg(&beat)]);
    assert_one_line_error(&run, "never-written.heartbeat");
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn a_panic_in_any_thread_of_run_leaves_no_worker() {
    for place in ["loop", "thread"] {
        let dir = crate::support::tempdir();
        let db = dir.path().join("w.db");
        let out = crate::support::reclaim_command()
            .args(["run", "--strategy", "guarded", "--delay-ms", "20", "--db"])
            .arg(&db)
            .env("RECLAIM_TEST_PANIC", place)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(101), "{place}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("RECLAIM_TEST_PANIC={place}")),
            "{stderr}"
        );
        // A worker had started: its database exists.
        assert!(db.exists(), "{place}: no worker ever ran");
        let deadline = Instant::now() + Duration::from_secs(1);
        while !workers_under(dir.path()).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            workers_under(dir.path()),
            Vec::<i32>::new(),
            "{place}: workers left"
        );
    }
}

/// `reclaim run --scenario incident` in a temp dir of its own.
/// The incident headless, at `speed` times its pace (`--speed`: the same text at every speed).
fn incident_night(tmp: &Path, speed: &str) -> Run {
    reclaim_within(
        &["run", "--scenario", "incident", "--speed", speed],
        &[("TMPDIR", tmp)],
        LIMIT,
    )
}

/// The first line of `run` containing every one of `needles`.
fn line_with<'a>(run: &'a Run, needles: &[&str]) -> &'a str {
    run.stdout
        .lines()
        .find(|l| needles.iter().all(|n| l.contains(n)))
        .unwrap_or_else(|| panic!("no line with {needles:?}:\n{}", run.stdout))
}

#[test]
fn the_incident_scenario_headless_prints_the_postmortems_log_to_the_second() {
    let tmp = crate::support::tempdir();
    let run = incident_night(tmp.path(), "16");
    // The naive lane's data is wrong, so the night as a whole fails.
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    for (clock, needles) in [
        ("02:00:03", &["naive", "worker  start"][..]),
        ("02:11:47", &["naive", "worker  item"][..]),
        ("02:11:47", &["naive", "instance reclaimed by host"][..]),
        ("02:12:05", &["naive", "supervisor restarts"][..]),
        ("02:12:05", &["naive", "worker  start   run_id=(none)"][..]),
        (
            "02:19:31",
            &["naive", "done", "rows_written=312  status=ok"][..],
        ),
    ] {
        let mut with_clock = vec![clock];
        with_clock.extend_from_slice(needles);
        let line = line_with(&run, &with_clock);
        assert!(line.starts_with(clock), "{clock}: {line}");
    }
    let naive = line_with(&run, &["verdict", "naive"]);
    assert!(
        naive.contains("rows=312 duplicated_task_ids=112"),
        "{naive}"
    );
    let guarded = line_with(&run, &["verdict", "guarded"]);
    assert!(
        guarded.contains("derived=ok") && guarded.contains("rows=200 duplicated_task_ids=0"),
        "{guarded}"
    );
}

#[test]
fn the_same_scenario_twice_prints_the_same_text_but_pids_and_paths() {
    let tmp = crate::support::tempdir();
    // At the same time: each night mostly waits on its pace (about 12 s at 1x), and two nights
    // on one machine at once, one at 16 times the other's speed, must not change a line of each
    // other's text either.
    let (first, second) = thread::scope(|scope| {
        let first = scope.spawn(|| incident_night(tmp.path(), "1"));
        let second = incident_night(tmp.path(), "16");
        (first.join().unwrap(), second)
    });
    let (a, b) = (
        without_pids_and_paths(&first.stdout),
        without_pids_and_paths(&second.stdout),
    );
    assert!(
        a.lines().filter(|l| after_clock(l).is_some()).count() >= 12,
        "{a}"
    );
    // Byte for byte, in the same order: two lanes' lines of one second arrive in either order
    // and are printed in lane order.
    assert_eq!(a, b);
    let starts: Vec<&str> = a
        .lines()
        .filter(|l| l.starts_with("02:00:03") && l.contains("worker  start"))
        .collect();
    assert_eq!(starts.len(), 2, "{a}");
    assert!(
        starts[0].contains("naive") && starts[1].contains("guarded"),
        "{a}"
    );
    // And every line's second is no earlier than the one before it.
    let clocks: Vec<&str> = a
        .lines()
        .filter_map(|l| l.get(..8))
        .filter(|c| c.starts_with("02:"))
        .collect();
    assert!(clocks.is_sorted(), "{a}");
}

/// vendor-forgets twice at 16x, side by side: a lane of a worker and its relay prints the same
/// lines in the same order. Before, the relay's first line came before or after its worker's
/// `start` by which was heard first, and a restarted relay's fell on 02:05:39 or 02:05:40 by
/// how soon it was heard.
#[test]
fn a_worker_and_its_relay_print_the_same_text_twice() {
    let tmp = crate::support::tempdir();
    let night = || {
        let run = reclaim_within(
            &["run", "--scenario", "vendor-forgets", "--speed", "16"],
            &[("TMPDIR", tmp.path())],
            LIMIT,
        );
        assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
        // The vendor's port, like a pid, is the machine's.
        let text = without_pids_and_paths(&run.stdout);
        (text.split(' '))
            .map(|w| match w.strip_prefix("vendor=127.0.0.1:") {
                Some(_) => "vendor=ADDR",
                None => w,
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (a, b) = thread::scope(|scope| {
        let first = scope.spawn(night);
        (
            first.join().unwrap_or_else(|_| panic!("a night panicked")),
            night(),
        )
    });
    assert_eq!(a, b);
    let lane: Vec<&str> = (a.lines())
        .filter(|l| l.contains("vendor honours keys") && l.contains("  worker  "))
        .filter(|l| l.contains("start") || l.contains("relay   vendor="))
        .collect();
    assert_eq!(lane.len(), 3, "{a}");
    assert!(
        lane[0].starts_with("02:00:00") && lane[0].contains("start"),
        "{a}"
    );
    assert!(lane[1].starts_with("02:00:00"), "{a}");
    assert!(lane[2].starts_with("02:05:39"), "{a}");
}

/// long-item at 1x and at 16x, side by side: one night. At 16x a worker was granted writes
/// before it said its long item began (ten rows where three were due at the 02:06:08 kill), and
/// the steps right of the item beat the heartbeat before the clock reached the dead-man's alert,
/// which then never fired; the heartbeat moved again at whichever beat a read saw first.
#[test]
fn the_long_item_scenario_prints_the_same_text_at_1x_and_16x() {
    let tmp = crate::support::tempdir();
    let night = |speed: &str| {
        reclaim_within(
            &["run", "--scenario", "long-item", "--speed", speed],
            &[("TMPDIR", tmp.path())],
            LIMIT,
        )
    };
    let (slow, fast) = thread::scope(|scope| {
        let slow = scope.spawn(|| night("1"));
        let fast = night("16");
        (slow.join().unwrap(), fast)
    });
    assert_eq!(slow.code, Some(1), "{}\n{}", slow.stdout, slow.stderr);
    let (a, b) = (
        without_pids_and_paths(&slow.stdout),
        without_pids_and_paths(&fast.stdout),
    );
    assert_eq!(a, b);
    for (clock, needles) in [
        ("02:06:00", &["in 10 steps", "heartbeat stale"][..]),
        ("02:06:04", &["in 10 steps", "heartbeat moving again"][..]),
        ("02:06:08", &["in 10 steps", "task-033  in flight"][..]),
    ] {
        let mut with_clock = vec![clock];
        with_clock.extend_from_slice(needles);
        let line = line_with(&slow, &with_clock);
        assert!(line.starts_with(clock), "{clock}: {line}");
    }
}

#[test]
fn json_of_a_scenario_gives_one_object_per_lane_with_run_keys() {
    let tmp = crate::support::tempdir();
    let run = reclaim_within(
        &["run", "--scenario", "incident", "--speed", "16", "--json"],
        &[("TMPDIR", tmp.path())],
        LIMIT,
    );
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let lanes: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lanes.len(), 2, "{}", run.stdout);
    assert_eq!(lanes[0]["lane"], "naive");
    assert_eq!(number(&lanes[0], "rows"), 312);
    assert_eq!(lanes[1]["lane"], "guarded");
    assert_eq!(number(&lanes[1], "rows"), 200);
    assert_eq!(lanes[1]["derived_status"], "ok");
}

#[test]
fn inspect_ids_names_each_duplicated_id_its_count_and_the_runs_that_wrote_it() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("x.db");
    let run = night(
        &db,
        &[
            "--strategy",
            "naive",
            "--items",
            "30",
            "--kill-at-task",
            "task-009",
        ],
    );
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let ids = reclaim_within(
        &["inspect", "--db", path_arg(&db), "--items", "30", "--ids"],
        &[],
        LIMIT,
    );
    assert_eq!(ids.code, Some(1), "{}\n{}", ids.stdout, ids.stderr);
    let listed: Vec<&str> = ids
        .stdout
        .lines()
        .filter(|l| l.starts_with("task-"))
        .collect();
    assert_eq!(listed.len(), 10, "{}", ids.stdout);
    // Each written twice, first by the killed worker, then by the restarted one.
    let first: Vec<&str> = listed[0].split("  ").collect();
    assert_eq!(first[0], "task-000");
    assert_eq!(first[1], "x2");
    let runs: Vec<&str> = first[2].split(", ").collect();
    assert_eq!(runs.len(), 2, "{}", listed[0]);
    assert_ne!(runs[0], runs[1]);
    let json = reclaim_within(
        &[
            "inspect",
            "--db",
            path_arg(&db),
            "--items",
            "30",
            "--ids",
            "--json",
        ],
        &[],
        LIMIT,
    );
    let value = json_of(&json);
    assert_eq!(value["duplicated_ids"][9]["task_id"], "task-009");
    assert_eq!(value["duplicated_ids"][9]["count"], 2);
}
