//! `map` and `--exec` on PostgreSQL: the same cells as on SQLite, and someone's own job writing
//! to the server through `psql`.

use std::time::Duration;

use crate::support::{folder, pg_bin};
use crate::support::{json_of, reclaim_in_dir};

const LIMIT: Duration = Duration::from_secs(300);

/// A map's cells without what differs between runs (its kept paths).
fn cells(json: &serde_json::Value) -> Vec<serde_json::Value> {
    let mut cells: Vec<serde_json::Value> = json["cells"]
        .as_array()
        .unwrap_or_else(|| panic!("no cells: {json}"))
        .iter()
        .map(|c| {
            let mut c = c.clone();
            if let Some(o) = c.as_object_mut() {
                o.remove("db");
            }
            c
        })
        .collect();
    cells.sort_by_key(std::string::ToString::to_string);
    cells
}

#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn a_map_on_postgres_has_the_cells_of_the_map_on_sqlite() {
    let args = [
        "map",
        "--items",
        "12",
        "--tasks",
        "4..6",
        "--strategy",
        "naive,two-commit,guarded,claim",
        "--json",
    ];
    let dir = folder();
    let mut on_pg = args.to_vec();
    on_pg.extend(["--warehouse", "postgres"]);
    // The two maps side by side: the test takes the longer of them, not their sum.
    let (sqlite, pg) = std::thread::scope(|scope| {
        let sqlite = scope.spawn(|| reclaim_in_dir(dir.path(), &args, LIMIT));
        let pg = reclaim_in_dir(dir.path(), &on_pg, LIMIT);
        let sqlite = sqlite
            .join()
            .unwrap_or_else(|_| panic!("the map on SQLite panicked"));
        (sqlite, pg)
    });
    // Some cells are wrong (naive's, two-commit's gap): exit 1 on both.
    assert_eq!(sqlite.code, Some(1), "{}\n{}", sqlite.stdout, sqlite.stderr);
    assert_eq!(pg.code, Some(1), "{}\n{}", pg.stdout, pg.stderr);
    let (sqlite, pg) = (json_of(&sqlite), json_of(&pg));
    assert_eq!(cells(&pg).len(), 4 * 4 * 3);
    assert_eq!(cells(&pg), cells(&sqlite));
    // Naive killed before task-004's write rewrites tasks 0..4: duplicates are there to see.
    assert!(
        cells(&pg)
            .iter()
            .any(|c| c["strategy"] == "naive" && c["duplicated_task_ids"] == 4),
        "{pg}"
    );
    // Nothing of the map is left behind: the cluster went with it.
    assert!(
        crate::support::cluster_folder(dir.path()).is_none(),
        "the map's cluster is left"
    );
}

/// The shipped psql job under two random kills on a private cluster: handed the lane's schema
/// through libpq's variables, its setup run on the server, its rows judged there (by key, then
/// by `--count-sql`), and psql on the kept cluster agreeing.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn an_own_job_writes_to_postgres_through_psql_under_kills() {
    let bin = pg_bin();
    let job = format!("sh {}/examples/psql_job.sh", env!("CARGO_MANIFEST_DIR"));
    // Judged by --count-sql on the server instead: the same verdict from counts alone. A night
    // of its own (its own cluster, in a folder of its own), run beside the first.
    let counted_dir = folder();
    std::thread::scope(|scope| {
        let counted = scope.spawn(|| {
            reclaim_in_dir(
                counted_dir.path(),
                &[
                    "run",
                    "--exec",
                    &job,
                    "--count-sql",
                    "SELECT count(*), count(DISTINCT task_id) FROM records",
                    "--items",
                    "30",
                    "--warehouse",
                    "postgres",
                    "--json",
                ],
                LIMIT,
            )
        });
        let dir = folder();
        let run = reclaim_in_dir(
            dir.path(),
            &[
                "run",
                "--exec",
                &job,
                "--setup-sql",
                "CREATE TABLE marker(made_by text)",
                "--items",
                "60",
                "--kill-rows",
                "10..20",
                "--kills",
                "2",
                "--seed",
                "5",
                "--warehouse",
                "postgres",
                "--keep",
                "--json",
            ],
            LIMIT,
        );
        assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
        let json = json_of(&run);
        assert_eq!(json["derived_status"], "ok", "{json}");
        assert_eq!(json["rows"], 60, "{json}");
        assert_eq!(json["duplicated_task_ids"], 0, "{json}");
        assert_eq!(json["missing"], 0, "{json}");
        assert_eq!(json["kills"], 2, "{json}");
        crate::support::on_kept(&bin, dir.path(), |cluster| {
            let psql = |sql: &str| crate::support::psql(cluster, sql);
            assert_eq!(
                psql("SELECT count(*) || ' ' || count(DISTINCT task_id) FROM night.records"),
                "60 60"
            );
            // The setup ran in the lane's schema, on the server.
            assert_eq!(psql("SELECT to_regclass('night.marker') IS NOT NULL"), "t");
        });
        let counted = counted
            .join()
            .unwrap_or_else(|_| panic!("the --count-sql night panicked"));
        assert_eq!(
            counted.code,
            Some(0),
            "{}\n{}",
            counted.stdout,
            counted.stderr
        );
        let json = json_of(&counted);
        assert_eq!(json["judged"], "counts", "{json}");
        assert_eq!(json["rows"], 30, "{json}");
        assert_eq!(json["distinct"], 30, "{json}");
    });
}

