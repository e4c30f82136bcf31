//! The clock held to the work: how far the shown clock may go (never past a write not yet
//! made, a restart not yet due, or a moment the plan acts at), and the grants that let gated
//! workers write up to it.

use std::time::Instant;

use super::{Attempt, Engine, GRANT_AHEAD, Grant, Lane, SlotState};
use crate::worker::protocol::{Moment, StepGrant};

impl Engine {
    /// The sim time the clock may not pass yet: the write some running worker has been
    /// granted (or has yet to ask for) and not made.
    pub(super) fn held_at(&mut self, now: Instant) -> f64 {
        let clock = self.clock.now().0;
        let mut held = f64::INFINITY;
        for lane in &mut self.lanes {
            let (slots, attempts) = lane.slots_and_attempts_mut();
            for (slot, attempt) in slots.iter().zip(attempts.iter_mut()) {
                if !(slot.is_live() && slot.state() == SlotState::Running) {
                    attempt.not_waited_on();
                    continue;
                }
                if let Some(hold) = attempt.hold(now, slot.pid(), clock) {
                    held = held.min(hold);
                }
            }
            if let Some(moment) = lane.relay_crash_hold(clock, now) {
                held = held.min(moment);
            }
            if let Some(moment) = lane.relay_end_hold(now) {
                held = held.min(moment);
            }
        }
        // On PostgreSQL, a kill whose outcome the server has not told yet (`Watch::awaited`).
        if let Some(moment) = self.server_watch.as_ref().and_then(|w| w.awaited(now)) {
            held = held.min(moment);
        }
        if let Some(upto) = self.server_down_hold(now) {
            held = held.min(upto);
        }
        held
    }

    /// On PostgreSQL, a server gone (`ServerWatch::down_since`): the clock stands where it was
    /// first missed, but goes on to the restarts due, so a worker lost to the outage is
    /// restarted on its moment and waits for the server there.
    fn server_down_hold(&self, now: Instant) -> Option<f64> {
        let down = self.server_watch.as_ref()?.down_since(now)?;
        Some(
            self.next_restart()
                .map_or(down, |restart| restart.max(down)),
        )
    }

    /// Whether the night is measured by its work alone: the random kills are placed by rows
    /// (`--kill-rows`) and no attempt has a pace (`--delay-ms 0`, or an external job), so
    /// nothing the clock could show between two scheduled moments comes from the scenario.
    /// Such a night's writes take no sim time, and its clock moves only to what is scheduled
    /// (a restart's moment), never at real time: two runs of the same storm print the same
    /// times at any load.
    pub(super) fn by_work(&self) -> bool {
        self.triggers.by_rows()
            && (self.lanes.iter()).all(|l| l.attempts().iter().all(|a| !a.paced()))
    }

    /// Where a night by work (`by_work`) moves its clock in this tick: to `limit` while a
    /// restart is waiting for its moment (the clock would otherwise never reach it), else
    /// nowhere.
    pub(super) fn work_clock(&self, limit: f64) -> f64 {
        let clock = self.clock.now().0;
        match self.next_restart() {
            Some(_) if limit.is_finite() => limit.max(clock),
            _ => clock,
        }
    }

    /// The sim time of the next restart planned.
    pub(super) fn next_restart(&self) -> Option<f64> {
        (self.lanes.iter())
            .flat_map(|l| {
                l.slots()
                    .iter()
                    .filter_map(crate::supervisor::slot::Slot::restart_due)
            })
            .min_by(f64::total_cmp)
    }

