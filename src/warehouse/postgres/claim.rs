//! The claim strategy's queue on PostgreSQL (`worker::claim`): a worker takes the first item not
//! done whose lease has ended with `SELECT ... FOR UPDATE SKIP LOCKED` (two workers claiming at
//! once never wait on each other, nor take the same item), and commits the row, its checkpoint
//! and the item's done mark in one transaction only while the item is still its own. Leases are
//! in the night's time on a paced night (the moment the worker's grant names), else in the
//! server's clock (`clock_timestamp()`), so every worker's agree.

use super::writer::{PgWriter, retry, write_batch};
use crate::warehouse::batch::{Batch, Row};
use crate::warehouse::claim::{CHUNK, Fence, LEFT_LISTED, Lease, LeaseClock, MAX_CLAIMS, Next};
use crate::warehouse::error::WarehouseError;

/// The queue, as reclaim makes it in a lane's schema.
const TABLE_SQL: &str = "CREATE TABLE IF NOT EXISTS queue(
    idx         bigint PRIMARY KEY,
    task_id     text NOT NULL,
    claimed_by  text,
    lease_until double precision,
    lease_no    bigint NOT NULL DEFAULT 0,
    done        boolean NOT NULL DEFAULT false
);
CREATE INDEX IF NOT EXISTS queue_open ON queue(idx) WHERE NOT done";

/// The claim's moment, as `lease_until` holds it: parameter `$n`, the night's moment, or when it
/// is NULL the server's clock as seconds since the epoch.
fn now_sql(n: u8) -> String {
    format!(
        "coalesce(${n}::double precision, extract(epoch from clock_timestamp())::double precision)"
    )
}

/// Whether the claim queue in `schema` leases in the server's clock (a night at full speed,
/// which a worker on another host may join) or in the night's time (a paced night, whose
/// leases a worker outside it would read as long ended); `None` before any claim.
pub fn leases_in_server_clock(
    server: &super::Server,
    schema: &str,
) -> Result<Option<bool>, WarehouseError> {
    let mut client = server.connect(None)?;
    let row = client
        .query_one(
            &format!(
                "SELECT max(lease_until) FROM {}.queue",
                super::quote_ident(schema)
            ),
            &[],
        )
        .map_err(|e| WarehouseError::query("reading the night's leases", &e))?;
    // A night's moments are seconds after midnight; the server's clock, seconds since 1970.
    Ok(row.get::<_, Option<f64>>(0).map(|latest| latest > 1.0e8))
}

impl PgWriter {
    /// Makes the queue table (one worker at a time, as `PgWriter::open` makes the others).
    pub fn claim_setup(&mut self) -> Result<(), WarehouseError> {
        let lock = "SELECT pg_advisory_xact_lock(hashtext(current_schema()))";
        self.client
            .batch_execute(&format!("BEGIN; {lock}; {TABLE_SQL}; COMMIT"))
            .map_err(|e| WarehouseError::query("creating the claim queue", &e))
    }

