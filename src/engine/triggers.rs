//! The host's triggers: what the night's plan says should happen now (a kill, a hang, a wipe of
//! the checkpoints), given the time and the first lane's progress. Pure: no processes, no I/O;
//! the engine carries the actions out.

use std::time::{Duration, Instant};

use super::config::{EngineConfig, HangPlan};
use crate::supervisor::schedule::KillSchedule;

/// Something the plan says is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Delete every checkpoint of every lane.
    WipeCheckpoints,
    /// SIGSTOP every lane's workers.
    Hang,
    /// SIGCONT them again.
    Resume,
    /// The host reclaims the instance: SIGKILL every live worker.
    Kill,
}

/// The plan's triggers and which of them have fired.
#[derive(Debug)]
pub struct Triggers {
    wipe_at_task: Option<u64>,
    hang: Option<HangPlan>,
    kill_at_task: Option<u64>,
    kill_at_rows: Option<u64>,
    /// Kills at moments after the night began (a recorded schedule, replayed).
    at_times: Vec<Duration>,
    schedule: KillSchedule,
    wipe_fired: bool,
    hang_fired: bool,
    at_task_fired: bool,
    timed_fired: usize,
    hang_resume_at: Option<Instant>,
    /// The next random kill, armed after each spawn.
    next_kill: Option<Instant>,
}

impl Triggers {
    #[must_use]
    pub fn new(config: &EngineConfig) -> Self {
        Self {
            wipe_at_task: config.wipe_at_task,
            hang: config.hang,
            kill_at_task: config.kills.at_task,
            kill_at_rows: config.kills.at_rows,
            at_times: config.kills.at_times.clone(),
            schedule: KillSchedule::new(&config.kills),
            wipe_fired: false,
            hang_fired: false,
            at_task_fired: false,
            timed_fired: 0,
            hang_resume_at: None,
            next_kill: None,
        }
    }

    /// What is due at `now` (`elapsed` since the night began), in the order it must happen;
    /// `has_task` says whether the first lane has written a task. Each trigger fires once.
    pub fn due(
        &mut self,
        now: Instant,
        elapsed: Duration,
        has_task: impl Fn(u64) -> bool,
    ) -> Vec<Action> {
        let mut due = Vec::new();
        if let Some(task) = self.wipe_at_task
            && !self.wipe_fired
            && has_task(task)
        {
            self.wipe_fired = true;
            due.push(Action::WipeCheckpoints);
        }
        if let Some(plan) = self.hang
            && !self.hang_fired
            && has_task(plan.at_task)
        {
            self.hang_fired = true;
            due.push(Action::Hang);
            self.hang_resume_at = plan.resume_after.map(|after| now + after);
        }
        if self.hang_resume_at.is_some_and(|at| now >= at) {
            self.hang_resume_at = None;
            due.push(Action::Resume);
        }
        if let Some(task) = self.kill_at_task
            && !self.at_task_fired
            && has_task(task)
        {
            self.at_task_fired = true;
            due.push(Action::Kill);
        }
        if let Some(&at) = self.at_times.get(self.timed_fired)
            && elapsed >= at
        {
            self.timed_fired += 1;
            due.push(Action::Kill);
        }
        if self.next_kill.is_some_and(|at| now >= at) {
            self.next_kill = None;
            due.push(Action::Kill);
        }
        due
    }

    /// Whether the kill at a row count is due now that the first lane's table holds `rows`
    /// (fires once).
    pub fn kill_at_rows_due(&mut self, rows: u64) -> bool {
        if self.kill_at_rows.is_some_and(|n| rows >= n) {
            self.kill_at_rows = None;
            return true;
        }
        false
    }

    /// Arms the next random kill, one schedule delay after `now`, unless one is armed already.
    pub fn arm_random_kill(&mut self, now: Instant) {
        if self.next_kill.is_none()
            && let Some(delay) = self.schedule.next_delay()
        {
            self.next_kill = Some(now + delay);
        }
    }

    /// Whether random kills are armed (the dashboard's toggle).
    #[must_use]
    pub fn random_kills_on(&self) -> bool {
        self.schedule.remaining() > 0 || self.next_kill.is_some()
    }

