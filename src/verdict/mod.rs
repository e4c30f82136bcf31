//! The status of a job, derived from the rows it produced; never taken from the worker's word.

pub mod account;
pub mod compare;
pub mod junit;
pub mod state;

use std::fmt;

use serde::Serialize;

use crate::base::text::count;

/// What the rows say about the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Derived {
    /// Every task present exactly once, nothing else, integrity check passed.
    Ok,
    /// Rows the job should not have produced: duplicates, strays, or checkpoints without rows.
    DataWrong {
        duplicated: u64,
        extra: u64,
        missing: u64,
        unexpected: u64,
        orphan_checkpoints: u64,
    },
    /// Nothing wrong was written, but some tasks have no row yet.
    Incomplete { missing: u64 },
    /// SQLite's own integrity check failed.
    Corrupt,
}

/// The verdict's name alone, as JSON, recordings and reports carry it: `ok`, `data_wrong`,
/// `incomplete`, `corrupt`. A name this build does not know (in a recording) is `unknown`, and
/// is never taken for `ok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    DataWrong,
    Incomplete,
    Corrupt,
    #[serde(other)]
    Unknown,
}

impl Status {
    #[must_use]
    pub fn is_ok(self) -> bool {
        self == Self::Ok
    }

    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::DataWrong => "data_wrong",
            Self::Incomplete => "incomplete",
            Self::Corrupt => "corrupt",
            Self::Unknown => "unknown",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// The figures the verdict is derived from: all of them from `inspect`, or those a recorded
/// sample holds (`replay --check`). One rule, `Derived::from_facts`, judges both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RowFacts {
    pub integrity_ok: bool,
    /// Task ids with more than one row.
    pub duplicated: u64,
    /// Rows beyond the first of a task of the queue: duplicates and rows outside the queue.
    pub extra: u64,
    pub missing: u64,
    /// Rows outside the queue, where they are told apart from duplicates.
    pub unexpected: u64,
    pub orphan_checkpoints: u64,
}

impl Derived {
    /// The rule: corrupt outranks everything; any row the job should not have produced is
    /// data wrong; then missing tasks are incomplete; otherwise ok.
    #[must_use]
    pub fn from_facts(f: RowFacts) -> Self {
        if !f.integrity_ok {
            return Self::Corrupt;
        }
        if f.extra > 0 || f.unexpected > 0 || f.orphan_checkpoints > 0 {
            return Self::DataWrong {
                duplicated: f.duplicated,
                extra: f.extra,
                missing: f.missing,
                unexpected: f.unexpected,
                orphan_checkpoints: f.orphan_checkpoints,
            };
        }
        if f.missing > 0 {
            return Self::Incomplete { missing: f.missing };
        }
        Self::Ok
    }

    #[must_use]
    pub fn is_ok(self) -> bool {
        self == Self::Ok
    }

    /// The verdict once the job has ended its night: a key of the queue still without a row is
    /// no longer work to come but work lost, and that makes the data wrong.
    #[must_use]
    pub fn once_ended(self) -> Self {
        match self {
            Self::Incomplete { missing } => Self::DataWrong {
                duplicated: 0,
                extra: 0,
                missing,
                unexpected: 0,
                orphan_checkpoints: 0,
            },
            other => other,
        }
    }

    /// The verdict's name without its figures.
    #[must_use]
    pub fn status(self) -> Status {
        match self {
            Self::Ok => Status::Ok,
            Self::DataWrong { .. } => Status::DataWrong,
            Self::Incomplete { .. } => Status::Incomplete,
            Self::Corrupt => Status::Corrupt,
        }
    }

    /// A short, stable label for JSON and tests: `ok`, `data_wrong`, `incomplete`, `corrupt`.
    #[must_use]
    pub fn label(self) -> &'static str {
        self.status().label()
    }
}

