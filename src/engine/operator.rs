//! What the operator and the host do to a night, on top of the loop: kills (the host reclaims
//! the instance), hangs, wiped checkpoints, a second worker, pause, freeze and speed.

use std::time::Instant;

use nix::sys::signal::Signal;

use super::{Engine, EngineError, Fact, Kind, SlotState, Source, StoreError};

impl Engine {
    #[must_use]
    pub fn is_paused(&self) -> bool {
        self.paused_at.is_some()
    }

    /// Whether random kills are armed (the dashboard's toggle).
    #[must_use]
    pub fn random_kills_on(&self) -> bool {
        self.triggers.random_kills_on()
    }

    /// Turns seeded random kills on (without limit) or off.
    pub fn set_random_kills(&mut self, on: bool, _now: Instant) {
        let rows = self.lanes.first().map_or(0, |l| l.observer().rows);
        self.triggers.set_random_kills(on, self.clock.now().0, rows);
    }

    /// SIGSTOPs a lane's workers (alive, no progress), or SIGCONTs them if already hung.
    pub fn toggle_hang(&mut self, lane: usize, now: Instant) {
        let Some(l) = self.lanes.get(lane) else {
            return;
        };
        if l.slot_states().contains(&SlotState::Hung) {
            self.resume_lane(lane, now);
        } else {
            // Stopped by hand wherever it is, perhaps with a write granted and not yet said
            // (a planned hang waits for its moment's writes): a recorded night is looked at by
            // second from here, as after a worker paused by hand.
            self.stop_looking_exactly();
            self.hang_lane(lane, now);
        }
    }

    /// The answers a job's proxy kept from it since the last look, each on the timeline as the
    /// host's doing (`--lose-answer-at`), at the clock's reading. reclaim's own workers' are
    /// said with the worker's retry (`note_lost_answers_of`), whose moment is its write's, or
    /// here once the lane's proxy has stopped (a loss no worker answered), or where its
    /// workers do not retry (`L` on a lane planned without losses: the worker dies of it).
    pub(super) fn note_lost_answers(&mut self, now: Instant) {
        for lane in 0..self.lanes.len() {
            let l = &self.lanes[lane];
            let own = l.config().worker.job().is_none();
            if !own || !l.answers_running() {
                self.note_lost_answers_of(now, lane, None);
            } else if !l.config().retries_writes() {
                // Its worker dies of the loss, that death stamped at its write's moment: the
                // host's line goes at the newest worker's moment, before it.
                let newest = (l.attempts().iter().map(super::Attempt::now)).reduce(f64::max);
                self.note_lost_answers_of(now, lane, newest);
            }
        }
    }

    /// The answers `lane`'s proxy lost since the last look, on the timeline at `at` (the
    /// clock's reading when `None`). A loss is told before its worker can see its connection
    /// close, so a worker's retry finds the loss it answers already told.
    pub(super) fn note_lost_answers_of(&mut self, now: Instant, lane: usize, at: Option<f64>) {
        for lost in self.lanes[lane].take_lost_answers() {
            let text = lost_answer_said(&lost);
            self.log_at(now, at, Some(lane), (Source::Runner, Kind::Notice), text);
        }
    }

    /// A runner's notice about `lane`, with what it says as data (`Entry::fact`).
    fn notice_of(&mut self, now: Instant, lane: usize, text: String, fact: Fact) {
        self.log(now, Some(lane), Source::Runner, Kind::Notice, text);
        if let Some(entry) = self.timeline.last_mut() {
            entry.fact = Some(fact);
        }
    }

    pub(super) fn hang_lane(&mut self, lane: usize, now: Instant) {
        let pids = self.lanes[lane].hang();
        if !pids.is_empty() {
            let text = format!("{} (SIGSTOP, pid {pids}): alive, no progress", super::HUNG);
            self.notice_of(now, lane, text, Fact::Hung);
        }
    }

