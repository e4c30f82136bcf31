//! A night across hosts on a server reclaim did not start: a claim night run here, a worker
//! joining it by hand (`reclaim worker --warehouse URL --night NAME`, as another host would),
//! the verdict counting the joined worker's rows, and `psql` agreeing; a worker that may not
//! join refused in one line before it writes.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::{KeptServer, psql_program};
use crate::support::{Run, reclaim_in_dir, run_within};
use crate::support::{assert_one_line_error, folder, pg_bin, poll_until, psql, reclaim_command};

/// The night's queue, at full speed (a paced night cannot be joined): 5,000 items keep two
/// workers busy for about 20 s on this machine idle, and load slows them as it slows the
/// joining worker's start, which comes once the first row is in.
const ITEMS: &str = "5000";
const DELAY_MS: &str = "0";

#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn a_worker_from_another_host_joins_a_night_and_its_rows_reach_the_verdict() {
    let bin = pg_bin();
    let server = KeptServer::start(&bin);
    let cluster = &server.cluster;
    let url = format!("postgresql://reclaim@{}/postgres", server.host());
    let here = folder();
    let there = folder();
    // Refused before the night exists, and for a strategy that shares no queue.
    let join = |dir: &std::path::Path, strategy: &str| {
        let mut command = reclaim_command();
        command
            .args(["worker", "--strategy", strategy, "--warehouse", &url])
            .args(["--night", "fleet", "--items", ITEMS, "--delay-ms", DELAY_MS])
            .current_dir(dir);
        run_within(
            command,
            "reclaim worker --night fleet",
            Duration::from_secs(300),
        )
    };
    assert_one_line_error(&join(there.path(), "claim"), "no night named fleet on");
    let night = reclaim_command()
        .args([
            "run",
            "--strategy",
            "claim",
            "--workers",
            "2",
            "--items",
            ITEMS,
        ])
        .args([
            "--delay-ms",
            DELAY_MS,
            "--pg-schema",
            "fleet",
            "--keep",
            "--json",
        ])
        .args(["--warehouse", &url])
        .env("TMPDIR", here.path())
        .current_dir(here.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    // Joined once the night's workers have claimed (its leases say which clock they keep).
    let started = poll_until(Duration::from_secs(120), || {
        Command::new(psql_program())
            .args(["-X", "-A", "-t", "-h"])
            .arg(cluster)
            .args(["-U", "reclaim", "-d", "postgres", "-c"])
            .arg("SELECT count(*) >= 1 FROM fleet.records")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "t")
    });
    assert!(started, "the night never wrote a row");
    assert_one_line_error(&join(there.path(), "guarded"), "do not share a queue");
    let joined = join(there.path(), "claim");
    let output = night.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let night = Run::from_output("reclaim run --pg-schema fleet", &output);
    assert_eq!(joined.code, Some(0), "{}\n{}", joined.stdout, joined.stderr);
    assert_eq!(night.code, Some(0), "{}\n{}", night.stdout, night.stderr);
    let json = crate::support::json_of(&night);
    assert_eq!(json["derived_status"], "ok", "{json}");
    assert_eq!(crate::support::number(&json, "rows"), 5_000, "{json}");
    assert_eq!(
        crate::support::number(&json, "duplicated_task_ids"),
        0,
        "{json}"
    );
    // psql: every item once, and the joined worker's own rows among them.
    let run_id = joined
        .field("start", "run_id")
        .unwrap_or_else(|| panic!("no start line: {}", joined.stdout))
        .to_string();
    let counts = psql(
        cluster,
        &format!(
            "SELECT count(*), count(DISTINCT task_id), (SELECT count(*) FROM fleet.checkpoints), \
             count(*) FILTER (WHERE run_id = '{run_id}') FROM fleet.records"
        ),
    );
    let counts: Vec<u64> = counts.split('|').filter_map(|n| n.parse().ok()).collect();
    assert_eq!(counts[..3], [5_000, 5_000, 5_000], "{counts:?}");
    let inserted = joined
        .done_number("inserted")
        .unwrap_or_else(|| panic!("no done line: {}", joined.stdout));
    assert!(inserted > 0, "{}", joined.stdout);
    assert_eq!(
        counts[3], inserted,
        "psql and the joined worker's own count"
    );
    // A night that has ended (kept) is not joined.
    assert_one_line_error(&join(there.path(), "claim"), "is not running");
    let _ = reclaim_in_dir(
        here.path(),
        &["schemas", "--warehouse", &url, "--drop", "fleet"],
        Duration::from_secs(60),
    );
}
