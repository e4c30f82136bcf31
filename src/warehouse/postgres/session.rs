//! Sessions on the night's server: every connection bounded as a whole (the handshake too, on a
//! thread of its own), named `reclaim/PID` on the server, and a server that is down or
//! restarting told apart from one that refuses (`is_lost`), so a worker may wait for it and a
//! refusal before the night stays one line.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use super::tls::Tls;
use super::{CONNECT_TIMEOUT, LOCK_TIMEOUT_MS, STATEMENT_TIMEOUT_MS, Server, quote_ident};
use crate::warehouse::error::{WarehouseError, describe, is_lost};

impl Server {
    /// A connection with every bound set: connect, statement and lock timeouts, and (with
    /// `schema`) that schema first on the search path. A server down is a failure to connect
    /// like any other here (a refusal before the night says it so).
    pub fn connect(&self, schema: Option<&str>) -> Result<postgres::Client, WarehouseError> {
        self.connect_or_lost(schema).map_err(|e| match e {
            WarehouseError::Lost { detail, .. } => WarehouseError::Connect {
                target: self.target(),
                detail,
            },
            other => other,
        })
    }

    /// `connect`, a server down or starting told apart as `WarehouseError::Lost` (mid-night,
    /// where it is a restart to wait for or to report, not bad input).
    pub fn connect_or_lost(
        &self,
        schema: Option<&str>,
    ) -> Result<postgres::Client, WarehouseError> {
        let prepared = self
            .conninfo
            .config()
            .map_err(|detail| WarehouseError::Connect {
                target: self.target(),
                detail: detail.0,
            })?;
        let passed_over = prepared.note;
        // A missing password is said with the ways to give one, or why the file was passed over.
        connect_with(prepared.config, &prepared.tls, &self.target(), schema).map_err(|e| match e {
            WarehouseError::Connect { target, detail } if detail.contains("password missing") => {
                let why = passed_over.unwrap_or_else(|| {
                    "give it in PGPASSWORD, ~/.pgpass or a service (PGSERVICE), not on the command line".into()
                });
                WarehouseError::Connect {
                    target,
                    detail: format!("{detail} ({why})"),
                }
            }
            e => e,
        })
    }

    /// `connect` for a worker, which may start while the server restarts: while the server is
    /// down or starting (`is_lost`), tried again for up to its `wait`; any other failure at
    /// once, and one past the wait as a connection failure (which ends the lane).
    pub fn connect_patiently(
        &self,
        schema: Option<&str>,
    ) -> Result<postgres::Client, WarehouseError> {
        let deadline = std::time::Instant::now() + self.wait;
        loop {
            match self.connect_or_lost(schema) {
                Err(WarehouseError::Lost { .. }) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(WarehouseError::Lost { detail, .. }) => {
                    return Err(WarehouseError::Connect {
                        target: self.target(),
                        detail: format!(
                            "{detail} (still, after waiting {} s for it to come back: --server-wait)",
                            self.wait.as_secs()
                        ),
                    });
                }
                other => return other,
            }
        }
    }
}

