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

use thiserror::Error;

use crate::fake_vendor::{Message, SendError, send};
use crate::task::parse_task_id;
use crate::warehouse::backend::Outbox;
use crate::warehouse::{StoreError, Warehouse};
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
    /// Where the outbox is (read once where the process starts, `Warehouse::from_env`).
    pub warehouse: Warehouse,
}

#[derive(Debug, Error)]
pub enum RelayError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Send(#[from] SendError),
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
    let mut outbox: Option<Box<dyn Outbox>> = None;
    let mut delivered = 0u64;
    let mut replayed = 0u64;
    loop {
        // The worker creates the warehouse; until it has, there is nothing to relay.
        if outbox.is_none() {
            outbox = config.warehouse.open_outbox(&config.db)?;
        }
        let (pending, total) = match outbox.as_mut() {
            Some(outbox) => outbox.next_pending()?,
            None => (None, 0),
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
                if let Some(outbox) = outbox.as_mut() {
                    outbox.mark_sent(&task)?;
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
