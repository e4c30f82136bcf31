//! `reclaim run`: one lane driven headless through the night, its timeline printed as it happens,
//! then the verdict derived from the rows.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use crate::cli::RunArgs;
use crate::engine::{EngineConfig, KillWindow, KillWindows, LaneConfig, LaneWorker, Pace};
use crate::error::{Context as _, Error};
use crate::harness::{self, RunReport};
use crate::paths;
use crate::record::Recording;
use crate::scenario::Scenario;
use crate::supervisor::schedule::KillPlan;

/// Runs `reclaim run`.
pub(super) fn run(args: &RunArgs, out: &mut dyn Write) -> Result<u8, Error> {
    if let Some(name) = &args.scenario {
        return run_scenario(name, args, out);
    }
    // Every input is checked before anything is created or started.
    let worker = lane_worker(args)?;
    let queue = match &worker {
        LaneWorker::Exec(job) => job.queue.clone(),
        LaneWorker::Strategy(_) => crate::queue::Queue::tasks(args.items),
    };
    let (crash_at, kill_at_task) = planned_kills(args, &worker, &queue)?;
    let replayed = match &args.replay_schedule {
        Some(file) => {
            let recording = Recording::load(file)?;
            if recording.truncated {
                eprintln!(
                    "reclaim: warning: {}: the last line was cut short; replaying the kills before it",
                    file.display()
                );
            }
            // An --exec job's kills are placed by its own keys, matched to its queue.
            recording.kill_moments_keyed(|key| queue.index_of(key))
        }
        None => Vec::new(),
    };
    let given_db = args.db.as_deref().map(paths::new_warehouse).transpose()?;
    let record = args
        .record
        .as_deref()
        .map(|path| paths::new_recording(path, given_db.as_deref()))
        .transpose()?;
    // The last step before the night: claim the warehouse atomically, so a second reclaim
    // given the same new path is refused rather than sharing (and reporting) this night.
    let db = match given_db {
        Some(db) => {
            paths::claim_new(
                &db,
                "--db",
                "another reclaim (or something else) created it a moment ago; give a new --db path",
            )?;
            db
        }
        None => paths::fresh_db_path("run")
            .context(|| "cannot create a folder for the warehouse".into())?,
    };
    let seed = args.seed.unwrap_or_else(rand::random);
    let exe = std::env::current_exe().context(|| "cannot find reclaim's own executable".into())?;
    let plan = KillPlan {
        random: args.kills,
        window: args.kill_window,
        at_task: kill_at_task,
        at_rows: args.kill_at_rows,
        at_message: args.vendor.kill_at_message,
        seed,
        replayed,
    };
    let lane = LaneConfig {
        delay: Duration::from_secs_f64(args.delay_ms / 1000.0),
        // At speed 1 an item takes --delay-ms of real time: that many sim seconds.
        paces: vec![Pace::per_item(args.delay_ms / 1000.0 * args.scale)],
        batch: args.batch,
        workers: usize::from(args.workers),
        sync: args.sync,
        crash_at,
        side_effect: args.vendor.side_effect,
        long_item: args.long.long_item,
        split: args.long.split,
        vendor: crate::vendor::VendorModes {
            keys: (args.vendor.vendor)
                .or(args.vendor.vendor_keys)
                .unwrap_or(crate::vendor::Keys::Honour),
            drop_responses: args.vendor.vendor_drop_responses.unwrap_or(0.0),
            seed,
            hold_at: args.vendor.kill_at_message,
        },
        ..LaneConfig::new(worker.clone(), db.clone(), queue.len())
    };
    refuse_old_vendor_db(&lane)?;
    let config = EngineConfig {
        restart_delay: args.restart_delay,
        max_restarts: args.max_restarts,
        scale: args.scale,
        ..EngineConfig::new(vec![lane], plan.clone(), exe)
    };
    if !args.json {
        print_header(args, (&worker, &queue), &plan, seed, out);
    }
    let record = record.as_deref().map(|path| (path, command_line()));
    let report = harness::drive_recorded(config, &plan, record, |line| {
        if !args.json {
            let _ = writeln!(out, "{line}");
        }
    })?;
    finish(&report, args, out)
}

