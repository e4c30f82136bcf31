//! Integration tests of `reclaim worker` and `reclaim inspect`: the real binary, real SQLite files
//! in temporary folders, real SIGKILLs at named crash points, and the rows read back independently.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension as _};
use serde_json::Value;

use crate::support::{
    BIN, Run, assert_one_line_error, assert_usage_error, count, distinct, duplicated_ids, open_ro,
    path_arg, read_bytes, reclaim, rows, snapshot, strategies, strategies_that,
};

const CRASH_POINTS: [&str; 4] = [
    "before-write",
    "after-row-commit",
    "after-commit",
    "after-heartbeat",
];

/// `reclaim worker --strategy STRATEGY --db DB --delay-ms 0 EXTRA...`
fn worker(strategy: &str, db: &Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "worker",
        "--strategy",
        strategy,
        "--db",
        path_arg(db),
        "--delay-ms",
        "0",
    ];
    args.extend_from_slice(extra);
    reclaim(&args)
}

fn spawn_worker(strategy: &str, db: &Path) -> Child {
    crate::support::reclaim_command()
        .args(["worker", "--strategy", strategy, "--db", path_arg(db)])
        .args(["--delay-ms", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn {BIN}: {e}"))
}

/// `reclaim inspect --db DB --json EXTRA...`, its stdout parsed.
fn inspect_json(db: &Path, extra: &[&str]) -> (Run, Value) {
    let mut args = vec!["inspect", "--db", path_arg(db), "--json"];
    args.extend_from_slice(extra);
    let run = reclaim(&args);
    let json = serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "inspect --json printed no JSON ({e}):\n{}\nstderr: {}",
            run.stdout, run.stderr
        )
    });
    (run, json)
}

/// A run that finished normally with exit 0, and its `start` and `done ... status=ok` lines.
fn assert_completed(run: &Run, rows: u64) {
    assert_eq!(
        run.code,
        Some(0),
        "worker failed:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    assert!(
        run.stdout
            .lines()
            .next()
            .is_some_and(|l| l.starts_with("start ")),
        "no start line first:\n{}",
        run.stdout
    );
    let expected = format!("done    rows_written={rows}  status=ok");
    assert!(
        run.done_line().is_some_and(|l| l.starts_with(&expected)),
        "no `{expected}` line:\n{}",
        run.stdout
    );
}

/// A run that died by SIGKILL at its crash point, saying where.
fn assert_killed(run: &Run, crash_at: &str) {
    assert_eq!(
        (run.code, run.signal),
        (None, Some(9)),
        "expected death by SIGKILL at {crash_at}:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    assert!(
        run.stdout.contains(&format!("crash   at={crash_at}")),
        "no crash line for {crash_at}:\n{}",
        run.stdout
    );
    assert!(run.done_line().is_none(), "a killed worker claimed done");
}

/// Queue tasks (task-000 .. task-199) with no row at all.
fn missing_ids(conn: &Connection) -> Vec<String> {
    (0..200)
        .map(|i| format!("task-{i:03}"))
        .filter(|task| {
            conn.query_row("SELECT 1 FROM records WHERE task_id = ?1", [task], |_| {
                Ok(())
            })
            .optional()
            .unwrap_or_else(|e| panic!("looking up {task}: {e}"))
            .is_none()
        })
        .collect()
}

