//! Scenarios and the dashboard on PostgreSQL: `warehouse = "postgres"` in a scenario file runs
//! its night on a private cluster with the verdicts it has on SQLite; the dashboard says where
//! the rows go in its header; and however the dashboard is left (q, Ctrl-C), its cluster's
//! processes, socket and folder are gone.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::Dashboard;
use crate::support::reclaim_in_dir;
use crate::support::{cluster_folder, folder, on_kept, pg_bin, poll_until, processes_under, psql};

/// A short night of the postmortem's shape: naive beside guarded, the host's kill at task-030.
const NIGHT: &str = r#"title = "A short night"
scale = 600.0
items = 60
delay_ms = 10.0
seed = 7

[host]
kill_at_task = "task-030"

[[lane]]
strategy = "naive"

[[lane]]
strategy = "guarded"
"#;

/// The verdict lines of a `run --scenario`.
fn verdicts(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.starts_with("verdict"))
        .map(str::to_string)
        .collect()
}

#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn a_scenario_on_postgres_gives_the_verdicts_it_gives_on_sqlite() {
    let dir = folder();
    let on_pg = dir.path().join("short-pg.toml");
    let on_sqlite = dir.path().join("short.toml");
    std::fs::write(&on_pg, format!("warehouse = \"postgres\"\n{NIGHT}"))
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&on_sqlite, NIGHT).unwrap_or_else(|e| panic!("{e}"));
    let limit = Duration::from_secs(180);
    let run = |file: &Path| {
        let file = file.display().to_string();
        reclaim_in_dir(dir.path(), &["run", "--scenario", &file], limit)
    };
    let pg = run(&on_pg);
    let sqlite = run(&on_sqlite);
    assert_eq!(pg.code, Some(1), "{}\n{}", pg.stdout, pg.stderr);
    assert_eq!(sqlite.code, Some(1), "{}\n{}", sqlite.stdout, sqlite.stderr);
    assert_eq!(verdicts(&pg.stdout), verdicts(&sqlite.stdout));
    // The figures are the lesson's, not merely equal: naive wrote task-000.. again.
    let lines = verdicts(&pg.stdout);
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" naive ") && l.contains("DATA WRONG")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" guarded ") && l.contains("rows=60 duplicated_task_ids=0")),
        "{lines:?}"
    );
    assert!(!sqlite.stdout.contains("postgres "), "{}", sqlite.stdout);
    // It ran on PostgreSQL and failed: under the default policy the private cluster, with the
    // wrong rows, is kept with the night's folder, stopped, and said so with its policy.
    let cluster = cluster_folder(dir.path()).unwrap_or_else(|| panic!("{}", pg.stdout));
    assert!(
        pg.stdout.contains(&format!(
            "postgres     private cluster kept (--keep failed: the night failed; removed with its night by `reclaim kept --remove`), stopped: {}",
            cluster.display()
        )),
        "{}",
        pg.stdout
    );
    assert!(
        processes_under(dir.path()).is_empty(),
        "{:?}",
        processes_under(dir.path())
    );
    // `reclaim kept` counts the cluster in its night's size; removing the night removes both.
    let kept = reclaim_in_dir(dir.path(), &["kept", "--json"], limit);
    let listed: serde_json::Value =
        serde_json::from_str(&kept.stdout).unwrap_or_else(|e| panic!("{e}: {}", kept.stdout));
    let nights = listed["nights"].as_array().cloned().unwrap_or_default();
    let scenario_night = nights
        .iter()
        .find(|n| n["name"].as_str().is_some_and(|n| n.contains("short-pg")))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(
        scenario_night["bytes"]
            .as_u64()
            .is_some_and(|b| b > 10 << 20),
        "the cluster is not counted: {scenario_night}"
    );
    let clean = reclaim_in_dir(dir.path(), &["kept", "--clean"], limit);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);
    assert_eq!(cluster_folder(dir.path()), None, "{}", clean.stdout);
}

#[test]
fn a_scenario_names_sqlite_or_postgres_never_a_server() {
    let dir = folder();
    for (value, needle) in [
        ("postgres://bob:secret@db/x", "given on the command line"),
        ("mysql", "is not a warehouse"),
    ] {
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, format!("warehouse = \"{value}\"\n{NIGHT}"))
            .unwrap_or_else(|e| panic!("{e}"));
        let file = file.display().to_string();
        let run = reclaim_in_dir(
            dir.path(),
            &["run", "--scenario", &file],
            Duration::from_secs(20),
        );
        crate::support::assert_one_line_error(&run, needle);
        assert!(!run.stderr.contains("secret"), "{}", run.stderr);
    }
}

