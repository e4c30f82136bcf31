//! The host's triggers: what the night's plan says should happen now (a kill, a hang, a wipe of
//! the checkpoints), given the time and the first lane's progress. Pure: no processes, no I/O;
//! the engine carries the actions out.

#[cfg(test)]
use std::time::Duration;

use super::config::EngineConfig;
use crate::supervisor::schedule::{KillMoment, KillSchedule};

/// Something the plan says is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostAction {
    /// Delete every checkpoint of every lane.
    WipeCheckpoints,
    /// SIGSTOP every lane's workers.
    Hang,
    /// SIGCONT them again.
    Resume,
    /// The host reclaims the instance: SIGKILL every live worker.
    Kill,
    /// A random kill (`--kills`): as `Kill`, or one worker's where a lane's kills hit one
    /// (`Engine::kills_one_worker`).
    RandomKill,
    /// Restart the night's private cluster (`--restart-server-at-task`).
    RestartServer,
}

/// A trigger that waits for the first lane to commit a task: its moment is that write's.
#[derive(Debug, Clone, Copy, Default)]
struct AtTask {
    task: Option<u64>,
    /// The moment of the write that committed it, once heard.
    at: Option<f64>,
    fired: bool,
}

impl AtTask {
    fn new(task: Option<u64>) -> Self {
        Self {
            task,
            ..Self::default()
        }
    }

    fn wrote(&mut self, last: u64, sim: f64) {
        if self.at.is_none() && self.task.is_some_and(|t| last >= t) {
            self.at = Some(sim);
        }
    }

    /// The task still awaited, its moment unknown.
    fn awaited(&self) -> Option<u64> {
        self.task.filter(|_| self.at.is_none() && !self.fired)
    }

    fn moment(&self) -> Option<f64> {
        self.at.filter(|_| !self.fired)
    }

    /// Fires once, when its moment is ready.
    fn take(&mut self, ready: impl Fn(f64) -> bool) -> Option<f64> {
        let at = self.moment().filter(|&at| ready(at))?;
        self.fired = true;
        Some(at)
    }
}

/// A random kill placed by work (`--kill-rows`): due once the first lane's table holds `after`
/// rows more than it did when the attempt was spawned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowsKill {
    /// Rows since the spawn the kill waits for (drawn from the seed).
    pub after: u64,
    /// The first lane's rows when the attempt was spawned.
    pub base: u64,
    /// The worker's writes and the rows since the spawn, as of the last poll: what bounds the
    /// writes it may be granted, so the kill lands on its row at any load.
    pub seen: (u64, u64),
}

impl RowsKill {
    /// How many writes in all a gated worker may make now without its table passing `after`
    /// rows since the spawn: each write adds at most one row, so the writes made since the last
    /// poll (those not yet counted in `seen`) and the ones granted here together stay within
    /// what is left. The write the worker waits for (`need`: a batch may hold more items than
    /// rows are left) is granted whole once the last poll has counted every write heard
    /// (`heard`), so it is never left waiting for a kill that needs its rows.
    #[must_use]
    pub fn writes_allowed(&self, need: u64, heard: u64) -> u64 {
        let (writes, rows) = self.seen;
        let left = self.after.saturating_sub(rows);
        let allowed = writes.saturating_add(left);
        if left > 0 && heard == writes {
            allowed.max(need)
        } else {
            allowed
        }
    }
}

/// The plan's triggers and which of them have fired. Every moment is a sim time (seconds after
/// midnight), so a plan lands on the same moments at every speed.
#[derive(Debug)]
pub struct Triggers {
    wipe: AtTask,
    hang: AtTask,
    /// Sim seconds a hang lasts.
    hang_for: Option<f64>,
    kill_at_task: AtTask,
    /// `--kill-at-rows`: once the first lane's table holds this many rows (fires once).
    kill_at_rows: Option<u64>,
    /// `--kill-at-message`: once the first lane's vendor has this many requests (fires once).
    kill_at_message: Option<u64>,
    /// `--restart-server-at-rows`: once the first lane's table holds this many rows (once);
    /// its rows as of the last poll bound one worker's grants, as a kill by rows does.
    server_restart: Option<RowsKill>,
    /// `--restart-server-at-task`: once the first lane commits the task (once).
    server_restart_task: AtTask,
    /// Kills at moments of a recorded night, replayed in order.
    replayed: Vec<KillMoment>,
    /// When the first lane wrote the task the next replayed kill waits for.
    replayed_sim: Option<f64>,
    schedule: KillSchedule,
    /// Sim seconds per real second at speed 1: a random kill's delay is drawn in real seconds.
    scale: f64,
    timed_fired: usize,
    hang_resume_at: Option<f64>,
    /// The next random kill, armed after each spawn.
    next_kill: Option<f64>,
    /// The next random kill placed by rows (`--kill-rows`), armed before each spawn.
    rows_kill: Option<RowsKill>,
    /// How many of each planned kill fired, for saying which never did.
    fired: Fired,
}

