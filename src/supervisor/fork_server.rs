//! The fork server: one process of reclaim's own binary, started once (`reclaim fork-server`)
//! and already initialised, that forks a child per attempt of reclaim's own worker, so an
//! attempt costs a fork instead of an exec of the whole binary, its dynamic loader and its
//! start-up. The child is the real worker: it leads its own process group, reads its grants on
//! its own stdin and prints on its own stdout and stderr (pipes made here, per child, passed
//! over the server's socket), opens its own SQLite connection after the fork, and is SIGKILLed
//! by the host exactly as a spawned worker is.
//!
//! Nothing outlives reclaim: the server dies with reclaim (it is spawned by `process::spawn`,
//! PR_SET_PDEATHSIG, its group in the registry), every child dies with the server
//! (PR_SET_PDEATHSIG set in the child, with a `getppid` check), and every child's group is in the
//! registry too, so `kill_all` reaches it on every exit path.
//!
//! A child is the server's, not reclaim's: reclaim learns that it exited from a pidfd (which
//! never names another process) and its exit status from the server, which reaps a child only
//! when reclaim asks, so its pid (and group id) cannot be reused while reclaim may signal it.
//!
//! `RECLAIM_FORK_SERVER=0` turns it off: every attempt is then spawned as before.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsFd as _, AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{
    AddressFamily, ControlMessage, MsgFlags, SockFlag, SockType, recvmsg, sendmsg, socketpair,
};

use super::process;

/// The variable that turns the fork server off (`0`).
pub const ENV: &str = "RECLAIM_FORK_SERVER";

/// The largest request or reply (a worker's command line is well under 1 KiB).
pub const MAX_MESSAGE: usize = 64 * 1024;

/// A request: spawn (with three descriptors: stdin, stdout, stderr) or reap a child.
pub const SPAWN: u8 = b'S';
pub const REAP: u8 = b'R';
/// Replies: a child's pid, a reaped child's raw wait status, or why not.
pub const PID: u8 = b'P';
pub const STATUS: u8 = b'W';
pub const REFUSED: u8 = b'X';

/// One field of a spawn request (each ends with a NUL): an argument, a variable set, one removed.
pub const ARG: u8 = b'A';
pub const SET: u8 = b'E';
pub const UNSET: u8 = b'U';

/// Spare room in the server's command line, which each child overwrites with its own (so
/// `ps` and `/proc/PID/cmdline` show a worker as `reclaim worker ...`): a command longer than
/// the server's is spawned as before.
pub const ROOM: usize = 8192;

/// The server's subcommand.
const SUBCOMMAND: &str = "fork-server";

/// The server of this process, started at the first attempt that can use it.
static SERVER: Mutex<Option<Arc<Server>>> = Mutex::new(None);

/// reclaim's end of a running server.
#[derive(Debug)]
struct Server {
    /// The executable it runs: only a command of the same program is forked from it.
    exe: PathBuf,
    /// Requests and replies, one at a time.
    sock: Mutex<OwnedFd>,
    /// The server process itself (in the registry; killed and reaped when it is replaced);
    /// `None` once reaped.
    child: Mutex<Option<Child>>,
    pid: i32,
}

/// A worker forked by the server: its pid (also its group id), a pidfd that tells when it has
/// exited, and its exit once reaped.
#[derive(Debug)]
pub struct Forked {
    pid: i32,
    pidfd: OwnedFd,
    server: Arc<Server>,
    status: Option<ExitStatus>,
}

/// A forked worker with reclaim's ends of its pipes.
#[derive(Debug)]
pub struct Spawned {
    pub child: Forked,
    pub stdin: File,
    pub stdout: File,
    pub stderr: File,
}

/// Set when a server could not be started or could not fork: every later attempt is spawned
/// as before (the same worker, a slower start), rather than failing the night.
static BROKEN: AtomicBool = AtomicBool::new(false);

fn enabled() -> bool {
    !BROKEN.load(Ordering::Relaxed) && std::env::var_os(ENV).is_none_or(|v| v != "0")
}

/// Forks `command` (reclaim's own worker: its program, arguments and variables; no folder of its
/// own) from the server, starting the server first if none runs. `None` when the fork server
/// is off or cannot serve this command (another program, a folder, a command line longer than
/// its room), or has failed: spawn it as before.
pub fn spawn(command: &Command) -> Option<Spawned> {
    if !enabled() || command.get_current_dir().is_some() {
        return None;
    }
    let line: usize = command.get_args().map(|a| a.len() + 1).sum();
    if line > SUBCOMMAND.len() + 1 + ROOM + 1 {
        return None;
    }
    let exe = PathBuf::from(command.get_program());
    let server = match server_for(&exe) {
        Ok(Some(server)) => server,
        Ok(None) => return None,
        Err(_) => {
            BROKEN.store(true, Ordering::Relaxed);
            return None;
        }
    };
    let spawned = server.fork(command);
    if spawned.is_err() {
        BROKEN.store(true, Ordering::Relaxed);
        retire(&server);
    }
    spawned.ok()
}

