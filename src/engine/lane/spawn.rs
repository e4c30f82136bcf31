//! A slot's next attempt: its pace, whether the clock keeps pace with it, the command it runs
//! (reclaim's worker, the relay, or someone else's job with its variables), and what the lane
//! remembers as it starts.

use std::process::Command;

use super::Lane;
use crate::engine::config::LaneWorker;
use crate::engine::pace::{Attempt, Pace};
use crate::heartbeat;
use crate::supervisor::slot::Slot;
use crate::worker::protocol::ExecEnv;
use crate::worker::{Strategy, WorkerConfig};

impl Lane {
    /// One more worker position (a second delivery); returns its index.
    pub(in crate::engine) fn add_slot(&mut self) -> usize {
        self.slots.push(Slot::new());
        let pace = self.pace(1);
        self.attempts
            .push(Attempt::new(crate::base::clock::NIGHT_START, pace));
        // Every per-slot record grows with it: a pause's end was looked up for the new slot
        // on every tick (`end_pauses`), and the dashboard's `a` panicked there.
        self.paused_until.push(None);
        self.config.workers += 1;
        self.slots.len() - 1
    }

    /// A slot's next attempt is about to start: remember how many rows there were.
    pub(in crate::engine) fn spawning(&mut self, slot: usize) {
        self.kills.spawning(slot, self.observer.rows);
        self.points.spawning(slot);
    }

    /// The pace of attempt `attempt` (from 1): the scenario's for it, or its last. An external
    /// job has none: it cannot be gated, so the clock never waits for it.
    #[must_use]
    pub fn pace(&self, attempt: u32) -> Pace {
        if self.config.worker.job().is_some() {
            return Pace::per_item(0.0);
        }
        let paces = &self.config.paces;
        let i = (attempt.max(1) as usize - 1).min(paces.len().saturating_sub(1));
        paces.get(i).copied().unwrap_or(Pace::per_item(0.0))
    }

    /// Whether a slot's attempts are on the clock's schedule (gated): reclaim's own workers
    /// are; someone else's job and the relay are not, so the clock never waits for them and
    /// their lines are stamped with its reading when they are heard.
    #[must_use]
    pub fn on_schedule(&self, slot: usize) -> bool {
        self.config.worker.job().is_none() && !self.vendor.is_relay(slot)
    }

    /// A slot's next attempt begins at sim time `start`. The relay has no pace: its attempts
    /// are not the workers', and its restart is not the worker's restart.
    pub(in crate::engine) fn begin_attempt(&mut self, slot: usize, start: f64) {
        let pace = if self.vendor.is_relay(slot) {
            Pace::per_item(0.0)
        } else {
            (self.read).begins(slot, self.slots[slot].attempt() > 0);
            self.pace(self.slots[slot].attempt() + 1)
        };
        self.attempts[slot] = Attempt::new(start, pace);
        self.attempts[slot].crash_write = self.crash_write(slot);
        self.attempts[slot].claims = self.claims();
    }

    /// The command a slot's next attempt runs, and whether it is gated (reads grants on its
    /// stdin): reclaim's own worker (`exe worker ... --gated`), the lane's relay (`exe relay
    /// ...`, not gated), or the external job in its folder with its variables, at its own pace.
    pub(in crate::engine) fn command(
        &self,
        slot: usize,
        exe: &std::path::Path,
        scale: f64,
    ) -> (Command, bool) {
        if self.vendor.is_relay(slot) {
            return (self.relay_command(slot, exe), false);
        }
        match &self.config.worker {
            LaneWorker::Strategy(strategy) => {
                let mut command = Command::new(exe);
                command.args(self.worker_config(*strategy, slot, scale).to_args());
                self.workers_warehouse().pass_to(&mut command);
                (command, true)
            }
            LaneWorker::Exec(job) => {
                // The planned crash belongs to the first attempt: the restart must finish.
                let crash_at = job
                    .crash_at
                    .as_ref()
                    .filter(|_| self.slots[slot].attempt() == 0)
                    .map(|plan| format!("{}:{}", plan.key, plan.point));
                let env = ExecEnv {
                    crash_at,
                    vendor: (self.vendor.addr()).map(|addr| format!("http://{addr}/messages")),
                    db: ExecEnv::absolute(&self.config.db),
                    heartbeat: ExecEnv::absolute(self.heartbeat.path()),
                    items: self.config.items,
                    keys: (job.queue.len() <= crate::queue::MAX_LISTED as u64)
                        .then(|| ExecEnv::absolute(&crate::engine::keys_path(&self.config.db))),
                    attempt: self.slots[slot].attempt() + 1,
                    worker: slot + 1,
                    workers: self.config.workers,
                    scenario_dir: job.scenario_dir.clone(),
                    delay: if job.unpaced_restarts && self.slots[slot].attempt() > 0 {
                        std::time::Duration::ZERO
                    } else {
                        self.config.delay
                    },
                };
                let mut command = env.command(exe, &job.command);
                // Where its rows go (on PostgreSQL its lane's schema, as libpq's variables).
                command.envs(self.workers_warehouse().job_env(&self.config.db));
                (command, false)
            }
        }
    }

    /// Reclaim's own worker for a slot's next attempt: gated, so the sim clock paces it.
    fn worker_config(&self, strategy: Strategy, slot: usize, scale: f64) -> WorkerConfig {
        let cfg = &self.config;
        WorkerConfig {
            strategy,
            db: cfg.db.clone(),
            items: cfg.items,
            delay: cfg.delay,
            heartbeat: heartbeat::default_path(&cfg.db),
            batch: cfg.batch,
            // The crash point belongs to the first attempt only: the restart must finish. The
            // relay's own point goes to the relay (`relay_command`), never to a worker.
            crash_at: cfg
                .crash_at
                .filter(|c| c.point != crate::worker::CrashPoint::AfterRelaySend)
                .filter(|_| self.slots[slot].attempt() == 0),
            // So is the pause: a restarted worker is not stopped again.
            pause_at: cfg.pause_at.filter(|_| self.slots[slot].attempt() == 0),
            sync: cfg.sync,
            supervised: true,
            gated: true,
            side_effect: cfg.side_effect,
            vendor: self.vendor.addr(),
            long_item: cfg.long_item,
            scale,
            split: cfg.split,
            quiet_writes: cfg.quiet_writes,
            // Where answers are lost, the worker tries a lost write again, as a job's retry
            // loop does (otherwise a lost connection ends it, and the supervisor restarts it).
            retry_writes: if cfg.retries_writes() {
                crate::worker::LOST_ANSWER_RETRIES
            } else {
                0
            },
            wal_autocheckpoint: cfg.wal_autocheckpoint,
            warehouse: cfg.warehouse.clone(),
        }
    }
}
