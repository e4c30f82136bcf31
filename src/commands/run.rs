//! `reclaim run`: one lane driven headless through the night, its timeline printed as it happens,
//! then the verdict derived from the rows.

use std::io::Write;
use std::time::Duration;

use super::run_report::{display, finish, print_header};
use crate::base::paths;
use crate::cli::RunArgs;
use crate::engine::{EngineConfig, LaneConfig, LaneWorker, Pace};
use crate::error::{Context as _, Error};
use crate::harness::{self, RunReport};
use crate::record::Recording;
use crate::scenario::Scenario;
use crate::supervisor::schedule::KillPlan;
use crate::warehouse::Warehouse;

/// Runs `reclaim run`.
/// `--replay-schedule FILE`: the recorded kills, placed on this night's queue.
fn replayed_kills(
    args: &RunArgs,
    queue: &crate::queue::Queue,
) -> Result<Vec<crate::supervisor::schedule::KillMoment>, Error> {
    let Some(file) = &args.replay_schedule else {
        return Ok(Vec::new());
    };
    let recording = Recording::load(file)?;
    if recording.truncated {
        eprintln!(
            "reclaim: warning: {}: the last line was cut short; replaying the kills before it",
            file.display()
        );
    }
    // An --exec job's kills are placed by its own keys, matched to its queue.
    Ok(recording.kill_moments_keyed(|key| queue.index_of(key)))
}

pub(super) fn run(args: &RunArgs, out: &mut dyn Write) -> Result<u8, Error> {
    if let Some(name) = &args.scenario {
        return run_scenario(name, args, out);
    }
    refuse_scenario_flags(args)?;
    super::kept::refuse_with_db(args.warehouse.keep, args.db.is_some())?;
    super::compare::refuse(&args.compare, args.job.exec.is_some(), args.db.as_deref())?;
    // Every input is checked before anything is created or started; only a queue read on the
    // server (--keys-sql on PostgreSQL) needs the warehouse first.
    let early = super::open_for_keys(&args.job, &args.warehouse.warehouse, || {
        open_warehouse(args, None)
    })?;
    let worker = lane_worker(args, &Warehouse::of(early.as_ref()))?;
    let queue = match &worker {
        LaneWorker::Exec(job) => job.queue.clone(),
        LaneWorker::Strategy(_) => crate::queue::Queue::tasks(args.items),
    };
    let (crash_at, kill_at_task) = planned_kills(args, &worker, &queue)?;
    let seed = args.seed.unwrap_or_else(rand::random);
    let server = super::run_faults::plan(args, (&worker, &queue), seed)?;
    let replayed = replayed_kills(args, &queue)?;
    let mut night = early.map_or_else(|| open_warehouse(args, Some(&worker)), |n| Ok(Some(n)))?;
    let given_db = args.db.as_deref().map(paths::new_warehouse).transpose()?;
    let record = args
        .record
        .as_deref()
        .map(|path| paths::new_recording(path, given_db.as_deref()))
        .transpose()?;
    // The last step before the night: claim the warehouse atomically, so a second reclaim
    // given the same new path is refused rather than sharing (and reporting) this night.
    let (db, mut folder) = claim_warehouse(given_db, &worker, args)?;
    let exe = std::env::current_exe().context(|| "cannot find reclaim's own executable".into())?;
    let (window, rows) = random_placement(args, &worker, queue.len());
    let plan = KillPlan {
        random: args.kills,
        window,
        rows,
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
        pause_at: server.pause_at,
        pause_at_rows: server.pause_at_rows,
        lose_answers: server.lose_rows.clone(),
        lose_answer_tasks: server.lose_tasks.clone(),
        side_effect: args.vendor.side_effect,
        long_item: args.long.long_item,
        split: args.long.split,
        vendor: crate::fake_vendor::VendorModes {
            keys: (args.vendor.vendor)
                .or(args.vendor.vendor_keys)
                .unwrap_or(crate::fake_vendor::Keys::Honour),
            drop_responses: args.vendor.vendor_drop_responses.unwrap_or(0.0),
            seed,
            hold_at: args.vendor.kill_at_message,
        },
        ..LaneConfig::new(worker.clone(), db.clone(), queue.len())
    };
    let config = EngineConfig {
        restart_delay: args.restart_delay,
        max_restarts: args.max_restarts,
        scale: args.scale,
        progress_deadline: args.deadline.progress_deadline,
        restart_server_at_rows: server.restart_rows,
        restart_server_at_task: server.restart_task,
        ..EngineConfig::new(vec![lane], plan.clone(), exe)
    }
    .on(&Warehouse::of(night.as_ref()));
    let outcome = (|| {
        for lane in &config.lanes {
            refuse_old_vendor_db(lane)?;
        }
        if let Some(night) = night.as_mut() {
            (night.claim(config.lanes.iter().map(|l| l.db.as_path())))
                .map_err(crate::warehouse::StoreError::from)?;
        }
        if !args.json {
            print_header(args, (&worker, &queue), (&plan, &server), seed, out);
        }
        let dir = folder.as_ref().map(|f| f.path().to_path_buf());
        let record = record.as_deref().map(|path| (path, command_line()));
        super::compare::drive_run(args, config, (dir.as_deref(), &db), record, out)
    })();
    let report = outcome.map_err(|e| super::kept::ended_in(folder.take(), e))?;
    let judged = report.account().judge(args.strict);
    let failed = judged.exit_code() != crate::base::exit::OK;
    let settled =
        folder.map(|f| crate::warehouse::settle(f, night.as_mut(), failed, &judged.line()));
    let code = finish(
        &report,
        args,
        (settled.as_ref(), &Warehouse::of(night.as_ref())),
        out,
    );
    crate::warehouse::close(night, args.json, None, out);
    code
}

