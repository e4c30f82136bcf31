//! The vendor's connections: each on a thread of its own, at most `MAX_CONNECTIONS` at once.
//! Full, it makes room by closing the connection that has waited longest for its request: a
//! night's caller sends its whole request in one write, read within milliseconds of its accept,
//! so the connections still reading when 128 are open are clients that send nothing (or trickle
//! bytes), and none of them may stall a night's request for `REQUEST_DEADLINE`.

use std::collections::BTreeMap;
use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use super::http::{Answer, connection};

/// The most connections served at once.
pub const MAX_CONNECTIONS: usize = 128;

/// The connections open: each one's id (in order of accept) and, while its request is still
/// being read, a handle that can close it.
#[derive(Default)]
struct Open {
    reading: BTreeMap<u64, TcpStream>,
    count: usize,
}

/// Holds a connection's place until its thread ends, panic or not.
struct Place {
    open: Arc<Mutex<Open>>,
    id: u64,
}

impl Place {
    fn read(&self) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.reading.remove(&self.id);
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.reading.remove(&self.id);
        open.count = open.count.saturating_sub(1);
    }
}

/// Whether a connection may be accepted now: below the bound, or once the connection that has
/// waited longest for its request is closed (its thread then ends at its next read).
fn room(open: &mut Open) -> bool {
    if open.count < MAX_CONNECTIONS {
        return true;
    }
    if let Some((_, oldest)) = open.reading.pop_first() {
        let _ = oldest.shutdown(Shutdown::Both);
    }
    false
}

/// Accepts on `listener` (non-blocking) until `stop` says so, each connection on a thread of its
/// own.
pub fn serve_connections(listener: &TcpListener, answer: &Arc<Answer>, stop: &dyn Fn() -> bool) {
    let open = Arc::new(Mutex::new(Open::default()));
    let ids = AtomicU64::new(0);
    loop {
        if stop() {
            return;
        }
        if !room(&mut open.lock().unwrap_or_else(PoisonError::into_inner)) {
            thread::sleep(Duration::from_millis(1));
            continue;
        }
        match listener.accept() {
            Ok((stream, _)) => {
                let id = ids.fetch_add(1, Ordering::Relaxed);
                {
                    let mut open = open.lock().unwrap_or_else(PoisonError::into_inner);
                    open.count += 1;
                    if let Ok(handle) = stream.try_clone() {
                        open.reading.insert(id, handle);
                    }
                }
                let place = Place {
                    open: Arc::clone(&open),
                    id,
                };
                let answer = Arc::clone(answer);
                let spawned = thread::Builder::new()
                    .name("vendor-connection".into())
                    .spawn(move || connection(&stream, answer.as_ref(), &|| place.read()));
                if let Err(error) = spawned {
                    eprintln!("vendor: cannot serve a connection: {error}");
                }
            }
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(1));
            }
            Err(error) => eprintln!("vendor: accept: {error}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_pool_closes_the_connection_waiting_longest_for_its_request() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let clients: Vec<TcpStream> = (0..2)
            .map(|_| TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let mut open = Open {
            count: MAX_CONNECTIONS,
            ..Open::default()
        };
        for id in [7, 3] {
            let (stream, _) = listener.accept().unwrap_or_else(|e| panic!("{e}"));
            open.reading.insert(id, stream);
        }
        assert!(!room(&mut open));
        // The oldest (id 3, the second accepted) was closed: its client reads the end.
        assert_eq!(open.reading.keys().copied().collect::<Vec<_>>(), [7]);
        let mut buf = [0u8; 1];
        let _ = clients[1].set_read_timeout(Some(Duration::from_secs(5)));
        assert_eq!(io::Read::read(&mut &clients[1], &mut buf).ok(), Some(0));
        open.count -= 1;
        assert!(room(&mut open));
    }
}