    /// How far ahead of the clock writes may be granted: a worker a little ahead is never
    /// waited for, and the clock moves at its speed rather than a write per tick.
    pub(super) fn grant_until(&self) -> f64 {
        let clock = self.clock.now().0;
        let ahead = self
            .tick_gap
            .mul_f64(1.5)
            .clamp(GRANT_AHEAD.0, GRANT_AHEAD.1);
        let mut until = clock + ahead.as_secs_f64() * self.clock.scale();
        // INVARIANT: no write is granted past a moment the plan acts at, so a kill lands
        // between the same two writes at every speed.
        if let Some(moment) = self.triggers.next_moment() {
            until = until.min(moment);
        }
        // Nor past the moment of a relay's planned crash, until it has died there.
        if let Some(moment) = (self.lanes.iter())
            .filter_map(Lane::relay_crash_moment)
            .reduce(f64::min)
        {
            until = until.min(moment);
        }
        // Nor past a kill whose outcome the server has not told yet.
        let now = Instant::now();
        if let Some(moment) = self.server_watch.as_ref().and_then(|w| w.awaited(now)) {
            until = until.min(moment.max(clock));
        }
        // Nor past where a server gone holds the clock.
        if let Some(upto) = self.server_down_hold(now) {
            until = until.min(upto.max(clock));
        }
        // Nor past the end of a planned pause, so the SIGCONT lands between the same writes.
        if let Some(end) = self.next_pause_end() {
            until = until.min(end.max(clock));
        }
        // Nor, in any lane, past the write a planned server restart waits for (the clock
        // waits there too): every lane holds the same rows when the server goes, on every run.
        if let Some(moment) = self.server_restart_moment() {
            until = until.min(moment);
        }
        // Nor past a planned restart, so its second shows the same rows at every speed.
        if let Some(restart) = self.next_restart() {
            until = until.min(restart.max(clock));
        }
        // Looked at exactly (a recording), nor past the earliest write not yet heard: each
        // moment's writes are read before the next moment's are granted.
        if self.exact
            && let Some(earliest) = self.next_write()
        {
            until = until.min(earliest.max(clock));
        }
        // Looked at as each second ends (a recording), nor past the end of the second not
        // yet looked at.
        if let Some(edge) = self.second_edge() {
            until = until.min(edge.max(clock));
        }
        // Nor past a moment the driver stops on (`stop_on`): the figures there are that
        // moment's at every speed.
        let stops = (self.stops.iter().copied()).chain(self.landed);
        if let Some(stop) = stops.filter(|&s| s >= clock - 1e-9).reduce(f64::min) {
            until = until.min(stop);
        }
        // Nor up to a dead-man's alert: a write (or a long item's step) granted ahead would
        // beat the heartbeat before the clock got there, and the alert would not fire at every
        // speed (long-item's at 16x) nor on every rehearsal of a lecture.
        let dead_man = self.config.dead_man;
        let mut first = (self.lanes.iter())
            .filter_map(|l| l.alert_moment(dead_man))
            .reduce(f64::min);
        if let Some(when) = &self.stop_when {
            // Nor, in this tick, past an entry it stops on heard in it (a restart: the
            // restarted worker's first grant waits for the driver, which may hold there); nor
            // up to the first writes and the row past the queue it stops on.
            let heard = self.timeline.get(self.heard..).unwrap_or_default();
            for entry in heard.iter().filter(|e| when.picks(e)) {
                until = until.min(entry.sim.0.max(clock));
            }
            let waits = self
                .first_writes_unread(when)
                .chain(self.rows_past_items(when))
                .chain(first);
            first = waits.reduce(f64::min);
        }
        if let Some(first) = first {
            // That write itself only once the clock is there, so nothing past it is made.
            until = until.min(if first > clock + 1e-9 {
                first - 1e-6
            } else {
                first
            });
        }
        if let Some(task) = self.triggers.awaited_task() {
            // The first lane's moment for that task, when its one running worker can say.
            let predicted = (self.lanes.first())
                .and_then(|lane| {
                    let mut running = (lane.slots().iter().zip(lane.attempts()))
                        .enumerate()
                        .filter(|&(i, (slot, _))| {
                            lane.on_schedule(i)
                                && slot.is_live()
                                && slot.state() == SlotState::Running
                        })
                        .map(|(_, pair)| pair);
                    match (running.next(), running.next()) {
                        (Some((_, attempt)), None) => attempt.predicted(task),
                        _ => None,
                    }
                })
                .filter(|&at| at > clock);
            until = until.min(predicted.unwrap_or(clock));
        }
        until
    }

    /// The most writes in all a slot may be granted while a kill placed by rows is armed: the
    /// first lane's one worker on the clock's schedule is held at the kill's row, so the kill
    /// lands there whatever the machine's load. Someone else's job reads no grants, and two
    /// workers share the rows: those run on, and the kill lands where it lands.
    /// A server restart placed by rows holds it the same way, at the restart's row.
    pub(super) fn rows_cap(&self, lane: usize, slot: usize) -> u64 {
        let (kill, restart) = (self.triggers.rows_kill(), self.triggers.server_restart());
        if kill.is_none() && restart.is_none() {
            return u64::MAX;
        }
        match self.rows_worker() {
            Some(held) if lane == 0 && slot == held => {
                let attempt = &self.lanes[0].attempts()[slot];
                let allowed = |k: Option<crate::engine::triggers::RowsKill>| {
                    k.map_or(u64::MAX, |k| k.writes_allowed(attempt.need, attempt.writes))
                };
                allowed(kill).min(allowed(restart))
            }
            _ => u64::MAX,
        }
    }

    /// The moment of the write a server restart placed by rows waits for: the first lane's
    /// held worker's last write allowed (`rows_cap`), while the restart is still to come and
    /// that worker runs on the clock's schedule (dead, stopped, hung or in a long item's work,
    /// it holds nothing: its restart, its pause's end or its steps come first).
    pub(super) fn server_restart_moment(&self) -> Option<f64> {
        self.triggers.server_restart()?;
        let held = self.rows_worker()?;
        let attempt = &self.lanes[0].attempts()[held];
        if !self.lanes[0].scheduled(held) || attempt.working() {
            return None;
        }
        let cap = self.rows_cap(0, held);
        (cap != u64::MAX).then(|| attempt.done_at(cap.max(attempt.writes)))
    }

