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
        // Each worker's 12 transfers take 1.8 s: at 10 ms (0.12 s) a first worker under a
        // load of 20 finished before the second's Python had read what was done, and the two
        // workers' night found nothing to break (a reclaim attempt starts at its spawn).
        "--delay-ms",
        "150",
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
    assert_eq!(said_two["name"], "two workers at once on one database");
    assert_eq!(said_two["outcome"], "fail", "{said_two}");
    assert_ne!(two, reference, "{said_two}");

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
        assert_eq!(differs, cell["band"] == "after-balance-commit", "{cell}");
        if differs {
            let tables = cell["state"]["differs"]["tables"].as_str();
            assert_eq!(tables, Some("accounts 2 rows"), "{cell}");
        } else {
            assert_eq!(cell["state"], "same", "{cell}");
        }
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

/// A map whose `--compare` has no reference (a table name the undisturbed night never wrote) is
/// UNTESTED in every output, its JUnit file included, never all right.
#[test]
fn a_map_without_a_reference_is_untested_in_its_junit_too() {
    let dir = tempdir();
    let job = safe_ledger();
    let junit = dir.path().join("map.xml");
    let mut args = vec!["map", "--exec", &job];
    args.extend(QUEUE);
    args.extend([
        "--tasks",
        "0..1",
        "--compare",
        "--compare-table",
        "acounts",
        "--junit",
        path_arg(&junit),
        "--json",
    ]);
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    assert_eq!(json["outcome"], "untested", "{json}");
    assert_eq!(json["all_right"], false, "{json}");
    let reference = json["reference"].as_str().unwrap_or_default();
    assert!(
        reference
            .starts_with("none: --compare-table acounts: the undisturbed night has no such table"),
        "{json}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap_or_else(|e| panic!("{e}"));
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let case = (doc.descendants())
        .find(|n| n.attribute("name") == Some("the undisturbed night (--compare)"))
        .unwrap_or_else(|| panic!("{xml}"));
    assert!(case.children().any(|c| c.has_tag_name("skipped")), "{xml}");
    args.push("--strict");
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let xml = std::fs::read_to_string(&junit).unwrap_or_else(|e| panic!("{e}"));
    assert!(xml.contains("--strict: a failure"), "{xml}");
}

/// The ledger scenario (`examples/ledger.toml`): two exec lanes with `compare = true`, run
/// headless. Both lanes' rows are right; the naive lane fails by its tables, the safe one does
/// not, in the one account the console and `--json` share.
#[test]
fn the_ledger_scenario_judges_each_lane_by_its_tables_headless() {
    let dir = tempdir();
    let scenario = format!("{}/examples/ledger.toml", env!("CARGO_MANIFEST_DIR"));
    let args = ["run", "--scenario", &scenario, "--allow-exec", "--json"];
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let lanes: Vec<serde_json::Value> = (run.stdout.lines())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lanes.len(), 2, "{}", run.stdout);
    let (naive, safe) = (&lanes[0], &lanes[1]);
    assert_eq!(naive["lane"], "ledger-naive");
    for lane in [naive, safe] {
        assert_eq!(lane["derived_status"], "ok", "{lane}");
        assert_eq!(lane["kills"], 1, "{lane}");
    }
    assert_eq!(naive["outcome"], "fail", "{naive}");
    let said = naive["state"]["diffs"][0]["said"]
        .as_str()
        .unwrap_or_default();
    assert!(said.starts_with("accounts: 2 rows differ"), "{naive}");
    assert_eq!(safe["state"]["diffs"], serde_json::json!([]), "{safe}");
    assert_ne!(safe["outcome"], "fail", "{safe}");
}

/// `compare` in a scenario file is checked as `--compare` is: for an exec lane only, its
/// companions only beside it, its columns as TABLE.COLUMN; each refused in one line, exit 2.
#[test]
fn a_scenario_lane_compares_only_as_run_would() {
    let dir = tempdir();
    for (lane, needle) in [
        (
            "strategy = \"naive\"\ncompare = true\n",
            "compare judges an exec lane's job by its tables",
        ),
        (
            "exec = \"true\"\ncompare_tables = [\"accounts\"]\n",
            "compare_tables and ignore_columns need compare = true",
        ),
        (
            "exec = \"true\"\ncompare = true\nignore_columns = [\"balance\"]\n",
            "ignore_columns",
        ),
    ] {
        let file = dir.path().join("bad.toml");
        std::fs::write(
            &file,
            format!("title = \"bad\"\nitems = 4\n[[lane]]\n{lane}"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let run = reclaim_in_dir(
            dir.path(),
            &["run", "--scenario", path_arg(&file), "--allow-exec"],
            LIMIT,
        );
        assert_one_line_error(&run, needle);
    }
}

/// The ledger scenario in the dashboard: each lane's panel says its tables against its
/// undisturbed night's once it is over, and the kept databases agree (read with sqlite3's own
/// library).
#[test]
fn the_dashboard_says_each_lanes_tables_against_its_undisturbed_night() {
    use crate::support::Dashboard;
    use std::time::Instant;
    let dir = tempdir();
    let scenario = format!("{}/examples/ledger.toml", env!("CARGO_MANIFEST_DIR"));
    let mut dashboard = Dashboard::start(
        &["tui", "--scenario", &scenario, "--allow-exec"],
        dir.path(),
        120,
        40,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let deadline = || Instant::now() + LIMIT * crate::support::SLACK;
    dashboard
        .wait_for("the commands shown first", deadline(), |screen| {
            screen.contents().contains("press Enter to start the night")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    dashboard.send(b"\r").unwrap_or_else(|e| panic!("{e}"));
    dashboard
        .wait_for("both lanes' tables said", deadline(), |screen| {
            let text = screen.contents();
            text.contains("tables  state differs: accounts 2 rows")
                && text.contains("tables  state the same")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    dashboard.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    let status = dashboard
        .wait_exit(Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.exit_code(), 0, "{}", dashboard.text());
    // Kept: the night went wrong by the naive lane's tables.
    let home = dir
        .path()
        .join(format!("reclaim-{}", nix::unistd::geteuid()));
    let night = std::fs::read_dir(&home)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("night1-1-ledger-naive").is_dir())
        .unwrap_or_else(|| panic!("no kept night under {}", home.display()));
    let db = |lane: &str| night.join(format!("night1-{lane}")).join("warehouse.db");
    let reference = |lane: &str| {
        (night.join(format!("{lane}-undisturbed")))
            .join("night-reference-1")
            .join("warehouse.db")
    };
    assert_ne!(
        balances(&db("1-ledger-naive")),
        balances(&reference("ledger-naive"))
    );
    assert_eq!(
        balances(&db("2-ledger-safe")),
        balances(&reference("ledger-safe"))
    );
}
