//! Someone's own job on PostgreSQL under `prove` and `map`: `examples/psql_job.sh` (safe to
//! kill) passing, `examples/psql_naive_job.sh` (no key, no checkpoint) caught, each night in a
//! schema of its own on the private cluster, psql on the kept cluster agreeing.

use std::time::Duration;

use crate::support::{cluster_folder, folder, on_kept, pg_bin, psql};
use crate::support::{json_of, reclaim_in_dir};

/// A hang guard, not a timing assertion: a proof is several nights, each in a schema of its own
/// on the private cluster, and at a load of 40 on 2 cores `prove` over 20 items ran past
/// 3 x 240 s (2026-12-04).
const LIMIT: Duration = Duration::from_secs(600);

fn job(script: &str) -> String {
    format!("sh {}/examples/{script}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn prove_exec_on_postgres_passes_the_safe_psql_job() {
    let bin = pg_bin();
    let dir = folder();
    let safe = job("psql_job.sh");
    let args = [
        "prove",
        "--exec",
        &safe,
        "--items",
        "20",
        "--kills",
        "2",
        "--seed",
        "3",
        "--warehouse",
        "postgres",
        "--keep",
        "--json",
    ];
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    // The postmortem's three tests and, on a private cluster, two commits' answers lost and
    // the server restarted mid-night.
    assert_eq!(json["passed"], 5, "{json}");
    assert_eq!(json["failed"], 0, "{json}");
    // The wiped test deleted the job's checkpoints on the server, not a file.
    let wiped = &json["tests"][2];
    assert!(
        wiped["detail"]
            .as_str()
            .is_some_and(|d| d.contains("20 checkpoints deleted")),
        "{json}"
    );
    // The closing lines (stderr beside --json) name every night's schema.
    assert!(
        run.stderr.contains("night_night01_kill_test")
            && run.stderr.contains("night_night05_wiped"),
        "{}",
        run.stderr
    );
    on_kept(&bin, dir.path(), |cluster| {
        let schemas = psql(
            cluster,
            "SELECT string_agg(nspname, ' ' ORDER BY nspname) FROM pg_namespace WHERE nspname LIKE 'night%'",
        );
        assert_eq!(
            schemas,
            "night_night01_kill_test night_night02_kill_test night_night03_kill_test night_night04_two_workers night_night05_wiped night_night06_lost_answers night_night07_server_restart"
        );
        for schema in schemas.split(' ') {
            assert_eq!(
                psql(
                    cluster,
                    &format!(
                        "SELECT count(*) || ' ' || count(DISTINCT task_id) FROM {schema}.records"
                    )
                ),
                "20 20",
                "{schema}"
            );
        }
        // The rerun after the wipe checkpointed every item again.
        assert_eq!(
            psql(
                cluster,
                "SELECT count(*) FROM night_night05_wiped.checkpoints"
            ),
            "20"
        );
    });
}

/// The shipped psql job without a key or a checkpoint: every test that can catch it does, and
/// the one that cannot apply (no checkpoint table named) says so.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn prove_exec_on_postgres_catches_the_naive_psql_job() {
    let dir = folder();
    let naive = job("psql_naive_job.sh");
    let run = reclaim_in_dir(
        dir.path(),
        &[
            "prove",
            "--exec",
            &naive,
            "--items",
            "20",
            "--kills",
            "2",
            "--seed",
            "3",
            "--warehouse",
            "postgres",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("1. FAIL  kill test") && run.stdout.contains("2. FAIL  two workers"),
        "{}",
        run.stdout
    );
    // A lost answer ends that psql, then the job, and the job restarted begins at its first
    // item again.
    assert!(
        run.stdout.contains("4. FAIL  two commits' answers lost"),
        "{}",
        run.stdout
    );
    // The server restarted at 10 rows fails the job when a psql is connected or connecting
    // while it is down. Each item is a psql of its own, so on a loaded machine the restart can
    // fall wholly between two of them (seen at load 24): then no write is lost, and the test
    // says what it saw, a pass with no duplicate.
    let restart = (run.stdout.lines())
        .skip_while(|l| !l.starts_with("5. "))
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        restart.starts_with("5. FAIL  the server restarted mid-night")
            || (restart.starts_with("5. PASS  the server restarted mid-night")
                && restart.contains(" 0 duplicated")),
        "{}",
        run.stdout
    );
    // It keeps no checkpoints: the third test says it could not apply, never that it held.
    assert!(
        run.stdout.contains(
            "SKIPPED: reclaim was not told the job's checkpoint table (--checkpoint-table)"
        ),
        "{}",
        run.stdout
    );
    assert_kept_with_its_night(dir.path(), &run);
}

