//! HTTP/1.1 over `std::net` for the vendor and its callers: one request per connection
//! (`Connection: close`), a `Content-Length` body, a handful of headers. Heads are parsed by
//! `httparse` (a tested parser, not hand-written line reads) and everything read is bounded: the
//! head to `MAX_HEAD` bytes and each of its lines to `MAX_LINE` (431 past either, found while
//! the bytes arrive, never after buffering them), the body to `MAX_BODY` (413), a whole request
//! to `REQUEST_DEADLINE` from its accept (408). Bytes httparse refuses, a header value that is
//! not UTF-8, two different `Content-Length`s or a `Transfer-Encoding` get 400, never a dropped
//! connection. The server (`pool`) gives each connection a thread of its own, so a slow client
//! delays nobody else.

use std::fmt::Write as _;
use std::io::{self, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The largest body either side accepts: a message is a few hundred bytes.
pub const MAX_BODY: usize = 64 * 1024;
/// The largest head (start line and headers) either side reads: a real one is ~200 bytes.
pub const MAX_HEAD: usize = 16 * 1024;
/// The longest line of a head.
pub const MAX_LINE: usize = 8 * 1024;
/// What one read takes.
const CHUNK: usize = 4096;
/// The most header lines either side reads.
const MAX_HEADERS: usize = 64;
/// How long a connect or a write may take on loopback before it counts as lost, and how long a
/// caller waits for the whole response once its request is sent.
pub const IO_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the vendor gives a connection, from its accept, to deliver its whole request; a
/// caller's request arrives in one write, so only a client that trickles bytes meets it.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(10);
/// How long the vendor goes on reading (and discarding) after refusing a request, so the
/// refusal reaches a client still sending instead of being lost to a reset.
const LINGER: Duration = Duration::from_secs(2);

/// Header names and values, in order.
type Headers = Vec<(String, String)>;

/// A request as the vendor reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A response: its status and its JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// Why a request or response could not be read.
#[derive(Debug)]
pub enum Refusal {
    /// The peer sent something the vendor answers with this status and reason.
    Answer(u16, String),
    /// The peer went away (or the socket failed): nobody to answer.
    Gone(io::Error),
}

impl Refusal {
    fn answer(status: u16, why: impl Into<String>) -> Self {
        Self::Answer(status, why.into())
    }

    /// As a caller sees it: the response could not be read.
    fn into_io(self) -> io::Error {
        match self {
            Self::Answer(_, why) => io::Error::new(io::ErrorKind::InvalidData, why),
            Self::Gone(error) => error,
        }
    }
}

/// A complete head's length, `None` while more bytes are needed.
type HeadEnd = Result<Option<usize>, Refusal>;

fn parse_error(error: httparse::Error) -> Refusal {
    match error {
        httparse::Error::TooManyHeaders => {
            Refusal::answer(431, format!("more than {MAX_HEADERS} header lines"))
        }
        other => Refusal::answer(400, format!("not HTTP/1.1: {other}")),
    }
}

fn request_end(bytes: &[u8]) -> HeadEnd {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    match httparse::Request::new(&mut headers).parse(bytes) {
        Ok(httparse::Status::Complete(n)) => Ok(Some(n)),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(error) => Err(parse_error(error)),
    }
}

fn response_end(bytes: &[u8]) -> HeadEnd {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    match httparse::Response::new(&mut headers).parse(bytes) {
        Ok(httparse::Status::Complete(n)) => Ok(Some(n)),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(error) => Err(parse_error(error)),
    }
}

/// Sets the read timeout to what is left before `deadline`; a deadline already passed is 408.
fn time_left(stream: &TcpStream, deadline: Instant) -> Result<(), Refusal> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(Refusal::answer(408, "the request did not arrive in time"));
    }
    stream.set_read_timeout(Some(left)).map_err(Refusal::Gone)
}

