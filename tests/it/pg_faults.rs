//! Faults only a server adds, on the real binary and a private cluster: the server restarted
//! mid-night (`pg_ctl restart`, as its owner would, and by the host's own
//! `--restart-server-at-rows`), and a worker SIGKILLed inside an open
//! transaction, whose fate the night reads from the server (`pg_xact_status`) and this test
//! reads again with psql.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::support::{after_clock, without_pids_and_paths};
use crate::support::{as_owner, cluster_folder, folder, pg_bin, poll_until, processes_under};
use crate::support::{on_kept, path_arg, psql_output, psql_program, reclaim_in_dir, stop_kept};

/// `reclaim run --strategy guarded --warehouse postgres ARGS` in `dir` (its TMPDIR), output to
/// files there.
fn start_night(dir: &Path, args: &[&str]) -> Child {
    let file = |name: &str| {
        Stdio::from(std::fs::File::create(dir.join(name)).unwrap_or_else(|e| panic!("{e}")))
    };
    crate::support::reclaim_command()
        .args(["run", "--strategy", "guarded", "--warehouse", "postgres"])
        .args(args)
        .env("TMPDIR", dir)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(file("out.txt"))
        .stderr(file("err.txt"))
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// psql on the cluster in `cluster`, `None` while it cannot answer (restarting).
fn psql_try(cluster: &Path, sql: &str) -> Option<String> {
    let output = psql_output(cluster, sql).ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// The night's cluster once its schema holds at least `rows` rows.
fn up_with_rows(dir: &Path, rows: u64, night: &mut Child) -> PathBuf {
    let mut cluster = PathBuf::new();
    let up = poll_until(Duration::from_secs(90), || {
        cluster_folder(dir).is_some_and(|c| {
            cluster = c;
            psql_try(&cluster, "SELECT count(*) FROM night.records")
                .and_then(|n| n.parse::<u64>().ok())
                .is_some_and(|n| n >= rows)
        })
    });
    if !up {
        let _ = night.kill();
        let _ = night.wait();
        panic!(
            "no night with {rows} rows seen by psql: {}{}",
            read(dir, "out.txt"),
            read(dir, "err.txt")
        );
    }
    cluster
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_default()
}

/// Waits for the night's end (bounded); its exit code and stdout.
fn finish(dir: &Path, mut night: Child) -> (Option<i32>, String) {
    let mut status = None;
    let ended = poll_until(Duration::from_secs(180), || {
        status = night.try_wait().ok().flatten();
        status.is_some()
    });
    if !ended {
        let _ = night.kill();
        let _ = night.wait();
        panic!("the night did not end: {}", read(dir, "out.txt"));
    }
    (status.and_then(|s| s.code()), read(dir, "out.txt"))
}

/// The server restarted under two guarded workers: the night says so once, with the sessions
/// it ended; the workers are restarted as after a kill and resume from their checkpoints; the
/// verdict holds; and the restarted postmaster (pg_ctl's child, not the guard's) is stopped
/// and its folder removed as reclaim ends.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn a_server_restart_mid_night_is_said_once_and_the_night_goes_on() {
    let bin = pg_bin();
    let dir = folder();
    // The restart comes at 100 rows; the 500 items left take the two workers at least 15 s of
    // their 60 ms pauses alone, far longer than `pg_ctl restart` takes and than psql's looks at
    // a loaded machine (a slower machine slows the workers too). More items only add a loaded
    // machine's per-item cost.
    let mut night = start_night(
        dir.path(),
        &["--items", "600", "--delay-ms", "60", "--workers", "2"],
    );
    let cluster = up_with_rows(dir.path(), 100, &mut night);
    let restarted = as_owner(&bin.join("pg_ctl"))
        .arg("-D")
        .arg(cluster.join("data"))
        .arg("-l")
        .arg(cluster.join("restart.log"))
        .args(["-m", "fast", "-w", "-t", "60", "restart"])
        .stdout(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("pg_ctl: {e}"));
    assert!(restarted.success(), "pg_ctl restart failed");
    let (code, out) = finish(dir.path(), night);
    assert_eq!(code, Some(0), "{out}\n{}", read(dir.path(), "err.txt"));
    let said: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("warehouse restarted between"))
        .collect();
    assert_eq!(said.len(), 1, "{out}");
    // Two workers, the lane's observer and the watch itself were connected: 4. The line says
    // what the last look before the restart counted, and at a load of 8 that look once counted
    // 3 (one session not seen at that moment): a true line too.
    assert!(
        said[0].contains(": 4 connections lost") || said[0].contains(": 3 connections lost"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.contains("lost the connection to PostgreSQL")
                && l.contains("restarted as after a kill")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.contains("rows=600 duplicated_task_ids=0")),
        "{out}"
    );
    assert!(out.contains("derived=ok"), "{out}");
    let gone = poll_until(Duration::from_secs(30), || {
        !cluster.exists() && processes_under(dir.path()).is_empty()
    });
    assert!(
        gone,
        "left: folder {}, processes {:?}",
        cluster.exists(),
        processes_under(dir.path())
    );
}

