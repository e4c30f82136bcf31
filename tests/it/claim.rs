//! The claim strategy: eight workers on one queue under random kills end with every item
//! written once, on SQLite (read back with rusqlite) and on a private PostgreSQL cluster (read
//! back with psql); a worker killed holding a lease loses the item to another worker.

use std::path::Path;
use std::time::Duration;

use crate::support::{after_clock, without_pids_and_paths};
use crate::support::{count, json_of, number, open_ro, path_arg, reclaim_in_dir};
use crate::support::{folder, on_kept, pg_bin, psql};

const LIMIT: Duration = Duration::from_secs(180);

/// Eight claim workers, and kills that land while they hold their leases: the seeds' storms.
fn storm(seed: &str) -> Vec<&str> {
    vec![
        "run",
        "--strategy",
        "claim",
        "--workers",
        "8",
        "--kills",
        "6",
        "--kill-window",
        "0.05..0.2",
        "--seed",
        seed,
        "--json",
    ]
}

/// What the night's report says: every item once, and kills that fired.
fn assert_exactly_once(json: &serde_json::Value) {
    assert_eq!(json["derived_status"], "ok", "{json}");
    assert_eq!(number(json, "rows"), 200, "{json}");
    assert_eq!(number(json, "distinct"), 200, "{json}");
    assert_eq!(number(json, "duplicated_task_ids"), 0, "{json}");
    assert_eq!(number(json, "missing"), 0, "{json}");
    assert!(number(json, "kills") >= 1, "no kill fired: {json}");
}

#[test]
fn eight_claim_workers_under_random_kills_write_each_item_once_on_sqlite() {
    for seed in ["2", "3"] {
        let dir = crate::support::tempdir();
        let db = dir.path().join("warehouse.db");
        let mut args = storm(seed);
        args.extend(["--db", path_arg(&db)]);
        let run = reclaim_in_dir(dir.path(), &args, LIMIT);
        assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
        assert_exactly_once(&json_of(&run));
        // Read back independently: each item's row once, each item done, and more claimants
        // than workers (the killed ones' leases ended and were taken by their successors).
        let conn = open_ro(&db);
        assert_eq!(count(&conn, "SELECT count(*) FROM records"), 200);
        assert_eq!(
            count(&conn, "SELECT count(DISTINCT task_id) FROM records"),
            200
        );
        assert_eq!(
            count(&conn, "SELECT count(*) FROM queue WHERE done = 1"),
            200
        );
        assert_eq!(count(&conn, "SELECT count(*) FROM checkpoints"), 200);
        assert!(count(&conn, "SELECT count(DISTINCT claimed_by) FROM queue") > 8);
    }
}

/// The long item under claim, at the night's pace and at full speed: the worker that claims it
/// holds its lease through the work (sized by the item's announced length), so no other worker
/// takes it over and does it again; the others go on with the queue meanwhile, and the night
/// ends with every item once. (It used to stop at the paced night's work, the clock waiting on
/// a write the work held back, and at full speed to pass the item from lease to lease.)
#[test]
fn a_long_item_is_held_by_the_worker_doing_it_at_any_speed() {
    for delay in ["10", "0"] {
        let dir = crate::support::tempdir();
        let db = dir.path().join("warehouse.db");
        let args = [
            "run",
            "--strategy",
            "claim",
            "--workers",
            "2",
            "--items",
            "100",
            "--delay-ms",
            delay,
            "--long-item",
            "task-050:2",
            "--progress-deadline",
            "30",
            "--db",
            path_arg(&db),
            "--json",
        ];
        let run = reclaim_in_dir(dir.path(), &args, LIMIT);
        assert_eq!(run.code, Some(0), "{delay}\n{}\n{}", run.stdout, run.stderr);
        let json = json_of(&run);
        assert_eq!(json["derived_status"], "ok", "{json}");
        assert_eq!(number(&json, "rows"), 100, "{json}");
        assert_eq!(number(&json, "duplicated_task_ids"), 0, "{json}");
        let conn = open_ro(&db);
        assert_eq!(
            count(
                &conn,
                "SELECT lease_no FROM queue WHERE task_id = 'task-050'"
            ),
            1,
            "task-050 was claimed more than once at --delay-ms {delay}"
        );
        assert_eq!(
            count(&conn, "SELECT count(DISTINCT task_id) FROM records"),
            100
        );
    }
}

