//! What `reclaim prove` prints and writes: the header, each test's line, the summary, the
//! `--strict` reckoning and the `--junit` test cases; and the report itself, which `prove`
//! fills.

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use crate::cli::ProveArgs;
use crate::engine::{KillWindows, LaneWorker};
use crate::verdict::account::{Account, Judgement, Kind, Outcome};

/// One test's outcome: its account, judged by the one rule, and its figures.
#[derive(Debug, Serialize)]
pub struct TestResult {
    pub name: String,
    /// `pass`, `fail` or `untested`: the one rule on `account` (`--strict` decides only
    /// whether `untested` fails the command).
    pub outcome: Outcome,
    /// The outcome is pass: the data held exactly once in every run AND the test exercised all
    /// it set out to.
    pub pass: bool,
    /// False when the danger the test is about never happened (no kill landed, the second
    /// worker wrote nothing, nothing to wipe) or the test was skipped.
    pub tested: bool,
    /// The test does not apply to this job (why is in `detail`): untested, never a pass.
    pub skipped: bool,
    /// What the test saw go wrong and left untested, each with its kind.
    pub account: Account,
    /// Figures of the worst run in the test.
    pub rows: u64,
    pub duplicated_task_ids: u64,
    pub missing: u64,
    pub detail: String,
    /// Where the kills of this test's nights landed (window -> count).
    pub kills_in_window: KillWindows,
    /// What a failure means, from the postmortem's symptom table.
    pub lessons: Vec<String>,
    /// Kills this test's nights planned that never fired (in `account` too where that leaves
    /// the test untested: random kills some of which fired do not).
    pub not_fired: Vec<String>,
}

/// A test's figures, beside its account.
#[derive(Debug, Default)]
pub struct TestFigures {
    pub rows: u64,
    pub duplicated_task_ids: u64,
    pub missing: u64,
    pub detail: String,
    pub kills_in_window: KillWindows,
    pub lessons: Vec<String>,
    pub not_fired: Vec<String>,
}

impl TestResult {
    /// A test named `name`, judged by the one rule on `account`.
    #[must_use]
    pub fn judged(name: &str, account: Account, figures: TestFigures) -> Self {
        let outcome = account.outcome();
        Self {
            name: name.to_string(),
            outcome,
            pass: outcome == Outcome::Pass,
            tested: !account.has(Kind::TestedNothing) && !account.has(Kind::Skipped),
            skipped: account.has(Kind::Skipped),
            account,
            rows: figures.rows,
            duplicated_task_ids: figures.duplicated_task_ids,
            missing: figures.missing,
            detail: figures.detail,
            kills_in_window: figures.kills_in_window,
            lessons: figures.lessons,
            not_fired: figures.not_fired,
        }
    }

    /// The one rule's judgement of this test under `--strict` or not.
    #[must_use]
    pub fn judgement(&self, strict: bool) -> Judgement {
        self.account.judge(strict)
    }

    /// The mark its console line begins with, the same decision its JUnit case holds.
    #[must_use]
    pub fn mark(&self, strict: bool) -> String {
        let judged = self.judgement(strict);
        match judged.outcome {
            Outcome::Untested if judged.fails => format!("{} (--strict: a failure)", judged.mark()),
            _ => judged.mark().into(),
        }
    }
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
    /// Tests whose outcome is pass.
    pub passed: usize,
    /// Tests whose outcome is fail: something seen going wrong.
    pub failed: usize,
    /// Tests whose outcome is untested (skipped ones included): a failure only under `--strict`.
    pub not_tested: usize,
    /// Of `not_tested`, those that do not apply to the job.
    pub skipped: usize,
    /// Where the databases are kept (as `--keep` says: by default, only when something
    /// failed).
    pub kept: Option<PathBuf>,
    /// What became of the trial's folder, in words that name the policy.
    pub folder: Option<String>,
    /// `--compare`: the undisturbed night the tests' tables were compared with, in a line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The tests this warehouse cannot run, and why: said, never counted as run.
    pub not_run: Vec<NotRun>,
}

/// A test the trial did not run, because the warehouse cannot hold its fault.
#[derive(Debug, Serialize)]
pub struct NotRun {
    pub test: &'static str,
    pub why: &'static str,
}

impl ProveReport {
    /// The trial's account: every test's, each said with its test's name.
    #[must_use]
    pub fn account(&self) -> Account {
        let mut account = Account::new();
        for test in &self.tests {
            account.absorb(&test.account, &format!("{}: ", test.name));
        }
        account
    }