/// (rows, lowest task id, highest task id) written under `run_id`.
fn rows_of_run(conn: &Connection, run_id: &str) -> (u64, Option<String>, Option<String>) {
    conn.query_row(
        "SELECT count(*), min(task_id), max(task_id) FROM records WHERE run_id = ?1",
        [run_id],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .unwrap_or_else(|e| panic!("rows of {run_id}: {e}"))
}

fn has_table(conn: &Connection, table: &str) -> bool {
    count(
        conn,
        &format!("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = '{table}'"),
    ) > 0
}

/// A SQLite database reclaim did not create: one table `t`, no `records`.
fn foreign_database(path: &Path) {
    let conn =
        Connection::open(path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
    conn.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (42);")
        .unwrap_or_else(|e| panic!("cannot fill {}: {e}", path.display()));
}

#[test]
fn every_strategy_writes_each_task_once_when_nothing_goes_wrong() {
    for strategy in strategies() {
        let dir = crate::support::tempdir();
        let db = dir.path().join("warehouse.db");
        let run = worker(strategy, &db, &[]);
        assert_completed(&run, 200);
        assert_eq!(run.field("start ", "strategy"), Some(strategy));
        assert_eq!(run.done_number("inserted"), Some(200), "{strategy}");

        let conn = open_ro(&db);
        assert_eq!(rows(&conn), 200, "{strategy}");
        assert_eq!(distinct(&conn), 200, "{strategy}");
        assert!(missing_ids(&conn).is_empty(), "{strategy}");
        drop(conn);

        let (inspect, json) = inspect_json(&db, &[]);
        assert_eq!(inspect.code, Some(0), "{strategy}: {}", inspect.stdout);
        assert_eq!(json["rows"], 200, "{strategy}");
        assert_eq!(json["distinct"], 200, "{strategy}");
        assert_eq!(json["duplicated_task_ids"], 0, "{strategy}");
        assert_eq!(json["missing"], 0, "{strategy}");
        assert_eq!(json["integrity_ok"], true, "{strategy}");
        assert_eq!(json["consistent"], true, "{strategy}");
        assert_eq!(json["derived_status"], "ok", "{strategy}");
        let checkpoints = if reclaim::worker::Strategy::from_name(strategy)
            .is_some_and(reclaim::worker::Strategy::checkpoints)
        {
            Value::from(200)
        } else {
            Value::Null
        };
        assert_eq!(json["checkpoints"], checkpoints, "{strategy}");
    }
}

#[test]
fn naive_rerun_after_a_kill_writes_112_rows_twice_and_still_claims_ok() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("warehouse.db");

    let first = worker("naive", &db, &["--crash-at", "task-111:after-commit"]);
    assert_killed(&first, "task-111:after-commit");
    {
        let conn = open_ro(&db);
        assert_eq!(
            rows(&conn),
            112,
            "task-000..task-111 committed before the kill"
        );
    }

    let second = worker("naive", &db, &[]);
    assert_completed(&second, 312);
    assert_eq!(second.done_number("rows_written"), Some(312));

    let conn = open_ro(&db);
    assert_eq!(rows(&conn), 312);
    assert_eq!(distinct(&conn), 200);
    let dups = duplicated_ids(&conn);
    assert_eq!(dups.len(), 112);
    assert_eq!(dups.first().map(String::as_str), Some("task-000"));
    assert_eq!(dups.last().map(String::as_str), Some("task-111"));
    drop(conn);

    let human = reclaim(&["inspect", "--db", path_arg(&db)]);
    assert_eq!(human.code, Some(1), "the rows are wrong:\n{}", human.stdout);
    assert_eq!(
        human.stdout.lines().last(),
        Some("rows=312 duplicated_task_ids=112")
    );

    let (inspect, json) = inspect_json(&db, &[]);
    assert_eq!(inspect.code, Some(1));
    assert_eq!(json["rows"], 312);
    assert_eq!(json["distinct"], 200);
    assert_eq!(json["duplicated_task_ids"], 112);
    assert_eq!(json["missing"], 0);
    assert_eq!(json["consistent"], false);
    assert_eq!(json["derived_status"], "data_wrong");
}

#[test]
fn two_commit_kill_between_row_and_checkpoint_duplicates_exactly_that_task() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("warehouse.db");

    let first = worker(
        "two-commit",
        &db,
        &["--crash-at", "task-050:after-row-commit"],
    );
    assert_killed(&first, "task-050:after-row-commit");
    {
        let conn = open_ro(&db);
        assert_eq!(rows(&conn), 51, "task-050's row committed");
        assert_eq!(
            count(&conn, "SELECT count(*) FROM checkpoints"),
            50,
            "its checkpoint did not"
        );
    }

    let second = worker("two-commit", &db, &[]);
    assert_completed(&second, 201);
    assert_eq!(second.field("resume ", "from"), Some("task-050"));

    let conn = open_ro(&db);
    assert_eq!(rows(&conn), 201);
    assert_eq!(distinct(&conn), 200);
    assert_eq!(duplicated_ids(&conn), ["task-050"]);
    drop(conn);

    let (inspect, json) = inspect_json(&db, &[]);
    assert_eq!(inspect.code, Some(1));
    assert_eq!(json["rows"], 201);
    assert_eq!(json["duplicated_task_ids"], 1);
    assert_eq!(json["derived_status"], "data_wrong");
}

