//! An engineer's own job judged against its own queue (`examples/orders_job.py`: keys
//! `ord-%05d`, a table `orders(order_id, amount)`, progress in `settled`): lost work, kills that
//! never fired, windows seen or said to be unseen, `--strict` and `--junit`, and one set of
//! figures in `run`, the recording and `replay --check`. Each database is read back with SQLite.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::{Run, assert_one_line_error, count, json_of, number, open_ro, reclaim_within};

const LIMIT: Duration = Duration::from_secs(120);

fn orders_job() -> String {
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/orders_job.py");
    format!("{} {}", crate::support::python3(), job.display())
}

/// `reclaim ARGS` with `ORDERS_MODE` (and more) set for the job, in `dir`.
fn reclaim_with(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut command = crate::support::reclaim_command();
    command
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied());
    let output = command
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

fn with<'a>(first: &[&'a str], rest: &[&'a str]) -> Vec<&'a str> {
    first
        .iter()
        .chain(ORDERS.iter())
        .chain(rest)
        .copied()
        .collect()
}

fn db_of(run: &Run) -> PathBuf {
    let json = json_of(run);
    PathBuf::from(json["db"].as_str().unwrap_or_else(|| panic!("{json}")))
}

#[test]
fn a_job_that_loses_an_order_at_each_restart_is_data_wrong_in_run_count_sql_inspect_and_prove() {
    let tmp = crate::support::tempdir();
    let job = orders_job();
    let lossy = [("ORDERS_MODE", "skip-on-resume")];
    let kill = ["--items", "30", "--kill-at-rows", "10", "--json"];
    let run = reclaim_with(tmp.path(), &lossy, &with(&["run", "--exec", &job], &kill));
    let json = json_of(&run);
    assert_eq!(run.code, Some(1), "{json}");
    assert_eq!(json["derived_status"], "data_wrong", "{json}");
    assert_eq!(number(&json, "missing"), 1, "{json}");
    // SQLite itself: 29 orders for a queue of 30, each once.
    let db = db_of(&run);
    let conn = open_ro(&db);
    assert_eq!(count(&conn, "SELECT count(*) FROM orders"), 29);
    assert_eq!(
        count(&conn, "SELECT count(DISTINCT order_id) FROM orders"),
        29
    );

    let counted = [
        "--items",
        "30",
        "--kill-at-rows",
        "10",
        "--count-sql",
        "SELECT count(*), count(DISTINCT order_id) FROM orders",
    ];
    let run = reclaim_with(
        tmp.path(),
        &lossy,
        &with(&["run", "--exec", &job], &counted),
    );
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert!(
        run.stdout.contains("DATA WRONG (1 missing)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("judged by --count-sql's counts"),
        "{}",
        run.stdout
    );

    let db_arg = db.to_string_lossy().into_owned();
    let inspect = reclaim_with(
        tmp.path(),
        &[],
        &with(&["inspect", "--db", &db_arg], &["--items", "30"]),
    );
    assert_eq!(inspect.code, Some(1), "{}", inspect.stdout);
    assert!(
        inspect.stdout.contains("missing      1 keys"),
        "{}",
        inspect.stdout
    );
    assert!(
        inspect.stdout.contains("DATA WRONG (1 missing)"),
        "{}",
        inspect.stdout
    );

    let prove = reclaim_with(
        tmp.path(),
        &lossy,
        &with(
            &["prove", "--exec", &job],
            // 50 ms an order: the job outlasts seed 7's kills (0.2 to 0.73 s after a spawn).
            &[
                "--items",
                "20",
                "--delay-ms",
                "50",
                "--checkpoint-table",
                "settled",
                "--seed",
                "7",
            ],
        ),
    );
    assert_eq!(prove.code, Some(1), "{}", prove.stdout);
    assert!(
        prove.stdout.contains("1. FAIL  kill test"),
        "{}",
        prove.stdout
    );

    // The same job written right: ok everywhere (its database kept, to inspect it).
    let keep = with(&["run", "--exec", &job, "--keep", "always"], &kill);
    let run = reclaim_with(tmp.path(), &[], &keep);
    let json = json_of(&run);
    assert_eq!(run.code, Some(0), "{json}");
    assert_eq!(
        (
            number(&json, "rows"),
            number(&json, "distinct"),
            number(&json, "missing")
        ),
        (30, 30, 0),
        "{json}"
    );
    let db_arg = db_of(&run).to_string_lossy().into_owned();
    let inspect = reclaim_with(
        tmp.path(),
        &[],
        &with(&["inspect", "--db", &db_arg], &["--items", "30"]),
    );
    assert_eq!(inspect.code, Some(0), "{}", inspect.stdout);
}

#[test]
fn a_kill_at_a_key_outside_the_queue_is_refused_and_one_that_never_fired_is_said() {
    let tmp = crate::support::tempdir();
    let job = orders_job();
    for key in ["task-005", "ord-00030", "ord-5", "30"] {
        let run = reclaim_with(
            tmp.path(),
            &[],
            &with(
                &["run", "--exec", &job],
                &["--items", "30", "--kill-at-task", key],
            ),
        );
        assert_one_line_error(&run, "is not a key of the queue");
    }
    let entries = std::fs::read_dir(tmp.path()).map_or(0, Iterator::count);
    assert_eq!(entries, 0, "a refused run created something");

    // A key of the queue works by its name, and the kill lands.
    let run = reclaim_with(
        tmp.path(),
        &[],
        &with(
            &["run", "--exec", &job],
            &["--items", "30", "--kill-at-task", "ord-00012", "--json"],
        ),
    );
    let json = json_of(&run);
    assert_eq!((run.code, number(&json, "kills")), (Some(0), 1), "{json}");

    // A kill at more rows than the queue holds could never fire: refused before the night.
    let past = ["--items", "10", "--kill-at-rows", "50"];
    let run = reclaim_with(tmp.path(), &[], &with(&["run", "--exec", &job], &past));
    assert_one_line_error(&run, "--kill-at-rows 50 is past the queue of 10 items");
    // One that could but did not (rows counted by --count-sql, which may count anything)
    // never fired: said, and --strict fails the night.
    let planned = [
        "--items",
        "10",
        "--kill-at-rows",
        "50",
        "--count-sql",
        "SELECT count(*), count(DISTINCT order_id) FROM orders",
    ];
    let run = reclaim_with(tmp.path(), &[], &with(&["run", "--exec", &job], &planned));
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("not fired    the kill at 50 rows never fired"),
        "{}",
        run.stdout
    );
    let strict = [&planned[..], &["--strict"]].concat();
    let run = reclaim_with(tmp.path(), &[], &with(&["run", "--exec", &job], &strict));
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "result       UNTESTED (--strict: a failure): the kill at 50 rows never fired"
        ),
        "{}",
        run.stdout
    );
    let json_run = [&planned[..], &["--json"]].concat();
    let run = reclaim_with(tmp.path(), &[], &with(&["run", "--exec", &job], &json_run));
    let json = json_of(&run);
    assert!(
        json["not_fired"][0]
            .as_str()
            .is_some_and(|s| s.contains("50 rows")),
        "{json}"
    );
}