    /// One JUnit test case per test: the one rule's judgement, as the console line says it.
    #[must_use]
    pub fn junit_cases(&self, strict: bool) -> Vec<crate::verdict::junit::Case> {
        let class = format!("prove.{}", self.strategy);
        self.tests
            .iter()
            .map(|test| crate::verdict::junit::Case {
                class: class.clone(),
                name: test.name.clone(),
                outcome: test.judgement(strict).junit(),
                detail: test.detail.clone(),
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
            crate::base::text::escape_controls(&job.rows.table),
            crate::base::text::escape_controls(&job.rows.key),
            job.queue.describe(),
            dir.display()
        ),
    };
}

pub(super) fn print_test(number: usize, test: &TestResult, strict: bool, out: &mut dyn Write) {
    let _ = writeln!(out, "{number}. {}  {}", test.mark(strict), test.name);
    let _ = writeln!(out, "         {}", test.detail);
    let judged = test.judgement(strict);
    // The rows' verdict and a run never completed are in the detail and the lessons.
    for entry in
        (judged.wrong.iter()).filter(|e| !matches!(e.kind, Kind::Data | Kind::NeverCompleted))
    {
        let _ = writeln!(out, "         wrong: {}", entry.said);
    }
    // A test that does not apply says why in its detail.
    for entry in (judged.untested.iter()).filter(|e| e.kind != Kind::Skipped) {
        let _ = writeln!(out, "         untested: {}", entry.said);
    }
    if judged.outcome == Outcome::Fail {
        for lesson in &test.lessons {
            let _ = writeln!(out, "         -> {lesson}");
        }
    }
}

pub(super) fn print_summary(report: &ProveReport, strict: bool, out: &mut dyn Write) {
    let mut parts = vec![format!("{} PASS", report.passed)];
    if report.failed > 0 {
        parts.push(format!("{} FAIL", report.failed));
    }
    if report.not_tested > 0 {
        let skipped = if report.skipped > 0 {
            format!(
                ", {} of them skipped: it does not apply to this job",
                report.skipped
            )
        } else {
            String::new()
        };
        parts.push(format!(
            "{} UNTESTED ({}{skipped})",
            report.not_tested,
            if strict {
                "--strict fails them"
            } else {
                "not a failure without --strict"
            }
        ));
    }
    let _ = writeln!(
        out,
        "result: {} of {} tests for {}",
        parts.join(", "),
        report.tests.len(),
        report.strategy
    );
    for not_run in &report.not_run {
        let _ = writeln!(out, "not run: {}: {}", not_run.test, not_run.why);
    }
    let _ = writeln!(
        out,
        "windows: {}",
        super::run_report::describe_windows(&report.kills_in_window, 0)
    );
    match (&report.kept, &report.folder) {
        (Some(dir), Some(said)) => {
            let _ = writeln!(out, "databases    {} {said}", dir.display());
        }
        (None, Some(said)) => {
            let _ = writeln!(out, "databases {said}");
        }
        _ => {}
    }
}

impl ProveReport {
    /// The trial's folder kept or removed as `--keep` says, the one rule deciding what failed
    /// (as it decides the exit code); the report says which.
    pub(super) fn settle(
        &mut self,
        folder: crate::base::kept::NightDir,
        night: Option<&mut crate::warehouse::Night>,
        strict: bool,
    ) {
        let failed = self.account().judge(strict).exit_code() != crate::base::exit::OK;
        let summary = format!(
            "{} PASS, {} FAIL, {} UNTESTED",
            self.passed, self.failed, self.not_tested
        );
        let settled = crate::warehouse::settle(folder, night, failed, &summary);
        self.kept = settled.kept.then(|| settled.path.clone());
        self.folder = Some(settled.said());
    }
}

/// Stops the night's PostgreSQL; a failure's rows went with a private cluster not kept.
pub(super) fn close_night(
    night: Option<crate::warehouse::Night>,
    report: &ProveReport,
    args: &ProveArgs,
    out: &mut dyn Write,
) {
    let gone = (report.kept.is_some()
        && night
            .as_ref()
            .is_some_and(crate::warehouse::Night::removes_cluster))
    .then_some("postgres     the failed tests' rows went with the cluster (the folder above holds only heartbeats): run again with --keep always to look at them");
    crate::warehouse::close(night, args.json, gone, out);
}