/// The server stopped and not started again, with `--server-wait 2`: the header says the wait
/// up front; the night's clock stands while the workers wait (no heartbeat alarm from an
/// outage); past the wait the night ends with the worker's one line naming the flag, exit 2;
/// and nothing of the cluster is left.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn a_server_gone_past_the_wait_ends_the_night_with_one_line_naming_the_flag() {
    let bin = pg_bin();
    let dir = folder();
    let mut night = start_night(
        dir.path(),
        &["--items", "600", "--delay-ms", "60", "--server-wait", "2"],
    );
    let cluster = up_with_rows(dir.path(), 50, &mut night);
    assert!(stop_kept(&bin, &cluster), "pg_ctl stop failed");
    let (code, out) = finish(dir.path(), night);
    let err = read(dir.path(), "err.txt");
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        out.contains("a server that goes away is waited for up to 2 s (--server-wait)"),
        "{out}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("after waiting 2 s for it to come back: --server-wait"),
        "{err}"
    );
    assert!(!out.contains("heartbeat stale"), "{out}");
    let gone = poll_until(Duration::from_secs(30), || {
        !cluster.exists() && processes_under(dir.path()).is_empty()
    });
    assert!(gone, "left: {:?}", processes_under(dir.path()));
}

/// The same outage under `--keep`: the night ends by the error before its closing lines, and
/// the kept cluster is said all the same (where it is, how to start it and look), and is there.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn a_kept_cluster_is_said_when_the_night_ends_by_an_error() {
    let bin = pg_bin();
    let dir = folder();
    let mut night = start_night(
        dir.path(),
        &[
            "--items",
            "600",
            "--delay-ms",
            "60",
            "--server-wait",
            "1",
            "--keep",
        ],
    );
    let cluster = up_with_rows(dir.path(), 50, &mut night);
    assert!(stop_kept(&bin, &cluster), "pg_ctl stop failed");
    let (code, out) = finish(dir.path(), night);
    let err = read(dir.path(), "err.txt");
    assert_eq!(code, Some(2), "{out}\n{err}");
    let shown = cluster.display().to_string();
    assert!(
        err.contains(&format!(
            "private cluster kept (--keep always), stopped: {shown}"
        )),
        "{err}"
    );
    assert!(err.contains("start it:") && err.contains("look:"), "{err}");
    assert!(
        !err.contains("password=") || err.contains("password=***"),
        "{err}"
    );
    // The rows are there to look at.
    on_kept(&bin, dir.path(), |kept| {
        let rows = psql_try(kept, "SELECT count(*) FROM night.records");
        assert!(rows.is_some_and(|n| n.parse::<u64>().is_ok_and(|n| n >= 50)));
    });
}