#[test]
fn a_two_commit_job_killed_between_its_commits_is_placed_by_its_checkpoint_table() {
    let tmp = crate::support::tempdir();
    let job = orders_job();
    // The first attempt waits between the tenth order's commit and its progress's until the
    // kill at 10 rows comes (a minute at most), so it lands between the two at any load.
    let env = [
        ("ORDERS_MODE", "two-commit"),
        ("ORDERS_PAUSE_S", "60"),
        ("ORDERS_PAUSE_AT", "ord-00009"),
    ];
    let args = ["--items", "20", "--kill-at-rows", "10", "--json"];
    let told = [&args[..], &["--checkpoint-table", "settled"]].concat();
    let run = reclaim_with(tmp.path(), &env, &with(&["run", "--exec", &job], &told));
    let json = json_of(&run);
    assert_eq!(run.code, Some(1), "{json}");
    assert_eq!(json["kills_in_window"]["after-row-commit"], 1, "{json}");
    assert_eq!(number(&json, "duplicated_task_ids"), 1, "{json}");
    let conn = open_ro(&db_of(&run));
    assert_eq!(
        count(
            &conn,
            "SELECT count(*) FROM (SELECT 1 FROM orders GROUP BY order_id HAVING count(*) > 1)"
        ),
        1
    );

    // Not told where the checkpoints are, and the job announcing no crash point: the kill is
    // not placed, and no window is said missed that reclaim could not see.
    let untold = [&args[..1], &args[1..4]].concat();
    let quiet = [env[0], env[1], env[2], ("ORDERS_POINTS", "none")];
    let run = reclaim_with(tmp.path(), &quiet, &with(&["run", "--exec", &job], &untold));
    let windows = run
        .stdout
        .lines()
        .find(|l| l.starts_with("windows"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(
        windows.contains("1 kill after a commit, not placed"),
        "{windows}"
    );
    assert!(
        !windows.contains("after-row-commit,") && !windows.ends_with("after-row-commit"),
        "{windows}"
    );
}

#[test]
fn guarded_emails_never_killed_after_their_send_say_so_and_strict_fails() {
    let night = [
        "run",
        "--strategy",
        "guarded",
        "--side-effect",
        "email",
        "--kill-at-task",
        "task-010",
        "--items",
        "30",
    ];
    let run = reclaim_within(&night, &[], LIMIT);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("no kill landed in after-send, the window that breaks guarded"),
        "{}",
        run.stdout
    );
    let strict = [&night[..], &["--strict"]].concat();
    let run = reclaim_within(&strict, &[], LIMIT);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    // A crash right after the send is the window, counted, and its duplicate email found.
    let crash = [
        "run",
        "--strategy",
        "guarded",
        "--side-effect",
        "email",
        "--crash-at",
        "task-010:after-send",
        "--items",
        "30",
        "--json",
    ];
    let run = reclaim_within(&crash, &[], LIMIT);
    let json = json_of(&run);
    assert_eq!(json["kills_in_window"]["after-send"], 1, "{json}");
    assert_eq!(number(&json, "messages_duplicated"), 1, "{json}");
    assert_eq!(run.code, Some(1), "{json}");
}

#[test]
fn run_the_recording_and_the_replay_check_count_an_own_job_alike() {
    let tmp = crate::support::tempdir();
    let job = orders_job();
    let record = tmp.path().join("night.jsonl");
    let record_arg = record.to_string_lossy().into_owned();
    // Held between the eighth order's two commits until the kill at 8 rows comes.
    let env = [
        ("ORDERS_MODE", "two-commit"),
        ("ORDERS_PAUSE_S", "60"),
        ("ORDERS_PAUSE_AT", "ord-00007"),
    ];
    let args = [
        "--items",
        "25",
        "--kill-at-rows",
        "8",
        "--record",
        &record_arg,
        "--json",
    ];
    let run = reclaim_with(tmp.path(), &env, &with(&["run", "--exec", &job], &args));
    let json = json_of(&run);
    let figures = |j: &serde_json::Value| {
        (
            number(j, "rows"),
            number(j, "distinct"),
            number(j, "duplicated_task_ids"),
            number(j, "missing"),
        )
    };
    assert_eq!(figures(&json), (26, 25, 1, 0), "{json}");
    // The recording's last sample is what the dashboard drew: the same figures.
    let text = std::fs::read_to_string(&record).unwrap_or_else(|e| panic!("{e}"));
    let last_sample = text
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "sample")
        .unwrap_or_else(|| panic!("no sample in\n{text}"));
    let lane = &last_sample["lanes"][0];
    assert_eq!(
        (
            number(lane, "rows"),
            number(lane, "distinct"),
            number(lane, "duplicated")
        ),
        (26, 25, 1),
        "{lane}"
    );
    let check = reclaim_with(
        tmp.path(),
        &[],
        &["replay", &record_arg, "--check", "--json"],
    );
    let checked = json_of(&check);
    let first = &checked["lanes"][0];
    assert_eq!(
        (
            number(first, "rows"),
            number(first, "distinct"),
            number(first, "duplicated_task_ids"),
            number(first, "missing")
        ),
        (26, 25, 1, 0),
        "{checked}"
    );
    assert_eq!(check.code, Some(1), "{checked}");
}

