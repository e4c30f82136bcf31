//! `claim`: N workers on one queue, each taking the next item with a lease. A worker claims an
//! item (its run id and a lease's end on the item's queue row), does it, and commits the row, its
//! checkpoint and the item's done mark in one transaction, only while the item is still its own;
//! a killed worker's lease ends and another worker takes the item. On PostgreSQL the claim is
//! `SELECT ... FOR UPDATE SKIP LOCKED` (`warehouse::pg_claim`); SQLite has no SKIP LOCKED, so
//! there the claim is its own `BEGIN IMMEDIATE` transaction.
//!
//! On a paced night the lease is in the night's time: a worker claims once it is granted its
//! write, at the moment the grant names, and its lease ends `LEASE_SECS` of the night later.
//! The supervisor grants the writes of one moment one worker at a time, in slot order, so which
//! worker takes which item is the night's doing, not the scheduler's. While every item left is
//! leased by another worker, the worker says `idle` and asks to be woken when the first lease
//! ends (`wake`): its schedule goes on from that moment, and the clock waits for its next write
//! as for any. Without a pace (`--delay-ms 0`,
//! every write granted at once) the night has no moments to give: the lease and the wait are
//! real time, as a fleet's are.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior};

use super::{CHECKPOINT_SQL, CrashPoint, Ctx, Db, Row, WorkerError, insert_sql};
use crate::heartbeat::unix_now;
use crate::store::{StoreError, retry_busy};
use crate::warehouse::pg_claim::{CHUNK, Next};
use crate::worker::protocol::WorkerLine;

/// How long a claim holds an item without a word from its worker, in the night's seconds.
pub const LEASE_SECS: f64 = 30.0;
/// The same, in real time, for a night without a pace (it has no moments).
const LEASE: Duration = Duration::from_millis(300);
/// How often a worker looks at the queue again when an item is being claimed or committed by
/// another worker right now (no lease to wait for: real time, a transaction's length).
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

/// When a claim is made and how long its lease lasts: at a moment of the night, for
/// `LEASE_SECS` of it; or, on a night without moments, now and for `LEASE`, on the clock of the
/// database's host (the server's, on PostgreSQL, so every worker's agree).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LeaseClock {
    /// The night's moment; `None`: real time.
    pub at: Option<f64>,
    pub secs: f64,
}

impl LeaseClock {
    fn at(at: Option<f64>) -> Self {
        Self {
            at,
            secs: if at.is_some() {
                LEASE_SECS
            } else {
                LEASE.as_secs_f64()
            },
        }
    }
}

pub(super) fn run(ctx: &mut Ctx<'_>) -> Result<(), WorkerError> {
    match &mut ctx.db {
        Db::Sqlite(conn, _) => {
            retry_busy(|| conn.execute_batch(TABLE_SQL)).map_err(|e| ctx.db_error(e))?;
        }
        Db::Pg(sink) => sink.claim_setup().map_err(StoreError::from)?,
    }
    let mut idle = false;
    // The moment a lease ends that this worker asked to be woken at.
    let mut wake = None;
    loop {
        // INVARIANT: the claim comes after the grant of the write it is for, at the moment the
        // grant names: the supervisor hands out the grants of one moment in slot order.
        let granted = ctx.await_grant(ctx.writes + 1, wake);
        let at = match (granted, wake.take()) {
            (Some(at), Some(w)) => Some(at.max(w)),
            (at, _) => at,
        };
        match next(ctx, LeaseClock::at(at))? {
            Next::Item(index) => {
                idle = false;
                let started = std::time::Instant::now();
                let row = Row::new(index);
                // INVARIANT: a kill from here to the commit leaves the item leased, not done:
                // its lease ends and another worker takes it.
                ctx.crash_if(&[index], CrashPoint::BeforeWrite);
                ctx.before_write(&[&row])?;
                if commit(ctx, &row, index)? {
                    ctx.after_write(&[&row], 1, 1);
                    ctx.committed(&[index], started);
                } else {
                    ctx.say(&WorkerLine::Lost { task: index });
                }
            }
            Next::Wait(left) => {
                if !idle {
                    idle = true;
                    ctx.say(&WorkerLine::idle(at.map(|at| at + left)));
                }
                match at {
                    // Woken by the supervisor's grant of its write after the lease's end.
                    Some(at) if left > 0.0 => wake = Some(at + left),
                    // An item is being claimed or committed right now (or the night has no
                    // moments): looked at again shortly, at the same moment.
                    _ => std::thread::sleep(Duration::from_secs_f64(left.max(0.001)).min(POLL)),
                }
            }
            Next::Finished => return Ok(()),
        }
    }
}

/// Claims the next item: the first not done whose lease (if any) has ended.
fn next(ctx: &mut Ctx<'_>, clock: LeaseClock) -> Result<Next, WorkerError> {
    let items = ctx.config.items;
    let me = ctx.run_id.clone();
    match &mut ctx.db {
        Db::Sqlite(conn, _) => {
            retry_busy(|| claim_sqlite(conn, &me, items, clock)).map_err(|e| ctx.db_error(e))
        }
        Db::Pg(sink) => Ok(sink
            .claim_next(&me, items, clock)
            .map_err(StoreError::from)?),
    }
}

fn claim_sqlite(
    conn: &mut Connection,
    me: &str,
    items: u64,
    clock: LeaseClock,
) -> rusqlite::Result<Next> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let now = clock.at.unwrap_or_else(unix_now);
    let claimable = |tx: &rusqlite::Transaction<'_>| -> rusqlite::Result<Option<i64>> {
        tx.prepare_cached(
            "SELECT idx FROM queue WHERE done = 0 AND (lease_until IS NULL OR lease_until <= ?1)
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
            rusqlite::params![me, now + clock.secs, index],
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
fn commit(ctx: &mut Ctx<'_>, row: &Row, index: u64) -> Result<bool, WorkerError> {
    let me = ctx.run_id.clone();
    match &mut ctx.db {
        Db::Sqlite(conn, _) => retry_busy(|| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let still_mine = tx.execute(
                "UPDATE queue SET done = 1 WHERE idx = ?1 AND claimed_by = ?2 AND done = 0",
                rusqlite::params![index.cast_signed(), me],
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
            .claim_commit(index, &me, (&row.task_id, &row.payload, &row.idem_key))
            .map_err(StoreError::from)?),
    }
}