/// Eight claim workers under 12 random kills placed by rows, as a fleet's hosts take back one
/// instance at a time: each kill hits one worker, on its planned row of that worker's own
/// writes, and restarts only it; twelve kills are twelve restarts (where each kill used to
/// restart all eight, and the night ended incomplete after 13 kills at the default limit of
/// 100). 1,500 items carry the twelve kills (the last lands near row 1,100) and no more: each
/// write of a claim fleet is a round trip through the supervisor's clock (grant, claim, write,
/// read), so a loaded machine stretches the night by its wake-ups (at load 45 the supervisor
/// waited 60 s of a 76 s night of 3,000 items for a CPU; at load 55 it took over 540 s).
#[test]
fn a_kill_of_a_claim_fleet_hits_one_worker_on_its_row_and_restarts_only_it() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("warehouse.db");
    let args = [
        "run",
        "--strategy",
        "claim",
        "--workers",
        "8",
        "--items",
        "1500",
        "--kills",
        "12",
        "--kill-rows",
        "5..15",
        "--seed",
        "7",
        "--db",
        path_arg(&db),
        "--json",
    ];
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    assert_eq!(json["derived_status"], "ok", "{json}");
    assert_eq!(number(&json, "rows"), 1500, "{json}");
    assert_eq!(number(&json, "kills"), 12, "{json}");
    assert_eq!(number(&json, "restarts"), 12, "{json}");
    assert_eq!(number(&json, "runs"), 20, "{json}");
    assert_eq!(json["kill_rows_landed"]["at_plan"], 12, "{json}");
    assert_eq!(json["kill_rows_landed"]["past_plan"], 0, "{json}");
    // Each kill names one pid: the worker it hit.
    let kills: Vec<String> = (json["timeline"].as_array().into_iter().flatten())
        .filter_map(serde_json::Value::as_str)
        .filter(|line| line.contains("instance reclaimed by host"))
        .map(str::to_string)
        .collect();
    assert_eq!(kills.len(), 12, "{kills:?}");
    assert!(
        (kills.iter()).all(|k| k
            .split("pid ")
            .nth(1)
            .is_some_and(|pids| !pids.contains(','))),
        "{kills:?}"
    );
    let conn = open_ro(&db);
    assert_eq!(
        count(&conn, "SELECT count(DISTINCT task_id) FROM records"),
        1500
    );
}

/// A long item whose worker is killed in its work every time: after ten claims no worker takes
/// it again; each worker says which item it left and why, and the night ends with the item
/// missing, from the rows (the workers' own word is still `ok`), not passed on without end.
#[test]
fn an_item_claimed_ten_times_and_never_done_is_left_and_said() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("warehouse.db");
    let args = [
        "run",
        "--strategy",
        "claim",
        "--workers",
        "2",
        "--items",
        "20",
        "--long-item",
        "task-003:0.5",
        "--kills",
        "40",
        "--kill-window",
        "0.05..0.3",
        "--seed",
        "1",
        "--db",
        path_arg(&db),
    ];
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(
            "left task-003: claimed 10 times and never done, so no worker takes it again"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("verdict      claimed=ok derived=DATA WRONG (1 missing)"),
        "{}",
        run.stdout
    );
    let conn = open_ro(&db);
    assert_eq!(
        count(
            &conn,
            "SELECT lease_no FROM queue WHERE task_id = 'task-003'"
        ),
        10
    );
    assert_eq!(
        count(&conn, "SELECT count(DISTINCT task_id) FROM records"),
        19
    );
}

