//! Just enough HTTP/1.1 over `std::net` for the vendor and its callers: one request per
//! connection (`Connection: close`), a `Content-Length` body, a handful of headers. No crate:
//! the vendor speaks to reclaim's own processes on loopback only, and the whole protocol it
//! needs fits in this file, where a dependency would bring a thread pool or a TLS stack it never
//! uses.

use std::fmt::Write as _;
use std::io::{self, BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// The largest body either side accepts: a message is a few hundred bytes.
pub const MAX_BODY: usize = 64 * 1024;
/// The most header lines either side reads before giving up on the peer.
const MAX_HEADERS: usize = 64;
/// How long a connect, a read or a write may take on loopback before it counts as lost.
pub const IO_TIMEOUT: Duration = Duration::from_secs(3);

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

fn bad(text: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, text.to_string())
}

/// Reads the header lines and the `Content-Length` body that follow a start line.
fn read_rest(reader: &mut BufReader<&TcpStream>) -> io::Result<(Headers, Vec<u8>)> {
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(bad("connection closed inside the headers"));
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if headers.len() >= MAX_HEADERS {
            return Err(bad("too many headers"));
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| bad("a header without ':'"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(Ok(0), |(_, v)| {
            v.parse::<usize>().map_err(|_| bad("bad Content-Length"))
        })?;
    if length > MAX_BODY {
        return Err(bad("body too large"));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok((headers, body))
}

/// Reads one request from an accepted connection.
pub fn read_request(stream: &TcpStream) -> io::Result<Request> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut reader = BufReader::new(stream);
    let mut start = String::new();
    reader.read_line(&mut start)?;
    let mut words = start.split_whitespace();
    let (Some(method), Some(path)) = (words.next(), words.next()) else {
        return Err(bad("not an HTTP request line"));
    };
    let (method, path) = (method.to_string(), path.to_string());
    let (headers, body) = read_rest(&mut reader)?;
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
        409 => "Conflict",
        422 => "Unprocessable Entity",
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

/// One POST and its response; an error means the outcome is unknown to the caller (refused
/// connection, a response that never came).
pub fn post(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> io::Result<Response> {
    let stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
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
    let mut reader = BufReader::new(&stream);
    let mut start = String::new();
    if reader.read_line(&mut start)? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the connection closed without a response",
        ));
    }
    let status = start
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| bad("not an HTTP status line"))?;
    let (headers, body) = read_rest(&mut reader)?;
    Ok(Response {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}