/// The report as JSON or the verdict's lines, and the exit code (`--strict` fails a green
/// night that did not test all it set out to).
fn finish(report: &RunReport, args: &RunArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let untested = report.untested();
    if args.json {
        let mut value = serde_json::to_value(report).map_err(|e| Error::Refused(e.to_string()))?;
        if let Some(object) = value.as_object_mut() {
            object.insert("untested".into(), untested.clone().into());
        }
        let _ = writeln!(out, "{value}");
    } else {
        print_verdict(report, out);
        if args.strict && report.holds() && !untested.is_empty() {
            let _ = writeln!(
                out,
                "strict       exit 1: the data holds, but this night did not test all it set out to: {}",
                untested.join("; ")
            );
        }
    }
    Ok(if args.strict && report.holds() && !untested.is_empty() {
        crate::exit::DATA_WRONG
    } else {
        report.exit_code()
    })
}

/// The kills aimed at a place in the work, checked against the queue: reclaim's own worker's
/// named crash point (an --exec job's plan is in its job), and `--kill-at-task`'s key.
fn planned_kills(
    args: &RunArgs,
    worker: &LaneWorker,
    queue: &crate::queue::Queue,
) -> Result<(Option<crate::worker::CrashAt>, Option<u64>), Error> {
    // reclaim's own worker's named points; an --exec job's plan is in its job.
    let crash_at: Option<crate::worker::CrashAt> = match (&args.crash_at, worker.strategy()) {
        (Some(text), Some(_)) => Some(text.parse().map_err(|e: String| {
            Error::Refused(format!(
                "--crash-at {}: {e}",
                crate::text::escape_controls(text)
            ))
        })?),
        _ => None,
    };
    check_side_effect(args, worker, crash_at)?;
    if let Some(crash) = crash_at {
        crate::task::check_in_queue("--crash-at", crash.task, queue.len())?;
    }
    let kill_at_task = args
        .kill_at_task
        .as_deref()
        .map(|typed| resolve_key("--kill-at-task", typed, queue))
        .transpose()?;
    if kill_at_task.is_some() && worker.job().is_some_and(|j| j.rows.count_sql.is_some()) {
        return Err(Error::Refused(
            "--kill-at-task waits for a key's row, and --count-sql only counts rows: it would never see it; use --kill-at-rows N".into(),
        ));
    }
    Ok((crash_at, kill_at_task))
}

/// Refused before the night, like the warehouse: the vendor records a night afresh.
fn refuse_old_vendor_db(lane: &LaneConfig) -> Result<(), Error> {
    let vendor_db = lane.vendor_db();
    if lane.needs_vendor() && vendor_db.exists() {
        return Err(Error::Refused(format!(
            "{} exists (the vendor's database for this warehouse); give a new --db path",
            vendor_db.display()
        )));
    }
    Ok(())
}

/// A side effect, and the vendor's modes, only where a vendor is reached, and only from
/// reclaim's own worker; `after-relay-send` only where a relay runs.
fn check_side_effect(
    args: &RunArgs,
    worker: &LaneWorker,
    crash_at: Option<crate::worker::CrashAt>,
) -> Result<(), Error> {
    let v = &args.vendor;
    let strategy = worker.strategy();
    if strategy.is_none() && v.side_effect.is_some() {
        return Err(Error::Refused(
            "--side-effect makes reclaim's own worker send; your --exec job sends what it sends: give it a vendor with --vendor (it is told RECLAIM_VENDOR_URL)".into(),
        ));
    }
    let job_sends = worker.job().is_some_and(|j| j.vendor);
    let reaches_vendor = v.side_effect.is_some()
        || strategy.is_some_and(crate::worker::Strategy::relays)
        || job_sends;
    if !reaches_vendor
        && (v.vendor_keys.is_some()
            || v.vendor_drop_responses.is_some()
            || v.kill_at_message.is_some())
    {
        let how = if worker.job().is_some() {
            "give your job a vendor with --vendor [honour|ignore|expire=SECS]"
        } else {
            "add --side-effect email or use --strategy outbox"
        };
        return Err(Error::Refused(format!(
            "--vendor-keys, --vendor-drop-responses and --kill-at-message describe the vendor the items reach, and none is reached; {how}"
        )));
    }
    if let Some(n) = v.kill_at_message {
        let items = worker.job().map_or(args.items, |j| j.queue.len());
        if n > items {
            return Err(Error::Refused(format!(
                "--kill-at-message {n} is beyond the queue of {items} items, one message each; it would never happen"
            )));
        }
    }
    if let Some(long) = args.long.long_item {
        crate::task::check_in_queue("--long-item", long.task, args.items)?;
        if strategy.is_none() {
            return Err(Error::Refused(
                "--long-item needs reclaim's own worker (--strategy): an --exec job's items take what they take".into(),
            ));
        }
    }
    if args.long.split > 1 && !strategy.is_some_and(crate::worker::Strategy::splits) {
        return Err(Error::Refused(format!(
            "--split {} needs a strategy that checkpoints in the row's transaction: guarded or outbox",
            args.long.split
        )));
    }
    if let Some(crash) = crash_at {
        if crash.point == crate::worker::CrashPoint::AfterRelaySend
            && !strategy.is_some_and(crate::worker::Strategy::relays)
        {
            return Err(Error::Refused(format!(
                "--crash-at {crash}: only the outbox strategy has a relay to crash"
            )));
        }
        if crash.point == crate::worker::CrashPoint::AfterSend && !reaches_vendor {
            return Err(Error::Refused(format!(
                "--crash-at {crash}: nothing is sent without --side-effect email (or --strategy outbox)"
            )));
        }
    }
    Ok(())
}

