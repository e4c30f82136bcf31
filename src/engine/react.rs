//! What one tick reacts to, in order: the workers' lines, their exits (reaped at once), the
//! rows and heartbeats, the plan's triggers, and the restarts that are due.

use std::time::{Instant, SystemTime};

use super::{Attempt, Engine, EngineError, HostAction, Kind, Output, SlotState, Source};

impl Engine {
    pub(super) fn drain_output(&mut self, now: Instant) {
        for output in std::mem::take(&mut self.early) {
            self.handle_output(now, output);
        }
        while let Ok(output) = self.output_rx.try_recv() {
            self.handle_output(now, output);
        }
    }

    pub(super) fn handle_output(&mut self, now: Instant, output: Output) {
        let Output {
            lane,
            slot,
            attempt,
            stderr,
            line,
            at: _,
        } = output;
        // reclaim's own protocol is progress; someone else's job's output is not.
        if self.lanes[lane].config().worker.job().is_none() {
            self.lines_heard += 1;
        }
        let clock = self.clock.now().0;
        let scale = self.config.scale;
        let (note, wrote) = self.lanes[lane].heard((slot, attempt), stderr, line, (clock, scale));
        // A worker's retry after a lost answer: the host's loss goes first, at its moment.
        if let Some(note) = note
            .as_ref()
            .filter(|n| n.text.starts_with(crate::worker::RETRY))
        {
            self.note_lost_answers_of(now, lane, note.at);
        }
        if let Some(note) = note {
            self.slot_note(now, (lane, slot), note);
        }
        // A job at its planned crash point waits there: the host kills it now, from outside.
        if self.lanes[lane].take_crash_due() {
            self.kill_at(now, clock, Some(lane));
        }
        if lane == 0
            && let Some((last, sim)) = wrote
        {
            self.triggers.wrote(last, sim);
        }
    }

    /// Reaps exited workers at once (so their pids are never signalled again), then handles each
    /// exit once its output has been read to the end: a worker's last lines (its `done`, its
    /// error) belong to the night before its exit does.
    pub(super) fn reap(&mut self, now: Instant) {
        let policy = self.restart_policy();
        for lane in 0..self.lanes.len() {
            for slot in 0..self.lanes[lane].slots().len() {
                self.lanes[lane].slots_mut()[slot].try_reap(now);
                // An external job, or the relay, is not on the clock's schedule: it dies when
                // its death is seen.
                let attempt = self.lanes[lane].attempts()[slot].now();
                let sim = if self.lanes[lane].on_schedule(slot) {
                    attempt
                } else {
                    attempt.max(self.clock.now().0)
                };
                // Seen dead after a server restart: not before it.
                let sim = sim.max(self.server_restarted_at.unwrap_or(f64::MIN));
                if let Some(exit) = self.lanes[lane].slots_mut()[slot].ready_exit(now, sim, policy)
                {
                    // Killed by someone else: what its session had open, if it is still there.
                    if let (
                        Some(watch),
                        crate::supervisor::slot::Exit::Killed { by_host: false, .. },
                    ) = (self.server_watch.as_mut(), &exit)
                    {
                        let pid = self.lanes[lane].slots()[slot].pid();
                        let said = watch.after_death(lane, pid, (now, sim));
                        self.log_watch(now, said);
                    }
                    self.lanes[lane].forget_temp_beat(slot);
                    let notes = self.lanes[lane].exited(slot, &exit, (sim, policy));
                    for note in notes {
                        self.slot_note(now, (lane, slot), note);
                    }
                }
            }
        }
    }

    pub(super) fn observe(&mut self, now: Instant) {
        let wall = SystemTime::now();
        for lane in 0..self.lanes.len() {
            let notes = self.lanes[lane].observe(now);
            let beat = self.lanes[lane].read_heartbeat(
                now,
                wall,
                (&self.clock, &self.absences),
                self.started,
                self.config.dead_man,
            );
            for note in notes.into_iter().chain(beat) {
                self.note(now, lane, note);
            }
        }
        let sim = self.clock.now().0;
        let said = (self.server_watch.as_mut()).map_or_else(Vec::new, |w| w.look(now, sim));
        self.log_watch(now, said);
    }

