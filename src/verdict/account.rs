//! One account of what a night (or a test, or a map's cell) tested, and the one rule from it to
//! pass / fail / untested. Every command builds an `Account` from what it observed and prints
//! `Account::judge`'s `Judgement`: the console line, `--json`, `--junit` and the exit code are
//! the same decision, made once.
//!
//! The rule: anything seen going wrong (a key missing or doubled, a checkpoint without its row, a
//! message doubled, missing or outside the queue, a job that never completed, a final state
//! that differs from the undisturbed night's) fails, with or
//! without `--strict`. Otherwise anything the night set out to test and did not, or could not
//! observe (a planned action that never fired, a window that can break this job that no kill
//! reached, kills that could not be placed, rows judged by counts alone), makes it untested:
//! exit 0, said as UNTESTED, and a failure under `--strict`. Only a night with neither passes.

use serde::Serialize;

/// What was seen going wrong, or left untested: a kind a program can match on, and the
/// sentence a person reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub kind: Kind,
    pub said: String,
}

/// The kinds of entry. The first group is seen wrong; the rest leave a night untested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The rows: a key missing, doubled or outside the queue; a corrupt database.
    Data,
    /// A checkpoint committed before its row: a kill between the two loses the item.
    CheckpointBeforeRow,
    /// The messages at the vendor: doubled, missing or outside the queue.
    Messages,
    /// The job never completed (given up on, or out of restarts).
    NeverCompleted,
    /// The tables' final state differs from the undisturbed night's (`--compare`).
    State,
    /// A planned action (a kill, a crash point) that never happened.
    NotFired,
    /// A window that can break this job (its strategy's, one it announced, `after-send`) that
    /// no kill reached.
    WindowNeverHit,
    /// Every kill landed before the attempt had committed anything: no committed work was at
    /// stake, so no restart was tested.
    NothingAtStake,
    /// Something reclaim could not observe: kills it could not place, rows judged by counts.
    Unobserved,
    /// The test's own danger never happened (the second worker wrote nothing, nothing to wipe).
    TestedNothing,
    /// The test does not apply to this job.
    Skipped,
    /// What two undisturbed nights of the job disagree on: its own nondeterminism, not compared.
    Nondeterministic,
}

impl Kind {
    /// Whether an entry of this kind is something seen going wrong (else: left untested).
    #[must_use]
    pub fn is_wrong(self) -> bool {
        match self {
            Self::Data
            | Self::CheckpointBeforeRow
            | Self::Messages
            | Self::NeverCompleted
            | Self::State => true,
            Self::NotFired
            | Self::WindowNeverHit
            | Self::NothingAtStake
            | Self::Unobserved
            | Self::TestedNothing
            | Self::Skipped
            | Self::Nondeterministic => false,
        }
    }
}

/// Everything a night, a test or a cell is judged on, in the order it was said.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Account {
    pub entries: Vec<Entry>,
}

/// Pass, fail or untested: the one rule's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    Fail,
    Untested,
}