impl fmt::Display for Derived {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Ok => f.write_str("ok"),
            Self::Corrupt => f.write_str("CORRUPT (PRAGMA integrity_check failed)"),
            Self::Incomplete { missing: 0 } => {
                f.write_str("INCOMPLETE (every row is there, but the job never completed)")
            }
            Self::Incomplete { missing } => write!(
                f,
                "INCOMPLETE ({} missing)",
                count(missing, "task id", "task ids")
            ),
            Self::DataWrong {
                duplicated,
                extra,
                missing,
                unexpected,
                orphan_checkpoints,
            } => {
                let mut parts = Vec::new();
                if duplicated > 0 {
                    parts.push(count(
                        duplicated,
                        "duplicated task id",
                        "duplicated task ids",
                    ));
                }
                if missing > 0 {
                    parts.push(format!("{missing} missing"));
                }
                if unexpected > 0 {
                    parts.push(format!(
                        "{} outside the queue",
                        count(unexpected, "row", "rows")
                    ));
                }
                if orphan_checkpoints > 0 {
                    parts.push(format!(
                        "{} without a row",
                        count(orphan_checkpoints, "checkpoint", "checkpoints")
                    ));
                }
                if parts.is_empty() {
                    // Figures that contradict each other (a hand-edited recording's): more rows
                    // than distinct task ids, none of them counted as duplicated.
                    parts.push(format!(
                        "{} more than distinct task ids",
                        count(extra, "row", "rows")
                    ));
                }
                write!(f, "DATA WRONG ({})", parts.join(", "))
            }
        }
    }
}

/// The words a job's last line claims success with, in any case (`status=ok`, `OK`,
/// `result=SUCCESS`, `succeeded`). `unsuccessful` is a word of its own, so never matches.
const SUCCESS_WORDS: [&str; 6] = [
    "ok",
    "okay",
    "success",
    "successful",
    "successfully",
    "succeeded",
];

/// Words that take the claim back: before it (`not ok`, `no success`, `wasn't successful`,
/// split at the apostrophe into `wasn` and `t`), or after it (`success=false`).
const NEGATIONS_BEFORE: [&str; 4] = ["not", "no", "never", "t"];
const NEGATIONS_AFTER: [&str; 2] = ["false", "no"];

/// Whether someone else's last line claims success: a word of `SUCCESS_WORDS`, not negated by
/// the word beside it (`not ok`, `success=false`).
#[must_use]
pub fn says_ok(line: &str) -> bool {
    let words: Vec<&str> = line
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let is = |word: &str, set: &[&str]| set.iter().any(|s| word.eq_ignore_ascii_case(s));
    words.iter().enumerate().any(|(i, word)| {
        is(word, &SUCCESS_WORDS)
            && !(i > 0 && is(words[i - 1], &NEGATIONS_BEFORE))
            && !words
                .get(i + 1)
                .is_some_and(|next| is(next, &NEGATIONS_AFTER))
    })
}

/// The worker's own word and the rows' verdict side by side, as the postmortem should have seen
/// them: `claimed=ok derived=DATA WRONG (112 duplicated task ids)`.
#[must_use]
pub fn claim_line(claimed: Option<&str>, derived: Derived) -> String {
    format!("claimed={} derived={derived}", claimed.unwrap_or("none"))
}

/// The postmortem's symptom table: what the logs show, what it means, what to check first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Symptom {
    RestartsAtZero,
    RowsExceedQueue,
    StatusOkDataWrong,
}

impl Symptom {
    pub const ALL: [Self; 3] = [
        Self::RestartsAtZero,
        Self::RowsExceedQueue,
        Self::StatusOkDataWrong,
    ];

    /// The symptom, as it shows in the logs.
    #[must_use]
    pub fn seen(self) -> &'static str {
        match self {
            Self::RestartsAtZero => "worker restarts at item zero",
            Self::RowsExceedQueue => "row count exceeds queue size",
            Self::StatusOkDataWrong => "status ok, data wrong",
        }
    }

    /// What it usually means.
    #[must_use]
    pub fn meaning(self) -> &'static str {
        match self {
            Self::RestartsAtZero => "no checkpoint read path exists",
            Self::RowsExceedQueue => "a restart was treated as a first run",
            Self::StatusOkDataWrong => "success was written by the worker",
        }
    }

    /// The first thing to check.
    #[must_use]
    pub fn check(self) -> &'static str {
        match self {
            Self::RestartsAtZero => "does the checkpoint table get queried?",
            Self::RowsExceedQueue => "is there a unique key on the work id?",
            Self::StatusOkDataWrong => "derive status from the rows produced",
        }
    }

    /// One teaching line: `row count exceeds queue size: is there a unique key on the work id?`
    #[must_use]
    pub fn lesson(self) -> String {
        format!("{}: {}", self.seen(), self.check())
    }

    /// The symptoms a finished job shows.
    #[must_use]
    pub fn observed(
        (rows, items): (u64, u64),
        derived: Derived,
        restarted_at_zero: bool,
        claimed: Option<&str>,
    ) -> Vec<Self> {
        let mut seen = Vec::new();
        if restarted_at_zero {
            seen.push(Self::RestartsAtZero);
        }
        if rows > items {
            seen.push(Self::RowsExceedQueue);
        }
        if claimed == Some("ok") && !derived.is_ok() {
            seen.push(Self::StatusOkDataWrong);
        }
        seen
    }
}

