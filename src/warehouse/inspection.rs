//! What a warehouse holds, on either engine, and the one way a verdict is derived from it:
//! `Inspection`, built only by `Inspection::of_records` (reclaim's own table) or
//! `Inspection::of_job` (a job's table) from what an engine counted (`Tally`, `Matched`), with
//! `consistent` set from `Inspection::derived`, never by a rule of its own.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::schema::SchemaFacts;
use crate::queue::Queue;
use crate::task::canonical_index;
use crate::verdict::{Derived, RowFacts};

/// What a warehouse holds, as `reclaim inspect` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Inspection {
    pub db: PathBuf,
    /// The queue size the rows are judged against.
    pub items: u64,
    pub rows: u64,
    /// Distinct task ids among the rows.
    pub distinct: u64,
    /// Task ids that have more than one row.
    pub duplicated_task_ids: u64,
    /// Rows beyond the first of their task id.
    pub extra_rows: u64,
    /// Task ids of the queue with no row at all.
    pub missing: u64,
    /// Rows whose task id is not one of the queue's: `task-NNN` beyond `--items`, or any other
    /// spelling than `task::task_id`'s (`task-01`, `task-0000`, a number, NULL).
    pub unexpected: u64,
    /// `None` when the warehouse has no checkpoints table.
    pub checkpoints: Option<u64>,
    pub rows_without_checkpoint: Option<u64>,
    pub checkpoints_without_row: Option<u64>,
    /// Distinct `run_id` values: how many attempts wrote rows.
    pub runs: u64,
    pub schema: SchemaFacts,
    pub integrity_ok: bool,
    /// The first line `PRAGMA integrity_check` returned.
    pub integrity: String,
    /// Every task present exactly once, nothing else, and SQLite's own check passes: the derived
    /// verdict's yes or no (`derived().is_ok()`), set from it, never by a rule of its own.
    pub consistent: bool,
    /// Whether each row's key was matched to the queue, or only counted (`--count-sql`).
    pub judged: Judged,
    /// The queue judged against, in a few words (an external job's; `None` for reclaim's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
}

/// How a job's rows were judged against its queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Judged {
    /// Every row's key matched to the queue's keys.
    #[default]
    Keys,
    /// `--count-sql`'s counts against the queue's size: a missing key and a key outside the
    /// queue cancel out, unseen.
    Counts,
}

impl Inspection {
    /// The derived status: the only status reclaim believes.
    #[must_use]
    pub fn derived(&self) -> Derived {
        Derived::from_facts(RowFacts {
            integrity_ok: self.integrity_ok,
            duplicated: self.duplicated_task_ids,
            extra: self.extra_rows,
            missing: self.missing,
            unexpected: self.unexpected,
            orphan_checkpoints: self.checkpoints_without_row.unwrap_or(0),
        })
    }

    /// `consistent` set from the derived verdict: one rule for the printed status, the JSON and
    /// the exit code.
    #[must_use]
    fn with_verdict(mut self) -> Self {
        self.consistent = self.derived().is_ok();
        self
    }

    /// What a reader needs beside the verdict of an external job's rows: keys that do not
    /// match the queue (and the options that would name them), or a judgement by counts alone.
    #[must_use]
    pub fn queue_notes(&self) -> Vec<String> {
        let Some(queue) = &self.queue else {
            return Vec::new();
        };
        let mut notes = Vec::new();
        if self.judged == Judged::Counts {
            notes.push(format!(
                "judged by --count-sql's counts against the queue ({queue}): which keys are missing or outside it, counts cannot tell"
            ));
        }
        if self.unexpected > 0 {
            let none = self.distinct == 0 && self.judged == Judged::Keys;
            notes.push(format!(
                "{} of {} {} outside the queue ({queue}){}",
                self.unexpected,
                self.rows,
                if self.rows == 1 { "row is" } else { "rows are" },
                if none {
                    "; no key matched: tell reclaim the job's keys with --key-format, --keys-from or --keys-sql"
                } else {
                    ""
                }
            ));
        }
        notes
    }

