//! The vendor against hostile clients on 127.0.0.1: a slowloris that once held the one
//! connection it served, more silent clients than it serves at once, a 300 MB header line it
//! once buffered whole, framing it once accepted two ways (conflicting lengths) or dropped
//! without a word (bytes that are not a header).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use super::tempdir;
use crate::support::{count, open_ro, poll_until};

/// `reclaim vendor` running on a new database; killed when dropped.
struct Vendor {
    child: Child,
    addr: SocketAddr,
}

impl Vendor {
    fn start(db: &Path) -> Self {
        let mut child = crate::support::reclaim_command()
            .arg("vendor")
            .arg("--db")
            .arg(db)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the vendor: {e}"));
        let mut first = String::new();
        if let Some(out) = child.stdout.take() {
            BufReader::new(out)
                .read_line(&mut first)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let addr = first
            .trim()
            .strip_prefix("listening ")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("first line: {first:?}"));
        Self { child, addr }
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(self.addr).unwrap_or_else(|e| panic!("{e}"));
        stream
            .set_read_timeout(Some(Duration::from_secs(8)))
            .unwrap_or_else(|e| panic!("{e}"));
        stream
    }

    /// Sends `request` whole and returns the status line of the answer (empty if none came).
    fn ask(&self, request: &[u8]) -> String {
        let mut stream = self.connect();
        stream.write_all(request).unwrap_or_else(|e| panic!("{e}"));
        status_line(&mut stream)
    }

    /// The sockets the vendor holds open (its listener and the connections it accepted).
    fn sockets(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id())).map_or(0, |fds| {
            fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
                .filter(|target| target.to_string_lossy().starts_with("socket:"))
                .count()
        })
    }

    /// The vendor's peak resident memory, in KiB (`VmHWM`).
    fn peak_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no VmHWM in {status}"))
    }
}

impl Drop for Vendor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads up to the end of the first line of an answer (or the connection's end).
fn status_line(stream: &mut TcpStream) -> String {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => line.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&line).trim_end().to_string()
}