/// Where a key the user typed stands in the queue; refused (before anything starts) when the
/// queue has no such key: a kill there would never happen.
fn resolve_key(flag: &str, typed: &str, queue: &crate::queue::Queue) -> Result<u64, Error> {
    queue.resolve(typed).ok_or_else(|| {
        Error::Refused(format!(
            "{flag} {} is not a key of the queue ({}): it is beyond the queue or spelled otherwise, so it would never happen",
            crate::text::escape_controls(typed),
            queue.describe()
        ))
    })
}

/// Whose worker runs: reclaim's own strategy, or the user's command (checked whole first).
fn lane_worker(args: &RunArgs) -> Result<LaneWorker, Error> {
    Ok(match (args.job.to_job(args.items)?, args.strategy) {
        (Some(mut job), _) => {
            job.vendor = args.vendor.vendor.is_some();
            // A point your job announces (examples/reclaim_point.py), in a unit of work of its
            // queue; a key outside it would never be reached.
            if let Some(text) = &args.crash_at {
                let mut plan = crate::points::CrashPlan::parse(text).map_err(Error::Refused)?;
                let index = resolve_key("--crash-at", &plan.key, &job.queue)?;
                plan.key = job.queue.key(index);
                job.crash_at = Some(plan);
            }
            if args.sync == crate::store::SyncMode::Full {
                return Err(Error::Refused(
                    "--sync sets how reclaim's own worker syncs its commits; an --exec job sets its own PRAGMA synchronous".into(),
                ));
            }
            if args.batch > 1 {
                return Err(Error::Refused(
                    "--batch sets how reclaim's own worker commits; an --exec job commits as it was written to".into(),
                ));
            }
            LaneWorker::Exec(Box::new(job))
        }
        (None, Some(strategy)) => LaneWorker::Strategy(strategy),
        (None, None) => {
            return Err(Error::Refused(
                "give --strategy (reclaim's own worker), --exec CMD (yours) or --scenario NAME|PATH".into(),
            ));
        }
    })
}
fn print_header(
    args: &RunArgs,
    (worker, queue): (&LaneWorker, &crate::queue::Queue),
    plan: &KillPlan,
    seed: u64,
    out: &mut dyn Write,
) {
    let who = match worker {
        LaneWorker::Strategy(strategy) => format!("strategy={strategy}"),
        LaneWorker::Exec(job) => format!("exec={:?}", job.command),
    };
    // An external job is only told its pace (RECLAIM_DELAY_MS); it keeps it or not.
    let delay = match worker {
        LaneWorker::Strategy(_) => format!("  delay={}ms", args.delay_ms),
        LaneWorker::Exec(_) => format!("  RECLAIM_DELAY_MS={}", args.delay_ms),
    };
    let _ = writeln!(
        out,
        "reclaim run  {who}  items={}{delay}  workers={}  seed={seed}  scale={}x",
        queue.len(),
        args.workers,
        args.scale
    );
    if let LaneWorker::Exec(job) = worker {
        let _ = writeln!(
            out,
            "rows         table {} keyed by {}{}",
            crate::text::escape_controls(&job.rows.table),
            crate::text::escape_controls(&job.rows.key),
            if job.rows.count_sql.is_some() {
                " (counted by --count-sql)"
            } else {
                ""
            }
        );
        let _ = writeln!(out, "queue        {}", queue.describe());
        let _ = writeln!(
            out,
            "checkpoints  {}",
            match &job.rows.checkpoints {
                Some(c) => format!(
                    "table {} keyed by {}: where each kill lands is read from it",
                    crate::text::escape_controls(&c.table),
                    crate::text::escape_controls(&c.key)
                ),
                None => "not named (--checkpoint-table): a kill after a commit cannot be placed before or after its checkpoint".into(),
            }
        );
    }
    let relays = worker
        .strategy()
        .is_some_and(crate::worker::Strategy::relays);
    if args.vendor.side_effect.is_some() || relays {
        let how = if relays {
            "each row's email through its outbox and a relay, with the row's idempotency key"
        } else {
            "each item emails its customer before the row commits, without a key"
        };
        let _ = writeln!(
            out,
            "side effect  {how}; the vendor on 127.0.0.1 {} keys{}",
            match args
                .vendor
                .vendor_keys
                .unwrap_or(crate::vendor::Keys::Honour)
            {
                crate::vendor::Keys::Honour => "honours".to_string(),
                crate::vendor::Keys::Ignore => "ignores".to_string(),
                crate::vendor::Keys::Expire(secs) => format!("forgets after {secs} s its"),
            },
            match args.vendor.vendor_drop_responses {
                Some(p) if p > 0.0 => format!(" and drops {:.0}% of its responses", p * 100.0),
                _ => String::new(),
            }
        );
    }
    if let Some(long) = args.long.long_item {
        let steps = if args.long.split > 1 {
            format!("in {} committed steps", args.long.split)
        } else {
            "in one piece".to_string()
        };
        let _ = writeln!(
            out,
            "long item    {} takes {:.3} s of work before its commit, {steps}",
            crate::task::task_id(long.task),
            long.work.as_secs_f64()
        );
    }
    let _ = writeln!(out, "kill plan    {}", describe_plan(plan, args, queue));
}

