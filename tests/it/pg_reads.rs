//! What a night on PostgreSQL costs the server, read from the server's own statistics
//! (`pg_stat_user_tables`, kept across the private cluster's clean stop): the observer reads
//! each row once by its index, and nothing reads a table whole more often than the verdict,
//! the worker's start and its last count do.

use crate::support::reclaim_in_dir;
use crate::support::{folder, on_kept, pg_bin, psql};

const ITEMS: u64 = 2_000;
const KILLS: u64 = 3;

/// A guarded night of 2,000 items and three kills by rows: rows fetched by index from
/// `records` (the observer's reads, the only index reader of that table) at most twice the
/// rows written; rows read whole from either table at most once per reader that reads it whole
/// (the verdict, each worker's start, the last worker's count), never once per poll.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn the_observer_reads_each_row_of_a_night_once() {
    let bin = pg_bin();
    let dir = folder();
    let (items, kills) = (ITEMS.to_string(), KILLS.to_string());
    let run = reclaim_in_dir(
        dir.path(),
        &[
            "run",
            "--strategy",
            "guarded",
            "--warehouse",
            "postgres",
            "--keep",
            "--items",
            &items,
            "--delay-ms",
            "0",
            "--restart-delay",
            "0",
            "--kills",
            &kills,
            "--kill-rows",
            "200..1500",
            "--seed",
            "46",
        ],
        std::time::Duration::from_secs(180),
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    on_kept(&bin, dir.path(), |cluster| {
        let stats = |table: &str| -> Vec<u64> {
            psql(
                cluster,
                &format!(
                    "SELECT n_tup_ins, seq_tup_read, coalesce(idx_tup_fetch, 0)
                     FROM pg_stat_user_tables WHERE relname = '{table}'"
                ),
            )
            .split('|')
            .map(|n| n.parse().unwrap_or_else(|e| panic!("{table}: {n}: {e}")))
            .collect()
        };
        let records = stats("records");
        let checkpoints = stats("checkpoints");
        assert_eq!(records[0], ITEMS, "one insert per item: {records:?}");
        assert!(
            records[2] <= 2 * records[0],
            "the observer fetched {} rows of records for {} written",
            records[2],
            records[0]
        );
        // The verdict's read and the last worker's count.
        assert!(
            records[1] <= 2 * records[0],
            "records read whole {} rows for {} written",
            records[1],
            records[0]
        );
        // The verdict's read and each worker's start (one more than the kills).
        assert!(
            checkpoints[1] <= (KILLS + 2) * checkpoints[0],
            "checkpoints read whole {} rows for {} written",
            checkpoints[1],
            checkpoints[0]
        );
        // The observer's reads, and each window's look-up (rows only for tasks done already).
        assert!(
            checkpoints[2] <= 2 * checkpoints[0],
            "checkpoints fetched by index {} rows for {} written",
            checkpoints[2],
            checkpoints[0]
        );
    });
}
