//! Crash points in an engineer's own job (`examples/orders_job.py` with `reclaim_point.py`),
//! and its kill-timing map (`map --exec`): each night's cell checked against its database with
//! SQLite, and against `run --exec --crash-at` for the same cell.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{BIN, Run, count, json_of, number, open_ro};

fn example(name: &str) -> String {
    let job = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    format!("{} {}", crate::support::python3(), job.display())
}

/// Every `run` here keeps its folder (`--keep always`; a `--db` is kept anyway): each test reads
/// the night's files after it, whatever its verdict.
fn reclaim_with(env: &[(&str, &str)], args: &[&str]) -> Run {
    let keep: &[&str] = if args.first() == Some(&"run") && !args.contains(&"--db") {
        &["--keep", "always"]
    } else {
        &[]
    };
    let output = crate::support::reclaim_command()
        .args(args)
        .args(keep)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot run reclaim: {e}"));
    Run::from_output(&args.join(" "), &output)
}

const ORDERS: [&str; 6] = [
    "--table",
    "orders",
    "--key",
    "order_id",
    "--key-format",
    "ord-%05d",
];

/// Keys written more than once in a night's `orders`, read with SQLite.
fn duplicated_orders(db: &Path) -> u64 {
    count(
        &open_ro(db),
        "SELECT count(*) FROM (SELECT 1 FROM orders GROUP BY order_id HAVING count(*) > 1)",
    )
}

#[test]
fn a_crash_at_a_point_the_job_announces_is_a_kill_from_outside_right_there() {
    let job = example("orders_job.py");
    let two_commit = [("ORDERS_MODE", "two-commit")];
    let mut args = vec!["run", "--exec", &job];
    args.extend(ORDERS);
    args.extend([
        "--items",
        "20",
        "--crash-at",
        "ord-00007:after-row-commit",
        "--json",
    ]);
    let run = reclaim_with(&two_commit, &args);
    let json = json_of(&run);
    assert_eq!(run.code, Some(1), "{json}");
    assert_eq!(number(&json, "kills"), 1, "{json}");
    assert_eq!(json["kills_in_window"]["after-row-commit"], 1, "{json}");
    assert_eq!(json["points_announced"]["after-row-commit"], 21, "{json}");
    let db = PathBuf::from(json["db"].as_str().unwrap_or_default());
    assert_eq!(duplicated_orders(&db), 1);
    assert_eq!(
        count(
            &open_ro(&db),
            "SELECT count(*) FROM orders WHERE order_id = 'ord-00007'"
        ),
        2
    );
    let timeline = json["timeline"].to_string();
    assert!(
        timeline.contains("crash point after-row-commit reached"),
        "{timeline}"
    );

    // A point the job never announces is said not reached, never a silent ok.
    let mut args = vec!["run", "--exec", &job];
    args.extend(ORDERS);
    args.extend(["--items", "10", "--crash-at", "ord-00003:after-charge"]);
    let run = reclaim_with(&[], &args);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("not fired    the crash at ord-00003:after-charge never fired: the job never announced a point of that name"),
        "{}",
        run.stdout
    );
    // A key outside the queue is refused before anything starts.
    let mut args = vec!["run", "--exec", &job];
    args.extend(ORDERS);
    args.extend(["--items", "10", "--crash-at", "ord-00010:after-commit"]);
    let run = reclaim_with(&[], &args);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("not a key of the queue"),
        "{}",
        run.stderr
    );
}

