//! What a finished night showed, as figures: the rows read from the warehouse, the kills and
//! where they landed, the messages at the vendor, the timeline's entries. The sentences made
//! from them are methods (`said`), computed when printed; `json` writes both under the keys
//! `--json` has always had.

use std::collections::BTreeMap;
use std::time::Duration;

use super::not_fired::{self, Unfired};
use crate::engine::{Engine, Entry, KillWindows, Kind, RowsLandings};
use crate::verdict::{Derived, Status, Symptom};
use crate::warehouse::Inspection;
use crate::worker::Strategy;

/// At most this many random kill delays are listed in a report (a plan may hold billions).
pub const KILL_DELAYS_SHOWN: usize = 100;

/// The most timeline lines a report carries.
pub const TIMELINE_KEPT: usize = 2_000;

/// Everything a finished night observed, for one lane: figures, and the few words that are
/// themselves observations (the worker's claim, the keys seen out of order, why the night gave
/// up). Sentences are derived from them (`said`); `--json` writes both (`json`).
#[derive(Debug)]
pub struct RunReport {
    /// Whose worker ran: one of reclaim's strategies, or `None` for the user's own job.
    pub strategy: Option<Strategy>,
    pub seed: u64,
    /// Sim seconds per real second.
    pub scale: f64,
    pub elapsed_ms: u64,
    /// What the rows held once the night was over, read from the warehouse: the verdict's
    /// only source (`derived`).
    pub inspection: Inspection,
    pub completed: bool,
    /// The worker's last line in its own words: reclaim's worker says its status, a job of the
    /// user's says what it says (`None`: it said nothing at its end).
    pub claimed_words: Option<String>,
    /// The rows the worker claims to have written (a job of the user's names a count only if
    /// it says `rows_written=N`).
    pub claimed_rows_written: Option<u64>,
    /// A restarted worker wrote the queue's first item again.
    pub restarted_at_zero: bool,
    pub kills: u32,
    pub restarts: u32,
    /// Attempts that died on their own (not by the host's kills).
    pub deaths_on_its_own: u32,
    /// Why the night gave up on the job, as the engine said it at the time (`None`: it did not,
    /// or the supervisor ran out of restarts).
    pub gave_up_why: Option<String>,
    /// Where each kill landed (window -> count), read from the rows after each kill.
    pub kills_in_window: KillWindows,
    /// The pause planned (`--pause-at`, a scenario's `host.pause_at_task`), if any.
    pub pause_planned: Option<crate::worker::PauseAt>,
    /// The pause an `--exec` job was to get once its table held N rows (`--pause-at-rows`).
    pub pause_rows_planned: Option<crate::worker::PauseAtRows>,
    /// The pauses that landed, and those past a claim worker's lease.
    pub pauses: crate::engine::Pauses,
    /// The row counts at whose commits an answer was to be lost (`--lose-answer-at`).
    pub answers_planned: Vec<u64>,
    /// The keys of the tasks at whose first commit an answer was to be lost
    /// (`--lose-answer-at-task`).
    pub answers_planned_keys: Vec<String>,
    /// The answers lost, each with the rows its commit brought the table to and its keys.
    pub answers_lost: Vec<crate::warehouse::postgres::answers::LostAnswer>,
    /// The key of an item whose checkpoint was seen committed before its row
    /// (`Observer::checkpoint_before_row`).
    pub checkpoint_before_row: Option<String>,
    /// The key of an item whose row was seen committed before its checkpoint
    /// (`Observer::row_before_checkpoint`).
    pub row_before_checkpoint: Option<String>,
    /// Workers that had started before the first one finished: 2 or more means they ran at once.
    pub started_before_first_done: u64,
    /// The first delays of the random kills (at most `KILL_DELAYS_SHOWN`), in the order used.
    pub kill_delays_ms: Vec<u64>,
    /// How many random kills were planned (`--kills`): `kill_delays_ms` lists only the first.
    pub kills_planned: u32,
    /// `--kill-rows`: the first random kills' rows since their spawn, in the order used (`None`
    /// for kills placed by time).
    pub kill_rows_planned: Option<Vec<u64>>,
    /// `--kill-rows`: where those kills landed, read from the rows after each reap.
    pub kill_rows_landed: Option<RowsLandings>,
    /// `--kill-at-rows`: the rows seen when the kill was sent, and the rows once it landed.
    pub kill_at_rows: Option<(u64, u64)>,
    /// What the plan asked for and never happened (empty when all did).
    pub unfired: Vec<Unfired>,
    /// The crash points an external job announced, and how often.
    pub points_announced: BTreeMap<String, u64>,
    /// Kills that landed after a point of the job's own naming, by that point.
    pub kills_after_points: BTreeMap<String, u32>,
    /// The messages at the vendor, read from its own database (`None` for a lane that reaches
    /// no vendor).
    pub messages: Option<crate::fake_vendor::Counts>,
    /// The lane's timeline, its first and last `TIMELINE_KEPT / 2` entries when longer (a
    /// 100,000-kill night printed 352,317 lines).
    pub timeline: Vec<Entry>,
    /// How many timeline entries were left out of `timeline` (0 when it is whole).
    pub timeline_left_out: u64,
    /// `--compare`: the tables' final state against the undisturbed night's (`None`: not
    /// compared). Set by the command once the night is over.
    pub state: Option<crate::verdict::compare::Comparison>,
}

