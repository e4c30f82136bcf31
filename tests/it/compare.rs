//! `run --exec --compare`: a job judged by its effects against the undisturbed night. The
//! ledger (`examples/ledger_job.py`) killed between its balance commit and its record of the
//! transfer applies it again: no extra row anywhere (the row rule says ok), a wrong balance the
//! comparison names; its safe form passes once its timestamp is named volatile; the psql job on
//! PostgreSQL shows its own nondeterminism (`now()`), said and not judged.

use std::path::Path;
use std::time::Duration;

use crate::support::{
    assert_one_line_error, assert_usage_error, json_of, path_arg, python3, reclaim_in_dir, tempdir,
};

const LIMIT: Duration = Duration::from_secs(120);

fn ledger() -> String {
    format!(
        "{} {}/examples/ledger_job.py",
        python3(),
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The ledger in its safe form: the mode in the command, as the job's own environment.
fn safe_ledger() -> String {
    format!("LEDGER_MODE=safe {}", ledger())
}

const QUEUE: [&str; 8] = [
    "--table",
    "applied",
    "--key",
    "transfer_id",
    "--key-format",
    "tr-%04d",
    "--items",
    "12",
];

fn balances(db: &Path) -> Vec<(String, i64)> {
    let conn = crate::support::open_ro(db);
    let mut select = conn
        .prepare("SELECT id, balance FROM accounts ORDER BY id")
        .unwrap_or_else(|e| panic!("{}: {e}", db.display()));
    select
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
        .unwrap_or_else(|e| panic!("{}: {e}", db.display()))
        .into_iter()
        .collect()
}

#[test]
fn the_naive_ledger_killed_between_its_commits_differs_where_the_row_rule_sees_nothing() {
    let dir = tempdir();
    let job = ledger();
    let mut args = vec!["run", "--exec", &job];
    args.extend(QUEUE);
    args.extend([
        "--crash-at",
        "tr-0005:after-balance-commit",
        "--compare",
        "--ignore-column",
        "applied.applied_at",
        "--json",
    ]);
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    // One row per transfer: the row rule has nothing to say.
    assert_eq!(json["derived_status"], "ok", "{json}");
    assert_eq!(json["outcome"], "fail", "{json}");
    // Transfer 5 moves 15 from acct-5 to acct-0; applied twice, each is 15 off.
    let said = json["state"]["diffs"][0]["said"]
        .as_str()
        .unwrap_or_default();
    assert!(
        said.starts_with("accounts: 2 rows differ (id=acct-0 balance: reference "),
        "{said}"
    );
    let reasons = json["judgement"]["wrong"][0]["said"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reasons.starts_with("state differs from the undisturbed night: accounts: 2 rows differ"),
        "{json}"
    );
    // The databases agree: the night's balances are the reference's but for the transfer
    // applied twice.
    let folder = Path::new(json["folder"]["path"].as_str().unwrap_or_default());
    let night = balances(&folder.join("warehouse.db"));
    let reference = balances(&folder.join("night-reference-1").join("warehouse.db"));
    assert_eq!(
        reference,
        balances(&folder.join("night-reference-2").join("warehouse.db"))
    );
    let off: Vec<(String, i64)> = (night.iter().zip(&reference))
        .filter(|(a, b)| a.1 != b.1)
        .map(|(a, b)| (a.0.clone(), a.1 - b.1))
        .collect();
    assert_eq!(
        off,
        [("acct-0".to_string(), 15), ("acct-5".to_string(), -15)]
    );
    assert!(
        said.contains(&format!(
            "reference {}, this night {}",
            reference[0].1, night[0].1
        )),
        "{said}"
    );
}

#[test]
fn the_safe_ledger_is_nondeterministic_in_its_timestamp_until_named_then_passes() {
    let dir = tempdir();
    let job = safe_ledger();
    let mut args = vec!["run", "--exec", &job];
    args.extend(QUEUE);
    args.extend([
        "--checkpoint-table",
        "applied",
        "--kills",
        "1",
        "--seed",
        "5",
        "--compare",
        "--json",
    ]);
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    assert_eq!(json["outcome"], "untested", "{json}");
    assert_eq!(
        json["state"]["nondeterministic"]["columns"],
        serde_json::json!(["applied.applied_at"]),
        "{json}"
    );
    let untested = json["judgement"]["untested"].to_string();
    assert!(
        untested.contains("--ignore-column applied.applied_at"),
        "{json}"
    );
    args.extend(["--ignore-column", "applied.applied_at", "--strict"]);
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    assert_eq!(json["outcome"], "pass", "{json}");
    assert_eq!(json["kills"], 1, "{json}");
    assert_eq!(json["state"]["diffs"], serde_json::json!([]), "{json}");
}

#[test]
fn compare_is_refused_before_anything_starts_where_it_cannot_work() {
    let dir = tempdir();
    let job = ledger();
    let db = dir.path().join("mine.db");
    let run = reclaim_in_dir(
        dir.path(),
        &["run", "--exec", &job, "--db", path_arg(&db), "--compare"],
        LIMIT,
    );
    assert_one_line_error(&run, "--compare runs the undisturbed nights");
    assert!(!db.exists());
    let run = reclaim_in_dir(
        dir.path(),
        &[
            "run",
            "--exec",
            &job,
            "--compare",
            "--ignore-column",
            "balance",
        ],
        LIMIT,
    );
    assert_usage_error(&run, "--ignore-column");
    let run = reclaim_in_dir(
        dir.path(),
        &["run", "--strategy", "naive", "--compare"],
        LIMIT,
    );
    assert_one_line_error(&run, "--compare judges your --exec job");
}

#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn on_postgres_a_job_stamping_now_is_said_nondeterministic_never_judged() {
    let dir = crate::support::folder();
    let job = format!("sh {}/examples/psql_job.sh", env!("CARGO_MANIFEST_DIR"));
    let args = [
        "run",
        "--exec",
        &job,
        "--items",
        "6",
        "--kills",
        "1",
        "--seed",
        "2",
        "--warehouse",
        "postgres",
        "--compare",
        "--json",
    ];
    let run = reclaim_in_dir(dir.path(), &args, Duration::from_secs(240));
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    assert_eq!(
        json["state"]["tables"],
        serde_json::json!(["checkpoints", "records"]),
        "{json}"
    );
    assert_eq!(
        json["state"]["nondeterministic"]["columns"],
        serde_json::json!(["checkpoints.finished"]),
        "{json}"
    );
    assert_eq!(json["state"]["diffs"], serde_json::json!([]), "{json}");
    assert_eq!(json["outcome"], "untested", "{json}");
}

/// A table or column named for the comparison that the undisturbed night never wrote (a
/// typo) leaves the night untested, never passed: the comparison would not have looked.
#[test]
fn a_table_or_column_the_reference_lacks_is_untested_never_a_pass() {
    let dir = tempdir();
    let job = safe_ledger();
    for (flag, name) in [
        ("--compare-table", "acounts"),
        ("--ignore-column", "applied.aplied_at"),
        ("--ignore-column", "nowhere.applied_at"),
    ] {
        let mut args = vec!["run", "--exec", &job];
        args.extend(QUEUE);
        args.extend([
            "--checkpoint-table",
            "applied",
            "--kills",
            "1",
            "--seed",
            "5",
            "--compare",
            "--ignore-column",
            "applied.applied_at",
            flag,
            name,
            "--strict",
            "--json",
        ]);
        let run = reclaim_in_dir(dir.path(), &args, LIMIT);
        assert_eq!(
            run.code,
            Some(1),
            "{flag} {name}:\n{}\n{}",
            run.stdout,
            run.stderr
        );
        let json = json_of(&run);
        assert_eq!(json["outcome"], "untested", "{flag} {name}: {json}");
        let untested = json["judgement"]["untested"].to_string();
        assert!(
            untested.contains(&format!("{flag} {name}: the undisturbed night has no such")),
            "{flag} {name}: {json}"
        );
    }
}

/// `prove --compare`: every test's nights judged by their tables too, against one undisturbed
/// night run before the tests. The naive ledger's rows are right in every test (no key twice,
/// none missing) and it fails by its balances, which sqlite3 confirms in the kept folder; the
/// safe ledger's nights are the same as the reference's.
#[test]
fn prove_judges_every_test_by_its_tables_too() {
    let dir = tempdir();
    let job = ledger();
    let mut args = vec!["prove", "--exec", &job];
    args.extend(QUEUE);
    args.extend([
        "--seed",
        "3",
        "--compare",
        "--ignore-column",
        "applied.applied_at",
        "--json",
    ]);
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    assert_eq!(json["outcome"], "fail", "{json}");
    let reference = json["reference"].as_str().unwrap_or_default();
    assert!(
        reference
            .starts_with("2 tables (accounts, applied), 20 rows; the two undisturbed nights agree"),
        "{json}"
    );
    let tests = json["tests"].as_array().cloned().unwrap_or_default();
    for test in &tests {
        // The row rule has nothing to say: every failure here is the tables'.
        assert_eq!(test["duplicated_task_ids"], 0, "{test}");
        assert_eq!(test["missing"], 0, "{test}");
    }
    let failed: Vec<&serde_json::Value> =
        (tests.iter()).filter(|t| t["outcome"] == "fail").collect();
    assert!(!failed.is_empty(), "{json}");
    for test in &failed {
        assert!(
            test["account"]
                .to_string()
                .contains("state differs from the undisturbed night: accounts:"),
            "{test}"
        );
    }
    // The two workers' night, read with sqlite3's own library: its balances are not the
    // reference's, as the test said.
    let kept = Path::new(json["kept"].as_str().unwrap_or_default());
    let reference = balances(&kept.join("night-reference-1").join("warehouse.db"));
    let two = balances(&kept.join("night04-two-workers").join("warehouse.db"));
    let said_two = &tests[1];
    assert_eq!(
        said_two["outcome"] == "fail",
        two != reference,
        "{said_two}\n{two:?}\n{reference:?}"
    );

    let job = safe_ledger();
    let mut args = vec!["prove", "--exec", &job];
    args.extend(QUEUE);
    args.extend([
        "--seed",
        "3",
        "--compare",
        "--ignore-column",
        "applied.applied_at",
        "--json",
    ]);
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    let tests = json["tests"].as_array().cloned().unwrap_or_default();
    assert!(tests.iter().all(|t| t["outcome"] != "fail"), "{json}");
    assert_eq!(
        tests[0]["detail"]
            .as_str()
            .unwrap_or_default()
            .matches("state the same")
            .count(),
        3,
        "{json}"
    );
    assert_eq!(tests[1]["outcome"], "pass", "{json}");
}

/// `map --exec --compare`: each cell's night judged by its tables too. The naive ledger killed
/// at its `after-balance-commit` point is wrong in every cell by its balances alone, right at
/// `after-commit`; each cell's verdict is what sqlite3 reads in its kept database against the
/// reference's. The safe ledger: every cell right, `--strict` included.
#[test]
fn the_map_judges_each_cell_by_its_tables_as_sqlite3_reads_them() {
    let dir = tempdir();
    let job = ledger();
    let mut args = vec!["map", "--exec", &job];
    args.extend(QUEUE);
    args.extend([
        "--tasks",
        "0..5",
        "--compare",
        "--ignore-column",
        "applied.applied_at",
        "--keep",
        "--json",
    ]);
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    assert_eq!(json["outcome"], "fail", "{json}");
    let kept = Path::new(json["kept"].as_str().unwrap_or_default());
    let reference = balances(&kept.join("night-reference-1").join("warehouse.db"));
    let cells = json["cells"].as_array().cloned().unwrap_or_default();
    assert_eq!(cells.len(), 12, "{json}");
    for cell in &cells {
        let db = Path::new(cell["db"].as_str().unwrap_or_default());
        let differs = balances(db) != reference;
        assert_eq!(cell["state"] != "same", differs, "{cell}");
        assert_eq!(differs, cell["band"] == "after-balance-commit", "{cell}");
        // One row per transfer all the same: only the tables say it.
        assert_eq!(cell["duplicated_task_ids"], 0, "{cell}");
        assert_eq!(cell["missing"], 0, "{cell}");
    }

    let job = safe_ledger();
    let mut args = vec!["map", "--exec", &job];
    args.extend(QUEUE);
    args.extend([
        "--tasks",
        "0..5",
        "--compare",
        "--ignore-column",
        "applied.applied_at",
        "--strict",
        "--plain",
    ]);
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("after-commit: 6 of 6 right") && run.stdout.contains("outcome: PASS"),
        "{}",
        run.stdout
    );
}

