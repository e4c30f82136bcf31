//! reclaim's schemas on a server it did not start: a night's schemas go as its folder goes
//! (dropped when it passed, kept with the verdict written on them when it failed or `--keep`
//! said so), a map's and a prove's nights leave nothing unless kept, and `reclaim schemas`
//! lists what is left and drops it. Every schema is looked for again with `psql`.

use std::path::Path;
use std::time::Duration;

use crate::support::KeptServer;
use crate::support::{assert_one_line_error, folder, pg_bin, psql, reclaim_in_dir};

/// reclaim's schemas on the server, by name, as `psql` lists them.
fn reclaims(cluster: &Path) -> String {
    psql(
        cluster,
        "SELECT coalesce(string_agg(nspname, ',' ORDER BY nspname), '') FROM pg_namespace \
         WHERE obj_description(oid, 'pg_namespace') LIKE 'made by reclaim%'",
    )
}

#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn a_server_keeps_only_the_nights_that_were_kept_and_the_list_drops_them() {
    let bin = pg_bin();
    let server = KeptServer::start(&bin);
    let cluster = &server.cluster;
    let url = format!("postgresql://reclaim@{}/postgres", server.host());
    let dir = folder();
    let reclaim = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--warehouse", url.as_str()]);
        reclaim_in_dir(dir.path(), &all, Duration::from_secs(300))
    };
    let run = |strategy: &str, name: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--strategy",
            strategy,
            "--items",
            "12",
            "--kill-at-rows",
            "5",
            "--pg-schema",
            name,
        ];
        args.extend_from_slice(extra);
        reclaim(&args)
    };
    // The kept cluster's own night (its schema `night`) is listed, and dropped by name.
    let first = reclaim(&["schemas", "--drop", "night"]);
    assert_eq!(first.code, Some(0), "{}\n{}", first.stdout, first.stderr);
    assert!(
        first.stdout.starts_with("dropped  night  (1 schema, "),
        "{}",
        first.stdout
    );
    assert_eq!(reclaims(cluster), "");
    // A night that passed: its schema dropped, and said.
    let passed = run("guarded", "passed", &[]);
    assert_eq!(passed.code, Some(0), "{}\n{}", passed.stdout, passed.stderr);
    assert!(
        passed
            .stdout
            .contains("schemas passed dropped (--keep failed: nothing failed"),
        "{}",
        passed.stdout
    );
    assert_eq!(reclaims(cluster), "");
    // One that failed, and one kept by --keep: kept, the verdict written on them.
    let failed = run("naive", "failed", &[]);
    assert_eq!(failed.code, Some(1), "{}\n{}", failed.stdout, failed.stderr);
    assert!(
        failed
            .stdout
            .contains("schemas failed kept (--keep failed: the night failed)"),
        "{}",
        failed.stdout
    );
    let kept = run("guarded", "kept", &["--keep"]);
    assert_eq!(kept.code, Some(0), "{}\n{}", kept.stdout, kept.stderr);
    assert_eq!(reclaims(cluster), "failed,kept");
    let comment = psql(
        cluster,
        "SELECT obj_description('failed'::regnamespace, 'pg_namespace')",
    );
    assert!(
        comment.contains("; night failed; made ") && comment.contains("; verdict FAIL"),
        "{comment}"
    );
    // The rows kept are the ones the verdict was read from.
    let doubled = psql(
        cluster,
        "SELECT count(*) FROM (SELECT 1 FROM failed.records GROUP BY task_id HAVING count(*) > 1) d",
    );
    assert!(
        failed
            .stdout
            .contains(&format!("DATA WRONG ({doubled} duplicated task ids)")),
        "psql counts {doubled}:\n{}",
        failed.stdout
    );
    a_map_and_a_prove_leave_none(cluster, &reclaim);
    the_list_names_them_and_drops_them(cluster, &reclaim);
}

/// `reclaim schemas` on the two nights kept: both listed with their verdicts; a name not
/// listed refused, dropping nothing; the two dropped by name.
fn the_list_names_them_and_drops_them(
    cluster: &Path,
    reclaim: &dyn Fn(&[&str]) -> crate::support::Run,
) {
    // The list names both, with their verdicts; a name not listed is refused, dropping
    // nothing; the two are dropped by name.
    let list = reclaim(&["schemas"]);
    assert_eq!(list.code, Some(0), "{}\n{}", list.stdout, list.stderr);
    assert!(
        list.stdout.contains("2 nights, 2 schemas"),
        "{}",
        list.stdout
    );
    let failed_line = list
        .stdout
        .lines()
        .find(|l| l.starts_with("failed "))
        .unwrap_or_default();
    assert!(
        failed_line.contains("FAIL") && failed_line.contains("DATA WRONG"),
        "{}",
        list.stdout
    );
    let json = crate::support::json_of(&reclaim(&["schemas", "--json"]));
    assert_eq!(json["nights"][1]["schemas"][0], "kept", "{json}");
    let wrong = reclaim(&["schemas", "--drop", "kept", "theirs"]);
    assert_one_line_error(&wrong, "no night of reclaim's is named theirs");
    assert_eq!(reclaims(cluster), "failed,kept");
    // Someone's view on a kept night's rows: dropping the night would drop it too, so the
    // night is refused and the view stays; without the view it goes.
    psql(
        cluster,
        "CREATE VIEW public.dupes AS SELECT task_id FROM failed.records",
    );
    let held = reclaim(&["schemas", "--drop", "failed"]);
    assert_one_line_error(&held, "depend on their tables");
    assert_eq!(reclaims(cluster), "failed,kept");
    assert_eq!(psql(cluster, "SELECT count(*) > 0 FROM public.dupes"), "t");
    psql(cluster, "DROP VIEW public.dupes");
    let dropped = reclaim(&["schemas", "--drop", "kept", "failed"]);
    assert_eq!(
        dropped.code,
        Some(0),
        "{}\n{}",
        dropped.stdout,
        dropped.stderr
    );
    assert!(
        dropped.stdout.contains("2 nights dropped"),
        "{}",
        dropped.stdout
    );
    assert_eq!(reclaims(cluster), "");
}

/// A map and a prove on the server leave no schema behind (they were not asked to keep any).
fn a_map_and_a_prove_leave_none(cluster: &Path, reclaim: &dyn Fn(&[&str]) -> crate::support::Run) {
    // A map and a prove leave nothing behind unless kept.
    let map = reclaim(&["map", "--strategy", "naive,guarded", "--items", "2"]);
    assert!(
        map.code.is_some_and(|c| c <= 1),
        "{}\n{}",
        map.stdout,
        map.stderr
    );
    assert!(
        map.stderr.contains("dropped (--keep always keeps them)")
            || map.stdout.contains("dropped (--keep always keeps them)"),
        "{}\n{}",
        map.stdout,
        map.stderr
    );
    let prove = reclaim(&[
        "prove",
        "--strategy",
        "guarded",
        "--items",
        "20",
        "--kills",
        "1",
        "--seed",
        "3",
    ]);
    assert_eq!(prove.code, Some(0), "{}\n{}", prove.stdout, prove.stderr);
    assert_eq!(reclaims(cluster), "failed,kept");
}
