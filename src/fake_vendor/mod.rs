//! `reclaim vendor`: reclaim's own stand-in for the third party a side effect reaches (an email
//! vendor), written here and not third-party code, hence "fake". A real HTTP server on 127.0.0.1 (an
//! ephemeral port, said on its first stdout line) that "sends" each message it is asked to and
//! records every delivery in its own SQLite database, so a night is judged where the customer
//! would notice: at the receiving end.
//!
//! It honours an `Idempotency-Key` header as the well-known payment APIs do: the first request
//! with a key is acted on and its response stored; a retry with the same key gets that response
//! replayed and nothing is sent again; a retry with the same key and a different body is refused
//! (422). Vendors differ on retention, so `--keys ignore` forgets every key and
//! `--keys expire=SECS` forgets a key after SECS seconds. `--drop-responses P` acts on a request
//! and then, with probability P (seeded), closes the connection without answering: the caller
//! cannot tell whether anything was sent, and retries.
//!
//! The callers are beside it (`send`: a worker's email before its commit, and the relay), and
//! the verdict at the receiving end (`counts`).

mod counts;
pub mod http;
mod pool;
mod send;

pub use self::counts::Counts;
pub use self::send::{SEND_ATTEMPTS, SendError, Sent, parse_addr, send};

use std::fmt;
use std::io::{self, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior};
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use thiserror::Error;

use crate::heartbeat::unix_now;

/// What the vendor does with an `Idempotency-Key`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Keys {
    /// Stored for good: a retry is answered from the store and sends nothing.
    Honour,
    /// Never looked at: every request sends a message.
    Ignore,
    /// Stored, then forgotten after this many seconds: a retry later than that sends again.
    Expire(f64),
}

impl fmt::Display for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Honour => f.write_str("honour"),
            Self::Ignore => f.write_str("ignore"),
            Self::Expire(secs) => write!(f, "expire={secs}"),
        }
    }
}

impl FromStr for Keys {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "honour" | "honor" => Ok(Self::Honour),
            "ignore" => Ok(Self::Ignore),
            _ => {
                let secs = text
                    .strip_prefix("expire=")
                    .and_then(|s| s.parse::<f64>().ok())
                    .filter(|s| s.is_finite() && (0.0..=86_400.0).contains(s))
                    .ok_or_else(|| {
                        format!(
                            "'{}' is not a key policy: honour, ignore, or expire=SECS (0..=86400)",
                            crate::base::text::shorten(text, 40)
                        )
                    })?;
                Ok(Self::Expire(secs))
            }
        }
    }
}

/// A probability, 0..=1, as `--drop-responses` takes it.
pub fn parse_probability(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|p| (0.0..=1.0).contains(p))
        .ok_or_else(|| {
            format!(
                "'{}' is not a probability in 0..=1",
                crate::base::text::shorten(text, 40)
            )
        })
}

/// How a night's vendor behaves.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct VendorModes {
    pub keys: Keys,
    /// The chance that a request is acted on and its response never sent.
    pub drop_responses: f64,
    /// Seeds the dropped responses, so a night replays.
    pub seed: u64,
    /// The request that, once recorded, is never answered: the caller waits there until the
    /// supervisor kills it (`--kill-at-message`).
    pub hold_at: Option<u64>,
}

impl Default for VendorModes {
    fn default() -> Self {
        Self {
            keys: Keys::Honour,
            drop_responses: 0.0,
            seed: 0,
            hold_at: None,
        }
    }
}

#[derive(Debug, Error)]
pub enum VendorError {
    #[error("{path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "{path} exists and is not a vendor's database (no deliveries and idempotency_keys tables); give a new path"
    )]
    NotAVendor { path: PathBuf },
    #[error("cannot listen on 127.0.0.1: {0}")]
    Listen(#[source] io::Error),
}

/// The vendor's database for a lane's warehouse: beside it, `NAME.vendor.sqlite`.
pub use crate::base::paths::vendor_db_path as db_path;