/// The map's lost-answer and pause bands on a private cluster: each lost-answer night loses
/// the answer to its task's own commit (naive and claim write the task twice, their retry
/// commits it again; guarded's key refuses the second copy); each pause night stops the claim
/// worker at the task's write past its lease (claim's sleeper writes it again, fenced's fence
/// turns it away). Every cell's figures are what psql counts in that night's schema on the kept
/// cluster.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn a_map_of_lost_answers_and_pauses_says_what_psql_counts_in_each_night() {
    let bin = pg_bin();
    let dir = folder();
    let run = reclaim_in_dir(
        dir.path(),
        &[
            "map",
            "--items",
            "8",
            "--tasks",
            "2..4",
            "--strategy",
            "naive,guarded,claim,fenced",
            "--points",
            "lost-answer,pause",
            "--warehouse",
            "postgres",
            "--keep",
            "always",
            "--json",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    let cells = cells(&json);
    // Four strategies lose an answer, two claim with a lease to pause past; three tasks each.
    assert_eq!(cells.len(), (4 + 2) * 3, "{json}");
    crate::support::on_kept(&bin, dir.path(), |cluster| {
        let psql = |sql: &str| crate::support::psql(cluster, sql);
        let schemas = psql(
            "SELECT string_agg(nspname, ' ' ORDER BY nspname) FROM pg_namespace WHERE nspname LIKE 'night%lost_answer' OR nspname LIKE 'night%pause'",
        );
        let schemas: Vec<&str> = schemas.split(' ').collect();
        assert_eq!(schemas.len(), cells.len(), "{schemas:?}");
        for cell in &cells {
            let (strategy, task) = (
                cell["strategy"].as_str().unwrap_or_default(),
                cell["task"].as_u64().unwrap_or(u64::MAX),
            );
            let point = cell["point"].as_str().unwrap_or_default();
            // `night_00004_naive_task_002_lost_answer`: the night's schema, by its name.
            let tail = format!(
                "_{}_task_{task:03}_{}",
                strategy.replace('-', "_"),
                point.replace('-', "_")
            );
            let schema = (schemas.iter())
                .find(|s| s.ends_with(&tail))
                .unwrap_or_else(|| panic!("no schema for {cell} in {schemas:?}"));
            let counted = psql(&format!(
                "SELECT count(*) || ' ' || count(DISTINCT task_id) FROM {schema}.records"
            ));
            let figures = format!("{} {}", cell["rows"], cell["distinct"]);
            assert_eq!(counted, figures, "{schema}: psql against the cell {cell}");
            let doubled = psql(&format!(
                "SELECT coalesce(string_agg(task_id, ','), '') FROM (SELECT task_id FROM {schema}.records GROUP BY 1 HAVING count(*) > 1) d"
            ));
            let survives = match point {
                "lost-answer" => strategy == "guarded",
                "pause" => strategy == "fenced",
                other => panic!("a point this map did not ask for: {other}"),
            };
            let expected = if survives {
                assert_eq!(cell["derived_status"], "ok", "{cell}");
                String::new()
            } else {
                format!("task-{task:03}")
            };
            assert_eq!(doubled, expected, "{schema}: {cell}");
        }
    });
}