/// Reads a head, a chunk at a time, until `end` says it is complete: the head's bytes (with
/// whatever of the body came along) and its length. Never holds more than `MAX_HEAD` bytes.
fn read_head(
    stream: &TcpStream,
    deadline: Instant,
    end: fn(&[u8]) -> HeadEnd,
) -> Result<(Vec<u8>, usize), Refusal> {
    let mut bytes = Vec::with_capacity(1024);
    let mut line_start = 0;
    let mut chunk = [0u8; CHUNK];
    loop {
        let room = MAX_HEAD - bytes.len();
        if room == 0 {
            return Err(Refusal::answer(
                431,
                format!("the head is longer than {MAX_HEAD} bytes"),
            ));
        }
        time_left(stream, deadline)?;
        let n = match (&*stream).read(&mut chunk[..room.min(CHUNK)]) {
            Ok(0) => {
                return Err(Refusal::Gone(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the connection closed inside the head",
                )));
            }
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(e) => return Err(Refusal::Gone(e)),
        };
        let from = bytes.len();
        bytes.extend_from_slice(&chunk[..n]);
        if let Some(last) = bytes[from..].iter().rposition(|&b| b == b'\n') {
            line_start = from + last + 1;
        }
        if let Some(len) = end(&bytes)? {
            return Ok((bytes, len));
        }
        if bytes.len() - line_start > MAX_LINE {
            return Err(Refusal::answer(
                431,
                format!("a header line is longer than {MAX_LINE} bytes"),
            ));
        }
    }
}

/// The headers of a parsed head, owned, names lower-cased; a value that is not UTF-8 is 400.
fn owned_headers(headers: &[httparse::Header<'_>]) -> Result<Headers, Refusal> {
    let mut owned = Vec::with_capacity(headers.len());
    for header in headers {
        if header.value.len() > MAX_LINE {
            return Err(Refusal::answer(
                431,
                format!("a header line is longer than {MAX_LINE} bytes"),
            ));
        }
        let value = std::str::from_utf8(header.value)
            .map_err(|_| Refusal::answer(400, "a header value is not UTF-8 text"))?;
        owned.push((header.name.to_ascii_lowercase(), value.trim().to_string()));
    }
    Ok(owned)
}

/// At most one `Idempotency-Key`: a message has one key, and which of two the vendor honoured
/// is a question its caller could not answer.
fn one_key(headers: &Headers) -> Result<(), Refusal> {
    if headers
        .iter()
        .filter(|(n, _)| n == "idempotency-key")
        .count()
        > 1
    {
        return Err(Refusal::answer(
            400,
            "two Idempotency-Key headers; a message has one key",
        ));
    }
    Ok(())
}

/// The body's length by `Content-Length` (0 without one). Two different lengths, a length that
/// is not a plain number, or a `Transfer-Encoding` (a message could be framed two ways: the
/// root of request smuggling) are refused.
fn content_length(headers: &Headers) -> Result<usize, Refusal> {
    if headers.iter().any(|(n, _)| n == "transfer-encoding") {
        return Err(Refusal::answer(
            400,
            "Transfer-Encoding is not accepted; send a Content-Length",
        ));
    }
    let mut length = None;
    for (_, value) in headers.iter().filter(|(n, _)| n == "content-length") {
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Refusal::answer(
                400,
                "a Content-Length that is not a number",
            ));
        }
        let n = value
            .parse::<usize>()
            .map_err(|_| Refusal::answer(413, format!("a body over {MAX_BODY} bytes")))?;
        if length.is_some_and(|l| l != n) {
            return Err(Refusal::answer(400, "two different Content-Lengths"));
        }
        length = Some(n);
    }
    let length = length.unwrap_or(0);
    if length > MAX_BODY {
        return Err(Refusal::answer(
            413,
            format!("a body over {MAX_BODY} bytes"),
        ));
    }
    Ok(length)
}