    /// Claims the first item not done whose lease has ended at `clock`'s moment, for its lease;
    /// adds the queue's next chunk when every item in it is taken.
    pub fn claim_next(
        &mut self,
        me: &str,
        items: u64,
        clock: LeaseClock,
    ) -> Result<Next, WarehouseError> {
        let failed = |e: postgres::Error| WarehouseError::query("claiming an item", &e);
        let now = now_sql(3);
        let claim = format!(
            "UPDATE queue q SET claimed_by = $1, lease_no = q.lease_no + 1,
                 lease_until = {now} + $2
                   + CASE WHEN q.idx = $4::bigint THEN $5::double precision ELSE 0 END
             FROM (SELECT idx FROM queue
                   WHERE NOT done AND (lease_until IS NULL OR lease_until <= {now})
                     AND lease_no < $6
                   ORDER BY idx LIMIT 1 FOR UPDATE SKIP LOCKED) c
             WHERE q.idx = c.idx RETURNING q.idx, q.lease_no"
        );
        let (secs, at) = (clock.secs, clock.at);
        let (long, extra) = clock
            .long
            .map_or((-1, 0.0), |(index, extra)| (index.cast_signed(), extra));
        loop {
            let claimed = retry(&mut self.client, |c| {
                c.query_opt(
                    &claim,
                    &[&me, &secs, &at, &long, &extra, &MAX_CLAIMS.cast_signed()],
                )
            })
            .map_err(failed)?;
            if let Some(row) = claimed {
                return Ok(Next::Item(Lease {
                    index: row.get::<_, i64>(0) as u64,
                    number: row.get::<_, i64>(1) as u64,
                }));
            }
            let filled: i64 = self
                .client
                .query_one("SELECT coalesce(max(idx) + 1, 0) FROM queue", &[])
                .map_err(failed)?
                .get(0);
            let filled = filled.max(0) as u64;
            if filled >= items {
                break;
            }
            let upto = items.min(filled + CHUNK);
            let indices: Vec<i64> = (filled..upto).map(u64::cast_signed).collect();
            let tasks: Vec<String> = (filled..upto).map(crate::task::task_id).collect();
            retry(&mut self.client, |c| {
                c.execute(
                    "INSERT INTO queue(idx, task_id) SELECT * FROM unnest($1::bigint[], $2::text[])
                     ON CONFLICT (idx) DO NOTHING",
                    &[&indices, &tasks],
                )
            })
            .map_err(failed)?;
        }
        // Open: not done, and claimable again or leased now (the last claim may still commit).
        let row = self
            .client
            .query_one(
                &format!(
                    "SELECT count(*), min(lease_until) - {now} FROM queue
                     WHERE NOT done AND (lease_no < $2 OR lease_until > {now})",
                    now = now_sql(1)
                ),
                &[&at, &MAX_CLAIMS.cast_signed()],
            )
            .map_err(failed)?;
        match Next::after(row.get::<_, i64>(0) as u64, row.get(1)) {
            Next::Finished => {
                let left: Vec<i64> = self
                    .client
                    .query(
                        "SELECT idx FROM queue WHERE NOT done ORDER BY idx LIMIT $1",
                        &[&LEFT_LISTED.cast_signed()],
                    )
                    .map_err(failed)?
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                Ok(if left.is_empty() {
                    Next::Finished
                } else {
                    Next::Left(left.into_iter().map(i64::cast_unsigned).collect())
                })
            }
            next => Ok(next),
        }
    }

    /// Commits `row`, its checkpoint and the done mark of `lease`'s item in one transaction;
    /// with a `Fence::Token`, only if the item's lease is still that number; whether it
    /// committed.
    pub fn claim_commit(
        &mut self,
        (lease, fence): (Lease, Fence),
        me: &str,
        row: &Row,
    ) -> Result<bool, WarehouseError> {
        let index = lease.index.cast_signed();
        let committed = retry(&mut self.client, |client| {
            let mut tx = client.transaction()?;
            let still_mine = match fence {
                Fence::Trusted => {
                    tx.execute("UPDATE queue SET done = true WHERE idx = $1", &[&index])?
                }
                Fence::Token(number) => tx.execute(
                    "UPDATE queue SET done = true WHERE idx = $1 AND lease_no = $2",
                    &[&index, &number.cast_signed()],
                )?,
            };
            if still_mine == 0 {
                tx.rollback()?;
                return Ok(false);
            }
            // INVARIANT: the row, its checkpoint and the done mark commit together (`write_in`
            // puts the checkpoint in the row's transaction; the mark is in it already).
            let batch = Batch {
                rows: &[row],
                run_id: me,
                ignore_conflicts: false,
                checkpoint: true,
                outbox: None,
            };
            write_batch(&mut tx, &batch)?;
            tx.commit()?;
            Ok(true)
        });
        committed.map_err(|e| self.refused(&row.task_id, "committing a claimed item", &e))
    }
}