/// The dashboard on a private cluster, from a scenario file (`warehouse = "postgres"`) left
/// with q, and from `--warehouse postgres` left with Ctrl-C: the header names the warehouse,
/// and nothing of the cluster is left after either.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn the_dashboard_on_postgres_says_so_and_leaves_nothing_after_q_or_ctrl_c() {
    for key in [&b"q"[..], &b"\x03"[..]] {
        let dir = folder();
        let file = dir.path().join("short-pg.toml");
        // Slow enough that the night is still running when the key comes.
        let slow = NIGHT.replace("scale = 600.0", "scale = 10.0");
        std::fs::write(&file, format!("warehouse = \"postgres\"\n{slow}"))
            .unwrap_or_else(|e| panic!("{e}"));
        let file = file.display().to_string();
        // What the policy keeps is `a_scenario_on_postgres_gives_the_verdicts_it_gives_on_sqlite`'s;
        // here nothing is kept, so that anything left is a leak.
        let args: Vec<&str> = if key == b"q" {
            vec!["tui", "--scenario", &file, "--keep", "never"]
        } else {
            vec![
                "tui",
                "--scenario",
                "incident",
                "--warehouse",
                "postgres",
                "--keep",
                "never",
            ]
        };
        let mut dashboard =
            Dashboard::start(&args, dir.path(), 140, 40).unwrap_or_else(|e| panic!("{e}"));
        let deadline = Instant::now() + Duration::from_secs(90);
        dashboard
            .wait_for("the warehouse in the header", deadline, |screen| {
                screen
                    .contents()
                    .lines()
                    .next()
                    .is_some_and(|l| l.contains("on postgres (private cluster)"))
            })
            .unwrap_or_else(|e| panic!("{e}"));
        // A worker is writing to the cluster (its backend works in the cluster's folder).
        let writing = poll_until(Duration::from_secs(60), || {
            processes_under(dir.path())
                .iter()
                .any(|(_, line)| line.contains(" worker "))
        });
        assert!(writing, "{}", dashboard.text());
        let cluster = cluster_folder(dir.path()).unwrap_or_else(|| panic!("no cluster folder"));
        assert!(cluster.join(".s.PGSQL.5432").exists(), "no socket");
        dashboard.send(key).unwrap_or_else(|e| panic!("{e}"));
        let status = dashboard
            .wait_exit(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(status.success(), "{status:?}: {}", dashboard.text());
        let gone = poll_until(Duration::from_secs(30), || {
            !cluster.exists() && processes_under(dir.path()).is_empty()
        });
        assert!(
            gone,
            "after {key:?}: folder {}, processes {:?}",
            cluster.exists(),
            processes_under(dir.path())
        );
    }
}