/// The running server for `exe`, started if there is none (or the last one died). `None` when
/// a server runs another program.
fn server_for(exe: &std::path::Path) -> io::Result<Option<Arc<Server>>> {
    let mut slot = SERVER
        .lock()
        .map_err(|_| io::Error::other("fork server lock poisoned"))?;
    if let Some(server) = slot.as_ref() {
        if server.exe != exe {
            return Ok(None);
        }
        if server.alive() {
            return Ok(Some(Arc::clone(server)));
        }
        if let Some(old) = slot.take() {
            old.stop();
        }
    }
    let server = Arc::new(Server::start(exe)?);
    *slot = Some(Arc::clone(&server));
    Ok(Some(server))
}

/// Stops `server` if it is still the current one.
fn retire(server: &Arc<Server>) {
    if let Ok(mut slot) = SERVER.lock()
        && slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, server))
        && let Some(old) = slot.take()
    {
        old.stop();
    }
}

impl Server {
    fn start(exe: &std::path::Path) -> io::Result<Self> {
        // The server reads requests on its stdin, one message at a time.
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )?;
        let mut command = Command::new(exe);
        command
            .arg(SUBCOMMAND)
            .arg(" ".repeat(ROOM))
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = process::spawn(command)?;
        let pid = process::child_pid(&child);
        Ok(Self {
            exe: exe.to_path_buf(),
            sock: Mutex::new(ours),
            child: Mutex::new(Some(child)),
            pid,
        })
    }

    /// Whether the server still runs; one found dead is reaped (and forgotten) here.
    fn alive(&self) -> bool {
        let Ok(mut child) = self.child.lock() else {
            return false;
        };
        match child.as_mut().map(Child::try_wait) {
            Some(Ok(None)) => true,
            Some(Ok(Some(_))) => {
                child.take();
                process::forget(self.pid);
                false
            }
            Some(Err(_)) | None => false,
        }
    }

    /// Kills and reaps the server (its children die with it, by their death signal).
    fn stop(&self) {
        if let Ok(mut child) = self.child.lock()
            && let Some(mut server) = child.take()
        {
            // INVARIANT: not reaped yet (`alive` takes the child when it reaps it).
            let _ = process::signal_group(self.pid, nix::sys::signal::Signal::SIGKILL);
            let _ = server.wait();
            process::forget(self.pid);
        }
    }

    /// One request and its reply; `fds` go with the request.
    fn ask(&self, request: &[u8], fds: &[RawFd]) -> io::Result<Vec<u8>> {
        let sock = self
            .sock
            .lock()
            .map_err(|_| io::Error::other("fork server socket lock poisoned"))?;
        let fd = sock.as_raw_fd();
        let cmsgs = [ControlMessage::ScmRights(fds)];
        let cmsgs = if fds.is_empty() { &[][..] } else { &cmsgs[..] };
        sendmsg::<()>(fd, &[IoSlice::new(request)], cmsgs, MsgFlags::empty(), None)?;
        let mut buf = vec![0u8; MAX_MESSAGE];
        let n = {
            let mut iov = [IoSliceMut::new(&mut buf)];
            recvmsg::<()>(fd, &mut iov, None, MsgFlags::empty())?.bytes
        };
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the fork server is gone",
            ));
        }
        buf.truncate(n);
        if buf.first() == Some(&REFUSED) {
            return Err(io::Error::other(format!(
                "the fork server refused: {}",
                String::from_utf8_lossy(&buf[1..])
            )));
        }
        Ok(buf)
    }

    fn fork(self: &Arc<Self>, command: &Command) -> io::Result<Spawned> {
        let (in_r, in_w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let (out_r, out_w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let (err_r, err_w) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let request = spawn_request(command);
        let fds = [in_r.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd()];
        let reply = self.ask(&request, &fds)?;
        // The child's ends are the child's alone now: closed here, so its death closes them.
        drop((in_r, out_w, err_w));
        let pid = parse_number(&reply, PID)
            .and_then(|p| i32::try_from(p).ok())
            .filter(|&p| p > 0)
            .ok_or_else(|| io::Error::other("the fork server's reply was not a pid"))?;
        process::register(pid);
        let pidfd = match pidfd_open(pid) {
            Ok(fd) => fd,
            Err(e) => {
                // INVARIANT: the child is not reaped yet (the server waits to be asked).
                let _ = process::signal_group(pid, nix::sys::signal::Signal::SIGKILL);
                let _ = self.ask(&reap_request(pid), &[]);
                process::forget(pid);
                return Err(e);
            }
        };
        Ok(Spawned {
            child: Forked {
                pid,
                pidfd,
                server: Arc::clone(self),
                status: None,
            },
            stdin: File::from(in_w),
            stdout: File::from(out_r),
            stderr: File::from(err_r),
        })
    }
}

impl Forked {
    #[must_use]
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Whether it has exited (it stays unreaped, a zombie of the server, until `try_wait`).
    #[must_use]
    pub fn exited(&self) -> bool {
        self.status.is_some() || self.poll(PollTimeout::ZERO)
    }

    fn poll(&self, timeout: PollTimeout) -> bool {
        let mut fds = [PollFd::new(self.pidfd.as_fd(), PollFlags::POLLIN)];
        loop {
            match poll(&mut fds, timeout) {
                Ok(n) => return n > 0,
                Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return false,
            }
        }
    }

    /// Its exit, reaped by the server, once it has exited.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.status.is_none() && self.poll(PollTimeout::ZERO) {
            self.reap()?;
        }
        Ok(self.status)
    }

    /// Waits for it to exit (after a SIGKILL), and reaps it.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        if self.status.is_none() {
            self.poll(PollTimeout::NONE);
            self.reap()?;
        }
        self.status
            .ok_or_else(|| io::Error::other("the worker's exit is unknown"))
    }

    fn reap(&mut self) -> io::Result<()> {
        let reply = self.server.ask(&reap_request(self.pid), &[]);
        let raw = reply.and_then(|r| {
            parse_number(&r, STATUS)
                .and_then(|s| i32::try_from(s).ok())
                .ok_or_else(|| io::Error::other("the fork server's reply was not a status"))
        });
        match raw {
            Ok(raw) => {
                self.status = Some(ExitStatus::from_raw(raw));
                Ok(())
            }
            Err(e) => {
                // The server is gone or confused: its children died with it (their death
                // signal), but how this one ended cannot be read any more.
                retire(&self.server);
                Err(e)
            }
        }
    }
}

