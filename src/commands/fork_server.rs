//! `reclaim fork-server` (hidden): the server side of `supervisor::fork_server`. One
//! single-threaded process, started by reclaim with a socket as its stdin, that forks one child
//! per request; the child becomes reclaim's own worker with the request's arguments, variables
//! and pipes, and opens its database only then (nothing of SQLite's but its initialised library
//! is inherited: the server opens no connection). A child is reaped only when reclaim asks, so
//! its pid stays reclaim's to signal until then.

use std::ffi::OsString;
use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};

use clap::Parser as _;
use nix::sys::signal::Signal;
use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg, sendmsg};

use crate::error::Error;
use crate::supervisor::fork_server::{
    self as wire, MAX_MESSAGE, PID, REAP, REFUSED, Request, SPAWN, STATUS,
};

/// Serves requests on stdin until reclaim closes it (or dies: then the death signal ends this
/// process, and each child's death signal ends the children).
pub fn run() -> Result<u8, Error> {
    // The socket moves off stdin, so a child's stdin is only ever its own grant pipe.
    let sock = dup_cloexec(0).map_err(|e| refused(&e))?;
    let null = std::fs::File::open("/dev/null").map_err(|e| refused(&e))?;
    // SAFETY: dup2 onto stdin, which the socket's copy above replaces.
    #[allow(unsafe_code)]
    if unsafe { libc::dup2(null.as_raw_fd(), 0) } < 0 {
        return Err(refused(&io::Error::last_os_error()));
    }
    if !is_seqpacket(&sock) {
        return Err(Error::Refused(
            "fork-server is what reclaim's supervisor runs for its workers; it is not for use by hand".into(),
        ));
    }
    // SQLite's library initialised once, here, for every child; the connection is not kept.
    drop(rusqlite::Connection::open_in_memory());
    let server = nix::unistd::getpid().as_raw();
    let title = arg_area();
    let mut buf = vec![0u8; MAX_MESSAGE];
    loop {
        let mut space = nix::cmsg_space!([RawFd; 3]);
        let (n, fds) = {
            let mut iov = [IoSliceMut::new(&mut buf)];
            let msg = match recvmsg::<()>(
                sock.as_raw_fd(),
                &mut iov,
                Some(&mut space),
                MsgFlags::MSG_CMSG_CLOEXEC,
            ) {
                Ok(msg) => msg,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return Ok(crate::exit::OK),
            };
            let mut fds: Vec<OwnedFd> = Vec::new();
            if let Ok(cmsgs) = msg.cmsgs() {
                for cmsg in cmsgs {
                    if let ControlMessageOwned::ScmRights(raw) = cmsg {
                        // SAFETY: received with the message: these descriptors are new in this
                        // process and owned by nobody else.
                        #[allow(unsafe_code)]
                        fds.extend(
                            raw.into_iter()
                                .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                        );
                    }
                }
            }
            (msg.bytes, fds)
        };
        if n == 0 {
            // reclaim closed its end: nothing more will be asked.
            return Ok(crate::exit::OK);
        }
        let reply = match buf[..n].split_first() {
            Some((&SPAWN, body)) => spawn(&sock, (server, title), body, fds),
            Some((&REAP, _)) => reap(&buf[..n]),
            _ => refusal("unknown request"),
        };
        if send(&sock, &reply).is_err() {
            return Ok(crate::exit::OK);
        }
    }
}

fn refused(e: &io::Error) -> Error {
    Error::Refused(format!("fork-server: {e}"))
}

fn refusal(why: &str) -> Vec<u8> {
    let mut reply = vec![REFUSED];
    reply.extend_from_slice(why.as_bytes());
    reply
}

fn send(sock: &OwnedFd, reply: &[u8]) -> nix::Result<usize> {
    sendmsg::<()>(
        sock.as_raw_fd(),
        &[IoSlice::new(reply)],
        &[],
        MsgFlags::empty(),
        None,
    )
}

fn is_seqpacket(sock: &OwnedFd) -> bool {
    nix::sys::socket::getsockopt(sock, nix::sys::socket::sockopt::SockType)
        .is_ok_and(|t| t == nix::sys::socket::SockType::SeqPacket)
}

/// Waits for the child `pid` (reclaim asks once it has exited) and replies its raw status.
fn reap(message: &[u8]) -> Vec<u8> {
    let Some(pid) = wire::parse_number(message, REAP).and_then(|p| i32::try_from(p).ok()) else {
        return refusal("bad pid");
    };
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes the status into the integer given.
        #[allow(unsafe_code)]
        let got = unsafe { libc::waitpid(pid, &raw mut status, 0) };
        if got == pid {
            return format!("{}{status}", STATUS as char).into_bytes();
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return refusal(&e.to_string());
        }
    }
}