/// `run --scenario`: every lane of a scenario headless, the timeline as the dashboard shows it
/// (a lane column), then one verdict line per lane; exit 0 only if every lane's data is right.
fn run_scenario(name: &str, args: &RunArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let scenario = Scenario::load(name)?;
    super::consent::for_run(&scenario, args.allow_exec)?;
    let db = paths::fresh_db_path("scenario")
        .context(|| "cannot create a folder for the warehouses".into())?;
    let dir = db.parent().map(Path::to_path_buf).unwrap_or_default();
    let exe = std::env::current_exe().context(|| "cannot find reclaim's own executable".into())?;
    let mut config = scenario.engine_config(&dir, 1, exe);
    if let Some(seed) = args.seed {
        config.kills.seed = seed;
    }
    let plan = config.kills.clone();
    let names: Vec<String> = config.lanes.iter().map(|l| l.name.clone()).collect();
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    if !args.json {
        let _ = writeln!(
            out,
            "reclaim run  scenario={}  lanes={}  items={}  seed={}  scale={}x",
            scenario.source,
            names.join(","),
            scenario.items,
            plan.seed,
            scenario.scale
        );
        let _ = writeln!(out, "title        {}", scenario.title);
    }
    let reports = harness::drive_lanes(config, &plan, None, None, |entry, _| {
        if !args.json {
            let line = match entry.lane.and_then(|l| names.get(l)) {
                Some(name) => entry.line_in_lane(name, width),
                None => entry.line(None),
            };
            let _ = writeln!(out, "{line}");
        }
    })?;
    if args.json {
        for (name, report) in names.iter().zip(&reports) {
            let mut value =
                serde_json::to_value(report).map_err(|e| Error::Refused(e.to_string()))?;
            if let Some(object) = value.as_object_mut() {
                object.insert("lane".into(), name.clone().into());
            }
            let _ = writeln!(out, "{value}");
        }
    } else {
        let _ = writeln!(out);
        for (name, report) in names.iter().zip(&reports) {
            let _ = writeln!(
                out,
                "verdict      {name:<width$}  {}  rows={} duplicated_task_ids={} kills={} restarts={}",
                report.verdict,
                report.rows,
                report.duplicated_task_ids,
                report.kills,
                report.restarts
            );
            for said in &report.not_fired {
                let _ = writeln!(out, "not fired    {name:<width$}  {said}");
            }
            // A lane whose items leave the database is judged at its vendor too.
            if let (Some(received), Some(distinct), Some(duplicated), Some(missing)) = (
                report.messages_received,
                report.messages_distinct,
                report.messages_duplicated,
                report.messages_missing,
            ) {
                let judged = report.messages_verdict.as_deref().unwrap_or("messages ok");
                let _ = writeln!(
                    out,
                    "messages     {name:<width$}  {judged}  received={received} distinct={distinct} duplicated={duplicated} missing={missing}"
                );
            }
        }
        let _ = writeln!(out, "databases    {} (kept)", display(&dir));
    }
    // `--strict`: a lane whose data holds but that did not test all it set out to fails too.
    let untested: Vec<String> = (names.iter().zip(&reports))
        .flat_map(|(name, report)| {
            report
                .untested()
                .into_iter()
                .map(move |said| format!("{name}: {said}"))
        })
        .collect();
    let strictly_wrong = args.strict && !untested.is_empty();
    if strictly_wrong && !args.json {
        let _ = writeln!(
            out,
            "strict       exit 1: not all was tested: {}",
            untested.join("; ")
        );
    }
    Ok(if reports.iter().all(RunReport::holds) && !strictly_wrong {
        crate::exit::OK
    } else {
        crate::exit::DATA_WRONG
    })
}

