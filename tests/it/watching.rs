//! Watching never changes the night: a job on SQLite's default rollback journal and no busy
//! timeout (the `sqlite3` shell once per item, `examples/sqlite3_shell_job.sh`) fails its commit
//! with "database is locked" on any reader's lock; reclaim reads its database without one, so
//! the job finishes undisturbed, with and without kills, and its rows are what `sqlite3` reads.

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::support::{has_sqlite3, json_of, number, path_arg, reclaim_in_dir, rows_by_sqlite3};

/// A hang guard, not a timing assertion: each night takes two or three seconds.
const LIMIT: Duration = Duration::from_secs(120);
/// Items per night: enough commits that the old reads, which locked, failed one of them in
/// most nights.
const ITEMS: u64 = 150;

#[test]
fn a_sqlite3_shell_job_without_a_busy_timeout_never_fails_on_reclaims_reads() {
    if !has_sqlite3() {
        eprintln!("skipped: the job is written with the sqlite3 shell, which is not installed");
        return;
    }
    let job = format!(
        "sh {}",
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/sqlite3_shell_job.sh")
            .display()
    );
    let tmp = crate::support::tempdir();
    let items = ITEMS.to_string();
    let count = "SELECT count(*), count(DISTINCT task_id) FROM records";
    let nights: [(&str, &[&str]); 3] = [
        ("plain", &["--checkpoint-table", "checkpoints"]),
        (
            "killed",
            &[
                "--checkpoint-table",
                "checkpoints",
                "--kills",
                "3",
                "--kill-rows",
                "5..40",
                "--seed",
                "39",
            ],
        ),
        // `--count-sql` runs on reclaim's reads too: counted whole, under the same rule.
        ("counted", &["--count-sql", count]),
    ];
    for (name, extra) in nights {
        let dir = tmp.path().join(name);
        fs::create_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
        let db = dir.join("warehouse.db");
        let mut args = vec![
            "run",
            "--exec",
            &job,
            "--db",
            path_arg(&db),
            "--items",
            &items,
            "--json",
        ];
        args.extend_from_slice(extra);
        let run = reclaim_in_dir(&dir, &args, LIMIT);
        let said = format!("{name}: {}\n{}", run.stdout, run.stderr);
        assert!(
            !said.contains("database is locked"),
            "the job's commit failed on a lock: {said}"
        );
        assert_eq!(run.code, Some(0), "{said}");
        let json = json_of(&run);
        assert_eq!(json["derived_status"], "ok", "{said}");
        assert_eq!(
            (number(&json, "rows"), number(&json, "distinct")),
            (ITEMS, ITEMS),
            "{said}"
        );
        // Every restart was a kill's: the job never died on its own.
        assert_eq!(number(&json, "restarts"), number(&json, "kills"), "{said}");
        if name == "killed" {
            assert!(number(&json, "kills") >= 1, "{said}");
        }
        assert_eq!(
            rows_by_sqlite3(&db, "records", "task_id"),
            Some((ITEMS, ITEMS)),
            "{said}"
        );
    }
}

#[test]
fn a_lock_the_job_takes_itself_is_said_not_to_be_reclaims() {
    if !has_sqlite3() {
        eprintln!("skipped: the job is written with the sqlite3 shell, which is not installed");
        return;
    }
    // The job's own second process holds the write lock while its first commits, with no busy
    // timeout: "database is locked", which reclaim did not cause and says so beside it.
    let job = r#"set -e
sqlite3 "$RECLAIM_DB" "CREATE TABLE IF NOT EXISTS records(task_id TEXT UNIQUE); INSERT OR IGNORE INTO records VALUES ('task-000');"
if [ "$RECLAIM_ATTEMPT" = 1 ]; then
  (echo 'BEGIN EXCLUSIVE;'; echo "SELECT 'held';"; sleep 2) | sqlite3 "$RECLAIM_DB" > held &
  until grep -q held held 2>/dev/null; do sleep 0.02; done
fi
sqlite3 "$RECLAIM_DB" "INSERT OR IGNORE INTO records VALUES ('task-001');"
wait"#;
    let tmp = crate::support::tempdir();
    let db = tmp.path().join("warehouse.db");
    let args = [
        "run",
        "--exec",
        job,
        "--db",
        path_arg(&db),
        "--items",
        "2",
        "--json",
    ];
    let run = reclaim_in_dir(tmp.path(), &args, LIMIT);
    let json = json_of(&run);
    let timeline = json["timeline"].to_string();
    assert!(
        timeline.contains(
            "database is locked (5)  [reclaim held no lock on the database (its reads take none), so the lock was the job's own or another process's]"
        ),
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    assert_eq!(json["derived_status"], "ok", "{}", run.stdout);
}
