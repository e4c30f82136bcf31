//! A user's job may leave its process group (`setsid`, a double fork): the group kill and the
//! death signal never reach what it started there. Whoever runs such a job (reclaim, and the
//! exec-guard between reclaim and `sh`) is made a child subreaper (`PR_SET_CHILD_SUBREAPER`), so
//! every descendant whose parent dies is re-parented to it instead of to init, stays in its
//! subtree, and is found and killed from /proc's parent links on every exit path.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
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

/// Every process's parent and state letter (`R`, `S`, `T`, `Z`, ...), from `/proc/PID/stat`.
type Procs = BTreeMap<i32, (i32, char)>;

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
            let ppid: i32 = fields.next()?.parse().ok()?;
            Some((pid, (ppid, state)))
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
        .filter(|(_, (_, state))| !dead(*state))
        .map(|(&pid, &(ppid, _))| (pid, ppid))
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
    let all_stopped = found.iter().all(|p| {
        procs
            .get(p)
            .is_some_and(|&(_, state)| matches!(state, 'T' | 't'))
    });
    if all_stopped || late {
        Signal::SIGKILL
    } else {
        Signal::SIGSTOP
    }
}

/// Ends the processes `found` picks from each read of `/proc` so that a process forking as
/// fast as it can cannot outrun it: SIGSTOP to each one, read again until every one found is
/// stopped (a child forked before its parent's stop landed is found by the next read), then
/// SIGKILL to them all; again until a read finds none, at most `END_WITHIN`. `reap` runs after
/// each read (the zombies of a fork loop hold pids). Returns whether none is left.
fn stop_then_kill(found: &dyn Fn(&Procs) -> Vec<i32>, reap: &dyn Fn(&Procs)) -> bool {
    let deadline = Instant::now() + END_WITHIN;
    loop {
        let procs = processes();
        let found = found(&procs);
        reap(&procs);
        if found.is_empty() {
            return true;
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
pub fn kill_descendants() {
    let me = getpid().as_raw();
    let _ = stop_then_kill(&|procs| subtree(&parents(procs), &[me]), &|_| {
        while let Ok(status) = waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            if matches!(status, WaitStatus::StillAlive) {
                break;
            }
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
            .filter(|&(pid, &(ppid, state))| {
                ppid == me && dead(state) == zombies && !live.contains(pid) && !own.contains(pid)
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
        // Only adopted pids are waited for, never a worker's: its `Child` reaps it.
        &|procs| {
            for pid in adopted(procs, true) {
                let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
            }
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

    #[test]
    fn processes_are_stopped_until_every_one_is_then_killed() {
        let procs: Procs = [(10, (1, 'T')), (11, (10, 'R')), (12, (10, 't'))]
            .into_iter()
            .collect();
        assert_eq!(next_signal(&[10, 11, 12], &procs, false), Signal::SIGSTOP);
        assert_eq!(next_signal(&[10, 12], &procs, false), Signal::SIGKILL);
        // A process read as gone counts as not stopped: read again first.
        assert_eq!(next_signal(&[10, 99], &procs, false), Signal::SIGSTOP);
        assert_eq!(next_signal(&[11], &procs, true), Signal::SIGKILL);
    }
}
