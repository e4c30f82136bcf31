//! The lost answer (`--lose-answer-at ROWS`): a proxy of reclaim's own between one lane's
//! workers and the server, on a Unix socket in a folder of its own (0700, removed with it). It
//! passes every byte both ways unchanged and reads the server's messages only to see where an
//! answer ends (`ReadyForQuery`). While a loss is planned, an answer that completed a command and
//! leaves its session outside a transaction (a `COMMIT`, or a statement that committed on its
//! own) is held back while the proxy counts the lane's rows, on a connection of its own straight
//! to the server. The first such answer after which the rows reach a planned number is never
//! delivered: both ends are closed. The commit is durable, and the worker that sent it cannot
//! know whether it happened.
//!
//! A client's request for TLS is answered "no" here (the socket is private to this account and
//! local), and the proxy speaks to the server without TLS: a server URL that insists on TLS is
//! refused before the night (`run`'s `check_lost_answers`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};

use super::{CONNECT_TIMEOUT, Server, quote_ident};
use crate::warehouse::error::WarehouseError;
use crate::warehouse::source::RowSource;

/// The port number in the proxy's socket name (`.s.PGSQL.5432`); no TCP port is opened.
const PORT: u16 = 5432;
/// Sessions served at once, at most: a lane's workers and a job's clients are a few.
const MAX_SESSIONS: usize = 64;
/// The most of one answer held back while the proxy decides; a longer answer (a large result)
/// is passed on as it comes and is never the one lost.
const MAX_HELD: usize = 1 << 20;
/// The longest a client's first message may be (PostgreSQL's own limit).
const MAX_STARTUP: usize = 10_000;
/// The keys named for one lost answer, at most.
const KEYS_NAMED: i64 = 20;

/// The startup codes a client may send before its real first message.
const SSL_REQUEST: u32 = 80_877_103;
const GSS_REQUEST: u32 = 80_877_104;

/// One answer the proxy kept from its worker.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LostAnswer {
    /// The row count the plan named.
    pub planned: u64,
    /// The rows once the commit whose answer was lost was in.
    pub rows: u64,
    /// The keys of the rows that commit wrote (its transaction's, by `xmin`), when the rows
    /// are judged by a key.
    pub keys: Vec<String>,
    /// The keys the plan named whose first commit this was (`--lose-answer-at-task`): the first
    /// commit after which each one's row was in. With no row count planned here, `planned` is
    /// the rows at that commit.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub at_keys: Vec<String>,
}

/// Which answers a lane's proxy loses: each at the first commit after which the rows reach a
/// count, or after which a key's row is in (a task's commit, whoever makes it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnswerPlan {
    pub rows: Vec<u64>,
    pub keys: Vec<String>,
}

impl AnswerPlan {
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty() && self.keys.is_empty()
    }
}

/// Why the proxy cannot start.
#[derive(Debug, thiserror::Error)]
#[error("cannot start the proxy that loses answers (--lose-answer-at): {0}")]
pub struct ProxyError(String);

impl From<ProxyError> for WarehouseError {
    fn from(error: ProxyError) -> Self {
        WarehouseError::Flags(error.to_string())
    }
}

/// Where the server is, as the proxy reaches it: without TLS.
#[derive(Debug, Clone)]
enum Upstream {
    Tcp(String, u16),
    Unix(PathBuf),
}

impl Upstream {
    fn of(server: &Server) -> Result<Self, ProxyError> {
        let prepared = (server.conninfo.config()).map_err(|e| ProxyError(e.0))?;
        let config = prepared.config;
        let port = config.get_ports().first().copied().unwrap_or(PORT);
        match config.get_hosts().first() {
            Some(postgres::config::Host::Tcp(name)) => Ok(Self::Tcp(name.clone(), port)),
            Some(postgres::config::Host::Unix(dir)) => {
                Ok(Self::Unix(dir.join(format!(".s.PGSQL.{port}"))))
            }
            None => Err(ProxyError("the server's address names no host".into())),
        }
    }

    fn connect(&self) -> std::io::Result<Conn> {
        match self {
            Self::Tcp(host, port) => {
                let mut last = None;
                for addr in std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), *port))? {
                    match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
                        Ok(stream) => {
                            stream.set_nodelay(true)?;
                            return Ok(Conn::Tcp(stream));
                        }
                        Err(e) => last = Some(e),
                    }
                }
                Err(last.unwrap_or_else(|| std::io::Error::other("no address")))
            }
            Self::Unix(path) => UnixStream::connect(path).map(Conn::Unix),
        }
    }
}