/// Rows committed before a kill at task-050 at `point`: task-050's own row only once its
/// transaction has committed.
fn committed_before_kill(point: &str) -> u64 {
    if point == "before-write" { 50 } else { 51 }
}

#[test]
fn keyed_rerun_after_a_kill_anywhere_redoes_the_work_and_adds_only_what_is_missing() {
    for point in CRASH_POINTS {
        let dir = crate::support::tempdir();
        let db = dir.path().join("warehouse.db");
        let crash_at = format!("task-050:{point}");

        let first = worker("keyed", &db, &["--crash-at", &crash_at]);
        assert_killed(&first, &crash_at);
        let before = rows(&open_ro(&db));
        assert_eq!(before, committed_before_kill(point), "{point}");

        let second = worker("keyed", &db, &[]);
        assert_completed(&second, 200);
        assert!(
            !second.stdout.contains("resume"),
            "keyed keeps no checkpoint, so it cannot resume ({point}):\n{}",
            second.stdout
        );
        assert_eq!(
            second.done_number("inserted"),
            Some(200 - before),
            "{point}"
        );

        let conn = open_ro(&db);
        assert_eq!(rows(&conn), 200, "{point}");
        assert!(duplicated_ids(&conn).is_empty(), "{point}");
        assert!(missing_ids(&conn).is_empty(), "{point}");
        let first_id = first.run_id().unwrap();
        let second_id = second.run_id().unwrap();
        assert_ne!(first_id, second_id);
        let (kept, _, last_kept) = rows_of_run(&conn, first_id);
        assert_eq!(
            kept, before,
            "{point}: the first run's rows stay as they were"
        );
        assert_eq!(
            last_kept,
            Some(format!("task-{:03}", before - 1)),
            "{point}"
        );
        let (added, lowest, highest) = rows_of_run(&conn, second_id);
        assert_eq!(added, 200 - before, "{point}");
        assert_eq!(lowest, Some(format!("task-{before:03}")), "{point}");
        assert_eq!(highest.as_deref(), Some("task-199"), "{point}");
        drop(conn);

        let (inspect, json) = inspect_json(&db, &[]);
        assert_eq!(inspect.code, Some(0), "{point}: {}", inspect.stdout);
        assert_eq!(json["derived_status"], "ok", "{point}");
    }
}

