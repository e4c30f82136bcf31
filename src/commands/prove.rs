//! `reclaim prove`: the postmortem's three tests, and a sweep over every crash point, run against
//! one strategy with real workers and real kills; or the three tests against the user's own job
//! (`--exec`), each night in a fresh folder. Each verdict comes from the rows.

use std::io::Write;
use std::time::Duration;

use super::prove_nights::Prover;
pub use super::prove_report::{NotRun, ProveReport, TestFigures, TestResult};
use super::prove_report::{close_night, print_header, print_summary, print_test};
use crate::cli::ProveArgs;
use crate::engine::{KillWindows, LaneWorker};
use crate::error::{Context as _, Error};
use crate::harness::RunReport;
use crate::harness::compare::Oracle;
use crate::supervisor::schedule::{DEFAULT_WINDOW, KillPlan};
use crate::task::task_id;
use crate::verdict::Symptom;
use crate::verdict::account::{Account, Kind, Outcome};
use crate::warehouse::Warehouse;
use crate::worker::{CrashAt, CrashPoint, Strategy};

fn exactly_once(report: &RunReport) -> bool {
    report.holds()
}

fn figures(report: &RunReport) -> String {
    let inspection = &report.inspection;
    let rows = format!(
        "{} rows, {} duplicated, {} missing",
        inspection.rows, inspection.duplicated_task_ids, inspection.missing
    );
    // The outbox is judged at the vendor too: a FAIL with right rows must say why.
    let rows = match report.messages {
        Some(m) => format!(
            "{rows}; messages {} duplicated, {} missing",
            m.duplicated, m.missing
        ),
        None => rows,
    };
    // `--compare`: a job judged by its effects says them beside its rows.
    match &report.state {
        Some(state) => format!("{rows}; {}", state.short()),
        None => rows,
    }
}

/// A test's result; `untested` says why it tested nothing, when it did not. Its account is each
/// night's (prefixed `run N:` where there are several), the windows over all its nights, and
/// that; the one rule judges it.
fn result(
    name: &str,
    (reports, oracle): (&[&RunReport], Option<&Oracle>),
    detail: String,
    untested: Option<String>,
) -> TestResult {
    let worst = reports
        .iter()
        .copied()
        .max_by_key(|r| {
            let rows = &r.inspection;
            (rows.duplicated_task_ids + rows.missing, rows.rows)
        })
        .or(reports.first().copied());
    let mut account = Account::new();
    for (i, report) in reports.iter().enumerate() {
        let prefix = if reports.len() > 1 {
            format!("run {}: ", i + 1)
        } else {
            String::new()
        };
        account.absorb(&report.account_but_windows(), &prefix);
    }
    account.absorb(&crate::harness::windows_account(reports), "");
    // What the undisturbed night leaves uncompared, said once for the test's nights.
    if let Some(oracle) = oracle {
        account.absorb(&oracle.account(), "");
    }
    if let Some(why) = untested {
        account.push(Kind::TestedNothing, why);
    }
    let mut lessons: Vec<String> = Vec::new();
    for report in reports {
        for lesson in report.lessons() {
            // "status ok, data wrong" belongs to every failure here; it is said once, last.
            if lesson != Symptom::StatusOkDataWrong.lesson() && !lessons.contains(&lesson) {
                lessons.push(lesson);
            }
        }
    }
    // A run the supervisor gave up on never finished: that is what it says, not that a job
    // said ok over wrong data. "status ok, data wrong" is for the runs that finished wrong.
    for reason in reports.iter().filter_map(|r| r.never_completed()) {
        if !lessons.contains(&reason) {
            lessons.push(reason);
        }
    }
    // Only where a run that finished wrong said ok: a job whose last line claims nothing did
    // not say ok over wrong data.
    let said_ok_over_wrong = reports.iter().any(|r| {
        r.completed && !exactly_once(r) && r.symptoms().contains(&Symptom::StatusOkDataWrong)
    });
    if said_ok_over_wrong {
        lessons.push(Symptom::StatusOkDataWrong.lesson());
    }
    let kills_in_window = reports
        .iter()
        .fold(KillWindows::default(), |sum, r| sum.plus(r.kills_in_window));
    let not_fired = reports
        .iter()
        .enumerate()
        .flat_map(|(i, r)| (r.not_fired().into_iter()).map(move |s| format!("run {}: {s}", i + 1)))
        .collect();
    TestResult::judged(
        name,
        account,
        TestFigures {
            rows: worst.map_or(0, |r| r.inspection.rows),
            duplicated_task_ids: worst.map_or(0, |r| r.inspection.duplicated_task_ids),
            missing: worst.map_or(0, |r| r.inspection.missing),
            detail,
            kills_in_window,
            lessons,
            not_fired,
        },
    )
}