fn message(extra_headers: &str) -> Vec<u8> {
    let body = r#"{"task":"task-001","text":"hi"}"#;
    format!(
        "POST /messages HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n{extra_headers}\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn deliveries(db: &Path) -> u64 {
    count(&open_ro(db), "SELECT count(*) FROM deliveries")
}

#[test]
fn twenty_slow_clients_delay_no_normal_request_and_are_cut_at_the_deadline() {
    let tmp = tempdir();
    let db = tmp.path().join("v.sqlite");
    let vendor = Vendor::start(&db);
    // The issue's bound: at most 20 connections, for at most 15 s, on 127.0.0.1.
    let start = Instant::now();
    let bound = Duration::from_secs(15);
    let slow: Vec<TcpStream> = (0..20).map(|_| vendor.connect()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<TcpStream> = slow
        .iter()
        .map(|s| s.try_clone().unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let trickle = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || {
            let mut writers = writers;
            for w in &mut writers {
                let _ = w.write_all(b"POST /messages HTTP/1.1\r\nX-Slow: ");
            }
            // A byte a second to each, as the probe did: never idle long enough for a
            // per-read timeout.
            while !stop.load(Ordering::SeqCst) && start.elapsed() < bound {
                for w in &mut writers {
                    let _ = w.write_all(b"a");
                }
                thread::sleep(Duration::from_millis(300));
            }
        })
    };
    // Every slow client accepted by the vendor (its listener and 20 sockets) and trickling; a
    // normal request is answered meanwhile.
    assert!(
        poll_until(bound, || vendor.sockets() > 20),
        "the vendor accepted {} of the 20 slow clients",
        vendor.sockets().saturating_sub(1)
    );
    let answered = vendor.ask(&message(""));
    assert_eq!(
        answered, "HTTP/1.1 201 Created",
        "a normal request behind 20 slow ones"
    );
    assert_eq!(deliveries(&db), 1);
    // The slow ones have not been answered yet (they are still sending), and each is cut by
    // the whole-request deadline, within the bound, with a 408.
    for (i, mut s) in slow.into_iter().enumerate() {
        let left = bound
            .saturating_sub(start.elapsed())
            .max(Duration::from_millis(1));
        s.set_read_timeout(Some(left))
            .unwrap_or_else(|e| panic!("{e}"));
        let line = status_line(&mut s);
        assert_eq!(line, "HTTP/1.1 408 Request Timeout", "slow client {i}");
    }
    stop.store(true, Ordering::SeqCst);
    let _ = trickle.join();
    assert_eq!(deliveries(&db), 1, "a slow client was taken for a message");
}

#[test]
fn more_silent_clients_than_the_vendor_serves_at_once_stall_no_request() {
    let tmp = tempdir();
    let db = tmp.path().join("v.sqlite");
    let vendor = Vendor::start(&db);
    // More than the vendor's 128 connections, each sending nothing: it once accepted no more
    // until the first were cut at their 10 s deadline, past this client's 8 s read timeout.
    let silent: Vec<TcpStream> = (0..160).map(|_| vendor.connect()).collect();
    let answered = vendor.ask(&message(""));
    assert_eq!(
        answered, "HTTP/1.1 201 Created",
        "a normal request behind 160 silent ones"
    );
    assert_eq!(deliveries(&db), 1);
    drop(silent);
}

#[test]
fn a_300_mb_header_line_is_answered_431_without_the_vendor_holding_it() {
    let tmp = tempdir();
    let db = tmp.path().join("v.sqlite");
    let vendor = Vendor::start(&db);
    let before = vendor.peak_kib();
    let stream = vendor.connect();
    let mut writer = stream.try_clone().unwrap_or_else(|e| panic!("{e}"));
    let answered = Arc::new(AtomicBool::new(false));
    let sender = {
        let answered = Arc::clone(&answered);
        thread::spawn(move || {
            let _ = writer.write_all(b"POST /messages HTTP/1.1\r\nHost: x\r\nX-Big: ");
            let chunk = vec![b'a'; 1 << 20];
            let mut sent = 0usize;
            // 300 MB, unless the vendor answers or closes first.
            while sent < 300 << 20 && !answered.load(Ordering::SeqCst) {
                if writer.write_all(&chunk).is_err() {
                    break;
                }
                sent += chunk.len();
            }
            sent
        })
    };
    let mut reader = stream;
    let line = status_line(&mut reader);
    answered.store(true, Ordering::SeqCst);
    let sent = sender.join().unwrap_or(0);
    assert_eq!(
        line, "HTTP/1.1 431 Request Header Fields Too Large",
        "after {sent} bytes of one header line"
    );
    let after = vendor.peak_kib();
    assert!(
        after < before + 32 * 1024,
        "the vendor's peak memory went from {before} KiB to {after} KiB"
    );
    // And it still serves.
    assert_eq!(vendor.ask(&message("")), "HTTP/1.1 201 Created");
}

#[test]
fn framing_two_ways_or_bytes_that_are_not_a_header_are_answered_400() {
    let tmp = tempdir();
    let db = tmp.path().join("v.sqlite");
    let vendor = Vendor::start(&db);
    let body = r#"{"task":"task-001","text":"hi"}"#;
    let conflicting = format!(
        "POST /messages HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nContent-Length: 5\r\n\r\n{body}",
        body.len()
    );
    let mut not_utf8 = b"POST /messages HTTP/1.1\r\nHost: x\r\nX-Name: caf".to_vec();
    not_utf8.extend_from_slice(b"\xe9\xff\r\n");
    not_utf8.extend_from_slice(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("two Content-Lengths", conflicting.into_bytes()),
        ("a header value that is not UTF-8", not_utf8),
        (
            "a control byte in a header name",
            message("X-Na\u{1}me: 1\r\n"),
        ),
        ("a header without a colon", message("no colon here\r\n")),
        (
            "a Transfer-Encoding beside the length",
            message("Transfer-Encoding: chunked\r\n"),
        ),
        ("a length that is not a number", {
            format!("POST /messages HTTP/1.1\r\nContent-Length: 0x20\r\n\r\n{body}").into_bytes()
        }),
        // Which of two keys the vendor honoured is a question its caller could not answer.
        (
            "two Idempotency-Keys",
            message("Idempotency-Key: k1\r\nIdempotency-Key: k2\r\n"),
        ),
        (
            "the same Idempotency-Key twice",
            message("Idempotency-Key: k1\r\nidempotency-key: k1\r\n"),
        ),
    ];
    for (what, request) in cases {
        assert_eq!(vendor.ask(&request), "HTTP/1.1 400 Bad Request", "{what}");
    }
    // Heads past the caps: 431, never a read that goes on.
    let many_lines = message(&"X-Pad: a\r\n".repeat(70));
    let big_block = message(&format!("X-Pad: {}\r\n", "a".repeat(1000)).repeat(20));
    for (what, request) in [
        ("70 header lines", many_lines),
        ("20 KB of headers", big_block),
    ] {
        assert_eq!(
            vendor.ask(&request),
            "HTTP/1.1 431 Request Header Fields Too Large",
            "{what}"
        );
    }
    assert_eq!(
        deliveries(&db),
        0,
        "a refused request was taken for a message"
    );
    assert_eq!(vendor.ask(&message("")), "HTTP/1.1 201 Created");
}