/// The failed trial's rows stay to be looked at: its cluster kept with its folder (the
/// default policy), said so, stopped; `reclaim kept --clean` removes both.
fn assert_kept_with_its_night(dir: &std::path::Path, run: &crate::support::Run) {
    assert!(
        run.stdout
            .contains("private cluster kept (--keep failed: the night failed;"),
        "{}",
        run.stdout
    );
    assert!(cluster_folder(dir).is_some(), "{}", run.stdout);
    let clean = reclaim_in_dir(dir, &["kept", "--clean"], LIMIT);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);
    assert!(cluster_folder(dir).is_none(), "the cluster is left");
}

#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn map_exec_on_postgres_maps_the_safe_job_right_and_the_naive_one_wrong() {
    let bin = pg_bin();
    let dir = folder();
    let safe = job("psql_job.sh");
    // The naive job's map beside the safe one's, in a folder (and on a cluster) of its own.
    let naive_dir = folder();
    let naive = job("psql_naive_job.sh");
    let naive_map = std::thread::spawn({
        let (naive, naive_dir) = (naive.clone(), naive_dir.path().to_path_buf());
        move || {
            reclaim_in_dir(
                &naive_dir,
                &[
                    "map",
                    "--exec",
                    &naive,
                    "--items",
                    "6",
                    "--warehouse",
                    "postgres",
                    "--json",
                ],
                LIMIT,
            )
        }
    });
    let run = reclaim_in_dir(
        dir.path(),
        &[
            "map",
            "--exec",
            &safe,
            "--items",
            "6",
            "--warehouse",
            "postgres",
            "--keep",
            "--json",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    assert_eq!(json["nights"], 6, "{json}");
    // Every cell whose kill fired is right. The kill after the sixth row, the job's last, races
    // the job's own exit (a heartbeat and one more psql): on a loaded machine the job can end
    // first, and the map then says that cell tested nothing, which is true, not a failure.
    assert_eq!(json["seen_wrong"], serde_json::json!([]), "{json}");
    let cells = json["cells"]
        .as_array()
        .unwrap_or_else(|| panic!("no cells: {json}"));
    for (k, cell) in cells.iter().enumerate() {
        assert_eq!(cell["duplicated_task_ids"], 0, "{cell}");
        assert_eq!(cell["missing"], 0, "{cell}");
        assert!(cell["killed"] == true || k == cells.len() - 1, "{cell}");
    }
    on_kept(&bin, dir.path(), |cluster| {
        // The undisturbed night and six killed ones, each in its own schema, each whole.
        let schemas = psql(
            cluster,
            "SELECT string_agg(nspname, ' ' ORDER BY nspname) FROM pg_namespace WHERE nspname LIKE 'night%'",
        );
        let schemas: Vec<&str> = schemas.split(' ').collect();
        assert_eq!(schemas.len(), 7, "{schemas:?}");
        assert!(schemas.contains(&"night_night_probe"), "{schemas:?}");
        for schema in schemas {
            assert_eq!(
                psql(
                    cluster,
                    &format!(
                        "SELECT count(*) || ' ' || count(DISTINCT task_id) FROM {schema}.records"
                    )
                ),
                "6 6",
                "{schema}"
            );
        }
    });

    let run = naive_map
        .join()
        .unwrap_or_else(|_| panic!("the naive map panicked"));
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    let cells = json["cells"]
        .as_array()
        .unwrap_or_else(|| panic!("no cells: {json}"));
    assert_eq!(cells.len(), 6, "{json}");
    // Every kill after a row count k (that fired) leaves k rows written twice by the restart.
    for cell in cells {
        if cell["killed"] == true {
            assert!(
                cell["duplicated_task_ids"].as_u64().is_some_and(|d| d > 0),
                "{cell}"
            );
        }
    }
    assert!(cells.iter().any(|c| c["killed"] == true), "{json}");
    assert!(cluster_folder(dir.path()).is_none(), "the cluster is left");
    assert!(
        cluster_folder(naive_dir.path()).is_none(),
        "the naive map's cluster is left"
    );
}

/// `--keys-sql` and `--checkpoint-table` on the server: the queue read by PostgreSQL's own SQL
/// (which SQLite could not run), in a trial rolled back (psql finds no trial schema); the kills
/// placed by the checkpoints read there: after a commit, or, with a row whose checkpoint never
/// came (made by the setup), after the row's commit. A key with a control character and a query
/// that writes are one line each, escaped, exit 2, nothing left.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn keys_sql_and_checkpoint_table_run_on_the_server() {
    let bin = pg_bin();
    let dir = folder();
    let safe = job("psql_job.sh");
    let keys = "SELECT 'task-' || lpad(g::text, 3, '0') FROM generate_series(0, 19) g";
    let night = |dir: &std::path::Path, setup: Option<&str>, keep: bool| {
        let mut args = vec![
            "run",
            "--exec",
            &safe,
            "--keys-sql",
            keys,
            "--checkpoint-table",
            "checkpoints",
            "--kills",
            "2",
            "--kill-rows",
            "5..10",
            "--seed",
            "4",
            "--warehouse",
            "postgres",
            "--json",
        ];
        if let Some(setup) = setup {
            args.extend(["--setup-sql", setup]);
        }
        if keep {
            args.push("--keep");
        }
        let run = reclaim_in_dir(dir, &args, LIMIT);
        assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
        let json = json_of(&run);
        assert_eq!(json["rows"], 20, "{json}");
        assert_eq!(json["missing"], 0, "{json}");
        assert_eq!(json["kills"], 2, "{json}");
        json["kills_in_window"].clone()
    };
    // Row and checkpoint in one transaction: every kill after a commit, placed.
    let windows = night(dir.path(), None, true);
    assert_eq!(windows["after-commit"], 2, "{windows}");
    assert_eq!(windows["after-a-commit-unplaced"], 0, "{windows}");
    on_kept(&bin, dir.path(), |cluster| {
        assert_eq!(
            psql(
                cluster,
                "SELECT count(*) || ' ' || count(DISTINCT task_id) FROM night.records"
            ),
            "20 20"
        );
        assert_eq!(
            psql(cluster, "SELECT count(*) FROM night.checkpoints"),
            "20"
        );
        // The trial that read the keys left nothing behind.
        assert_eq!(
            psql(
                cluster,
                "SELECT count(*) FROM pg_namespace WHERE nspname LIKE '%keys_trial%'"
            ),
            "0"
        );
    });
    // A row the setup made without its checkpoint: the kills land after a row's commit. Beside
    // it, the two refusals: each night on a cluster of its own, in a folder of its own.
    let refusals = [
        (None, "SELECT E'task-\\x1b[31m001'", "task-\\u{1b}[31m001"),
        (
            Some("CREATE TABLE queue(k text); INSERT INTO queue VALUES ('a')"),
            "DELETE FROM queue RETURNING k",
            "read-only transaction",
        ),
    ];
    let second = folder();
    std::thread::scope(|scope| {
        let safe = safe.as_str();
        let refused = refusals.map(|r| scope.spawn(move || refused_keys_sql(safe, r)));
        let windows = night(
            second.path(),
            Some(
                "CREATE TABLE records(task_id text PRIMARY KEY, payload text NOT NULL); \
                 CREATE TABLE checkpoints(task_id text PRIMARY KEY, finished timestamptz NOT NULL); \
                 INSERT INTO records VALUES ('task-019', 'early')",
            ),
            false,
        );
        assert_eq!(windows["after-row-commit"], 2, "{windows}");
        for r in refused {
            r.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        }
    });
}