/// Whose worker is on trial: reclaim's strategy, or the user's job (its checkpoint table
/// guessed as `checkpoints` unless named, its vendor, its database's name checked).
fn worker_of(args: &ProveArgs, warehouse: &Warehouse) -> Result<LaneWorker, Error> {
    Ok(
        match (args.job.to_job_on(args.items, warehouse)?, args.strategy) {
            (Some(mut job), _) => {
                // The third test empties the job's checkpoint table: `checkpoints` unless named. The
                // same table places each kill (before or after a checkpoint) when it is there.
                if job.rows.checkpoints.is_none() {
                    job.rows.checkpoints = Some(crate::warehouse::Checkpoints {
                        table: CHECKPOINTS.into(),
                        key: job.rows.key.clone(),
                        guessed: true,
                    });
                }
                // Each night's job is told its vendor, whose messages are judged beside its rows.
                job.vendor = args.vendor.vendor.is_some();
                let name = &args.db_name;
                if name.is_empty() || name.contains('/') || name == "." || name == ".." {
                    return Err(Error::Refused(format!(
                        "--db-name {name:?} must be a file name (each test makes its own folder)"
                    )));
                }
                LaneWorker::Exec(Box::new(job))
            }
            (None, strategy) => LaneWorker::Strategy(strategy.unwrap_or(Strategy::Guarded)),
        },
    )
}