/// A worker killed after its claim and before its commit: its lease ends and another worker
/// writes the item, once.
#[test]
fn a_killed_workers_lease_ends_and_another_worker_takes_its_item() {
    let dir = crate::support::tempdir();
    let db = dir.path().join("warehouse.db");
    let run = reclaim_in_dir(
        dir.path(),
        &[
            "run",
            "--strategy",
            "claim",
            "--workers",
            "2",
            "--items",
            "40",
            "--crash-at",
            "task-011:before-write",
            "--seed",
            "1",
            "--db",
            path_arg(&db),
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let died = run
        .stdout
        .lines()
        .find(|l| l.contains("crash ") && l.contains("task-011"))
        .unwrap_or_else(|| panic!("no crash line:\n{}", run.stdout));
    let slot = died
        .split_whitespace()
        .last()
        .unwrap_or_default()
        .to_string();
    let dead_run = run
        .stdout
        .lines()
        .find(|l| l.contains(" start ") && l.ends_with(&slot))
        .and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix("run_id=")))
        .unwrap_or_else(|| panic!("no start line for {slot}:\n{}", run.stdout))
        .to_string();
    let conn = open_ro(&db);
    assert_eq!(count(&conn, "SELECT count(*) FROM records"), 40);
    assert_eq!(
        count(
            &conn,
            "SELECT count(*) FROM records WHERE task_id = 'task-011'"
        ),
        1
    );
    let writer: String = conn
        .query_row(
            "SELECT run_id FROM records WHERE task_id = 'task-011'",
            [],
            |r| r.get(0),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(writer, dead_run, "the dead worker cannot have written it");
}

#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn eight_claim_workers_under_random_kills_write_each_item_once_on_postgres() {
    let bin = pg_bin();
    let dir = folder();
    let mut args = storm("2");
    args.extend(["--warehouse", "postgres", "--keep"]);
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_exactly_once(&json_of(&run));
    on_kept(&bin, dir.path(), psql_agrees);
}

fn psql_agrees(cluster: &Path) {
    assert_eq!(
        psql(
            cluster,
            "SELECT count(*) || ' ' || count(DISTINCT task_id) FROM night.records"
        ),
        "200 200"
    );
    assert_eq!(
        psql(
            cluster,
            "SELECT count(*) FILTER (WHERE done) || ' ' || count(*) FROM night.queue"
        ),
        "200 200"
    );
    assert_eq!(
        psql(cluster, "SELECT count(*) FROM night.checkpoints"),
        "200"
    );
    let claimants: u64 = psql(
        cluster,
        "SELECT count(DISTINCT claimed_by) FROM night.queue",
    )
    .parse()
    .unwrap_or_default();
    assert!(claimants > 8, "{claimants} claimants");
}

/// The shipped `claim` scenario's verdicts: three naive workers write every item three times,
/// claim's eight write each once.
const CLAIM_VERDICTS: [&str; 2] = [
    "verdict      naive  claimed=ok derived=DATA WRONG (120 duplicated task ids)  rows=360 duplicated_task_ids=120 kills=0 restarts=0",
    "verdict      claim  claimed=ok derived=ok  rows=120 duplicated_task_ids=0 kills=0 restarts=0",
];

fn verdict_lines(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| l.starts_with("verdict"))
        .collect()
}

/// The shipped `claim` scenario on SQLite teaches duplicate delivery beside eight claim workers.
#[test]
fn the_claim_scenario_teaches_duplicate_delivery_beside_eight_claim_workers() {
    let dir = folder();
    let sqlite = reclaim_in_dir(
        dir.path(),
        &["run", "--scenario", "claim", "--speed", "16"],
        LIMIT,
    );
    assert_eq!(sqlite.code, Some(1), "{}\n{}", sqlite.stdout, sqlite.stderr);
    assert_eq!(
        verdict_lines(&sqlite.stdout),
        CLAIM_VERDICTS,
        "{}",
        sqlite.stdout
    );
}

/// The same scenario on PostgreSQL gives the same verdicts, psql counting the rows on the kept
/// cluster.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn the_claim_scenario_on_postgres_gives_sqlites_verdicts_and_psql_agrees() {
    let bin = pg_bin();
    let dir = folder();
    let pg = reclaim_in_dir(
        dir.path(),
        &[
            "run",
            "--scenario",
            "claim",
            "--speed",
            "16",
            "--warehouse",
            "postgres",
            "--keep",
        ],
        LIMIT,
    );
    assert_eq!(pg.code, Some(1), "{}\n{}", pg.stdout, pg.stderr);
    assert_eq!(verdict_lines(&pg.stdout), CLAIM_VERDICTS, "{}", pg.stdout);
    assert!(
        pg.stdout
            .contains("schemas:   night_night1_1_naive, night_night1_2_claim"),
        "{}",
        pg.stdout
    );
    on_kept(&bin, dir.path(), |cluster| {
        assert_eq!(
            psql(
                cluster,
                "SELECT count(*) || ' ' || count(DISTINCT task_id) FROM night_night1_1_naive.records"
            ),
            "360 120"
        );
        assert_eq!(
            psql(
                cluster,
                "SELECT count(*) || ' ' || count(DISTINCT task_id) || ' ' || count(DISTINCT run_id) FROM night_night1_2_claim.records"
            ),
            "120 120 8"
        );
    });
}

