//! The lost answer (`--lose-answer-at`) on the private cluster: the commit lands, its answer
//! never reaches the worker, and the worker's retry writes the item again. Without a key the
//! item is there twice (psql counts exactly the items whose answers were lost); with one, once.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::reclaim_in_dir;
use crate::support::{assert_one_line_error, folder, on_kept, pg_bin, psql, reclaim};

/// A hang guard, not a timing assertion: a night of 20 items starts a private cluster.
const LIMIT: Duration = Duration::from_secs(300);

/// The lines of a night that must read the same on every run: the host's losses, the worker's
/// retries, the verdict and the answers line (pids, paths and elapsed time left out).
fn the_story(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| {
            l.contains("host loses")
                || l.contains("  retry   ")
                || l.starts_with("verdict")
                || l.starts_with("answers")
                || l.starts_with("result")
        })
        .map(str::to_string)
        .collect()
}

/// The keys written more than once in the night's `records`, as psql counts them.
fn written_twice(cluster: &Path) -> String {
    psql(
        cluster,
        "SELECT coalesce(string_agg(task_id || 'x' || n, ' ' ORDER BY task_id), '') FROM (SELECT task_id, count(*) AS n FROM night.records GROUP BY 1 HAVING count(*) > 1) d",
    )
}

#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn naive_writes_exactly_the_items_whose_answers_were_lost_twice_and_guarded_once() {
    let bin = pg_bin();
    let night = |strategy: &str, dir: &Path| {
        reclaim_in_dir(
            dir,
            &[
                "run",
                "--strategy",
                strategy,
                "--items",
                "20",
                "--warehouse",
                "postgres",
                "--lose-answer-at",
                "5,12",
                "--seed",
                "1",
                "--keep",
            ],
            LIMIT,
        )
    };
    let naive = folder();
    let run = night("naive", naive.path());
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("answers      2 lost of 2 planned: task-004; task-010"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("2 answers lost (task-004; task-010): a write made again"),
        "{}",
        run.stdout
    );
    on_kept(&bin, naive.path(), |cluster| {
        assert_eq!(written_twice(cluster), "task-004x2 task-010x2");
        assert_eq!(psql(cluster, "SELECT count(*) FROM night.records"), "22");
    });
    // The same night again tells the same story, line for line.
    let again = folder();
    let second = night("naive", again.path());
    assert_eq!(the_story(&run.stdout), the_story(&second.stdout));
    assert_eq!(the_story(&run.stdout).len(), 7, "{}", run.stdout);

    let guarded = folder();
    let run = night("guarded", guarded.path());
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("answers      2 lost of 2 planned"),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout.matches("  retry   task-").count(),
        2,
        "{}",
        run.stdout
    );
    on_kept(&bin, guarded.path(), |cluster| {
        assert_eq!(written_twice(cluster), "");
        assert_eq!(
            psql(
                cluster,
                "SELECT count(DISTINCT task_id) || ' ' || count(*) FROM night.records"
            ),
            "20 20"
        );
    });
}

/// The answers lost by task (`--lose-answer-at-task`) and at row counts drawn from the seed
/// (`--lose-answers`): the header names the rows drawn, the host names the task's first
/// commit, the keys the report says were lost are exactly those psql finds twice, and the same
/// seed tells the same story on a second run.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn answers_lost_by_task_and_at_random_are_the_keys_psql_finds_twice() {
    let bin = pg_bin();
    let night = |dir: &Path| {
        let mut args = vec!["run", "--strategy", "naive", "--items", "20"];
        args.extend(["--warehouse", "postgres", "--seed", "3", "--keep"]);
        args.extend(["--lose-answer-at-task", "task-007", "--lose-answers", "2"]);
        reclaim_in_dir(dir, &args, LIMIT)
    };
    let first = folder();
    let run = night(first.path());
    let out = &run.stdout;
    assert_eq!(run.code, Some(1), "{out}\n{}", run.stderr);
    let plan = (out.lines())
        .find(|l| l.starts_with("answer plan  the proxy loses the answer to "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        plan.contains(" (drawn from seed 3); task-007's first commit"),
        "{out}"
    );
    // Each count drawn is the one the host loses an answer at.
    let drawn: Vec<&str> = (plan.split("bring the rows to ").nth(1))
        .and_then(|rest| rest.split(" (drawn").next())
        .map_or_else(|| panic!("{out}"), |counts| counts.split(", ").collect());
    assert_eq!(drawn.len(), 2, "{out}");
    for n in drawn {
        let lost = format!("host loses the answer to the commit that brought the rows to {n} (");
        assert!(out.contains(&lost), "{n}: {out}");
    }
    assert!(
        out.contains(
            "host loses the answer to task-007's first commit, which brought the rows to "
        ),
        "{out}"
    );
    let answers = (out.lines())
        .find_map(|l| l.strip_prefix("answers      3 lost of 3 planned: "))
        .unwrap_or_else(|| panic!("{out}"));
    let mut lost: Vec<&str> = answers.split("; ").collect();
    lost.sort_unstable();
    assert!(lost.contains(&"task-007"), "{out}");
    on_kept(&bin, first.path(), |cluster| {
        let twice: Vec<String> = (written_twice(cluster).split(' '))
            .map(|k| k.trim_end_matches("x2").to_string())
            .collect();
        assert_eq!(twice, lost, "{out}");
    });
    let second = folder();
    let again = night(second.path());
    assert_eq!(the_story(out), the_story(&again.stdout));
    assert!(again.stdout.contains(plan), "{}", again.stdout);
}