/// Runs `reclaim prove`.
pub(super) fn run(args: &ProveArgs, out: &mut dyn Write) -> Result<u8, Error> {
    // A queue read on the server (--keys-sql on PostgreSQL) needs the warehouse first.
    let early = super::open_for_keys(&args.job, &args.warehouse.warehouse, || open_night(args))?;
    let worker = worker_of(args, &Warehouse::of(early.as_ref()))?;
    let junit = args
        .junit
        .as_deref()
        .map(crate::verdict::junit::check_path)
        .transpose()?;
    let mut night = early.map_or_else(|| open_night(args), |n| Ok(Some(n)))?;
    let seed = args.seed.unwrap_or_else(rand::random);
    let what = worker.strategy().map_or("exec", |s| s.name());
    let mut folder = Some(super::kept::night(
        "reclaim prove",
        what,
        args.warehouse.keep,
    )?);
    let dir = folder
        .as_ref()
        .map(|f| f.path().to_path_buf())
        .unwrap_or_default();
    let mut prover = Prover {
        db_name: worker.job().map(|_| args.db_name.clone()),
        worker: worker.clone(),
        items: worker.job().map_or(args.items, |job| job.queue.len()),
        delay: Duration::from_secs_f64(args.delay_ms / 1000.0),
        dir: dir.clone(),
        exe: std::env::current_exe().context(|| "cannot find reclaim's own executable".into())?,
        runs: 0,
        progress_deadline: args.deadline.progress_deadline,
        vendor: args.vendor.vendor,
        warehouse: Warehouse::of(night.as_ref()),
        oracle: None,
    };
    if !args.json {
        print_header(&worker, args, seed, &dir, out);
    }
    let no_answers = super::NoAnswers::on(&args.warehouse.warehouse);
    let not_run = not_run(args, no_answers);
    let mut tests = Vec::new();
    trial(
        &mut prover,
        args,
        seed,
        no_answers.is_none(),
        &mut tests,
        out,
    )
    .map_err(|e| super::kept::ended_in(folder.take(), e))?;
    let count = |outcome| tests.iter().filter(|t| t.outcome == outcome).count();
    let (passed, failed, not_tested) = (
        count(Outcome::Pass),
        count(Outcome::Fail),
        count(Outcome::Untested),
    );
    let skipped = tests.iter().filter(|t| t.skipped).count();
    let kills_in_window = tests
        .iter()
        .fold(KillWindows::default(), |sum, t| sum.plus(t.kills_in_window));
    let mut report = ProveReport {
        strategy: match &worker {
            LaneWorker::Strategy(strategy) => strategy.name().to_string(),
            LaneWorker::Exec(job) => job.command.clone(),
        },
        skipped,
        seed,
        items: prover.items,
        tests,
        kills_in_window,
        windows_never_hit: kills_in_window
            .never_hit()
            .into_iter()
            .map(|w| w.name().to_string())
            .collect(),
        passed,
        failed,
        not_tested,
        kept: None,
        folder: None,
        reference: prover.oracle.as_ref().map(Oracle::line),
        not_run,
    };
    if let Some(folder) = folder {
        report.settle(folder, night.as_mut(), args.strict);
    }
    let code = finish(&report, args, junit.as_ref(), out);
    close_night(night, &report, args, out);
    code
}

/// Runs the tests that apply, each said as it ends (`tests` holds them): the postmortem's
/// three; the crash-point sweep for reclaim's own worker; a pause past the lease for the
/// strategies that claim items; two lost answers where the warehouse can lose them
/// (`answers`); a server restart where the server is a private cluster of reclaim's own.
fn trial(
    prover: &mut Prover,
    args: &ProveArgs,
    seed: u64,
    answers: bool,
    tests: &mut Vec<TestResult>,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let mut emit = |test: TestResult, out: &mut dyn Write| {
        if !args.json {
            print_test(tests.len() + 1, &test, args.strict, out);
        }
        tests.push(test);
    };
    if args.compare.compare {
        prover.undisturbed(&args.compare, (!args.json).then_some(&mut *out))?;
    }
    emit(kill_test(prover, args, seed)?, out);
    emit(two_workers(prover)?, out);
    emit(
        wiped_checkpoints(prover, args.job.checkpoint_table.as_deref())?,
        out,
    );
    // Named crash points are places in reclaim's own worker; someone else's job has none.
    if prover.worker.job().is_none() {
        emit(crash_sweep(prover)?, out);
    }
    // A pause past a lease tests what holds items by one: reclaim's claiming strategies (an
    // own job's leases, if it has any, reclaim cannot see; `run --pause-at-rows` pauses it).
    if prover.worker.strategy().is_some_and(Strategy::claims_items) {
        emit(pause_past_lease(prover)?, out);
    }
    // A commit's answer travels on a connection: on SQLite there is none to lose.
    if answers {
        emit(lost_answers(prover)?, out);
    }
    if let Some(test) = server_restart(prover).transpose()? {
        emit(test, out);
    }
    Ok(())
}

/// The tests the warehouse cannot hold, and why: two commits' answers lost (`no_answers`), and
/// the server's restart (only a private cluster is reclaim's to restart).
fn not_run(args: &ProveArgs, no_answers: Option<super::NoAnswers>) -> Vec<NotRun> {
    let mut not_run: Vec<NotRun> = (no_answers.iter())
        .map(|no| NotRun {
            test: LOST_ANSWERS,
            why: no.why(),
        })
        .collect();
    let no_restart = match &args.warehouse.warehouse {
        crate::warehouse::Spec::Sqlite => {
            Some("SQLite has no server to restart (--warehouse postgres runs it)")
        }
        crate::warehouse::Spec::Server(_) => {
            Some("reclaim restarts only a server it started (--warehouse postgres), never yours")
        }
        crate::warehouse::Spec::Private => None,
    };
    not_run.extend(no_restart.map(|why| NotRun {
        test: SERVER_RESTART,
        why,
    }));
    not_run
}