    /// The postmortem's closing line.
    #[must_use]
    pub fn summary_line(&self) -> String {
        format!(
            "rows={} duplicated_task_ids={}",
            self.rows, self.duplicated_task_ids
        )
    }
}

/// Reclaim's own rows, grouped by task id, as an engine counts them for `Inspection::of_records`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Distinct task ids, of the queue or not.
    pub distinct: u64,
    /// Task ids with more than one row.
    pub duplicated: u64,
    /// Task ids of the queue with a row.
    pub present: u64,
    /// Rows whose task id is not one of the queue's.
    pub unexpected: u64,
}

impl Tally {
    /// Counts the `count` rows of one task id: `task` is the id as text, `None` when it is not
    /// text (NULL, a number), which is never a task of the queue.
    pub fn add(&mut self, task: Option<&str>, count: u64, items: u64) {
        self.distinct += 1;
        if count > 1 {
            self.duplicated += 1;
        }
        // INVARIANT: only the spelling `task_id()` writes counts as a task of the queue, so each
        // index is present through one group at most and `missing` cannot underflow.
        match task.and_then(canonical_index) {
            Some(index) if index < items => self.present += 1,
            _ => self.unexpected = self.unexpected.saturating_add(count),
        }
    }
}

/// A job's rows against its queue, as an engine counts them for `Inspection::of_job`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Matched {
    pub rows: u64,
    /// Keys of the queue with a row.
    pub distinct: u64,
    /// Keys of the queue with more than one row.
    pub duplicated: u64,
    /// Rows outside the queue.
    pub outside: u64,
}

impl Matched {
    /// Counts the `count` rows of one key (`None`: not a key at all, NULL or another type).
    pub fn add(&mut self, key: Option<&str>, count: u64, queue: &Queue) {
        self.rows += count;
        // INVARIANT: a key of the queue is one group at most (grouped by the key), so
        // `distinct` never exceeds the queue's size and `missing` cannot underflow.
        match key.and_then(|k| queue.index_of(k)) {
            Some(_) => {
                self.distinct += 1;
                if count > 1 {
                    self.duplicated += 1;
                }
            }
            None => self.outside = self.outside.saturating_add(count),
        }
    }

    /// `--count-sql`'s `(rows, distinct)` against a queue of `items`: counts name no key, so
    /// the distinct keys beyond the queue's size are outside it, those short of it missing;
    /// which keys they are, reclaim cannot tell.
    #[must_use]
    pub fn counted(rows: u64, distinct: u64, items: u64) -> Self {
        Self {
            rows,
            distinct: distinct.min(items),
            duplicated: rows.saturating_sub(distinct),
            outside: distinct.saturating_sub(items),
        }
    }
}

/// The checkpoint table's figures: checkpoints, task ids with rows but none, checkpoints with
/// no row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointFigures {
    pub count: u64,
    pub rows_without: u64,
    pub without_row: u64,
}

/// What checked the pages: `ok`, or the first line of the check's report (`integrity_ok` is
/// whether it was `ok`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Integrity {
    pub ok: bool,
    pub said: String,
}

impl Inspection {
    /// The facts about reclaim's own table (`records`, and its `checkpoints` when there),
    /// judged by the one rule.
    #[must_use]
    pub fn of_records(
        db: &Path,
        (items, rows, runs): (u64, u64, u64),
        tally: Tally,
        (schema, checkpoints): (SchemaFacts, Option<CheckpointFigures>),
        integrity: Integrity,
    ) -> Self {
        Self {
            db: db.to_path_buf(),
            items,
            rows,
            distinct: tally.distinct,
            duplicated_task_ids: tally.duplicated,
            extra_rows: rows.saturating_sub(tally.distinct),
            missing: items.saturating_sub(tally.present),
            unexpected: tally.unexpected,
            checkpoints: checkpoints.map(|c| c.count),
            rows_without_checkpoint: checkpoints.map(|c| c.rows_without),
            checkpoints_without_row: checkpoints.map(|c| c.without_row),
            runs,
            schema,
            integrity_ok: integrity.ok,
            integrity: integrity.said,
            consistent: false,
            judged: Judged::Keys,
            queue: None,
        }
        .with_verdict()
    }

