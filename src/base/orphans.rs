//! A user's job may leave its process group (`setsid`, a double fork): the group kill and the
//! death signal never reach what it started there. Whoever runs such a job (reclaim, and the
//! exec-guard between reclaim and `sh`) is made a child subreaper (`PR_SET_CHILD_SUBREAPER`), so
//! every descendant whose parent dies is re-parented to it instead of to init, stays in its
//! subtree, and is found and killed from /proc's parent links on every exit path; a group in a
//! session it made itself is killed whole, which no fork loop outruns. A subreaper's work is
//! done when the kernel says it has no child left, not when a read of /proc finds none.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpid};

/// Set once this process has become a subreaper for a job of someone else's.
static ADOPTS: AtomicBool = AtomicBool::new(false);

/// Children this process spawned itself that are not workers (the private PostgreSQL cluster's
/// guard, `warehouse::postgres::cluster`): its own, never orphans, so a sweep after a job's death leaves
/// them alone (it once took the cluster's guard for an orphan, and the night's server with it).
static OWN: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Marks `pid`, a child this process spawned and will reap itself, as its own: `sweep` never
/// kills it.
pub fn own(pid: u32) {
    if let (Ok(mut own), Ok(pid)) = (OWN.lock(), i32::try_from(pid)) {
        own.insert(pid);
    }
}

/// Makes this process the subreaper of its descendants (once); called before an external job
/// is spawned. A kernel without subreapers (before 3.4) leaves the group kill as the only layer.
pub fn become_subreaper() {
    if !ADOPTS.swap(true, Ordering::SeqCst) {
        let _ = nix::sys::prctl::set_child_subreaper(true);
    }
}

/// Whether this process has adopted a job's descendants.
#[must_use]
pub fn adopts() -> bool {
    ADOPTS.load(Ordering::SeqCst)
}

/// A process as `/proc/PID/stat` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Proc {
    ppid: i32,
    /// `R`, `S`, `T`, `Z`, ...
    state: char,
    /// Its process group and session.
    group: i32,
    session: i32,
}

/// Every process, by pid.
type Procs = BTreeMap<i32, Proc>;

fn processes() -> Procs {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return BTreeMap::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
            let rest = &stat[stat.rfind(')')? + 1..];
            let mut fields = rest.split_whitespace();
            let state = fields.next()?.chars().next()?;
            let mut number = || fields.next()?.parse::<i32>().ok();
            let (ppid, group, session) = (number()?, number()?, number()?);
            Some((
                pid,
                Proc {
                    ppid,
                    state,
                    group,
                    session,
                },
            ))
        })
        .collect()
}

/// Whether a process in `state` is dead already (a zombie, or on its way out).
fn dead(state: char) -> bool {
    matches!(state, 'Z' | 'X')
}

/// Each live process's parent (zombies left out: they are already dead).
fn parents(procs: &Procs) -> BTreeMap<i32, i32> {
    procs
        .iter()
        .filter(|(_, p)| !dead(p.state))
        .map(|(&pid, p)| (pid, p.ppid))
        .collect()
}

/// The live descendants of `root` (not `root` itself), parents before their children.
fn subtree(parents: &BTreeMap<i32, i32>, roots: &[i32]) -> Vec<i32> {
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for (&pid, &ppid) in parents {
        children.entry(ppid).or_default().push(pid);
    }
    let mut found = Vec::new();
    let mut next: Vec<i32> = roots.to_vec();
    while let Some(pid) = next.pop() {
        for &child in children.get(&pid).map_or(&[][..], Vec::as_slice) {
            if !found.contains(&child) {
                found.push(child);
                next.push(child);
            }
        }
    }
    found
}

/// How long ending a job's descendants may take before it gives up (a process in an
/// uninterruptible sleep never stops; the rest end in milliseconds).
const END_WITHIN: Duration = Duration::from_secs(3);

/// The signal for the processes `found` in `procs`: SIGSTOP while one of them still runs (it
/// could fork), SIGKILL once every one is stopped (none can fork any more) or time is up.
fn next_signal(found: &[i32], procs: &Procs, late: bool) -> Signal {
    let all_stopped = found
        .iter()
        .all(|p| procs.get(p).is_some_and(|p| matches!(p.state, 'T' | 't')));
    if all_stopped || late {
        Signal::SIGKILL
    } else {
        Signal::SIGSTOP
    }
}

/// The process groups of `found` that lie in sessions other than `session` (this process's).
/// A session is made by `setsid`, and only its maker's descendants are ever in it, so such a
/// group is wholly this process's descendants. A signal to a group reaches every member at
/// once, and no fork crosses it (a fork that races a group's signal starts again, and gets it),
/// so a loop that re-forks faster than `/proc` can be read dies in one kill.
fn groups_of_their_own(found: &[i32], procs: &Procs, session: i32) -> BTreeSet<i32> {
    found
        .iter()
        .filter_map(|pid| procs.get(pid))
        .filter(|p| p.session != session && p.group > 1)
        .map(|p| p.group)
        .collect()
}

