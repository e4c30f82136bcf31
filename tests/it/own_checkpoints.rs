//! A job's checkpoint table as named (`--checkpoint-table`, `--checkpoint-key`): a key column
//! it lacks stops the night at the first look, and a progress table of no per-item keys (a
//! cursor) places no kill, said unplaced with its reason. Each database is read back with SQLite.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::{Run, count, open_ro, path_arg, reclaim_within};

const LIMIT: Duration = Duration::from_secs(120);

/// A job that keeps its progress as a cursor: `progress(job, last_done)`, one row for the whole
/// job, committed with each record in one transaction.
const CURSOR_JOB: &str = r#"
import os, sqlite3, time
db = sqlite3.connect(os.environ["RECLAIM_DB"], isolation_level=None)
db.execute("CREATE TABLE IF NOT EXISTS records(task_id TEXT PRIMARY KEY, payload TEXT)")
db.execute("CREATE TABLE IF NOT EXISTS progress(job TEXT PRIMARY KEY, last_done INTEGER)")
items = int(os.environ["RECLAIM_ITEMS"])
row = db.execute("SELECT last_done FROM progress WHERE job = 'nightly'").fetchone()
for i in range(row[0] + 1 if row else 0, items):
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO records VALUES (?, 'x')", ("task-%03d" % i,))
    db.execute("INSERT INTO progress VALUES ('nightly', ?) "
               "ON CONFLICT(job) DO UPDATE SET last_done = excluded.last_done", (i,))
    db.execute("COMMIT")
    time.sleep(0.02)
print("done status=ok")
"#;

fn cursor_night(dir: &Path, extra: &[&str]) -> (Run, PathBuf) {
    let job = dir.join("cursor_job.py");
    std::fs::write(&job, CURSOR_JOB).unwrap_or_else(|e| panic!("write: {e}"));
    let command = format!("{} {}", crate::support::python3(), job.display());
    let db = dir.join("warehouse.db");
    let mut args = vec![
        "run",
        "--exec",
        &command,
        "--items",
        "30",
        "--kill-at-rows",
        "10",
        "--restart-delay",
        "0",
        "--checkpoint-table",
        "progress",
        "--db",
        path_arg(&db),
    ];
    args.extend_from_slice(extra);
    (reclaim_within(&args, &[], LIMIT), db)
}

#[test]
fn a_checkpoint_key_the_table_lacks_stops_the_night_at_the_first_look() {
    let dir = crate::support::tempdir();
    // --checkpoint-key defaults to --key (task_id), which progress(job, last_done) lacks.
    let (run, db) = cursor_night(dir.path(), &[]);
    assert_eq!(run.code, Some(2), "{}\n{}", run.stdout, run.stderr);
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].contains(
            "checkpoint table progress has no column task_id (--checkpoint-key); its columns are job, last_done"
        ),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    // Stopped, not run whole: the worker killed, no restart, no verdict; far fewer rows than
    // the queue (the job's first rows at most).
    assert!(
        run.stdout.contains("reclaim stopped the night") && run.stdout.contains("killed pid"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("verdict"), "{}", run.stdout);
    assert!(!run.stdout.contains("attempt 2"), "{}", run.stdout);
    let rows = count(&open_ro(&db), "SELECT count(*) FROM records");
    assert!(rows < 30, "{rows} rows: the night ran whole");

    // The same for a --key the row table lacks.
    let other = crate::support::tempdir();
    let (run, _) = cursor_night(
        other.path(),
        &["--key", "no_such_col", "--checkpoint-key", "job"],
    );
    assert_eq!(run.code, Some(2), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "table records has no column no_such_col (--key); its columns are task_id, payload"
        ),
        "{}",
        run.stderr
    );
    assert!(!run.stdout.contains("verdict"), "{}", run.stdout);
}

#[test]
fn a_cursor_progress_table_places_no_kill_and_says_why() {
    let dir = crate::support::tempdir();
    let (run, db) = cursor_night(dir.path(), &["--checkpoint-key", "job"]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let windows = run
        .stdout
        .lines()
        .find(|l| l.starts_with("windows"))
        .unwrap_or_else(|| panic!("no windows line:\n{}", run.stdout));
    // Row and cursor commit together: a kill there is not after-row-commit, and reclaim cannot
    // tell (the cursor names no item), so it is said unplaced, with the reason.
    assert!(
        windows.contains("1 kill after a commit, not placed: the checkpoint table's keys are not keys of the queue"),
        "{windows}"
    );
    assert!(!windows.contains("after-row-commit="), "{windows}");
    assert!(!windows.contains("after-commit="), "{windows}");
    let conn = open_ro(&db);
    assert_eq!(count(&conn, "SELECT count(*) FROM records"), 30);
    assert_eq!(count(&conn, "SELECT count(*) FROM progress"), 1);
    // The same facts in --json: the count, and why.
    let again = crate::support::tempdir();
    let (run, _) = cursor_night(again.path(), &["--checkpoint-key", "job", "--json"]);
    let json = crate::support::json_of(&run);
    let windows = &json["kills_in_window"];
    assert_eq!(windows["after-a-commit-unplaced"], 1, "{json}");
    assert_eq!(windows["unplaced-checkpoints-not-keyed"], true, "{json}");
    assert_eq!(windows["after-row-commit"], 0, "{json}");
}

/// prove guesses a table named `checkpoints` keyed by `--key` when none is named: a job's own
/// table of that name and another shape is not refused, nor read as checkpoints.
#[test]
fn prove_leaves_a_table_named_checkpoints_of_another_shape_alone() {
    let dir = crate::support::tempdir();
    let job = dir.path().join("own_checkpoints_job.py");
    std::fs::write(&job, CURSOR_JOB.replace("progress", "checkpoints"))
        .unwrap_or_else(|e| panic!("write: {e}"));
    let command = format!("{} {}", crate::support::python3(), job.display());
    let args = [
        "prove", "--exec", &command, "--items", "20", "--seed", "3", "--kills", "1",
    ];
    let run = reclaim_within(&args, &[("TMPDIR", dir.path())], Duration::from_secs(300));
    assert_ne!(run.code, Some(2), "{}\n{}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("has no column"), "{}", run.stderr);
    assert!(run.stdout.contains("outcome: "), "{}", run.stdout);
}