/// `reclaim run --scenario claim EXTRA` at 16x (its text is the same at any speed:
/// `lecture_stops`, `the_duplicate_delivery_scenario_twice_prints_the_same_text`), exit 1, its
/// text without pids and paths.
fn claim_night(extra: &[&str]) -> String {
    let dir = folder();
    let mut args = vec!["run", "--scenario", "claim", "--speed", "16"];
    args.extend(extra);
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    without_pids_and_paths(&run.stdout)
}

/// A night's timeline: its lines that start with the clock.
fn timeline(text: &str) -> Vec<String> {
    (text.lines())
        .filter(|l| after_clock(l).is_some())
        .map(str::to_string)
        .collect()
}

/// The claim night is a function of the scenario, not of the machine: run twice (the suite's
/// other tests loading the machine meanwhile), it prints the same text but pids, run ids and
/// paths. Which worker claims which item, each worker's count and each naive worker's word are
/// the night's: the writes of one moment are granted in slot order, so the three naive workers'
/// last writes, and the counts each makes after its own, come in that order too.
#[test]
fn the_claim_scenario_twice_prints_the_same_text() {
    let sqlite = claim_night(&[]);
    assert_eq!(sqlite, claim_night(&[]), "two runs on SQLite differ");
    let lines = timeline(&sqlite);
    let done: Vec<&str> = (lines.iter())
        .filter(|l| l.contains("worker  done"))
        .map(String::as_str)
        .collect();
    assert_eq!(done.len(), 11, "{sqlite}");
    for (w, line) in done[..8].iter().enumerate() {
        assert!(
            line.starts_with("02:01:40  claim")
                && line.ends_with(&format!(
                    "rows_written=120  status=ok  inserted=15  w={}",
                    w + 1
                )),
            "{sqlite}"
        );
    }
    for (w, rows) in [358, 359, 360].iter().enumerate() {
        let said = format!("rows_written={rows}  status=ok  inserted=120  w={}", w + 1);
        assert!(
            done[8 + w].starts_with("02:12:36  naive") && done[8 + w].ends_with(&said),
            "{sqlite}"
        );
    }
}

/// On PostgreSQL the claim night's timeline is SQLite's, line for line (SQLite's is the same on
/// every run, above).
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn the_claim_scenario_on_postgres_prints_sqlites_timeline() {
    let pg = claim_night(&["--warehouse", "postgres"]);
    let sqlite = claim_night(&[]);
    assert_eq!(
        timeline(&pg),
        timeline(&sqlite),
        "PostgreSQL's night is not SQLite's"
    );
}

/// Two guarded workers on one queue (`duplicate-delivery`) race for every row, and the unique
/// key lets one insert through: the writes of one moment are granted in slot order, so the first
/// worker inserts every row and the second's are all refused, on every run (before, the split
/// was the machine's: 98/102 in one run, 112/88 in another). Two runs print the same text but
/// pids, run ids and paths.
#[test]
fn the_duplicate_delivery_scenario_twice_prints_the_same_text() {
    // Once at the scenario's pace and once at 16 times it (`--speed`): the same text.
    let night = |speed: &str| -> String {
        let dir = folder();
        let run = reclaim_in_dir(
            dir.path(),
            &["run", "--scenario", "duplicate-delivery", "--speed", speed],
            LIMIT,
        );
        assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
        without_pids_and_paths(&run.stdout)
    };
    let first = night("1");
    assert_eq!(first, night("16"), "two runs differ");
    for (w, inserted) in [200, 0].iter().enumerate() {
        let said = format!(
            "rows_written=200  status=ok  inserted={inserted}  w={}",
            w + 1
        );
        assert!(
            first
                .lines()
                .any(|l| l.contains("guarded     worker  done") && l.ends_with(&said)),
            "{first}"
        );
    }
}

