//! Worker processes: spawning them so that none can outlive reclaim, signalling them, and the
//! registry that lets every exit path (a panic, a signal) kill whatever is still running.
//!
//! Three layers against orphans:
//! 1. each worker leads its own process group, and every exit path SIGKILLs the groups still
//!    registered here (`kill_all`);
//! 2. PR_SET_PDEATHSIG(SIGKILL) in the child, spawned from a thread that never exits (the
//!    signal fires when the *thread* that spawned it dies, not the process), with a `getppid`
//!    check for a parent that died before the child got that far; this covers SIGKILL of
//!    reclaim. Every process spawned here is reclaim's own binary (a worker, the relay, the
//!    vendor, the guard of someone else's job), which sets both first thing in `main`
//!    (`die_with_parent`), told its parent in `PARENT_ENV`: with no code to run between fork and
//!    exec, the standard library spawns with `posix_spawn` (a vfork) instead of copying the
//!    supervisor's whole address space for every attempt;
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

/// The variable that tells a process spawned here which process it must die with.
pub const PARENT_ENV: &str = "RECLAIM_SUPERVISOR_PID";

/// Spawns `command` (reclaim's own binary: see the module's notes) as a worker: its own process
/// group, killed if reclaim dies, registered for `kill_all`.
pub fn spawn(mut command: Command) -> io::Result<Child> {
    command
        .process_group(0)
        .env(PARENT_ENV, std::process::id().to_string());
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

/// For a process spawned by `spawn` (its parent named in `PARENT_ENV`): dies by SIGKILL when the
/// thread that spawned it does, and at once when that parent is already gone (it died before
/// this process got this far, and no signal will ever come). Called first thing in `main`,
/// while the process has one thread; the variable is removed, so nothing this process starts
/// (someone else's job under its guard) takes it for its own.
pub fn die_with_parent() {
    let Some(parent) = std::env::var_os(PARENT_ENV) else {
        return;
    };
    // SAFETY: called at the top of `main`, before any thread is started, so nothing reads the
    // environment while it changes.
    #[allow(unsafe_code)]
    unsafe {
        std::env::remove_var(PARENT_ENV);
    }
    let parent: Option<i32> = parent.to_str().and_then(|p| p.parse().ok());
    let armed = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).is_ok();
    if !armed || parent != Some(nix::unistd::getppid().as_raw()) {
        // Its supervisor is gone (or cannot be followed): a worker nobody watches must not run.
        eprintln!(
            "reclaim: error: started by a reclaim that is gone ({PARENT_ENV} names another parent); unset {PARENT_ENV}"
        );
        std::process::exit(i32::from(crate::base::exit::ERROR));
    }
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
        // A job's guard killed by the host's SIGKILL left its cgroup (if it had one) holding
        // whatever escaped its process group.
        crate::base::cgroup::end_left_by(pid);
        // A job's guard just reaped may have left descendants outside its group (`setsid`):
        // re-parented to reclaim, the subreaper, they die now, with their job.
        crate::base::orphans::sweep(&live);
    }
}

/// SIGKILLs every registered worker group. Safe to call from a panic hook: it never blocks on
/// the registry lock (a panic while it is held skips this layer; PDEATHSIG still holds).
pub fn kill_all() {
    let groups: Vec<i32> = match LIVE.try_lock() {
        Ok(live) => live.iter().copied().collect(),
        Err(_) => return,
    };
    for &pid in &groups {
        // SIGCONT is not needed: SIGKILL ends a stopped process too.
        let _ = signal_group(pid, Signal::SIGKILL);
    }
    // Its guard killed, a job's cgroup is ended here.
    for pid in groups {
        crate::base::cgroup::end_left_by(pid);
    }
    if crate::base::orphans::adopts() {
        crate::base::orphans::kill_descendants();
    }
}