/// The proxy's end towards the server.
#[derive(Debug)]
enum Conn {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Conn {
    fn try_clone(&self) -> std::io::Result<Self> {
        Ok(match self {
            Self::Tcp(s) => Self::Tcp(s.try_clone()?),
            Self::Unix(s) => Self::Unix(s.try_clone()?),
        })
    }

    fn shutdown(&self) {
        let _ = match self {
            Self::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
            Self::Unix(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Self::Tcp(s) => s.read(buf),
            Self::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Self::Tcp(s) => s.write(buf),
            Self::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Self::Tcp(s) => s.flush(),
            Self::Unix(s) => s.flush(),
        }
    }
}

/// What counts the lane's rows once an answer's commit is in.
trait Counter: Send {
    /// The rows now, counted no further than `limit` (a count of a large table at every
    /// commit would make the night quadratic); `None` when they cannot be counted (nothing is
    /// lost then).
    fn rows_up_to(&mut self, limit: u64) -> Option<u64>;
    /// The rows now, all of them.
    fn rows(&mut self) -> Option<u64>;
    /// The keys of the rows the newest transaction wrote (the one whose answer is held).
    fn keys(&mut self) -> Vec<String>;
    /// Whether a row of `key` is in now; `None` when it cannot be told (nothing is lost then).
    fn holds(&mut self, key: &str) -> Option<bool>;
}

/// What decides, at an answer, whether it is the one to lose: the plan left, and what counts.
struct Judge {
    counter: Box<dyn Counter>,
    /// The row counts still to lose an answer at, ascending.
    pending: Vec<u64>,
    /// The keys whose commit's answer is still to be lost.
    pending_keys: Vec<String>,
    told: mpsc::Sender<LostAnswer>,
}

impl Judge {
    fn armed(&self) -> bool {
        !self.pending.is_empty() || !self.pending_keys.is_empty()
    }

    /// Whether the answer held now is the one to lose: by the rows (`at_rows`), or by a
    /// planned key whose row its commit brought in. Said on `told` when it is, with every
    /// planned key whose row is in now (one commit settles them all).
    fn lose_now(&mut self) -> bool {
        if let Some(mut lost) = self.at_rows() {
            lost.at_keys = self.keys_in();
            let _ = self.told.send(lost);
            return true;
        }
        let at_keys = self.keys_in();
        if at_keys.is_empty() {
            return false;
        }
        let rows = self.counter.rows().unwrap_or(0);
        let keys = self.counter.keys();
        let _ = self.told.send(LostAnswer {
            planned: rows,
            rows,
            keys,
            at_keys,
        });
        true
    }

    /// The planned keys whose rows are in now, taken from the plan (each is lost once).
    fn keys_in(&mut self) -> Vec<String> {
        let pending = std::mem::take(&mut self.pending_keys);
        let (found, left): (Vec<String>, Vec<String>) =
            (pending.into_iter()).partition(|key| self.counter.holds(key) == Some(true));
        self.pending_keys = left;
        found
    }

    /// The answer held now, when it is the one to lose by the rows: counted now that its
    /// commit is in, they have reached the next planned number. A count that cannot be made
    /// loses nothing (the plan then says what never happened).
    fn at_rows(&mut self) -> Option<LostAnswer> {
        let &next = self.pending.first()?;
        let seen = self.counter.rows_up_to(next)?;
        if seen < next {
            return None;
        }
        let rows = self.counter.rows().unwrap_or(seen).max(seen);
        let keys = self.counter.keys();
        self.pending.retain(|&p| p > rows);
        Some(LostAnswer {
            planned: next,
            rows,
            keys,
            at_keys: Vec::new(),
        })
    }
}

/// The lane's rows counted on reclaim's own connection, straight to the server.
struct Rows {
    server: Server,
    schema: String,
    /// The table, quoted, when the rows are a table's (not `--count-sql`'s).
    table: Option<String>,
    count_sql: String,
    keys_sql: Option<String>,
    /// Whether a key's row is in (`$1`), when the rows are a table's.
    holds_sql: Option<String>,
    client: Option<postgres::Client>,
}

impl Rows {
    fn client(&mut self) -> Option<&mut postgres::Client> {
        // A table not made yet keeps the connection; one lost is made again.
        if self
            .client
            .as_ref()
            .is_some_and(postgres::Client::is_closed)
        {
            self.client = None;
        }
        if self.client.is_none() {
            self.client = self.server.connect(Some(&self.schema)).ok();
        }
        self.client.as_mut()
    }
}

impl Rows {
    /// The first column of `sql`'s one row, as a count.
    fn count(&mut self, sql: &str) -> Option<u64> {
        let row = self.client()?.query_one(sql, &[]).ok()?;
        let n = (row.try_get::<_, i64>(0).ok())
            .or_else(|| row.try_get::<_, i32>(0).ok().map(i64::from))?;
        u64::try_from(n).ok()
    }
}

impl Counter for Rows {
    fn rows_up_to(&mut self, limit: u64) -> Option<u64> {
        // `--count-sql` is the user's whole count; a table's is cut at `limit` rows.
        let sql = match &self.table {
            Some(table) => {
                format!("SELECT count(*) FROM (SELECT 1 FROM {table} LIMIT {limit}) AS s")
            }
            None => self.count_sql.clone(),
        };
        self.count(&sql)
    }

