//! The sentences a report says, each made from its figures when printed: the verdict beside
//! the claim, the lessons, why the job never completed, what never fired, the notes on the
//! queue, the vendor's verdict, the timeline's lines.

use super::RunReport;
use super::report::TIMELINE_KEPT;
use crate::base::text::{count, escape_controls};
use crate::verdict::claim_line;

/// What a lane's vendor verdict says when every task's message arrived once.
pub const MESSAGES_OK: &str = "messages ok: every task's message arrived once";

/// What a job seen committing a checkpoint before its row (`key`'s) risks: a kill between the
/// two loses that item on a resume that trusts the checkpoint. Seen, it is wrong: no kill needs
/// to land there to show the danger is real.
#[must_use]
pub fn checkpoint_first(key: &str) -> String {
    format!(
        "the job commits a checkpoint before its row (seen: {} had its checkpoint and no row): a kill between the two loses that item on a resume that trusts the checkpoint",
        escape_controls(key)
    )
}

impl RunReport {
    /// The claim beside the rows' verdict: `claimed=ok derived=DATA WRONG (...)`; someone
    /// else's last line quoted, so it reads as their words.
    #[must_use]
    pub fn verdict(&self) -> String {
        let derived = self.derived();
        if self.is_job() {
            format!(
                "claimed {:?} derived={derived}",
                self.claimed_words.as_deref().unwrap_or("(no output)")
            )
        } else {
            claim_line(self.claimed_words.as_deref(), derived)
        }
    }

    /// The claim as `--json` writes `claimed_status`: the worker's words, or `none`.
    #[must_use]
    pub fn claimed_status(&self) -> &str {
        self.claimed_words.as_deref().unwrap_or("none")
    }

    /// What a failure means, from the postmortem's symptom table.
    #[must_use]
    pub fn lessons(&self) -> Vec<String> {
        let mut lessons = crate::verdict::lessons(
            self.inspection.duplicated_task_ids,
            self.inspection.extra_rows,
            &self.symptoms(),
        );
        if self.inspection.duplicated_task_ids > 0 && !self.answers_lost.is_empty() {
            lessons.push(format!(
                "{} ({}): a write made again after a lost answer may have committed already; make it idempotent (a unique key, ON CONFLICT DO NOTHING)",
                crate::base::text::count(self.answers_lost.len() as u64, "answer lost", "answers lost"),
                self.lost_keys()
            ));
        }
        // Twice-written keys where the one fault the night made was a pause: no kill, no lost
        // answer. Whether the job holds its items by a lease reclaim cannot see: said as a
        // condition.
        if self.inspection.duplicated_task_ids > 0
            && self.pauses.landed > 0
            && self.kills == 0
            && self.answers_lost.is_empty()
            && self
                .strategy
                .is_none_or(crate::worker::Strategy::claims_items)
        {
            lessons.push(format!(
                "{} and no kill, yet {} written twice: where items are held by a lease (or a lock's timeout), a worker stopped past it wakes believing it still holds its item, and writes what another has taken over; fence the write with the lease's number, checked in the row's transaction (or a unique key)",
                crate::base::text::count(u64::from(self.pauses.landed), "pause landed", "pauses landed"),
                crate::base::text::count(self.inspection.duplicated_task_ids, "task id", "task ids"),
            ));
        }
        lessons
    }

    /// The keys of the commits whose answers were lost, as the report names them.
    #[must_use]
    pub fn lost_keys(&self) -> String {
        let keys: Vec<String> = (self.answers_lost.iter())
            .map(|lost| match lost.keys.as_slice() {
                [] => format!("row {}", lost.rows),
                keys => crate::base::text::escape_controls(&keys.join(", ")),
            })
            .collect();
        keys.join("; ")
    }

