//! The table of strategies: every decision about a strategy is an exhaustive method here, so a
//! new one fails to compile at each decision until it has said its answer.
//!
//! Another strategy is its own file beside this one (its `run`), a `mod` line in `worker/mod.rs`,
//! the variant below and one arm in each method of this file; `Strategy::all()` comes from the
//! enum, so the dashboard's `s` key, `prove`, `map` and the tests reach it with no other edit.

use std::fmt;

use serde::Serialize;

use super::{CrashAt, CrashPoint, Ctx, KillWindow, WorkerError};
use crate::warehouse::SchemaNeeds;

/// The ways to do the job, from the postmortem's worker to its fix.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// INSERT and commit; no key, no checkpoint. A restart begins again at task-000.
    Naive,
    /// Skips checkpointed tasks; commits the row, then the checkpoint, in two transactions.
    TwoCommit,
    /// UNIQUE idempotency key, ON CONFLICT DO NOTHING; no checkpoint, so a restart redoes work.
    Keyed,
    /// Row and checkpoint in one transaction, a unique key, and a heartbeat: safe to kill anywhere.
    Guarded,
    /// Guarded, plus an outbox entry in the same transaction; a relay sends the message with the
    /// row's idempotency key.
    Outbox,
    /// Workers on one queue claim items with a lease (`FOR UPDATE SKIP LOCKED` on PostgreSQL);
    /// the row, its checkpoint and the item's done mark commit together, while the item is still
    /// the worker's own. A killed worker's lease ends and another worker takes the item.
    /// The commit trusts the lease: a worker stopped past its lease's end commits anyway.
    Claim,
    /// Claim, with a fencing token: each claim raises the item's lease number, and the commit
    /// checks it in the row's transaction, so a worker whose lease was taken over writes nothing.
    Fenced,
}