fn describe_plan(plan: &KillPlan, args: &RunArgs, queue: &crate::queue::Queue) -> String {
    let mut parts = Vec::new();
    if let Some(crash) = &args.crash_at {
        parts.push(format!(
            "the worker dies at {} on its first attempt{}",
            crate::text::escape_controls(crash),
            if args.job.exec.is_some() {
                " (the job announces the point; the host kills it there)"
            } else {
                ""
            }
        ));
    }
    if let Some(n) = plan.at_message {
        parts.push(format!(
            "the host kills the job once the vendor has message {n}, which it holds unanswered"
        ));
    }
    if let Some(rows) = plan.at_rows {
        parts.push(format!(
            "the host reclaims the instance as soon as the table holds {rows} rows"
        ));
    }
    if let Some(task) = plan.at_task {
        parts.push(format!(
            "the host reclaims the instance once {} is written",
            crate::text::escape_controls(&queue.key(task))
        ));
    }
    if plan.random > 0 {
        let delays: Vec<String> = plan
            .first_delays(8)
            .iter()
            .map(|d| format!("{:.2}s", d.as_secs_f64()))
            .collect();
        let more = if plan.random > 8 { ", ..." } else { "" };
        parts.push(format!(
            "up to {} random kills, each {:.2}..{:.2}s after a spawn ({}{more}; seed {})",
            plan.random,
            plan.window.0.as_secs_f64(),
            plan.window.1.as_secs_f64(),
            delays.join(", "),
            plan.seed
        ));
    }
    if !plan.replayed.is_empty() {
        let times: Vec<String> = plan
            .replayed
            .iter()
            .take(8)
            .map(|moment| match moment {
                // Named by the queue's own keys (ord-00004), as the job names its work.
                crate::supervisor::schedule::KillMoment::AfterTask(t) => {
                    format!("after {}", crate::text::escape_controls(&queue.key(*t)))
                }
                other @ crate::supervisor::schedule::KillMoment::At(_) => other.to_string(),
            })
            .collect();
        let more = if plan.replayed.len() > 8 { ", ..." } else { "" };
        parts.push(format!(
            "{} replayed from a recording: {}{more}",
            crate::text::count(plan.replayed.len() as u64, "kill", "kills"),
            times.join(", ")
        ));
    }
    if parts.is_empty() {
        "no kills: the job runs undisturbed".to_string()
    } else {
        parts.join("; ")
    }
}

/// The command line, as a recording's header names a `run`.
fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("reclaim {}", args.join(" "))
}

