//! Queries reclaim runs for a user: a time limit, a stop on a signal, one line naming the
//! query; and the setup's trial run reaches no other file.

use std::fs;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::tempdir;
use crate::support::{assert_one_line_error, path_arg, reclaim_in_dir};

/// A bound for a hang: what is under test is what stopped the query.
const LIMIT: Duration = Duration::from_secs(60);

const ENDLESS: &str = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n) \
                       SELECT max(i), max(i) FROM n";

fn guarded_job() -> String {
    format!(
        "{py} {}/examples/guarded_job.py",
        env!("CARGO_MANIFEST_DIR"),
        py = crate::support::python3()
    )
}

fn two_hundred_rows(path: &std::path::Path) {
    let conn = rusqlite::Connection::open(path).unwrap_or_else(|e| panic!("{e}"));
    conn.execute_batch(
        "CREATE TABLE records(task_id TEXT); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL \
         SELECT i+1 FROM n WHERE i<200) INSERT INTO records SELECT 'task-'||i FROM n;",
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn the_setup_trial_cannot_touch_another_database() {
    let tmp = tempdir();
    let other = tmp.path().join("other.db");
    two_hundred_rows(&other);
    let before = fs::read(&other).unwrap_or_default();
    let sql = format!(
        "ATTACH '{}' AS v; DELETE FROM v.records; CREATE TABLE records(task_id TEXT);",
        other.display()
    );
    let run = reclaim_in_dir(
        tmp.path(),
        &[
            "run",
            "--exec",
            &guarded_job(),
            "--setup-sql",
            &sql,
            "--items",
            "3",
        ],
        Duration::from_secs(30),
    );
    assert_one_line_error(&run, "--setup-sql");
    assert_eq!(
        fs::read(&other).unwrap_or_default(),
        before,
        "the other database changed"
    );
}

#[test]
fn an_endless_setup_sql_is_stopped_at_its_limit_with_one_line() {
    let tmp = tempdir();
    let sql = format!("CREATE TABLE t AS {ENDLESS}");
    let run = reclaim_in_dir(
        tmp.path(),
        &["run", "--exec", &guarded_job(), "--setup-sql", &sql],
        Duration::from_secs(40),
    );
    assert_one_line_error(&run, "was stopped after");
}

/// CPU seconds `pid` has used (user + system), from /proc.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse().ok())
        .collect();
    fields.iter().sum::<u64>() as f64 / 100.0
}

#[test]
fn an_endless_count_sql_is_stopped_by_sigterm_not_by_its_limit() {
    let tmp = tempdir();
    let mut child = crate::support::reclaim_command()
        .args([
            "run",
            "--exec",
            &guarded_job(),
            "--items",
            "3",
            "--count-sql",
            ENDLESS,
            "--db",
            path_arg(&tmp.path().join("w.db")),
        ])
        .current_dir(tmp.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    // Busy in the query: 0.2 s of CPU spent, four times what reclaim spends before it, and
    // soon enough for the signal to come inside the query's 10 s of real time even at a tenth
    // of a core (at load 15 it had 0.62 s of CPU in those 10 s).
    let busy = crate::support::poll_until(Duration::from_secs(10), || {
        cpu_seconds(child.id()) >= 0.2 || child.try_wait().ok().flatten().is_some()
    });
    assert!(
        busy && child.try_wait().ok().flatten().is_none(),
        "reclaim was not busy in the query (ended, or 0.2 s of CPU not reached)"
    );
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let _ = kill(pid, Signal::SIGTERM);
    // However loaded the machine, what stopped the query is in what reclaim says: the signal,
    // not the limit it would otherwise have run to (`was stopped after 10 s`, and the night
    // stopped because `--count-sql took its whole time limit`).
    let run = crate::support::finish_within(child, "reclaim run after SIGTERM", LIMIT);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert_one_line_error(&run, "stopped by SIGTERM");
    assert!(
        !run.stdout.contains("time limit") && !run.stderr.contains("stopped after"),
        "the query ran to its limit:\n{}{}",
        run.stdout,
        run.stderr
    );
}

#[test]
fn a_count_sql_that_takes_its_whole_limit_ends_the_night_at_once() {
    let tmp = tempdir();
    let run = reclaim_in_dir(
        tmp.path(),
        &[
            "run",
            "--exec",
            &guarded_job(),
            "--items",
            "3",
            "--count-sql",
            ENDLESS,
        ],
        Duration::from_secs(60),
    );
    assert_one_line_error(&run, "was stopped after 10 s");
    // By the observer, which stops the night (the one error line is on stderr).
    assert!(
        run.stdout
            .contains("reclaim stopped the night: --count-sql took its whole time limit"),
        "{}",
        run.stdout
    );
}