    /// The PostgreSQL watch's lines, each at the moment it is about (a kill's) or the clock's.
    pub(super) fn log_watch(&mut self, now: Instant, said: Vec<crate::warehouse::Said>) {
        for said in said {
            let kind = if said.error {
                Kind::Error
            } else {
                Kind::Notice
            };
            self.log_at(now, said.at, said.lane, (Source::Runner, kind), said.text);
        }
    }

    pub(super) fn fire_triggers(&mut self, now: Instant, settled: f64) {
        let due = self.triggers.due(self.clock.now().0, settled);
        for (action, at) in due {
            match action {
                HostAction::WipeCheckpoints => {
                    for lane in 0..self.lanes.len() {
                        if let Err(error) = self.wipe_checkpoints(lane, now) {
                            self.log(
                                now,
                                Some(lane),
                                Source::Runner,
                                Kind::Error,
                                error.to_string(),
                            );
                        }
                    }
                }
                HostAction::Hang => (0..self.lanes.len()).for_each(|l| self.hang_lane(l, now)),
                HostAction::Resume => (0..self.lanes.len()).for_each(|l| self.resume_lane(l, now)),
                HostAction::Kill => self.kill_at(now, at, None),
                HostAction::RandomKill => {
                    self.random_kill(now, at);
                }
                HostAction::RestartServer => self.restart_server_at_task(now, at),
            }
        }
    }

    /// What the rows just read set off, at once (as the observer sees them, not a tick later):
    /// `--kill-at-rows`, and, for a first lane running someone else's job (which says nothing
    /// of its writes), a task the plan awaits, written for the plan when the observer first
    /// sees its row while the job runs, at the clock's reading.
    pub(super) fn fire_observed(&mut self, now: Instant) {
        if let Some(first) = self.lanes.first()
            && first.config().worker.job().is_some()
            && first
                .slots()
                .iter()
                .any(|s| s.is_live() && s.state() == SlotState::Running)
        {
            let sim = self.clock.now().0;
            let mut heard = false;
            while let Some(task) = self.triggers.awaited_task()
                && first.observer().has_task(task)
            {
                self.triggers.wrote(task, sim);
                heard = true;
            }
            if heard {
                // The job's row is in: its moment is settled for the first lane, whatever a
                // gated lane beside it still owes at this very moment.
                let settled = self.held_at(now).max(sim + 1e-6);
                self.fire_triggers(now, settled);
            }
        }
        // The vendor holds message N unanswered: the job waits inside its send, before its
        // commit; the host kills it there.
        if self.triggers.awaited_message().is_some()
            && let Some(first) = self.lanes.first()
            && let Some(requests) =
                crate::fake_vendor::Counts::requests(&first.config().vendor_db())
            && self.triggers.kill_at_message_due(requests)
        {
            let sim = self.clock.now().0;
            if let Some(first) = self.lanes.first_mut() {
                first.kill_at_message_is_due();
            }
            self.kill_at(now, sim, None);
            let text = format!(
                "kill at message {requests}: the vendor holds it unanswered, the host kills the job"
            );
            self.log_at(
                now,
                Some(sim),
                Some(0),
                (Source::Runner, Kind::Notice),
                text,
            );
        }
        self.fire_rows_kill(now);
        let seen = self.lanes.first().map_or(0, |l| l.observer().rows);
        if self.triggers.kill_at_rows_due(seen) {
            // At the first lane's present: a gated worker may have written a little ahead of
            // the clock, and the kill comes after what it wrote.
            let sim = self.first_lane_present();
            self.kill_at(now, sim, None);
            // host_kill read the rows again after the reap: the dead write nothing more.
            let landed = self.lanes.first().map_or(seen, |l| l.observer().rows);
            self.kill_at_rows = Some((seen, landed));
            let asked = self.config.kills.at_rows.unwrap_or(seen);
            let text = format!(
                "kill at {asked} rows: sent when the table held {seen}, landed with {landed} rows"
            );
            self.log_at(
                now,
                Some(sim),
                Some(0),
                (Source::Runner, Kind::Notice),
                text,
            );
        }
        self.pause_at_rows(now);
        self.fire_server_restart(now);
    }

