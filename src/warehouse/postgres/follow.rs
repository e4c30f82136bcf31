//! The observer's reads on PostgreSQL: what is new in a lane's `records` since the last poll,
//! and its checkpoints when their number changed.
//!
//! On SQLite a row's rowid is assigned at insert and the writer holds the only write lock, so
//! rowids arrive in commit order and a high-water mark sees everything. On PostgreSQL two
//! workers' transactions take identity values and commit in either order, so a row may appear
//! below the mark after it has passed. The gaps below the mark are remembered and asked for
//! again on each poll until they are final: a gap is dropped only once it has been seen in a
//! poll whose snapshot had no transaction in progress (a rolled-back insert, or an
//! `ON CONFLICT DO NOTHING` that took a value and wrote nothing, leaves such a gap for ever).
//! The verdict never depends on this: it counts the whole table at the end.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use postgres::Client;

use super::Server;
use crate::warehouse::backend::{CheckpointRead, Follower, LaneRead};
use crate::warehouse::error::{StoreError, WarehouseError};

/// At most this many rows per poll, as on SQLite.
const MAX_ROWS_PER_POLL: i64 = 50_000;
/// Between two attempts to reconnect to a server that was down.
const RECONNECT_GAP: Duration = Duration::from_millis(200);
/// Gaps remembered at most; past it the oldest are given up (a live figure may then lag, the
/// verdict does not).
const MAX_GAPS: usize = 100_000;

/// A lane's follower: its connection and where it has read up to.
#[derive(Debug)]
pub struct Follow {
    server: Server,
    schema: String,
    client: Option<ClientBox>,
    high_water: i64,
    /// Gaps below the mark, each with whether it has survived one poll already.
    gaps: BTreeSet<i64>,
    young_gaps: BTreeSet<i64>,
    /// No new connection before this, after one failed because the server was down.
    retry_at: Option<Instant>,
    /// How many checkpoints the table held at the last read of them: they are read again
    /// (whole) when that number changes.
    checkpoints_read: Option<u64>,
}

/// `postgres::Client` has no `Debug`.
struct ClientBox(Client);

impl std::fmt::Debug for ClientBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Client")
    }
}

impl Follow {
    #[must_use]
    pub fn new(server: &Server, db: &Path) -> Self {
        Self {
            server: server.clone(),
            schema: server.schema_for(db),
            client: None,
            high_water: 0,
            gaps: BTreeSet::new(),
            young_gaps: BTreeSet::new(),
            retry_at: None,
            checkpoints_read: None,
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
        let there: bool = tx
            .query_one("SELECT to_regclass('records') IS NOT NULL", &[])?
            .get(0);
        if !there {
            tx.commit()?;
            return Ok(None);
        }
        let in_flight: i64 = tx
            .query_one(
                "SELECT count(*) FROM pg_snapshot_xip(pg_current_snapshot())",
                &[],
            )?
            .get(0);
        let gaps: Vec<i64> = self.gaps.iter().chain(&self.young_gaps).copied().collect();
        let rows: Vec<(i64, String, String)> = tx
            .query(
                "SELECT rowid, task_id, run_id FROM records
                 WHERE rowid > $1 OR rowid = ANY($2) ORDER BY rowid LIMIT $3",
                &[&self.high_water, &gaps, &MAX_ROWS_PER_POLL],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        let checkpoints_there: bool = tx
            .query_one("SELECT to_regclass('checkpoints') IS NOT NULL", &[])?
            .get(0);
        let checkpoints = if checkpoints_there {
            let count = tx
                .query_one("SELECT count(*) FROM checkpoints", &[])?
                .get::<_, i64>(0)
                .cast_unsigned();
            if self.checkpoints_read == Some(count) {
                None
            } else {
                let keys: Vec<String> = (tx.query("SELECT task_id FROM checkpoints", &[])?)
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                Some((count, keys))
            }
        } else {
            None
        };
        tx.commit()?;
        let checkpoints = checkpoints.map(|(count, keys)| {
            self.checkpoints_read = Some(count);
            // Read whole: the totals start again from what the table holds now.
            CheckpointRead { keys, wiped: true }
        });
        // Gaps that survived a poll and a snapshot with nothing in flight are final.
        if in_flight == 0 {
            self.gaps.clear();
        }
        self.gaps.append(&mut self.young_gaps);
        for (rowid, _, _) in &rows {
            if self.gaps.remove(rowid) {
                continue;
            }
            for missing in (self.high_water + 1)..*rowid {
                if self.gaps.len() + self.young_gaps.len() < MAX_GAPS {
                    self.young_gaps.insert(missing);
                }
            }
            self.high_water = self.high_water.max(*rowid);
        }
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
                Ok(client) => self.client = Some(ClientBox(client)),
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

    fn forget_checkpoints(&mut self) {
        self.checkpoints_read = None;
    }
}