/// `S` then each argument, each variable set and each removed, NUL-terminated.
fn spawn_request(command: &Command) -> Vec<u8> {
    let mut request = vec![SPAWN];
    let mut field = |kind: u8, bytes: &[u8]| {
        request.push(kind);
        request.extend_from_slice(bytes);
        request.push(0);
    };
    for arg in command.get_args() {
        field(ARG, arg.as_bytes());
    }
    for (key, value) in command.get_envs() {
        if key == process::PARENT_ENV {
            continue;
        }
        match value {
            Some(value) => {
                let mut kv = key.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(value.as_bytes());
                field(SET, &kv);
            }
            None => field(UNSET, key.as_bytes()),
        }
    }
    request
}

fn reap_request(pid: i32) -> Vec<u8> {
    format!("{}{pid}", REAP as char).into_bytes()
}

/// The number after `kind` in a message.
#[must_use]
pub fn parse_number(message: &[u8], kind: u8) -> Option<i64> {
    let rest = message.strip_prefix(&[kind])?;
    std::str::from_utf8(rest).ok()?.parse().ok()
}

/// What a spawn request asks for: the arguments, and the variables to set (`Some`) or remove.
pub type Request = (Vec<OsString>, Vec<(OsString, Option<OsString>)>);

/// Reads a spawn request (after its `S`); `None` for a malformed one.
#[must_use]
pub fn parse_spawn(body: &[u8]) -> Option<Request> {
    let mut args = Vec::new();
    let mut env = Vec::new();
    let fields = body.strip_suffix(&[0])?;
    if fields.is_empty() {
        return Some((args, env));
    }
    for field in fields.split(|&b| b == 0) {
        let (&kind, rest) = field.split_first()?;
        match kind {
            ARG => args.push(OsString::from_vec(rest.to_vec())),
            SET => {
                let eq = rest.iter().position(|&b| b == b'=')?;
                env.push((
                    OsStr::from_bytes(&rest[..eq]).to_os_string(),
                    Some(OsStr::from_bytes(&rest[eq + 1..]).to_os_string()),
                ));
            }
            UNSET => env.push((OsStr::from_bytes(rest).to_os_string(), None)),
            _ => return None,
        }
    }
    Some((args, env))
}

/// A pidfd for `pid` (Linux 5.3): readable once the process has exited.
fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    #[allow(unsafe_code)]
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = RawFd::try_from(fd).map_err(|_| io::Error::other("pidfd out of range"))?;
    // SAFETY: the descriptor was just returned by the kernel and belongs to nobody else.
    #[allow(unsafe_code)]
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spawn_request_reads_back_as_its_arguments_and_variables() {
        let mut command = Command::new("/bin/reclaim");
        command
            .args(["worker", "--db", "a b\u{e9}.db"])
            .env("RECLAIM_X", "1=2")
            .env_remove("RECLAIM_Y")
            .env(process::PARENT_ENV, "7");
        let request = spawn_request(&command);
        assert_eq!(request[0], SPAWN);
        let (args, env) = parse_spawn(&request[1..]).unwrap_or_default();
        assert_eq!(args, ["worker", "--db", "a b\u{e9}.db"]);
        assert_eq!(
            env,
            [
                ("RECLAIM_X".into(), Some("1=2".into())),
                ("RECLAIM_Y".into(), None)
            ]
        );
        assert!(parse_spawn(b"Zbad\0").is_none());
        assert!(parse_spawn(b"Eno-equals\0").is_none());
        assert_eq!(parse_number(b"P123", PID), Some(123));
        assert_eq!(parse_number(b"W123", PID), None);
    }
}
