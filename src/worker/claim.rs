//! `claim`: N workers on one queue, each taking the next item with a lease. A worker claims an
//! item (its run id and a lease's end on the item's queue row), does it, and commits the row, its
//! checkpoint and the item's done mark in one transaction, only while the item is still its own;
//! a killed worker's lease ends and another worker takes the item. On PostgreSQL the claim is
//! `SELECT ... FOR UPDATE SKIP LOCKED` (`warehouse::pg_claim`); SQLite has no SKIP LOCKED, so
//! there the claim is its own `BEGIN IMMEDIATE` transaction.
//!
//! The lease is real time, as a fleet's is: while every item left is leased by someone else, the
//! worker says `idle` (the supervisor's clock does not wait for it) and polls until a lease ends
//! or the queue is done.

use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior};

use super::{CHECKPOINT_SQL, CrashPoint, Ctx, Db, Row, WorkerError, insert_sql};
use crate::heartbeat::unix_now;
use crate::store::{StoreError, retry_busy};
use crate::warehouse::pg_claim::{CHUNK, Next};
use crate::worker::protocol::{IDLE, WorkerLine};

/// How long a claim holds an item without a word from its worker.
pub(super) const LEASE: Duration = Duration::from_millis(300);
/// How often a worker waiting for its grant renews the lease it holds.
pub(super) const RENEW_EVERY: Duration = Duration::from_millis(100);
/// How often an idle worker looks at the queue again.
const POLL: Duration = Duration::from_millis(20);

/// The queue on SQLite: one row per item, added a chunk at a time as the workers need them.
const TABLE_SQL: &str = "CREATE TABLE IF NOT EXISTS queue(
    idx         INTEGER PRIMARY KEY,
    task_id     TEXT NOT NULL,
    claimed_by  TEXT,
    lease_until REAL,
    done        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS queue_open ON queue(idx) WHERE done = 0";

/// The item a worker holds.
pub(super) struct Lease {
    pub index: u64,
}

pub(super) fn run(ctx: &mut Ctx<'_>) -> Result<(), WorkerError> {
    match &mut ctx.db {
        Db::Sqlite(conn, _) => {
            retry_busy(|| conn.execute_batch(TABLE_SQL)).map_err(|e| ctx.db_error(e))?;
        }
        Db::Pg(sink) => sink.claim_setup().map_err(StoreError::from)?,
    }
    let mut idle = false;
    loop {
        match next(ctx)? {
            Next::Item(index) => {
                idle = false;
                let started = Instant::now();
                let row = Row::new(index);
                let lease = Lease { index };
                // INVARIANT: a kill from here to the commit leaves the item leased, not done:
                // its lease ends and another worker takes it.
                ctx.crash_if(&[index], CrashPoint::BeforeWrite);
                ctx.before_write(&[&row], Some(&lease))?;
                if commit(ctx, &row, &lease)? {
                    ctx.after_write(&[&row], 1, 1);
                    ctx.committed(&[index], started);
                } else {
                    let task = &row.task_id;
                    ctx.say(&WorkerLine::Other(format!(
                        "lost  {task}: its lease ended and another worker took it; this worker wrote nothing for it"
                    )));
                }
            }
            Next::Wait(left) => {
                if !idle {
                    idle = true;
                    ctx.say(&WorkerLine::Other(format!(
                        "{IDLE}  every item left is leased by another worker: waiting for one to finish or its lease to end"
                    )));
                }
                std::thread::sleep(Duration::from_secs_f64(left.max(0.001)).min(POLL));
            }
            Next::Finished => return Ok(()),
        }
    }
}

/// Claims the next item: the first not done whose lease (if any) has ended.
fn next(ctx: &mut Ctx<'_>) -> Result<Next, WorkerError> {
    let items = ctx.config.items;
    let me = ctx.run_id.clone();
    match &mut ctx.db {
        Db::Sqlite(conn, _) => {
            retry_busy(|| claim_sqlite(conn, &me, items)).map_err(|e| ctx.db_error(e))
        }
        Db::Pg(sink) => Ok(sink
            .claim_next(&me, items, LEASE)
            .map_err(StoreError::from)?),
    }
}

fn claim_sqlite(conn: &mut Connection, me: &str, items: u64) -> rusqlite::Result<Next> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = unix_now();
    let claimable = |tx: &rusqlite::Transaction<'_>| -> rusqlite::Result<Option<i64>> {
        tx.prepare_cached(
            "SELECT idx FROM queue WHERE done = 0 AND (lease_until IS NULL OR lease_until < ?1)
             ORDER BY idx LIMIT 1",
        )?
        .query_row([now], |r| r.get(0))
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
        tx.execute(
            "UPDATE queue SET claimed_by = ?1, lease_until = ?2 WHERE idx = ?3",
            rusqlite::params![me, now + LEASE.as_secs_f64(), index],
        )?;
        Next::Item(index.cast_unsigned())
    } else {
        let (open, until): (i64, Option<f64>) = tx.query_row(
            "SELECT count(*), min(lease_until) FROM queue WHERE done = 0",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Next::after(open.cast_unsigned(), until.map(|u| u - now))
    };
    tx.commit()?;
    Ok(next)
}

/// Commits `row`, its checkpoint and its item's done mark in one transaction, if the item is
/// still this worker's (no one took it after its lease ended); whether it was.
fn commit(ctx: &mut Ctx<'_>, row: &Row, lease: &Lease) -> Result<bool, WorkerError> {
    let me = ctx.run_id.clone();
    match &mut ctx.db {
        Db::Sqlite(conn, _) => retry_busy(|| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let still_mine = tx.execute(
                "UPDATE queue SET done = 1 WHERE idx = ?1 AND claimed_by = ?2 AND done = 0",
                rusqlite::params![lease.index.cast_signed(), me],
            )?;
            if still_mine == 0 {
                // Dropped: rolled back, nothing written.
                return Ok(false);
            }
            let now = unix_now();
            // INVARIANT: the row, its checkpoint and the done mark commit together.
            tx.prepare_cached(insert_sql(false))?
                .execute(rusqlite::params![
                    row.task_id,
                    row.payload,
                    row.idem_key,
                    me,
                    now
                ])?;
            tx.prepare_cached(CHECKPOINT_SQL)?
                .execute(rusqlite::params![row.task_id, now])?;
            tx.commit()?;
            Ok(true)
        })
        .map_err(|e| ctx.refused(Some(row), e)),
        Db::Pg(sink) => Ok(sink
            .claim_commit(
                lease.index,
                &me,
                (&row.task_id, &row.payload, &row.idem_key),
            )
            .map_err(StoreError::from)?),
    }
}

/// Moves the lease of the item this worker holds on (if it still holds it).
pub(super) fn renew(ctx: &mut Ctx<'_>, lease: &Lease) -> Result<(), WorkerError> {
    let me = ctx.run_id.clone();
    match &mut ctx.db {
        Db::Sqlite(conn, _) => retry_busy(|| {
            conn.prepare_cached(
                "UPDATE queue SET lease_until = ?1 WHERE idx = ?2 AND claimed_by = ?3 AND done = 0",
            )?
            .execute(rusqlite::params![
                unix_now() + LEASE.as_secs_f64(),
                lease.index.cast_signed(),
                me
            ])
        })
        .map(|_| ())
        .map_err(|e| ctx.db_error(e)),
        Db::Pg(sink) => Ok(sink
            .claim_renew(lease.index, &me, LEASE)
            .map_err(StoreError::from)?),
    }
}