impl RunReport {
    /// Lane `index`'s report at the end of the night: its rows (`inspection`), its messages at
    /// the vendor, and what the engine saw.
    pub(super) fn of_lane(
        engine: &Engine,
        index: usize,
        inspection: Inspection,
        messages: Option<crate::fake_vendor::Counts>,
        elapsed: Duration,
    ) -> Self {
        let lane = &engine.lanes()[index];
        // The plan the engine ran by: the one copy of it, so the report cannot describe another.
        let plan = &engine.config().kills;
        let first_lane = index == 0;
        let lane_entries = || {
            (engine.timeline().iter()).filter(move |e| e.lane == Some(index) || e.lane.is_none())
        };
        let mut entries: Vec<&Entry> = lane_entries().collect();
        // In the order the night printed them (`InOrder`): by second, then lane and slot, stably.
        entries.sort_by_key(|e| (e.sim.second(), e.lane, e.slot.unwrap_or(0)));
        let (timeline, timeline_left_out) = bounded(entries.into_iter().cloned());
        let is_job = lane.config().worker.job().is_some();
        Self {
            strategy: lane.config().worker.strategy(),
            seed: plan.seed,
            scale: engine.config().scale,
            elapsed_ms: elapsed.as_millis() as u64,
            completed: lane.completed(),
            claimed_words: lane.claimed().map(|c| c.status.clone()),
            // Someone else's job names a count only if it says `rows_written=N`.
            claimed_rows_written: lane.claimed().and_then(|c| {
                if is_job {
                    crate::engine::claimed_rows(&c.status)
                } else {
                    Some(c.rows_written)
                }
            }),
            restarted_at_zero: lane.restarted_at_zero(),
            kills: lane.kills(),
            restarts: lane.restarts(),
            deaths_on_its_own: lane.deaths_on_its_own(),
            gave_up_why: lane.gave_up_why().map(str::to_string),
            kills_in_window: lane.kills_in_window(),
            pause_planned: lane.config().pause_at,
            pause_rows_planned: lane.config().pause_at_rows,
            pauses: lane.pauses(),
            answers_planned: lane.config().lose_answers.clone(),
            answers_planned_keys: lane.config().answer_plan().keys,
            answers_lost: lane.lost_answers(),
            checkpoint_before_row: lane.observer().checkpoint_before_row.clone(),
            row_before_checkpoint: lane.observer().row_before_checkpoint.clone(),
            started_before_first_done: lane_entries()
                .take_while(|e| e.kind != Kind::Done)
                .filter(|e| e.kind == Kind::Start)
                .count() as u64,
            kill_delays_ms: (plan.first_delays(KILL_DELAYS_SHOWN).iter())
                .map(|d| d.as_millis() as u64)
                .collect(),
            kills_planned: plan.random,
            // Kills placed by rows, and a kill at a row count, watch the first lane.
            kill_rows_planned: (plan.rows.filter(|_| first_lane))
                .map(|_| plan.first_rows(KILL_DELAYS_SHOWN)),
            kill_rows_landed: (plan.rows.filter(|_| first_lane))
                .map(|_| engine.rows_landings().clone()),
            kill_at_rows: engine.kill_at_rows().filter(|_| first_lane),
            unfired: lane_unfired(engine, index, inspection.rows),
            points_announced: lane.points().announced().clone(),
            kills_after_points: lane.points().kills_after().clone(),
            messages,
            timeline,
            timeline_left_out,
            inspection,
            state: None,
        }
    }