/// The receiving end's verdict, from the vendor's figures: `None` when every task's message
/// arrived once and none went to a key outside the queue.
#[must_use]
pub fn messages_verdict(duplicated: u64, missing: u64, outside: u64) -> Option<String> {
    let mut wrong = Vec::new();
    if duplicated > 0 {
        wrong.push(format!(
            "{} message{} sent more than once (a customer got the same email twice)",
            duplicated,
            if duplicated == 1 { "" } else { "s" }
        ));
    }
    if missing > 0 {
        wrong.push(format!(
            "{} task{} never reached the vendor",
            missing,
            if missing == 1 { "" } else { "s" }
        ));
    }
    if outside > 0 {
        wrong.push(format!(
            "{} sent for a key outside the queue (work nobody asked for, at a customer)",
            crate::base::text::count(outside, "message", "messages")
        ));
    }
    (!wrong.is_empty()).then(|| format!("messages WRONG: {}", wrong.join("; ")))
}

/// The teaching lines for a finished job: each observed symptom with its first check, and the
/// duplicates of a job too short to exceed its queue, which need the same key.
#[must_use]
pub fn lessons(duplicated_task_ids: u64, extra_rows: u64, symptoms: &[Symptom]) -> Vec<String> {
    let mut lines: Vec<String> = symptoms.iter().map(|s| s.lesson()).collect();
    if duplicated_task_ids > 0 && !symptoms.contains(&Symptom::RowsExceedQueue) {
        let how = if extra_rows == duplicated_task_ids {
            "twice"
        } else {
            "more than once"
        };
        lines.push(format!(
            "{} written {how}: {}",
            count(duplicated_task_ids, "task id", "task ids"),
            Symptom::RowsExceedQueue.check()
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_claim_of_success_is_read_in_its_usual_words_and_never_from_its_negation() {
        for (line, ok) in [
            ("done rows_written=212 status=ok", true),
            ("OK", true),
            ("ok.", true),
            ("result=SUCCESS", true),
            ("status=success", true),
            ("SUCCESS", true),
            ("job succeeded", true),
            ("completed successfully", true),
            ("Okay", true),
            ("not ok", false),
            ("status: NOT OK", false),
            ("unsuccessful", false),
            ("run was unsuccessful: 3 failed", false),
            ("no success", false),
            ("wasn't successful", false),
            ("success=false", false),
            ("failed", false),
            ("error: token expired", false),
            ("broken", false),
            ("", false),
            ("okra processed", false),
        ] {
            assert_eq!(super::says_ok(line), ok, "{line:?}");
        }
    }

    use super::*;

    fn facts(rows: u64, distinct: u64, dups: u64, missing: u64) -> RowFacts {
        RowFacts {
            integrity_ok: true,
            duplicated: dups,
            extra: rows - distinct,
            missing,
            unexpected: 0,
            orphan_checkpoints: 0,
        }
    }

    #[test]
    fn figures_that_contradict_each_other_still_say_what_is_wrong() {
        // A hand-edited recording's sample: more rows than distinct ids, none duplicated.
        let derived = Derived::from_facts(facts(u64::MAX, 200, 0, 0));
        assert_eq!(
            derived.to_string(),
            format!(
                "DATA WRONG ({} rows more than distinct task ids)",
                u64::MAX - 200
            )
        );
    }

    #[test]
    fn the_postmortem_night_is_data_wrong_whatever_the_worker_claims() {
        let derived = Derived::from_facts(facts(312, 200, 112, 0));
        assert_eq!(
            claim_line(Some("ok"), derived),
            "claimed=ok derived=DATA WRONG (112 duplicated task ids)"
        );
        assert!(!derived.is_ok());
        assert_eq!(
            Symptom::observed((312, 200), derived, true, Some("ok")),
            Symptom::ALL.to_vec()
        );
    }

    #[test]
    fn exactly_once_is_ok_and_gaps_are_incomplete() {
        assert_eq!(Derived::from_facts(facts(200, 200, 0, 0)), Derived::Ok);
        assert_eq!(
            Derived::from_facts(facts(112, 112, 0, 88)).to_string(),
            "INCOMPLETE (88 task ids missing)"
        );
    }

    #[test]
    fn a_failed_integrity_check_outranks_everything() {
        let mut f = facts(200, 200, 0, 0);
        f.integrity_ok = false;
        assert_eq!(Derived::from_facts(f), Derived::Corrupt);
    }
}