/// A worker SIGKILLed while its transaction waits on a row another session holds: the server
/// keeps the session until that wait ends, then settles the transaction. The worker writes a
/// row and its checkpoint in one statement whose commit it sent with it, so the server may
/// finish and commit it after the kill, or abort it; the night says which from
/// `pg_xact_status`, psql, asked independently, agrees, and the night's figures hold.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn a_killed_workers_open_transaction_is_said_as_the_server_settled_it() {
    let dir = folder();
    let mut night = start_night(dir.path(), &["--items", "1000", "--delay-ms", "10"]);
    let cluster = up_with_rows(dir.path(), 20, &mut night);
    // A checkpoint well ahead of the worker, inserted and held uncommitted by a session this
    // test feeds line by line: the worker's own checkpoint of that task waits for it, after its
    // row's insert, for as long as the test keeps the session open (no fixed sleep: the test
    // lets go only once it has seen the wait and killed the waiter).
    let ahead = psql_try(
        &cluster,
        "SELECT 'task-' || lpad((count(*) + 200)::text, 3, '0') FROM night.records",
    )
    .unwrap_or_else(|| panic!("psql"));
    let mut holder = Command::new(psql_program())
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h"])
        .arg(&cluster)
        .args(["-U", "reclaim", "-d", "postgres"])
        .env("PGPASSFILE", cluster.join("pgpass"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut feed = holder.stdin.take().unwrap_or_else(|| panic!("psql stdin"));
    writeln!(
        feed,
        "BEGIN; INSERT INTO night.checkpoints VALUES ('{ahead}', 0); SELECT 1;"
    )
    .unwrap_or_else(|e| panic!("{e}"));
    feed.flush().unwrap_or_else(|e| panic!("{e}"));
    let mut waiting = String::new();
    let found = poll_until(Duration::from_secs(120), || {
        waiting = psql_try(
            &cluster,
            "SELECT substr(application_name, 9) || ' ' || backend_xid FROM pg_stat_activity \
             WHERE wait_event_type = 'Lock' AND application_name LIKE 'reclaim/%' AND backend_xid IS NOT NULL",
        )
        .unwrap_or_default();
        !waiting.is_empty()
    });
    assert!(found, "no worker waited on {ahead}");
    let (pid, xid) = waiting
        .split_once(' ')
        .unwrap_or_else(|| panic!("{waiting}"));
    let pid: i32 = pid.parse().unwrap_or_else(|e| panic!("{pid}: {e}"));
    let names = "SELECT string_agg(application_name, ' ') FROM pg_stat_activity \
                 WHERE application_name LIKE 'reclaim/%'";
    let before = psql_try(&cluster, names).unwrap_or_default();
    kill(Pid::from_raw(pid), Signal::SIGKILL).unwrap_or_else(|e| panic!("{e}"));
    // The killed worker's session lives on, waiting, until the holder lets go. reclaim reads
    // it when it reaps the worker, before it restarts one: a session of a new worker says
    // that read is done.
    let restarted = poll_until(Duration::from_secs(120), || {
        psql_try(&cluster, names)
            .unwrap_or_default()
            .split(' ')
            .any(|name| !name.is_empty() && !before.split(' ').any(|b| b == name))
    });
    assert!(
        restarted,
        "no worker restarted after the kill (before: {before})"
    );
    writeln!(feed, "ROLLBACK;").unwrap_or_else(|e| panic!("{e}"));
    drop(feed);
    let held = holder.wait().unwrap_or_else(|e| panic!("{e}"));
    assert!(held.success(), "the holding session failed: {held}");
    // The server's own word, asked by this test: aborted once the wait ends.
    let mut status = String::new();
    let settled = poll_until(Duration::from_secs(30), || {
        status = psql_try(&cluster, &format!("SELECT pg_xact_status('{xid}'::xid8)"))
            .unwrap_or_default();
        status == "aborted" || status == "committed"
    });
    assert!(settled, "{xid}: {status}");
    let (code, out) = finish(dir.path(), night);
    assert_eq!(code, Some(0), "{out}");
    let said = if status == "aborted" {
        format!(
            "server aborted the killed worker's open transaction (pid {pid}, xid {xid}: pg_xact_status aborted"
        )
    } else {
        format!("the killed worker's last transaction (pid {pid}, xid {xid}) committed")
    };
    assert!(out.lines().any(|l| l.contains(&said)), "{status}: {out}");
    assert!(
        out.lines()
            .any(|l| l.contains("rows=1000 duplicated_task_ids=0")),
        "{out}"
    );
}

/// Random kills on PostgreSQL: what the server did with each killed worker's session is said on
/// the kill's own second (the clock waits for the server's answer), so two runs of the same
/// storm print the same night. Before, each such line was stamped wherever the clock had run to
/// when the server answered, a different second each run.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn a_storm_on_postgres_twice_prints_the_same_night() {
    let night = || {
        let dir = folder();
        let db = dir.path().join("g.db");
        let args = [
            "run",
            "--strategy",
            "guarded",
            "--items",
            "300",
            "--kills",
            "4",
            "--seed",
            "2",
            "--warehouse",
            "postgres",
            "--db",
            path_arg(&db),
        ];
        let run = reclaim_in_dir(dir.path(), &args, Duration::from_secs(180));
        assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
        without_pids_and_paths(&run.stdout)
    };
    let first = night();
    let lines: Vec<&str> = first.lines().collect();
    let outcomes: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains("the killed worker"))
        .collect();
    assert_eq!(outcomes.len(), 4, "{first}");
    for i in outcomes {
        // On the second of the kill it is about, the line before it.
        let kill = lines[i - 1];
        assert!(kill.contains("instance reclaimed by host"), "{first}");
        assert_eq!(
            after_clock(kill).map(|_| &kill[..8]),
            Some(&lines[i][..8]),
            "{first}"
        );
    }
    assert_eq!(first, night(), "two runs of one storm on PostgreSQL differ");
}