    pub(super) fn resume_lane(&mut self, lane: usize, now: Instant) {
        let pids = self.lanes[lane].unhang(self.paused_at.is_some());
        // A resumed worker's next write is one pace after the resume, not in the past.
        let sim = self.clock.now().0;
        self.lanes[lane]
            .attempts_mut()
            .iter_mut()
            .for_each(|a| a.rebase(sim));
        if !pids.is_empty() {
            let text = format!("{} (SIGCONT, pid {pids})", super::RESUMED);
            self.notice_of(now, lane, text, Fact::Resumed);
        }
    }

    /// The operator stops one running worker of `lane` (the first, in slot order) for
    /// `HAND_PAUSE_SECS` of the night: wherever it is, holding a lease or not. SIGCONT comes
    /// when the clock gets there.
    pub fn pause_worker(&mut self, lane: usize, now: Instant) {
        self.stop_looking_exactly();
        let clock = self.clock.now().0;
        let Some(l) = self.lanes.get_mut(lane) else {
            return;
        };
        if let Some(note) = l.pause_by_hand(clock + super::HAND_PAUSE_SECS) {
            self.note(now, lane, note);
        }
    }

    /// The operator loses the answer to `lane`'s next commit that brings a row (`L`): its
    /// proxy is told at once, and the loss is said when it happens, as a planned one is.
    /// `false` when the lane's workers reach the server through no proxy of reclaim's.
    pub fn lose_answer_by_hand(&mut self, lane: usize, now: Instant) -> bool {
        let Some(rows) = self
            .lanes
            .get_mut(lane)
            .and_then(super::Lane::lose_answer_by_hand)
        else {
            return false;
        };
        let text = format!(
            "operator asks the proxy to lose the answer to the next commit that brings the rows to {rows}"
        );
        self.log(now, Some(lane), Source::Runner, Kind::Notice, text);
        true
    }

    /// Continues every worker whose planned pause (`--pause-at`) has ended by the clock.
    pub(super) fn end_pauses(&mut self, now: Instant) {
        let clock = self.clock.now().0;
        let night_paused = self.paused_at.is_some();
        for lane in 0..self.lanes.len() {
            let notes = self.lanes[lane].end_pauses(clock, night_paused);
            self.notes(now, lane, notes);
        }
    }

    /// The earliest moment a planned pause ends: the clock stops there, so the SIGCONT lands
    /// between the same two writes at every speed.
    pub(super) fn next_pause_end(&self) -> Option<f64> {
        self.lanes
            .iter()
            .filter_map(super::Lane::pause_ends)
            .reduce(f64::min)
    }

    /// Deletes every checkpoint of a lane's warehouse, as an operator might "to force a rerun".
    pub fn wipe_checkpoints(&mut self, lane: usize, now: Instant) -> Result<usize, StoreError> {
        let db = self.lanes[lane].config().db.clone();
        let deleted = self.lanes[lane].config().warehouse.wipe_checkpoints(&db)?;
        self.lanes[lane].observer_mut().reset_checkpoints();
        self.log(
            now,
            Some(lane),
            Source::Runner,
            Kind::Notice,
            format!("operator deleted every checkpoint ({deleted} rows)"),
        );
        Ok(deleted)
    }

    /// Starts one more worker on a lane's database: duplicate delivery, as an at-least-once
    /// queue would hand the same job to a second consumer.
    pub fn add_worker(&mut self, lane: usize, now: Instant) -> Result<(), EngineError> {
        self.stop_looking_exactly();
        let slot = self.lanes[lane].add_slot();
        // Counted among the workers (a lane's relay has a slot too, but it is not a worker).
        let number = self.lanes[lane].config().workers;
        self.log(
            now,
            Some(lane),
            Source::Runner,
            Kind::Notice,
            format!("a second delivery: worker {number} starts on the same queue"),
        );
        let sim = self.clock.now().0;
        self.spawn(lane, slot, sim, now)
    }

    /// The host reclaims the instance: SIGKILL to every live worker (of one lane, or of all),
    /// reaped at once so that nothing restarts what is still being killed.
    pub fn host_reclaims(&mut self, now: Instant, only_lane: Option<usize>) {
        self.kill_at(now, self.clock.now().0, only_lane);
    }