    /// The verdict of the rows: once the job has ended, a key still missing is work lost.
    #[must_use]
    pub fn derived(&self) -> Derived {
        let derived = self.inspection.derived();
        if self.completed {
            derived.once_ended()
        } else {
            derived
        }
    }

    /// The status `derived` names.
    #[must_use]
    pub fn derived_status(&self) -> Status {
        self.derived().status()
    }

    /// The postmortem's symptoms this night shows.
    #[must_use]
    pub fn symptoms(&self) -> Vec<Symptom> {
        // Someone else's job claims success in its own words; a last line that says ok (`ok`,
        // `status=ok`) is the claim the symptom table is about.
        let words = self.claimed_words.as_deref();
        let claimed_ok = if self.is_job() {
            words
                .filter(|line| crate::verdict::says_ok(line))
                .map(|_| "ok")
        } else {
            words
        };
        Symptom::observed(
            (self.inspection.rows, self.inspection.items),
            self.derived(),
            self.restarted_at_zero,
            claimed_ok,
        )
    }

    /// The worker is the user's own job, not one of reclaim's strategies.
    #[must_use]
    pub fn is_job(&self) -> bool {
        self.strategy.is_none()
    }

    /// Distinct `run_id` values among the rows: how many worker processes wrote any (`None` for
    /// someone else's job, whose rows carry no run id).
    #[must_use]
    pub fn runs(&self) -> Option<u64> {
        self.strategy.map(|_| self.inspection.runs)
    }

    /// The messages at the vendor are right (or there is no vendor).
    #[must_use]
    pub fn messages_hold(&self) -> bool {
        self.messages
            .is_none_or(|m| m.duplicated == 0 && m.missing == 0 && m.outside == 0)
    }

    /// The job completed, its rows are right, and so are its messages (if it sends any).
    #[must_use]
    pub fn holds(&self) -> bool {
        self.completed && self.derived().is_ok() && self.messages_hold()
    }
}

/// `items`, its first and last `TIMELINE_KEPT / 2` when longer; and how many were left out.
fn bounded<T>(items: impl ExactSizeIterator<Item = T>) -> (Vec<T>, u64) {
    let total = items.len();
    if total <= TIMELINE_KEPT {
        return (items.collect(), 0);
    }
    let half = TIMELINE_KEPT / 2;
    let left_out = total - 2 * half;
    let kept = (items.enumerate())
        .filter(|(i, _)| *i < half || *i >= total - half)
        .map(|(_, item)| item)
        .collect();
    (kept, left_out as u64)
}

/// What lane `index` planned and never did: the plan's kills (the plan watches the first lane)
/// and an own job's crash point.
fn lane_unfired(engine: &Engine, index: usize, rows: u64) -> Vec<Unfired> {
    let lane = &engine.lanes()[index];
    let planned = if index == 0 {
        not_fired::not_fired(
            engine.fired(),
            &lane.config().queue(),
            rows,
            lane.completed(),
        )
    } else {
        Vec::new()
    };
    (planned.into_iter())
        .chain(not_fired::crash_not_fired(lane))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{TIMELINE_KEPT, bounded};

    #[test]
    fn a_long_timeline_keeps_its_ends() {
        let (kept, left_out) = bounded(0..TIMELINE_KEPT + 5);
        assert_eq!(left_out, 5);
        assert_eq!(kept.len(), TIMELINE_KEPT);
        assert_eq!(kept[TIMELINE_KEPT / 2 - 1], TIMELINE_KEPT / 2 - 1);
        assert_eq!(kept[TIMELINE_KEPT / 2], TIMELINE_KEPT / 2 + 5);
        let (whole, none) = bounded(0..TIMELINE_KEPT);
        assert_eq!((whole.len(), none), (TIMELINE_KEPT, 0));
    }
}