    /// The facts about a job's table against its `queue`, judged by the same rule.
    #[must_use]
    pub fn of_job(
        db: &Path,
        queue: &Queue,
        (matched, judged): (Matched, Judged),
        integrity: Integrity,
    ) -> Self {
        let items = queue.len();
        let in_queue = matched.rows.saturating_sub(matched.outside);
        Self {
            db: db.to_path_buf(),
            items,
            rows: matched.rows,
            distinct: matched.distinct,
            duplicated_task_ids: matched.duplicated,
            extra_rows: in_queue.saturating_sub(matched.distinct),
            missing: items.saturating_sub(matched.distinct),
            unexpected: matched.outside,
            checkpoints: None,
            rows_without_checkpoint: None,
            checkpoints_without_row: None,
            runs: 0,
            schema: SchemaFacts::default(),
            integrity_ok: integrity.ok,
            integrity: integrity.said,
            consistent: false,
            judged,
            queue: Some(queue.describe()),
        }
        .with_verdict()
    }
}

/// A task id written more than once: how many rows it has and the runs that wrote them, in the
/// order they wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DuplicatedId {
    pub task_id: String,
    pub count: u64,
    /// The `run_id` of each row, oldest first (a naive worker's is `pid-N`).
    pub runs: Vec<String>,
}

/// `task-000  x2  pid-1234, pid-5678`: one duplicated id as `inspect --ids` and the dashboard
/// list it.
#[must_use]
pub fn duplicated_line(id: &DuplicatedId) -> String {
    format!("{}  x{}  {}", id.task_id, id.count, id.runs.join(", "))
}

/// The human report of `reclaim inspect`, ending with the postmortem's line.
#[must_use]
pub fn render(inspection: &Inspection) -> String {
    use std::fmt::Write as _;
    let i = inspection;
    let mut out = String::new();
    let key = if i.schema.unique_idem_key {
        "UNIQUE idem_key (the database refuses duplicates)"
    } else {
        "no unique key (nothing stops a duplicate row)"
    };
    let checkpoint_schema = match (i.schema.checkpoints_table, i.schema.checkpoint_key) {
        (false, _) => "no checkpoints table",
        (true, true) => "checkpoints keyed by task_id",
        (true, false) => "checkpoints table WITHOUT a key on task_id",
    };
    let _ = writeln!(
        out,
        "database     {}",
        crate::base::text::escape_controls(&i.db.display().to_string())
    );
    let _ = writeln!(out, "schema       {key}; {checkpoint_schema}");
    let _ = writeln!(out, "rows         {} (queue of {})", i.rows, i.items);
    let _ = writeln!(out, "distinct     {} task ids", i.distinct);
    let _ = writeln!(
        out,
        "duplicated   {} task ids with more than one row ({} extra rows)",
        i.duplicated_task_ids, i.extra_rows
    );
    let _ = writeln!(out, "missing      {} task ids with no row", i.missing);
    if i.unexpected > 0 {
        let rows = crate::base::text::count(i.unexpected, "row", "rows");
        let _ = writeln!(out, "unexpected   {rows} outside the queue");
    }
    match (
        i.checkpoints,
        i.rows_without_checkpoint,
        i.checkpoints_without_row,
    ) {
        (Some(count), Some(rows_without), Some(without_row)) => {
            let _ = writeln!(
                out,
                "checkpoints  {count} ({rows_without} task ids with rows but no checkpoint, {without_row} checkpoints with no row)"
            );
        }
        _ => {
            let _ = writeln!(out, "checkpoints  none (no checkpoints table)");
        }
    }
    let _ = writeln!(out, "runs         {} distinct run_id values", i.runs);
    let _ = writeln!(out, "integrity    {}", i.integrity);
    let _ = writeln!(out, "verdict      {}", i.derived());
    let _ = writeln!(out, "{}", i.summary_line());
    out
}

