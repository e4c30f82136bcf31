//! How many kills landed in each window (`KillWindow`, beside the crash points in
//! `worker/crash.rs`), read from the database right after each. A random storm that never lands
//! in a strategy's dangerous window proves nothing about it, and these counts are how a report
//! can say so.

use serde::{Deserialize, Serialize};

pub use crate::worker::KillWindow;
use crate::worker::Strategy;

/// How many kills landed in each window; as JSON, `{"before-any-commit": 0, ...}`, every window
/// present so a zero is visible.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[allow(clippy::struct_excessive_bools)] // Reason: independent facts about the night's windows.
pub struct KillWindows {
    #[serde(rename = "before-any-commit")]
    pub before_any_commit: u32,
    #[serde(rename = "after-row-commit")]
    pub after_row_commit: u32,
    #[serde(rename = "after-commit")]
    pub after_commit: u32,
    #[serde(rename = "after-send", default)]
    pub after_send: u32,
    #[serde(rename = "after-relay-send", default)]
    pub after_relay_send: u32,
    /// Kills after a commit of the attempt that could not be placed before or after its
    /// checkpoint: an external job whose checkpoints reclaim was not told of (or never saw).
    #[serde(rename = "after-a-commit-unplaced", default)]
    pub unplaced: u32,
    /// Kills after a checkpoint's commit and before its row's: a job of the user's that commits
    /// its checkpoint first, seen in the rows (a checkpoint with no row, new since the last
    /// kill). That item is lost on a resume that trusts its checkpoint.
    #[serde(rename = "after-checkpoint-commit", default)]
    pub after_checkpoint: u32,
    /// Whether the lane's items reach a vendor before their commit, so `after-send` is a
    /// window of this night at all.
    #[serde(skip)]
    pub sends: bool,
    /// Whether messages leave after their rows commit (an outbox's relay, or a job of the
    /// user's whose design reclaim cannot know), so `after-relay-send` is a window of this night.
    #[serde(skip)]
    pub relays: bool,
    /// `relays` only because reclaim cannot know the design of a job of the user's that reaches
    /// a vendor: `after-relay-send` is then a window only if the job sends after its commits.
    #[serde(skip)]
    pub relays_unknown: bool,
    /// Whether a row can commit before its checkpoint (two-commit, or a job of the user's),
    /// so `after-row-commit` is a window of this night; elsewhere it is `after-commit`.
    #[serde(skip)]
    pub rows_apart: bool,
    /// Some of the `unplaced` kills were so because the checkpoint table's keys are not keys
    /// of the queue (a cursor such as `progress(job, last_done)`, not a checkpoint per key).
    /// In JSON only when so, beside the count it explains.
    #[serde(
        rename = "unplaced-checkpoints-not-keyed",
        default,
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub checkpoints_not_keyed: bool,
}

impl KillWindows {
    pub fn add(&mut self, window: KillWindow) {
        *self.slot(window) += 1;
    }

    #[must_use]
    pub fn get(&self, window: KillWindow) -> u32 {
        match window {
            KillWindow::BeforeAnyCommit => self.before_any_commit,
            KillWindow::AfterRowCommit => self.after_row_commit,
            KillWindow::AfterCommit => self.after_commit,
            KillWindow::AfterSend => self.after_send,
            KillWindow::AfterRelaySend => self.after_relay_send,
        }
    }

    /// Counts a kill after a commit that could not be placed against a checkpoint.
    pub fn add_unplaced(&mut self) {
        self.unplaced += 1;
    }

    fn slot(&mut self, window: KillWindow) -> &mut u32 {
        match window {
            KillWindow::BeforeAnyCommit => &mut self.before_any_commit,
            KillWindow::AfterRowCommit => &mut self.after_row_commit,
            KillWindow::AfterCommit => &mut self.after_commit,
            KillWindow::AfterSend => &mut self.after_send,
            KillWindow::AfterRelaySend => &mut self.after_relay_send,
        }
    }

    /// The sum of two nights' counts.
    #[must_use]
    pub fn plus(mut self, other: Self) -> Self {
        for window in KillWindow::ALL {
            *self.slot(window) += other.get(window);
        }
        self.unplaced += other.unplaced;
        self.after_checkpoint += other.after_checkpoint;
        self.sends |= other.sends;
        self.relays |= other.relays;
        self.relays_unknown |= other.relays_unknown;
        self.rows_apart |= other.rows_apart;
        self.checkpoints_not_keyed |= other.checkpoints_not_keyed;
        self
    }