/// The pause: in each lane of eight, the worker holding task-010's first lease is stopped at its
/// write for 60 s, twice its lease. claim's sleeper writes task-010 a second time after the worker
/// that took it over; fenced's lease number turns its commit away. Read back from the kept
/// databases; two runs print the same text but pids, run ids and paths.
#[test]
fn the_pause_scenario_writes_the_paused_item_twice_under_claim_and_once_fenced() {
    let night = || -> (String, tempfile::TempDir) {
        let dir = folder();
        let args = ["run", "--scenario", "the-pause", "--keep", "always"];
        let run = reclaim_in_dir(dir.path(), &args, LIMIT);
        assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
        (without_pids_and_paths(&run.stdout), dir)
    };
    let (first, dir) = night();
    assert_eq!(first, night().0, "two runs differ");
    assert!(
        first.contains("verdict      claim   claimed=ok derived=DATA WRONG (1 duplicated task id)")
            && first.contains("verdict      fenced  claimed=ok derived=ok  rows=40"),
        "{first}"
    );
    let db = |name: &str| {
        walk(dir.path())
            .into_iter()
            .find(|p| p.to_string_lossy().ends_with(name))
            .unwrap_or_else(|| panic!("no {name} under {}", dir.path().display()))
    };
    let ten = "SELECT count(*) FROM records WHERE task_id = 'task-010'";
    let claim = open_ro(&db("-claim.db"));
    assert_eq!(count(&claim, ten), 2);
    assert_eq!(
        count(&claim, "SELECT count(DISTINCT task_id) FROM records"),
        40
    );
    let fenced = open_ro(&db("-fenced.db"));
    assert_eq!(count(&fenced, ten), 1);
    assert_eq!(count(&fenced, "SELECT count(*) FROM records"), 40);
    // The sleeper's lease was taken over: a second lease on the item, in both lanes.
    for conn in [&claim, &fenced] {
        assert_eq!(count(conn, "SELECT lease_no FROM queue WHERE idx = 10"), 2);
    }
}

/// A pause drawn from the seed (`run --pause-at-random SECS`, a scenario's
/// `host.random_pause_for`): the header names the task drawn, the pause lands at its write,
/// claim's sleeper writes that task twice (sqlite3 on the kept database) and fenced's once; the
/// same seed draws the same task and prints the same text.
#[test]
fn a_pause_drawn_from_the_seed_lands_on_its_task_and_claim_writes_it_twice() {
    let night = |dir: &Path, strategy: &str| {
        let args = [
            "run",
            "--strategy",
            strategy,
            "--workers",
            "2",
            "--items",
            "20",
            "--seed",
            "4",
            "--pause-at-random",
            "600",
            "--keep",
            "always",
        ];
        reclaim_in_dir(dir, &args, LIMIT)
    };
    let dir = folder();
    let claim = night(dir.path(), "claim");
    let out = without_pids_and_paths(&claim.stdout);
    assert_eq!(claim.code, Some(1), "{out}\n{}", claim.stderr);
    let task = (out.lines())
        .find_map(|l| l.strip_prefix("pause plan   the worker that reaches "))
        .and_then(|rest| rest.split_once("'s write (drawn from seed 4) is stopped there"))
        .map_or_else(|| panic!("{out}"), |(task, _)| task.to_string());
    assert!(
        out.contains(&format!("at {task}'s write for 600 s")),
        "{out}"
    );
    let db = walk(dir.path())
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "db"))
        .unwrap_or_else(|| panic!("no database under {}", dir.path().display()));
    let conn = open_ro(&db);
    let twice = format!("SELECT count(*) FROM records WHERE task_id = '{task}'");
    assert_eq!(count(&conn, &twice), 2, "{out}");
    assert_eq!(count(&conn, "SELECT count(*) FROM records"), 21, "{out}");
    assert_eq!(
        without_pids_and_paths(&night(folder().path(), "claim").stdout),
        out
    );
    let fenced = night(folder().path(), "fenced");
    assert_eq!(fenced.code, Some(0), "{}\n{}", fenced.stdout, fenced.stderr);
    assert!(
        fenced
            .stdout
            .contains(&format!("at {task}'s write for 600 s")),
        "{}",
        fenced.stdout
    );
    assert!(
        fenced.stdout.contains("rows=20 duplicated_task_ids=0"),
        "{}",
        fenced.stdout
    );

    // The same in a scenario file, both lanes paused at the one task drawn: `--seed 4`
    // replaces the file's 9 and draws the task `run` drew from 4.
    let file = dir.path().join("drawn.toml");
    let scenario = "title = \"a pause drawn\"\nitems = 20\nseed = 9\n[host]\nrandom_pause_for = 600.0\n[[lane]]\nstrategy = \"claim\"\nworkers = 2\n[[lane]]\nstrategy = \"fenced\"\nworkers = 2\n";
    std::fs::write(&file, scenario).unwrap_or_else(|e| panic!("{e}"));
    let run = reclaim_in_dir(
        dir.path(),
        &[
            "run",
            "--scenario",
            path_arg(&file),
            "--speed",
            "8",
            "--seed",
            "4",
        ],
        LIMIT,
    );
    let out = &run.stdout;
    assert!(out.contains("seed=4"), "{out}");
    let paused = format!("at {task}'s write for 600 s");
    assert_eq!(out.matches(&paused).count(), 2, "{out}");
    assert!(
        out.contains("verdict      claim   claimed=ok derived=DATA WRONG (1 duplicated task id)"),
        "{out}"
    );
    assert!(
        out.contains("verdict      fenced  claimed=ok derived=ok  rows=20"),
        "{out}"
    );
}