    fn rows(&mut self) -> Option<u64> {
        let sql = self.count_sql.clone();
        self.count(&sql)
    }

    fn keys(&mut self) -> Vec<String> {
        let Some(sql) = self.keys_sql.clone() else {
            return Vec::new();
        };
        let Some(rows) = self.client().and_then(|c| c.query(sql.as_str(), &[]).ok()) else {
            return Vec::new();
        };
        (rows.iter())
            .filter_map(|r| r.try_get::<_, Option<String>>(0).ok().flatten())
            .collect()
    }

    fn holds(&mut self, key: &str) -> Option<bool> {
        let sql = self.holds_sql.clone()?;
        let row = self.client()?.query_one(sql.as_str(), &[&key]).ok()?;
        row.try_get::<_, bool>(0).ok()
    }
}

impl Rows {
    /// The counts the proxy makes of `rows` in `schema`: by the lane's table or its
    /// `--count-sql`, and the keys of one transaction's rows when the rows have a key.
    fn of(server: &Server, schema: &str, rows: &RowSource) -> Self {
        let (table, count_sql, keys_sql, holds_sql) = if let Some(count) = &rows.count_sql {
            (
                None,
                format!("SELECT * FROM ({count}) AS reclaim_count"),
                None,
                None,
            )
        } else {
            let table = quote_ident(&rows.table);
            let key = quote_ident(&rows.key);
            let keys = format!(
                "SELECT {key}::text FROM {table} WHERE age(xmin) = (SELECT min(age(xmin)) FROM {table}) ORDER BY 1 LIMIT {KEYS_NAMED}"
            );
            let count = format!("SELECT count(*) FROM {table}");
            let holds = format!("SELECT EXISTS (SELECT 1 FROM {table} WHERE {key}::text = $1)");
            (Some(table), count, Some(keys), Some(holds))
        };
        Self {
            server: server.clone(),
            schema: schema.to_string(),
            table,
            count_sql,
            keys_sql,
            holds_sql,
            client: None,
        }
    }
}

/// A lane's proxy, while its night runs: stopped, its sessions closed and its folder removed
/// when dropped.
pub struct AnswerProxy {
    folder: tempfile::TempDir,
    socket: PathBuf,
    for_workers: Server,
    lost: mpsc::Receiver<LostAnswer>,
    /// What decides which answer to lose, shared with the sessions: `lose_next` adds to it.
    judge: Arc<Mutex<Judge>>,
    stop: Arc<AtomicBool>,
    sessions: Sessions,
    accepting: Option<std::thread::JoinHandle<()>>,
}

/// The sessions open now, each end's second handle by its number, for the proxy to close them
/// when it stops; a session removes its own as it ends (a job with a connection per item opens
/// thousands in a night).
type Sessions = Arc<Mutex<std::collections::HashMap<u64, (UnixStream, Conn)>>>;

impl std::fmt::Debug for AnswerProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnswerProxy")
            .field("socket", &self.socket)
            .finish_non_exhaustive()
    }
}

impl AnswerProxy {
    /// Starts the proxy for the lane whose rows are `rows` in `schema` on `server`, to lose the
    /// answers `plan` names.
    pub fn start(
        server: &Server,
        schema: &str,
        rows: &RowSource,
        plan: &AnswerPlan,
    ) -> Result<Self, ProxyError> {
        let counter = Rows::of(server, schema, rows);
        Self::between(Upstream::of(server)?, Box::new(counter), plan, |folder| {
            Ok(Server {
                conninfo: through(server, folder)?,
                prefix: server.prefix.clone(),
                wait: server.wait,
                restarter: None,
            })
        })
    }