/// `--warehouse` for prove: every night's lane in a schema of its own on the night's
/// PostgreSQL (`Prover::lane` claims it), reclaim's strategies and an `--exec` job alike.
fn open_night(args: &ProveArgs) -> Result<Option<crate::warehouse::Night>, Error> {
    Ok((args.warehouse.open()).map_err(crate::warehouse::StoreError::from)?)
}

/// The summary (or JSON), the JUnit file, and the exit code: the trial's account judged by the
/// one rule, as each test's line and JUnit case are.
fn finish(
    report: &ProveReport,
    args: &ProveArgs,
    junit: Option<&crate::verdict::junit::Target>,
    out: &mut dyn Write,
) -> Result<u8, Error> {
    let judged = report.account().judge(args.strict);
    if let Some(path) = junit {
        crate::verdict::junit::write(path, "reclaim prove", &report.junit_cases(args.strict))
            .context(|| format!("cannot write --junit {}", path.display()))?;
    }
    if args.json {
        let value = super::run_report::with_judgement(report, &judged)?;
        let _ = writeln!(out, "{value}");
    } else {
        print_summary(report, args.strict, out);
        let _ = writeln!(out, "outcome: {}", judged.headline());
        if let Some(path) = junit {
            let _ = writeln!(out, "junit: {}", path.display());
        }
    }
    Ok(judged.exit_code())
}

/// 1. Random kills and restarts, three runs in a row: a single green run proves little.
fn kill_test(prover: &mut Prover, args: &ProveArgs, seed: u64) -> Result<TestResult, Error> {
    // The postmortem's window (0.2..0.9 s) is for a 10 ms item; it scales with the pace of
    // reclaim's own workers (an external job's kills are placed by rows, below).
    let factor = if prover.worker.job().is_some() {
        1.0
    } else {
        args.delay_ms / 10.0
    };
    let window = (
        DEFAULT_WINDOW.0.mul_f64(factor),
        DEFAULT_WINDOW.1.mul_f64(factor),
    );
    // An external job's start is its own (an interpreter's, on a loaded machine, can outlast the
    // whole window, and every kill then lands before its first commit): its kills are placed by
    // work instead, each once its attempt has written 1..=N rows since its spawn (N = items /
    // (kills + 1)), so each lands after a commit at any load, and the same seed draws the same.
    let rows = (prover.worker.job().is_some())
        .then(|| (1, (prover.items / (u64::from(args.kills) + 1)).max(1)));
    let mut reports = Vec::new();
    for run in 0..3 {
        let mut lane = prover.lane("kill-test", 1, None, prover.delay)?;
        // With a vendor, one kill more in each run: when the vendor has message N (seeded, in
        // the queue's first half), before it answers. Where that lands tells the job's design:
        // its row not committed (after-send), or committed (after-relay-send).
        let at_message = prover
            .vendor
            .map(|_| 1 + seed.wrapping_add(run) % (prover.items / 2).max(1));
        lane.vendor.hold_at = at_message;
        let plan = KillPlan {
            random: args.kills,
            window,
            rows,
            at_task: None,
            at_rows: None,
            at_message,
            replayed: Vec::new(),
            seed: seed.wrapping_add(run),
        };
        reports.push(prover.night(lane, &plan)?);
    }
    let detail = reports
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let kills = crate::base::text::count(u64::from(r.kills), "kill", "kills");
            format!("run {}: {} ({kills})", i + 1, figures(r))
        })
        .collect::<Vec<_>>()
        .join("; ");
    // A kill that never fired, or kills that all came before their attempt's first commit, are
    // the night's account's to say (`windows_account`, over the three runs); a test none of
    // whose runs was killed at all says how to give the kills room.
    let untested = reports.iter().all(|r| r.kills == 0).then(|| {
        format!(
            "in every run, the job finished before the first of its {} planned kills, so none landed; use more --items or a larger --delay-ms",
            args.kills
        )
    });
    Ok(result(
        "kill test, three runs in a row",
        (&reports.iter().collect::<Vec<_>>(), prover.oracle.as_ref()),
        detail,
        untested,
    ))
}