/// `prove` on a claiming strategy adds a test of a worker stopped past its lease: claim's
/// sleeper writes the middle task a second time (FAIL, said as a lease's lesson), fenced's
/// writes nothing for it (PASS); the other strategies hold no lease and are not given it.
#[test]
fn prove_pauses_a_claiming_worker_past_its_lease_and_only_the_fence_holds() {
    let trial = |strategy: &str| {
        let dir = folder();
        let args = [
            "prove",
            "--strategy",
            strategy,
            "--items",
            "40",
            "--seed",
            "1",
            "--json",
        ];
        let run = reclaim_in_dir(dir.path(), &args, LIMIT);
        assert!(
            matches!(run.code, Some(0 | 1)),
            "{strategy}: {}\n{}",
            run.stdout,
            run.stderr
        );
        json_of(&run)
    };
    let paused = |json: &serde_json::Value| -> serde_json::Value {
        (json["tests"].as_array().into_iter().flatten())
            .find(|t| t["name"] == "a worker paused past its lease")
            .cloned()
            .unwrap_or(serde_json::Value::Null)
    };
    let (claim, fenced, keyed) = std::thread::scope(|scope| {
        let claim = scope.spawn(|| trial("claim"));
        let fenced = scope.spawn(|| trial("fenced"));
        let keyed = trial("keyed");
        let join = |h: std::thread::ScopedJoinHandle<'_, serde_json::Value>| {
            h.join().unwrap_or_else(|_| panic!("a trial panicked"))
        };
        (join(claim), join(fenced), keyed)
    });
    let test = paused(&claim);
    assert_eq!(test["outcome"], "fail", "{claim}");
    assert_eq!(test["rows"], 41, "{test}");
    assert_eq!(test["duplicated_task_ids"], 1, "{test}");
    assert!(
        (test["lessons"].as_array().into_iter().flatten()).any(|l| l
            .as_str()
            .is_some_and(|l| l.contains("fence the write with the lease's number"))),
        "{test}"
    );
    let test = paused(&fenced);
    assert_eq!(test["outcome"], "pass", "{fenced}");
    assert_eq!(test["rows"], 40, "{test}");
    assert!(
        test["detail"]
            .as_str()
            .is_some_and(|d| d.contains("the worker at task-020's write stopped for 60 s")),
        "{test}"
    );
    assert!(paused(&keyed).is_null(), "{keyed}");
}

/// Every file under `dir`, recursively.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}