#[test]
fn map_exec_finds_exactly_the_after_row_commit_cells_duplicated_and_agrees_with_run() {
    let job = example("orders_job.py");
    let two_commit = [("ORDERS_MODE", "two-commit")];
    let mut args = vec!["map", "--exec", &job];
    args.extend(ORDERS);
    args.extend(["--items", "8", "--json", "--keep"]);
    let run = reclaim_with(&two_commit, &args);
    let json = json_of(&run);
    assert_eq!(run.code, Some(1), "{json}");
    let points: Vec<&str> = json["points"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| p.as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        points,
        ["after-commit", "after-row-commit", "before-write"],
        "{json}"
    );
    let cells = json["cells"].as_array().cloned().unwrap_or_default();
    assert_eq!(cells.len(), 24, "{json}");
    for cell in &cells {
        let expected = u64::from(cell["band"] == "after-row-commit");
        assert_eq!(number(cell, "duplicated_task_ids"), expected, "{cell}");
        assert_eq!(number(cell, "missing"), 0, "{cell}");
        assert_eq!(cell["killed"], true, "{cell}");
    }
    // Three cells by hand: the database of the night, and the same night through run.
    for (band, key) in [
        ("after-row-commit", "ord-00000"),
        ("after-row-commit", "ord-00005"),
        ("after-commit", "ord-00003"),
    ] {
        let cell = cells
            .iter()
            .find(|c| c["band"] == band && c["at"] == key)
            .unwrap_or_else(|| panic!("no cell {band} {key}"));
        let db = PathBuf::from(cell["db"].as_str().unwrap_or_default());
        assert_eq!(
            duplicated_orders(&db),
            number(cell, "duplicated_task_ids"),
            "{cell}"
        );
        let crash = format!("{key}:{band}");
        let mut args = vec!["run", "--exec", &job];
        args.extend(ORDERS);
        args.extend(["--items", "8", "--crash-at", &crash, "--json"]);
        let run = reclaim_with(&two_commit, &args);
        let night = json_of(&run);
        assert_eq!(
            (
                number(&night, "rows"),
                number(&night, "duplicated_task_ids")
            ),
            (number(cell, "rows"), number(cell, "duplicated_task_ids")),
            "{night}\n{cell}"
        );
    }
    if let Some(kept) = json["kept"].as_str() {
        let _ = std::fs::remove_dir_all(kept);
    }
}

#[test]
fn map_exec_of_a_job_without_points_kills_after_every_row_count() {
    let job = example("naive_job.py");
    let run = reclaim_with(
        &[],
        &["map", "--exec", &job, "--items", "6", "--json", "--keep"],
    );
    let json = json_of(&run);
    assert_eq!(run.code, Some(1), "{json}");
    assert_eq!(json["points"].as_array().map(Vec::len), Some(0), "{json}");
    let cells = json["cells"].as_array().cloned().unwrap_or_default();
    assert_eq!(cells.len(), 6, "{json}");
    for (k, cell) in (1..).zip(&cells) {
        // A kill after k rows lands on row k or, the job not being held, a few rows past it on
        // a loaded machine (the cell says where); the restart at item zero writes again every
        // row committed before it landed.
        let dup = number(cell, "duplicated_task_ids");
        let landed = number(cell, "landed_at_rows");
        assert!(landed >= k, "after {k} rows: {cell}");
        assert_eq!(dup, landed, "after {k} rows: {cell}");
        let db = PathBuf::from(cell["db"].as_str().unwrap_or_default());
        let conn = open_ro(&db);
        let records =
            "SELECT count(*) FROM (SELECT 1 FROM records GROUP BY task_id HAVING count(*) > 1)";
        assert_eq!(count(&conn, records), dup, "{cell}");
    }
    if let Some(kept) = json["kept"].as_str() {
        let _ = std::fs::remove_dir_all(kept);
    }
}

#[test]
fn an_own_jobs_emails_are_counted_at_its_vendor_and_killed_between_send_and_commit() {
    let mut base: Vec<&str> = Vec::new();
    base.extend(ORDERS);
    base.extend(["--items", "60", "--kill-at-message", "30", "--json"]);
    for (job, vendor, code, duplicated, window) in [
        ("email_job.py", "honour", 1, 1, "after-send"),
        ("outbox_job.py", "honour", 0, 0, "after-relay-send"),
        ("outbox_job.py", "ignore", 1, 1, "after-relay-send"),
    ] {
        let command = example(job);
        let mut args = vec!["run", "--exec", &command, "--vendor", vendor];
        args.extend(&base);
        let run = reclaim_with(&[], &args);
        let json = json_of(&run);
        assert_eq!(run.code, Some(code), "{job} {vendor}: {json}");
        assert_eq!(
            number(&json, "messages_duplicated"),
            duplicated,
            "{job} {vendor}: {json}"
        );
        assert_eq!(
            number(&json, "messages_missing"),
            0,
            "{job} {vendor}: {json}"
        );
        assert_eq!(json["kills_in_window"][window], 1, "{job} {vendor}: {json}");
        assert_eq!(json["derived_status"], "ok", "{job} {vendor}: {json}");
        // The vendor's own database, read with SQLite: one delivery per order, one twice.
        let db = PathBuf::from(json["db"].as_str().unwrap_or_default());
        let vendor_db = db.with_file_name("warehouse.vendor.sqlite");
        let twice = count(
            &open_ro(&vendor_db),
            "SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE outcome = 'sent' GROUP BY task_id HAVING count(*) > 1)",
        );
        assert_eq!(twice, duplicated, "{job} {vendor}");
    }
    // A job that ignores its vendor: the verdict says no message arrived.
    let command = example("orders_job.py");
    let mut args = vec!["run", "--exec", &command, "--vendor"];
    args.extend(ORDERS);
    args.extend(["--items", "10", "--json"]);
    let run = reclaim_with(&[], &args);
    let json = json_of(&run);
    assert_eq!(run.code, Some(1), "{json}");
    assert!(
        json["messages_verdict"]
            .as_str()
            .is_some_and(|v| v.contains("no message arrived")),
        "{json}"
    );
}