/// `L` in the dashboard, on a night whose lane runs through the proxy (one loss planned at 3
/// rows): the operator's line names the rows the next commit brings, and naive's rows hold two
/// more than its 40 items (psql in the kept cluster), one for each answer lost.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn l_in_the_dashboard_loses_the_next_answer_and_naive_writes_that_item_twice() {
    let bin = pg_bin();
    let dir = folder();
    let file = dir.path().join("lost.toml");
    // About 4 s of real time; the night is paused (space) while the key comes, so it comes
    // with items left at any load.
    let night = r#"title = "One answer planned, one by hand"
warehouse = "postgres"
scale = 20.0
items = 40
delay_ms = 100.0
seed = 3

[host]
lose_answer_at = [3]

[[lane]]
strategy = "naive"
"#;
    std::fs::write(&file, night).unwrap_or_else(|e| panic!("{e}"));
    let file = file.display().to_string();
    let args = ["tui", "--scenario", &file, "--keep"];
    let mut dashboard = crate::support::Dashboard::start(&args, dir.path(), 140, 40)
        .unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + Duration::from_secs(120);
    dashboard
        .wait_for("the planned loss", deadline, |screen| {
            screen.contents().contains("brought the rows to 3")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    dashboard.send(b" L").unwrap_or_else(|e| panic!("{e}"));
    dashboard
        .wait_for("the operator's line", deadline, |screen| {
            screen
                .contents()
                .contains("operator asks the proxy to lose the answer")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    dashboard.send(b" ").unwrap_or_else(|e| panic!("{e}"));
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
    let text = dashboard.text();
    // Two answers lost, two items written again: the same item three times when the key
    // came while the planned loss's retry was the next commit (its answer lost too).
    on_kept(&bin, dir.path(), |cluster| {
        let rows = psql(
            cluster,
            "SELECT count(*) || ' ' || count(DISTINCT task_id) FROM night_night1_1_naive.records",
        );
        assert_eq!(rows, "42 40", "{text}");
    });
}

/// `L` on a night planned without lost answers: on PostgreSQL every lane of reclaim's own
/// worker runs through a proxy, so the key loses an answer in any lane. Its workers do not
/// retry (no loss was planned): each dies of the lost connection and is restarted, naive from
/// item zero (psql counts the first item twice), guarded from its checkpoint (no row twice).
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn l_loses_an_answer_in_a_lane_planned_without_one_and_its_worker_dies_of_it() {
    let bin = pg_bin();
    let dir = folder();
    let file = dir.path().join("unplanned.toml");
    let night = r#"title = "No loss planned"
warehouse = "postgres"
scale = 20.0
items = 20
delay_ms = 100.0
restart_delay = 2.0
seed = 3

[[lane]]
strategy = "naive"

[[lane]]
strategy = "guarded"
"#;
    std::fs::write(&file, night).unwrap_or_else(|e| panic!("{e}"));
    let file = file.display().to_string();
    let args = ["tui", "--scenario", &file, "--keep", "always"];
    let mut dashboard = crate::support::Dashboard::start(&args, dir.path(), 140, 40)
        .unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + Duration::from_secs(120);
    crate::support::wait_for_workers(&mut dashboard, 2).unwrap_or_else(|e| panic!("{e}"));
    // Paused, the key on naive, then on guarded (tab), then on again.
    dashboard.send(b" L\tL ").unwrap_or_else(|e| panic!("{e}"));
    dashboard
        .wait_for("the night's end", deadline, |screen| {
            screen.contents().contains("the night is over")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let text = dashboard.text();
    dashboard.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    let status = dashboard
        .wait_exit(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success(), "{status:?}: {text}");
    assert!(!text.contains("retry   task-"), "{text}");
    on_kept(&bin, dir.path(), |cluster| {
        let count = |lane: &str| {
            psql(
                cluster,
                &format!(
                    "SELECT count(*) - count(DISTINCT task_id) || ' ' || count(DISTINCT task_id) FROM night_night1_{lane}.records"
                ),
            )
        };
        let naive = count("1_naive");
        let (twice, distinct) = naive.split_once(' ').unwrap_or_else(|| panic!("{naive}"));
        assert_eq!(distinct, "20", "{text}");
        assert!(
            twice.parse::<u64>().is_ok_and(|n| n >= 1),
            "{naive}: {text}"
        );
        assert_eq!(count("2_guarded"), "0 20", "{text}");
        let restarts = psql(
            cluster,
            "SELECT count(DISTINCT run_id) FROM night_night1_2_guarded.records",
        );
        assert_eq!(
            restarts, "2",
            "guarded's rows come from two attempts: {text}"
        );
    });
}

/// A fencing token keeps out a worker whose lease another took over, not the worker's own retry:
/// fenced writes the item whose answer was lost a second time, as the docs' table says.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn a_fenced_workers_own_retry_passes_its_fence_and_writes_the_item_twice() {
    let dir = folder();
    let run = reclaim_in_dir(
        dir.path(),
        &[
            "run",
            "--strategy",
            "fenced",
            "--workers",
            "2",
            "--items",
            "20",
            "--warehouse",
            "postgres",
            "--lose-answer-at",
            "5",
            "--seed",
            "1",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("rows=21 duplicated_task_ids=1")
            && run.stdout.contains("(committing a claimed item)"),
        "{}",
        run.stdout
    );
}

/// A user's job: one psql per item, each insert tried again (up to three times) when psql
/// fails, as a retry loop in a shell job does. `$1` is the insert's tail: nothing, or the
/// conflict clause that makes it idempotent.
const JOB: &str = r#"
psql -qX -c "CREATE TABLE IF NOT EXISTS shipped (order_id text $KEY, amount int)" || exit 1
i=0
while [ $i -lt "$RECLAIM_ITEMS" ]; do
  key=$(printf 'task-%03d' $i)
  n=0
  until psql -qX -c "INSERT INTO shipped VALUES ('$key', $i) $CONFLICT"; do
    n=$((n+1)); [ $n -ge 3 ] && exit 1; sleep 0.1
  done
  i=$((i+1))
done
echo "rows_written=$(psql -qXAt -c 'SELECT count(*) FROM shipped') status=ok"
"#;

/// `JOB` written into `dir` with its table's `key` clause and its insert's `conflict` clause:
/// the command that runs it.
fn job_in(dir: &Path, key: &str, conflict: &str) -> String {
    let script = dir.join("job.sh");
    std::fs::write(
        &script,
        format!("KEY='{key}'\nCONFLICT='{conflict}'\n{JOB}"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    format!("sh {}", script.display())
}

#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn a_users_psql_job_that_retries_writes_a_lost_commit_twice_unless_its_insert_is_idempotent() {
    let night = |key: &str, conflict: &str| {
        let dir = folder();
        let exec = job_in(dir.path(), key, conflict);
        let run = reclaim_in_dir(
            dir.path(),
            &[
                "run",
                "--exec",
                &exec,
                "--table",
                "shipped",
                "--key",
                "order_id",
                "--items",
                "12",
                "--warehouse",
                "postgres",
                "--lose-answer-at",
                "5",
            ],
            LIMIT,
        );
        (dir, run)
    };
    let (_dir, run) = night("", "");
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("host loses the answer to the commit that brought the rows to 5 (task-004)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("DATA WRONG (1 duplicated task id)")
            && run
                .stdout
                .contains("1 answer lost (task-004): a write made again"),
        "{}",
        run.stdout
    );
    let (_dir, run) = night("PRIMARY KEY", "ON CONFLICT (order_id) DO NOTHING");
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("answers      1 lost of 1 planned: task-004"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("result       PASS"), "{}", run.stdout);
}

/// `prove` on PostgreSQL loses two commits' answers too (a third and two thirds of the way):
/// the user's job without a key fails that test with exactly those two keys twice, and says
/// why; on SQLite the test is said not run, and why, in every output.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn prove_loses_two_answers_and_a_job_without_a_key_fails_that_test() {
    let dir = folder();
    let exec = job_in(dir.path(), "", "");
    let run = reclaim_in_dir(
        dir.path(),
        &[
            "prove",
            "--exec",
            &exec,
            "--table",
            "shipped",
            "--key",
            "order_id",
            "--items",
            "12",
            "--warehouse",
            "postgres",
            "--seed",
            "2",
            "--json",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let json = crate::support::json_of(&run);
    let tests = json["tests"].as_array().cloned().unwrap_or_default();
    let lost = (tests.iter())
        .find(|t| t["name"] == "two commits' answers lost")
        .unwrap_or_else(|| panic!("no lost-answer test: {json}"));
    assert_eq!(lost["outcome"], "fail", "{lost}");
    assert_eq!(lost["duplicated_task_ids"], 2, "{lost}");
    let detail = lost["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("the commits reaching 4 and 8 rows (lost: task-003; task-006)"),
        "{detail}"
    );
    assert_eq!(json["not_run"], serde_json::json!([]), "{json}");

    let run = reclaim_in_dir(
        dir.path(),
        &["prove", "--strategy", "keyed", "--items", "6"],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(
            "not run: two commits' answers lost: SQLite is a file in the worker's own process, with no answer to lose (--warehouse postgres runs it)"
        ),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("answers lost\n"),
        "a test not run is never listed as run: {}",
        run.stdout
    );
}

/// A lost answer needs a connection to lose it on, and a row count the night reaches: refused
/// in one line before anything starts.
#[test]
fn a_lost_answer_reclaim_cannot_arrange_is_refused_in_one_line() {
    for (args, said) in [
        (
            vec!["--lose-answer-at", "5"],
            "--lose-answer-at loses a commit's answer between the workers and a PostgreSQL server; SQLite",
        ),
        (
            vec![
                "--lose-answer-at",
                "5",
                "--warehouse",
                "postgres://u@127.0.0.1:1/db?sslmode=require",
            ],
            "which TLS hides",
        ),
        (
            vec![
                "--lose-answer-at",
                "50",
                "--items",
                "10",
                "--warehouse",
                "postgres",
            ],
            "--lose-answer-at 50 is beyond the 10 rows a queue of 10 items makes;",
        ),
        (
            vec!["--lose-answer-at-task", "task-001"],
            "--lose-answer-at-task loses a commit's answer between the workers and a PostgreSQL server; SQLite",
        ),
        (
            vec!["--lose-answers", "2"],
            "--lose-answers loses a commit's answer between the workers and a PostgreSQL server; SQLite",
        ),
        (
            vec![
                "--lose-answers",
                "11",
                "--items",
                "10",
                "--warehouse",
                "postgres",
            ],
            "--lose-answers 11 is more than the queue's 10 items:",
        ),
        (
            vec![
                "--lose-answer-at-task",
                "task-050",
                "--items",
                "10",
                "--warehouse",
                "postgres",
            ],
            "--lose-answer-at-task task-050 is not a key of the queue (task-000 .. task-009)",
        ),
    ] {
        let mut all = vec!["run", "--strategy", "naive"];
        all.extend(args);
        let run = reclaim(&all);
        assert_one_line_error(&run, said);
        assert!(run.stdout.is_empty(), "{all:?}: {}", run.stdout);
    }
    // The map's band of lost answers, alike.
    let run = reclaim(&["map", "--points", "lost-answer", "--items", "4"]);
    assert_one_line_error(
        &run,
        "--points lost-answer loses a commit's answer between the workers and a PostgreSQL server; SQLite",
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}
