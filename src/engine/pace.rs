//! When the work happens, in sim time: each attempt's writes fall at moments the scenario gives
//! (its start, its pace), whatever the machine's load or the speed the night is shown at. The
//! engine grants a worker its next write once the clock has reached that write's moment, and
//! holds the clock there until the write is done: so a night's sim times are a function of the
//! scenario, and the speed keys change only how fast the same night is shown.

use std::time::Instant;

use serde::Serialize;

use super::stall::Wait;

/// A pace: `items` writes take `secs` sim seconds (kept as a ratio so that 112 items in 704 s
/// end on 704 s exactly, not a rounding short of it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Pace {
    pub secs: f64,
    pub items: u64,
}

impl Pace {
    /// One item every `secs` sim seconds.
    #[must_use]
    pub fn per_item(secs: f64) -> Self {
        Self { secs, items: 1 }
    }

    /// Sim seconds that `writes` writes take.
    #[must_use]
    pub fn span(self, writes: u64) -> f64 {
        if self.items == 0 {
            return 0.0;
        }
        self.secs * writes as f64 / self.items as f64
    }
}

/// One attempt of a worker slot, as the sim clock sees it.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// The sim time (seconds after midnight) the schedule counts from.
    base_sim: f64,
    /// The sim time the attempt started at (`base_sim` moves on when a hung worker resumes).
    started: f64,
    /// Writes already made at `base_sim`.
    base_writes: u64,
    pace: Pace,
    /// Writes the worker has said it made (`wrote N`).
    pub writes: u64,
    /// Writes it waits to be allowed (`wait N`).
    pub need: u64,
    /// Writes granted so far (`grant N` sent).
    pub granted: u64,
    /// The task of the last write (`wrote N last=...`), once there is one.
    pub last_task: Option<u64>,
    /// The clock's wait on this attempt, if it waits: a worker that does not write (stopped by
    /// someone outside reclaim, say) is gone on without after `stall::STALL`, so its heartbeat
    /// can go stale.
    wait: Wait,
    /// For an attempt without a pace (`--delay-ms 0`: as fast as the machine goes), the clock's
    /// reading when it last spoke: its present.
    unpaced_now: f64,
    /// The long item's work, while the worker does it (it said `work`): its steps are on the
    /// schedule like writes, so the host's kills land between the same two steps at any speed.
    pub work: Option<Work>,
    /// The write in whose work the plan's crash point falls (`--crash-at`), while this attempt
    /// is the one that carries it out.
    pub crash_write: Option<u64>,
    /// A claim worker's: it acts once granted its write (it claims at the grant's moment), so
    /// what it says from then on is that write's moment, not its last one's.
    pub claims: bool,
    /// The worker said its `done` line: it has only to exit.
    pub said_done: bool,
}

impl Attempt {
    /// An attempt that starts at sim time `start` and writes at `pace`.
    #[must_use]
    pub fn new(start: f64, pace: Pace) -> Self {
        Self {
            base_sim: start,
            started: start,
            base_writes: 0,
            pace,
            writes: 0,
            need: 0,
            granted: 0,
            last_task: None,
            wait: Wait::default(),
            unpaced_now: start,
            work: None,
            crash_write: None,
            claims: false,
            said_done: false,
        }
    }

    /// Whether the attempt has a pace. Without one (`--delay-ms 0`) its writes take no sim time
    /// of their own: it is granted everything, never waited for, and its lines are stamped with
    /// the clock's reading (which then runs at real time x scale, as fast as the machine).
    #[must_use]
    pub fn paced(&self) -> bool {
        self.pace.secs > 0.0 && self.pace.items > 0
    }

    /// The moment this attempt will commit `task`, if it goes on from its last write one task
    /// after another (what every strategy does once it has resumed).
    #[must_use]
    pub fn predicted(&self, task: u64) -> Option<f64> {
        if !self.paced() {
            return None;
        }
        let last = self.last_task?;
        Some(self.done_at(self.writes + task.saturating_sub(last)))
    }

    /// The moment of the `k`th write.
    #[must_use]
    pub fn done_at(&self, k: u64) -> f64 {
        self.base_sim + self.pace.span(k.saturating_sub(self.base_writes))
    }

    /// The moment this attempt's worker waits for: its next write's (or its last's, while it
    /// has not asked for the next), or in the long item's work the end of its current step.
    #[must_use]
    pub fn awaited(&self) -> f64 {
        match self.work {
            Some(work) => work.at(work.done + 1),
            None => self.done_at(self.need.max(self.writes)),
        }
    }

    /// Whether the worker is doing the long item's work.
    #[must_use]
    pub fn working(&self) -> bool {
        self.work.is_some()
    }

