//! A user's job may leave its process group (`setsid`, a double fork): the group kill and the
//! death signal never reach what it started there. Whoever runs such a job (reclaim, and the
//! exec-guard between reclaim and `sh`) is made a child subreaper (`PR_SET_CHILD_SUBREAPER`), so
//! every descendant whose parent dies is re-parented to it instead of to init, stays in its
//! subtree, and is found and killed from /proc's parent links on every exit path.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::{Pid, getpid};

/// Set once this process has become a subreaper for a job of someone else's.
static ADOPTS: AtomicBool = AtomicBool::new(false);

/// Adopted orphans killed but not yet reaped (a SIGKILL takes a moment to land).
static UNREAPED: Mutex<Vec<i32>> = Mutex::new(Vec::new());

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

/// Each live process's parent, from `/proc/PID/stat` (zombies left out: they are already dead).
fn parents() -> BTreeMap<i32, i32> {
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
            let state = fields.next()?;
            let ppid: i32 = fields.next()?.parse().ok()?;
            (state != "Z" && state != "X").then_some((pid, ppid))
        })
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

/// SIGKILLs every descendant of this process, again until none is left (a process may fork
/// while the first round lands), for at most about half a second.
pub fn kill_descendants() {
    let me = getpid().as_raw();
    for _ in 0..50 {
        let all = subtree(&parents(), &[me]);
        if all.is_empty() {
            return;
        }
        for pid in all {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kills the orphans this process adopted (its children that are not `live`, the workers it
/// spawned itself) and everything under them, and reaps them. Called with the registry of
/// workers locked, so a worker being spawned cannot be taken for an orphan.
pub fn sweep(live: &BTreeSet<i32>) {
    if !adopts() {
        return;
    }
    let me = getpid().as_raw();
    let parents = parents();
    let own = OWN.lock().map(|o| o.clone()).unwrap_or_default();
    let adopted: Vec<i32> = parents
        .iter()
        .filter(|&(pid, ppid)| *ppid == me && !live.contains(pid) && !own.contains(pid))
        .map(|(&pid, _)| pid)
        .collect();
    let Ok(mut unreaped) = UNREAPED.lock() else {
        return;
    };
    for pid in adopted.iter().chain(&subtree(&parents, &adopted)) {
        let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
    }
    unreaped.extend(adopted);
    // Only the adopted pids are waited for, never a worker's: its `Child` reaps it.
    unreaped.retain(|&pid| {
        matches!(
            waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)),
            Ok(nix::sys::wait::WaitStatus::StillAlive)
        )
    });
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
}
