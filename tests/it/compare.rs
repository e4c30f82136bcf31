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
