//! The claim strategy's queue on SQLite: one row per item, added a chunk at a time as the
//! workers need them. SQLite has no `SKIP LOCKED`, so a claim is a `BEGIN IMMEDIATE`
//! transaction of its own; the commit of a claimed item checks, in the row's transaction, that
//! the item is still the worker's.

use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior};

use super::batch::write_batch;
use crate::heartbeat::unix_now;
use crate::warehouse::batch::{Batch, Row};
use crate::warehouse::claim::{CHUNK, Fence, LEFT_LISTED, Lease, LeaseClock, MAX_CLAIMS, Next};

/// The queue on SQLite: one row per item, added a chunk at a time as the workers need them.
const TABLE_SQL: &str = "CREATE TABLE IF NOT EXISTS queue(
    idx         INTEGER PRIMARY KEY,
    task_id     TEXT NOT NULL,
    claimed_by  TEXT,
    lease_until REAL,
    lease_no    INTEGER NOT NULL DEFAULT 0,
    done        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS queue_open ON queue(idx) WHERE done = 0";

/// Makes the queue table, if no worker has yet.
pub(super) fn prepare(conn: &Connection) -> rusqlite::Result<()> {
    super::retry_busy(|| conn.execute_batch(TABLE_SQL))
}

/// Claims the next item: the first not done whose lease (if any) has ended at `clock`'s
/// moment.
pub(super) fn next(
    conn: &mut Connection,
    me: &str,
    items: u64,
    clock: LeaseClock,
) -> rusqlite::Result<Next> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = clock.at.unwrap_or_else(unix_now);
    let claimable =
        |tx: &rusqlite::Transaction<'_>| -> rusqlite::Result<Option<i64>> {
            tx.prepare_cached(
            "SELECT idx FROM queue WHERE done = 0 AND (lease_until IS NULL OR lease_until <= ?1)
               AND lease_no < ?2
             ORDER BY idx LIMIT 1",
        )?
        .query_row(rusqlite::params![now, MAX_CLAIMS.cast_signed()], |r| r.get(0))
        .optional()
        };
    let mut found = claimable(&tx)?;
    // The queue grows a chunk at a time, as the items before it are all claimed.
    while found.is_none() {
        let filled: i64 = tx.query_row("SELECT coalesce(max(idx) + 1, 0) FROM queue", [], |r| {
            r.get(0)
        })?;
        let filled = filled.max(0) as u64;
        if filled >= items {
            break;
        }
        let mut add =
            tx.prepare_cached("INSERT OR IGNORE INTO queue(idx, task_id) VALUES (?1, ?2)")?;
        for index in filled..items.min(filled + CHUNK) {
            add.execute(rusqlite::params![
                index.cast_signed(),
                crate::task::task_id(index)
            ])?;
        }
        drop(add);
        found = claimable(&tx)?;
    }
    let next = if let Some(index) = found {
        let number: i64 = tx.query_row(
            "UPDATE queue SET claimed_by = ?1, lease_until = ?2, lease_no = lease_no + 1
             WHERE idx = ?3 RETURNING lease_no",
            rusqlite::params![me, now + clock.secs_for(index.cast_unsigned()), index],
            |r| r.get(0),
        )?;
        Next::Item(Lease {
            index: index.cast_unsigned(),
            number: number.cast_unsigned(),
        })
    } else {
        // Open: not done, and claimable again or leased now (the last claim may still commit).
        let (open, until): (i64, Option<f64>) = tx.query_row(
            "SELECT count(*), min(lease_until) FROM queue
             WHERE done = 0 AND (lease_no < ?1 OR lease_until > ?2)",
            rusqlite::params![MAX_CLAIMS.cast_signed(), now],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        match Next::after(open.cast_unsigned(), until.map(|u| u - now)) {
            Next::Finished => {
                let left: Vec<i64> = tx
                    .prepare("SELECT idx FROM queue WHERE done = 0 ORDER BY idx LIMIT ?1")?
                    .query_map([LEFT_LISTED.cast_signed()], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()?;
                if left.is_empty() {
                    Next::Finished
                } else {
                    Next::Left(left.into_iter().map(i64::cast_unsigned).collect())
                }
            }
            next => next,
        }
    };
    tx.commit()?;
    Ok(next)
}

/// Commits `row`, its checkpoint and the done mark of `lease`'s item in one transaction; with a
/// `Fence::Token`, only if the item's lease is still that number (no one took it over after
/// it ended); whether it committed.
pub(super) fn commit(
    conn: &mut Connection,
    (lease, fence): (Lease, Fence),
    me: &str,
    row: &Row,
) -> rusqlite::Result<bool> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let index = lease.index.cast_signed();
    let still_mine = match fence {
        Fence::Trusted => tx.execute("UPDATE queue SET done = 1 WHERE idx = ?1", [index])?,
        Fence::Token(number) => tx.execute(
            "UPDATE queue SET done = 1 WHERE idx = ?1 AND lease_no = ?2",
            rusqlite::params![index, number.cast_signed()],
        )?,
    };
    if still_mine == 0 {
        // Dropped: rolled back, nothing written.
        return Ok(false);
    }
    // INVARIANT: the row, its checkpoint and the done mark commit together (`write_in` puts the
    // checkpoint in the row's transaction; the mark is in it already).
    let batch = Batch {
        rows: &[row],
        run_id: me,
        ignore_conflicts: false,
        checkpoint: true,
        outbox: None,
    };
    write_batch(&tx, &batch)?;
    tx.commit()?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_claimed_max_claims_times_and_never_done_is_left_not_retaken() {
        let mut conn = Connection::open_in_memory().unwrap_or_else(|e| panic!("{e}"));
        prepare(&conn).unwrap_or_else(|e| panic!("{e}"));
        let clock = |at: f64| LeaseClock {
            at: Some(at),
            secs: 1.0,
            long: None,
        };
        let mut claim =
            |at: f64| next(&mut conn, "w", 1, clock(at)).unwrap_or_else(|e| panic!("{e}"));
        for number in 1..=MAX_CLAIMS {
            // Each lease ends unused (its worker killed before the commit): the next claim
            // takes the item again, with the next number.
            let at = number as f64 * 10.0;
            assert_eq!(
                claim(at),
                Next::Item(Lease { index: 0, number }),
                "claim {number}"
            );
        }
        // The last claim's lease still runs: it may yet commit, so the others wait for it.
        assert!(matches!(
            claim(MAX_CLAIMS as f64 * 10.0 + 0.5),
            Next::Wait(_)
        ));
        // Ended unused too: the item is left, and named.
        assert_eq!(claim(1000.0), Next::Left(vec![0]));
    }
}