/// `email_job.py` in a few lines, with no relay: each notice emailed, then committed with
/// its checkpoint; with `SKIP=1` the items with `index % 7 == 3` send nothing, so the rows
/// outnumber the messages while a send waits.
const SOME_SENDS_JOB: &str = r#"import json, os, sqlite3, time, urllib.request
with open(os.environ["RECLAIM_KEYS_FILE"]) as f:
    queue = [line.rstrip("\n") for line in f if line.strip()]
db = sqlite3.connect(os.environ["RECLAIM_DB"], timeout=30, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE IF NOT EXISTS notices(notice_id TEXT PRIMARY KEY)")
db.execute("CREATE TABLE IF NOT EXISTS sent(notice_id TEXT PRIMARY KEY)")
done = {row[0] for row in db.execute("SELECT notice_id FROM sent")}
for index, key in enumerate(queue):
    if key in done:
        continue
    if os.environ["SKIP"] == "0" or index % 7 != 3:
        body = json.dumps({"task": key, "text": "notice %s" % key}).encode()
        request = urllib.request.Request(
            os.environ["RECLAIM_VENDOR_URL"], data=body, method="POST",
            headers={"Content-Type": "application/json"},
        )
        urllib.request.urlopen(request, timeout=60).read()
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO notices VALUES (?)", (key,))
    db.execute("INSERT INTO sent VALUES (?)", (key,))
    db.execute("COMMIT")
"#;

#[test]
fn a_kill_at_a_message_whose_row_did_not_commit_is_after_send_even_when_some_items_send_nothing() {
    let tmp = crate::support::tempdir();
    let job = tmp.path().join("notices.py");
    std::fs::write(&job, SOME_SENDS_JOB).unwrap_or_else(|e| panic!("{e}"));
    let command = format!("{} {}", crate::support::python3(), job.display());
    for skip in ["0", "1"] {
        let args = [
            "run",
            "--exec",
            &command,
            "--table",
            "notices",
            "--key",
            "notice_id",
            "--key-format",
            "N#%03d",
            "--items",
            "40",
            "--vendor",
            "--kill-at-message",
            "10",
            "--json",
        ];
        let run = reclaim_with(&[("SKIP", skip)], &args);
        let json = json_of(&run);
        assert_eq!(run.code, Some(1), "SKIP={skip}: {json}");
        // The vendor's own database: the tenth message's key, delivered twice.
        let db = PathBuf::from(json["db"].as_str().unwrap_or_default());
        let vendor = open_ro(&db.with_file_name("warehouse.vendor.sqlite"));
        let tenth: String = vendor
            .query_row(
                "SELECT task_id FROM deliveries ORDER BY id LIMIT 1 OFFSET 9",
                [],
                |r| r.get(0),
            )
            .unwrap_or_else(|e| panic!("SKIP={skip}: {e}"));
        let twice = count(
            &vendor,
            &format!(
                "SELECT count(*) FROM deliveries WHERE task_id = '{tenth}' AND outcome = 'sent'"
            ),
        );
        assert_eq!(twice, 2, "SKIP={skip} {tenth}: {json}");
        assert_eq!(
            number(&json, "messages_duplicated"),
            1,
            "SKIP={skip}: {json}"
        );
        // Between that send and its commit, with no relay to send after a commit.
        assert_eq!(
            json["kills_in_window"]["after-send"], 1,
            "SKIP={skip}: {json}"
        );
        assert_eq!(
            json["kills_in_window"]["after-relay-send"]
                .as_u64()
                .unwrap_or(0),
            0,
            "SKIP={skip}: {json}"
        );
    }
}

#[test]
fn shrink_of_a_failing_exec_recording_gives_a_scenario_that_fails_again() {
    let tmp = crate::support::tempdir();
    let job = format!("ORDERS_MODE=two-commit {}", example("orders_job.py"));
    let record = tmp.path().join("night.jsonl");
    let record_arg = record.to_string_lossy().into_owned();
    let mut args = vec!["run", "--exec", &job];
    args.extend(ORDERS);
    args.extend([
        "--checkpoint-table",
        "settled",
        "--items",
        "12",
        "--crash-at",
        "ord-00006:after-row-commit",
        "--record",
        &record_arg,
    ]);
    let run = reclaim_with(&[], &args);
    assert_eq!(run.code, Some(1), "{}", run.stdout);

    // Without the command, shrink says how to give it: it never runs one from a recording.
    let run = reclaim_with(&[], &["shrink", &record_arg]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("--exec CMD"), "{}", run.stderr);

    let mut args = vec!["shrink", &record_arg, "--exec", &job];
    args.extend(ORDERS);
    args.extend(["--checkpoint-table", "settled"]);
    let run = reclaim_with(&[], &args);
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    // The earliest kill that still goes wrong: between the first order's two commits.
    assert!(
        run.stdout
            .contains("crash_at = \"ord-00000:after-row-commit\""),
        "{}",
        run.stdout
    );
    let scenario = tmp.path().join("shrunk.toml");
    std::fs::write(&scenario, &run.stdout).unwrap_or_else(|e| panic!("{e}"));
    let replayed = reclaim_with(
        &[],
        &[
            "run",
            "--scenario",
            &scenario.to_string_lossy(),
            "--allow-exec",
        ],
    );
    assert_eq!(replayed.code, Some(1), "{}", replayed.stdout);
    assert!(
        replayed
            .stdout
            .contains("DATA WRONG (1 duplicated task id)"),
        "{}",
        replayed.stdout
    );
}

#[test]
fn map_exec_takes_its_tasks_as_keys_of_the_queue_and_refuses_what_is_not_its_own() {
    let job = example("orders_job.py");
    let mut args = vec!["map", "--exec", &job];
    args.extend(ORDERS);
    args.extend(["--items", "8", "--tasks", "ord-00002..ord-00003", "--json"]);
    let run = reclaim_with(&[], &args);
    let json = json_of(&run);
    assert_eq!(run.code, Some(0), "{json}");
    let mut keys: Vec<String> = (json["cells"].as_array().cloned().unwrap_or_default())
        .iter()
        .map(|c| c["at"].as_str().unwrap_or_default().to_string())
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys, ["ord-00002", "ord-00003"], "{json}");
    for (extra, said) in [
        (["--tasks", "task-002..task-003"], "no key of the queue"),
        (["--tasks", "ord-00005..ord-00002"], "is empty"),
        (["--strategy", "naive"], "cannot be used with"),
    ] {
        let mut args = vec!["map", "--exec", &job];
        args.extend(ORDERS);
        args.extend(["--items", "8"]);
        args.extend(extra);
        let refused = reclaim_with(&[], &args);
        assert_eq!(refused.code, Some(2), "{extra:?}: {}", refused.stderr);
        assert!(
            refused.stderr.contains(said),
            "{extra:?}: {}",
            refused.stderr
        );
    }
}

