//! The verdict at the receiving end (`Counts`): the messages the vendor's database records, read
//! on a read-only connection and judged against the queue.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use serde::Serialize;

use super::VendorError;
use crate::task::parse_task_id;

/// The messages at the receiving end, as the vendor's database records them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, Default)]
pub struct Counts {
    /// Messages the vendor sent (a replayed or refused request sends none).
    pub received: u64,
    /// Tasks of the queue with at least one message.
    pub distinct: u64,
    /// Messages beyond the first for a task: what a customer got twice.
    pub duplicated: u64,
    /// Tasks of the queue with no message.
    pub missing: u64,
    /// Messages sent for a key outside the queue: work nobody asked for, reaching a customer.
    #[serde(default)]
    pub outside: u64,
    /// Requests the vendor recorded, whatever their outcome: a replay of a key it knew is
    /// answered without a send, so this can exceed `received`.
    #[serde(default)]
    pub requests: u64,
}

impl Counts {
    /// Every task's message arrived, once, and none for a key outside the queue.
    #[must_use]
    pub fn holds(&self) -> bool {
        self.duplicated == 0 && self.missing == 0 && self.outside == 0
    }

    /// What is wrong at the receiving end, in a few words for a narrow panel.
    #[must_use]
    pub fn short_verdict(&self) -> Option<String> {
        let mut wrong = Vec::new();
        if self.duplicated > 0 {
            wrong.push(format!("{} sent twice", self.duplicated));
        }
        if self.missing > 0 {
            wrong.push(format!("{} never sent", self.missing));
        }
        if self.outside > 0 {
            wrong.push(format!("{} outside the queue", self.outside));
        }
        (!wrong.is_empty()).then(|| format!("messages WRONG: {}", wrong.join(", ")))
    }

    /// Reads the vendor's database without changing it, each message's task matched to `queue`
    /// (someone else's job names its messages by its own keys).
    pub fn read_queue(db: &Path, queue: &crate::queue::Queue) -> Result<Self, VendorError> {
        Self::read_with(db, queue.len(), |task| queue.index_of(task))
    }

    /// How many requests the vendor has recorded, whatever their outcome (`None` while it has no
    /// database yet).
    #[must_use]
    pub fn requests(db: &Path) -> Option<u64> {
        briefly(db)?
            .query_row("SELECT count(*) FROM deliveries", [], |r| r.get(0))
            .ok()
    }

    /// The key of the newest request the vendor has recorded, whatever its outcome: the one it
    /// holds unanswered at `--hold-at`, or the last that reached it (`None` before any).
    #[must_use]
    pub fn newest_task(db: &Path) -> Option<String> {
        briefly(db)?
            .query_row(
                "SELECT task_id FROM deliveries ORDER BY id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .ok()
    }

    /// Reads the vendor's database without changing it.
    pub fn read(db: &Path, items: u64) -> Result<Self, VendorError> {
        Self::read_with(db, items, |task| parse_task_id(task).filter(|&i| i < items))
    }

    fn read_with(
        db: &Path,
        items: u64,
        index_of: impl Fn(&str) -> Option<u64>,
    ) -> Result<Self, VendorError> {
        let sqlite = |source| VendorError::Sqlite {
            path: db.to_path_buf(),
            source,
        };
        let conn = Connection::open_with_flags(
            db,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sqlite)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(sqlite)?;
        let mut stmt = conn
            .prepare(
                "SELECT task_id, count(*) FROM deliveries WHERE outcome = 'sent' GROUP BY task_id",
            )
            .map_err(sqlite)?;
        let mut rows = stmt.query([]).map_err(sqlite)?;
        let mut counts = Self::default();
        while let Some(row) = rows.next().map_err(sqlite)? {
            let task: String = row.get(0).map_err(sqlite)?;
            let n: u64 = row.get(1).map_err(sqlite)?;
            counts.received += n;
            counts.duplicated += n - 1;
            if index_of(&task).is_some() {
                counts.distinct += 1;
            } else {
                counts.outside += n;
            }
        }
        counts.missing = items - counts.distinct.min(items);
        counts.requests = conn
            .query_row("SELECT count(*) FROM deliveries", [], |r| r.get(0))
            .map_err(sqlite)?;
        Ok(counts)
    }
}

/// A read-only connection that waits a second at most for a writer (`None` while the vendor
/// has no database yet).
fn briefly(db: &Path) -> Option<Connection> {
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .ok()?;
    conn.busy_timeout(Duration::from_secs(1)).ok()?;
    Some(conn)
}