/// Reads the rest of a `length`-byte body of which `have` came with the head.
fn read_body(
    stream: &TcpStream,
    deadline: Instant,
    mut have: Vec<u8>,
    length: usize,
) -> Result<Vec<u8>, Refusal> {
    have.truncate(length);
    while have.len() < length {
        time_left(stream, deadline)?;
        let mut chunk = [0u8; CHUNK];
        let want = (length - have.len()).min(chunk.len());
        match (&*stream).read(&mut chunk[..want]) {
            Ok(0) => {
                return Err(Refusal::Gone(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the connection closed inside the body",
                )));
            }
            Ok(n) => have.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(Refusal::Gone(e)),
        }
    }
    Ok(have)
}

/// Reads one request from an accepted connection, all of it before `deadline`.
pub fn read_request(stream: &TcpStream, deadline: Instant) -> Result<Request, Refusal> {
    let (bytes, len) = read_head(stream, deadline, request_end)?;
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    parsed.parse(&bytes[..len]).map_err(parse_error)?;
    let method = parsed.method.unwrap_or_default().to_string();
    let path = parsed.path.unwrap_or_default().to_string();
    let headers = owned_headers(parsed.headers)?;
    one_key(&headers)?;
    let length = content_length(&headers)?;
    let body = read_body(stream, deadline, bytes[len..].to_vec(), length)?;
    Ok(Request {
        method,
        path,
        headers,
        body,
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        422 => "Unprocessable Entity",
        431 => "Request Header Fields Too Large",
        _ => "Internal Server Error",
    }
}

/// Writes a response and closes the connection.
pub fn write_response(mut stream: &TcpStream, response: &Response) -> io::Result<()> {
    let mut text = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        response.status,
        reason(response.status),
        response.body.len()
    );
    for (name, value) in &response.headers {
        let _ = write!(text, "{name}: {value}\r\n");
    }
    text.push_str("\r\n");
    text.push_str(&response.body);
    stream.write_all(text.as_bytes())?;
    stream.flush()
}