/// 2. Two workers at once on the same database: duplicate delivery from an at-least-once queue.
fn two_workers(prover: &mut Prover) -> Result<TestResult, Error> {
    let lane = prover.lane("two-workers", 2, None, prover.delay)?;
    let report = prover.night(lane, &KillPlan::default())?;
    // reclaim's own rows carry the process that wrote them; someone else's need not.
    let writers = match prover.worker {
        LaneWorker::Strategy(_) => format!(
            "{} wrote rows, ",
            crate::base::text::count(report.runs().unwrap_or(0), "worker", "workers")
        ),
        LaneWorker::Exec(_) => String::new(),
    };
    // Attempts, not workers: a worker that died and was restarted counts each start.
    let detail = format!(
        "{}; {writers}{} had started before the first finished",
        figures(&report),
        crate::base::text::count(report.started_before_first_done, "attempt", "attempts")
    );
    // One worker done before the other started is two runs in a row, not at once. (Under a
    // unique key the second may write no row at all: the key refusing its every duplicate is
    // the test, so rows written cannot be the measure.)
    let untested = (report.started_before_first_done < 2).then(|| {
        "one worker finished before the other started; use more --items or a larger --delay-ms"
            .to_string()
    });
    Ok(result(
        "two workers at once on one database",
        (&[&report], prover.oracle.as_ref()),
        detail,
        untested,
    ))
}

/// The table an external job's checkpoints are looked for in (and the third test empties) when
/// `--checkpoint-table` names none.
const CHECKPOINTS: &str = "checkpoints";

/// 3. Every checkpoint deleted, then a rerun: the unique key alone must hold.
///
/// `named` is the job's checkpoint table as `--checkpoint-table` gave it; without it,
/// `CHECKPOINTS` is tried.
fn wiped_checkpoints(prover: &mut Prover, named: Option<&str>) -> Result<TestResult, Error> {
    const NAME: &str = "checkpoints wiped, then a rerun";
    let checkpoint_table = named.unwrap_or(CHECKPOINTS);
    let mut lane = prover.lane("wiped", 1, None, Duration::ZERO)?;
    let db = lane.db.clone();
    let first = prover.night(lane.clone(), &KillPlan::default())?;
    let wiped = match &mut lane.worker {
        LaneWorker::Strategy(_) => prover.warehouse.wipe_checkpoints(&db)?,
        LaneWorker::Exec(job) => {
            // The rerun is the same job on the same database: its setup has run already.
            job.setup_sql = None;
            let wiped = prover.warehouse.wipe_table(&db, checkpoint_table)?;
            let Some(wiped) = wiped else {
                // What is known: the table named is not there; or none was named, and none
                // has the name tried.
                let why = match named {
                    Some(table) => format!(
                        "the job has no {table} table (--checkpoint-table {table}) to delete"
                    ),
                    None => format!(
                        "reclaim was not told the job's checkpoint table (--checkpoint-table) and found none named {CHECKPOINTS}, so it cannot delete it"
                    ),
                };
                let detail = format!("SKIPPED: {why}; first run: {}", figures(&first));
                return Ok(skipped(NAME, why, detail));
            };
            wiped
        }
    };
    let second = prover.night(lane, &KillPlan::default())?;
    let rerun = match second.never_completed().as_deref() {
        None => figures(&second),
        Some(why) => format!(
            "{}, never completed ({})",
            figures(&second),
            why.trim_start_matches("the job never completed: ")
        ),
    };
    let detail = format!(
        "first run: {}; {wiped} checkpoints deleted; rerun: {rerun}",
        figures(&first)
    );
    // An external job with a checkpoint table that finished without one checkpoint in it left
    // nothing to wipe: its rerun took the same path as the first run, and its unique key alone
    // was never put to the test. (reclaim's keyed strategy keeps no checkpoints at all: its
    // rerun is the key alone, which is the test.)
    let untested = (wiped == 0 && prover.worker.job().is_some()).then(|| {
        "the checkpoint table was empty after a whole run, so deleting it changed nothing"
            .to_string()
    });
    Ok(result(
        NAME,
        (&[&second], prover.oracle.as_ref()),
        detail,
        untested,
    ))
}