const SCHEMA: &str = "
CREATE TABLE deliveries(
    id INTEGER PRIMARY KEY,
    received_at REAL NOT NULL,
    task_id TEXT NOT NULL,
    idem_key TEXT,
    body TEXT NOT NULL,
    -- sent: a message went out; replayed: a stored response, nothing sent; refused: same key,
    -- another body
    outcome TEXT NOT NULL CHECK (outcome IN ('sent', 'replayed', 'refused')),
    -- 1 when the caller never heard back (--drop-responses)
    response_dropped INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE idempotency_keys(
    idem_key TEXT PRIMARY KEY,
    body_sha256 TEXT NOT NULL,
    response TEXT NOT NULL,
    stored_at REAL NOT NULL
);";

/// Serves until a signal ends it (or the supervisor kills it), writing `listening ADDR` first.
pub fn serve(db: &Path, modes: VendorModes) -> Result<(), VendorError> {
    let sqlite = |source| VendorError::Sqlite {
        path: db.to_path_buf(),
        source,
    };
    // An existing vendor database is the same third party on a second night over the same
    // warehouse (prove's wiped-checkpoints test): its messages and its keys carry over.
    let existed = db.exists();
    let conn = Connection::open(db).map_err(sqlite)?;
    // Looked at before any pragma: a database of someone else's is left exactly as it was.
    if existed {
        let tables: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('deliveries', 'idempotency_keys')",
                [],
                |r| r.get(0),
            )
            .map_err(sqlite)?;
        if tables != 2 {
            return Err(VendorError::NotAVendor {
                path: db.to_path_buf(),
            });
        }
    }
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(sqlite)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(sqlite)?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(sqlite)?;
    if !existed {
        conn.execute_batch(SCHEMA).map_err(sqlite)?;
    }
    // INVARIANT: loopback only. The vendor is a stand-in on this machine, never a service.
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(VendorError::Listen)?;
    let addr = listener.local_addr().map_err(VendorError::Listen)?;
    listener
        .set_nonblocking(true)
        .map_err(VendorError::Listen)?;
    say_address(addr);
    let vendor = Mutex::new(Vendor {
        conn,
        modes,
        rng: crate::base::seeded::Seeded::new(modes.seed, crate::base::seeded::Stream::VendorDrops),
    });
    // Each connection is read on a thread of its own (a slow client delays nobody); the store
    // and the seeded drops are taken one request at a time.
    let answer: Arc<http::Answer> = Arc::new(move |request: &http::Request| {
        vendor
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .handle(request)
    });
    pool::serve_connections(&listener, &answer, &|| {
        crate::base::signals::received().is_some()
    });
    Ok(())
}

/// Writes `listening ADDR` on stdout from a thread of its own, so a stdout that takes nothing
/// (a full pipe nobody reads) cannot keep the vendor from serving; one that fails (closed) or
/// takes nothing within `http::IO_TIMEOUT` is said in one line on stderr, with the address, by
/// a second thread that waits for the first.
fn say_address(addr: std::net::SocketAddr) {
    let said = move |why: String| {
        eprintln!("vendor: cannot write the address to stdout: {why}; serving on {addr}");
    };
    let (tx, rx) = std::sync::mpsc::channel();
    if let Err(e) = std::thread::Builder::new()
        .name("vendor-address".into())
        .spawn(move || {
            let mut out = io::stdout();
            let _ = tx.send(writeln!(out, "listening {addr}").and_then(|()| out.flush()));
        })
    {
        said(e.to_string());
        return;
    }
    let _ = std::thread::Builder::new()
        .name("vendor-address-wait".into())
        .spawn(move || match rx.recv_timeout(http::IO_TIMEOUT) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => said(e.to_string()),
            Err(_) => said(format!(
                "it took nothing in {} s (a full pipe?)",
                http::IO_TIMEOUT.as_secs()
            )),
        });
}