    /// How many kills landed after their attempt had committed something: the kills with
    /// committed work at stake (every window but before-any-commit).
    #[must_use]
    pub fn after_a_commit(&self) -> u32 {
        KillWindow::ALL
            .into_iter()
            .filter(|&w| w != KillWindow::BeforeAnyCommit)
            .map(|w| self.get(w))
            .sum::<u32>()
            + self.unplaced
            + self.after_checkpoint
    }

    /// The windows of this night that no kill landed in, in order. Only what reclaim could
    /// see: with kills it could not place against a checkpoint, neither after-row-commit nor
    /// after-commit is said to be missed; without a send before the commit, after-send is no
    /// window of this night, nor is after-row-commit where a row commits with its checkpoint or
    /// has none.
    #[must_use]
    pub fn never_hit(&self) -> Vec<KillWindow> {
        KillWindow::ALL
            .into_iter()
            .filter(|&w| self.get(w) == 0)
            .filter(|&w| w != KillWindow::AfterSend || self.sends)
            .filter(|&w| w != KillWindow::AfterRelaySend || self.relays)
            .filter(|&w| w != KillWindow::AfterRowCommit || self.rows_apart)
            .filter(|&w| {
                self.unplaced == 0
                    || !matches!(w, KillWindow::AfterRowCommit | KillWindow::AfterCommit)
            })
            .collect()
    }

    /// What to say beside a PASS of `strategy` when no kill landed in a window that breaks it:
    /// that pass tested nothing about that danger.
    #[must_use]
    pub fn unearned(&self, strategy: Strategy) -> Option<String> {
        let missed: Vec<KillWindow> = KillWindow::dangerous_for(strategy, self.sends)
            .into_iter()
            .filter(|&w| self.get(w) == 0)
            .collect();
        let names: Vec<&str> = missed.iter().map(|w| w.name()).collect();
        match names.as_slice() {
            [] => None,
            [one] => Some(format!(
                "no kill landed in {one}, the window that breaks {strategy}: this pass did not test it"
            )),
            _ => Some(format!(
                "no kill landed in {}, the windows that break {strategy}: this pass did not test them",
                names.join(" or ")
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_that_missed_the_dangerous_window_says_so() {
        let mut windows = KillWindows {
            rows_apart: true,
            ..KillWindows::default()
        };
        windows.add(KillWindow::AfterCommit);
        windows.add(KillWindow::AfterCommit);
        let said = windows.unearned(Strategy::TwoCommit).unwrap_or_default();
        assert!(said.contains("after-row-commit"), "{said}");
        assert_eq!(windows.unearned(Strategy::Naive), None);
        assert_eq!(windows.unearned(Strategy::Guarded), None);
        assert_eq!(
            windows.never_hit(),
            vec![KillWindow::BeforeAnyCommit, KillWindow::AfterRowCommit]
        );
        let json = serde_json::to_string(&windows).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"before-any-commit":0,"after-row-commit":0,"after-commit":2,"after-send":0,"after-relay-send":0,"after-a-commit-unplaced":0,"after-checkpoint-commit":0}"#
        );
    }

    #[test]
    fn what_could_not_be_seen_is_never_said_missed() {
        let mut windows = KillWindows::default();
        windows.add_unplaced();
        assert_eq!(windows.never_hit(), vec![KillWindow::BeforeAnyCommit]);
        let mut sending = KillWindows {
            sends: true,
            ..KillWindows::default()
        };
        sending.add(KillWindow::AfterCommit);
        assert!(sending.never_hit().contains(&KillWindow::AfterSend));
        let said = sending.unearned(Strategy::Guarded).unwrap_or_default();
        assert!(said.contains("after-send"), "{said}");
        assert!(KillWindows::default().unearned(Strategy::Guarded).is_none());
    }

    /// Where a row commits with its checkpoint, or has none (naive, keyed, guarded, ...), a
    /// crash named after-row-commit is after-commit: that is no window missed.
    #[test]
    fn after_row_commit_is_no_window_where_the_row_has_no_checkpoint_apart() {
        let mut windows = KillWindows::default();
        windows.add(KillWindow::AfterCommit);
        assert_eq!(windows.never_hit(), vec![KillWindow::BeforeAnyCommit]);
        let apart = KillWindows {
            rows_apart: true,
            ..windows
        };
        assert_eq!(
            apart.never_hit(),
            vec![KillWindow::BeforeAnyCommit, KillWindow::AfterRowCommit]
        );
        assert!(KillWindows::default().plus(apart).rows_apart);
    }
}