/// A job with a crash point of its own name between its row's commit and its checkpoint's.
const ROW_SAVED_JOB: &str = r#"
import os, sqlite3, sys
sys.path.insert(0, os.environ["EXAMPLES"])
from reclaim_point import point
db = sqlite3.connect(os.environ["RECLAIM_DB"], isolation_level=None)
db.execute("CREATE TABLE IF NOT EXISTS records(task_id TEXT, payload TEXT)")
db.execute("CREATE TABLE IF NOT EXISTS checkpoints(task_id TEXT PRIMARY KEY)")
done = {r[0] for r in db.execute("SELECT task_id FROM checkpoints")}
for i in range(int(os.environ["RECLAIM_ITEMS"])):
    key = "task-%03d" % i
    if key in done:
        continue
    db.execute("INSERT INTO records VALUES (?, 'x')", (key,))
    point("row-saved", key)
    db.execute("INSERT INTO checkpoints VALUES (?)", (key,))
print("done status=ok")
"#;

#[test]
fn a_crash_at_a_point_of_the_jobs_own_name_is_placed_in_reclaims_windows() {
    let dir = crate::support::tempdir();
    let job = dir.path().join("row_saved.py");
    std::fs::write(&job, ROW_SAVED_JOB).unwrap_or_else(|e| panic!("write: {e}"));
    let command = format!("{} {}", crate::support::python3(), job.display());
    let db = dir.path().join("warehouse.db");
    let db_arg = db.to_string_lossy().into_owned();
    let args = [
        "run",
        "--exec",
        &command,
        "--items",
        "10",
        "--checkpoint-table",
        "checkpoints",
        "--crash-at",
        "task-004:row-saved",
        "--restart-delay",
        "0",
        "--db",
        &db_arg,
    ];
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let run = reclaim_with(&[("EXAMPLES", examples)], &args);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    // The row committed, its checkpoint not: after-row-commit, and still named as the job's
    // own point.
    assert!(
        run.stdout.contains(
            "windows      kills landed in after-row-commit=1; 1 of them at the job's own points"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("kills after its own points: row-saved=1"),
        "{}",
        run.stdout
    );
    let json = json_of(&reclaim_with(
        &[("EXAMPLES", examples)],
        &[&args[..11], &["--json"]].concat(),
    ));
    assert_eq!(json["kills_in_window"]["after-row-commit"], 1, "{json}");
    assert_eq!(json["kills_after_points"]["row-saved"], 1, "{json}");
    // The database says the same: task-004 written twice, once per attempt.
    let conn = open_ro(&db);
    let twice = "SELECT count(*) FROM (SELECT 1 FROM records GROUP BY task_id HAVING count(*) > 1)";
    assert_eq!(count(&conn, twice), 1);
}

#[test]
fn shrink_exec_of_a_listed_queue_gives_the_run_command_that_fails_again() {
    let tmp = crate::support::tempdir();
    let job = format!("ORDERS_MODE=two-commit {}", example("orders_job.py"));
    let keys = tmp.path().join("keys.txt");
    let listed = (0..8)
        .map(|i| format!("ord-{i:05}"))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    std::fs::write(&keys, listed).unwrap_or_else(|e| panic!("{e}"));
    let keys_arg = keys.to_string_lossy().into_owned();
    let record = tmp.path().join("night.jsonl");
    let record_arg = record.to_string_lossy().into_owned();
    let own = [
        "--table",
        "orders",
        "--key",
        "order_id",
        "--keys-from",
        &keys_arg,
        "--checkpoint-table",
        "settled",
    ];
    let night = [
        &["run", "--exec", &job][..],
        &own,
        &[
            "--crash-at",
            "ord-00005:after-row-commit",
            "--record",
            &record_arg,
        ],
    ]
    .concat();
    let run = reclaim_with(&[], &night);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);

    let run = reclaim_with(
        &[],
        &[&["shrink", &record_arg, "--exec", &job][..], &own].concat(),
    );
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    let command = run
        .stdout
        .lines()
        .find(|l| l.starts_with("reclaim run "))
        .unwrap_or_else(|| panic!("no command:\n{}", run.stdout));
    assert!(
        command.contains(&format!("--keys-from {keys_arg}"))
            && command.ends_with("--crash-at ord-00000:after-row-commit"),
        "{command}"
    );
    // The command, run as printed, goes wrong again.
    let replayed = Command::new("sh")
        .arg("-c")
        .arg(command.replacen("reclaim", BIN, 1))
        .env("TMPDIR", env!("CARGO_TARGET_TMPDIR"))
        .output()
        .unwrap_or_else(|e| panic!("sh: {e}"));
    let stdout = String::from_utf8_lossy(&replayed.stdout);
    assert_eq!(replayed.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("DATA WRONG (1 duplicated task id)"),
        "{stdout}"
    );
}