    /// Turns seeded random kills on (without limit) or off.
    pub fn set_random_kills(&mut self, on: bool, now: Instant) {
        self.schedule.set_unlimited(on);
        if on {
            self.arm_random_kill(now);
        } else {
            self.next_kill = None;
        }
    }

    /// Deadlines move with a paused clock, so a pause changes nothing about the night.
    pub fn postpone(&mut self, by: Duration) {
        for at in [self.next_kill.as_mut(), self.hang_resume_at.as_mut()]
            .into_iter()
            .flatten()
        {
            *at += by;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::schedule::KillPlan;

    fn config(kills: KillPlan) -> EngineConfig {
        EngineConfig {
            hang: Some(HangPlan {
                at_task: 5,
                resume_after: Some(Duration::from_secs(2)),
            }),
            wipe_at_task: Some(7),
            ..EngineConfig::new(Vec::new(), kills, std::path::PathBuf::new())
        }
    }

    #[test]
    fn each_trigger_fires_once_when_its_task_is_written() {
        let t0 = Instant::now();
        let mut triggers = Triggers::new(&config(KillPlan {
            at_task: Some(5),
            ..KillPlan::default()
        }));
        assert!(triggers.due(t0, Duration::ZERO, |_| false).is_empty());
        let upto = |n: u64| move |task: u64| task <= n;
        assert_eq!(
            triggers.due(t0, Duration::ZERO, upto(5)),
            vec![Action::Hang, Action::Kill]
        );
        assert!(triggers.due(t0, Duration::ZERO, upto(6)).is_empty());
        assert_eq!(
            triggers.due(t0, Duration::ZERO, upto(7)),
            vec![Action::WipeCheckpoints]
        );
        // The hang ends two seconds after it began, and a pause of one second moves that.
        triggers.postpone(Duration::from_secs(1));
        let at = |s| t0 + Duration::from_secs(s);
        assert!(triggers.due(at(2), Duration::ZERO, upto(9)).is_empty());
        assert_eq!(
            triggers.due(at(3), Duration::ZERO, upto(9)),
            vec![Action::Resume]
        );
        assert!(triggers.due(at(9), Duration::ZERO, upto(9)).is_empty());
    }

    #[test]
    fn timed_kills_fire_in_order_one_per_look() {
        let t0 = Instant::now();
        let mut triggers = Triggers::new(&config(KillPlan {
            at_times: vec![Duration::from_millis(100), Duration::from_millis(200)],
            ..KillPlan::default()
        }));
        let ms = Duration::from_millis;
        assert!(triggers.due(t0, ms(99), |_| false).is_empty());
        assert_eq!(triggers.due(t0, ms(250), |_| false), vec![Action::Kill]);
        assert_eq!(triggers.due(t0, ms(250), |_| false), vec![Action::Kill]);
        assert!(triggers.due(t0, ms(900), |_| false).is_empty());
    }

    #[test]
    fn a_random_kill_is_armed_once_and_fires_at_its_delay() {
        let t0 = Instant::now();
        let mut triggers = Triggers::new(&config(KillPlan {
            random: 1,
            window: (Duration::from_secs(1), Duration::from_secs(1)),
            ..KillPlan::default()
        }));
        triggers.arm_random_kill(t0);
        triggers.arm_random_kill(t0 + Duration::from_secs(5));
        let never = |_| false;
        assert!(triggers.due(t0, Duration::ZERO, never).is_empty());
        let at = t0 + Duration::from_secs(1);
        assert_eq!(triggers.due(at, Duration::ZERO, never), vec![Action::Kill]);
        triggers.arm_random_kill(at);
        assert!(!triggers.random_kills_on(), "the plan had one kill");
    }

    #[test]
    fn the_kill_at_a_row_count_fires_once_when_the_count_is_reached() {
        let mut triggers = Triggers::new(&config(KillPlan {
            at_rows: Some(50),
            ..KillPlan::default()
        }));
        assert!(!triggers.kill_at_rows_due(49));
        assert!(
            triggers.kill_at_rows_due(51),
            "a poll may see a row or two more"
        );
        assert!(!triggers.kill_at_rows_due(60));
    }
}