#[test]
fn guarded_rerun_after_a_kill_anywhere_resumes_after_the_last_checkpoint() {
    for point in CRASH_POINTS {
        let dir = crate::support::tempdir();
        let db = dir.path().join("warehouse.db");
        let heartbeat = dir.path().join("warehouse.db.heartbeat");
        let crash_at = format!("task-050:{point}");

        let first = worker("guarded", &db, &["--crash-at", &crash_at]);
        assert_killed(&first, &crash_at);
        let before = committed_before_kill(point);
        {
            let conn = open_ro(&db);
            assert_eq!(rows(&conn), before, "{point}");
            assert_eq!(
                count(&conn, "SELECT count(*) FROM checkpoints"),
                before,
                "{point}: row and checkpoint commit together"
            );
        }
        // The heartbeat never claims more than was committed. Beats are at most one per 10 ms,
        // so at full speed it may lag the rows, except that the after-heartbeat point always
        // gets its beat.
        let beat = fs::read_to_string(&heartbeat).unwrap();
        let beat_task: u64 = beat
            .strip_prefix("task-")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{point}: unreadable heartbeat {beat:?}"));
        if point == "after-heartbeat" {
            assert_eq!(beat_task, 50, "{point}: {beat}");
        } else {
            assert!(
                beat_task < before,
                "{point}: {beat} names an uncommitted task"
            );
        }

        let second = worker("guarded", &db, &[]);
        assert_completed(&second, 200);
        let resume_from = format!("task-{before:03}");
        assert_eq!(
            second.field("resume ", "from"),
            Some(resume_from.as_str()),
            "{point}:\n{}",
            second.stdout
        );
        assert_eq!(
            second.done_number("inserted"),
            Some(200 - before),
            "{point}"
        );

        let conn = open_ro(&db);
        assert_eq!(rows(&conn), 200, "{point}");
        assert!(duplicated_ids(&conn).is_empty(), "{point}");
        assert!(missing_ids(&conn).is_empty(), "{point}");
        assert_eq!(count(&conn, "SELECT count(*) FROM checkpoints"), 200);
        let (kept, first_task, last_kept) = rows_of_run(&conn, first.run_id().unwrap());
        assert_eq!(
            kept, before,
            "{point}: tasks before the kill belong to the first run"
        );
        assert_eq!(first_task.as_deref(), Some("task-000"), "{point}");
        assert_eq!(
            last_kept,
            Some(format!("task-{:03}", before - 1)),
            "{point}"
        );
        let (added, lowest, highest) = rows_of_run(&conn, second.run_id().unwrap());
        assert_eq!(added, 200 - before, "{point}");
        assert_eq!(
            lowest,
            Some(resume_from),
            "{point}: the second run starts after the kill"
        );
        assert_eq!(highest.as_deref(), Some("task-199"), "{point}");
        drop(conn);

        let (inspect, json) = inspect_json(&db, &[]);
        assert_eq!(inspect.code, Some(0), "{point}: {}", inspect.stdout);
        assert_eq!(json["checkpoints"], 200, "{point}");
        assert_eq!(json["derived_status"], "ok", "{point}");
    }
}

#[test]
fn four_guarded_workers_at_once_share_the_queue_without_a_duplicate() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("warehouse.db");
    let children: Vec<Child> = (0..4).map(|_| spawn_worker("guarded", &db)).collect();
    let runs: Vec<Run> = children
        .into_iter()
        .map(|child| Run::from_output("guarded worker", &child.wait_with_output().unwrap()))
        .collect();

    let mut inserted = 0;
    for run in &runs {
        assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
        assert_eq!(run.done_line().map(|l| l.contains("status=ok")), Some(true));
        inserted += run.done_number("inserted").unwrap();
    }
    assert_eq!(inserted, 200, "every task inserted by exactly one worker");

    let conn = open_ro(&db);
    assert_eq!(rows(&conn), 200);
    assert_eq!(distinct(&conn), 200);
    assert!(duplicated_ids(&conn).is_empty());
    drop(conn);

    let (inspect, json) = inspect_json(&db, &[]);
    assert_eq!(inspect.code, Some(0));
    assert_eq!(json["duplicated_task_ids"], 0);
    assert_eq!(json["derived_status"], "ok");
}