impl Outcome {
    /// The word every output prints: `PASS`, `FAIL`, `UNTESTED`.
    #[must_use]
    pub fn mark(self) -> &'static str {
        match self {
            Self::Pass => "PASS",
            Self::Fail => "FAIL",
            Self::Untested => "UNTESTED",
        }
    }

    /// Whether this outcome fails the command: a failure always, untested under `--strict`.
    #[must_use]
    pub fn fails(self, strict: bool) -> bool {
        match self {
            Self::Pass => false,
            Self::Fail => true,
            Self::Untested => strict,
        }
    }

    /// The worse of two: fail, then untested, then pass.
    #[must_use]
    pub fn worst(self, other: Self) -> Self {
        let rank = |o: Self| match o {
            Self::Pass => 0,
            Self::Untested => 1,
            Self::Fail => 2,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

/// The rule applied: the outcome, whether it fails under the command's `--strict`, and the
/// reasons, wrong ones first. Serialized into every `--json` as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Judgement {
    pub outcome: Outcome,
    pub strict: bool,
    /// The outcome fails the command (exit 1).
    pub fails: bool,
    /// What was seen going wrong.
    pub wrong: Vec<Entry>,
    /// What was left untested or could not be observed.
    pub untested: Vec<Entry>,
}

impl Account {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, kind: Kind, said: impl Into<String>) {
        let said = said.into();
        // The same sentence twice (two nights of one test) is one fact.
        if !self
            .entries
            .iter()
            .any(|e| e.kind == kind && e.said == said)
        {
            self.entries.push(Entry { kind, said });
        }
    }

    /// Another account's entries, each said with `prefix` first (`run 2: `), after these.
    pub fn absorb(&mut self, other: &Self, prefix: &str) {
        for entry in &other.entries {
            self.push(entry.kind, format!("{prefix}{}", entry.said));
        }
    }

    /// The one rule: anything wrong fails; otherwise anything untested leaves it untested.
    #[must_use]
    pub fn outcome(&self) -> Outcome {
        if self.entries.iter().any(|e| e.kind.is_wrong()) {
            Outcome::Fail
        } else if self.entries.is_empty() {
            Outcome::Pass
        } else {
            Outcome::Untested
        }
    }

    /// Whether an entry of `kind` is there.
    #[must_use]
    pub fn has(&self, kind: Kind) -> bool {
        self.entries.iter().any(|e| e.kind == kind)
    }

    /// The rule's answer under the command's `--strict`.
    #[must_use]
    pub fn judge(&self, strict: bool) -> Judgement {
        let outcome = self.outcome();
        let (wrong, untested) = self
            .entries
            .iter()
            .cloned()
            .partition(|e| e.kind.is_wrong());
        Judgement {
            outcome,
            strict,
            fails: outcome.fails(strict),
            wrong,
            untested,
        }
    }
}

