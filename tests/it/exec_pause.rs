//! A pause past a lease for your own job (`run --exec --pause-at-rows N:SECS`):
//! `examples/lease_job.py`, two copies leasing items from one queue, one stopped (SIGSTOP to its
//! process group) once the table holds 5 rows, for longer than its lease. The trusting job writes
//! the item taken over twice, and the night says the pause beside the duplicate; the fenced job
//! writes it once. Both read back by the test's own connection, the takeover included, so
//! neither can pass without the pause having outlasted the lease. A pause that never came is
//! `not fired`.

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::support::{count, example, json_of, number, open_ro, run_exec_within, tempdir};

/// A hang guard, not a timing assertion: each night takes about seven seconds.
const LIMIT: Duration = Duration::from_secs(180);

/// 3000 s of the night is 5 s of real time at --scale 600; the job's lease is 2 s.
const PAUSE: &[&str] = &[
    "--items",
    "20",
    "--workers",
    "2",
    "--pause-at-rows",
    "5:3000",
];

fn lease_job(mode: &str) -> String {
    format!(
        "LEASE_MODE={mode} {} {}",
        crate::support::python3(),
        example("lease_job.py")
    )
}

/// The items leased more than once: those another worker took over.
fn taken_over(db: &Path) -> u64 {
    count(
        &open_ro(db),
        "SELECT count(*) FROM queue WHERE lease_no > 1",
    )
}

#[test]
fn a_job_stopped_past_its_lease_writes_the_item_twice_unless_its_write_is_fenced() {
    let tmp = tempdir();
    let dir = tmp.path().join("trusting");
    fs::create_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
    let (run, db) = run_exec_within(
        &dir,
        &lease_job("trusting"),
        &[PAUSE, &["--json"]].concat(),
        LIMIT,
    );
    let json = json_of(&run);
    assert_eq!(run.code, Some(1), "{json}\n{}", run.stderr);
    assert!(taken_over(&db) >= 1, "no item was taken over: {json}");
    let conn = open_ro(&db);
    assert_eq!(count(&conn, "SELECT count(*) FROM records"), 21, "{json}");
    // The item written twice is the one taken over.
    assert_eq!(
        count(
            &conn,
            "SELECT count(*) FROM (SELECT task_id FROM records GROUP BY task_id HAVING count(*) > 1) \
             JOIN queue USING (task_id) WHERE lease_no > 1"
        ),
        1,
        "{json}"
    );
    assert_eq!(number(&json, "duplicated_task_ids"), 1, "{json}");
    assert_eq!(json["pauses"]["landed"], 1, "{json}");
    assert_eq!(number(&json, "kills"), 0, "{json}");
    let lessons = json["lessons"].to_string();
    assert!(
        lessons.contains("1 pause landed and no kill, yet 1 task id written twice"),
        "{lessons}"
    );
    // Fenced, and read from the console's lines this time.
    let dir = tmp.path().join("fenced");
    fs::create_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
    let (run, _) = run_exec_within(&dir, &lease_job("fenced"), PAUSE, LIMIT);
    let out = &run.stdout;
    assert_eq!(run.code, Some(0), "{out}\n{}", run.stderr);
    assert!(
        out.contains("pause plan   the job is stopped (SIGSTOP to its process group) once its table holds 5 rows, for 3000 s of the night, 5.0 s of real time at --scale 600"),
        "{out}"
    );
    assert!(
        out.contains("host pauses job 1 (SIGSTOP to its process group, pid "),
        "{out}"
    );
    assert!(out.contains("job 1 continues (SIGCONT, pid "), "{out}");
    assert!(out.contains("windows      1 pause landed"), "{out}");
    assert!(out.contains("rows=20 duplicated_task_ids=0"), "{out}");
    let db = dir.join("night").join("warehouse.db");
    assert!(taken_over(&db) >= 1, "no item was taken over: {out}");
    assert_eq!(
        count(&open_ro(&db), "SELECT count(DISTINCT task_id) FROM records"),
        20
    );
}

#[test]
fn a_pause_the_rows_never_reached_is_not_fired() {
    if !crate::support::has_sqlite3() {
        eprintln!("skipped: the job is written with the sqlite3 shell, not installed");
        return;
    }
    let tmp = tempdir();
    // One row, then the job ends: the table never holds 3.
    let job = "sqlite3 \"$RECLAIM_DB\" \"CREATE TABLE IF NOT EXISTS records (task_id TEXT); \
               INSERT INTO records VALUES ('task-000');\"";
    let args = ["--items", "5", "--pause-at-rows", "3:60", "--json"];
    let (run, _) = run_exec_within(tmp.path(), job, &args, LIMIT);
    let json = json_of(&run);
    assert_eq!(run.code, Some(1), "{json}");
    assert_eq!(json["pauses"]["landed"], 0, "{json}");
    assert!(
        json.to_string().contains(
            "the pause at 3 rows never happened: the table never held 3 rows while a job ran"
        ),
        "{json}"
    );
}

/// The same pause in a scenario file (`host.pause_at_rows = "5:600"`, exec lanes only; 6 s of
/// real time at the scenario's 100x, past the job's 2 s lease): the trusting job writes the
/// item taken over twice; `random_pause_for` draws the row count from the seed instead (seed 4
/// draws 5 of 20, as `run --pause-at-random` does: `claim.rs`).
#[test]
fn a_scenario_pauses_its_jobs_at_rows_typed_or_drawn() {
    let tmp = tempdir();
    let file = tmp.path().join("lease.toml");
    let scenario = |host: &str| {
        format!(
            "title = \"a job paused\"\nitems = 20\nseed = 4\n[host]\n{host}\n[[lane]]\nexec = \"{}\"\nworkers = 2\n",
            lease_job("trusting").replace('"', "\\\"")
        )
    };
    for (host, at) in [
        ("pause_at_rows = \"5:600\"", "at 5 rows"),
        ("random_pause_for = 600.0", "at 5 rows"),
    ] {
        fs::write(&file, scenario(host)).unwrap_or_else(|e| panic!("{e}"));
        let args = [
            "run",
            "--scenario",
            &file.display().to_string(),
            "--allow-exec",
        ];
        let run = crate::support::reclaim_in_dir(tmp.path(), &args, LIMIT);
        let out = &run.stdout;
        assert_eq!(run.code, Some(1), "{host}: {out}\n{}", run.stderr);
        assert!(
            out.contains("host pauses job 1 (SIGSTOP to its process group"),
            "{out}"
        );
        assert!(out.contains(at), "{host}: {out}");
        assert!(
            out.contains("rows=21 duplicated_task_ids=1"),
            "{host}: {out}"
        );
    }
}