#[test]
fn guarded_refuses_an_existing_records_table_without_a_unique_key() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("warehouse.db");
    Connection::open(&db)
        .unwrap()
        .execute_batch(
            "CREATE TABLE records(task_id TEXT, payload TEXT, idem_key TEXT, run_id TEXT, written_at REAL)",
        )
        .unwrap();
    let before = snapshot(dir.path());

    let run = worker("guarded", &db, &[]);
    assert_one_line_error(&run, "UNIQUE constraint on idem_key");
    assert!(run.done_line().is_none());
    assert_eq!(
        snapshot(dir.path()),
        before,
        "the file and its folder are untouched"
    );

    let conn = open_ro(&db);
    assert!(!has_table(&conn, "checkpoints"));
    assert_eq!(rows(&conn), 0);
}

#[test]
fn every_keyed_strategy_refuses_rows_keyed_in_another_form_and_touches_nothing() {
    // A warehouse whose rows carry the bare sha256 key (an earlier reclaim's form): a row written
    // now with today's key would not collide with its duplicate, so the worker must not write.
    let dir = crate::support::tempdir();
    let db = dir.path().join("warehouse.db");
    let task = reclaim::task::task_id(0);
    let body = reclaim::task::payload(0);
    let bare_sha = reclaim::task::idem_key(&task, &body)
        .strip_prefix(&format!("{task}:"))
        .unwrap()
        .to_string();
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE records(task_id TEXT NOT NULL, payload TEXT NOT NULL,
             idem_key TEXT NOT NULL UNIQUE, run_id TEXT NOT NULL, written_at REAL NOT NULL);
         CREATE TABLE checkpoints(task_id TEXT PRIMARY KEY, completed_at REAL NOT NULL);",
    )
    .unwrap();
    conn.execute(
        "INSERT INTO records VALUES (?1, ?2, ?3, 'run-1', 1.0)",
        [&task, &body, &bare_sha],
    )
    .unwrap();
    drop(conn);
    let before = snapshot(dir.path());

    for strategy in strategies_that(reclaim::worker::Strategy::unique_key) {
        let run = worker(strategy, &db, &["--items", "5"]);
        assert_one_line_error(&run, "idempotency keys of another form");
        assert!(
            run.stderr.contains("task-000"),
            "{strategy}: {}",
            run.stderr
        );
        assert_eq!(snapshot(dir.path()), before, "{strategy}: untouched");
    }
    // naive and two-commit have no unique key to rely on, so the key's form is not theirs to judge.
    let naive = worker("naive", &db, &["--items", "2"]);
    assert_eq!(naive.code, Some(0), "{}", naive.stderr);
    assert_eq!(rows(&open_ro(&db)), 3);
}

/// A map night's worker (`--wal-autocheckpoint 100`, given when the night's folder is in memory)
/// checkpoints its log every 100 pages; without it SQLite's 1,000 apply. The log a SIGKILL leaves beside the
/// database shows which, and every committed row is in the database either way.
#[test]
fn a_short_wal_keeps_the_log_a_kill_leaves_short() {
    let mut sizes = Vec::new();
    for flag in [None, Some(["--wal-autocheckpoint", "100"])] {
        let dir = crate::support::tempdir();
        let db = dir.path().join("night.db");
        let crash_at = "task-399:after-commit";
        let mut extra = vec!["--items", "400", "--supervised", "--crash-at", crash_at];
        extra.extend(flag.iter().flatten());
        let run = worker("guarded", &db, &extra);
        assert_killed(&run, crash_at);
        let wal = fs::metadata(dir.path().join("night.db-wal")).map_or(0, |m| m.len());
        let conn = open_ro(&db);
        assert_eq!(rows(&conn), 400, "{flag:?}");
        assert_eq!(distinct(&conn), 400, "{flag:?}");
        sizes.push(wal);
    }
    // 400 transactions of about four pages each: a 1,000-page log (4 MB) against about 100.
    assert!(sizes[0] > 3_000_000, "without: {sizes:?}");
    assert!(
        sizes[1] < 600_000,
        "with --wal-autocheckpoint 100: {sizes:?}"
    );
}