    /// The proxy to `upstream`, `counter` counting the rows, the workers' server made for the
    /// proxy's folder by `for_workers`.
    fn between(
        upstream: Upstream,
        counter: Box<dyn Counter>,
        plan: &AnswerPlan,
        for_workers: impl FnOnce(&Path) -> Result<Server, ProxyError>,
    ) -> Result<Self, ProxyError> {
        // A folder of its own, 0700: no other account reaches the socket.
        let folder = crate::base::paths::private_dir_in(&std::env::temp_dir(), "answers")
            .map_err(|e| ProxyError(format!("a folder for its socket: {e}")))?;
        let socket = folder.path().join(format!(".s.PGSQL.{PORT}"));
        let listener = UnixListener::bind(&socket)
            .map_err(|e| ProxyError(format!("{}: {e}", socket.display())))?;
        let (told, lost) = mpsc::channel();
        let mut pending = plan.rows.clone();
        pending.sort_unstable();
        pending.dedup();
        let mut pending_keys = plan.keys.clone();
        pending_keys.sort_unstable();
        pending_keys.dedup();
        let judge = Arc::new(Mutex::new(Judge {
            counter,
            pending,
            pending_keys,
            told,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let sessions = Sessions::default();
        let accepting = {
            let (stop, sessions, judge) = (stop.clone(), sessions.clone(), judge.clone());
            std::thread::Builder::new()
                .name("answers".into())
                .spawn(move || accept(&listener, &upstream, &judge, &stop, &sessions))
                .map_err(|e| ProxyError(e.to_string()))?
        };
        let for_workers = for_workers(folder.path())?;
        Ok(Self {
            folder,
            socket,
            for_workers,
            lost,
            judge,
            stop,
            sessions,
            accepting: Some(accepting),
        })
    }

    /// Plans one more loss while the night runs (the operator's `L`): the answer to the first
    /// commit after which the rows reach `rows` (the rows seen now and one more: the next
    /// commit that brings a row, or the next commit at all when the table is already past it),
    /// or the first count after it not planned already, so it is a loss of its own. Returns
    /// the count planned. One commit that brings the rows past two planned counts loses one
    /// answer (as a batch's does).
    #[must_use]
    pub fn lose_next(&self, rows: u64) -> u64 {
        let Ok(mut judge) = self.judge.lock() else {
            return rows;
        };
        let mut at = rows;
        while judge.pending.contains(&at) {
            at += 1;
        }
        judge.pending.push(at);
        judge.pending.sort_unstable();
        at
    }

    /// The server as the lane's workers reach it: through the proxy.
    #[must_use]
    pub fn for_workers(&self) -> &Server {
        &self.for_workers
    }

    /// The answers lost since the last call.
    #[must_use]
    pub fn take_lost(&self) -> Vec<LostAnswer> {
        self.lost.try_iter().collect()
    }

    /// The folder of its socket.
    #[must_use]
    pub fn folder(&self) -> &Path {
        self.folder.path()
    }
}

impl Drop for AnswerProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the blocked accept, which then sees the stop.
        let _ = UnixStream::connect(&self.socket);
        if let Some(thread) = self.accepting.take() {
            let _ = thread.join();
        }
        let open = (self.sessions.lock()).map(|mut s| std::mem::take(&mut *s));
        for (client, server) in open.unwrap_or_default().into_values() {
            let _ = client.shutdown(std::net::Shutdown::Both);
            server.shutdown();
        }
    }
}

/// The connection string of the server, reached through the proxy's socket in `folder`: the
/// same role, password and database, without TLS.
fn through(server: &Server, folder: &Path) -> Result<super::Conninfo, ProxyError> {
    let prepared = (server.conninfo.config()).map_err(|e| ProxyError(e.0))?;
    let config = prepared.config;
    let quote = |v: &str| format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"));
    let mut parts = vec![
        format!("host={}", quote(&folder.display().to_string())),
        format!("port={PORT}"),
        "sslmode=disable".to_string(),
    ];
    if let Some(user) = config.get_user() {
        parts.push(format!("user={}", quote(user)));
    }
    if let Some(db) = config.get_dbname() {
        parts.push(format!("dbname={}", quote(db)));
    }
    if let Some(password) = config.get_password() {
        parts.push(format!(
            "password={}",
            quote(&String::from_utf8_lossy(password))
        ));
    }
    Ok(super::Conninfo::new(parts.join(" ")))
}

fn accept(
    listener: &UnixListener,
    upstream: &Upstream,
    judge: &Arc<Mutex<Judge>>,
    stop: &Arc<AtomicBool>,
    sessions: &Sessions,
) {
    let open = Arc::new(AtomicUsize::new(0));
    for (number, client) in (0u64..).zip(listener.incoming()) {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else {
            // Out of descriptors, say: a moment before the next, never a spin.
            std::thread::sleep(std::time::Duration::from_millis(10));
            continue;
        };
        if open.load(Ordering::SeqCst) >= MAX_SESSIONS {
            continue;
        }
        let Ok(server) = upstream.connect() else {
            continue;
        };
        let (Ok(c), Ok(s)) = (client.try_clone(), server.try_clone()) else {
            continue;
        };
        if let Ok(mut list) = sessions.lock() {
            list.insert(number, (c, s));
        }
        open.fetch_add(1, Ordering::SeqCst);
        let (judge, open, sessions) = (judge.clone(), open.clone(), sessions.clone());
        let started = std::thread::Builder::new()
            .name("answers-session".into())
            .spawn(move || {
                serve(client, server, &judge);
                if let Ok(mut list) = sessions.lock() {
                    list.remove(&number);
                }
                open.fetch_sub(1, Ordering::SeqCst);
            });
        if started.is_err() {
            return;
        }
    }
}

/// One session: the client's startup passed on (a request for TLS answered "no"), then the
/// client's bytes to the server as they come, and the server's answers to the client, each
/// held back where it might be the one to lose.
fn serve(mut client: UnixStream, mut server: Conn, judge: &Arc<Mutex<Judge>>) {
    let Some(first) = startup(&mut client) else {
        server.shutdown();
        return;
    };
    if server.write_all(&first).is_err() {
        return;
    }
    let flushes = Arc::new(AtomicBool::new(false));
    let (Ok(mut from_client), Ok(mut to_server)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let seen = flushes.clone();
    let forward = std::thread::Builder::new()
        .name("answers-in".into())
        .spawn(move || {
            let mut frames = Frames::default();
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match from_client.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                frames.push(&buf[..n]);
                // A client that asks for what is ready (Flush) without ending its request
                // waits on an answer that is not whole: nothing is held from it.
                while let Some(message) = frames.next_message() {
                    if message.first() == Some(&b'H') {
                        seen.store(true, Ordering::SeqCst);
                    }
                }
                if to_server.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            to_server.shutdown();
        });
    if forward.is_err() {
        return;
    }
    answers(&mut server, &mut client, judge, &flushes);
    let _ = client.shutdown(std::net::Shutdown::Both);
    server.shutdown();
}

/// The server's messages to the client until either end closes, or until the answer to lose.
fn answers(
    server: &mut Conn,
    client: &mut UnixStream,
    judge: &Arc<Mutex<Judge>>,
    flushes: &AtomicBool,
) {
    let mut frames = Frames::default();
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::new();
    // Whether this answer completed a command (`CommandComplete`): only such an answer can
    // carry a commit.
    let mut holding = false;
    loop {
        let n = match server.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        frames.push(&buf[..n]);
        while let Some(message) = frames.next_message() {
            out.extend_from_slice(&message);
            match message.first() {
                Some(b'C') => {
                    holding =
                        !flushes.load(Ordering::SeqCst) && judge.lock().is_ok_and(|j| j.armed());
                }
                Some(b'Z') => {
                    let idle = message.get(5) == Some(&b'I');
                    if holding && idle && judge.lock().is_ok_and(|mut j| j.lose_now()) {
                        return;
                    }
                    holding = false;
                    if client.write_all(&out).is_err() {
                        return;
                    }
                    out.clear();
                }
                _ => {}
            }
        }
        if !holding || out.len() > MAX_HELD {
            holding = false;
            if client.write_all(&out).is_err() {
                return;
            }
            out.clear();
        }
    }
}

/// The client's first message, after answering any request for TLS or GSS encryption "no".
fn startup(client: &mut UnixStream) -> Option<Vec<u8>> {
    for _ in 0..3 {
        let mut head = [0u8; 8];
        client.read_exact(&mut head).ok()?;
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let code = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        if !(8..=MAX_STARTUP).contains(&len) {
            return None;
        }
        if len == 8 && (code == SSL_REQUEST || code == GSS_REQUEST) {
            client.write_all(b"N").ok()?;
            continue;
        }
        let mut message = head.to_vec();
        message.resize(len, 0);
        client.read_exact(&mut message[8..]).ok()?;
        return Some(message);
    }
    None
}

/// Whole protocol messages (a type byte, a length counting itself, the body) out of a stream.
#[derive(Debug, Default)]
struct Frames {
    bytes: Vec<u8>,
}

impl Frames {
    fn push(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
    }

    /// The next whole message, type byte first, if it has all arrived.
    fn next_message(&mut self) -> Option<Vec<u8>> {
        let head = self.bytes.get(..5)?;
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        if self.bytes.len() < len + 1 {
            return None;
        }
        let rest = self.bytes.split_off(len + 1);
        Some(std::mem::replace(&mut self.bytes, rest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&u32::try_from(body.len() + 4).unwrap().to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn messages_are_cut_whole_however_the_bytes_arrive() {
        let stream: Vec<u8> = [
            message(b'C', b"INSERT 0 1\0"),
            message(b'Z', b"I"),
            message(b'D', &[0; 300]),
        ]
        .concat();
        for chunk in [1, 2, 7, 64, 1000] {
            let mut frames = Frames::default();
            let mut got = Vec::new();
            for piece in stream.chunks(chunk) {
                frames.push(piece);
                while let Some(m) = frames.next_message() {
                    got.push(m);
                }
            }
            assert_eq!(got.len(), 3, "chunks of {chunk}");
            assert_eq!(got[1], message(b'Z', b"I"));
            assert_eq!(got.concat(), stream);
        }
    }

    /// A server that answers every query with one row inserted and counts them.
    fn fake_server(dir: &Path, rows: Arc<std::sync::atomic::AtomicU64>) -> PathBuf {
        let path = dir.join("server.sock");
        let listener = UnixListener::bind(&path).unwrap();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let rows = rows.clone();
                std::thread::spawn(move || {
                    let mut len = [0u8; 4];
                    stream.read_exact(&mut len).unwrap();
                    let mut rest = vec![0u8; u32::from_be_bytes(len) as usize - 4];
                    stream.read_exact(&mut rest).unwrap();
                    let hello = [message(b'R', &0u32.to_be_bytes()), message(b'Z', b"I")];
                    stream.write_all(&hello.concat()).unwrap();
                    let mut head = [0u8; 5];
                    while stream.read_exact(&mut head).is_ok() {
                        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]);
                        let mut body = vec![0u8; len as usize - 4];
                        stream.read_exact(&mut body).unwrap();
                        if head[0] == b'Q' {
                            rows.fetch_add(1, Ordering::SeqCst);
                            let answer = [message(b'C', b"INSERT 0 1\0"), message(b'Z', b"I")];
                            if stream.write_all(&answer.concat()).is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        });
        path
    }

    struct Counted(Arc<std::sync::atomic::AtomicU64>);

    impl Counter for Counted {
        fn rows_up_to(&mut self, limit: u64) -> Option<u64> {
            Some(self.0.load(Ordering::SeqCst).min(limit))
        }

        fn rows(&mut self) -> Option<u64> {
            Some(self.0.load(Ordering::SeqCst))
        }

        fn keys(&mut self) -> Vec<String> {
            vec![format!("key-{}", self.0.load(Ordering::SeqCst))]
        }

        /// The fake's rows are `key-1` up to `key-N`.
        fn holds(&mut self, key: &str) -> Option<bool> {
            let n: u64 = key.strip_prefix("key-")?.parse().ok()?;
            Some(n <= self.0.load(Ordering::SeqCst))
        }
    }

    /// Sends a query and reads its answer whole; `None` when the connection closed first.
    fn ask(client: &mut UnixStream) -> Option<Vec<u8>> {
        client.write_all(&message(b'Q', b"INSERT\0")).ok()?;
        let mut frames = Frames::default();
        let mut got = Vec::new();
        let mut buf = [0u8; 256];
        loop {
            let n = client.read(&mut buf).ok().filter(|&n| n > 0)?;
            frames.push(&buf[..n]);
            while let Some(m) = frames.next_message() {
                let end = m[0] == b'Z';
                got.push(m);
                if end {
                    return Some(got.concat());
                }
            }
        }
    }

    fn connect(proxy: &AnswerProxy) -> UnixStream {
        let mut client = UnixStream::connect(&proxy.socket).unwrap();
        // A request for TLS first, as a driver may send: answered no, by the proxy.
        let mut ssl = 8u32.to_be_bytes().to_vec();
        ssl.extend_from_slice(&SSL_REQUEST.to_be_bytes());
        client.write_all(&ssl).unwrap();
        let mut no = [0u8; 1];
        client.read_exact(&mut no).unwrap();
        assert_eq!(&no, b"N");
        let mut startup = 9u32.to_be_bytes().to_vec();
        startup.extend_from_slice(&196_608u32.to_be_bytes());
        startup.push(0);
        client.write_all(&startup).unwrap();
        let mut hello = [0u8; 15];
        client.read_exact(&mut hello).unwrap();
        assert_eq!(hello[0], b'R');
        client
    }

    /// A proxy to a fake server in `dir` whose inserts count in `rows`, losing at `plan`.
    fn proxy_to_fake(
        dir: &Path,
        rows: &Arc<std::sync::atomic::AtomicU64>,
        plan: &[u64],
    ) -> AnswerProxy {
        let plan = AnswerPlan {
            rows: plan.to_vec(),
            keys: Vec::new(),
        };
        proxy_planned(dir, rows, &plan)
    }

    fn proxy_planned(
        dir: &Path,
        rows: &Arc<std::sync::atomic::AtomicU64>,
        plan: &AnswerPlan,
    ) -> AnswerProxy {
        let upstream = Upstream::Unix(fake_server(dir, rows.clone()));
        AnswerProxy::between(upstream, Box::new(Counted(rows.clone())), plan, |_| {
            Ok(Server {
                conninfo: super::super::Conninfo::default(),
                prefix: "night".into(),
                wait: super::super::RESTART_WAIT,
                restarter: None,
            })
        })
        .unwrap()
    }

    #[test]
    fn the_answer_after_which_the_rows_reach_the_plan_is_never_delivered_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let rows = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let proxy = proxy_to_fake(dir.path(), &rows, &[3, 5]);
        let mut client = connect(&proxy);
        assert!(ask(&mut client).is_some());
        assert!(ask(&mut client).is_some());
        // The third insert lands on the server, and its answer never comes.
        assert_eq!(ask(&mut client), None);
        assert_eq!(rows.load(Ordering::SeqCst), 3);
        let lost = proxy.take_lost();
        assert_eq!(
            lost,
            [LostAnswer {
                planned: 3,
                rows: 3,
                keys: vec!["key-3".into()],
                at_keys: Vec::new(),
            }]
        );
        // The worker connects again: the fourth answer comes, the fifth is lost, and once the
        // plan is spent every answer comes.
        let mut client = connect(&proxy);
        assert!(ask(&mut client).is_some());
        assert_eq!(ask(&mut client), None);
        let mut client = connect(&proxy);
        for _ in 0..3 {
            assert!(ask(&mut client).is_some());
        }
        assert_eq!(rows.load(Ordering::SeqCst), 8);
        assert_eq!(proxy.take_lost().len(), 1);
        // Stopped, its folder goes with it.
        let folder = proxy.folder().to_path_buf();
        drop(proxy);
        assert!(!folder.exists());
    }

    /// The operator's `L`: a proxy whose plan is spent loses one more answer when told, the
    /// next one after which the rows reach the count given, and none before it.
    #[test]
    fn a_loss_planned_while_the_night_runs_loses_the_next_answer_that_reaches_it() {
        let dir = tempfile::tempdir().unwrap();
        let rows = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let proxy = proxy_to_fake(dir.path(), &rows, &[1]);
        let mut client = connect(&proxy);
        assert_eq!(ask(&mut client), None, "the plan's loss at 1 row");
        let mut client = connect(&proxy);
        assert!(ask(&mut client).is_some());
        assert!(ask(&mut client).is_some());
        // Told at 3 rows: the answer after which the rows reach 4 is lost, and no other.
        assert_eq!(proxy.lose_next(4), 4);
        assert_eq!(ask(&mut client), None);
        assert_eq!(rows.load(Ordering::SeqCst), 4);
        let mut client = connect(&proxy);
        assert!(ask(&mut client).is_some());
        // Told twice at the same count: two losses, the second one row later.
        assert_eq!(proxy.lose_next(6), 6);
        assert_eq!(proxy.lose_next(6), 7);
        assert_eq!(ask(&mut client), None);
        let mut client = connect(&proxy);
        assert_eq!(ask(&mut client), None);
        let mut client = connect(&proxy);
        assert!(ask(&mut client).is_some());
        let lost = proxy.take_lost();
        assert_eq!(
            lost.iter().map(|l| (l.planned, l.rows)).collect::<Vec<_>>(),
            [(1, 1), (4, 4), (6, 6), (7, 7)]
        );
    }

    /// `--lose-answer-at-task`: the answer lost is the first after which the key's row is in,
    /// beside a plan by rows; a key already lost is not lost again.
    #[test]
    fn the_answer_to_the_commit_that_brings_a_planned_key_in_is_lost_once() {
        let dir = tempfile::tempdir().unwrap();
        let rows = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let plan = AnswerPlan {
            rows: vec![5],
            keys: vec!["key-2".into()],
        };
        let proxy = proxy_planned(dir.path(), &rows, &plan);
        let mut client = connect(&proxy);
        assert!(ask(&mut client).is_some());
        assert_eq!(ask(&mut client), None, "key-2's commit");
        let mut client = connect(&proxy);
        assert!(ask(&mut client).is_some());
        assert!(ask(&mut client).is_some());
        assert_eq!(ask(&mut client), None, "5 rows");
        let mut client = connect(&proxy);
        assert!(ask(&mut client).is_some());
        let lost = proxy.take_lost();
        assert_eq!(
            (lost.iter())
                .map(|l| (l.planned, l.rows, l.at_keys.clone()))
                .collect::<Vec<_>>(),
            [(2, 2, vec!["key-2".to_string()]), (5, 5, Vec::new())]
        );
        // One commit that reaches a planned count and brings a planned key in is one loss,
        // said for both (a server of its own: the first one's socket is still bound).
        let dir = tempfile::tempdir().unwrap();
        let rows = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let plan = AnswerPlan {
            rows: vec![3],
            keys: vec!["key-3".into()],
        };
        let proxy = proxy_planned(dir.path(), &rows, &plan);
        let mut client = connect(&proxy);
        assert!(ask(&mut client).is_some());
        assert!(ask(&mut client).is_some());
        assert_eq!(ask(&mut client), None);
        let mut client = connect(&proxy);
        assert!(ask(&mut client).is_some(), "nothing left to lose");
        let lost = proxy.take_lost();
        assert_eq!(
            (lost.iter())
                .map(|l| (l.planned, l.rows, l.at_keys.clone()))
                .collect::<Vec<_>>(),
            [(3, 3, vec!["key-3".to_string()])]
        );
    }

    #[test]
    fn the_workers_reach_the_proxy_with_the_servers_role_and_password_and_no_tls() {
        let server = Server {
            conninfo: super::super::Conninfo::new(
                "postgres://bob:s3'cr\\et@db.example:6543/orders?sslmode=require",
            ),
            prefix: "night".into(),
            wait: super::super::RESTART_WAIT,
            restarter: None,
        };
        let through = through(&server, Path::new("/tmp/x y")).unwrap();
        let config = through.config().unwrap();
        assert_eq!(config.config.get_user(), Some("bob"));
        assert_eq!(config.config.get_dbname(), Some("orders"));
        assert_eq!(config.config.get_password(), Some(&b"s3'cr\\et"[..]));
        assert_eq!(config.tls.mode, super::super::tls::SslMode::Disable);
        assert_eq!(
            config.config.get_hosts(),
            &[postgres::config::Host::Unix("/tmp/x y".into())]
        );
        assert!(!through.to_string().contains("s3"), "{through}");
    }

    #[test]
    fn a_count_sql_is_counted_by_its_first_column_and_names_no_keys() {
        let server = Server {
            conninfo: super::super::Conninfo::default(),
            prefix: "night".into(),
            wait: super::super::RESTART_WAIT,
            restarter: None,
        };
        let counted = Rows::of(
            &server,
            "night",
            &RowSource {
                count_sql: Some("SELECT count(*), count(DISTINCT k) FROM t".into()),
                ..RowSource::default()
            },
        );
        assert!(
            counted.count_sql.contains("count(DISTINCT k)"),
            "{}",
            counted.count_sql
        );
        assert_eq!(counted.keys_sql, None);
        assert_eq!(counted.table, None);
        let table = Rows::of(&server, "night", &RowSource::default());
        assert_eq!(table.count_sql, "SELECT count(*) FROM \"records\"");
        assert!(table.keys_sql.is_some_and(|k| k.contains("age(xmin)")));
        assert_eq!(table.table.as_deref(), Some("\"records\""));
    }
}