/// What the plan asked for and how much of it happened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fired {
    pub kill_at_task: Option<(u64, bool)>,
    pub kill_at_rows: Option<(u64, bool)>,
    pub kill_at_message: Option<(u64, bool)>,
    /// The server restart at a row count (`--restart-server-at-rows`): planned, fired.
    pub server_restart: Option<(u64, bool)>,
    /// The server restart at a task's commit (`--restart-server-at-task`): planned, fired.
    pub server_restart_at_task: Option<(u64, bool)>,
    /// Replayed kills: planned, fired.
    pub replayed: (usize, usize),
    /// Random kills: planned (`--kills`), fired.
    pub random: (u32, u32),
}

impl Triggers {
    #[must_use]
    pub fn new(config: &EngineConfig) -> Self {
        Self {
            wipe: AtTask::new(config.wipe_at_task),
            hang: AtTask::new(config.hang.map(|h| h.at_task)),
            hang_for: config.hang.and_then(|h| h.resume_after),
            kill_at_task: AtTask::new(config.kills.at_task),
            kill_at_rows: config.kills.at_rows,
            kill_at_message: config.kills.at_message,
            server_restart: config.restart_server_at_rows.map(|at_rows| RowsKill {
                after: at_rows,
                base: 0,
                seen: (0, 0),
            }),
            server_restart_task: AtTask::new(config.restart_server_at_task),
            replayed: config.kills.replayed.clone(),
            replayed_sim: None,
            schedule: KillSchedule::new(&config.kills),
            scale: config.scale,
            timed_fired: 0,
            hang_resume_at: None,
            next_kill: None,
            rows_kill: None,
            fired: Fired {
                kill_at_task: config.kills.at_task.map(|t| (t, false)),
                kill_at_rows: config.kills.at_rows.map(|n| (n, false)),
                kill_at_message: config.kills.at_message.map(|n| (n, false)),
                server_restart: config.restart_server_at_rows.map(|n| (n, false)),
                server_restart_at_task: config.restart_server_at_task.map(|t| (t, false)),
                replayed: (config.kills.replayed.len(), 0),
                random: (config.kills.random, 0),
            },
        }
    }

    /// Whether the random kills are placed by rows (`--kill-rows`): they need no clock.
    #[must_use]
    pub fn by_rows(&self) -> bool {
        self.schedule.by_rows()
    }

    /// Which planned kills fired, so far.
    #[must_use]
    pub fn fired(&self) -> Fired {
        Fired {
            kill_at_task: self
                .fired
                .kill_at_task
                .map(|(t, _)| (t, self.kill_at_task.fired)),
            replayed: (self.fired.replayed.0, self.timed_fired),
            ..self.fired
        }
    }

    /// The first lane's worker has written up to task `last`, its write falling at `sim`.
    pub fn wrote(&mut self, last: u64, sim: f64) {
        self.wipe.wrote(last, sim);
        self.hang.wrote(last, sim);
        self.kill_at_task.wrote(last, sim);
        self.server_restart_task.wrote(last, sim);
        if let Some(KillMoment::AfterTask(task)) = self.replayed.get(self.timed_fired)
            && self.replayed_sim.is_none()
            && last >= *task
        {
            self.replayed_sim = Some(sim);
        }
    }

    /// The moment of the next replayed kill, once it is known.
    fn next_replayed(&self) -> Option<f64> {
        match self.replayed.get(self.timed_fired)? {
            KillMoment::AfterTask(_) => self.replayed_sim,
            KillMoment::At(sim) => Some(crate::base::clock::NIGHT_START + sim),
        }
    }