#[test]
fn prove_strict_junit_on_the_examples_writes_xml_a_ci_reporter_reads() {
    let tmp = crate::support::tempdir();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    // The naive job's third test does not apply: skipped, which --strict fails, in the file
    // as on the console.
    for (job, code, failures) in [("guarded_job.py", 0, "0"), ("naive_job.py", 1, "3")] {
        let xml = tmp.path().join(format!("{job}.xml"));
        let command = format!(
            "{} {}",
            crate::support::python3(),
            examples.join(job).display()
        );
        let run = reclaim_with(
            tmp.path(),
            &[],
            &[
                "prove",
                "--exec",
                &command,
                // Long enough (1.5 s of work) for every planned kill to land in its window.
                "--items",
                "150",
                "--seed",
                "11",
                "--strict",
                "--junit",
                &xml.to_string_lossy(),
            ],
        );
        assert_eq!(run.code, Some(code), "{}", run.stdout);
        let text = std::fs::read_to_string(&xml).unwrap_or_else(|e| panic!("{e}"));
        let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let cases = doc
            .descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .count();
        assert_eq!(cases, 3, "{text}");
        let suite = doc
            .descendants()
            .find(|n| n.has_tag_name("testsuite"))
            .unwrap_or_else(|| panic!("{text}"));
        assert_eq!(suite.attribute("failures"), Some(failures), "{text}");
    }
    // `prove` of reclaim's guarded worker, its JUnit file at `path`: refused before it runs.
    let prove_to = |path: &Path| {
        let path = path.to_string_lossy();
        let args = ["prove", "--strategy", "guarded", "--junit", &path];
        reclaim_with(tmp.path(), &[], &args)
    };
    // A file reclaim did not write is never overwritten.
    let foreign = tmp.path().join("mine.xml");
    std::fs::write(&foreign, "<mine/>").unwrap_or_else(|e| panic!("{e}"));
    assert_one_line_error(&prove_to(&foreign), "--junit");
    assert_eq!(
        std::fs::read_to_string(&foreign).unwrap_or_default(),
        "<mine/>"
    );
    // A link planted at the path is refused, even to a file reclaim wrote: that one stays.
    let written = tmp.path().join("guarded_job.py.xml");
    let before = std::fs::read(&written).unwrap_or_else(|e| panic!("{e}"));
    let link = tmp.path().join("planted.xml");
    std::os::unix::fs::symlink(&written, &link).unwrap_or_else(|e| panic!("{e}"));
    assert_one_line_error(&prove_to(&link), "symbolic link");
    assert_eq!(std::fs::read(&written).ok(), Some(before));
}

