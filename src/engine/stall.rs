//! When the clock stops waiting for a process that has not got where it waits for it: only
//! once the process is stuck, never while the machine is merely too busy to run it. A worker's
//! write or step (`Wait::stalled`): once it has kept the clock waiting `STALL` of the time it
//! could have run (the time it spent ready but waiting for a CPU, which `/proc/PID/schedstat`
//! keeps, not counted), or it is stopped (SIGSTOP from outside reclaim) or gone. A worker that
//! has said `done` and has only to exit, and the relay at its planned crash and at its end
//! (`Wait::given_up`): stopped, gone, or having had its CPU and still not got there. Any
//! process is waited for up to a bound, so nothing waits forever.

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
    /// The time the process had spent ready to run but waiting for a CPU when the wait began
    /// (`None` where the kernel does not keep it).
    queued_at_start: Option<Duration>,
    /// The process's CPU time when `STALL` had passed.
    cpu_at_stall: Option<Duration>,
    /// The clock has gone on without the process (`stalled` or `given_up` said so).
    gone_on: bool,
}

/// What `/proc` says of a process: stopped or not, its CPU time so far, and its time spent
/// ready to run but waiting for a CPU so far (`None` where the kernel does not keep it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    stopped: bool,
    cpu: Duration,
    queued: Option<Duration>,
}

impl Wait {
    /// The clock does not wait on the process now: the next wait starts afresh.
    pub fn end(&mut self) {
        *self = Self::default();
    }

    /// Whether the clock goes on without worker `pid`'s write or step, having waited on it
    /// since the first call after `end`: once the worker has kept it waiting `STALL` of the
    /// time it could have run, or is stopped or gone past `STALL`. A worker blocked on a lock
    /// is not kept from running by the machine, so it is given up on at `STALL` as before (a
    /// storm of kills with three workers was held twice as long when workers were judged by
    /// their CPU, as `given_up` judges).
    pub fn stalled(&mut self, now: Instant, pid: i32) -> bool {
        if self.since.is_none() {
            self.since = Some(now);
            self.queued_at_start = queued(pid);
        }
        let stalled = self.judge(now, Rule::Queued, || look(pid));
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
        let given_up = self.judge(now, Rule::Cpu, || look(pid));
        self.gone_on |= given_up;
        given_up
    }

    fn judge(&mut self, now: Instant, rule: Rule, look: impl FnOnce() -> Option<Seen>) -> bool {
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
            Some(seen) => match rule {
                Rule::Queued => match (self.queued_at_start, seen.queued) {
                    // Ready to run but given no CPU is the machine's delay, not the worker's.
                    (Some(start), Some(queued)) => {
                        waited.saturating_sub(queued.saturating_sub(start)) >= STALL
                    }
                    // Where the kernel does not say, real time alone, as before.
                    _ => true,
                },
                Rule::Cpu => {
                    let at = *self.cpu_at_stall.get_or_insert(seen.cpu);
                    seen.cpu.saturating_sub(at) >= CPU_BUDGET
                }
            },
        }
    }
}

/// How a process that is neither stopped nor gone is judged stuck, past `STALL`.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// Once it has kept the clock waiting `STALL` of the time it could have run (`stalled`).
    Queued,
    /// Once it has had `CPU_BUDGET` of CPU since `STALL` (`given_up`).
    Cpu,
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
        queued: queued(pid),
    })
}

