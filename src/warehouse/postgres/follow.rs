//! The observer's reads on PostgreSQL: what is new in a lane's `records` and `checkpoints`
//! since the last poll, each by the identity column reclaim gives it (`records.rowid`,
//! `checkpoints.seq`, both indexed), so a poll reads each row once, not the table again
//! (`cursor` says how a row committed out of order is still found). The verdict never depends
//! on this: it counts the whole table at the end.

use std::path::Path;
use std::time::{Duration, Instant};

use postgres::{Client, GenericClient};

use super::Server;
use super::cursor::{Cursor, Snapshot};
use crate::warehouse::backend::{CheckpointRead, Follower, LaneRead};
use crate::warehouse::error::{StoreError, WarehouseError};

/// At most this many rows per poll, as on SQLite.
const MAX_ROWS_PER_POLL: i64 = 50_000;
/// Between two attempts to reconnect to a server that was down.
const RECONNECT_GAP: Duration = Duration::from_millis(200);
/// How often the checkpoints are looked at for a wipe while none arrive.
const WIPE_LOOK: Duration = Duration::from_secs(1);

/// A lane's follower: its connection and where it has read each table up to.
#[derive(Debug)]
pub struct Follow {
    server: Server,
    schema: String,
    client: Option<ClientBox>,
    records: Cursor,
    checkpoints: Cursor,
    /// When the checkpoints were last looked at for a wipe.
    looked_at: Option<Instant>,
    /// A wipe made here: the next read says the totals start again.
    told_wiped: bool,
    /// No new connection before this, after one failed because the server was down.
    retry_at: Option<Instant>,
}

/// `postgres::Client` has no `Debug`.
struct ClientBox(Client);

impl std::fmt::Debug for ClientBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Client")
    }
}

/// The rows of `table` above `cursor`'s mark (at most `MAX_ROWS_PER_POLL`, in order) and those
/// in its gaps, each `(id, columns...)`: two index scans, never the table.
fn read_new(
    tx: &mut impl GenericClient,
    (table, id, columns): (&str, &str, &str),
    cursor: &Cursor,
) -> Result<Vec<postgres::Row>, postgres::Error> {
    let mut rows = tx.query(
        &format!("SELECT {id}, {columns} FROM {table} WHERE {id} > $1 ORDER BY {id} LIMIT $2"),
        &[&cursor.high_water(), &MAX_ROWS_PER_POLL],
    )?;
    let gaps = cursor.gaps();
    if !gaps.is_empty() {
        rows.extend(tx.query(
            &format!("SELECT {id}, {columns} FROM {table} WHERE {id} = ANY($1)"),
            &[&gaps],
        )?);
    }
    Ok(rows)
}

impl Follow {
    #[must_use]
    pub fn new(server: &Server, db: &Path) -> Self {
        Self {
            server: server.clone(),
            schema: server.schema_for(db),
            client: None,
            records: Cursor::default(),
            checkpoints: Cursor::default(),
            looked_at: None,
            told_wiped: false,
            retry_at: None,
        }
    }

