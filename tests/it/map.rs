//! `reclaim map`, `reclaim shrink` and the kill windows of `run` and `prove`: real nights, their
//! cells checked against what the code implies and against the databases read independently.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::support::{
    Run, assert_one_line_error, distinct, duplicated_ids, json_of, number, open_ro, path_arg,
    reclaim_in_dir, rows, strategies_that, workers_under,
};

/// A hang guard, not a timing assertion.
const LIMIT: Duration = Duration::from_secs(120);

fn tmp() -> tempfile::TempDir {
    crate::support::tempdir()
}

/// The duplicated task ids the code implies, written out again here from the strategies' own
/// stories (not from reclaim's `expected_duplicates`, so the two can disagree).
fn implied(strategy: &str, task: u64, point: &str) -> u64 {
    match (strategy, point) {
        ("naive", "before-write") => task,
        ("naive", _) => task + 1,
        ("two-commit", "after-row-commit") => 1,
        _ => 0,
    }
}

#[test]
fn every_cell_of_a_small_map_is_what_the_code_implies_and_what_the_rows_say() {
    let dir = tmp();
    let items = 6;
    let run = reclaim_in_dir(
        dir.path(),
        &["map", "--items", "6", "--json", "--keep"],
        LIMIT,
    );
    assert_eq!(
        run.code,
        Some(1),
        "naive and two-commit break: exit 1\n{}",
        run.stderr
    );
    let json = json_of(&run);
    assert_eq!(number(&json, "items"), items);
    assert!(json["elapsed_s"].as_f64().is_some(), "{json}");
    let cells = json["cells"].as_array().cloned().unwrap_or_default();
    // `all`: every strategy whose rows alone tell its story (a relaying one is named to be
    // mapped), each at four points and six tasks.
    let mapped = strategies_that(reclaim::worker::Strategy::in_full_map).len();
    assert!(mapped >= 4, "{mapped}");
    assert_eq!(
        cells.len(),
        mapped * 4 * 6,
        "strategies x four points x six tasks"
    );
    for cell in &cells {
        let strategy = cell["strategy"].as_str().unwrap_or_default();
        let point = cell["point"].as_str().unwrap_or_default();
        let task = number(cell, "task");
        let dup = implied(strategy, task, point);
        let what = format!("{strategy} {task} {point}: {cell}");
        assert_eq!(number(cell, "duplicated_task_ids"), dup, "{what}");
        assert_eq!(number(cell, "missing"), 0, "{what}");
        assert_eq!(number(cell, "distinct"), items, "{what}");
        assert_eq!(number(cell, "rows"), items + dup, "{what}");
        let status = if dup > 0 { "data_wrong" } else { "ok" };
        assert_eq!(cell["derived_status"], status, "{what}");
    }
    let summary = json["summary"].as_array().cloned().unwrap_or_default();
    let right = |name: &str| {
        summary
            .iter()
            .find(|s| s["strategy"] == name)
            .map_or(0, |s| number(s, "right"))
    };
    assert_eq!((right("keyed"), right("guarded")), (24, 24), "{json}");
    assert_eq!(right("two-commit"), 18, "only after-row-commit breaks it");
    assert_eq!(
        right("naive"),
        1,
        "only a crash before writing task-000 spares naive"
    );
    // A sample of the nights, counted again with a read-only connection of our own.
    for cell in cells.iter().step_by(7) {
        let db = PathBuf::from(cell["db"].as_str().unwrap_or_default());
        assert!(
            db.starts_with(dir.path()),
            "{} is not under TMPDIR",
            db.display()
        );
        let conn = open_ro(&db);
        assert_eq!(rows(&conn), number(cell, "rows"), "{cell}");
        assert_eq!(distinct(&conn), number(cell, "distinct"), "{cell}");
        assert_eq!(
            duplicated_ids(&conn).len() as u64,
            number(cell, "duplicated_task_ids"),
            "{cell}"
        );
    }
}