/// `shrink --exec --compare`: a recorded night of the naive ledger whose rows ended right is
/// searched by its tables; the kill found is given back as the `run --exec ... --compare`
/// command that shows it, and that command fails by the tables.
#[test]
fn shrink_finds_the_kill_that_breaks_the_tables_and_gives_the_command_that_shows_it() {
    let dir = tempdir();
    let job = ledger();
    let night = dir.path().join("night.jsonl");
    let mut args = vec!["run", "--exec", &job];
    args.extend(QUEUE);
    args.extend(["--kills", "1", "--seed", "4", "--record", path_arg(&night)]);
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let mut args = vec!["shrink", path_arg(&night), "--exec", &job];
    args.extend(QUEUE);
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_one_line_error(&run, "--compare searches by the tables too");
    args.extend(["--compare", "--ignore-column", "applied.applied_at"]);
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(
            "--crash-at tr-0000:after-balance-commit --compare --ignore-column applied.applied_at"
        ),
        "{}",
        run.stdout
    );
    // The command it gives, run as printed (reclaim's own path for the word `reclaim`).
    let command = (run.stdout.lines())
        .find(|l| l.starts_with("reclaim run "))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    let mut replay = std::process::Command::new("sh");
    replay
        .arg("-c")
        .arg(format!("\"$RECLAIM\" {}", &command["reclaim ".len()..]))
        .env("RECLAIM", crate::support::BIN)
        .env("TMPDIR", dir.path())
        .current_dir(dir.path());
    let replay = crate::support::run_within(replay, command, LIMIT);
    let stdout = &replay.stdout;
    assert_eq!(replay.code, Some(1), "{stdout}\n{}", replay.stderr);
    assert!(
        stdout.contains(
            "result       FAIL: state differs from the undisturbed night: accounts: 2 rows differ"
        ),
        "{stdout}"
    );
}