#[test]
fn guarded_skips_tasks_another_writer_checkpoints_while_it_runs() {
    // A guarded worker reads the checkpoints once at start, then looks again only when another
    // connection has committed (PRAGMA data_version). Here another writer finishes tasks 150..199
    // after the worker has written its first five: the worker must notice and leave them alone.
    // Gated, the worker writes only what it is granted, so "after its first five" is a fact of
    // the night, not a race against the machine's load.
    let dir = crate::support::tempdir();
    let db = dir.path().join("warehouse.db");
    let mut child = crate::support::reclaim_command()
        .args(["worker", "--strategy", "guarded", "--db", path_arg(&db)])
        .args([
            "--items",
            "200",
            "--delay-ms",
            "0",
            "--supervised",
            "--gated",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut grants = child.stdin.take().unwrap();
    writeln!(grants, "grant 5").unwrap();
    let mut conn = None;
    let wrote_five = crate::support::poll_until(Duration::from_secs(30), || {
        conn = Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)
            .ok()
            .filter(|c| c.busy_timeout(Duration::from_secs(5)).is_ok())
            .filter(|c| {
                c.query_row("SELECT count(*) FROM checkpoints", [], |r| {
                    r.get::<_, u64>(0)
                })
                .is_ok_and(|n| n >= 5)
            });
        conn.is_some()
    });
    assert!(wrote_five, "the worker never wrote its five granted items");
    let conn = conn.unwrap();
    assert_eq!(count(&conn, "SELECT count(*) FROM checkpoints"), 5);
    for index in 150..200 {
        let task = reclaim::task::task_id(index);
        let body = reclaim::task::payload(index);
        conn.execute(
            "INSERT INTO records VALUES (?1, ?2, ?3, 'other', 1.0)",
            [&task, &body, &reclaim::task::idem_key(&task, &body)],
        )
        .unwrap();
        conn.execute("INSERT INTO checkpoints VALUES (?1, 1.0)", [&task])
            .unwrap();
    }
    writeln!(grants, "grant 200").unwrap();
    drop(grants);
    let run = Run::from_output("guarded worker", &child.wait_with_output().unwrap());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.done_number("inserted"), Some(150), "{}", run.stdout);
    assert_eq!(
        count(
            &conn,
            "SELECT count(*) FROM checkpoints WHERE completed_at = 1.0"
        ),
        50,
        "the other writer's checkpoints were left as they were"
    );
    assert_eq!(rows(&conn), 200);
    assert_eq!(distinct(&conn), 200);
}