    /// Whether every write granted to a running worker on the clock's schedule, in any lane,
    /// has been heard and the worker has asked for its next (one the clock has given up
    /// waiting for aside): what a server restart placed by rows waits for besides its own row.
    /// Asked, each worker waits on its grant, doing nothing with the server, so what it was
    /// doing when the server went is the same on every run (guarded's lost connection was
    /// once `reading the checkpoints`, once `writing rows`, at load 20).
    pub(super) fn grants_heard(&self) -> bool {
        (self.lanes.iter())
            .flat_map(|l| l.slots().iter().zip(l.attempts()))
            .filter(|(slot, a)| {
                slot.is_live() && slot.state() == SlotState::Running && a.paced() && !a.working()
            })
            .all(|(_, a)| (a.writes >= a.granted && a.need > a.writes) || a.given_up_on())
    }

    /// The first lane's one worker slot on the clock's schedule (reclaim's own worker, not the
    /// relay), when it has exactly one.
    pub(super) fn rows_worker(&self) -> Option<usize> {
        let lane = self.lanes.first()?;
        // A lane whose kills hit one worker: the worker the armed kill is for.
        if self.kills_one_worker() {
            return self.victim.filter(|&slot| lane.on_schedule(slot));
        }
        let mut slots = (0..lane.slots().len()).filter(|&s| lane.on_schedule(s));
        match (slots.next(), slots.next()) {
            (Some(slot), None) => Some(slot),
            _ => None,
        }
    }

    /// Tells every running worker how many writes its moments have come for.
    pub(super) fn grant(&mut self) {
        self.grant_to(self.grant_until());
    }

    /// Grants the writes due by `clock` (none past it).
    pub(super) fn grant_to(&mut self, clock: f64) {
        if self.grants_held {
            return;
        }
        let exact = self.exact;
        let held = self
            .rows_worker()
            .map(|slot| (slot, self.rows_cap(0, slot)));
        for (l, lane) in self.lanes.iter_mut().enumerate() {
            let lockstep = lane.lockstep();
            let clock = lockstep.map_or(clock, |(next, _)| next.min(clock));
            let one_at_a_time = lane.grants_one_write_at_a_time();
            for s in 0..lane.slots().len() {
                // In lockstep, only the slot whose turn it is: the others wait at their moment.
                if lockstep.is_some_and(|(_, turn)| turn.is_some_and(|t| t != s))
                    && lane.scheduled(s)
                {
                    continue;
                }
                let (slots, attempts) = lane.slots_and_attempts_mut();
                let (slot, attempt) = (&mut slots[s], &mut attempts[s]);
                if !(slot.is_live() && slot.state() == SlotState::Running) {
                    continue;
                }
                let cap = match held {
                    Some((held, cap)) if l == 0 && s == held => cap,
                    _ => u64::MAX,
                };
                // In the long item's work: its steps as their ends come, and no later write
                // (the schedule goes on from the work's end, not known to the writes yet).
                if attempt.working() {
                    if let Some(steps) = attempt.steps_to_grant(clock) {
                        slot.tell(&StepGrant { steps }.to_string());
                    }
                    continue;
                }
                let upto = grant_upto(attempt, clock, cap, (one_at_a_time, exact));
                if upto > attempt.granted {
                    attempt.granted = upto;
                    let at = attempt.moment_of(upto).map(Moment);
                    slot.tell(&Grant { upto, at }.to_string());
                }
            }
        }
    }
}

/// The writes in all `attempt` may have made by `clock`, within `cap`: `one_at_a_time` (a lane
/// whose writes go one at a time: `Lane::grants_one_write_at_a_time`), only up to the write
/// the worker has asked for.
///
/// Looked at exactly (`exact`), a worker that has not asked for its next write is granted
/// nothing yet: the moment before that write is looked at first (a restarted worker's first
/// grant went with its start, and the seconds between its restart and its first write were
/// never looked at whole).
pub(super) fn grant_upto(
    attempt: &Attempt,
    clock: f64,
    cap: u64,
    (one_at_a_time, exact): (bool, bool),
) -> u64 {
    if exact && attempt.paced() && attempt.need <= attempt.writes {
        return attempt.granted;
    }
    let upto = (attempt.grantable(clock))
        .max(attempt.crash_grant(clock).unwrap_or(0))
        .min(cap);
    if one_at_a_time && attempt.paced() {
        upto.min(attempt.need)
    } else {
        upto
    }
}
