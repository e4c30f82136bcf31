//! Kill storms placed by work (`run --kills N --kill-rows A..B`): each kill after a seeded
//! number of rows since its attempt's spawn, so the same seed gives the same storm at any load,
//! every kill lands after a commit, and the data a guarded job leaves stays exact.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::support::{
    assert_usage_error, count, distinct, json_of, number, open_ro, path_arg, reclaim,
    reclaim_within, rows,
};

/// A storm's whole run may take this long on a loaded machine before it counts as a hang.
const HANG: Duration = Duration::from_secs(300);

fn storm(db: &Path, job: &[&str], items: &str, kills: &str, seed: &str) -> Value {
    let mut args = vec!["run"];
    args.extend_from_slice(job);
    args.extend_from_slice(&[
        "--items",
        items,
        "--delay-ms",
        "0",
        "--kills",
        kills,
        "--kill-rows",
        "5..30",
        "--restart-delay",
        "0",
        "--max-restarts",
        "1000",
        "--seed",
        seed,
        "--db",
        path_arg(db),
        "--json",
    ]);
    let run = reclaim_within(&args, &[], HANG);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    json_of(&run)
}

fn planned(json: &Value) -> Vec<u64> {
    (json["kill_rows_planned"].as_array().into_iter().flatten())
        .filter_map(Value::as_u64)
        .collect()
}

/// Each kill's (planned, landed) rows since its spawn, as the report lists them.
fn landed(json: &Value) -> Vec<(u64, u64)> {
    (json["kill_rows_landed"]["first"]
        .as_array()
        .into_iter()
        .flatten())
    .filter_map(|pair| Some((pair[0].as_u64()?, pair[1].as_u64()?)))
    .collect()
}

/// Kills the rows showed had committed work of their attempt, of all kills.
fn after_a_commit(json: &Value) -> (u64, u64) {
    let windows = &json["kills_in_window"];
    let before = number(windows, "before-any-commit");
    let all: u64 = (windows.as_object().into_iter().flatten())
        .filter_map(|(_, n)| n.as_u64())
        .sum();
    (all - before, all)
}

/// The rows, read with a connection of our own: every task once, each with its checkpoint,
/// and the file sound.
fn assert_exact(db: &Path, items: u64) {
    let conn = open_ro(db);
    assert_eq!(rows(&conn), items, "rows");
    assert_eq!(distinct(&conn), items, "distinct task ids");
    assert_eq!(
        count(&conn, "SELECT count(*) FROM checkpoints"),
        items,
        "checkpoints"
    );
    let check: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("quick_check: {e}"));
    assert_eq!(check, "ok");
}

#[test]
fn the_same_seed_places_the_same_kills_on_the_same_rows_twice() {
    let dir = crate::support::tempdir();
    let guarded = ["--strategy", "guarded"];
    let first = storm(&dir.path().join("a.db"), &guarded, "1000", "20", "11");
    let second = storm(&dir.path().join("b.db"), &guarded, "1000", "20", "11");
    let other = storm(&dir.path().join("c.db"), &guarded, "1000", "20", "12");
    assert_eq!(planned(&first).len(), 20);
    assert!(planned(&first).iter().all(|r| (5..=30).contains(r)));
    assert_eq!(planned(&first), planned(&second));
    assert_ne!(
        planned(&first),
        planned(&other),
        "another seed, another storm"
    );
    // reclaim's own worker is held at its kill's row: every kill lands on its planned row,
    // and both nights land on the same ones.
    assert_eq!(landed(&first), landed(&second));
    let on_plan: Vec<(u64, u64)> = planned(&first).into_iter().map(|r| (r, r)).collect();
    assert_eq!(landed(&first), on_plan);
    assert_eq!(number(&first, "kills"), 20);
}

#[test]
fn a_small_storm_by_rows_lands_after_commits_and_leaves_guarded_exact() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("warehouse.db");
    let json = storm(&db, &["--strategy", "guarded"], "2000", "50", "5");
    assert_eq!(number(&json, "kills"), 50, "every kill fired: {json}");
    assert_eq!(number(&json, "restarts"), 50);
    let (after, all) = after_a_commit(&json);
    assert_eq!(all, 50);
    assert!(after * 100 >= all * 95, "{after} of {all} after a commit");
    assert_eq!(number(&json["kill_rows_landed"], "at_plan"), 50);
    assert_eq!(number(&json, "duplicated_task_ids"), 0);
    assert_exact(&db, 2000);
}