/// The last step before the night: the warehouse claimed atomically, so a second reclaim
/// given the same new `--db` is refused rather than sharing (and reporting) this night; or,
/// without `--db`, a night folder of reclaim's own (`--keep` says what becomes of it).
fn claim_warehouse(
    given_db: Option<std::path::PathBuf>,
    worker: &LaneWorker,
    args: &RunArgs,
) -> Result<(std::path::PathBuf, Option<crate::base::kept::NightDir>), Error> {
    if let Some(db) = given_db {
        paths::claim_new(
            &db,
            "--db",
            "another reclaim (or something else) created it a moment ago; give a new --db path",
        )?;
        return Ok((db, None));
    }
    let what = worker.strategy().map_or("exec", |s| s.name());
    let folder = super::kept::night("reclaim run", what, args.warehouse.keep)?;
    Ok((folder.path().join("warehouse.db"), Some(folder)))
}

/// Where the random kills fall: `--kill-window` or `--kill-rows` as given; else by time for
/// reclaim's own workers (the live lesson's timing), and by rows for an `--exec` job. A job's
/// start is its own (an interpreter's, on a loaded machine, can outlast the whole time window,
/// and every kill then lands before its first commit, testing nothing): placed after 1..N rows
/// since its spawn (N = items / (kills + 1), as `prove` does), each lands after a commit.
fn random_placement(
    args: &RunArgs,
    worker: &LaneWorker,
    items: u64,
) -> ((Duration, Duration), Option<(u64, u64)>) {
    let window = args
        .kill_window
        .unwrap_or(crate::supervisor::schedule::DEFAULT_WINDOW);
    let rows = args.kill_rows.or_else(|| {
        (worker.job().is_some() && args.kill_window.is_none() && args.kills > 0)
            .then(|| (1, (items / (u64::from(args.kills) + 1)).max(1)))
    });
    (window, rows)
}

