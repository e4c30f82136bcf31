//! What `reclaim prove` prints and writes: the header, each test's line, the summary, the
//! `--strict` reckoning and the `--junit` test cases.

use std::io::Write;

use super::prove::{ProveReport, TestResult};
use crate::cli::ProveArgs;
use crate::engine::LaneWorker;

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
        super::run_report::describe_windows(&report.kills_in_window)
    );
    if let Some(dir) = &report.kept {
        let _ = writeln!(out, "databases kept for inspection in {}", dir.display());
    }
}