/// `tui --warehouse postgres --keep`, left with q: the closing lines say where the kept cluster
/// is and name the schemas of the night's lanes (claimed by the dashboard, not by a command),
/// and psql finds them there.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn the_dashboard_keeps_its_cluster_and_names_its_schemas() {
    let bin = pg_bin();
    let dir = folder();
    let file = dir.path().join("short.toml");
    std::fs::write(&file, NIGHT).unwrap_or_else(|e| panic!("{e}"));
    let file = file.display().to_string();
    let args = [
        "tui",
        "--scenario",
        &file,
        "--warehouse",
        "postgres",
        "--keep",
    ];
    let mut dashboard =
        Dashboard::start(&args, dir.path(), 140, 40).unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + Duration::from_secs(90);
    dashboard
        .wait_for("the night's end", deadline, |screen| {
            screen.contents().contains("the night is over")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    dashboard.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    let status = dashboard
        .wait_exit(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success(), "{status:?}: {}", dashboard.text());
    let cluster = cluster_folder(dir.path()).unwrap_or_else(|| panic!("no kept cluster"));
    // The screen wraps long lines: read it joined.
    let text = dashboard.text().replace('\n', "");
    assert!(
        text.contains(&format!(
            "private cluster kept (--keep always), stopped: {}",
            cluster.display()
        )),
        "{text}"
    );
    assert!(
        text.contains("schemas:   night_night1_1_naive, night_night1_2_guarded"),
        "{text}"
    );
    crate::support::start_kept(&bin, &cluster);
    let schemas = crate::support::psql(
        &cluster,
        "SELECT string_agg(nspname, ' ' ORDER BY nspname) FROM pg_namespace WHERE nspname LIKE 'night%'",
    );
    crate::support::stop_kept(&bin, &cluster);
    let _ = std::fs::remove_dir_all(&cluster);
    assert_eq!(schemas, "night_night1_1_naive night_night1_2_guarded");
}

/// A scenario's own server restart (`host.restart_server_at_rows`), naive beside guarded: every
/// lane holds the same rows when it lands, so two runs print the same text; naive starts again
/// at item zero and writes the rows it had twice (psql counts them in the kept cluster), guarded
/// resumes from its checkpoint. On a server of the user's it is refused before anything starts.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn a_scenarios_server_restart_lands_alike_on_every_run_and_only_guarded_survives_it() {
    let bin = pg_bin();
    let dir = folder();
    let file = dir.path().join("restart.toml");
    let night = NIGHT.replace("kill_at_task = \"task-030\"", "restart_server_at_rows = 12");
    std::fs::write(&file, format!("warehouse = \"postgres\"\n{night}"))
        .unwrap_or_else(|e| panic!("{e}"));
    let file = file.display().to_string();
    let limit = Duration::from_secs(300);
    // What two runs must print alike: not the pids, run ids and folders.
    let text = |stdout: &str| -> Vec<String> {
        (stdout.lines())
            .filter(|l| !l.contains("pid") && !l.contains("run_id"))
            .filter(|l| !l.starts_with("files") && !l.starts_with("postgres"))
            .map(str::to_string)
            .collect()
    };
    let first = reclaim_in_dir(dir.path(), &["run", "--scenario", &file], limit);
    let out = &first.stdout;
    assert_eq!(first.code, Some(1), "{out}\n{}", first.stderr);
    let restarts: Vec<&str> = (out.lines())
        .filter(|l| l.contains("host restarts the server"))
        .collect();
    assert_eq!(restarts.len(), 1, "{out}");
    assert!(
        restarts[0].contains("at 12 rows (the table held 12)"),
        "{out}"
    );
    assert!(
        out.contains("warehouse restarted by the host at ")
            && out.contains("a new server answers (its start time changed)"),
        "{out}"
    );
    assert!(out.contains("resume  from=task-012  skipped=12"), "{out}");
    let lines = verdicts(out);
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" naive ") && l.contains("rows=72 duplicated_task_ids=12")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" guarded ") && l.contains("rows=60 duplicated_task_ids=0")),
        "{lines:?}"
    );
    on_kept(&bin, dir.path(), |cluster| {
        let count = |schema: &str| {
            psql(
                cluster,
                &format!("SELECT count(*) || ' ' || count(DISTINCT task_id) FROM {schema}.records"),
            )
        };
        assert_eq!(count("night_night1_1_naive"), "72 60");
        assert_eq!(count("night_night1_2_guarded"), "60 60");
    });
    let second = reclaim_in_dir(dir.path(), &["run", "--scenario", &file], limit);
    assert_eq!(text(out), text(&second.stdout), "two runs differ");
    // Refused on a server of the user's (reclaim restarts only its own), before any connection.
    let url = "postgresql://reclaim@127.0.0.1:1/postgres";
    let refused = reclaim_in_dir(
        dir.path(),
        &["run", "--scenario", &file, "--warehouse", url],
        Duration::from_secs(60),
    );
    crate::support::assert_one_line_error(&refused, "reclaim restarts only a server it started");
    // A kill before the restart's row: the restart waits through the kill and the restarted
    // workers' first rows (the clock once stood still at the dead worker's moment, for good),
    // then lands at its row: naive writes task-000.. a second and a third time, guarded resumes.
    let both = night.replace(
        "restart_server_at_rows = 12",
        "kill_at_task = \"task-030\"\nrestart_server_at_rows = 40",
    );
    let killed_first = dir.path().join("kill-first.toml");
    std::fs::write(&killed_first, format!("warehouse = \"postgres\"\n{both}"))
        .unwrap_or_else(|e| panic!("{e}"));
    let killed_first = killed_first.display().to_string();
    let run = reclaim_in_dir(dir.path(), &["run", "--scenario", &killed_first], limit);
    let out = &run.stdout;
    assert_eq!(run.code, Some(1), "{out}\n{}", run.stderr);
    assert!(
        out.contains("host restarts the server at 40 rows (the table held 40)"),
        "{out}"
    );
    assert!(out.contains("resume  from=task-040  skipped=40"), "{out}");
    let lines = verdicts(out);
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" naive ") && l.contains("rows=100 duplicated_task_ids=31")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" guarded ") && l.contains("rows=60 duplicated_task_ids=0")),
        "{lines:?}"
    );
}