/// A test that does not apply to the job, and why: untested, and said so.
fn skipped(name: &str, why: String, detail: String) -> TestResult {
    let mut account = Account::new();
    account.push(Kind::Skipped, why);
    TestResult::judged(
        name,
        account,
        TestFigures {
            detail,
            ..TestFigures::default()
        },
    )
}

/// 4. Beyond the postmortem: every named crash point, at the first, a middle and the last task.
fn crash_sweep(prover: &mut Prover) -> Result<TestResult, Error> {
    let items = prover.items;
    let tasks = [0, items / 2, items - 1];
    let mut reports = Vec::new();
    let mut failures = Vec::new();
    let mut never_fired = Vec::new();
    let strategy = prover.worker.strategy();
    let points = CrashPoint::ALL
        .into_iter()
        .filter(|p| strategy.is_none_or(|s| p.reached_by(s, false)));
    for point in points {
        for task in tasks {
            let crash = CrashAt { task, point };
            let lane = prover.lane(
                &format!("crash-{point}-{task}"),
                1,
                Some(crash),
                Duration::ZERO,
            )?;
            let report = prover.night(lane, &KillPlan::default())?;
            if !exactly_once(&report) {
                failures.push(format!("{crash}: {}", figures(&report)));
            }
            // The crash kills the first attempt, so a crash that fired shows as a restart.
            if report.restarts == 0 {
                never_fired.push(crash.to_string());
            }
            reports.push(report);
        }
    }
    let task_names: Vec<String> = tasks.iter().map(|&t| task_id(t)).collect();
    let detail = if failures.is_empty() {
        format!(
            "{} crashes, each followed by a restart: every point at {}",
            reports.len(),
            task_names.join(", ")
        )
    } else {
        format!(
            "{} of {} crashes broke the data: {}",
            failures.len(),
            reports.len(),
            failures.join("; ")
        )
    };
    let untested = (!never_fired.is_empty()).then(|| {
        format!(
            "{} of {} crashes never happened ({})",
            never_fired.len(),
            reports.len(),
            never_fired.join(", ")
        )
    });
    Ok(result(
        "crash-point sweep (every point, first/middle/last task)",
        (&reports.iter().collect::<Vec<_>>(), prover.oracle.as_ref()),
        detail,
        untested,
    ))
}

/// 5. Beyond the postmortem, for claim and fenced: a worker stopped past its lease.
///
/// Two workers claim the queue; the one that reaches the middle task's write is stopped there
/// (SIGSTOP) for twice the lease, so the other takes the item over, and continued (SIGCONT):
/// a worker that trusts its lease writes the item a second time; one that fences its write
/// with the lease's number writes nothing for it.
fn pause_past_lease(prover: &mut Prover) -> Result<TestResult, Error> {
    let pause = crate::worker::PauseAt::past_lease(prover.items / 2);
    let mut lane = prover.lane("pause", 2, None, prover.delay)?;
    lane.pause_at = Some(pause);
    let report = prover.night(lane, &KillPlan::default())?;
    let detail = format!(
        "{}; the worker at {}'s write stopped for {} s of the night, twice its lease",
        figures(&report),
        task_id(pause.task),
        pause.secs
    );
    // A pause that never landed, or landed holding no lease, is the night's account's to say.
    Ok(result(
        "a worker paused past its lease",
        (&[&report], prover.oracle.as_ref()),
        detail,
        None,
    ))
}