    /// The lowest task a trigger waits for the first lane to commit, its moment not known yet:
    /// until then no lane may be granted a write that could fall after it.
    #[must_use]
    pub fn awaited_task(&self) -> Option<u64> {
        let replayed = match self.replayed.get(self.timed_fired) {
            Some(KillMoment::AfterTask(task)) if self.replayed_sim.is_none() => Some(*task),
            _ => None,
        };
        [
            self.wipe.awaited(),
            self.hang.awaited(),
            self.kill_at_task.awaited(),
            self.server_restart_task.awaited(),
            replayed,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The next moment the plan has something to do, so the clock can stop there.
    #[must_use]
    pub fn next_moment(&self) -> Option<f64> {
        [
            self.wipe.moment(),
            self.hang.moment(),
            self.kill_at_task.moment(),
            self.server_restart_task.moment(),
            self.next_replayed(),
            self.hang_resume_at,
            self.next_kill,
        ]
        .into_iter()
        .flatten()
        .min_by(f64::total_cmp)
    }

    /// What is due with the clock at `clock`, each with its moment, in the order it must happen.
    /// A trigger fires only once every write up to its moment is in (`settled`: the clock is
    /// held at no write before it). Each fires once.
    pub fn due(&mut self, clock: f64, settled: f64) -> Vec<(HostAction, f64)> {
        let ready = |at: f64| at <= clock && at < settled;
        let mut due = Vec::new();
        if let Some(at) = self.wipe.take(ready) {
            due.push((HostAction::WipeCheckpoints, at));
        }
        if let Some(at) = self.hang.take(ready) {
            due.push((HostAction::Hang, at));
            self.hang_resume_at = self.hang_for.map(|after| at + after);
        }
        if let Some(at) = self.hang_resume_at
            && at <= clock
        {
            self.hang_resume_at = None;
            due.push((HostAction::Resume, at));
        }
        if let Some(at) = self.kill_at_task.take(ready) {
            due.push((HostAction::Kill, at));
        }
        if let Some(at) = self.server_restart_task.take(ready) {
            due.push((HostAction::RestartServer, at));
        }
        if let Some(at) = self.next_replayed()
            && ready(at)
        {
            self.timed_fired += 1;
            self.replayed_sim = None;
            due.push((HostAction::Kill, at));
        }
        if let Some(at) = self.next_kill
            && ready(at)
        {
            self.next_kill = None;
            self.fired.random.1 += 1;
            due.push((HostAction::RandomKill, at));
        }
        due
    }

    /// Whether the kill at a row count is due now that the first lane's table holds `rows`
    /// (fires once).
    pub fn kill_at_rows_due(&mut self, rows: u64) -> bool {
        if self.kill_at_rows.is_some_and(|n| rows >= n) {
            self.kill_at_rows = None;
            if let Some((_, fired)) = self.fired.kill_at_rows.as_mut() {
                *fired = true;
            }
            return true;
        }
        false
    }

    /// The server restart still to come, with the rows it waits for.
    #[must_use]
    pub fn server_restart(&self) -> Option<RowsKill> {
        self.server_restart
    }

    /// Whether the server restart at a row count is due now that the first lane's table holds
    /// `rows` (fires once); otherwise the worker's `writes` and the `rows`, as of this poll, for
    /// its grants to stop at the restart's row.
    pub fn server_restart_due(&mut self, writes: u64, rows: u64) -> bool {
        let Some(restart) = self.server_restart.as_mut() else {
            return false;
        };
        if rows < restart.after {
            restart.seen = (writes, rows);
            return false;
        }
        self.server_restart = None;
        true
    }

    /// The planned server restart at a row count happened (`pg_ctl` said so): only then is it
    /// fired.
    pub fn server_restarted(&mut self) {
        if let Some((_, fired)) = self.fired.server_restart.as_mut() {
            *fired = true;
        }
    }

    /// The planned server restart at a task's commit happened (`pg_ctl` said so).
    pub fn server_restarted_at_task(&mut self) {
        if let Some((_, fired)) = self.fired.server_restart_at_task.as_mut() {
            *fired = true;
        }
    }

    /// The first lane's held worker was spawned again, its writes counted from zero while the
    /// table holds `rows`: the restart's bound on its grants starts from there.
    pub fn server_restart_respawned(&mut self, rows: u64) {
        if let Some(restart) = self.server_restart.as_mut() {
            restart.seen = (0, rows);
        }
    }

    /// The message count `--kill-at-message` still waits for.
    #[must_use]
    pub fn awaited_message(&self) -> Option<u64> {
        self.kill_at_message
    }

    /// Whether the kill at a message is due now that the first lane's vendor has `requests`
    /// (fires once).
    pub fn kill_at_message_due(&mut self, requests: u64) -> bool {
        if self.kill_at_message.is_some_and(|n| requests >= n) {
            self.kill_at_message = None;
            if let Some((_, fired)) = self.fired.kill_at_message.as_mut() {
                *fired = true;
            }
            return true;
        }
        false
    }

    /// Arms the next random kill for a spawn at `sim`, the first lane's table holding `rows`:
    /// one schedule delay after it, or (`--kill-rows`) a number of rows after it; unless one is
    /// armed already. A kill placed by rows that has not fired counts again from this spawn.
    pub fn arm_random_kill(&mut self, sim: f64, rows: u64) {
        if self.schedule.by_rows() {
            match self.rows_kill.as_mut() {
                Some(kill) => {
                    kill.base = rows;
                    kill.seen = (0, 0);
                }
                None => {
                    self.rows_kill = self.schedule.next_rows().map(|after| RowsKill {
                        after,
                        base: rows,
                        seen: (0, 0),
                    });
                }
            }
            return;
        }
        if self.next_kill.is_none()
            && let Some(delay) = self.schedule.next_delay()
        {
            self.next_kill = Some(sim + delay.as_secs_f64() * self.scale);
        }
    }

    /// The armed kill placed by rows, if any.
    #[must_use]
    pub fn rows_kill(&self) -> Option<RowsKill> {
        self.rows_kill
    }

    /// The first lane's worker had made `writes` writes and its table held `rows` rows when
    /// it was last read: the armed kill by rows bounds the next grants by that.
    pub fn saw_rows(&mut self, writes: u64, rows: u64) {
        if let Some(kill) = self.rows_kill.as_mut() {
            kill.seen = (writes, rows.saturating_sub(kill.base));
        }
    }

    /// The armed kill by rows, taken (it fires once) when the first lane's table holds `rows`,
    /// its count since the spawn reached.
    pub fn rows_kill_due(&mut self, rows: u64) -> Option<RowsKill> {
        let kill = self
            .rows_kill
            .filter(|k| rows.saturating_sub(k.base) >= k.after)?;
        self.rows_kill = None;
        self.fired.random.1 += 1;
        Some(kill)
    }

    /// A random kill counted as fired found no worker to kill: it never fired after all.
    pub fn random_kill_unsent(&mut self) {
        self.fired.random.1 = self.fired.random.1.saturating_sub(1);
    }

    /// Whether random kills are armed (the dashboard's toggle).
    #[must_use]
    pub fn random_kills_on(&self) -> bool {
        self.schedule.remaining() > 0 || self.next_kill.is_some() || self.rows_kill.is_some()
    }

    /// Turns seeded random kills on (without limit) or off.
    pub fn set_random_kills(&mut self, on: bool, sim: f64, rows: u64) {
        self.schedule.set_unlimited(on);
        if on {
            self.arm_random_kill(sim, rows);
        } else {
            self.next_kill = None;
            self.rows_kill = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::HangPlan;
    use crate::supervisor::schedule::KillPlan;

    const OPEN: f64 = f64::INFINITY;

    fn config(kills: KillPlan) -> EngineConfig {
        EngineConfig {
            restart_delay: 0.0,
            max_restarts: 0,
            scale: 10.0,
            ..EngineConfig::new(Vec::new(), kills, std::path::PathBuf::new())
        }
    }

    #[test]
    fn a_kill_at_a_task_lands_at_that_writes_moment_once_every_write_before_it_is_in() {
        let mut triggers = Triggers::new(&config(KillPlan {
            at_task: Some(5),
            ..KillPlan::default()
        }));
        assert!(triggers.due(100.0, OPEN).is_empty());
        assert_eq!(triggers.awaited_task(), Some(5));
        triggers.wrote(5, 110.0);
        assert_eq!(triggers.next_moment(), Some(110.0));
        // Another lane has not written its item of 110.0 yet: wait for it.
        assert!(triggers.due(110.0, 110.0).is_empty());
        assert_eq!(triggers.due(110.0, 112.0), vec![(HostAction::Kill, 110.0)]);
        triggers.wrote(9, 130.0);
        assert!(triggers.due(200.0, OPEN).is_empty());
    }

    #[test]
    fn each_task_trigger_fires_once_at_its_write_and_a_hang_ends_at_its_sim_moment() {
        let mut plan = config(KillPlan::default());
        plan.hang = Some(HangPlan {
            at_task: 5,
            resume_after: Some(20.0),
        });
        plan.wipe_at_task = Some(7);
        let mut triggers = Triggers::new(&plan);
        assert_eq!(triggers.awaited_task(), Some(5));
        triggers.wrote(5, 50.0);
        assert_eq!(triggers.awaited_task(), Some(7));
        assert_eq!(triggers.due(55.0, OPEN), vec![(HostAction::Hang, 50.0)]);
        triggers.wrote(6, 60.0);
        assert!(triggers.due(60.0, OPEN).is_empty());
        triggers.wrote(7, 69.0);
        assert_eq!(
            triggers.due(69.0, OPEN),
            vec![(HostAction::WipeCheckpoints, 69.0)]
        );
        assert_eq!(triggers.awaited_task(), None);
        assert_eq!(triggers.next_moment(), Some(70.0));
        assert_eq!(triggers.due(75.0, OPEN), vec![(HostAction::Resume, 70.0)]);
        assert!(triggers.due(90.0, OPEN).is_empty());
    }

    #[test]
    fn replayed_kills_fire_at_their_places_in_order() {
        let mut triggers = Triggers::new(&config(KillPlan {
            replayed: vec![
                KillMoment::AfterTask(111),
                KillMoment::At(100.0),
                KillMoment::At(200.0),
            ],
            ..KillPlan::default()
        }));
        let start = crate::base::clock::NIGHT_START;
        assert_eq!(triggers.awaited_task(), Some(111));
        triggers.wrote(110, start + 40.0);
        assert!(triggers.due(start + 45.0, OPEN).is_empty());
        triggers.wrote(111, start + 50.0);
        assert_eq!(
            triggers.due(start + 50.0, OPEN),
            vec![(HostAction::Kill, start + 50.0)]
        );
        assert!(triggers.due(start + 99.0, OPEN).is_empty());
        assert_eq!(
            triggers.due(start + 250.0, OPEN),
            vec![(HostAction::Kill, start + 100.0)]
        );
        assert_eq!(
            triggers.due(start + 250.0, OPEN),
            vec![(HostAction::Kill, start + 200.0)]
        );
        assert!(triggers.due(start + 900.0, OPEN).is_empty());
    }

    #[test]
    fn a_random_kill_is_drawn_in_real_seconds_and_falls_in_sim_seconds() {
        let mut triggers = Triggers::new(&config(KillPlan {
            random: 1,
            window: (Duration::from_secs(1), Duration::from_secs(1)),
            ..KillPlan::default()
        }));
        triggers.arm_random_kill(100.0, 0);
        triggers.arm_random_kill(105.0, 0);
        assert!(triggers.due(109.0, OPEN).is_empty());
        // One real second at scale 10 is ten sim seconds, at any speed.
        assert_eq!(
            triggers.due(111.0, OPEN),
            vec![(HostAction::RandomKill, 110.0)]
        );
        triggers.arm_random_kill(111.0, 0);
        assert!(!triggers.random_kills_on(), "the plan had one kill");
    }

    #[test]
    fn a_kill_by_rows_counts_from_its_spawn_and_bounds_the_grants_to_its_row() {
        let mut triggers = Triggers::new(&config(KillPlan {
            random: 2,
            rows: Some((10, 10)),
            ..KillPlan::default()
        }));
        triggers.arm_random_kill(100.0, 40);
        assert_eq!(triggers.next_moment(), None, "no moment in time");
        let kill = triggers.rows_kill().unwrap_or_else(|| panic!("armed"));
        assert_eq!((kill.after, kill.base), (10, 40));
        // Before any poll: ten writes, each at most a row.
        assert_eq!(kill.writes_allowed(0, 0), 10);
        // Six writes made, four rows of them seen (a keyed restart redoing done work adds none).
        triggers.saw_rows(6, 44);
        assert_eq!(
            triggers.rows_kill().map(|k| k.writes_allowed(7, 6)),
            Some(12)
        );
        // A batch the worker waits for is granted whole, once its writes are all counted.
        assert_eq!(
            triggers.rows_kill().map(|k| k.writes_allowed(20, 6)),
            Some(20)
        );
        assert_eq!(
            triggers.rows_kill().map(|k| k.writes_allowed(20, 9)),
            Some(12),
            "writes heard since the poll may have added rows: only what is surely left"
        );
        assert_eq!(triggers.rows_kill_due(49), None);
        // The attempt died on its own: the same kill counts again from the next spawn.
        triggers.arm_random_kill(200.0, 49);
        assert_eq!(triggers.rows_kill_due(55), None);
        assert!(triggers.rows_kill_due(59).is_some());
        assert_eq!(triggers.rows_kill_due(100), None, "fires once");
        assert_eq!(triggers.fired().random, (2, 1));
        // Due, and every worker had finished: it never fired after all.
        triggers.random_kill_unsent();
        assert_eq!(triggers.fired().random, (2, 0));
        triggers.arm_random_kill(300.0, 69);
        assert!(triggers.random_kills_on());
        assert_eq!(
            triggers.rows_kill().map(|k| k.writes_allowed(0, 0)),
            Some(10)
        );
        triggers.saw_rows(10, 79);
        assert_eq!(
            triggers.rows_kill().map(|k| k.writes_allowed(11, 10)),
            Some(10),
            "its row reached: not one write more, even one waited for"
        );
        triggers.set_random_kills(false, 300.0, 69);
        assert!(!triggers.random_kills_on());
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