#[test]
fn an_exec_jobs_storm_by_rows_lands_after_its_commits() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("warehouse.db");
    let job = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/guarded_job.py");
    let command = format!("{} {job}", crate::support::python3());
    let json = storm(&db, &["--exec", &command], "400", "8", "5");
    assert_eq!(number(&json, "kills"), 8, "{json}");
    let (after, all) = after_a_commit(&json);
    assert_eq!((after, all), (8, 8), "a kill waits for its rows: {json}");
    // The job is not held at its row: it lands on it or a little past, never before.
    for (planned, landed) in landed(&json) {
        assert!(landed >= planned, "{planned} -> {landed}");
    }
    assert_eq!(number(&json, "duplicated_task_ids"), 0);
    assert_eq!(number(&json, "missing"), 0);
    let conn = open_ro(&db);
    assert_eq!((rows(&conn), distinct(&conn)), (400, 400));
    // A kill between the heartbeat's write and its rename leaves the aside file; the next
    // attempt clears what a dead attempt left, so none is there after the night.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap_or_else(|e| panic!("read_dir: {e}"))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|path| path.extension().is_some_and(|x| x == "tmp"))
        .collect();
    assert!(left.is_empty(), "temporary heartbeats left: {left:?}");
}

/// A storm's printed night with what belongs to the machine masked: process ids, run ids (made
/// of the pid and the real clock), the wall time and the file's name.
fn night_text(stdout: &str) -> String {
    let mut text = String::new();
    for line in stdout.lines() {
        let mut previous = "";
        for word in line.split_whitespace() {
            let masked = match word {
                w if w.starts_with("pid=") => "pid=_",
                w if w.starts_with("run_id=") => "run_id=_",
                w if w.starts_with("elapsed=") => "elapsed=_",
                // "database /tmp/.../a.db (kept)"
                _ if previous == "database" => "_",
                // "(SIGKILL, pid 1585)"
                _ if previous == "pid" => "_)",
                w => w,
            };
            text.push_str(masked);
            text.push(' ');
            previous = word;
        }
        text.push('\n');
    }
    text
}

#[test]
fn a_storm_at_full_speed_prints_the_same_night_twice() {
    // At --delay-ms 0 and --restart-delay 0 nothing but the work moves the clock: two runs of
    // the same storm print the same times, lines and order, whatever the machine's load.
    let dir = crate::support::tempdir();
    let nights: Vec<String> = ["a.db", "b.db"]
        .iter()
        .map(|name| {
            let db = dir.path().join(name);
            let args = [
                "run",
                "--strategy",
                "guarded",
                "--items",
                "600",
                "--delay-ms",
                "0",
                "--kills",
                "12",
                "--kill-rows",
                "5..30",
                "--restart-delay",
                "0",
                "--max-restarts",
                "100",
                "--seed",
                "21",
                "--db",
                path_arg(&db),
            ];
            let run = reclaim_within(&args, &[], HANG);
            assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
            night_text(&run.stdout)
        })
        .collect();
    assert!(nights[0].contains("kills=12"), "{}", nights[0]);
    assert!(nights[0].contains("02:00:00 worker start"), "{}", nights[0]);
    assert!(nights[0].contains("02:00:00 runner notice instance reclaimed by host"));
    assert_eq!(nights[0], nights[1]);
}

#[test]
fn kill_rows_refuses_nonsense_before_anything_starts() {
    for (value, needle) in [("30..5", "ends before it starts"), ("0..5", "outside")] {
        let run = reclaim(&[
            "run",
            "--strategy",
            "guarded",
            "--kills",
            "3",
            "--kill-rows",
            value,
        ]);
        assert_usage_error(&run, "--kill-rows");
        assert!(run.stderr.contains(needle), "{}", run.stderr);
    }
    let both = reclaim(&[
        "run",
        "--strategy",
        "guarded",
        "--kills",
        "3",
        "--kill-rows",
        "5..30",
        "--kill-window",
        "0.1..0.2",
    ]);
    assert_usage_error(&both, "--kill-window");
}