    /// The worker began the long item's work: `span` sim seconds in `steps` steps, from the
    /// moment of the write it belongs to (the one it was granted, whenever it was heard).
    pub fn begin_work(&mut self, span: f64, steps: u64) {
        let steps = steps.max(1);
        self.work = Some(Work {
            start: self.done_at(self.need.max(self.writes)),
            step: span / steps as f64,
            steps,
            done: 0,
            granted: 0,
        });
    }

    /// The worker finished a step of the long item's work (its `step` line).
    pub fn stepped(&mut self) {
        if let Some(work) = self.work.as_mut() {
            work.done = (work.done + 1).min(work.steps);
        }
    }

    /// The attempt's own present: the moment of its last write or step (or its start); a claim
    /// worker's, once granted its next write, that write's (`claims`).
    #[must_use]
    pub fn now(&self) -> f64 {
        if let Some(work) = self.work {
            work.at(work.done)
        } else if self.paced() {
            let acting = self.claims && self.granted >= self.need && self.need > self.writes;
            self.done_at(if acting { self.need } else { self.writes })
        } else {
            self.unpaced_now
        }
    }

    /// The sim time the attempt started at: a scenario's `start_at`, or a restart's moment.
    #[must_use]
    pub fn started(&self) -> f64 {
        self.started
    }

    /// Writes made before the schedule's base (a resume or a pause rebases it): their
    /// moments are not on it.
    #[must_use]
    pub fn base_writes(&self) -> u64 {
        self.base_writes
    }

    /// The moment of the first write of this attempt.
    #[must_use]
    pub fn first_write(&self) -> f64 {
        self.done_at(self.base_writes + 1)
    }

    /// How many writes in all the worker may have made by sim time `clock`.
    #[must_use]
    pub fn grantable(&self, clock: f64) -> u64 {
        if self.pace.secs <= 0.0 || self.pace.items == 0 {
            return u64::MAX;
        }
        let elapsed = (clock - self.base_sim).max(0.0);
        // The small tolerance keeps a write due at exactly `clock` from missing by a rounding.
        let k = (elapsed * self.pace.items as f64 / self.pace.secs + 1e-9).floor();
        self.base_writes.saturating_add(k as u64)
    }

    /// The sim time the clock may not pass until this attempt (its worker `pid`) has said more:
    /// the moment of the write it waits for (or of its last write, while it has not said what
    /// comes next). The clock at `clock` waits on it once it has got there, and goes on
    /// without it (`None`) once the worker is stuck: `Wait::stalled`; once it has said `done`,
    /// `Wait::given_up` (all it has left is to exit, and its exit would otherwise be stamped
    /// wherever the clock had got to).
    pub fn hold(&mut self, now: Instant, pid: i32, clock: f64) -> Option<f64> {
        if !self.paced() {
            return None;
        }
        // In the long item's work, the end of the step it does (the last one ends with the
        // write itself).
        let mut hold = self.awaited();
        // A crash inside write k is stamped with the attempt's present, write k-1's moment:
        // the clock waits there until the worker has died or made write k, so the kill lands on
        // that second at every speed rather than wherever the clock had run to meanwhile.
        if let Some(k) = self.crash_write.filter(|&k| self.writes < k) {
            hold = hold.min(self.done_at(k - 1));
        }
        if hold > clock {
            // Not waited on yet: the clock has not reached it.
            self.wait.end();
            return Some(hold);
        }
        let gone_on = if self.said_done {
            self.wait.given_up(now, pid)
        } else {
            self.wait.stalled(now, pid)
        };
        (!gone_on).then_some(hold)
    }

    /// The write to grant beyond the clock's own (`grantable`): the one holding the plan's
    /// crash, once the clock stands on the moment before it, where it waits for the crash.
    #[must_use]
    pub fn crash_grant(&self, clock: f64) -> Option<u64> {
        let k = self.crash_write?;
        (self.paced() && self.writes + 1 == k && clock + 1e-9 >= self.done_at(k - 1)).then_some(k)
    }

    /// The worker spoke with the clock at `clock`: it is not being waited on.
    pub fn heard(&mut self, clock: f64) {
        self.wait.end();
        self.unpaced_now = self.unpaced_now.max(clock);
    }

    /// The long item's work has ended with write `writes`: the schedule goes on from the end
    /// of its last step.
    pub fn worked(&mut self, writes: u64) {
        let Some(work) = self.work.take() else {
            return;
        };
        self.writes = writes;
        self.rebase(work.at(work.steps));
    }

    /// The steps of the long item's work to grant by sim time `clock`, if more than granted.
    pub fn steps_to_grant(&mut self, clock: f64) -> Option<u64> {
        let work = self.work.as_mut()?;
        let due = work.grantable(clock);
        (due > work.granted).then(|| {
            work.granted = due;
            due
        })
    }

