//! The callers' side (`send`): a worker's email before its commit and the relay's delivery, each
//! a bounded retry of a lost response, with the row's key as its `Idempotency-Key` when given;
//! and the only addresses a caller may send to (loopback).

use std::io;
use std::net::SocketAddr;
use std::thread;
use std::time::Duration;

use thiserror::Error;

use super::{Message, http};

/// A message the vendor would not take.
#[derive(Debug, Error)]
pub enum SendError {
    #[error("the vendor at {addr} refused {task} (HTTP {status}: {body})")]
    Refused {
        addr: SocketAddr,
        task: String,
        status: u16,
        body: String,
    },
    #[error("no answer from the vendor at {addr} for {task} after {attempts} attempts: {last}")]
    Unreachable {
        addr: SocketAddr,
        task: String,
        attempts: u32,
        last: io::Error,
    },
}

/// How many times a caller asks before it gives up on a message; with the pause between them,
/// a few seconds at most, so no loop runs on by itself.
pub const SEND_ATTEMPTS: u32 = 40;

const SEND_PAUSE: Duration = Duration::from_millis(20);

/// What one `send` took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// Requests made: more than one when a response was lost.
    pub attempts: u32,
    /// The vendor answered from its key store (nothing sent this time).
    pub replayed: bool,
}

/// Sends `message`, with `key` as its `Idempotency-Key` when given, retrying a lost response as
/// any client must (it cannot know whether the message went out).
pub fn send(addr: SocketAddr, message: &Message, key: Option<&str>) -> Result<Sent, SendError> {
    let body = message.body();
    let headers: Vec<(&str, &str)> = key.map(|k| ("Idempotency-Key", k)).into_iter().collect();
    let mut last = io::Error::other("not tried");
    for attempt in 1..=SEND_ATTEMPTS {
        match http::post(addr, "/messages", &headers, &body) {
            Ok(response) if (200..300).contains(&response.status) => {
                return Ok(Sent {
                    attempts: attempt,
                    replayed: response
                        .headers
                        .iter()
                        .any(|(n, v)| n == "idempotent-replayed" && v == "true"),
                });
            }
            Ok(response) => {
                return Err(SendError::Refused {
                    addr,
                    task: message.task.clone(),
                    status: response.status,
                    body: response.body,
                });
            }
            Err(error) => last = error,
        }
        thread::sleep(SEND_PAUSE);
    }
    Err(SendError::Unreachable {
        addr,
        task: message.task.clone(),
        attempts: SEND_ATTEMPTS,
        last,
    })
}

/// An address a worker or relay may send to: loopback only.
pub fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = text.parse().map_err(|_| {
        format!(
            "'{}' is not an address such as 127.0.0.1:8080",
            crate::base::text::shorten(text, 40)
        )
    })?;
    if !addr.ip().is_loopback() {
        return Err(format!(
            "{addr} is not on loopback; the vendor lives on 127.0.0.1 only"
        ));
    }
    Ok(addr)
}
