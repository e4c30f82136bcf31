//! A fleet's kills: in a night of one lane whose workers are several of reclaim's own (a claim
//! queue's, say), a random kill hits one worker, as a fleet's host takes back one instance, not
//! the whole lane; the workers take their turns in slot order, and a kill placed by rows counts
//! the writes of the worker it is for since it was armed, so it lands on its row for that worker
//! whatever the others write. Only the worker hit is restarted.

use std::time::Instant;

use nix::sys::signal::Signal;

use super::{Engine, Lane};

impl Engine {
    /// Whether random kills hit one worker at a time: one lane, several of reclaim's workers.
    pub(super) fn kills_one_worker(&self) -> bool {
        self.lanes.len() == 1
            && self.lanes[0].config().workers > 1
            && self.lanes[0].config().worker.strategy().is_some()
    }

    /// The worker the next random kill is for, the one after the last in slot order that is
    /// alive or about to be spawned (`spawning`), and its writes so far: what a kill by rows
    /// counts from (none for a worker about to start).
    ///
    /// A night without a pace grants a worker all its writes at its spawn, so only a worker
    /// about to start can still be held at its kill's row: there the kill is for a worker being
    /// spawned when there is one (the one just killed, after the first kill), and the turns are
    /// a paced night's.
    pub(super) fn choose_victim(&mut self, spawning: &[usize]) -> Option<(usize, u64)> {
        let lane = &self.lanes[0];
        let workers = lane.config().workers;
        let from = self.victim.map_or(0, |v| v + 1);
        let paced = !lane.config().delay.is_zero();
        let order = (0..workers).map(|i| (from + i) % workers);
        let alive = |s: usize| lane.on_schedule(s) && lane.slots()[s].is_live();
        let found = if paced || spawning.is_empty() {
            order.clone().find(|&s| spawning.contains(&s) || alive(s))
        } else {
            order.clone().find(|s| spawning.contains(s))
        }?;
        self.victim = Some(found);
        let writes = if spawning.contains(&found) {
            0
        } else {
            lane.attempts()[found].writes
        };
        Some((found, writes))
    }

    /// Arms the next random kill for a spawn at `sim`: for one worker (`kills_one_worker`),
    /// chosen among those alive and `spawning`, counting its own writes; else for the lane,
    /// counting its table's rows.
    pub(super) fn arm_kill(&mut self, sim: f64, spawning: &[usize]) {
        if self.kills_one_worker() {
            if let Some((_, writes)) = self.choose_victim(spawning) {
                self.triggers.arm_random_kill(sim, writes);
            }
            return;
        }
        let rows = self.lanes.first().map_or(0, |l| l.observer().rows);
        self.triggers.arm_random_kill(sim, rows);
    }

    /// What a kill by rows counts: the writes of the worker it is for, or the first lane's rows.
    pub(super) fn kill_count(&self) -> u64 {
        match self.victim.filter(|_| self.kills_one_worker()) {
            Some(slot) => self.lanes[0].attempts()[slot].writes,
            None => self.lanes.first().map_or(0, |l| l.observer().rows),
        }
    }

    /// A worker a kill was for that ended by itself (its queue done) will not reach its row:
    /// the kill goes to the next worker alive, counting from its writes now.
    pub(super) fn retarget_kill(&mut self, sim: f64) {
        let Some(slot) = self.victim.filter(|_| self.kills_one_worker()) else {
            return;
        };
        let s = &self.lanes[0].slots()[slot];
        if !s.is_live() && s.restart_due().is_none() {
            self.arm_kill(sim, &[]);
        }
    }

    /// The random kill: the worker it is for (the next one alive, if that one has ended), or
    /// every lane's workers. Whether it was sent: a kill that finds no worker running (each
    /// one finished, or none restarted yet) is not, and is counted among those that never
    /// fired.
    pub(super) fn random_kill(&mut self, now: Instant, sim: f64) -> bool {
        let sent = |engine: &Self| engine.lanes.iter().map(Lane::kills).sum::<u32>();
        let before = sent(self);
        if self.kills_one_worker() {
            let alive = |engine: &Self, slot: usize| engine.lanes[0].slots()[slot].is_live();
            let slot = match self.victim {
                Some(slot) if alive(self, slot) => Some(slot),
                _ => self.choose_victim(&[]).map(|(slot, _)| slot),
            };
            if let Some(slot) = slot {
                self.kill_slot(now, sim, slot);
            }
        } else {
            self.kill_at(now, sim, None);
        }
        let landed = sent(self) > before;
        if !landed {
            self.triggers.random_kill_unsent();
        }
        landed
    }

    /// The host's SIGKILL to the first lane's worker `slot` alone.
    fn kill_slot(&mut self, now: Instant, sim: f64, slot: usize) {
        let policy = self.restart_policy();
        if let Some(watch) = self.server_watch.as_mut() {
            // Stopped first, so the session read is as the kill finds it.
            let s = &self.lanes[0].slots()[slot];
            s.signal(Signal::SIGSTOP);
            let said = watch.before_kill(0, &[s.pid()], (now, sim));
            self.log_watch(now, said);
        }
        let notes = self.lanes[0].host_kill(now, sim, policy, Some(slot));
        self.notes(now, 0, notes);
    }
}