#[test]
fn a_map_of_the_safe_strategies_is_all_right_and_exits_0() {
    let dir = tmp();
    let run = reclaim_in_dir(
        dir.path(),
        &[
            "map",
            "--strategy",
            "keyed,guarded",
            "--items",
            "8",
            "--tasks",
            "2..5",
            "--csv",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "strategy,task,point,rows,distinct,duplicated_task_ids,missing,derived_status"
    );
    assert_eq!(lines.len(), 1 + 2 * 4 * 4, "{}", run.stdout);
    assert!(
        lines[1..].iter().all(|l| l.ends_with(",8,8,0,0,ok")),
        "{}",
        run.stdout
    );
    // Nothing is left behind without --keep.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn the_plain_map_draws_the_bands_and_says_what_went_wrong() {
    let dir = tmp();
    let run = reclaim_in_dir(
        dir.path(),
        &["map", "--strategy", "two-commit", "--items", "5", "--plain"],
        LIMIT,
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stdout.contains("           after-row-commit 11111"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("two-commit before-write     ·····"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("reclaim map: 20 of 20 nights"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("15 of 20 right, 5 duplicated"),
        "{}",
        run.stdout
    );
}

/// The pause band: in each night two workers claim the queue and the one at the task's write
/// is stopped there for twice its lease; claim's sleeper writes its item a second time, fenced's
/// fence turns it away. Every cell against its own database, counted with a connection of ours.
#[test]
fn a_map_of_pauses_says_claim_writes_the_paused_item_twice_and_fenced_once() {
    let dir = tmp();
    let items = 6;
    let run = reclaim_in_dir(
        dir.path(),
        &[
            "map",
            "--items",
            "6",
            "--tasks",
            "0..5",
            "--strategy",
            "naive,claim,fenced",
            "--points",
            "pause",
            "--json",
            "--keep",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(1), "claim breaks: exit 1\n{}", run.stderr);
    // naive holds no lease: left out of the map, and said so, not summed as 0 of 0.
    assert!(
        run.stderr
            .contains("naive left out of the map: no point of --points reaches it"),
        "{}",
        run.stderr
    );
    let json = json_of(&run);
    assert_eq!(json["points"], serde_json::json!(["pause"]), "{json}");
    let summarised: Vec<&str> = (json["summary"].as_array().into_iter().flatten())
        .filter_map(|s| s["strategy"].as_str())
        .collect();
    assert_eq!(summarised, ["claim", "fenced"], "{json}");
    let cells = json["cells"].as_array().cloned().unwrap_or_default();
    assert_eq!(cells.len(), 2 * 6, "two strategies x six tasks: {json}");
    for cell in &cells {
        let strategy = cell["strategy"].as_str().unwrap_or_default();
        let task = number(cell, "task");
        assert_eq!(cell["point"], "pause", "{cell}");
        let conn = open_ro(Path::new(cell["db"].as_str().unwrap_or_default()));
        let doubled = duplicated_ids(&conn);
        let expected: Vec<String> = if strategy == "claim" {
            vec![format!("task-{task:03}")]
        } else {
            Vec::new()
        };
        assert_eq!(doubled, expected, "the rows of {cell}");
        assert_eq!(rows(&conn), number(cell, "rows"), "{cell}");
        assert_eq!(distinct(&conn), items, "{cell}");
        assert_eq!(number(cell, "duplicated_task_ids"), doubled.len() as u64);
        assert_eq!(
            cell["killed"], true,
            "every pause outlasted its lease: {cell}"
        );
    }
}

#[test]
fn bad_map_input_is_one_line_and_exit_2_before_any_night() {
    let dir = tmp();
    for (args, needle) in [
        (vec!["--items", "5", "--tasks", "3..9"], "beyond the queue"),
        (vec!["--tasks", "9..3"], "empty"),
        (vec!["--points", "sometime"], "unknown point"),
        (vec!["--strategy", "careful"], "unknown strategy"),
        (vec!["--json", "--csv"], "cannot be used with"),
        (vec!["--points", "pause"], "only items held by a lease"),
        (
            vec![
                "--strategy",
                "claim",
                "--points",
                "pause",
                "--items",
                "2000",
            ],
            "paced nights",
        ),
    ] {
        let mut all = vec!["map"];
        all.extend(args);
        let run = reclaim_in_dir(dir.path(), &all, LIMIT);
        assert_one_line_error(&run, needle);
        let made: Vec<_> = std::fs::read_dir(dir.path())
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        assert!(made.is_empty(), "{all:?} created {made:?}");
    }
}

#[test]
fn ctrl_c_mid_map_kills_every_worker_of_every_night_in_flight() {
    let dir = tmp();
    let child = crate::support::reclaim_command()
        .args(["map", "--items", "400", "--json"])
        .env("TMPDIR", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start reclaim map: {e}"));
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    // Wait until nights are in flight: workers running under the map's folder.
    let deadline = Instant::now() + LIMIT;
    while workers_under(dir.path()).is_empty() {
        assert!(Instant::now() < deadline, "no worker ever started");
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = kill(pid, Signal::SIGINT);
    let output = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("waiting for reclaim map: {e}"));
    let run = Run::from_output("reclaim map", &output);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("stopped by SIGINT"), "{}", run.stderr);
    assert!(
        run.stdout.is_empty(),
        "no half map on stdout: {}",
        run.stdout
    );
    assert_eq!(
        workers_under(dir.path()),
        Vec::<i32>::new(),
        "workers outlived the map"
    );
}

/// `reclaim run ... --json` of a two-commit night with one crash.
fn two_commit_night(dir: &Path, crash: &str, json: bool) -> Run {
    let db = dir.join(format!("{}.db", crash.replace(':', "-")));
    let mut args = vec![
        "run",
        "--strategy",
        "two-commit",
        "--items",
        "40",
        "--delay-ms",
        "0",
        "--crash-at",
        crash,
        "--db",
        path_arg(&db),
    ];
    if json {
        args.push("--json");
    }
    let args: Vec<String> = args.into_iter().map(String::from).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    reclaim_in_dir(dir, &args, LIMIT)
}

#[test]
fn a_two_commit_night_that_missed_after_row_commit_says_it_did_not_test_it() {
    let dir = tmp();
    // Missed: the kill lands after task-020's commit is whole (row and checkpoint).
    let missed = two_commit_night(dir.path(), "task-020:before-write", true);
    assert_eq!(missed.code, Some(0), "{}", missed.stderr);
    let json = json_of(&missed);
    let windows = &json["kills_in_window"];
    assert_eq!(number(windows, "after-row-commit"), 0, "{json}");
    assert_eq!(number(windows, "after-commit"), 1, "{json}");
    assert_eq!(number(windows, "before-any-commit"), 0, "{json}");
    let text = two_commit_night(dir.path(), "task-021:before-write", false);
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    assert!(
        text.stdout
            .contains("never hit: before-any-commit, after-row-commit"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains(
            "result       UNTESTED: no kill landed in after-row-commit, the window that breaks two-commit: this pass did not test it (exit 0; --strict fails it)"
        ),
        "{}",
        text.stdout
    );
    // Hit: the same strategy killed in its window fails, and says where the kill landed.
    let hit = two_commit_night(dir.path(), "task-020:after-row-commit", true);
    assert_eq!(hit.code, Some(1), "{}", hit.stderr);
    let json = json_of(&hit);
    assert_eq!(
        number(&json["kills_in_window"], "after-row-commit"),
        1,
        "{json}"
    );
    let text = two_commit_night(dir.path(), "task-021:after-row-commit", false);
    assert!(!text.stdout.contains("did not test"), "{}", text.stdout);
    assert!(
        text.stdout.contains("kills landed in after-row-commit=1"),
        "{}",
        text.stdout
    );
    // A kill before the first commit is the harmless window.
    let first = two_commit_night(dir.path(), "task-000:before-write", true);
    assert_eq!(
        number(&json_of(&first)["kills_in_window"], "before-any-commit"),
        1
    );
}

#[test]
fn prove_reports_where_its_kills_landed() {
    let dir = tmp();
    let run = reclaim_in_dir(
        dir.path(),
        &[
            "prove",
            "--strategy",
            "guarded",
            "--items",
            "20",
            "--delay-ms",
            "1",
            "--seed",
            "5",
            "--json",
        ],
        LIMIT,
    );
    let json = json_of(&run);
    let windows = &json["kills_in_window"];
    // The crash sweep alone kills twelve times; guarded's single transaction can never leave a
    // row without its checkpoint.
    let total = number(windows, "before-any-commit")
        + number(windows, "after-row-commit")
        + number(windows, "after-commit");
    assert!(total >= 12, "{json}");
    assert_eq!(number(windows, "after-row-commit"), 0, "{json}");
    // Which is no window missed: guarded's night has no such gap to hit.
    assert!(
        json["windows_never_hit"]
            .as_array()
            .is_some_and(|w| !w.iter().any(|n| n == "after-row-commit")),
        "{json}"
    );
}

#[test]
fn shrink_turns_a_multi_kill_naive_night_into_one_kill_that_still_fails() {
    let dir = tmp();
    let record = dir.path().join("night.jsonl");
    let db = dir.path().join("night.db");
    let night = reclaim_in_dir(
        dir.path(),
        &[
            "run",
            "--strategy",
            "naive",
            "--items",
            "100",
            "--delay-ms",
            "3",
            "--kills",
            "3",
            "--kill-window",
            "0.05..0.15",
            "--seed",
            "7",
            "--db",
            path_arg(&db),
            "--record",
            path_arg(&record),
            "--json",
        ],
        LIMIT,
    );
    let recorded = json_of(&night);
    assert_eq!(night.code, Some(1), "the recorded night went wrong");
    assert!(
        number(&recorded, "kills") >= 2,
        "a multi-kill night: {recorded}"
    );
    let shrink = reclaim_in_dir(dir.path(), &["shrink", path_arg(&record)], LIMIT);
    assert_eq!(shrink.code, Some(0), "{}", shrink.stderr);
    assert!(
        shrink.stderr.contains("the search ran"),
        "{}",
        shrink.stderr
    );
    let scenario = reclaim::scenario::Scenario::parse("shrunk.toml", &shrink.stdout)
        .unwrap_or_else(|e| panic!("{e}\n{}", shrink.stdout));
    assert_eq!(scenario.lanes.len(), 1);
    assert_eq!(scenario.kill_at_task, None);
    assert_eq!(scenario.random_kills, 0);
    assert_eq!(scenario.items, 100);
    let lane = &scenario.lanes[0];
    assert_eq!(lane.worker.label(), "naive");
    let crash = lane
        .crash_at
        .unwrap_or_else(|| panic!("no kill in\n{}", shrink.stdout));
    // The earliest: naive goes wrong as soon as one committed row is written again.
    assert_eq!(
        crash.to_string(),
        "task-000:after-commit",
        "{}",
        shrink.stdout
    );
    // The one kill, run headless, still goes wrong.
    let again_db = dir.path().join("again.db");
    let crash = crash.to_string();
    let again = reclaim_in_dir(
        dir.path(),
        &[
            "run",
            "--strategy",
            "naive",
            "--items",
            "100",
            "--delay-ms",
            "0",
            "--crash-at",
            &crash,
            "--db",
            path_arg(&again_db),
            "--json",
        ],
        LIMIT,
    );
    assert_eq!(again.code, Some(1), "{}", again.stderr);
    let json = json_of(&again);
    assert_eq!(number(&json, "kills"), 1);
    assert!(number(&json, "duplicated_task_ids") > 0, "{json}");
}

#[test]
fn shrink_refuses_a_night_that_went_right() {
    let dir = tmp();
    let record = dir.path().join("night.jsonl");
    let db = dir.path().join("night.db");
    let night = reclaim_in_dir(
        dir.path(),
        &[
            "run",
            "--strategy",
            "guarded",
            "--items",
            "20",
            "--delay-ms",
            "0",
            "--db",
            path_arg(&db),
            "--record",
            path_arg(&record),
            "--json",
        ],
        LIMIT,
    );
    assert_eq!(night.code, Some(0), "{}", night.stderr);
    let shrink = reclaim_in_dir(dir.path(), &["shrink", path_arg(&record)], LIMIT);
    assert_one_line_error(&shrink, "ended right");
}

#[test]
fn enter_on_the_map_opens_that_night_beside_guarded_and_q_comes_back() {
    use crate::support::Dashboard;
    let dir = tmp();
    let mut screen = Dashboard::start(
        &[
            "map",
            "--items",
            "12",
            "--strategy",
            "naive",
            "--points",
            "after-commit",
        ],
        dir.path(),
        100,
        30,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + LIMIT;
    screen
        .wait_for("the finished map", deadline, |s| {
            s.contents().contains("12 nights in")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    // The third task: a crash after committing task-002 duplicates three rows.
    screen.send(b"ll").unwrap_or_else(|e| panic!("{e}"));
    screen
        .wait_for("the cell under the cursor", deadline, |s| {
            s.contents()
                .contains("naive · after-commit · task-002: DUPLICATED 3")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    screen.send(b"\r").unwrap_or_else(|e| panic!("{e}"));
    screen
        .wait_for("the dashboard on that night", deadline, |s| {
            let text = s.contents();
            text.contains("The map's night: naive at task-002:after-commit")
                && text.contains("naive")
                && text.contains("guarded")
                && text.contains("running pid")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    screen.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    screen
        .wait_for("the map again", deadline, |s| {
            s.contents()
                .contains("back from naive at task-002:after-commit")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    screen.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    let status = screen
        .wait_exit(Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        status.exit_code(),
        1,
        "naive's cells are wrong:\n{}",
        screen.text()
    );
    crate::support::assert_terminal_restored(&screen);
    assert!(
        screen.text().contains("reclaim map: 12 of 12 nights"),
        "{}",
        screen.text()
    );
    assert_eq!(
        workers_under(dir.path()),
        Vec::<i32>::new(),
        "workers outlived the map"
    );
}

#[test]
fn shrink_moves_a_two_commit_crash_to_the_first_task_and_keeps_its_window() {
    let dir = tmp();
    let record = dir.path().join("night.jsonl");
    let db = dir.path().join("night.db");
    let night = reclaim_in_dir(
        dir.path(),
        &[
            "run",
            "--strategy",
            "two-commit",
            "--items",
            "60",
            "--delay-ms",
            "0",
            "--crash-at",
            "task-030:after-row-commit",
            "--db",
            path_arg(&db),
            "--record",
            path_arg(&record),
            "--json",
        ],
        LIMIT,
    );
    assert_eq!(night.code, Some(1), "{}", night.stderr);
    let shrink = reclaim_in_dir(dir.path(), &["shrink", path_arg(&record)], LIMIT);
    assert_eq!(shrink.code, Some(0), "{}", shrink.stderr);
    let scenario = reclaim::scenario::Scenario::parse("shrunk.toml", &shrink.stdout)
        .unwrap_or_else(|e| panic!("{e}\n{}", shrink.stdout));
    let crash = scenario.lanes[0].crash_at.map(|c| c.to_string());
    // Only the window between the two commits breaks two-commit; the earliest task has one too.
    assert_eq!(
        crash.as_deref(),
        Some("task-000:after-row-commit"),
        "{}",
        shrink.stdout
    );
    assert_eq!(scenario.lanes[0].worker.label(), "two-commit");
    assert!(
        shrink.stderr.contains("1 kill: after task-030"),
        "{}",
        shrink.stderr
    );
}

#[test]
fn q_mid_map_ends_the_nights_in_flight_and_leaves_no_worker() {
    use crate::support::Dashboard;
    let dir = tmp();
    // Long nights (naive writes 50,000 rows, then most of them again), so q lands mid-night.
    let mut screen = Dashboard::start(
        &[
            "map",
            "--items",
            "50000",
            "--strategy",
            "naive",
            "--tasks",
            "40000..40099",
            "--keep",
        ],
        dir.path(),
        100,
        30,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + LIMIT;
    screen
        .wait_for("the map running", deadline, |s| {
            s.contents().contains("/400 nights")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    // q once a night's database exists with its worker alive: a night then in flight (50,000
    // items) cannot end before q does. (q pressed on the first worker seen, before its database
    // existed, found no night to have been cut short once under load.)
    let night_dbs = || {
        std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().is_dir())
            .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
            .filter(|e| e.path().extension().is_some_and(|x| x == "db"))
            .count()
    };
    while workers_under(dir.path()).is_empty() || night_dbs() == 0 {
        assert!(Instant::now() < deadline, "no night ever started");
        std::thread::sleep(Duration::from_millis(5));
    }
    screen.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    let status = screen
        .wait_exit(Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        status.exit_code(),
        1,
        "an unfinished map is not all right:\n{}",
        screen.text()
    );
    crate::support::assert_terminal_restored(&screen);
    assert!(
        screen
            .text()
            .contains("the map was left before it finished"),
        "{}",
        screen.text()
    );
    assert_eq!(
        workers_under(dir.path()),
        Vec::<i32>::new(),
        "workers outlived the map"
    );
    // The nights in flight were ended, not waited for: a kept database holds a night cut short.
    let map_dir = std::fs::read_dir(dir.path())
        .ok()
        .and_then(|d| d.flatten().map(|e| e.path()).find(|p| p.is_dir()))
        .unwrap_or_else(|| panic!("no map folder kept in {}", dir.path().display()));
    let cut_short = std::fs::read_dir(&map_dir).map_or(0, |d| {
        d.flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "db"))
            // A night cut before its worker made the table is cut short too.
            .filter(|db| {
                open_ro(db)
                    .query_row("SELECT count(DISTINCT task_id) FROM records", [], |r| {
                        r.get::<_, u64>(0)
                    })
                    .map_or(true, |n| n < 50_000)
            })
            .count()
    });
    assert!(
        cut_short > 0,
        "every night in {} ran to its end",
        map_dir.display()
    );
}