/// The host's own restart (`--restart-server-at-rows 20`, `pg_ctl restart -m immediate`): it
/// lands after the 20th row on every run, the restart the server shows is said at that moment,
/// the naive worker that loses its connection starts again at item zero (psql counts the 20
/// written twice in the kept cluster), and guarded resumes from its checkpoint.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn the_hosts_server_restart_lands_on_its_row_and_only_the_checkpointed_worker_survives_it() {
    let bin = pg_bin();
    let dir = folder();
    let night = |strategy: &str, keep: &[&str]| {
        let mut args = vec!["run", "--strategy", strategy, "--warehouse", "postgres"];
        args.extend(["--items", "60", "--delay-ms", "20", "--seed", "1"]);
        args.extend(["--restart-server-at-rows", "20"]);
        args.extend(keep);
        reclaim_in_dir(dir.path(), &args, Duration::from_secs(300))
    };
    let naive = night("naive", &["--keep"]);
    let out = &naive.stdout;
    assert_eq!(naive.code, Some(1), "{out}\n{}", naive.stderr);
    assert!(
        out.contains("server plan  the private cluster restarted at once (pg_ctl restart -m immediate) when the table holds 20 rows"),
        "{out}"
    );
    let restarts: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("host restarts the server"))
        .collect();
    assert_eq!(restarts.len(), 1, "{out}");
    assert!(
        restarts[0].contains("at 20 rows (the table held 20)"),
        "{out}"
    );
    let moment = &restarts[0][..8];
    assert!(
        out.contains(&format!("warehouse restarted by the host at {moment}: ")),
        "{out}"
    );
    assert!(out.contains("rows=80 duplicated_task_ids=20"), "{out}");
    on_kept(&bin, dir.path(), |cluster| {
        let counted = psql_try(
            cluster,
            "SELECT count(*) || ' ' || count(DISTINCT task_id) FROM night.records",
        );
        assert_eq!(counted.as_deref(), Some("80 60"));
    });
    let guarded = night("guarded", &[]);
    let out = &guarded.stdout;
    assert_eq!(guarded.code, Some(0), "{out}\n{}", guarded.stderr);
    assert!(
        out.contains("host restarts the server at 20 rows (the table held 20)"),
        "{out}"
    );
    assert!(out.contains("resume  from=task-020  skipped=20"), "{out}");
    assert!(out.contains("rows=60 duplicated_task_ids=0"), "{out}");
    // A job of the user's: the restarted postmaster is pg_ctl's, adopted by reclaim as the
    // job's subreaper, and must outlive the sweep of the job's orphans (it once did not: every
    // start after the restart was refused).
    let job = format!("sh {}/examples/psql_job.sh", env!("CARGO_MANIFEST_DIR"));
    let args = [
        "run",
        "--exec",
        &job,
        "--items",
        "30",
        "--warehouse",
        "postgres",
        "--restart-server-at-rows",
        "10",
    ];
    let exec = reclaim_in_dir(dir.path(), &args, Duration::from_secs(300));
    let out = &exec.stdout;
    assert_eq!(exec.code, Some(0), "{out}\n{}", exec.stderr);
    assert!(out.contains("warehouse restarted by the host at "), "{out}");
    assert!(out.contains("rows=30 duplicated_task_ids=0"), "{out}");
}