#[test]
fn a_batch_shares_its_commit_but_each_item_still_takes_its_delay() {
    // --delay-ms is the work of one item; batching saves commits, not that work. 100 items at
    // 10 ms in batches of 20: each batch begins at least 200 ms after the one before it, so the
    // fifth cannot be written before 800 ms after the first began, and the first began after
    // the worker took its start time, which its run id carries (`run-PID-MS`). Both read from
    // the data, and load can only lengthen the span; the first batch's own rows may be written
    // late (its first commit waits on the machine), so their stamps are no anchor.
    let dir = crate::support::tempdir();
    for strategy in strategies_that(reclaim::worker::Strategy::batches) {
        let db = dir.path().join(format!("{strategy}.db"));
        let run = reclaim(&[
            "worker",
            "--strategy",
            strategy,
            "--db",
            path_arg(&db),
            "--items",
            "100",
            "--delay-ms",
            "10",
            "--batch",
            "20",
        ]);
        assert_eq!(run.code, Some(0), "{strategy}: {}", run.stderr);
        let conn = open_ro(&db);
        assert_eq!(rows(&conn), 100, "{strategy}");
        let (run_id, last): (String, f64) = conn
            .query_row(
                "SELECT min(run_id), max(written_at) FROM records",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        let started_ms: f64 = (run_id.rsplit('-').next())
            .and_then(|ms| ms.parse().ok())
            .unwrap_or_else(|| panic!("{strategy}: run id {run_id:?} carries no start time"));
        let span = last - started_ms / 1000.0;
        assert!(
            span >= 0.8,
            "{strategy}: 100 items at 10 ms in batches of 20 were written {span:.3} s after the \
             worker's start"
        );
    }
}

#[test]
fn an_unknown_strategy_is_a_usage_error_that_touches_nothing() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("other.db");
    foreign_database(&db);
    let before = snapshot(dir.path());

    let run = worker("exactly-once", &db, &[]);
    assert_usage_error(&run, "--strategy");
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn an_item_count_out_of_range_is_a_usage_error_that_touches_nothing() {
    for items in ["0", "100000001"] {
        let dir = crate::support::tempdir();
        let db = dir.path().join("other.db");
        foreign_database(&db);
        let before = snapshot(dir.path());

        let run = worker("guarded", &db, &["--items", items]);
        assert_usage_error(&run, "--items");
        assert_eq!(snapshot(dir.path()), before, "--items {items}");

        let run = reclaim(&["inspect", "--db", path_arg(&db), "--items", items]);
        assert_usage_error(&run, "--items");
        assert_eq!(snapshot(dir.path()), before, "inspect --items {items}");
    }
}

#[test]
fn a_db_in_a_missing_folder_is_one_line_and_creates_nothing() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("no-such-folder").join("warehouse.db");
    let run = worker("guarded", &db, &[]);
    assert_one_line_error(&run, "no-such-folder");
    assert!(fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn a_db_in_a_read_only_folder_is_one_line_and_creates_nothing() {
    let dir = crate::support::tempdir();
    let locked = dir.path().join("locked");
    fs::create_dir(&locked).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o555)).unwrap();

    // Root writes through a read-only mode, so the check means nothing there.
    let probe = locked.join("probe");
    if fs::write(&probe, b"probe").is_ok() {
        println!("skipped: this user can write into a 0555 folder (root?), so it is not read-only");
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
        return;
    }

    let run = worker("guarded", &locked.join("warehouse.db"), &[]);
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
    assert_one_line_error(&run, "not writable");
    assert!(fs::read_dir(&locked).unwrap().next().is_none());
}

#[test]
fn a_text_file_is_not_a_database_to_either_command() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("notes.db");
    fs::write(&db, "dear diary,\ntoday the batch job ran twice\n").unwrap();
    let before = snapshot(dir.path());

    let run = worker("guarded", &db, &[]);
    assert_one_line_error(&run, "not a SQLite database");
    assert_eq!(snapshot(dir.path()), before, "worker");

    let run = reclaim(&["inspect", "--db", path_arg(&db)]);
    assert_one_line_error(&run, "not a SQLite database");
    assert_eq!(snapshot(dir.path()), before, "inspect");
}

#[test]
fn a_database_with_someone_elses_table_is_left_alone() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("other.db");
    foreign_database(&db);
    let before = snapshot(dir.path());

    for strategy in strategies() {
        let run = worker(strategy, &db, &[]);
        assert_one_line_error(&run, "other.db");
        assert_eq!(snapshot(dir.path()), before, "{strategy}");
    }

    let run = reclaim(&["inspect", "--db", path_arg(&db)]);
    assert_one_line_error(&run, "no records table");
    assert_eq!(snapshot(dir.path()), before, "inspect");

    let conn = open_ro(&db);
    assert_eq!(count(&conn, "SELECT x FROM t"), 42);
}

#[test]
fn inspect_of_a_missing_file_is_one_line_and_creates_nothing() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("never-written.db");
    let run = reclaim(&["inspect", "--db", path_arg(&db)]);
    assert_one_line_error(&run, "does not exist");
    assert!(fs::read_dir(dir.path()).unwrap().next().is_none());
}