    /// `--restart-server-at-rows`: due once the first lane's table holds its rows. reclaim's
    /// own one worker is held at that row (`rows_cap`) and the restart waits until every write
    /// granted has been heard, so it lands after the same write on every run.
    fn fire_server_restart(&mut self, now: Instant) {
        if self.triggers.server_restart().is_none() {
            return;
        }
        let held = self
            .rows_worker()
            .filter(|&slot| self.lanes[0].slots()[slot].is_live());
        let writes = held.map_or(0, |slot| self.lanes[0].attempts()[slot].writes);
        if held.is_some_and(|slot| writes < self.lanes[0].attempts()[slot].granted)
            || (held.is_some() && !self.grants_heard())
        {
            return;
        }
        let seen = self.lanes.first().map_or(0, |l| l.observer().rows);
        if self.triggers.server_restart_due(writes, seen) {
            self.restart_server(now, seen);
        } else if held.is_some() {
            self.grant();
        }
    }

    /// The first lane's present: the clock's reading, or later where a gated worker of that
    /// lane wrote ahead of it (a host action placed by its rows comes after what it wrote).
    fn first_lane_present(&self) -> f64 {
        (self.lanes.first().into_iter())
            .flat_map(|l| l.attempts().iter().map(Attempt::now))
            .fold(self.clock.now().0, f64::max)
    }

    /// `--restart-server-at-rows`: the private cluster restarted at the planned rows, at the
    /// first lane's present or the clock's, whichever is later (the clock waits at the held
    /// write's moment, so it is that write's on every run).
    fn restart_server(&mut self, now: Instant, seen: u64) {
        let at_rows = self.config.restart_server_at_rows.unwrap_or(seen);
        let sim = self.first_lane_present();
        let when = format!("at {at_rows} rows (the table held {seen})");
        if self.planned_restart((now, sim), &when) {
            self.triggers.server_restarted();
        }
    }

    /// A planned server restart carried out: whether `pg_ctl` restarted it (only then is the
    /// plan fired; a failure is on the timeline). On a night with no server of reclaim's own
    /// (refused before the night wherever it can be known) it is said not to have happened.
    fn planned_restart(&mut self, (now, sim): (Instant, f64), when: &str) -> bool {
        if let Some(restarted) = self.restart_server_now((now, sim), when) {
            return restarted;
        }
        let text = format!(
            "the server restart planned {when} did not happen: this night has no server of reclaim's own"
        );
        self.log_at(now, Some(sim), None, (Source::Runner, Kind::Error), text);
        false
    }

    /// `--restart-server-at-task`: the private cluster restarted at the moment of the first
    /// lane's commit of the task (the trigger fires once every write up to it is in). The rows
    /// are not said: the last poll may not have read that commit yet.
    fn restart_server_at_task(&mut self, now: Instant, at: f64) {
        let Some(task) = self.config.restart_server_at_task else {
            return;
        };
        let key = self.lanes.first().map_or_else(
            || crate::task::task_id(task),
            |lane| lane.config().task_key(task),
        );
        let when = format!(
            "right after {}'s commit",
            crate::base::text::escape_controls(&key)
        );
        if self.planned_restart((now, at), &when) {
            self.triggers.server_restarted_at_task();
        }
    }

    /// The dashboard's `D`: the private cluster restarted now, by hand, at the clock's reading
    /// (or the first lane's present, if a gated worker wrote ahead of it). `false` on a night
    /// with no server of reclaim's own (SQLite, a server of the user's).
    pub fn restart_server_by_hand(&mut self, now: Instant) -> bool {
        let seen = self.lanes.first().map_or(0, |l| l.observer().rows);
        let sim = self.first_lane_present();
        let when = format!("by hand (the first lane's table held {seen})");
        self.restart_server_now((now, sim), &when).is_some()
    }

    /// The private cluster restarted at once (`when` says at what: planned rows, or by hand),
    /// the night's clock held while `pg_ctl` works (its stop and start take real time the night
    /// must not count); what the workers and the server then do is theirs, said as they do it.
    /// Whether `pg_ctl` restarted it (a failure is on the timeline); `None`, and nothing done,
    /// on a night with no server of reclaim's own.
    fn restart_server_now(&mut self, (now, sim): (Instant, f64), when: &str) -> Option<bool> {
        let how = self.config.warehouse().restarter().cloned()?;
        self.server_restarted_at = Some(sim);
        if let Some(watch) = self.server_watch.as_mut() {
            watch.host_restarted(sim);
        }
        let text = format!(
            "host restarts the server {when}: pg_ctl restart -m immediate, every session ended, any transaction still open rolled back"
        );
        self.log_at(now, Some(sim), None, (Source::Runner, Kind::Notice), text);
        let held = self.paused_at.is_none() && !self.frozen;
        if held {
            self.clock.pause(now);
        }
        let restarted = how.restart();
        if held {
            self.clock.resume(Instant::now());
        }
        // What the server shows of it, said beside the host's line before any death it caused
        // is heard: the same order on every run.
        if restarted.is_ok()
            && let Some(watch) = self.server_watch.as_mut()
        {
            let said = watch.look(Instant::now(), sim);
            self.log_watch(now, said);
        }
        let ok = restarted.is_ok();
        if let Err(why) = restarted {
            self.log_at(
                Instant::now(),
                Some(sim),
                None,
                (Source::Runner, Kind::Error),
                format!("the server restart failed: {why}"),
            );
        }
        Some(ok)
    }