struct Vendor {
    conn: Connection,
    modes: VendorModes,
    rng: crate::base::seeded::Seeded,
}

/// What a message says; the task names the customer it is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Message {
    pub task: String,
    pub text: String,
}

impl Message {
    /// The message a task sends: the same body on every attempt, so a key's retry matches.
    #[must_use]
    pub fn for_task(task_id: &str, payload: &str) -> Self {
        Self {
            task: task_id.to_string(),
            text: format!("your order {payload} is confirmed"),
        }
    }

    #[must_use]
    pub fn body(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl Vendor {
    /// The answer to one request: sent, dropped (`--drop-responses`) or held (`--hold-at`).
    fn handle(&mut self, request: &http::Request) -> io::Result<http::Reply> {
        let json = |status, body: String| http::Response {
            status,
            headers: Vec::new(),
            body,
        };
        if request.method != "POST" || request.path != "/messages" {
            return Ok(http::Reply::Send(json(
                404,
                r#"{"error":"POST /messages"}"#.into(),
            )));
        }
        let Ok(message) = serde_json::from_slice::<Message>(&request.body) else {
            return Ok(http::Reply::Send(json(
                400,
                r#"{"error":"expected {\"task\":..., \"text\":...}"}"#.into(),
            )));
        };
        let key = request.header("idempotency-key").map(ToOwned::to_owned);
        let drop = self.modes.drop_responses > 0.0 && self.rng.chance(self.modes.drop_responses);
        let body = String::from_utf8_lossy(&request.body).into_owned();
        let response = self
            .record(&message, key.as_deref(), &body, drop)
            .map_err(io::Error::other)?;
        if drop {
            // Acted on, never answered: the caller's outcome is unknown.
            return Ok(http::Reply::Drop);
        }
        if let Some(n) = self.modes.hold_at
            && self.requests().is_ok_and(|seen| seen == n)
        {
            // Recorded, never answered, and the caller kept waiting: the supervisor kills it.
            return Ok(http::Reply::Hold);
        }
        Ok(http::Reply::Send(response))
    }

    /// How many requests have been recorded, whatever their outcome.
    fn requests(&self) -> rusqlite::Result<u64> {
        self.conn
            .query_row("SELECT count(*) FROM deliveries", [], |r| r.get(0))
    }

    /// Records the delivery and decides the answer, in one transaction.
    fn record(
        &mut self,
        message: &Message,
        key: Option<&str>,
        body: &str,
        dropped: bool,
    ) -> rusqlite::Result<http::Response> {
        let now = unix_now();
        let sha = hex_sha256(body);
        let keys = self.modes.keys;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let stored = match (key, keys) {
            (Some(key), Keys::Honour | Keys::Expire(_)) => tx
                .query_row(
                    "SELECT body_sha256, response, stored_at FROM idempotency_keys WHERE idem_key = ?1",
                    [key],
                    |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, f64>(2)?)),
                )
                .optional()?
                .filter(|(_, _, at)| match keys {
                    Keys::Expire(secs) => now - at <= secs,
                    _ => true,
                }),
            _ => None,
        };
        let insert = |outcome: &str| -> rusqlite::Result<i64> {
            tx.execute(
                "INSERT INTO deliveries(received_at, task_id, idem_key, body, outcome, response_dropped)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                rusqlite::params![now, message.task, key, body, outcome, dropped],
            )?;
            Ok(tx.last_insert_rowid())
        };
        let response = match stored {
            Some((stored_sha, _, _)) if stored_sha != sha => {
                insert("refused")?;
                http::Response {
                    status: 422,
                    headers: Vec::new(),
                    body: r#"{"error":"this Idempotency-Key was used with another body"}"#.into(),
                }
            }
            Some((_, stored, _)) => {
                insert("replayed")?;
                http::Response {
                    status: 200,
                    headers: vec![("Idempotent-Replayed".into(), "true".into())],
                    body: stored,
                }
            }
            None => {
                let id = insert("sent")?;
                let body = format!(r#"{{"id":{id},"task":"{}","status":"sent"}}"#, message.task);
                if let (Some(key), Keys::Honour | Keys::Expire(_)) = (key, keys) {
                    tx.execute(
                        "INSERT OR REPLACE INTO idempotency_keys(idem_key, body_sha256, response, stored_at)
                         VALUES (?1, ?2, ?3, ?4)",
                        rusqlite::params![key, sha, body, now],
                    )?;
                }
                http::Response {
                    status: 201,
                    headers: Vec::new(),
                    body,
                }
            }
        };
        tx.commit()?;
        Ok(response)
    }
}

fn hex_sha256(text: &str) -> String {
    use std::fmt::Write as _;
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(text.as_bytes()) {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_policies_parse_and_print_back_and_nonsense_is_refused() {
        for text in ["honour", "ignore", "expire=30", "expire=0.5"] {
            let keys: Keys = text.parse().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(keys.to_string(), text);
        }
        assert_eq!("honor".parse::<Keys>(), Ok(Keys::Honour));
        for bad in [
            "",
            "forever",
            "expire=",
            "expire=-1",
            "expire=nan",
            "expire=1e9",
        ] {
            let err = bad.parse::<Keys>().err().unwrap_or_default();
            assert!(
                err.contains("honour, ignore, or expire=SECS"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn only_loopback_addresses_are_accepted() {
        assert!(parse_addr("127.0.0.1:8080").is_ok());
        assert!(parse_addr("[::1]:8080").is_ok());
        let err = parse_addr("10.0.0.1:80").err().unwrap_or_default();
        assert!(err.contains("loopback"), "{err}");
        assert!(parse_addr("localhost").is_err());
    }

    #[test]
    fn the_receiving_ends_verdict_names_what_the_customer_saw() {
        let right = Counts {
            received: 200,
            distinct: 200,
            duplicated: 0,
            missing: 0,
            ..Counts::default()
        };
        assert!(right.holds());
        assert_eq!(right.short_verdict(), None);
        let wrong = Counts {
            received: 201,
            distinct: 199,
            duplicated: 2,
            missing: 1,
            ..Counts::default()
        };
        assert!(!wrong.holds());
        assert_eq!(
            wrong.short_verdict().as_deref(),
            Some("messages WRONG: 2 sent twice, 1 never sent")
        );
    }

    #[test]
    fn counts_are_read_from_the_vendors_database_sent_deliveries_only() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let db = dir.path().join("v.sqlite");
        let conn = Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
        conn.execute_batch(SCHEMA).unwrap_or_else(|e| panic!("{e}"));
        for (task, outcome) in [
            ("task-000", "sent"),
            ("task-000", "sent"),
            ("task-000", "replayed"),
            ("task-001", "sent"),
            ("task-002", "refused"),
            ("task-999", "sent"),
        ] {
            conn.execute(
                "INSERT INTO deliveries(received_at, task_id, body, outcome) VALUES (0, ?1, '', ?2)",
                [task, outcome],
            )
            .unwrap_or_else(|e| panic!("{e}"));
        }
        drop(conn);
        let counts = Counts::read(&db, 3).unwrap_or_else(|e| panic!("{e}"));
        // task-999 is outside a queue of 3: received, neither distinct nor filling a gap, and
        // wrong; the replayed and refused requests are requests, not messages.
        assert_eq!(
            counts,
            Counts {
                received: 4,
                distinct: 2,
                duplicated: 1,
                missing: 1,
                outside: 1,
                requests: 6,
            }
        );
        assert!(!counts.holds());
        let outside = Counts {
            received: 3,
            distinct: 3,
            outside: 1,
            ..Counts::default()
        };
        assert!(!outside.holds());
        assert_eq!(
            outside.short_verdict().as_deref(),
            Some("messages WRONG: 1 outside the queue")
        );
    }
}