#[cfg(test)]
mod tests {
    //! The verdict on hand-made facts: what an engine would have counted, judged by the one rule.

    use super::*;
    use crate::verdict::Status;

    fn ok() -> Integrity {
        Integrity {
            ok: true,
            said: "ok".into(),
        }
    }

    /// reclaim's own table of a queue of `items`, holding `rows` (task id, rows) groups.
    fn records(
        items: u64,
        groups: &[(Option<&str>, u64)],
        cps: Option<CheckpointFigures>,
    ) -> Inspection {
        let mut tally = Tally::default();
        for (task, count) in groups {
            tally.add(*task, *count, items);
        }
        let rows = groups.iter().map(|g| g.1).sum();
        let schema = (SchemaFacts::default(), cps);
        Inspection::of_records(Path::new("night.db"), (items, rows, 1), tally, schema, ok())
    }

    fn each_once(items: u64) -> Vec<(Option<&'static str>, u64)> {
        ["task-000", "task-001", "task-002", "task-003", "task-004"]
            .into_iter()
            .take(items as usize)
            .map(|t| (Some(t), 1))
            .collect()
    }

    #[test]
    fn every_task_once_is_ok_and_consistent() {
        let i = records(5, &each_once(5), None);
        assert_eq!(i.derived(), Derived::Ok);
        assert!(i.consistent);
        assert_eq!((i.rows, i.distinct, i.missing, i.extra_rows), (5, 5, 0, 0));
    }

    #[test]
    fn no_rows_at_all_is_incomplete_never_ok() {
        let i = records(5, &[], None);
        assert_eq!(i.derived(), Derived::Incomplete { missing: 5 });
        assert!(!i.consistent);
        assert_eq!(i.derived().once_ended().status(), Status::DataWrong);
    }

    #[test]
    fn a_task_written_twice_is_data_wrong() {
        let mut groups = each_once(5);
        groups[0].1 = 3;
        let i = records(5, &groups, None);
        assert_eq!((i.rows, i.distinct), (7, 5));
        assert_eq!((i.duplicated_task_ids, i.extra_rows, i.missing), (1, 2, 0));
        assert_eq!(i.derived().status(), Status::DataWrong);
        assert!(!i.consistent);
        assert_eq!(i.summary_line(), "rows=7 duplicated_task_ids=1");
    }

    #[test]
    fn tasks_without_a_row_are_incomplete_and_duplicates_outrank_them() {
        let i = records(5, &each_once(3), None);
        assert_eq!(i.derived(), Derived::Incomplete { missing: 2 });
        let mut groups = each_once(3);
        groups[2].1 = 2;
        let i = records(5, &groups, None);
        assert_eq!(i.derived().status(), Status::DataWrong);
        assert_eq!(i.missing, 2);
    }

    #[test]
    fn rows_outside_the_queue_are_data_wrong_however_they_are_spelled() {
        for stray in [
            Some("task-005"),
            Some("task-01"),
            Some("task-0000"),
            Some("7"),
            None,
        ] {
            let mut groups = each_once(5);
            groups.push((stray, 1));
            let i = records(5, &groups, None);
            assert_eq!(
                (i.unexpected, i.missing, i.extra_rows),
                (1, 0, 0),
                "{stray:?}"
            );
            assert_eq!(i.derived().status(), Status::DataWrong, "{stray:?}");
        }
        // A task's other spelling stands in for it: the task is missing, nothing wraps round.
        let mut groups = each_once(5);
        groups[4] = (Some("task-04"), 1);
        groups.push((Some("task-0000"), 1));
        let i = records(5, &groups, None);
        assert_eq!((i.rows, i.distinct), (6, 6));
        assert_eq!((i.missing, i.unexpected, i.extra_rows), (1, 2, 0));
        assert_eq!(i.derived().status(), Status::DataWrong);
    }