#[test]
fn an_exec_jobs_random_kills_are_placed_by_rows_unless_a_window_is_given() {
    // A job that takes a second to start, as an interpreter can on a loaded machine: kills
    // placed by time (0.2..0.9 s after a spawn) would all land before its first commit.
    let dir = crate::support::tempdir();
    let db = dir.path().join("warehouse.db");
    let job = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/naive_job.py");
    let command = format!("sleep 1; {} {job}", crate::support::python3());
    let args = [
        "run",
        "--exec",
        &command,
        "--items",
        "30",
        "--kills",
        "2",
        "--seed",
        "4",
        "--restart-delay",
        "0",
        "--db",
        path_arg(&db),
    ];
    let run = reclaim_within(&args, &[], HANG);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    // 30 items, 2 kills: each after 1..10 rows since its spawn (items / (kills + 1)).
    assert!(
        run.stdout.contains(
            "kill plan    up to 2 random kills placed by rows, each after 1..10 rows written since a spawn"
        ) && run.stdout.contains("the default for --exec"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("kills=2"), "{}", run.stdout);
    assert!(!run.stdout.contains("before-any-commit="), "{}", run.stdout);
    // The naive job restarts at item zero: the rows show what the kills tested.
    assert!(
        distinct(&open_ro(&db)) < rows(&open_ro(&db)),
        "{}",
        run.stdout
    );

    // Asked for by time, by time: said so in the plan.
    let timed = reclaim(&[
        "run",
        "--exec",
        "true",
        "--items",
        "1",
        "--kills",
        "1",
        "--kill-window",
        "0.2..0.9",
        "--seed",
        "4",
    ]);
    assert!(
        timed
            .stdout
            .contains("up to 1 random kill placed by time, each 0.20..0.90s after a spawn"),
        "{}",
        timed.stdout
    );
}

#[test]
fn a_kill_past_the_queue_is_refused_before_anything_starts() {
    let dir = crate::support::tempdir();
    let started = dir.path().join("started");
    let job = format!("touch {}", started.display());
    let keys = dir.path().join("keys.txt");
    std::fs::write(&keys, "a\nb\nc\n").unwrap_or_else(|e| panic!("write: {e}"));
    let db = dir.path().join("w.db");
    let cases: [(&[&str], &str); 5] = [
        (
            &["--exec", &job, "--items", "30", "--kill-at-rows", "500"],
            "--kill-at-rows 500",
        ),
        (
            &[
                "--exec",
                &job,
                "--items",
                "30",
                "--kills",
                "2",
                "--kill-rows",
                "31..40",
            ],
            "--kill-rows 31..40",
        ),
        (
            &[
                "--exec",
                &job,
                "--keys-from",
                path_arg(&keys),
                "--kill-at-rows",
                "4",
            ],
            "--kill-at-rows 4",
        ),
        (
            &[
                "--strategy",
                "guarded",
                "--items",
                "30",
                "--kill-at-rows",
                "31",
            ],
            "--kill-at-rows 31",
        ),
        (
            &[
                "--strategy",
                "guarded",
                "--items",
                "30",
                "--workers",
                "2",
                "--kill-at-rows",
                "61",
            ],
            "30 items x 2 workers",
        ),
    ];
    for (extra, needle) in cases {
        let args = [&["run", "--db", path_arg(&db)], extra].concat();
        let run = reclaim(&args);
        assert_usage_error(&run, needle);
        assert!(run.stderr.contains("never fire"), "{}", run.stderr);
        assert!(!db.exists(), "{extra:?} created the warehouse");
        assert!(!started.exists(), "{extra:?} started the job");
    }
    // At the queue's size it is a plan (whether it lands before the worker exits is a race).
    let fires = reclaim(&[
        "run",
        "--strategy",
        "guarded",
        "--items",
        "30",
        "--delay-ms",
        "0",
        "--kill-at-rows",
        "30",
        "--restart-delay",
        "0",
    ]);
    assert_eq!(fires.code, Some(0), "{}\n{}", fires.stdout, fires.stderr);
    assert!(
        fires.stdout.contains("as soon as the table holds 30 rows"),
        "{}",
        fires.stdout
    );
}
