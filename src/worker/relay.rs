//! `reclaim relay`: the other half of the outbox. The outbox worker commits each row with an
//! outbox entry in one transaction and sends nothing; this process, under the same supervisor
//! and the same kills, delivers the pending entries to the vendor with the row's idempotency key
//! and marks each one sent.
//!
//! A kill between the delivery and the mark (`after-relay-send`) leaves the entry pending, so
//! the restarted relay delivers it again: at-least-once, by design. Whether the customer gets it
//! twice is up to the vendor: one that honours the key answers the retry from its store and
//! sends nothing; one that ignores keys, or has forgotten this one, sends it again.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::thread;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension as _};
use thiserror::Error;

use crate::fake_vendor::{Message, SendError, send};
use crate::heartbeat::unix_now;
use crate::store::retry_busy;
use crate::task::parse_task_id;
use crate::worker::protocol::{Relay, WorkerLine};
use crate::worker::{CrashAt, CrashPoint};

/// How long a relay started by hand waits with nothing pending and the queue unfinished before
/// it stops by itself (`--idle-secs`).
pub const IDLE_LIMIT: Duration = Duration::from_secs(60);
/// The same for a relay under reclaim's supervisor, which ends it with the night (and whose
/// death ends it by PDEATHSIG): long enough for the longest `--long-item` to pass.
pub const SUPERVISED_IDLE_LIMIT: Duration = Duration::from_secs(7200);
const POLL: Duration = Duration::from_millis(5);

#[derive(Debug, Clone, PartialEq)]
pub struct RelayConfig {
    pub db: PathBuf,
    pub vendor: SocketAddr,
    pub items: u64,
    pub crash_at: Option<CrashAt>,
    /// Waiting with nothing to deliver for this long, the relay stops (an error).
    pub idle_limit: Duration,
}

#[derive(Debug, Error)]
pub enum RelayError {
    #[error("{path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error(transparent)]
    Send(#[from] SendError),
    #[error(transparent)]
    Warehouse(#[from] crate::warehouse::WarehouseError),
    #[error(
        "nothing new in {path}'s outbox for {secs} s with {pending} of {items} entries still to come; the relay stops rather than wait forever"
    )]
    Idle {
        path: PathBuf,
        secs: u64,
        pending: u64,
        items: u64,
    },
}

/// Delivers every entry of the queue's outbox, then says how many it delivered.
pub fn run(config: &RelayConfig, out: &mut dyn Write) -> Result<u64, RelayError> {
    let sqlite = |source| RelayError::Sqlite {
        path: config.db.clone(),
        source,
    };
    let mut say = |line: &str| {
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    };
    say(&WorkerLine::Relay(Relay::Started {
        vendor: config.vendor,
        pid: std::process::id(),
    })
    .to_string());
    // Idle time is counted in the relay's own pauses, not read from a clock: a relay stopped
    // with its night (pause, hang, Ctrl-Z) has not been waiting, whatever the clock says.
    let mut idle = Duration::ZERO;
    let mut conn: Option<Connection> = None;
    // On PostgreSQL (`warehouse::active`) the outbox is in the lane's schema.
    let mut pg = match crate::warehouse::active() {
        Some(server) => Some(crate::warehouse::pg::Outbox::open(server, &config.db)?),
        None => None,
    };
    let mut delivered = 0u64;
    let mut replayed = 0u64;
    loop {
        // The worker creates the warehouse; until it has, there is nothing to relay.
        if pg.is_none() && conn.is_none() && config.db.exists() {
            let c = Connection::open_with_flags(&config.db, OpenFlags::SQLITE_OPEN_READ_WRITE)
                .map_err(sqlite)?;
            c.busy_timeout(Duration::from_secs(5)).map_err(sqlite)?;
            conn = Some(c);
        }
        let (pending, total) = match (pg.as_mut(), conn.as_ref()) {
            (Some(outbox), _) => outbox.next_pending()?,
            (None, Some(c)) => retry_busy(|| next_pending(c)).map_err(sqlite)?,
            (None, None) => (None, 0),
        };
        match pending {
            Some((task, key, body)) => {
                let message: Message = serde_json::from_str(&body).unwrap_or(Message {
                    task: task.clone(),
                    text: body.clone(),
                });
                let sent = send(config.vendor, &message, Some(&key))?;
                replayed += u64::from(sent.replayed);
                if let Some(crash) = config.crash_at
                    && crash.point == CrashPoint::AfterRelaySend
                    && parse_task_id(&task) == Some(crash.task)
                {
                    say(&WorkerLine::Crash { at: crash }.to_string());
                    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
                }
                match (pg.as_mut(), conn.as_ref()) {
                    (Some(outbox), _) => outbox.mark_sent(&task)?,
                    (None, Some(c)) => {
                        retry_busy(|| {
                            c.execute(
                                "UPDATE outbox SET sent_at = ?2 WHERE task_id = ?1",
                                rusqlite::params![task, unix_now()],
                            )
                        })
                        .map_err(sqlite)?;
                    }
                    (None, None) => {}
                }
                delivered += 1;
                idle = Duration::ZERO;
            }
            _ if total >= config.items => break,
            _ => {
                if idle >= config.idle_limit {
                    return Err(RelayError::Idle {
                        path: config.db.clone(),
                        secs: config.idle_limit.as_secs(),
                        pending: config.items - total,
                        items: config.items,
                    });
                }
                thread::sleep(POLL);
                idle += POLL;
            }
        }
    }
    say(&WorkerLine::Relay(Relay::Finished {
        delivered,
        answered_from_keys: replayed,
    })
    .to_string());
    Ok(delivered)
}

type Pending = (String, String, String);

/// The first entry not yet marked sent, and how many entries the outbox holds, read in one
/// snapshot: read apart, an entry committed between the two reads is counted in the total but
/// never seen pending, and the relay stops with it unsent.
fn next_pending(conn: &Connection) -> rusqlite::Result<(Option<Pending>, u64)> {
    let snapshot = conn.unchecked_transaction()?;
    let read = read_pending(&snapshot);
    snapshot.commit()?;
    read
}

fn read_pending(conn: &Connection) -> rusqlite::Result<(Option<Pending>, u64)> {
    let exists: bool = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'outbox'",
            [],
            |_| Ok(true),
        )
        .optional()?
        .unwrap_or(false);
    if !exists {
        return Ok((None, 0));
    }
    let pending = conn
        .query_row(
            "SELECT task_id, idem_key, body FROM outbox WHERE sent_at IS NULL ORDER BY task_id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let total: u64 = conn.query_row("SELECT count(*) FROM outbox", [], |r| r.get(0))?;
    Ok((pending, total))
}