/// Forks a worker for the request `body` with its pipes `fds` (stdin, stdout, stderr).
fn spawn(sock: &OwnedFd, server: (i32, Option<Title>), body: &[u8], fds: Vec<OwnedFd>) -> Vec<u8> {
    let Some(request) = wire::parse_spawn(body) else {
        return refusal("malformed request");
    };
    let Ok([stdin, stdout, stderr]) = <[OwnedFd; 3]>::try_from(fds) else {
        return refusal("a worker needs three descriptors");
    };
    // SAFETY: this process has one thread (nothing in it starts another), so the child may run
    // anything the parent could; the parent only closes descriptors and replies.
    #[allow(unsafe_code)]
    let pid = unsafe { libc::fork() };
    match pid {
        0 => child(sock, server, [&stdin, &stdout, &stderr], request),
        p if p > 0 => format!("{}{p}", PID as char).into_bytes(),
        _ => refusal(&io::Error::last_os_error().to_string()),
    }
    // The pipes' ends close here in the server: the child holds its own copies.
}

/// The forked child: its own group, dead with the server, its pipes on 0, 1 and 2, its
/// variables; then reclaim's worker as if exec'd with the request's arguments.
fn child(
    sock: &OwnedFd,
    (server, title): (i32, Option<Title>),
    fds: [&OwnedFd; 3],
    (args, env): Request,
) -> ! {
    let fail = |code: i32| -> ! {
        // SAFETY: _exit ends the process at once, running nothing inherited from the server.
        #[allow(unsafe_code)]
        unsafe {
            libc::_exit(code)
        }
    };
    // SAFETY: the server's socket and the pipes' received copies are not the worker's: closed
    // by number, and never used or dropped again (this process ends in `exit`).
    #[allow(unsafe_code)]
    let close = |fd: RawFd| unsafe {
        libc::close(fd);
    };
    close(sock.as_raw_fd());
    if nix::unistd::setpgid(nix::unistd::Pid::from_raw(0), nix::unistd::Pid::from_raw(0)).is_err()
        || nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).is_err()
        || nix::unistd::getppid().as_raw() != server
    {
        fail(2);
    }
    for (target, fd) in [0, 1, 2].into_iter().zip(fds) {
        // SAFETY: dup2 onto the standard descriptors; the source stays valid until the process
        // replaces itself with the worker below.
        #[allow(unsafe_code)]
        let ok = unsafe { libc::dup2(fd.as_raw_fd(), target) } >= 0;
        if !ok {
            fail(2);
        }
    }
    for fd in fds {
        close(fd.as_raw_fd());
    }
    // SAFETY: this process has one thread; nothing reads the environment while it changes.
    #[allow(unsafe_code)]
    unsafe {
        for (key, value) in env {
            match value {
                Some(value) => std::env::set_var(key, value),
                None => std::env::remove_var(key),
            }
        }
    }
    if let Some(title) = title {
        title.set(&args);
    }
    let line = std::iter::once(OsString::from("reclaim")).chain(args);
    let code = match crate::cli::Cli::try_parse_from(line) {
        Ok(cli) => super::run_cli(cli),
        Err(error) => {
            let _ = super::usage_error(&error);
            crate::exit::ERROR
        }
    };
    std::process::exit(i32::from(code))
}

/// A close-on-exec copy of `fd`.
fn dup_cloexec(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC returns a new descriptor or -1.
    #[allow(unsafe_code)]
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just made and belongs to nobody else.
    #[allow(unsafe_code)]
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// Where this process's arguments are in its memory (`/proc/self/stat`'s `arg_start` and
/// `arg_end`): the server is started with room to spare there (`supervisor::fork_server::ROOM`).
#[derive(Debug, Clone, Copy)]
struct Title {
    start: usize,
    end: usize,
}

fn arg_area() -> Option<Title> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after `pid (comm)`: the 3rd is the first; arg_start and arg_end are the 48th and 49th.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let start: usize = fields.get(45)?.parse().ok()?;
    let end: usize = fields.get(46)?.parse().ok()?;
    (start > 0 && end > start).then_some(Title { start, end })
}

impl Title {
    /// Writes the worker's command line over the server's (as `setproctitle` does), so
    /// `/proc/PID/cmdline` and `ps` show each child as the worker it is, not as the server:
    /// `reclaim worker --strategy ... --db ...`. Left as it is when it does not fit.
    fn set(self, args: &[OsString]) {
        use std::os::unix::ffi::OsStrExt as _;
        let mut line: Vec<u8> = Vec::new();
        let argv0 = std::env::args_os().next().unwrap_or_default();
        for arg in std::iter::once(&argv0).chain(args) {
            line.extend_from_slice(arg.as_bytes());
            line.push(0);
        }
        let len = self.end - self.start;
        if line.len() > len {
            return;
        }
        line.resize(len, 0);
        // SAFETY: [start, end) is this process's own argument area (the kernel says so in
        // /proc/self/stat), writable stack memory that nothing else in this single-threaded
        // child is reading; the bytes written end in a NUL, as the area did.
        #[allow(unsafe_code)]
        unsafe {
            std::ptr::copy_nonoverlapping(line.as_ptr(), self.start as *mut u8, len);
        }
    }
}