/// `--warehouse`: the night's PostgreSQL opened (a server checked, or a private cluster started)
/// once every other input has been checked; `None` for SQLite. What PostgreSQL cannot do yet
/// is refused here, before anything starts.
fn open_warehouse(
    args: &RunArgs,
    worker: Option<&LaneWorker>,
) -> Result<Option<crate::warehouse::Night>, Error> {
    if let Some(worker) = worker.filter(|_| args.warehouse.warehouse.is_postgres()) {
        pg_supports(args, worker)?;
    }
    (args.warehouse.open()).map_err(|e| Error::Store(e.into()))
}

/// What reclaim runs on PostgreSQL so far: its own strategies, without split items, and an
/// --exec job (its table or --count-sql, --keys-sql and --checkpoint-table on the server).
fn pg_supports(args: &RunArgs, worker: &LaneWorker) -> Result<(), Error> {
    let missing = match worker {
        LaneWorker::Strategy(_) if args.long.split > 1 => Some("--split"),
        LaneWorker::Exec(_) | LaneWorker::Strategy(_) => None,
    };
    match missing {
        Some(what) => Err(Error::Refused(format!(
            "{what} does not run on PostgreSQL yet; use --warehouse sqlite"
        ))),
        None => Ok(()),
    }
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
                crate::base::text::escape_controls(text)
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
        .map(|typed| super::run_faults::resolve_key("--kill-at-task", typed, queue))
        .transpose()?;
    if kill_at_task.is_some() && worker.job().is_some_and(|j| j.rows.count_sql.is_some()) {
        return Err(Error::Refused(
            "--kill-at-task waits for a key's row, and --count-sql only counts rows: it would never see it; use --kill-at-rows N".into(),
        ));
    }
    check_rows_reachable(args, worker, queue.len())?;
    Ok((crash_at, kill_at_task))
}