impl Strategy {
    /// Every strategy, in the order the postmortem tells them (naive first), derived from the
    /// enum itself so a new one is never left out.
    #[must_use]
    pub fn all() -> &'static [Self] {
        <Self as clap::ValueEnum>::value_variants()
    }

    /// The strategy a name (as `name` gives it) stands for.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::all().iter().copied().find(|s| s.name() == name)
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Naive => "naive",
            Self::TwoCommit => "two-commit",
            Self::Keyed => "keyed",
            Self::Guarded => "guarded",
            Self::Outbox => "outbox",
            Self::Claim => "claim",
            Self::Fenced => "fenced",
        }
    }

    /// Works through the queue the strategy's way (its own file).
    pub(super) fn run(self, ctx: &mut Ctx<'_>) -> Result<(), WorkerError> {
        match self {
            Self::Naive => super::naive::run(ctx),
            Self::TwoCommit => super::two_commit::run(ctx),
            Self::Keyed => super::keyed::run(ctx),
            Self::Guarded => super::guarded::run(ctx),
            Self::Outbox => super::outbox::run(ctx),
            Self::Claim => super::claim::run(ctx),
            Self::Fenced => super::fenced::run(ctx),
        }
    }

    /// Whether its rows carry a UNIQUE idempotency key that refuses a second copy.
    #[must_use]
    pub fn unique_key(self) -> bool {
        match self {
            Self::Keyed | Self::Guarded | Self::Outbox => true,
            // The claim and the done mark keep a second copy out, not a key.
            Self::Naive | Self::TwoCommit | Self::Claim | Self::Fenced => false,
        }
    }

    /// Whether it records finished tasks (checkpoints) and skips them after a restart.
    #[must_use]
    pub fn checkpoints(self) -> bool {
        match self {
            Self::TwoCommit | Self::Guarded | Self::Outbox | Self::Claim | Self::Fenced => true,
            Self::Naive | Self::Keyed => false,
        }
    }

    /// Whether the row and its checkpoint commit in two transactions, so `after-row-commit` is
    /// a moment of its own (two-commit's gap); elsewhere that point is `after-commit`.
    #[must_use]
    pub fn checkpoints_apart(self) -> bool {
        match self {
            Self::TwoCommit => true,
            Self::Naive
            | Self::Keyed
            | Self::Guarded
            | Self::Outbox
            | Self::Claim
            | Self::Fenced => false,
        }
    }

    /// The schema this strategy creates and insists on.
    #[must_use]
    pub fn needs(self) -> SchemaNeeds {
        SchemaNeeds {
            unique_key: self.unique_key(),
            checkpoints: self.checkpoints(),
            strategy: self.name(),
        }
    }

    /// Whether it can put several items in one transaction (`--batch`).
    #[must_use]
    pub fn batches(self) -> bool {
        match self {
            Self::Keyed | Self::Guarded | Self::Outbox => true,
            // One claim, one item, one commit.
            Self::Naive | Self::TwoCommit | Self::Claim | Self::Fenced => false,
        }
    }

    /// Whether the worker names its run in its start line (the naive one logs `(none)`).
    #[must_use]
    pub fn names_its_run(self) -> bool {
        match self {
            Self::Naive => false,
            Self::TwoCommit
            | Self::Keyed
            | Self::Guarded
            | Self::Outbox
            | Self::Claim
            | Self::Fenced => true,
        }
    }

    /// Whether it can cut an item's work into checkpointed steps (`--split`): it needs a
    /// checkpoint that commits with the row, so a finished item is never started again.
    #[must_use]
    pub fn splits(self) -> bool {
        match self {
            Self::Guarded | Self::Outbox => true,
            Self::Naive | Self::TwoCommit | Self::Keyed | Self::Claim | Self::Fenced => false,
        }
    }

    /// Whether its messages go through an outbox and a relay (rather than from the worker).
    #[must_use]
    pub fn relays(self) -> bool {
        match self {
            Self::Outbox => true,
            Self::Naive
            | Self::TwoCommit
            | Self::Keyed
            | Self::Guarded
            | Self::Claim
            | Self::Fenced => false,
        }
    }

    /// Whether `map --strategy all` maps it: the postmortem's four, whose one worker's rows
    /// tell their story. The outbox's is at the receiving end and the claim's needs several
    /// workers on one queue, so each is mapped when named.
    #[must_use]
    pub fn in_full_map(self) -> bool {
        match self {
            Self::Naive | Self::TwoCommit | Self::Keyed | Self::Guarded => true,
            Self::Outbox | Self::Claim | Self::Fenced => false,
        }
    }

    /// Whether its workers claim items from one queue with a lease (each write granted alone,
    /// with its moment: the worker claims at it).
    #[must_use]
    pub fn claims_items(self) -> bool {
        match self {
            Self::Claim | Self::Fenced => true,
            Self::Naive | Self::TwoCommit | Self::Keyed | Self::Guarded | Self::Outbox => false,
        }
    }

    /// The window in which a kill breaks its rows, if any: naive's restart rewrites every row
    /// committed before the kill; two-commit loses the checkpoint of the row committed last.
    #[must_use]
    pub fn breaking_window(self) -> Option<KillWindow> {
        match self {
            Self::Naive => Some(KillWindow::AfterCommit),
            Self::TwoCommit => Some(KillWindow::AfterRowCommit),
            Self::Keyed | Self::Guarded | Self::Outbox | Self::Claim | Self::Fenced => None,
        }
    }

    /// The duplicated task ids a night's rows must show after `crash` fires, as the code
    /// implies: naive restarts at task-000, so a crash before task k's commit rewrites tasks
    /// 0..k and one after it 0..=k; two-commit rewrites the one row whose checkpoint was lost;
    /// a key or a checkpoint in the row's transaction leaves nothing to duplicate. A point the
    /// strategy never reaches kills nothing: 0.
    #[must_use]
    pub fn expected_duplicates(self, crash: CrashAt) -> u64 {
        match self {
            Self::Naive => match crash.point {
                CrashPoint::BeforeWrite | CrashPoint::AfterSend => crash.task,
                CrashPoint::AfterRowCommit
                | CrashPoint::AfterCommit
                | CrashPoint::AfterHeartbeat => crash.task + 1,
                CrashPoint::AfterRelaySend => 0,
            },
            Self::TwoCommit => match crash.point {
                CrashPoint::AfterRowCommit => 1,
                CrashPoint::BeforeWrite
                | CrashPoint::AfterCommit
                | CrashPoint::AfterHeartbeat
                | CrashPoint::AfterSend
                | CrashPoint::AfterRelaySend => 0,
            },
            Self::Keyed | Self::Guarded | Self::Outbox | Self::Claim | Self::Fenced => 0,
        }
    }

    /// The duplicated task ids its rows must show after the answer to one of its commits that
    /// brings a new row is lost and the worker writes the item again on a new connection: the
    /// row again where no key the database enforces refuses it. claim and fenced commit again
    /// too (the lease is still the worker's own, its number unchanged: a fence keeps out
    /// another worker, not the worker's own retry).
    #[must_use]
    pub fn lost_answer_duplicates(self) -> u64 {
        match self {
            Self::Naive | Self::TwoCommit | Self::Claim | Self::Fenced => 1,
            Self::Keyed | Self::Guarded | Self::Outbox => 0,
        }
    }

    /// The duplicated task ids its rows must show after the worker holding an item's lease is
    /// stopped at its write past the lease and continued, another worker having taken the item
    /// over and written it: claim's sleeper commits it again, fenced's commit finds the item's
    /// lease number moved on and writes nothing. Other strategies hold no lease (never paused
    /// in the map): 0.
    #[must_use]
    pub fn pause_duplicates(self) -> u64 {
        match self {
            Self::Claim => 1,
            Self::Naive
            | Self::TwoCommit
            | Self::Keyed
            | Self::Guarded
            | Self::Outbox
            | Self::Fenced => 0,
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(task: u64, point: CrashPoint) -> CrashAt {
        CrashAt { task, point }
    }

    #[test]
    fn every_strategy_is_named_once_and_found_by_its_name() {
        let names: Vec<&str> = Strategy::all().iter().map(|s| s.name()).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for &s in Strategy::all() {
            assert_eq!(Strategy::from_name(s.name()), Some(s));
        }
        assert_eq!(Strategy::all().first(), Some(&Strategy::Naive));
    }

    #[test]
    fn a_breaking_window_is_what_the_capabilities_leave_open() {
        for &s in Strategy::all() {
            // No key and no checkpoint in the row's transaction: something is left to break.
            let unsafe_rows = !s.unique_key() && (!s.checkpoints() || s.checkpoints_apart());
            assert_eq!(s.breaking_window().is_some(), unsafe_rows, "{s}");
            // Splitting needs a checkpoint committed with the row.
            assert!(
                !s.splits() || (s.checkpoints() && !s.checkpoints_apart()),
                "{s}"
            );
        }
    }

    #[test]
    fn expected_duplicates_follow_the_code() {
        assert_eq!(
            Strategy::Naive.expected_duplicates(at(7, CrashPoint::BeforeWrite)),
            7
        );
        assert_eq!(
            Strategy::Naive.expected_duplicates(at(7, CrashPoint::AfterHeartbeat)),
            8
        );
        assert_eq!(
            Strategy::TwoCommit.expected_duplicates(at(7, CrashPoint::AfterRowCommit)),
            1
        );
        assert_eq!(
            Strategy::TwoCommit.expected_duplicates(at(7, CrashPoint::AfterCommit)),
            0
        );
        for &s in Strategy::all() {
            if s.breaking_window().is_none() {
                for point in CrashPoint::ALL {
                    assert_eq!(s.expected_duplicates(at(7, point)), 0, "{s} {point}");
                }
            }
        }
    }
}