    /// `host_reclaims` at sim time `sim`.
    pub(super) fn kill_at(&mut self, now: Instant, sim: f64, only_lane: Option<usize>) {
        let policy = self.restart_policy();
        for lane in 0..self.lanes.len() {
            if only_lane.is_none_or(|l| l == lane) {
                if let Some(watch) = self.server_watch.as_mut() {
                    // Stopped first, so the sessions read are as the kill finds them.
                    let slots = self.lanes[lane].slots().iter().filter(|s| s.is_live());
                    let pids: Vec<i32> = slots
                        .map(|s| {
                            s.signal(Signal::SIGSTOP);
                            s.pid()
                        })
                        .collect();
                    let said = watch.before_kill(lane, &pids, (now, sim));
                    self.log_watch(now, said);
                }
                let notes = self.lanes[lane].host_kill(now, sim, policy, None);
                self.notes(now, lane, notes);
            }
        }
    }

    /// SIGSTOPs every live worker and freezes the clock; `resume` undoes it.
    pub fn pause(&mut self, now: Instant) {
        if self.paused_at.is_some() {
            return;
        }
        self.paused_at = Some(now);
        self.clock.pause(now);
        self.each_slot(|slot| slot.signal(Signal::SIGSTOP));
    }

    pub fn resume(&mut self, now: Instant) {
        if self.paused_at.take().is_none() {
            return;
        }
        // Every deadline is a sim time, and the clock was frozen: a pause changes nothing
        // about the night.
        if !self.frozen {
            self.clock.resume(now);
        }
        self.each_slot(|slot| slot.continue_running());
    }

    /// Holds the night still (`true`) or lets it go on: the clock and the grants stop, the
    /// workers are not signalled (a worker stopped inside a transaction would hold its lock
    /// and keep every reader waiting), so each finishes what it was granted and waits.
    pub fn freeze(&mut self, frozen: bool, now: Instant) {
        if frozen == self.frozen {
            return;
        }
        self.frozen = frozen;
        if frozen {
            self.clock.pause(now);
        } else if self.paused_at.is_none() {
            self.clock.resume(now);
        }
    }

    pub(super) fn each_slot(&mut self, mut f: impl FnMut(&mut crate::supervisor::slot::Slot)) {
        for lane in &mut self.lanes {
            lane.slots_mut().iter_mut().for_each(&mut f);
        }
    }

    /// Changes how fast the night is shown. The workers follow the clock through their
    /// grants, so nothing else changes: the same writes at the same sim times.
    pub fn set_speed(&mut self, speed: f64, now: Instant) {
        self.speed = speed;
        self.clock.set_scale(self.config.scale * speed, now);
    }

    /// The clock will stop on each of these moments (seconds after midnight) rather than pass
    /// them within a tick, as it does on every kill and restart: a driver pausing there (a
    /// lecture at a caption's time) shows that second exactly. Changes nothing else.
    pub fn stop_on(&mut self, moments: &[f64], entries: super::StopWhen) {
        self.stops = moments.to_vec();
        self.stop_when = Some(entries);
    }

    #[must_use]
    pub fn speed(&self) -> f64 {
        self.speed
    }
}

/// The host's line for an answer it lost: which commit (by the rows it brought the table to,
/// and its keys when they are known), and what the worker was left not knowing.
fn lost_answer_said(lost: &crate::warehouse::postgres::answers::LostAnswer) -> String {
    let keys = match lost.keys.as_slice() {
        [] => String::new(),
        [one] => format!(" ({})", crate::base::text::escape_controls(one)),
        many => format!(
            " ({}{})",
            crate::base::text::escape_controls(&many[..many.len().min(3)].join(", ")),
            if many.len() > 3 { ", ..." } else { "" }
        ),
    };
    let commit = if lost.at_keys.is_empty() {
        format!("the commit that brought the rows to {}{keys}", lost.rows)
    } else {
        format!(
            "{}'s first commit, which brought the rows to {}",
            crate::base::text::escape_controls(&lost.at_keys.join("'s and ")),
            lost.rows
        )
    };
    format!(
        "host loses the answer to {commit}: committed on the server, its connection closed before the answer reached the worker"
    )
}