fn print_verdict(report: &RunReport, out: &mut dyn Write) {
    let _ = writeln!(out);
    let _ = writeln!(out, "verdict      {}", report.verdict);
    for lesson in &report.lessons {
        let _ = writeln!(out, "             {lesson}");
    }
    if let Some(reason) = &report.never_completed {
        let _ = writeln!(out, "             {reason}");
    }
    for note in &report.queue_notes {
        let _ = writeln!(out, "queue        {note}");
    }
    for said in &report.not_fired {
        let _ = writeln!(out, "not fired    {said}");
    }
    if let (Some(sent), Some(landed)) = (report.kill_sent_at_rows, report.kill_landed_at_rows) {
        let _ = writeln!(
            out,
            "kill         sent when the table held {sent} rows; landed with {landed} rows written"
        );
    }
    let _ = writeln!(
        out,
        "run          kills={}  restarts={}  completed={}  missing={}  elapsed={:.1}s",
        report.kills,
        report.restarts,
        if report.completed { "yes" } else { "NO" },
        report.missing,
        report.elapsed_ms as f64 / 1000.0
    );
    if report.kills > 0 {
        let _ = writeln!(
            out,
            "windows      {}",
            describe_windows(&report.kills_in_window)
        );
    }
    if !report.points_announced.is_empty() {
        let points: Vec<String> = (report.points_announced.iter())
            .map(|(name, n)| format!("{name}={n}"))
            .collect();
        let after: Vec<String> = (report.kills_after_points.iter())
            .map(|(name, n)| format!("{name}={n}"))
            .collect();
        let _ = writeln!(
            out,
            "points       the job announced {}{}",
            points.join(", "),
            if after.is_empty() {
                String::new()
            } else {
                format!("; kills after its own points: {}", after.join(", "))
            }
        );
    }
    if report.holds()
        && let Some(unearned) = report.unearned()
    {
        let _ = writeln!(out, "             the data holds, but {unearned}");
    }
    if let (Some(received), Some(distinct), Some(duplicated), Some(missing)) = (
        report.messages_received,
        report.messages_distinct,
        report.messages_duplicated,
        report.messages_missing,
    ) {
        let judged = report
            .messages_verdict
            .as_deref()
            .unwrap_or(crate::harness::MESSAGES_OK);
        let _ = writeln!(out, "vendor       {judged}");
        let _ = writeln!(
            out,
            "messages     received={received}  distinct={distinct}  duplicated={duplicated}  missing={missing}  (at the vendor: {})",
            display(&crate::vendor::db_path(&report.db))
        );
    }
    let _ = writeln!(out, "database     {} (kept)", display(&report.db));
    let _ = writeln!(
        out,
        "rows={} duplicated_task_ids={}",
        report.rows, report.duplicated_task_ids
    );
}

/// The kills by window, and the windows no kill landed in (named: a green night that never
/// reached a window says nothing about it).
pub(super) fn describe_windows(windows: &KillWindows) -> String {
    let hit: Vec<String> = KillWindow::ALL
        .into_iter()
        .filter(|&w| windows.get(w) > 0)
        .map(|w| format!("{w}={}", windows.get(w)))
        .collect();
    let never: Vec<&str> = windows
        .never_hit()
        .into_iter()
        .map(KillWindow::name)
        .collect();
    let mut said = if hit.is_empty() && windows.unplaced == 0 {
        "no kill landed".to_string()
    } else if hit.is_empty() {
        String::new()
    } else {
        format!("kills landed in {}", hit.join(", "))
    };
    if windows.unplaced > 0 {
        if !said.is_empty() {
            said.push_str("; ");
        }
        let kills = crate::text::count(u64::from(windows.unplaced), "kill", "kills");
        said.push_str(&kills);
        said.push_str(
            " after a commit, not placed: reclaim cannot see the job's checkpoints, so after-row-commit and after-commit cannot be told apart (name them with --checkpoint-table)",
        );
    }
    if never.is_empty() {
        said
    } else {
        format!("{said}; never hit: {}", never.join(", "))
    }
}

/// A path on a line of its own: a line break in it (a `--db` may hold one) is escaped, so it
/// cannot split the `database` line in two.
fn display(path: &Path) -> String {
    crate::text::escape_controls(&path.display().to_string())
}