    /// `--pause-at-rows`: each lane whose table now holds its planned rows has its job
    /// stopped (`Lane::pause_at_rows_due`).
    pub(super) fn pause_at_rows(&mut self, now: Instant) {
        let clock = self.clock.now().0;
        for lane in 0..self.lanes.len() {
            if let Some(note) = self.lanes[lane].pause_at_rows_due(clock) {
                self.note(now, lane, note);
            }
        }
    }

    pub(super) fn restart_due(&mut self, now: Instant) -> Result<(), EngineError> {
        let policy = self.restart_policy();
        let mut spawns = Vec::new();
        for lane in 0..self.lanes.len() {
            let (due, notes) = self.lanes[lane].due_restarts(self.clock.now().0, policy);
            self.notes(now, lane, notes);
            spawns.extend(due.into_iter().map(|(slot, at)| (lane, slot, at)));
        }
        // Armed before the spawns: a kill placed by rows bounds the new worker's first grant.
        if let Some(&(_, _, at)) = spawns.last() {
            let spawning: Vec<usize> = (spawns.iter())
                .filter(|&&(lane, _, _)| lane == 0)
                .map(|&(_, slot, _)| slot)
                .collect();
            self.arm_kill(at, &spawning);
            if !spawning.is_empty() {
                let rows = self.lanes[0].observer().rows;
                self.triggers.server_restart_respawned(rows);
            }
        }
        // The messages of each restart's moment, read before the new attempt can send more.
        let mut read: Vec<usize> = spawns.iter().map(|&(lane, _, _)| lane).collect();
        read.dedup();
        for lane in read {
            self.lanes[lane].read_messages(now, true);
        }
        for (lane, slot, at) in spawns {
            self.spawn(lane, slot, at, now)?;
        }
        Ok(())
    }

    /// `--kill-rows`: the armed kill once the first lane's table holds its rows since the
    /// spawn, at the first lane's present; otherwise the worker's progress, read now, lets
    /// it write on up to the kill's row (granted at once, not a tick later).
    fn fire_rows_kill(&mut self, now: Instant) {
        if self.triggers.rows_kill().is_none() {
            return;
        }
        // An external job whose table holds a row for every item of the queue has nothing left
        // in flight (one that writes its whole queue in one transaction goes from none to all):
        // a kill now would only interrupt a finished job, so none is sent, and the report says
        // the kill never fired.
        if let Some(first) = self.lanes.first()
            && first.config().worker.job().is_some()
            && first.observer().distinct >= first.config().items
        {
            return;
        }
        self.retarget_kill(self.clock.now().0);
        let rows = self.kill_count();
        // reclaim's own worker is held at its kill's row: the kill waits until every write
        // granted has been heard, so its lines (its `start` among them) come before the kill's
        // in the timeline, in the same order on every run, rather than as the pipe was read.
        if let Some(slot) = self.rows_worker()
            && self.lanes[0].slots()[slot].is_live()
            && self.lanes[0].attempts()[slot].writes < self.lanes[0].attempts()[slot].granted
        {
            return;
        }
        let Some(kill) = self.triggers.rows_kill_due(rows) else {
            if let Some(slot) = self.rows_worker() {
                let writes = self.lanes[0].attempts()[slot].writes;
                self.triggers.saw_rows(writes, rows);
                self.grant();
            }
            return;
        };
        let sim = self.first_lane_present();
        // A kill that found every worker finished landed nowhere: no landing to count.
        if !self.random_kill(now, sim) {
            return;
        }
        // host_kill read the rows again after the reap: what the dead attempt left (or, for
        // one worker's kill, the writes it had made).
        let landed = self.kill_count();
        self.rows_landings
            .add(kill.after, landed.saturating_sub(kill.base));
    }
}