impl Judgement {
    /// The outcome's word: `PASS`, `FAIL`, `UNTESTED`, or `SKIPPED` for an untested one whose
    /// every reason is that it does not apply.
    #[must_use]
    pub fn mark(&self) -> &'static str {
        let skipped =
            !self.untested.is_empty() && self.untested.iter().all(|e| e.kind == Kind::Skipped);
        match self.outcome {
            Outcome::Untested if skipped => "SKIPPED",
            outcome => outcome.mark(),
        }
    }

    /// The exit code: 1 when the outcome fails the command, 0 otherwise.
    #[must_use]
    pub fn exit_code(&self) -> u8 {
        if self.fails {
            crate::base::exit::DATA_WRONG
        } else {
            crate::base::exit::OK
        }
    }

    /// The reasons, wrong ones first, each a sentence, joined with `; `.
    #[must_use]
    pub fn reasons(&self) -> String {
        (self.wrong.iter().chain(&self.untested))
            .map(|e| e.said.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The outcome in one line, for a console: `PASS`, `FAIL: why`, `UNTESTED: why (exit 0;
    /// --strict fails it)` or `UNTESTED (--strict: a failure): why`.
    #[must_use]
    pub fn line(&self) -> String {
        let mark = self.mark();
        match self.outcome {
            Outcome::Pass => "PASS".into(),
            Outcome::Fail => format!("FAIL: {}", self.reasons()),
            Outcome::Untested if self.strict => {
                format!("{mark} (--strict: a failure): {}", self.reasons())
            }
            Outcome::Untested => {
                format!("{mark}: {} (exit 0; --strict fails it)", self.reasons())
            }
        }
    }

    /// The outcome and the exit it makes, without the reasons (each test's or cell's line
    /// says them): `FAIL (exit 1)`, `UNTESTED (exit 0; --strict fails it)`, ...
    #[must_use]
    pub fn headline(&self) -> String {
        let mark = self.mark();
        match (self.outcome, self.fails) {
            (Outcome::Untested, true) => format!("{mark} (--strict: a failure, exit 1)"),
            (Outcome::Untested, false) => format!("{mark} (exit 0; --strict fails it)"),
            (outcome, fails) => format!("{} (exit {})", outcome.mark(), u8::from(fails)),
        }
    }

    /// The same decision as a JUnit case's result: passed, failed, or skipped (untested, and
    /// failed under `--strict`). The message begins with the mark the console prints.
    #[must_use]
    pub fn junit(&self) -> crate::verdict::junit::CaseResult {
        use crate::verdict::junit::CaseResult;
        let mark = self.mark();
        match (self.outcome, self.fails) {
            (Outcome::Pass, _) => CaseResult::Passed,
            (Outcome::Fail, _) => CaseResult::Failed(format!("FAIL: {}", self.reasons())),
            (Outcome::Untested, true) => {
                CaseResult::Failed(format!("{mark} (--strict: a failure): {}", self.reasons()))
            }
            (Outcome::Untested, false) => {
                CaseResult::Skipped(format!("{mark}: {}", self.reasons()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::junit::CaseResult;

    #[test]
    fn anything_seen_wrong_fails_with_or_without_strict() {
        let mut account = Account::new();
        account.push(Kind::NotFired, "1 kill never fired");
        account.push(
            Kind::CheckpointBeforeRow,
            "inv-7 had its checkpoint and no row",
        );
        for strict in [false, true] {
            let judged = account.judge(strict);
            assert_eq!(judged.outcome, Outcome::Fail);
            assert!(judged.fails);
            assert_eq!(judged.exit_code(), 1);
            // Wrong first, whatever the order said.
            assert!(
                judged.reasons().starts_with("inv-7"),
                "{}",
                judged.reasons()
            );
            assert!(matches!(judged.junit(), CaseResult::Failed(m) if m.starts_with("FAIL")));
        }
    }

    #[test]
    fn untested_fails_only_under_strict_and_says_so_alike_everywhere() {
        let mut account = Account::new();
        account.push(
            Kind::NothingAtStake,
            "every kill landed before the first commit",
        );
        let loose = account.judge(false);
        assert_eq!(loose.outcome, Outcome::Untested);
        assert_eq!(loose.exit_code(), 0);
        assert!(loose.line().starts_with("UNTESTED: "), "{}", loose.line());
        assert!(matches!(loose.junit(), CaseResult::Skipped(m) if m.starts_with("UNTESTED")));
        let strict = account.judge(true);
        assert_eq!(strict.exit_code(), 1);
        assert!(strict.line().starts_with("UNTESTED (--strict: a failure)"));
        assert!(matches!(strict.junit(), CaseResult::Failed(m) if m.starts_with("UNTESTED")));
    }

    #[test]
    fn an_empty_account_passes_and_a_fact_said_twice_counts_once() {
        assert_eq!(Account::new().judge(true).outcome, Outcome::Pass);
        assert_eq!(Account::new().judge(true).junit(), CaseResult::Passed);
        let mut one = Account::new();
        one.push(Kind::Unobserved, "judged by counts");
        let mut test = Account::new();
        test.absorb(&one, "");
        test.absorb(&one, "");
        assert_eq!(test.entries.len(), 1);
        test.absorb(&one, "run 2: ");
        assert_eq!(test.entries.len(), 2);
    }

    #[test]
    fn a_test_that_does_not_apply_is_said_skipped_in_every_output() {
        let mut account = Account::new();
        account.push(Kind::Skipped, "the job has no checkpoint table");
        let judged = account.judge(false);
        assert_eq!(judged.mark(), "SKIPPED");
        assert!(matches!(judged.junit(), CaseResult::Skipped(m) if m.starts_with("SKIPPED: ")));
        let strict = account.judge(true);
        assert!(strict.line().starts_with("SKIPPED (--strict: a failure)"));
        assert!(matches!(strict.junit(), CaseResult::Failed(m) if m.starts_with("SKIPPED")));
        account.push(Kind::NotFired, "a kill never fired");
        assert_eq!(account.judge(false).mark(), "UNTESTED");
    }

    #[test]
    fn the_worst_outcome_wins() {
        use Outcome::{Fail, Pass, Untested};
        assert_eq!(Pass.worst(Untested), Untested);
        assert_eq!(Untested.worst(Pass), Untested);
        assert_eq!(Untested.worst(Fail), Fail);
        assert_eq!(Fail.worst(Pass), Fail);
    }
}