/// Builds a real warehouse with `strategy`, then overwrites one page in its middle with 0xFF.
fn corrupt_warehouse(dir: &Path, strategy: &str) -> PathBuf {
    let db = dir.join("warehouse.db");
    let run = worker(strategy, &db, &["--items", "3000"]);
    assert_eq!(run.code, Some(0), "{strategy}: {}", run.stderr);
    // A clean exit checkpoints the WAL, so everything lives in the main file.
    assert!(!dir.join("warehouse.db-wal").exists(), "{strategy}");
    let mut bytes = read_bytes(&db);
    assert!(bytes.len() > 16 * 4096, "{strategy}: warehouse too small");
    bytes[8192..8192 + 4096].fill(0xFF);
    fs::write(&db, &bytes).unwrap_or_else(|e| panic!("cannot corrupt {}: {e}", db.display()));
    db
}

/// `inspect` on a corrupt file: an error line, or a report whose integrity check failed, never
/// a clean bill of health, and never a change to the file.
fn assert_inspect_sees_corruption(db: &Path) {
    let before = read_bytes(db);
    let run = reclaim(&["inspect", "--db", path_arg(db), "--items", "3000", "--json"]);
    match run.code {
        Some(2) => assert_one_line_error(&run, "corrupt"),
        Some(1) => {
            let json: Value = serde_json::from_str(&run.stdout)
                .unwrap_or_else(|e| panic!("inspect --json printed no JSON ({e}): {}", run.stdout));
            assert_eq!(json["integrity_ok"], false, "{}", run.stdout);
            assert_eq!(json["derived_status"], "corrupt", "{}", run.stdout);
        }
        other => panic!(
            "inspect of a corrupt file exited {other:?}:\n{}\n{}",
            run.stdout, run.stderr
        ),
    }
    assert!(read_bytes(db) == before, "inspect changed the corrupt file");
}

#[test]
fn a_corrupt_warehouse_is_refused_by_worker_and_flagged_by_inspect() {
    let dir = crate::support::tempdir();
    let db = corrupt_warehouse(dir.path(), "guarded");
    let corrupted = read_bytes(&db);

    assert_inspect_sees_corruption(&db);

    let run = worker("guarded", &db, &["--items", "3000"]);
    assert_one_line_error(&run, "corrupt");
    assert!(run.done_line().is_none());
    assert!(
        read_bytes(&db) == corrupted,
        "the worker wrote to a corrupt file"
    );
}

#[test]
fn a_corrupt_warehouse_is_refused_by_every_strategy_without_a_write() {
    for strategy in strategies() {
        let dir = crate::support::tempdir();
        let db = corrupt_warehouse(dir.path(), strategy);
        let corrupted = read_bytes(&db);
        assert_inspect_sees_corruption(&db);

        let run = worker(strategy, &db, &["--items", "3000"]);
        assert_eq!(
            run.code,
            Some(2),
            "{strategy}:\n{}\n{}",
            run.stdout,
            run.stderr
        );
        assert!(
            read_bytes(&db) == corrupted,
            "{strategy}: the worker wrote to a corrupt file ({})",
            run.stderr.trim()
        );
    }
}

#[test]
fn a_guarded_run_leaves_a_heartbeat_naming_its_last_task() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("warehouse.db");
    let run = worker("guarded", &db, &[]);
    assert_completed(&run, 200);

    let beat = fs::read_to_string(dir.path().join("warehouse.db.heartbeat")).unwrap();
    let words: Vec<&str> = beat.split_whitespace().collect();
    assert_eq!(words.len(), 3, "{beat:?}");
    assert_eq!(words[0], "task-199");
    assert!(words[1].parse::<f64>().is_ok_and(|t| t > 0.0), "{beat:?}");
    assert_eq!(words[2], format!("pid={}", run.pid().unwrap()));
    // Written atomically: no temporary file is left beside it.
    let leftovers: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