/// `config` connected with reclaim's bounds.
///
/// The driver's `connect_timeout` bounds only the socket's connect: a server that accepts the
/// connection and then says nothing would hold the handshake for ever. So the handshake and the
/// session's settings run on a thread of their own, waited for at most `CONNECT_TIMEOUT`; past
/// it the attempt is abandoned (its thread ends when that server closes the socket) and at most
/// `MAX_UNANSWERED` such attempts are left waiting, so a silent server cannot pile them up.
pub fn connect_with(
    mut config: postgres::Config,
    tls: &Tls,
    target: &str,
    schema: Option<&str>,
) -> Result<postgres::Client, WarehouseError> {
    config
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_user_timeout(CONNECT_TIMEOUT)
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(5))
        .keepalives_interval(Duration::from_secs(1))
        .keepalives_retries(3)
        .application_name(&application_name());
    let mut setup = format!(
        "SET statement_timeout = {STATEMENT_TIMEOUT_MS}; SET lock_timeout = {LOCK_TIMEOUT_MS}; \
         SET idle_in_transaction_session_timeout = 60000;"
    );
    if let Some(schema) = schema {
        setup = format!("{setup} SET search_path TO {};", quote_ident(schema));
    }
    let failed = |detail: String| WarehouseError::Connect {
        target: target.to_string(),
        detail,
    };
    let connector = tls.connector().map_err(|e| failed(e.0))?;
    if UNANSWERED.load(Ordering::SeqCst) >= MAX_UNANSWERED {
        return Err(failed(format!(
            "{MAX_UNANSWERED} earlier connection attempts are still unanswered; not trying again"
        )));
    }
    let address = match (config.get_hosts().first(), config.get_ports().first()) {
        (Some(postgres::config::Host::Tcp(host)), port) => {
            Some((host.clone(), port.copied().unwrap_or(5432)))
        }
        _ => None,
    };
    // What reclaim can add to the driver's words: which roots a refused certificate was
    // checked against, and what a server that is not PostgreSQL said.
    let explained = |detail: String| {
        let answered = address
            .as_ref()
            .filter(|_| speaks_otherwise(&detail))
            .and_then(|(host, port)| what_it_answered(host, *port));
        let detail = tls.explain(detail);
        failed(match answered {
            Some(answered) => format!("{detail} ({answered})"),
            None => detail,
        })
    };
    let (tx, rx) = mpsc::sync_channel(1);
    // The attempt's state: waited for, answered, or abandoned (counted in `UNANSWERED` until
    // its thread ends). Attempts in flight at once are not counted: a map's nights connect
    // several at a time, each answered in milliseconds.
    let attempt = Arc::new(AtomicU8::new(WAITED_FOR));
    let mine = Arc::clone(&attempt);
    let spawned = std::thread::Builder::new()
        .name("pg-connect".into())
        .spawn(move || {
            let outcome = config
                .connect(connector)
                .and_then(|mut client| client.batch_execute(&setup).map(|()| client))
                .map_err(|e| (describe(&e), is_lost(&e)));
            if mine.swap(ANSWERED, Ordering::SeqCst) == ABANDONED {
                UNANSWERED.fetch_sub(1, Ordering::SeqCst);
            }
            let _ = tx.send(outcome);
        });
    if let Err(e) = spawned {
        return Err(failed(format!("cannot start a thread to connect: {e}")));
    }
    let answer = rx.recv_timeout(CONNECT_TIMEOUT + Duration::from_millis(500));
    if answer.is_err()
        && attempt
            .compare_exchange(WAITED_FOR, ABANDONED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    {
        UNANSWERED.fetch_add(1, Ordering::SeqCst);
    }
    match answer {
        // A server down or starting is told apart, so a worker may wait for it
        // (`Server::connect_patiently`).
        Ok(Err((detail, true))) => Err(WarehouseError::Lost {
            what: format!("connecting to {target}"),
            detail,
        }),
        Ok(outcome) => outcome.map_err(|(detail, _)| explained(detail)),
        Err(_) => Err(explained(format!(
            "no answer within {} s (it accepted the connection but said nothing: is it a PostgreSQL server, and is it up?)",
            CONNECT_TIMEOUT.as_secs()
        ))),
    }
}

/// Whether the driver's words may mean the other end is not a PostgreSQL server: it sent what
/// the protocol does not allow, or nothing.
fn speaks_otherwise(detail: &str) -> bool {
    [
        "bytes remaining on stream",
        "corrupt message",
        "unexpected message",
        "does not support TLS",
        "no answer within",
    ]
    .iter()
    .any(|words| detail.contains(words))
}

/// What the server at `host:port` says to PostgreSQL's first message (a request for TLS, which
/// every PostgreSQL server answers with one byte, `S` or `N`), when it says something else;
/// `None` when it answers as PostgreSQL does, or says nothing within a second.
fn what_it_answered(host: &str, port: u16) -> Option<String> {
    use std::io::{Read as _, Write as _};
    const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];
    let bound = Duration::from_secs(1);
    let address = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
        .ok()?
        .next()?;
    let mut stream = std::net::TcpStream::connect_timeout(&address, bound).ok()?;
    stream.set_read_timeout(Some(bound)).ok()?;
    stream.set_write_timeout(Some(bound)).ok()?;
    stream.write_all(&SSL_REQUEST).ok()?;
    let mut said = [0_u8; 40];
    let read = stream.read(&mut said).ok()?;
    if read == 0 || (read == 1 && matches!(said[0], b'S' | b'N')) {
        return None;
    }
    let text = String::from_utf8_lossy(&said[..read]);
    Some(format!(
        "{host}:{port} answered PostgreSQL's first message with \"{}\", which no PostgreSQL server says",
        crate::base::text::escape_controls(&text)
    ))
}

/// Abandoned connection attempts still waiting for an answer (`connect_with`).
static UNANSWERED: AtomicUsize = AtomicUsize::new(0);
/// At most this many abandoned attempts at once.
const MAX_UNANSWERED: usize = 4;

/// A connection attempt's states (`connect_with`).
const WAITED_FOR: u8 = 0;
const ANSWERED: u8 = 1;
const ABANDONED: u8 = 2;

/// How each session names itself on the server (`pg_stat_activity.application_name`): reclaim
/// and this process's pid, so the observer can find a killed worker's session by its pid.
#[must_use]
pub fn application_name() -> String {
    application_name_of(std::process::id())
}

/// `application_name()` of the process `pid`.
#[must_use]
pub fn application_name_of(pid: u32) -> String {
    format!("reclaim/{pid}")
}