/// The same restart placed by task (`--restart-server-at-task`) and at a row count drawn from
/// the seed (`--restart-server-at-random`): guarded resumes after the task's checkpoint; naive
/// starts again at item zero, psql counting the rows drawn twice; the same seed, the same night.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn a_server_restart_by_task_or_drawn_from_the_seed_lands_where_its_plan_says() {
    let bin = pg_bin();
    let night = |dir: &Path, strategy: &str, plan: &[&str]| {
        let mut args = vec!["run", "--strategy", strategy, "--warehouse", "postgres"];
        args.extend(["--items", "30", "--seed", "5"]);
        args.extend(plan);
        reclaim_in_dir(dir, &args, Duration::from_secs(300))
    };
    let dir = folder();
    let guarded = night(
        dir.path(),
        "guarded",
        &["--restart-server-at-task", "task-009"],
    );
    let out = &guarded.stdout;
    assert_eq!(guarded.code, Some(0), "{out}\n{}", guarded.stderr);
    assert!(
        out.contains("(pg_ctl restart -m immediate) right after task-009's commit"),
        "{out}"
    );
    assert!(
        out.contains("host restarts the server right after task-009's commit: pg_ctl restart"),
        "{out}"
    );
    assert!(out.contains("resume  from=task-010  skipped=10"), "{out}");
    assert!(out.contains("rows=30 duplicated_task_ids=0"), "{out}");

    let story = |out: &str| -> Vec<String> {
        (out.lines())
            .filter(|l| {
                l.starts_with("server plan")
                    || l.contains("host restarts")
                    || l.starts_with("rows=")
            })
            .map(str::to_string)
            .collect()
    };
    let dir = folder();
    let naive = night(
        dir.path(),
        "naive",
        &["--restart-server-at-random", "--keep"],
    );
    let out = &naive.stdout;
    assert_eq!(naive.code, Some(1), "{out}\n{}", naive.stderr);
    let drawn: u64 = (out.lines())
        .find_map(|l| l.split("when the table holds ").nth(1))
        .and_then(|rest| rest.strip_suffix(" rows (drawn from seed 5)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!((1..=30).contains(&drawn), "{out}");
    assert!(
        out.contains(&format!(
            "host restarts the server at {drawn} rows (the table held {drawn})"
        )),
        "{out}"
    );
    on_kept(&bin, dir.path(), |cluster| {
        let counted = psql_try(
            cluster,
            "SELECT count(*) || ' ' || count(DISTINCT task_id) FROM night.records",
        );
        assert_eq!(counted, Some(format!("{} 30", 30 + drawn)), "{out}");
    });
    let again = night(folder().path(), "naive", &["--restart-server-at-random"]);
    assert_eq!(story(out), story(&again.stdout));
    assert_eq!(story(out).len(), 3, "{out}");
}

/// The host restarts only a server of its own, and only at a row the night can reach: one line,
/// exit 2, before anything starts (no PostgreSQL needed to be refused).
#[test]
fn a_server_restart_reclaim_cannot_make_is_refused_in_one_line() {
    let dir = folder();
    for (warehouse, said) in [
        ("sqlite", "SQLite has none: add --warehouse postgres"),
        (
            "postgresql://reclaim@127.0.0.1:1/postgres",
            "restarts only a server reclaim started",
        ),
        ("postgres", "is past the 10 rows a queue of 10 items makes"),
    ] {
        let args = [
            "run",
            "--strategy",
            "guarded",
            "--items",
            "10",
            "--warehouse",
            warehouse,
            "--restart-server-at-rows",
            "50",
        ];
        let refused = reclaim_in_dir(dir.path(), &args, Duration::from_secs(60));
        crate::support::assert_one_line_error(&refused, said);
    }
    // By task and at random, alike; a task the queue does not hold is never committed.
    for (plan, warehouse, said) in [
        (
            &["--restart-server-at-task", "task-003"][..],
            "sqlite",
            "--restart-server-at-task restarts the PostgreSQL server of the night, and SQLite has none",
        ),
        (
            &["--restart-server-at-random"][..],
            "postgresql://reclaim@127.0.0.1:1/postgres",
            "--restart-server-at-random restarts only a server reclaim started",
        ),
        (
            &["--restart-server-at-task", "task-010"][..],
            "postgres",
            "--restart-server-at-task task-010 is not a key of the queue (task-000 .. task-009)",
        ),
    ] {
        let mut args = vec!["run", "--strategy", "guarded", "--items", "10"];
        args.extend(["--warehouse", warehouse]);
        args.extend(plan);
        let refused = reclaim_in_dir(dir.path(), &args, Duration::from_secs(60));
        crate::support::assert_one_line_error(&refused, said);
    }
}
