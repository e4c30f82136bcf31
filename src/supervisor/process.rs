//! Worker processes: spawning them so that none can outlive reclaim, signalling them, and the
//! registry that lets every exit path (a panic, a signal) kill whatever is still running.
//!
//! Three layers against orphans:
//! 1. each worker leads its own process group, and every exit path SIGKILLs the groups still
//!    registered here (`kill_all`);
//! 2. PR_SET_PDEATHSIG(SIGKILL) in the child, set from a spawner thread that never exits (the
//!    signal fires when the *thread* that forked dies, not the process), with a `getppid` check
//!    for a parent that died before the child got that far; this covers SIGKILL of reclaim;
//! 3. the engine reaps with `try_wait` on every tick, and signals only children it has not reaped.

use std::collections::BTreeSet;
use std::io;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command};
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, OnceLock};
use std::thread;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// Process groups of workers spawned and not yet reaped.
static LIVE: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

type SpawnRequest = (Command, Sender<io::Result<Child>>);

/// The spawner thread's inbox. The thread is never joined and never exits.
static SPAWNER: OnceLock<Mutex<Sender<SpawnRequest>>> = OnceLock::new();

fn spawner() -> &'static Mutex<Sender<SpawnRequest>> {
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        // INVARIANT: this thread lives as long as the process. PR_SET_PDEATHSIG is delivered
        // when the thread that forked the child exits, so spawning from a short-lived thread
        // would kill its workers early.
        // If the thread cannot start, the dropped receiver makes every spawn report it.
        let _ = thread::Builder::new()
            .name("reclaim-spawner".into())
            .spawn(move || {
                while let Ok((mut command, reply)) = rx.recv() {
                    let _ = reply.send(command.spawn());
                }
                // The sender lives in a static, so recv never fails; park forever regardless.
                loop {
                    thread::park();
                }
            });
        Mutex::new(tx)
    })
}

/// Spawns `command` as a worker: its own process group, killed if reclaim dies, registered for
/// `kill_all`.
pub fn spawn(mut command: Command) -> io::Result<Child> {
    let parent = nix::unistd::getpid();
    command.process_group(0);
    // SAFETY: the closure runs in the forked child before exec and calls only async-signal-safe
    // functions (prctl, getppid); it allocates nothing and takes no locks.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from)?;
            // The parent may have died between fork and prctl; then no signal will ever come.
            if nix::unistd::getppid() != parent {
                return Err(io::Error::other("reclaim exited while starting a worker"));
            }
            Ok(())
        });
    }
    // The registry stays locked from fork to insert, so a sweep for adopted orphans never
    // takes a worker being born for one.
    let mut live = LIVE
        .lock()
        .map_err(|_| io::Error::other("worker registry poisoned"))?;
    let (reply_tx, reply_rx) = mpsc::channel();
    spawner()
        .lock()
        .map_err(|_| io::Error::other("spawner lock poisoned"))?
        .send((command, reply_tx))
        .map_err(|_| io::Error::other("spawner thread is gone"))?;
    let child = reply_rx
        .recv()
        .map_err(|_| io::Error::other("spawner thread is gone"))??;
    live.insert(child_pid(&child));
    Ok(child)
}

/// The child's pid, which is also its process group id.
#[must_use]
pub fn child_pid(child: &Child) -> i32 {
    i32::try_from(child.id()).unwrap_or(i32::MAX)
}

/// Sends `signal` to the worker's whole process group. Call only for a child not yet reaped.
pub fn signal_group(pid: i32, signal: Signal) -> nix::Result<()> {
    killpg(Pid::from_raw(pid), signal).or_else(|_| kill(Pid::from_raw(pid), signal))
}

/// Forgets a reaped child: its pid may be reused from now on, so it must never be signalled.
pub fn forget(pid: i32) {
    if let Ok(mut live) = LIVE.lock() {
        live.remove(&pid);
        // A job's guard just reaped may have left descendants outside its group (`setsid`):
        // re-parented to reclaim, the subreaper, they die now, with their job.
        super::orphans::sweep(&live);
    }
}

/// SIGKILLs every registered worker group. Safe to call from a panic hook: it never blocks on
/// the registry lock (a panic while it is held skips this layer; PDEATHSIG still holds).
pub fn kill_all() {
    let groups: Vec<i32> = match LIVE.try_lock() {
        Ok(live) => live.iter().copied().collect(),
        Err(_) => return,
    };
    for pid in groups {
        // SIGCONT is not needed: SIGKILL ends a stopped process too.
        let _ = signal_group(pid, Signal::SIGKILL);
    }
    if super::orphans::adopts() {
        super::orphans::kill_descendants();
    }
}