    /// The moment of the last of `upto` writes, as a grant names it: on a paced night only (a
    /// night without a pace has no moments to give).
    #[must_use]
    pub fn moment_of(&self, upto: u64) -> Option<f64> {
        (self.paced() && upto != u64::MAX).then(|| self.done_at(upto))
    }

    /// A claim worker found every item left leased by another worker and asks to be woken at
    /// `at`, when the first lease ends: the write it was granted is given back, and its
    /// schedule goes on from that moment, as a hung worker's from its resume (its next write a
    /// pace later, the clock and the lockstep waiting for it there as for any write).
    pub fn sleeps_until(&mut self, at: f64) {
        if !self.paced() || self.working() {
            return;
        }
        self.granted = self.granted.min(self.writes);
        self.rebase(at);
    }

    /// The clock has given up waiting on this attempt (`hold`): it goes on without it.
    #[must_use]
    pub fn given_up_on(&self) -> bool {
        self.wait.gone_on()
    }

    /// The clock is not held by this attempt now (it had moved on before the hold).
    pub fn not_waited_on(&mut self) {
        self.wait.end();
    }

    /// The schedule starts again from `at` with the writes made so far (a hung worker resumed:
    /// its next write is one pace after the resume, not in the past).
    pub fn rebase(&mut self, at: f64) {
        self.base_sim = at.max(self.now());
        self.base_writes = self.writes;
    }
}

/// The long item's work as the schedule has it: `steps` steps of `step` sim seconds from
/// `start`, each granted as the clock reaches its end and waited for there, like a write.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Work {
    start: f64,
    step: f64,
    steps: u64,
    /// Steps the worker said it finished.
    pub done: u64,
    /// Steps granted.
    pub granted: u64,
}

impl Work {
    /// The end of the `k`th step.
    fn at(&self, k: u64) -> f64 {
        self.start + self.step * k.min(self.steps) as f64
    }