/// Ends the processes `found` picks from each read of `/proc` so that a process forking as
/// fast as it can cannot outrun it: SIGKILL to each group of their own (`groups_of_their_own`);
/// SIGSTOP to each one, read again until every one found is stopped (a child forked before its
/// parent's stop landed is found by the next read), then SIGKILL to them all; again until a
/// read finds none and `reap` agrees, at most `END_WITHIN`.
/// `reap` runs after each read (the zombies of a fork loop hold pids) and says whether the
/// kernel, not the read, says none is left: a read of `/proc` is not one moment, so a fork
/// loop's generation that exits between the listing and its own line takes with it the only
/// trace of the next, and a read that finds none may have missed one (seen: a walker outlived
/// reclaim and forked for hours). Returns whether none is left.
fn stop_then_kill(found: &dyn Fn(&Procs) -> Vec<i32>, reap: &dyn Fn(&Procs) -> bool) -> bool {
    let deadline = Instant::now() + END_WITHIN;
    let session = nix::unistd::getsid(None).map_or(0, Pid::as_raw);
    loop {
        let procs = processes();
        let found = found(&procs);
        // None found while the kernel still counts a child: missed by the read, or not yet
        // re-parented here; the signals below go to nobody, and the next read looks again.
        if reap(&procs) && found.is_empty() {
            return true;
        }
        for group in groups_of_their_own(&found, &procs, session) {
            let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
        }
        let late = Instant::now() > deadline;
        let signal = next_signal(&found, &procs, late);
        for &pid in &found {
            let _ = kill(Pid::from_raw(pid), signal);
        }
        if late {
            return false;
        }
        std::thread::yield_now();
    }
}

/// Ends every descendant of this process (`stop_then_kill`), reaping every child that ended:
/// called only on a way out, after the workers' groups are killed, when no worker's `Child`
/// waits any more.
///
/// A subreaper's descendants all hang below its children (an orphan is re-parented here), so
/// it is done when `waitpid` says it has no child at all (`ECHILD`), whatever a read found.
pub fn kill_descendants() {
    let me = getpid().as_raw();
    let _ = stop_then_kill(&|procs| subtree(&parents(procs), &[me]), &|_| loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => return false,
            // A child reaped, or a signal: wait again.
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            // ECHILD: no child left. Any other error is not a subreaper's question to
            // answer: the read alone decides.
            Err(_) => return true,
        }
    });
}

/// Ends the orphans this process adopted (its children that are not `live`, the workers it
/// spawned itself, nor its `own`) and everything under them, and reaps them. Called with the
/// registry of workers locked, so a worker being spawned cannot be taken for an orphan.
pub fn sweep(live: &BTreeSet<i32>) {
    if !adopts() {
        return;
    }
    let me = getpid().as_raw();
    let own = OWN.lock().map(|o| o.clone()).unwrap_or_default();
    let adopted = |procs: &Procs, zombies: bool| -> Vec<i32> {
        procs
            .iter()
            .filter(|&(pid, p)| {
                p.ppid == me
                    && dead(p.state) == zombies
                    && !live.contains(pid)
                    && !own.contains(pid)
            })
            .map(|(&pid, _)| pid)
            .collect()
    };
    // A fork loop's generations are each re-parented here: every read looks for new ones.
    let _ = stop_then_kill(
        &|procs| {
            let roots = adopted(procs, false);
            let mut all = subtree(&parents(procs), &roots);
            all.extend(roots);
            all
        },
        // Only adopted pids are waited for, never a worker's: its `Child` reaps it. The
        // workers are children too, so the kernel cannot say none is left: a generation the
        // read missed stays a child here, found by the next sweep or by `kill_descendants`.
        &|procs| {
            for pid in adopted(procs, true) {
                let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
            }
            true
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subtree_follows_parent_links_through_every_generation() {
        let parents: BTreeMap<i32, i32> = [(10, 1), (11, 10), (12, 11), (13, 1), (14, 12)]
            .into_iter()
            .collect();
        let mut found = subtree(&parents, &[10]);
        found.sort_unstable();
        assert_eq!(found, [11, 12, 14]);
        assert!(subtree(&parents, &[13]).is_empty());
    }

    fn proc(ppid: i32, state: char, group: i32, session: i32) -> Proc {
        Proc {
            ppid,
            state,
            group,
            session,
        }
    }

    #[test]
    fn only_groups_in_sessions_a_descendant_made_are_killed_whole() {
        // 100 is this process's session; 20 a session a descendant made with setsid, 30 the
        // group a worker leads inside this session.
        let procs: Procs = [
            (20, proc(1, 'S', 20, 20)),
            (21, proc(20, 'R', 20, 20)),
            (22, proc(1, 'R', 22, 20)),
            (30, proc(1, 'S', 30, 100)),
            (31, proc(30, 'S', 30, 100)),
        ]
        .into_iter()
        .collect();
        let groups = groups_of_their_own(&[21, 22, 31, 99], &procs, 100);
        assert_eq!(groups.into_iter().collect::<Vec<_>>(), [20, 22]);
    }

    #[test]
    fn processes_are_stopped_until_every_one_is_then_killed() {
        let procs: Procs = [
            (10, proc(1, 'T', 10, 10)),
            (11, proc(10, 'R', 10, 10)),
            (12, proc(10, 't', 10, 10)),
        ]
        .into_iter()
        .collect();
        assert_eq!(next_signal(&[10, 11, 12], &procs, false), Signal::SIGSTOP);
        assert_eq!(next_signal(&[10, 12], &procs, false), Signal::SIGKILL);
        // A process read as gone counts as not stopped: read again first.
        assert_eq!(next_signal(&[10, 99], &procs, false), Signal::SIGSTOP);
        assert_eq!(next_signal(&[11], &procs, true), Signal::SIGKILL);
    }
}