#[test]
fn inspect_ids_names_the_wrong_keys_of_a_jobs_own_table() {
    let tmp = crate::support::tempdir();
    let db = tmp.path().join("orders.db");
    let conn = rusqlite::Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
    conn.execute_batch(
        "CREATE TABLE orders(order_id TEXT, amount INT);
         INSERT INTO orders VALUES ('ord-00000', 1), ('ord-00002', 1), ('ord-00002', 2),
           ('ord-00099', 1);",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    drop(conn);
    let db_arg = db.to_string_lossy().into_owned();
    let args = [
        "inspect",
        "--db",
        &db_arg,
        "--table",
        "orders",
        "--key",
        "order_id",
        "--key-format",
        "ord-%05d",
        "--items",
        "4",
        "--ids",
    ];
    let run = reclaim_within(&args, &[], LIMIT);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    for expected in [
        "missing keys (2): keys of the queue with no row, in the queue's order\nord-00001\nord-00003\n",
        "duplicated keys (1): rows each\nord-00002  x2\n",
        "keys outside the queue (1): rows each\nord-00099  x1\n",
    ] {
        assert!(
            run.stdout.contains(expected),
            "{expected:?}\n{}",
            run.stdout
        );
    }
    let json = json_of(&reclaim_within(
        &[&args[..], &["--json"]].concat(),
        &[],
        LIMIT,
    ));
    assert_eq!(json["keys"]["missing"][1], "ord-00003", "{json}");
    assert_eq!(json["keys"]["duplicated"][0][1], 2, "{json}");
    // Read-only: the user's database is as it was.
    assert_eq!(count(&open_ro(&db), "SELECT count(*) FROM orders"), 4);
}

/// A key in the job's table that is not UTF-8 (bytes a job stored) is a row outside the queue:
/// judged DATA WRONG, said escaped, never a conversion error (exit 2).
#[test]
fn a_key_that_is_not_utf8_is_judged_outside_the_queue() {
    let tmp = crate::support::tempdir();
    let job = tmp.path().join("bytes_job.py");
    std::fs::write(
        &job,
        "import os, sqlite3\n\
         db = sqlite3.connect(os.environ['RECLAIM_DB'])\n\
         db.execute('CREATE TABLE records(task_id TEXT)')\n\
         db.executemany('INSERT INTO records VALUES (?)', [(f'task-{i:03d}',) for i in range(20)])\n\
         db.execute(\"INSERT INTO records VALUES (CAST(X'7461736b2dff' AS TEXT))\")\n\
         db.commit()\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let command = format!("{} {}", crate::support::python3(), job.display());
    let run = reclaim_within(
        &[
            "run", "--exec", &command, "--items", "20", "--keep", "always",
        ],
        &[("TMPDIR", tmp.path())],
        LIMIT,
    );
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("result       FAIL: the rows: DATA WRONG (1 row outside the queue)"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("Conversion error"), "{}", run.stdout);
    assert!(!run.stderr.contains("Conversion error"), "{}", run.stderr);
    let db = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("database     "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no database line:\n{}", run.stdout));
    let db_arg = db.to_string();
    let ids = reclaim_with(
        tmp.path(),
        &[],
        &[
            "inspect", "--db", &db_arg, "--table", "records", "--items", "20", "--ids",
        ],
    );
    assert_eq!(ids.code, Some(1), "{}\n{}", ids.stdout, ids.stderr);
    assert!(
        ids.stdout.lines().any(|l| l.starts_with("task-\\xff ")),
        "{}",
        ids.stdout
    );
}
