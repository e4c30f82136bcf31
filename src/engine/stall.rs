//! When the clock stops waiting for a process that has not got where it waits for it. A
//! worker's write or step: after `STALL` of real time (`Wait::stalled`). A worker that has said
//! `done` and has only to exit, and the relay at its planned crash and at its end: only once
//! the process is stuck, not while the machine is merely too busy to run it (`Wait::given_up`):
//! stopped (SIGSTOP from outside reclaim), gone, or having had its CPU and still not got there;
//! one that has had no CPU is waited for, up to a bound, so nothing waits forever.

use std::time::{Duration, Instant};

/// How long the clock waits before it looks whether the process is stuck: far above any
/// ordinary lag, so an ordinary night never reaches it.
pub(super) const STALL: Duration = Duration::from_millis(1500);
/// The CPU time a process may use after `STALL` without getting there before it is taken to be
/// stuck: a write, a step or a relay's send takes a few milliseconds of it.
const CPU_BUDGET: Duration = Duration::from_millis(200);
/// The longest the clock waits for any process, stuck or not (one blocked on a lock that
/// another process holds uses no CPU): no night freezes.
const STALL_AT_MOST: Duration = Duration::from_secs(8);
/// The unit of `/proc/PID/stat`'s CPU times (`USER_HZ`, 100 on every Linux).
const TICKS_PER_SECOND: u64 = 100;

/// One wait of the clock for one process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wait {
    since: Option<Instant>,
    /// The process's CPU time when `STALL` had passed.
    cpu_at_stall: Option<Duration>,
    /// The clock has gone on without the process (`stalled` or `given_up` said so).
    gone_on: bool,
}

/// What `/proc` says of a process: stopped or not, and its CPU time so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    stopped: bool,
    cpu: Duration,
}

impl Wait {
    /// The clock does not wait on the process now: the next wait starts afresh.
    pub fn end(&mut self) {
        *self = Self::default();
    }

    /// Whether the clock has waited `STALL` since the first call after `end`: a worker's
    /// write or step is given up on then, as before (judging a worker by its CPU, as the relay
    /// is, held a storm of kills with three workers twice as long; not yet understood).
    pub fn stalled(&mut self, now: Instant) -> bool {
        let stalled = now.saturating_duration_since(*self.since.get_or_insert(now)) >= STALL;
        self.gone_on |= stalled;
        stalled
    }

    /// Whether the clock has gone on without the process on this wait (the last `stalled` or
    /// `given_up` said so).
    #[must_use]
    pub fn gone_on(&self) -> bool {
        self.gone_on
    }

    /// Whether the clock goes on without process `pid`, having waited on it since the first
    /// call after `end`.
    pub fn given_up(&mut self, now: Instant, pid: i32) -> bool {
        let given_up = self.judge(now, || look(pid));
        self.gone_on |= given_up;
        given_up
    }

    fn judge(&mut self, now: Instant, look: impl FnOnce() -> Option<Seen>) -> bool {
        let waited = now.saturating_duration_since(*self.since.get_or_insert(now));
        if waited < STALL {
            return false;
        }
        if waited >= STALL_AT_MOST {
            return true;
        }
        match look() {
            // Gone (or a zombie): it will say nothing more.
            None => true,
            Some(seen) if seen.stopped => true,
            Some(seen) => {
                let at = *self.cpu_at_stall.get_or_insert(seen.cpu);
                seen.cpu.saturating_sub(at) >= CPU_BUDGET
            }
        }
    }
}

/// `/proc/PID/stat`: `pid (comm) state ... utime stime ...` (comm may hold spaces and
/// parentheses); `None` for a process gone or dead.
fn look(pid: i32) -> Option<Seen> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    let state = *fields.first()?;
    if matches!(state, "Z" | "X" | "x") {
        return None;
    }
    // Fields 14 and 15 of the line (utime, stime) are the 12th and 13th after the comm.
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    let cpu = ticks(11)? + ticks(12)?;
    Some(Seen {
        stopped: matches!(state, "T" | "t"),
        cpu: Duration::from_millis(cpu * 1000 / TICKS_PER_SECOND),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_starved_of_cpu_is_waited_for_and_a_stuck_one_is_not() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let running = |cpu_ms: u64| {
            move || {
                Some(Seen {
                    stopped: false,
                    cpu: Duration::from_millis(cpu_ms),
                })
            }
        };
        // A loaded machine: past STALL, it has had hardly any CPU since.
        let mut wait = Wait::default();
        assert!(!wait.judge(at(0), running(50)));
        assert!(!wait.judge(at(1600), running(50)));
        assert!(!wait.judge(at(5000), running(90)));
        // But never past the bound.
        assert!(wait.judge(at(8000), running(90)));
        // A process that had its CPU and did not get there.
        let mut wait = Wait::default();
        assert!(!wait.judge(at(0), running(50)));
        assert!(!wait.judge(at(1600), running(50)));
        assert!(wait.judge(at(2000), running(260)));
        // Stopped, or gone: at STALL, as before.
        let mut wait = Wait::default();
        assert!(!wait.judge(at(0), || None));
        assert!(!wait.judge(at(1400), || None));
        assert!(wait.judge(at(1500), || None));
        let mut wait = Wait::default();
        let stopped = || {
            Some(Seen {
                stopped: true,
                cpu: Duration::ZERO,
            })
        };
        assert!(!wait.judge(at(0), stopped));
        assert!(wait.judge(at(1500), stopped));
        // A wait ended starts afresh.
        wait.end();
        assert!(!wait.judge(at(9000), stopped));
    }

    #[test]
    fn this_process_is_seen_running_with_its_cpu() {
        let me = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
        let seen = look(me);
        assert!(seen.is_some_and(|s| !s.stopped), "{seen:?}");
        assert_eq!(look(i32::MAX), None);
    }
}