    /// How many steps may have ended by sim time `clock`.
    #[must_use]
    pub fn grantable(&self, clock: f64) -> u64 {
        if self.step <= 0.0 {
            return self.steps;
        }
        // The small tolerance keeps a step due at exactly `clock` from missing by a rounding.
        let k = ((clock - self.start).max(0.0) / self.step + 1e-9).floor();
        (k as u64).min(self.steps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::clock::{NIGHT_START, SimTime};
    use std::time::Duration;

    /// A clock that has reached every hold: the attempt is waited on.
    const WAITING: f64 = f64::INFINITY;

    #[test]
    fn the_postmortems_paces_land_on_its_seconds() {
        // 02:00:03, 112 items in 11m44s: the 112th write is at 02:11:47 exactly.
        let first = Attempt::new(
            NIGHT_START + 3.0,
            Pace {
                secs: 704.0,
                items: 112,
            },
        );
        assert_eq!(SimTime(first.done_at(112)).to_string(), "02:11:47");
        assert_eq!(first.grantable(first.done_at(112)), 112);
        assert_eq!(first.grantable(first.done_at(112) - 0.01), 111);
        // 02:12:05, 200 items in 7m26s: done at 02:19:31.
        let second = Attempt::new(
            NIGHT_START + 725.0,
            Pace {
                secs: 446.0,
                items: 200,
            },
        );
        assert_eq!(SimTime(second.done_at(200)).to_string(), "02:19:31");
    }

    #[test]
    fn an_attempt_without_a_pace_is_never_waited_for_and_lives_on_the_clock() {
        let mut a = Attempt::new(100.0, Pace::per_item(0.0));
        assert!(!a.paced());
        assert_eq!(a.grantable(100.0), u64::MAX);
        assert_eq!(a.hold(Instant::now(), 0, WAITING), None);
        a.heard(130.0);
        assert!((a.now() - 130.0).abs() < 1e-9);
    }

    #[test]
    fn the_clock_is_held_at_the_write_awaited_until_a_stall() {
        let t0 = Instant::now();
        let mut a = Attempt::new(100.0, Pace::per_item(2.0));
        assert!(
            a.hold(t0, 0, WAITING)
                .is_some_and(|h| (h - 100.0).abs() < 1e-9)
        );
        a.need = 3;
        assert!(
            a.hold(t0, 0, WAITING)
                .is_some_and(|h| (h - 106.0).abs() < 1e-9)
        );
        // The clock short of it (at 50) is not waiting on it: the wait begins once it is there.
        assert_eq!(a.hold(t0 + Duration::from_secs(2), 0, 50.0), Some(106.0));
        assert_eq!(a.hold(t0 + Duration::from_secs(2), 0, WAITING), Some(106.0));
        assert_eq!(a.hold(t0 + Duration::from_secs(4), 0, WAITING), None);
        assert!(a.given_up_on());
        a.heard(0.0);
        a.writes = 3;
        a.rebase(200.0);
        assert!((a.done_at(4) - 202.0).abs() < 1e-9);
        assert_eq!(a.grantable(150.0), 3);
    }

    /// A worker that has said `done` has only to exit: waited for while it is not stuck (a
    /// loaded machine may not let it run for a while), up to `stall::STALL_AT_MOST`; gone, not
    /// at all past `STALL`.
    #[test]
    fn a_worker_that_said_done_is_waited_for_until_it_exits_or_is_stuck() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut sleep = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let pid = i32::try_from(sleep.id()).unwrap_or(i32::MAX);
        let mut a = Attempt::new(100.0, Pace::per_item(2.0));
        a.writes = 5;
        a.said_done = true;
        assert_eq!(a.hold(at(0), pid, WAITING), Some(110.0));
        // Past `STALL`, a process that has had no CPU since is waited for.
        assert_eq!(a.hold(at(2000), pid, WAITING), Some(110.0));
        assert!(!a.given_up_on());
        assert_eq!(a.hold(at(8000), pid, WAITING), None, "never past the bound");
        assert!(a.given_up_on());
        // One that has not said `done`, asleep (as on a lock): given up on at `STALL`.
        let mut b = Attempt::new(100.0, Pace::per_item(2.0));
        assert_eq!(b.hold(at(0), pid, WAITING), Some(100.0));
        assert_eq!(b.hold(at(1499), pid, WAITING), Some(100.0));
        assert_eq!(b.hold(at(1500), pid, WAITING), None);
        assert!(b.given_up_on());
        let _ = sleep.kill();
        let _ = sleep.wait();
        // Gone (reaped): given up on at `STALL`.
        a.heard(0.0);
        assert_eq!(a.hold(at(0), pid, WAITING), Some(110.0));
        assert_eq!(a.hold(at(1500), pid, WAITING), None);
    }

    #[test]
    fn a_claim_worker_woken_at_a_leases_end_is_waited_for_there_and_granted_again() {
        let t0 = Instant::now();
        let mut a = Attempt::new(100.0, Pace::per_item(2.0));
        a.writes = 3;
        a.need = 4;
        a.granted = 4;
        assert_eq!(a.moment_of(4), Some(108.0));
        // Write 4 was granted at 108; every item was leased, the first lease ends at 131.5.
        a.sleeps_until(131.5);
        assert_eq!(a.granted, 3, "the grant is given back");
        assert!((a.now() - 131.5).abs() < 1e-9);
        assert!(
            a.hold(t0, 0, WAITING)
                .is_some_and(|h| (h - 133.5).abs() < 1e-9)
        );
        assert_eq!(a.grantable(133.4), 3);
        assert_eq!(a.grantable(133.5), 4);
        assert!(a.moment_of(4).is_some_and(|m| (m - 133.5).abs() < 1e-9));
        // Without a pace there is no moment to give.
        let unpaced = Attempt::new(100.0, Pace::per_item(0.0));
        assert_eq!(unpaced.moment_of(4), None);
    }

    #[test]
    fn the_long_items_steps_are_on_the_schedule_and_it_goes_on_from_the_last() {
        let t0 = Instant::now();
        let mut a = Attempt::new(100.0, Pace::per_item(2.0));
        a.writes = 3;
        a.need = 4;
        // Write 4 falls at 108: its 30 s of work, in three steps, from there.
        a.begin_work(30.0, 3);
        assert!(a.working());
        assert!(
            a.hold(t0, 0, WAITING)
                .is_some_and(|h| (h - 118.0).abs() < 1e-9)
        );
        assert_eq!(a.steps_to_grant(117.9), None);
        assert_eq!(a.steps_to_grant(118.0), Some(1));
        assert_eq!(a.steps_to_grant(120.0), None, "granted once");
        a.stepped();
        assert!((a.now() - 118.0).abs() < 1e-9);
        assert!(
            a.hold(t0, 0, WAITING)
                .is_some_and(|h| (h - 128.0).abs() < 1e-9)
        );
        assert_eq!(
            a.steps_to_grant(500.0),
            Some(3),
            "never more than there are"
        );
        a.stepped();
        // The last step ends with the write, heard whenever the machine got to it.
        assert!(
            a.hold(t0, 0, WAITING)
                .is_some_and(|h| (h - 138.0).abs() < 1e-9)
        );
        a.worked(4);
        assert!(!a.working());
        assert!((a.now() - 138.0).abs() < 1e-9);
        assert!((a.done_at(5) - 140.0).abs() < 1e-9);
        a.need = 5;
        assert!(
            a.hold(t0, 0, WAITING)
                .is_some_and(|h| (h - 140.0).abs() < 1e-9)
        );
    }
}