/// `/proc/PID/schedstat`: `cpu_ns queued_ns timeslices`, the second the time the process spent
/// ready to run but waiting for a CPU; `None` for a process gone, or a kernel without it.
fn queued(pid: i32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?;
    let ns = stat.split_whitespace().nth(1)?.parse::<u64>().ok()?;
    Some(Duration::from_nanos(ns))
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
                    queued: None,
                })
            }
        };
        // A loaded machine: past STALL, it has had hardly any CPU since.
        let mut wait = Wait::default();
        assert!(!wait.judge(at(0), Rule::Cpu, running(50)));
        assert!(!wait.judge(at(1600), Rule::Cpu, running(50)));
        assert!(!wait.judge(at(5000), Rule::Cpu, running(90)));
        // But never past the bound.
        assert!(wait.judge(at(8000), Rule::Cpu, running(90)));
        // A process that had its CPU and did not get there.
        let mut wait = Wait::default();
        assert!(!wait.judge(at(0), Rule::Cpu, running(50)));
        assert!(!wait.judge(at(1600), Rule::Cpu, running(50)));
        assert!(wait.judge(at(2000), Rule::Cpu, running(260)));
        // Stopped, or gone: at STALL, as before.
        let mut wait = Wait::default();
        assert!(!wait.judge(at(0), Rule::Cpu, || None));
        assert!(!wait.judge(at(1400), Rule::Cpu, || None));
        assert!(wait.judge(at(1500), Rule::Cpu, || None));
        let mut wait = Wait::default();
        let stopped = || {
            Some(Seen {
                stopped: true,
                cpu: Duration::ZERO,
                queued: None,
            })
        };
        assert!(!wait.judge(at(0), Rule::Cpu, stopped));
        assert!(wait.judge(at(1500), Rule::Cpu, stopped));
        // A wait ended starts afresh.
        wait.end();
        assert!(!wait.judge(at(9000), Rule::Cpu, stopped));
    }

    /// A worker's write: given up on once it has kept the clock waiting `STALL` of the time it
    /// could have run; the time it was ready but given no CPU does not count.
    #[test]
    fn a_worker_kept_from_running_by_the_machine_is_waited_for_and_a_blocked_one_is_not() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let queued = |ms: u64| {
            move || {
                Some(Seen {
                    stopped: false,
                    cpu: Duration::ZERO,
                    queued: Some(Duration::from_millis(ms)),
                })
            }
        };
        let begun = |queued_ms: u64| Wait {
            since: Some(t0),
            queued_at_start: Some(Duration::from_millis(queued_ms)),
            ..Wait::default()
        };
        // A loaded machine: of 2 s waited, 1.8 s ready to run on no CPU.
        let mut wait = begun(100);
        assert!(!wait.judge(at(1400), Rule::Queued, queued(1000)));
        assert!(!wait.judge(at(2000), Rule::Queued, queued(1900)));
        // It has had 1.5 s to run and is not there: stuck.
        assert!(wait.judge(at(4000), Rule::Queued, queued(2600)));
        // Starved throughout, it is still not waited for past the bound.
        let mut wait = begun(0);
        assert!(!wait.judge(at(7900), Rule::Queued, queued(7800)));
        assert!(wait.judge(at(8000), Rule::Queued, queued(7900)));
        // Blocked on a lock (asleep, never queued): at STALL, as before.
        let mut wait = begun(100);
        assert!(!wait.judge(at(1499), Rule::Queued, queued(100)));
        assert!(wait.judge(at(1500), Rule::Queued, queued(100)));
        // Stopped, or gone, or a kernel that does not say: at STALL.
        let mut wait = begun(0);
        assert!(wait.judge(at(1500), Rule::Queued, || None));
        let mut wait = begun(0);
        let stopped = || {
            Some(Seen {
                stopped: true,
                cpu: Duration::ZERO,
                queued: Some(Duration::ZERO),
            })
        };
        assert!(wait.judge(at(1500), Rule::Queued, stopped));
        let mut wait = Wait {
            queued_at_start: None,
            ..begun(0)
        };
        assert!(wait.judge(at(1500), Rule::Queued, queued(1400)));
    }

    #[test]
    fn this_process_is_seen_running_with_its_cpu_and_its_time_queued() {
        let me = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
        let seen = look(me);
        assert!(seen.is_some_and(|s| !s.stopped), "{seen:?}");
        assert!(seen.is_some_and(|s| s.queued.is_some()), "{seen:?}");
        assert_eq!(look(i32::MAX), None);
        assert_eq!(queued(i32::MAX), None);
    }
}