    /// The planned lost answers that never happened, in words: no commit brought the rows to
    /// them, or no commit brought a planned task's row in while the proxy looked.
    #[must_use]
    pub fn answers_never_lost(&self) -> Vec<String> {
        let by_rows = (self.answers_planned.iter().copied())
            .filter(|&p| {
                !(self.answers_lost.iter())
                    .any(|lost| lost.planned <= p && p <= lost.rows)
            })
            .map(|p| {
                format!("the answer at row {p} was never lost: no commit brought the rows to {p} while the proxy looked")
            });
        let by_key = (self.answers_planned_keys.iter())
            .filter(|&key| !(self.answers_lost.iter()).any(|lost| lost.at_keys.contains(key)))
            .map(|key| {
                let key = crate::base::text::escape_controls(key);
                format!("the answer to {key}'s commit was never lost: no commit brought its row in while the proxy looked")
            });
        by_rows.chain(by_key).collect()
    }

    /// Whether any lost answer was planned, by rows or by task.
    #[must_use]
    pub fn answers_were_planned(&self) -> bool {
        !self.answers_planned.is_empty() || !self.answers_planned_keys.is_empty()
    }

    /// Why the job never completed, when it did not: the night gave up on it, or the
    /// supervisor ran out of restarts (and how its attempts ended).
    #[must_use]
    pub fn never_completed(&self) -> Option<String> {
        if self.completed {
            return None;
        }
        if let Some(reason) = &self.gave_up_why {
            return Some(format!("the job never completed: {reason}"));
        }
        // Only the host's kills are kills: an attempt that died on its own is said so.
        let how = match (self.kills, self.deaths_on_its_own) {
            (0, 0) => "no attempt finished".to_string(),
            (_, 0) => "every attempt was killed before it finished".to_string(),
            (0, _) => "every attempt died on its own before it finished".to_string(),
            (kills, own) => format!(
                "{} by the host and {own} died on their own before finishing",
                count(
                    u64::from(kills),
                    "attempt was killed",
                    "attempts were killed"
                )
            ),
        };
        Some(format!(
            "the job never completed: the supervisor gave up after {} restarts, its limit: {how}",
            self.restarts
        ))
    }

    /// Each kill the plan asked for that never fired, in a sentence (empty when all did).
    #[must_use]
    pub fn not_fired(&self) -> Vec<String> {
        self.unfired.iter().map(super::Unfired::said).collect()
    }

    /// Of `not_fired`, those that leave the night untested (random kills that found the job
    /// finished after some of them fired do not: the plan was at most N).
    #[must_use]
    pub fn not_fired_gaps(&self) -> Vec<String> {
        (self.unfired.iter())
            .filter(|u| u.leaves_untested())
            .map(super::Unfired::said)
            .collect()
    }

    /// What the verdict rests on beside the rows: keys outside the queue (and the options that
    /// name a job's keys), a judgement by counts alone.
    #[must_use]
    pub fn queue_notes(&self) -> Vec<String> {
        self.inspection.queue_notes()
    }

    /// The receiving end's verdict in a sentence (`None` for a lane that reaches no vendor):
    /// said whenever a vendor was reached, right or wrong, never left blank.
    #[must_use]
    pub fn messages_verdict(&self) -> Option<String> {
        self.messages.map(|m| {
            if m.received == 0 && m.missing > 0 {
                return "messages WRONG: no message arrived at the vendor (does the job send to RECLAIM_VENDOR_URL?)".to_string();
            }
            crate::verdict::messages_verdict(m.duplicated, m.missing, m.outside)
                .unwrap_or_else(|| MESSAGES_OK.to_string())
        })
    }

    /// The timeline's lines as the night printed them, a line naming the cut where entries
    /// were left out.
    #[must_use]
    pub fn timeline_lines(&self) -> Vec<String> {
        let cut = (self.timeline_left_out > 0).then_some(TIMELINE_KEPT / 2);
        let mut lines = Vec::with_capacity(self.timeline.len() + 1);
        for (i, entry) in self.timeline.iter().enumerate() {
            if Some(i) == cut {
                lines.push(format!(
                    "…  {} lines left out (timeline_left_out)  …",
                    self.timeline_left_out
                ));
            }
            lines.push(entry.line(None));
        }
        lines
    }
}