    fn read_on_client(&mut self) -> Result<Option<LaneRead>, postgres::Error> {
        let Some(ClientBox(client)) = self.client.as_mut() else {
            return Ok(None);
        };
        let mut tx = client
            .build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()?;
        let there = tx.query_one(
            "SELECT to_regclass('records') IS NOT NULL, to_regclass('checkpoints') IS NOT NULL,
                pg_snapshot_xmin(pg_current_snapshot())::text::bigint,
                pg_snapshot_xmax(pg_current_snapshot())::text::bigint",
            &[],
        )?;
        if !there.get::<_, bool>(0) {
            tx.commit()?;
            return Ok(None);
        }
        let snapshot = Snapshot {
            xmin: there.get(2),
            xmax: there.get(3),
        };
        let rows: Vec<(i64, String, String)> = read_new(
            &mut tx,
            ("records", "rowid", "task_id, run_id"),
            &self.records,
        )?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
        let checkpoints = if there.get::<_, bool>(1) {
            let mut read: Vec<(i64, String)> = read_new(
                &mut tx,
                ("checkpoints", "seq", "task_id"),
                &self.checkpoints,
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
            // A wipe (DELETE FROM checkpoints) leaves no row at or below the mark, and values
            // are never taken again. Looked for at most once per `WIPE_LOOK` (one index
            // probe); once found, what the table holds now is read whole, once (all of it came
            // after the wipe, some perhaps in reads since).
            let look = self.looked_at.is_none_or(|at| at.elapsed() >= WIPE_LOOK);
            let gone = look
                && self.checkpoints.high_water() > 0
                && !tx
                    .query_one(
                        "SELECT EXISTS (SELECT 1 FROM checkpoints WHERE seq <= $1)",
                        &[&self.checkpoints.high_water()],
                    )?
                    .get::<_, bool>(0);
            if look {
                self.looked_at = Some(Instant::now());
            }
            if gone {
                read = tx
                    .query("SELECT seq, task_id FROM checkpoints ORDER BY seq", &[])?
                    .iter()
                    .map(|r| (r.get(0), r.get(1)))
                    .collect();
            }
            Some((read, gone))
        } else {
            None
        };
        tx.commit()?;
        let mut ordered: Vec<i64> = rows.iter().map(|(id, _, _)| *id).collect();
        ordered.sort_unstable();
        self.records.advance(ordered, snapshot);
        let checkpoints = checkpoints.map(|(read, gone)| {
            let wiped = gone || std::mem::take(&mut self.told_wiped);
            let mut ordered: Vec<i64> = read.iter().map(|(id, _)| *id).collect();
            ordered.sort_unstable();
            self.checkpoints.advance(ordered, snapshot);
            CheckpointRead {
                keys: read.into_iter().map(|(_, key)| key).collect(),
                wiped,
            }
        });
        let mut rows = rows;
        rows.sort_unstable_by_key(|(id, _, _)| *id);
        Ok(Some(LaneRead {
            rows: rows.into_iter().map(|(_, task, run)| (task, run)).collect(),
            checkpoints,
        }))
    }
}

impl Follower for Follow {
    /// Reads what is new; `None` while the lane has no `records` table yet, or the server is
    /// down.
    fn read(&mut self) -> Result<Option<LaneRead>, StoreError> {
        if self.client.is_none() {
            if self.retry_at.is_some_and(|at| Instant::now() < at) {
                return Ok(None);
            }
            match self.server.connect_or_lost(Some(&self.schema)) {
                Ok(mut client) => {
                    // Every read here is by an index: a table too small (or too new to have
                    // statistics) for the planner to prefer it must not be scanned whole on
                    // every poll.
                    if let Err(e) = client.batch_execute("SET enable_seqscan = off") {
                        return Err(
                            WarehouseError::query("readying the observer's session", &e).into()
                        );
                    }
                    self.client = Some(ClientBox(client));
                }
                // The server is down or starting (a restart): nothing to read yet; the night's
                // watch says so once (`warehouse::postgres::watch`), and this poll tries again later.
                Err(WarehouseError::Lost { .. }) => {
                    self.retry_at = Some(Instant::now() + RECONNECT_GAP);
                    return Ok(None);
                }
                Err(other) => return Err(other.into()),
            }
        }
        let result = self.read_on_client();
        if result.is_err() {
            // A broken connection (a server restart) is opened afresh on the next poll.
            self.client = None;
        }
        match result {
            Err(e) if crate::warehouse::error::is_lost(&e) => Ok(None),
            result => Ok(result.map_err(|e| {
                WarehouseError::query(&format!("following schema {}", self.schema), &e)
            })?),
        }
    }

    /// Every read reads what there is: no shortcut to skip.
    fn read_all_next(&mut self) {}

    /// The session stays: a server's sessions see each commit as it lands.
    fn release(&mut self) {}

    /// The values a wipe deleted are never taken again: the cursor stays, and the next read
    /// says the totals start again from what it reads.
    fn forget_checkpoints(&mut self) {
        self.told_wiped = true;
    }
}