/// `run --exec SAFE --keys-sql SQL` (after `setup`) on a private cluster in a folder of its
/// own: refused in one line naming `says`, escaped, exit 2, and the cluster gone.
fn refused_keys_sql(safe: &str, (setup, sql, says): (Option<&str>, &str, &str)) {
    let dir = folder();
    let mut args = vec![
        "run",
        "--exec",
        safe,
        "--keys-sql",
        sql,
        "--warehouse",
        "postgres",
    ];
    if let Some(setup) = setup {
        args.extend(["--setup-sql", setup]);
    }
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(2), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains(says), "{}", run.stderr);
    assert!(!run.stderr.contains('\x1b'), "{}", run.stderr);
    assert!(cluster_folder(dir.path()).is_none(), "the cluster is left");
}

#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn a_checkpoint_key_the_server_table_lacks_stops_the_night_at_the_first_look() {
    let dir = folder();
    let safe = job("psql_job.sh");
    let args = [
        "run",
        "--exec",
        &safe,
        "--items",
        "30",
        "--checkpoint-table",
        "checkpoints",
        "--checkpoint-key",
        "no_such_col",
        "--warehouse",
        "postgres",
    ];
    let run = reclaim_in_dir(dir.path(), &args, LIMIT);
    assert_eq!(run.code, Some(2), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "table checkpoints has no column no_such_col (--checkpoint-key); its columns are task_id"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.contains("reclaim stopped the night"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("verdict"), "{}", run.stdout);
}