/// A kill waiting for more rows than the night can write never fires: the night would run
/// whole and end `not fired`, having tested nothing. Each worker writes the queue at most once
/// before a first kill (more only once some kill restarted a job that redoes its work, so a
/// plan with other kills is left alone); `--count-sql` counts what it counts, not one per key.
fn check_rows_reachable(args: &RunArgs, worker: &LaneWorker, items: u64) -> Result<(), Error> {
    if worker.job().is_some_and(|j| j.rows.count_sql.is_some()) {
        return Ok(());
    }
    let most = items.saturating_mul(u64::from(args.workers));
    let writers = if args.workers > 1 {
        format!(" x {} workers", args.workers)
    } else {
        String::new()
    };
    let other_kills = args.kill_at_task.is_some()
        || args.crash_at.is_some()
        || args.replay_schedule.is_some()
        || args.vendor.kill_at_message.is_some();
    if let Some(n) = args
        .kill_at_rows
        .filter(|&n| n > most && args.kills == 0 && !other_kills)
    {
        return Err(Error::Refused(format!(
            "--kill-at-rows {n} is past the queue of {items} items{writers}: the table never holds {n} rows, so the kill would never fire; give N of at most {most}"
        )));
    }
    if let Some(pause) = args
        .pause_at_rows
        .filter(|p| p.rows > most && args.kills == 0 && !other_kills && args.kill_at_rows.is_none())
    {
        let n = pause.rows;
        return Err(Error::Refused(format!(
            "--pause-at-rows {pause} is past the queue of {items} items{writers}: the table never holds {n} rows, so the pause would never happen; give N of at most {most}"
        )));
    }
    // Rows since an attempt's spawn: an attempt writes the queue at most once per worker,
    // whatever kills came before it.
    if let Some((lo, hi)) = args.kill_rows.filter(|&(lo, _)| lo > most) {
        return Err(Error::Refused(format!(
            "--kill-rows {lo}..{hi} starts past the queue of {items} items{writers}: no attempt writes {lo} rows, so its kills would never fire; give a range starting at most at {most}"
        )));
    }
    Ok(())
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
    if let Some(pause) = args.pause_at {
        crate::task::check_in_queue("--pause-at", pause.task, args.items)?;
        if strategy.is_none() {
            return Err(Error::Refused(
                "--pause-at stops reclaim's own worker at its write (--strategy); an --exec job cannot be stopped there".into(),
            ));
        }
        if args.delay_ms == 0.0 {
            return Err(Error::Refused(
                "--pause-at lasts SECS of the night's clock, and --delay-ms 0 has none; give --delay-ms above 0".into(),
            ));
        }
    }
    if args.pause_at_rows.is_some() && strategy.is_some() {
        return Err(Error::Refused(
            "--pause-at-rows stops an --exec job, placed by its rows; reclaim's own worker is stopped at a task's write: --pause-at TASK:SECS".into(),
        ));
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

/// Whose worker runs: reclaim's own strategy, or the user's command (checked whole first).
fn lane_worker(args: &RunArgs, warehouse: &Warehouse) -> Result<LaneWorker, Error> {
    Ok(
        match (args.job.to_job_on(args.items, warehouse)?, args.strategy) {
            (Some(mut job), _) => {
                job.vendor = args.vendor.vendor.is_some();
                // A point your job announces (examples/reclaim_point.py), in a unit of work of its
                // queue; a key outside it would never be reached.
                if let Some(text) = &args.crash_at {
                    let mut plan = crate::worker::protocol::points::CrashPlan::parse(text)?;
                    let index =
                        super::run_faults::resolve_key("--crash-at", &plan.key, &job.queue)?;
                    plan.key = job.queue.key(index);
                    job.crash_at = Some(plan);
                }
                if args.sync == crate::warehouse::SyncMode::Full {
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
        },
    )
}

/// One verdict line per lane (and what never fired, and its messages), names in a column.
fn print_lane_verdicts(names: &[String], reports: &[RunReport], out: &mut dyn Write) {
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    for (name, report) in names.iter().zip(reports) {
        let _ = writeln!(
            out,
            "verdict      {name:<width$}  {}  {} kills={} restarts={}",
            report.verdict(),
            report.inspection.summary_line(),
            report.kills,
            report.restarts
        );
        if let Some(reason) = report.never_completed() {
            let _ = writeln!(out, "             {name:<width$}  {reason}");
        }
        for said in report.not_fired() {
            let _ = writeln!(out, "not fired    {name:<width$}  {said}");
        }
        // A lane whose items leave the database is judged at its vendor too.
        if let (Some(m), Some(said)) = (report.messages, report.messages_verdict()) {
            let _ = writeln!(
                out,
                "messages     {name:<width$}  {said}  sent={} keys={} duplicated={} missing={} requests={}",
                m.received, m.distinct, m.duplicated, m.missing, m.requests
            );
        }
        // A lane judged by its tables too (`compare`).
        if let Some(state) = &report.state {
            let _ = writeln!(out, "state        {name:<width$}  {}", state.line());
        }
    }
}

/// A scenario's own flags on a night without one. clap waives a `requires` whose target
/// conflicts with an argument given, and `--scenario` conflicts with `--strategy`, `--exec` and
/// the rest, so `requires = "scenario"` never refuses here (`tui`, where it conflicts with
/// nothing, does). Refused by hand: a night run without the speed or the consent asked for
/// would not be the night meant.
fn refuse_scenario_flags(args: &RunArgs) -> Result<(), Error> {
    for (given, flag) in [
        (args.speed.is_some(), "--speed"),
        (args.allow_exec, "--allow-exec"),
    ] {
        if given {
            return Err(Error::Refused(format!(
                "{flag} is for a scenario: give --scenario NAME|PATH"
            )));
        }
    }
    Ok(())
}

/// `run --scenario`'s first lines: the scenario, its lanes, seed and scale, and its title.
fn print_scenario_header(scenario: &Scenario, names: &[String], seed: u64, out: &mut dyn Write) {
    let _ = writeln!(
        out,
        "reclaim run  scenario={}  lanes={}  items={}  seed={seed}  scale={}x",
        scenario.source,
        names.join(","),
        scenario.items,
        scenario.scale
    );
    let _ = writeln!(out, "title        {}", scenario.title);
}

/// The scenario's lanes that are judged by their tables too (`compare`): each one's undisturbed
/// night run first, twice, said on `out` (none with `--json`); an oracle per lane.
fn undisturbed_lanes(
    scenario: &Scenario,
    config: &crate::engine::EngineConfig,
    dir: &std::path::Path,
    out: Option<&mut dyn Write>,
) -> Result<Vec<Option<std::sync::Arc<harness::compare::Oracle>>>, Error> {
    let scopes: Vec<_> = scenario.lanes.iter().map(|l| l.compare.clone()).collect();
    if let Some(out) = out {
        for (lane, _) in (config.lanes.iter().zip(&scopes)).filter(|(_, s)| s.is_some()) {
            let name = &lane.name;
            let _ = writeln!(
                out,
                "compare      {name}: the undisturbed night first: the job run to its end twice without a fault ({name}-undisturbed in the night's folder); its tables' final state is the reference"
            );
        }
    }
    harness::compare::for_lanes(config, &scopes, dir)
}

/// `run --scenario`: every lane of a scenario headless, the timeline as the dashboard shows it
/// (a lane column), then one verdict line per lane; exit 0 only if every lane's data is right.
fn run_scenario(name: &str, args: &RunArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let mut scenario = Scenario::load(name)?;
    // `--seed` replaces the scenario's, as the dashboard's does: its kills, its vendor and
    // every fault drawn from it (`Scenario::pause`, `lost_answer_rows`, `server_restart_rows`).
    if let Some(seed) = args.seed {
        scenario.seed = seed;
    }
    refuse_endless_hang(&scenario)?;
    super::consent::for_run(&scenario, args.allow_exec)?;
    // A night recorded headless replays in class as one recorded by the dashboard, captions too.
    let record = args
        .record
        .as_deref()
        .map(|path| paths::new_recording(path, None))
        .transpose()?;
    // The scenario's own warehouse (`warehouse = "postgres"`), unless the command line names
    // a PostgreSQL one.
    let warehouse = args.warehouse.for_scenario(&scenario.warehouse);
    if warehouse.warehouse.is_postgres() {
        super::tui::refuse_on_pg(&scenario, &warehouse.warehouse)?;
    }
    let mut night = warehouse.open().map_err(|e| Error::Store(e.into()))?;
    let exe = std::env::current_exe().context(|| "cannot find reclaim's own executable".into())?;
    let mut folder = Some(super::kept::night(
        "reclaim run --scenario",
        &scenario.source,
        args.warehouse.keep,
    )?);
    let dir = folder
        .as_ref()
        .map(|f| f.path().to_path_buf())
        .unwrap_or_default();
    let mut config = scenario
        .engine_config(&dir, 1, exe)
        .on(&Warehouse::of(night.as_ref()));
    config.progress_deadline = args.deadline.progress_deadline;
    config.speed = args.speed.unwrap_or(1.0);
    let plan = config.kills.clone();
    if let Some(night) = night.as_mut() {
        night
            .claim(config.lanes.iter().map(|l| l.db.as_path()))
            .map_err(|e| {
                super::kept::ended_in(folder.take(), crate::warehouse::StoreError::from(e).into())
            })?;
    }
    let names: Vec<String> = config.lanes.iter().map(|l| l.name.clone()).collect();
    let width = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    if !args.json {
        print_scenario_header(&scenario, &names, plan.seed, out);
    }
    let oracles = undisturbed_lanes(&scenario, &config, &dir, (!args.json).then_some(&mut *out))
        .map_err(|e| super::kept::ended_in(folder.take(), e))?;
    let dbs: Vec<_> = config.lanes.iter().map(|l| l.db.clone()).collect();
    let record = record
        .as_deref()
        .map(|path| (path, scenario.title.clone(), scenario.captions.clone()));
    let reports = harness::drive_lanes(config, record, None, |entry, _| {
        if !args.json {
            let line = match entry.lane.and_then(|l| names.get(l)) {
                Some(name) => entry.line_in_lane(name, width),
                None => entry.line(None),
            };
            let _ = writeln!(out, "{line}");
        }
    })
    .map_err(|e| super::kept::ended_in(folder.take(), e))?;
    let mut reports = reports;
    for ((report, oracle), db) in reports.iter_mut().zip(&oracles).zip(&dbs) {
        report.state = (oracle.as_ref().map(|o| o.judge(db)).transpose())
            .map_err(|e| super::kept::ended_in(folder.take(), e))?;
    }
    // One account per lane, one rule; the night fails if any lane's outcome does.
    let accounts: Vec<_> = reports.iter().map(RunReport::account).collect();
    let mut account = crate::verdict::account::Account::new();
    for (name, lane) in names.iter().zip(&accounts) {
        account.absorb(lane, &format!("{name}: "));
    }
    let judged = account.judge(args.strict);
    let settled = folder.map(|f| {
        let failed = judged.exit_code() != crate::base::exit::OK;
        crate::warehouse::settle(f, night.as_mut(), failed, &judged.line())
    });
    if args.json {
        for ((name, report), lane) in names.iter().zip(&reports).zip(&accounts) {
            let mut value = super::run_report::with_judgement(report, &lane.judge(args.strict))?;
            if let Some(object) = value.as_object_mut() {
                object.insert("lane".into(), name.clone().into());
                if let Some(settled) = &settled {
                    object.insert("folder".into(), super::run_report::folder_json(settled));
                }
            }
            let _ = writeln!(out, "{value}");
        }
    } else {
        let _ = writeln!(out);
        print_lane_verdicts(&names, &reports, out);
        if let Some(settled) = &settled {
            let _ = writeln!(out, "{}", folder_line(settled, night.is_some()));
        }
    }
    crate::warehouse::close(night, args.json, None, out);
    if !args.json {
        let _ = writeln!(out, "result       {}", judged.line());
    }
    Ok(judged.exit_code())
}

/// Headless, nobody presses h: a hang with no end (`hang_at_task` without `hang_for`) would
/// hold every lane until the progress deadline, and blame the job for it.
fn refuse_endless_hang(scenario: &Scenario) -> Result<(), Error> {
    if scenario.hang_at_task.is_some() && scenario.hang_for.is_none() {
        return Err(Error::Refused(format!(
            "{}: host.hang_at_task without host.hang_for hangs every lane until someone presses h, which only the dashboard can; give hang_for = SECS (sim seconds) to run it headless",
            crate::base::text::escape_controls(&scenario.source)
        )));
    }
    Ok(())
}

/// What became of a scenario's folder: its databases, or on PostgreSQL its heartbeats.
fn folder_line(settled: &crate::base::kept::Settled, on_pg: bool) -> String {
    match (on_pg, settled.kept) {
        (false, true) => format!("databases    {} {}", display(&settled.path), settled.said()),
        (false, false) => format!("databases    {}", settled.said()),
        (true, true) => format!(
            "files        {} {} (heartbeats only: the rows are on PostgreSQL)",
            display(&settled.path),
            settled.said()
        ),
        (true, false) => format!("files        {}", settled.said()),
    }
}

/// The command line, as a recording's header names a `run`: a password in it (a
/// `--warehouse` URL's, a `PGPASSWORD=` in `--exec`) as `***`.
fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    crate::warehouse::postgres::conninfo::redact(&format!("reclaim {}", args.join(" ")))
}
