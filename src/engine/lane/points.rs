//! The crash points someone else's job announces (`points`): how many of each, the newest per
//! slot (where a kill landing now would land), and the planned crash, due the moment its point
//! is read.

use std::collections::BTreeMap;

use crate::engine::window::KillWindow;
use crate::worker::protocol::points::{CrashPlan, MAX_NAMES, Point};

/// A lane's points, as its job announced them.
#[derive(Debug, Default)]
pub struct JobPoints {
    /// Each point's name and how many times it was reached.
    announced: BTreeMap<String, u64>,
    /// Kills that landed after a point of the job's own naming (one no window of reclaim's
    /// covers), by that point.
    kills_after: BTreeMap<String, u32>,
    /// The newest point each slot's current attempt reached.
    newest: Vec<Option<String>>,
    /// The planned crash has been carried out.
    crash_fired: bool,
    crash_due: bool,
    crash_landing: bool,
}

impl JobPoints {
    /// Each point's name and how many times it was reached.
    #[must_use]
    pub fn announced(&self) -> &BTreeMap<String, u64> {
        &self.announced
    }

    /// Kills that landed after a point of the job's own naming, by that point.
    #[must_use]
    pub fn kills_after(&self) -> &BTreeMap<String, u32> {
        &self.kills_after
    }

    /// The planned crash `plan`, when it never happened, in a sentence saying why: the job
    /// never announced that point in that unit of work (or no such point at all).
    #[must_use]
    pub fn not_fired(&self, plan: &CrashPlan) -> Option<String> {
        if self.crash_fired {
            return None;
        }
        let why = if self.announced.contains_key(&plan.point) {
            "the job announced that point, never in that unit of work on its first attempt"
        } else if self.announced.is_empty() {
            "the job announced no crash point at all (see examples/reclaim_point.py)"
        } else {
            "the job never announced a point of that name"
        };
        Some(format!("the crash at {plan} never fired: {why}"))
    }

    /// A slot's new attempt has reached no point yet.
    pub(super) fn spawning(&mut self, slot: usize) {
        self.spawned(slot);
        self.newest[slot] = None;
    }

    /// Makes room for `slot`.
    fn spawned(&mut self, slot: usize) {
        if self.newest.len() <= slot {
            self.newest.resize(slot + 1, None);
        }
    }

    /// A point heard from `slot`; whether it is the planned crash (on its first attempt).
    pub(super) fn heard(
        &mut self,
        slot: usize,
        point: &Point,
        plan: Option<&CrashPlan>,
        first_attempt: bool,
    ) -> bool {
        if self.announced.len() < MAX_NAMES || self.announced.contains_key(&point.name) {
            *self.announced.entry(point.name.clone()).or_default() += 1;
        }
        self.spawned(slot);
        self.newest[slot] = Some(point.name.clone());
        let crash = first_attempt && !self.crash_fired && plan.is_some_and(|p| p.is(point));
        if crash {
            self.crash_fired = true;
            self.crash_due = true;
        }
        crash
    }

    /// The crash is due now (once); the kill that follows is the crash's.
    pub(super) fn take_crash_due(&mut self) -> bool {
        let due = std::mem::take(&mut self.crash_due);
        self.crash_landing |= due;
        due
    }

    /// The kill being placed is the planned crash's (once).
    pub(super) fn crash_landing(&mut self) -> bool {
        std::mem::take(&mut self.crash_landing)
    }

    /// Where a kill of these slots landed, from the newest point any of them reached: one of
    /// reclaim's windows, or a point of the job's own (counted in `kills_after`, `None` back:
    /// the caller places it from the rows and checkpoints).
    /// `Err(())` when none of them announced a point.
    pub(super) fn place(
        &mut self,
        slots: &[usize],
        committed: bool,
    ) -> Result<Option<KillWindow>, ()> {
        let newest = slots
            .iter()
            .find_map(|&s| self.newest.get(s).cloned().flatten())
            .ok_or(())?;
        Ok(match newest.as_str() {
            "after-row-commit" => Some(KillWindow::AfterRowCommit),
            "after-commit" | "after-heartbeat" => Some(KillWindow::AfterCommit),
            "after-send" => Some(KillWindow::AfterSend),
            "before-write" if committed => Some(KillWindow::AfterCommit),
            "before-write" => Some(KillWindow::BeforeAnyCommit),
            other => {
                if self.kills_after.len() < MAX_NAMES || self.kills_after.contains_key(other) {
                    *self.kills_after.entry(other.to_string()).or_default() += 1;
                }
                None
            }
        })
    }
}
