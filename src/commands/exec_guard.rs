//! `reclaim exec-guard`: the first process of an external worker's group, between reclaim and
//! `sh -c CMD`, so that the whole group dies with reclaim, however reclaim dies.
//!
//! reclaim's own worker has no children, so PR_SET_PDEATHSIG on it is enough. Someone else's job
//! may fork (`sh -c` itself, a `sqlite3` per item, a helper left running), and the death signal
//! reaches only the process it was set on: a SIGKILL of reclaim would kill `sh` and leave its
//! children to init. The guard turns reclaim's death into a SIGTERM to itself (its own death
//! signal), and answers it by SIGKILLing its process group, which is the job's whole group.
//! Otherwise it waits for `sh` and ends as `sh` ended, so the supervisor classifies the exit as
//! if it had watched `sh` itself.
//!
//! Where the machine lets it, `sh` starts in a cgroup of the guard's own (`base::cgroup`), which
//! holds every descendant however it forks, and the guard ends the job by killing that group;
//! else what leaves the group is followed as the guard's adopted orphans (`base::orphans`).

use std::io;
use std::os::unix::process::CommandExt as _;
use std::process::Command;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::{Pid, getpgrp, getpid, getppid};

use crate::base::cgroup::JobGroup;
use crate::base::signals;
use crate::error::{Context as _, Error};

/// How often the guard looks for a signal while the job runs.
const LOOK: Duration = Duration::from_millis(20);

/// Runs `command` with `sh -c` in this process's group; `parent` is reclaim's pid.
pub fn run(command: &str, parent: i32) -> Result<u8, Error> {
    // INVARIANT: the guard leads its own group (the supervisor spawns it so), and only then
    // kills "its" group: started by hand inside a shell's group, it would kill the shell.
    if getpgrp() != getpid() {
        return Err(Error::Refused(
            "exec-guard is what reclaim's supervisor runs for an --exec job; use `reclaim run --exec CMD`".into(),
        ));
    }
    signals::install().context(|| "exec-guard: cannot install signal handlers".into())?;
    // What the job starts outside the group (`setsid`, a double fork) is re-parented here,
    // not to init, and killed with the rest on every way out.
    crate::base::orphans::become_subreaper();
    // The SIGKILL death signal set before exec is replaced by one the guard can act on.
    nix::sys::prctl::set_pdeathsig(Signal::SIGTERM)
        .map_err(io::Error::from)
        .context(|| "exec-guard: cannot set the death signal".into())?;
    // reclaim may have died before that: then no signal will ever come.
    if getppid() != Pid::from_raw(parent) {
        kill_group(None);
    }
    let mut group = JobGroup::make(parent);
    let sh = || {
        let mut sh = Command::new("sh");
        sh.arg("-c").arg(command);
        sh
    };
    let spawned = match group.as_ref().map(JobGroup::procs) {
        Some(Ok(procs)) => {
            let mut sh = sh();
            // SAFETY: the closure runs in the child between fork and exec, and calls only
            // write(2) on a descriptor opened before the fork: async-signal-safe, no
            // allocation, no lock.
            #[allow(unsafe_code)]
            unsafe {
                sh.pre_exec(move || {
                    nix::unistd::write(&procs, b"0")
                        .map(|_| ())
                        .map_err(io::Error::from)
                });
            }
            sh.spawn()
        }
        _ => Err(io::Error::other("no cgroup")),
    };
    let mut child = if let Ok(child) = spawned {
        child
    } else {
        // The group could not take `sh`: the subreaper alone follows the job.
        if let Some(g) = group.take() {
            let _ = g.end();
        }
        sh().spawn().context(|| "cannot run sh".into())?
    };
    let (tx, rx) = mpsc::channel();
    let _ = thread::Builder::new()
        .name("reclaim-guard-wait".into())
        .spawn(move || {
            let _ = tx.send(child.wait());
        });
    loop {
        match rx.recv_timeout(LOOK) {
            Ok(status) => {
                let status = status.context(|| "cannot wait for sh".into())?;
                // The job is over: whatever it left running goes with it.
                if let Some(g) = group.take() {
                    let _ = g.end();
                }
                crate::base::orphans::kill_descendants();
                return Ok(end_as(status));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if signals::received().is_some() {
                    kill_group(group.take());
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => kill_group(group.take()),
        }
    }
}

/// SIGKILL to the job's cgroup, then to its whole process group, the guard included: nothing
/// of it outlives reclaim.
fn kill_group(group: Option<JobGroup>) -> ! {
    if let Some(g) = group {
        let _ = g.end();
    }
    crate::base::orphans::kill_descendants();
    if getpgrp() == getpid() {
        let _ = killpg(getpgrp(), Signal::SIGKILL);
    }
    // Only reached if the group could not be signalled.
    std::process::exit(i32::from(crate::base::exit::ERROR));
}

/// The exit code to end with so that reclaim sees what `sh` did: its code, or death by its
/// signal (raised again on the guard).
fn end_as(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt as _;
    if let Some(code) = status.code() {
        return u8::try_from(code).unwrap_or(1);
    }
    if let Some(signal) = status.signal() {
        let _ = signal_hook::low_level::emulate_default_handler(signal);
        return u8::try_from(128 + signal).unwrap_or(1);
    }
    1
}