    #[test]
    fn a_checkpoint_without_its_row_is_data_wrong() {
        let cps = |without_row| CheckpointFigures {
            count: 5 + without_row,
            rows_without: 0,
            without_row,
        };
        let i = records(5, &each_once(5), Some(cps(0)));
        assert_eq!(i.derived(), Derived::Ok);
        let i = records(5, &each_once(5), Some(cps(1)));
        assert_eq!(i.checkpoints_without_row, Some(1));
        assert_eq!(
            i.derived(),
            Derived::DataWrong {
                duplicated: 0,
                extra: 0,
                missing: 0,
                unexpected: 0,
                orphan_checkpoints: 1,
            }
        );
        assert!(!i.consistent);
    }

    #[test]
    fn a_failed_integrity_check_is_corrupt_whatever_the_rows() {
        let mut tally = Tally::default();
        tally.add(Some("task-000"), 1, 1);
        let bad = Integrity {
            ok: false,
            said: "*** in database main ***".into(),
        };
        let i = Inspection::of_records(
            Path::new("night.db"),
            (1, 1, 1),
            tally,
            (SchemaFacts::default(), None),
            bad,
        );
        assert_eq!(i.derived(), Derived::Corrupt);
        assert!(!i.consistent);
    }

    fn job(queue: &Queue, groups: &[(Option<&str>, u64)]) -> Inspection {
        let mut matched = Matched::default();
        for (key, count) in groups {
            matched.add(*key, *count, queue);
        }
        Inspection::of_job(Path::new("job.db"), queue, (matched, Judged::Keys), ok())
    }

    #[test]
    fn a_jobs_rows_are_judged_by_the_same_rule_against_its_queue() {
        let queue = Queue::tasks(3);
        let all = [
            (Some("task-000"), 1),
            (Some("task-001"), 1),
            (Some("task-002"), 1),
        ];
        let i = job(&queue, &all);
        assert_eq!(i.derived(), Derived::Ok);
        assert!(i.consistent && i.queue_notes().is_empty());

        let i = job(&queue, &[]);
        assert_eq!(i.derived(), Derived::Incomplete { missing: 3 });

        let i = job(
            &queue,
            &[
                (Some("task-000"), 1),
                (Some("task-001"), 3),
                (Some("nope"), 2),
                (None, 1),
            ],
        );
        assert_eq!((i.rows, i.distinct, i.duplicated_task_ids), (7, 2, 1));
        assert_eq!((i.extra_rows, i.missing, i.unexpected), (2, 1, 3));
        assert_eq!(i.derived().status(), Status::DataWrong);
        let notes = i.queue_notes();
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with("3 of 7 rows are outside the queue"),
            "{}",
            notes[0]
        );
    }

    #[test]
    fn a_job_whose_keys_never_match_is_told_how_to_name_them() {
        let i = job(&Queue::tasks(2), &[(Some("a"), 1), (Some("b"), 1)]);
        assert_eq!((i.unexpected, i.missing), (2, 2));
        assert_eq!(i.derived().status(), Status::DataWrong);
        assert!(i.queue_notes()[0].contains("no key matched"));
    }

    #[test]
    fn counts_alone_say_they_cannot_name_the_keys() {
        let queue = Queue::tasks(3);
        let matched = Matched::counted(5, 4, 3);
        assert_eq!(
            (matched.distinct, matched.duplicated, matched.outside),
            (3, 1, 1)
        );
        let i = Inspection::of_job(Path::new("job.db"), &queue, (matched, Judged::Counts), ok());
        assert_eq!(i.derived().status(), Status::DataWrong);
        assert!(i.queue_notes()[0].starts_with("judged by --count-sql's counts"));
    }
}