/// Answers a request that cannot be read, then reads and discards what the client still sends
/// (for `LINGER` at most, in a fixed buffer) so the answer is not lost to a reset.
fn refuse(stream: &TcpStream, status: u16, why: &str) {
    let body = serde_json::json!({ "error": why }).to_string();
    let response = Response {
        status,
        headers: Vec::new(),
        body,
    };
    if write_response(stream, &response).is_err() {
        return;
    }
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let until = Instant::now() + LINGER;
    let mut sink = [0u8; 16 * 1024];
    while time_left(stream, until).is_ok() {
        match (&*stream).read(&mut sink) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// What the server does with a request it read: a response, `None` to close without one (a
/// dropped response), or an error said on stderr (the connection closed).
pub type Answer = dyn Fn(&Request) -> io::Result<Reply> + Send + Sync;

/// What the server does with a request it has read.
#[derive(Debug)]
pub enum Reply {
    Send(Response),
    /// Acted on, and the connection closed without an answer.
    Drop,
    /// Acted on, and never answered while the caller waits (until it goes away).
    Hold,
}

/// One connection, start to end, on its own thread; `read` is called once its request is read
/// (or refused), so the pool never evicts a connection being answered.
pub(super) fn connection(stream: &TcpStream, answer: &Answer, read: &dyn Fn()) {
    let deadline = Instant::now() + REQUEST_DEADLINE;
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
    let request = read_request(stream, deadline);
    read();
    match request {
        Ok(request) => match answer(&request) {
            Ok(Reply::Send(response)) => {
                if let Err(error) = write_response(stream, &response) {
                    eprintln!("vendor: {error}");
                }
            }
            Ok(Reply::Drop) => {
                let _ = stream.shutdown(std::net::Shutdown::Both);
            }
            Ok(Reply::Hold) => hold(stream),
            Err(error) => eprintln!("vendor: {error}"),
        },
        Err(Refusal::Answer(status, why)) => refuse(stream, status, &why),
        Err(Refusal::Gone(_)) => {}
    }
}

/// Keeps a request unanswered until its caller goes away (killed by the supervisor), a minute
/// at most: the message is recorded as sent, and the caller never learns it.
fn hold(stream: &TcpStream) {
    use std::io::Read as _;
    let until = std::time::Instant::now() + Duration::from_secs(60);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let mut byte = [0u8; 64];
    let mut reader = stream;
    while std::time::Instant::now() < until {
        match reader.read(&mut byte) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

/// One POST and its response; an error means the outcome is unknown to the caller (refused
/// connection, a response that never came).
pub fn post(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> io::Result<Response> {
    let stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut text = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        let _ = write!(text, "{name}: {value}\r\n");
    }
    text.push_str("\r\n");
    text.push_str(body);
    (&stream).write_all(text.as_bytes())?;
    (&stream).flush()?;
    let deadline = Instant::now() + IO_TIMEOUT;
    let (bytes, len) = read_head(&stream, deadline, response_end).map_err(Refusal::into_io)?;
    let mut parsed_headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Response::new(&mut parsed_headers);
    parsed
        .parse(&bytes[..len])
        .map_err(|e| parse_error(e).into_io())?;
    let status = parsed.code.unwrap_or_default();
    let headers = owned_headers(parsed.headers).map_err(Refusal::into_io)?;
    let length = content_length(&headers).map_err(Refusal::into_io)?;
    let body =
        read_body(&stream, deadline, bytes[len..].to_vec(), length).map_err(Refusal::into_io)?;
    Ok(Response {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> Headers {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_string(), (*v).to_string()))
            .collect()
    }

    fn status(result: &Result<usize, Refusal>) -> Option<u16> {
        match result {
            Err(Refusal::Answer(status, _)) => Some(*status),
            _ => None,
        }
    }

    #[test]
    fn lengths_are_one_plain_number_or_refused() {
        assert!(matches!(content_length(&headers(&[])), Ok(0)));
        assert!(matches!(
            content_length(&headers(&[
                ("content-length", "12"),
                ("content-length", "12")
            ])),
            Ok(12)
        ));
        for bad in [
            vec![("content-length", "12"), ("content-length", "13")],
            vec![("content-length", "12, 13")],
            vec![("content-length", "+12")],
            vec![("content-length", "")],
            vec![("transfer-encoding", "chunked"), ("content-length", "5")],
        ] {
            assert_eq!(
                status(&content_length(&headers(&bad))),
                Some(400),
                "{bad:?}"
            );
        }
        assert_eq!(
            status(&content_length(&headers(&[("content-length", "70000")]))),
            Some(413)
        );
        assert_eq!(
            status(&content_length(&headers(&[(
                "content-length",
                "99999999999999999999999"
            )]))),
            Some(413)
        );
    }

    #[test]
    fn a_message_has_one_idempotency_key() {
        let key = |v: &'static str| ("idempotency-key", v);
        assert!(one_key(&headers(&[key("a")])).is_ok() && one_key(&headers(&[])).is_ok());
        for twice in [[key("a"), key("b")], [key("a"), key("a")]] {
            let refused = one_key(&headers(&twice));
            assert!(matches!(refused, Err(Refusal::Answer(400, _))), "{twice:?}");
        }
    }

    #[test]
    fn a_head_is_complete_partial_or_refused_as_httparse_reads_it() {
        assert_eq!(
            request_end(b"POST /m HTTP/1.1\r\nHost: x\r\n\r\nbody").ok(),
            Some(Some(29))
        );
        assert_eq!(request_end(b"POST /m HTTP/1.1\r\nHost: x").ok(), Some(None));
        assert!(matches!(
            request_end(b"POST /m HTTP/1.1\r\nHo\x01st: x\r\n\r\n"),
            Err(Refusal::Answer(400, _))
        ));
        let many = format!(
            "GET / HTTP/1.1\r\n{}\r\n",
            "a: b\r\n".repeat(MAX_HEADERS + 1)
        );
        assert!(matches!(
            request_end(many.as_bytes()),
            Err(Refusal::Answer(431, _))
        ));
    }
}