/// The lost-answer test's name.
const LOST_ANSWERS: &str = "two commits' answers lost";

/// The row counts whose commits' answers the lost-answer test loses: a third and two thirds of
/// the way through the queue (each commit the one that brings the table to that many rows), or
/// every row count of a queue of one or two items.
fn lost_answer_rows(items: u64) -> Vec<u64> {
    let first = (items / 3).max(1);
    let second = (2 * items / 3).max(first + 1).min(items);
    let mut rows = vec![first];
    if second > first {
        rows.push(second);
    }
    rows
}

/// 6. Beyond the postmortem, on PostgreSQL: the answers to two commits lost.
///
/// Each commit lands on the server and the worker's connection is closed before the answer
/// reaches it; what the worker does next (tries again, dies and is restarted, gives up) is its
/// own, and the rows say whether it wrote anything twice.
fn lost_answers(prover: &mut Prover) -> Result<TestResult, Error> {
    let planned = lost_answer_rows(prover.items);
    let mut lane = prover.lane("lost-answers", 1, None, prover.delay)?;
    lane.lose_answers.clone_from(&planned);
    let report = prover.night(lane, &KillPlan::default())?;
    let at: Vec<String> = planned.iter().map(u64::to_string).collect();
    let lost = if report.answers_lost.is_empty() {
        "none lost".to_string()
    } else {
        format!("lost: {}", report.lost_keys())
    };
    let detail = format!(
        "{}; the answers to the commits reaching {} rows ({lost})",
        figures(&report),
        at.join(" and ")
    );
    // A planned loss that never happened is the night's account's to say (not fired).
    Ok(result(
        LOST_ANSWERS,
        (&[&report], prover.oracle.as_ref()),
        detail,
        None,
    ))
}

/// The server-restart test's name.
const SERVER_RESTART: &str = "the server restarted mid-night";

/// 7. Beyond the postmortem, on a private cluster: the server restarted mid-night.
///
/// Once the table holds half the queue, the cluster is restarted at once (`pg_ctl restart -m
/// immediate`): every session ends, a transaction still open rolls back, and the worker must
/// reconnect and go on from what the database says it finished. `None` without a cluster of
/// reclaim's own.
fn server_restart(prover: &mut Prover) -> Option<Result<TestResult, Error>> {
    prover.warehouse.restarter()?;
    let at_rows = (prover.items / 2).max(1);
    let night = prover
        .lane("server-restart", 1, None, prover.delay)
        .and_then(|lane| prover.night_restarted(lane, at_rows));
    Some(night.map(|report| {
        let detail = format!(
            "{}; the cluster restarted at {at_rows} rows (pg_ctl restart -m immediate)",
            figures(&report)
        );
        // A restart that never happened is the night's account's to say (not fired).
        result(
            SERVER_RESTART,
            (&[&report], prover.oracle.as_ref()),
            detail,
            None,
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::lost_answer_rows;

    #[test]
    fn the_lost_answers_fall_a_third_and_two_thirds_of_the_way_and_within_any_queue() {
        assert_eq!(lost_answer_rows(200), [66, 133]);
        assert_eq!(lost_answer_rows(30), [10, 20]);
        assert_eq!(lost_answer_rows(3), [1, 2]);
        assert_eq!(lost_answer_rows(2), [1, 2]);
        assert_eq!(lost_answer_rows(1), [1]);
    }
}
