//! What `reclaim prove` prints and writes: the header, each test's line, the summary, the
//! `--strict` reckoning and the `--junit` test cases; and the report itself, which `prove`
//! fills.

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use crate::cli::ProveArgs;
use crate::engine::{KillWindows, LaneWorker};

/// One test's outcome.
#[derive(Debug, Serialize)]
pub struct TestResult {
    pub name: String,
    /// The data held exactly once in every run AND the test exercised what it names.
    pub pass: bool,
    /// False when the danger the test is about never happened (no kill landed, the second
    /// worker wrote nothing, a crash point never fired): then it proved nothing and does not
    /// pass, whatever the rows say.
    pub tested: bool,
    /// Figures of the worst run in the test.
    pub rows: u64,
    pub duplicated_task_ids: u64,
    pub missing: u64,
    pub detail: String,
    /// The test does not apply to this job (why is in `detail`): neither a pass nor a failure.
    pub skipped: bool,
    /// Where the kills of this test's nights landed (window -> count).
    pub kills_in_window: KillWindows,
    /// Said beside a PASS when no kill landed in the window that breaks the strategy.
    pub unearned: Option<String>,
    /// What a failure means, from the postmortem's symptom table.
    pub lessons: Vec<String>,
    /// Kills this test's nights planned that never fired (`--strict` fails a pass with any).
    pub not_fired: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct ProveReport {
    pub strategy: String,
    pub seed: u64,
    pub items: u64,
    pub tests: Vec<TestResult>,
    /// Where every kill of every night landed (window -> count).
    pub kills_in_window: KillWindows,
    /// The windows no kill of any night landed in.
    pub windows_never_hit: Vec<String>,
    pub passed: usize,
    /// Tests that did not pass: a data failure, or a test that tested nothing.
    pub failed: usize,
    /// Of `failed`, those that tested nothing (`tested: false`) with the data intact.
    pub not_tested: usize,
    /// Tests that do not apply to the job (an external job without a checkpoint table).
    pub skipped: usize,
    /// Where the databases are kept (only when something failed).
    pub kept: Option<PathBuf>,
}

impl ProveReport {
    /// What `--strict` holds against a night of passes: a window that breaks the strategy no
    /// kill reached, kills that could not be placed against a checkpoint, a test skipped.
    #[must_use]
    pub fn untested(&self) -> Vec<String> {
        let mut said = Vec::new();
        for test in &self.tests {
            if let Some(unearned) = &test.unearned {
                said.push(format!("{}: {unearned}", test.name));
            }
            if test.skipped {
                said.push(format!("{}: skipped", test.name));
            }
            for never in &test.not_fired {
                said.push(format!("{}: {never}", test.name));
            }
            if test.kills_in_window.unplaced > 0 {
                said.push(format!(
                    "{}: {} after a commit could not be placed before or after a checkpoint",
                    test.name,
                    crate::text::count(u64::from(test.kills_in_window.unplaced), "kill", "kills")
                ));
            }
        }
        said
    }

    /// One JUnit test case per test; with `strict`, a pass that did not test all it set out to
    /// is a failure there too.
    #[must_use]
    pub fn junit_cases(&self, strict: bool) -> Vec<crate::junit::Case> {
        use crate::junit::{Case, CaseResult};
        let class = format!("prove.{}", self.strategy);
        self.tests
            .iter()
            .map(|test| {
                let mark = |what: &str| format!("{what}: {}", test.detail);
                let outcome = if test.skipped {
                    CaseResult::Skipped(test.detail.clone())
                } else if !test.tested && !test.pass {
                    // The detail already begins `NOT TESTED: ...`.
                    CaseResult::Failed(test.detail.clone())
                } else if !test.pass {
                    CaseResult::Failed(mark("FAIL"))
                } else if strict
                    && (test.unearned.is_some()
                        || test.kills_in_window.unplaced > 0
                        || !test.not_fired.is_empty())
                {
                    CaseResult::Failed(
                        test.unearned
                            .clone()
                            .or_else(|| test.not_fired.first().cloned())
                            .unwrap_or_else(|| {
                                "kills could not be placed against a checkpoint".into()
                            }),
                    )
                } else {
                    CaseResult::Passed
                };
                Case {
                    class: class.clone(),
                    name: test.name.clone(),
                    outcome,
                    detail: test.detail.clone(),
                }
            })
            .collect()
    }
}

/// The first line: what is on trial, and with which seed.
pub(super) fn print_header(
    worker: &LaneWorker,
    args: &ProveArgs,
    seed: u64,
    dir: &std::path::Path,
    out: &mut dyn Write,
) {
    let _ = match worker {
        LaneWorker::Strategy(strategy) => writeln!(
            out,
            "reclaim prove  strategy={strategy}  items={}  delay={}ms  seed={seed}",
            args.items, args.delay_ms
        ),
        LaneWorker::Exec(job) => writeln!(
            out,
            "reclaim prove  exec={:?}  items={}  seed={seed}\n               rows in {} keyed by {}; queue {}\n               each test in a fresh folder under {}",
            job.command,
            job.queue.len(),
            crate::text::escape_controls(&job.rows.table),
            crate::text::escape_controls(&job.rows.key),
            job.queue.describe(),
            dir.display()
        ),
    };
}

pub(super) fn print_test(number: usize, test: &TestResult, out: &mut dyn Write) {
    let mark = match (test.pass, test.tested) {
        _ if test.skipped => "SKIPPED",
        (true, _) => "PASS",
        (false, false) => "NOT TESTED",
        (false, true) => "FAIL",
    };
    let _ = writeln!(out, "{number}. {mark}  {}", test.name);
    if let Some(unearned) = &test.unearned {
        let _ = writeln!(out, "         ({unearned})");
    }
    let _ = writeln!(out, "         {}", test.detail);
    if !test.pass && test.tested {
        for lesson in &test.lessons {
            let _ = writeln!(out, "         -> {lesson}");
        }
    }
}

pub(super) fn print_summary(report: &ProveReport, out: &mut dyn Write) {
    let untested = if report.not_tested > 0 {
        format!(
            " ({} NOT TESTED: a test that tested nothing does not pass)",
            report.not_tested
        )
    } else {
        String::new()
    };
    let skipped = if report.skipped > 0 {
        format!(
            " ({} SKIPPED: it does not apply to this job)",
            report.skipped
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "result: {} of {} PASS for {}{untested}{skipped}",
        report.passed,
        report.tests.len() - report.skipped,
        report.strategy
    );
    let _ = writeln!(
        out,
        "windows: {}",
        super::run_report::describe_windows(&report.kills_in_window, 0)
    );
    if let Some(dir) = &report.kept {
        let _ = writeln!(out, "databases kept for inspection in {}", dir.display());
    }
}
