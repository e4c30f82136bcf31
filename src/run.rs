//! `reclaim run`: one lane driven headless through the night, its timeline printed as it happens,
//! then the verdict derived from the rows.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cli::ReplayArgs;
use crate::cli::RunArgs;
use crate::engine::{DEFAULT_DEAD_MAN, Engine, EngineConfig, Kind, LaneConfig};
use crate::exit::{DATA_WRONG as EXIT_DATA_WRONG, OK as EXIT_OK};
use crate::paths;
use crate::record::{self, LaneEnd, Recorder, Recording};
use crate::signals;
use crate::store::inspect::{self, Inspection};
use crate::supervisor::schedule::KillPlan;
use crate::text::escape_controls;
use crate::verdict::{Derived, Facts, Symptom, claim_line};

/// The most kill delays a report lists: `--kills 4294967295` must not print 4 billion numbers.
pub const KILL_DELAYS_SHOWN: usize = 100;

/// How often the headless loop looks at the workers and the rows.
const TICK: Duration = Duration::from_millis(2);

/// Everything a finished run reports; the JSON keys are stable.
#[derive(Debug, Serialize)]
pub struct RunReport {
    pub strategy: String,
    pub seed: u64,
    pub items: u64,
    pub rows: u64,
    pub distinct: u64,
    pub duplicated_task_ids: u64,
    pub missing: u64,
    pub kills: u32,
    pub restarts: u32,
    /// Distinct `run_id` values among the rows: how many worker processes wrote any.
    pub runs: u64,
    /// Workers that had started before the first one finished: 2 or more means they ran at once.
    pub started_before_first_done: u64,
    pub completed: bool,
    pub claimed_status: String,
    pub claimed_rows_written: Option<u64>,
    pub derived_status: String,
    pub verdict: String,
    pub symptoms: Vec<Symptom>,
    pub lessons: Vec<String>,
    pub never_completed: Option<String>,
    /// The first delays of the random kills (at most `KILL_DELAYS_SHOWN`), in the order used.
    pub kill_delays_ms: Vec<u64>,
    /// How many random kills were planned (`--kills`): `kill_delays_ms` lists only the first.
    pub kills_planned: u32,
    pub elapsed_ms: u64,
    pub scale: f64,
    pub db: PathBuf,
    pub timeline: Vec<String>,
}

impl RunReport {
    /// 0 when the derived status is ok and the job completed, 1 otherwise.
    #[must_use]
    pub fn exit_code(&self) -> u8 {
        if self.completed && self.derived_status == "ok" {
            EXIT_OK
        } else {
            EXIT_DATA_WRONG
        }
    }
}

/// A fresh folder for a night's databases under the system temp dir, made atomically (a name
/// already taken is never reused), and the warehouse path inside it.
pub fn fresh_db_path(label: &str) -> io::Result<PathBuf> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let suffix = if n == 0 {
        String::new()
    } else {
        format!("-{n}")
    };
    let dir = std::env::temp_dir().join(format!(
        "reclaim-{label}-{stamp}-{}{suffix}",
        std::process::id()
    ));
    std::fs::create_dir(&dir)?;
    Ok(dir.join("warehouse.db"))
}

/// What `--db` must be for a new night: a new path, no companion of an earlier warehouse beside
/// it. Returns the path with its folder resolved. Nothing is created.
pub fn check_new_db(path: &Path) -> Result<PathBuf, String> {
    let db = paths::new_file(
        path,
        "--db",
        "reclaim run starts a fresh night, so give a new --db path",
    )
    .map_err(|e| e.to_string())?;
    paths::refuse_leftovers(&db).map_err(|e| e.to_string())?;
    Ok(db)
}

/// Runs `reclaim run`.
pub fn run(args: &RunArgs, out: &mut dyn Write) -> Result<u8, String> {
    // Every input is checked before anything is created or started.
    if let Some(crash) = args.crash_at {
        crate::task::check_in_queue("--crash-at", crash.task, args.items)?;
    }
    if let Some(task) = args.kill_at_task {
        crate::task::check_in_queue("--kill-at-task", task, args.items)?;
    }
    let at_times = match &args.replay_schedule {
        Some(file) => {
            let recording = Recording::load(file).map_err(|e| e.to_string())?;
            if recording.truncated {
                eprintln!(
                    "reclaim: warning: {}: the last line was cut short; replaying the kills before it",
                    file.display()
                );
            }
            recording.kill_times()
        }
        None => Vec::new(),
    };
    let given_db = args.db.as_deref().map(check_new_db).transpose()?;
    let record = args
        .record
        .as_deref()
        .map(|path| check_record_path(path, given_db.as_deref()))
        .transpose()?;
    // The last step before the night: claim the warehouse atomically, so a second reclaim
    // given the same new path is refused rather than sharing (and reporting) this night.
    let db = match given_db {
        Some(db) => {
            paths::claim_new(
                &db,
                "--db",
                "another reclaim (or something else) created it a moment ago; give a new --db path",
            )
            .map_err(|e| e.to_string())?;
            db
        }
        None => fresh_db_path("run")
            .map_err(|e| format!("cannot create a folder for the warehouse: {e}"))?,
    };
    let seed = args.seed.unwrap_or_else(rand::random);
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find reclaim's own executable: {e}"))?;
    let plan = KillPlan {
        random: args.kills,
        window: args.kill_window,
        at_task: args.kill_at_task,
        seed,
        at_times,
    };
    let config = EngineConfig {
        lanes: vec![LaneConfig {
            name: args.strategy.name().to_string(),
            strategy: args.strategy,
            db: db.clone(),
            items: args.items,
            delay: Duration::from_secs_f64(args.delay_ms / 1000.0),
            batch: args.batch,
            workers: usize::from(args.workers),
            sync: args.sync,
            crash_at: args.crash_at,
        }],
        kills: plan.clone(),
        restart_delay: Duration::from_secs_f64(args.restart_delay),
        max_restarts: args.max_restarts,
        scale: args.scale,
        dead_man: DEFAULT_DEAD_MAN,
        exe,
        hang: None,
        wipe_at_task: None,
    };
    if !args.json {
        let _ = writeln!(
            out,
            "reclaim run  strategy={}  items={}  delay={}ms  workers={}  seed={seed}  scale={}x",
            args.strategy, args.items, args.delay_ms, args.workers, args.scale
        );
        let _ = writeln!(out, "kill plan    {}", describe_plan(&plan, args));
    }
    let record = record.as_deref().map(|path| (path, command_line()));
    let report = drive_recorded(config, &plan, record, |line| {
        if !args.json {
            let _ = writeln!(out, "{line}");
        }
    })?;
    if args.json {
        let text = serde_json::to_string(&report).map_err(|e| e.to_string())?;
        let _ = writeln!(out, "{text}");
    } else {
        print_verdict(&report, out);
    }
    Ok(report.exit_code())
}

fn describe_plan(plan: &KillPlan, args: &RunArgs) -> String {
    let mut parts = Vec::new();
    if let Some(crash) = args.crash_at {
        parts.push(format!(
            "the worker crashes at {crash} on its first attempt"
        ));
    }
    if let Some(task) = plan.at_task {
        parts.push(format!(
            "the host reclaims the instance once {} is written",
            crate::task::task_id(task)
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
    if !plan.at_times.is_empty() {
        let times: Vec<String> = plan
            .at_times
            .iter()
            .take(8)
            .map(|t| format!("{:.2}s", t.as_secs_f64()))
            .collect();
        let more = if plan.at_times.len() > 8 { ", ..." } else { "" };
        parts.push(format!(
            "{} kills replayed from a recording, at {}{more} after the start",
            plan.at_times.len(),
            times.join(", ")
        ));
    }
    if parts.is_empty() {
        "no kills: the job runs undisturbed".to_string()
    } else {
        parts.join("; ")
    }
}

/// A recording must go to a new file in a folder that can be written, and never to the
/// warehouse `db` or a companion of it: checked before any worker starts. Returns the path with
/// its folder resolved.
pub fn check_record_path(path: &Path, db: Option<&Path>) -> Result<PathBuf, String> {
    let record =
        paths::new_file(path, "--record", "give --record a new file").map_err(|e| e.to_string())?;
    if let Some(db) = db {
        paths::refuse_companion(&record, "--record", db, None).map_err(|e| e.to_string())?;
    }
    Ok(record)
}

/// The command line, as a recording's header names a `run`.
fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("reclaim {}", args.join(" "))
}

/// Drives one single-lane night to its end, handing each new timeline line to `on_line`, and
/// derives the report. Ctrl-C, SIGTERM and SIGHUP stop it (every worker killed) with an error.
pub fn drive(
    config: EngineConfig,
    plan: &KillPlan,
    on_line: impl FnMut(&str),
) -> Result<RunReport, String> {
    drive_recorded(config, plan, None, on_line)
}

/// `drive`, recording the night to a session file when `record` names one (with the title the
/// header gives it).
pub fn drive_recorded(
    config: EngineConfig,
    plan: &KillPlan,
    record: Option<(&Path, String)>,
    mut on_line: impl FnMut(&str),
) -> Result<RunReport, String> {
    signals::install().map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let started = Instant::now();
    let mut engine = Engine::start(config, started).map_err(|e| e.to_string())?;
    let mut recorder = match record {
        Some((path, title)) => {
            let header = record::header(&engine, &title, &title, plan.seed, Vec::new());
            Some(
                Recorder::create(path, &header)
                    .map_err(|e| format!("cannot record to {}: {e}", path.display()))?,
            )
        }
        None => None,
    };
    let mut printed = 0;
    loop {
        let now = Instant::now();
        engine.tick(now).map_err(|e| e.to_string())?;
        crate::test_hooks::panic_point(
            engine
                .lanes()
                .iter()
                .any(|l| l.alive() && l.observer.rows > 0),
        );
        if let Some(recorder) = recorder.as_mut() {
            recorder
                .observe(&engine, now)
                .map_err(|e| format!("recording {}: {e}", recorder.path().display()))?;
        }
        for entry in &engine.timeline()[printed..] {
            on_line(&entry.line(None));
        }
        printed = engine.timeline().len();
        if engine.finished() {
            break;
        }
        if let Some(signal) = signals::received() {
            engine.shutdown();
            return Err(format!("stopped by {signal}; every worker was killed"));
        }
        thread::sleep(TICK);
    }
    let elapsed = engine.elapsed(Instant::now());
    let lane = &engine.lanes()[0];
    if let Some(failure) = &lane.failure {
        return Err(format!("the worker failed: {failure}"));
    }
    let inspection =
        inspect::inspect(&lane.config.db, lane.config.items).map_err(|e| e.to_string())?;
    if let Some(recorder) = recorder.as_mut() {
        let end = LaneEnd::from_inspection(
            &inspection,
            lane.claimed.as_ref().map(|c| c.status.as_str()),
            lane.completed(),
        );
        engine.catch_up();
        recorder
            .end(&engine, Instant::now(), vec![end])
            .map_err(|e| format!("recording {}: {e}", recorder.path().display()))?;
    }
    let lane = &engine.lanes()[0];
    let claimed = lane.claimed.as_ref().map(|c| c.status.clone());
    let completed = lane.completed();
    let symptoms = Symptom::observed(
        &inspection,
        lane.observer.restarted_at_zero,
        claimed.as_deref(),
    );
    let never_completed = (!completed).then(|| {
        format!(
            "the job never completed: the supervisor gave up after {} restarts (--max-restarts) because every attempt was killed before it finished",
            lane.restarts
        )
    });
    Ok(report(
        &engine,
        &inspection,
        plan,
        claimed,
        symptoms,
        never_completed,
        elapsed,
    ))
}

fn report(
    engine: &Engine,
    inspection: &Inspection,
    plan: &KillPlan,
    claimed: Option<String>,
    symptoms: Vec<Symptom>,
    never_completed: Option<String>,
    elapsed: Duration,
) -> RunReport {
    let lane = &engine.lanes()[0];
    let derived = inspection.derived();
    RunReport {
        strategy: lane.config.strategy.name().to_string(),
        seed: plan.seed,
        items: inspection.items,
        rows: inspection.rows,
        distinct: inspection.distinct,
        duplicated_task_ids: inspection.duplicated_task_ids,
        missing: inspection.missing,
        kills: lane.kills,
        restarts: lane.restarts,
        runs: inspection.runs,
        started_before_first_done: engine
            .timeline()
            .iter()
            .take_while(|e| e.kind != Kind::Done)
            .filter(|e| e.kind == Kind::Start)
            .count() as u64,
        completed: lane.completed(),
        claimed_rows_written: lane.claimed.as_ref().map(|c| c.rows_written),
        verdict: claim_line(claimed.as_deref(), derived),
        claimed_status: claimed.unwrap_or_else(|| "none".into()),
        derived_status: derived.label().to_string(),
        lessons: crate::verdict::lessons(inspection, &symptoms),
        symptoms,
        never_completed,
        kill_delays_ms: plan
            .first_delays(KILL_DELAYS_SHOWN)
            .iter()
            .map(|d| d.as_millis() as u64)
            .collect(),
        kills_planned: plan.random,
        elapsed_ms: elapsed.as_millis() as u64,
        scale: engine.config().scale,
        db: inspection.db.clone(),
        timeline: engine.timeline().iter().map(|e| e.line(None)).collect(),
    }
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
    let _ = writeln!(
        out,
        "run          kills={}  restarts={}  completed={}  missing={}  elapsed={:.1}s",
        report.kills,
        report.restarts,
        if report.completed { "yes" } else { "NO" },
        report.missing,
        report.elapsed_ms as f64 / 1000.0
    );
    let _ = writeln!(out, "database     {} (kept)", display(&report.db));
    let _ = writeln!(
        out,
        "rows={} duplicated_task_ids={}",
        report.rows, report.duplicated_task_ids
    );
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

/// One lane's verdict, re-derived from a recording.
#[derive(Debug, Serialize)]
pub struct CheckedLane {
    pub name: String,
    pub strategy: String,
    pub items: u64,
    pub rows: u64,
    pub distinct: u64,
    pub duplicated_task_ids: u64,
    pub missing: u64,
    pub claimed_status: String,
    /// From the recorded history (the last sample's figures).
    pub derived_status: String,
    pub derived: String,
    /// What the recording's own end line says, if it has one.
    pub recorded_derived_status: Option<String>,
    /// Set when the end line's verdict and the history's differ: the check then fails, since
    /// one of the two is wrong and reclaim cannot tell which.
    pub contradiction: Option<String>,
    pub completed: bool,
    /// The verdict `derived_status` and `derived` spell.
    #[serde(skip)]
    pub verdict: crate::verdict::Derived,
}

/// `reclaim replay --check`: the verdict re-derived from the recorded history; 0 when every lane
/// holds every task exactly once and completed, 1 otherwise.
pub fn replay_check(args: &ReplayArgs, out: &mut dyn Write) -> Result<u8, String> {
    let recording = Recording::load(&args.file).map_err(|e| e.to_string())?;
    if recording.truncated {
        eprintln!(
            "reclaim: warning: {}: the last line was cut short; checking the rest",
            args.file.display()
        );
    }
    let lanes = checked_lanes(&recording);
    let ok = !lanes.is_empty()
        && lanes
            .iter()
            .all(|l| l.completed && l.derived_status == "ok" && l.contradiction.is_none());
    if args.json {
        let value = serde_json::json!({
            "file": args.file,
            "scenario": recording.header.scenario,
            "seed": recording.header.seed,
            "truncated": recording.truncated,
            "ended": recording.end.is_some(),
            "lanes": lanes,
            "ok": ok,
        });
        let _ = writeln!(out, "{value}");
    } else {
        let h = &recording.header;
        let _ = writeln!(
            out,
            "replay check  {}  (reclaim {}, {}, seed {})",
            args.file.display(),
            h.reclaim,
            h.scenario,
            h.seed
        );
        if recording.end.is_none() {
            let _ = writeln!(
                out,
                "the recording stops before the night ended: the job never completed on record"
            );
        }
        for lane in &lanes {
            if let Some(contradiction) = &lane.contradiction {
                let _ = writeln!(out, "{}: {contradiction}: the check fails", lane.name);
            }
            if recording.end.is_some() && !lane.completed {
                let _ = writeln!(
                    out,
                    "{}: the job never completed (the supervisor gave up)",
                    lane.name
                );
            }
            let _ = writeln!(
                out,
                "{:<10}  {}  rows={} duplicated_task_ids={}",
                lane.name,
                crate::verdict::claim_line(Some(&lane.claimed_status), lane.verdict),
                lane.rows,
                lane.duplicated_task_ids
            );
        }
    }
    Ok(if ok { EXIT_OK } else { EXIT_DATA_WRONG })
}

/// Each lane's verdict, re-derived from the latest recorded sample, beside the recording's own.
fn checked_lanes(recording: &Recording) -> Vec<CheckedLane> {
    // INVARIANT: `Recording::load` refuses samples out of time order, so the last is the latest.
    let last = recording.samples.last();
    let mut lanes = Vec::new();
    for (i, info) in recording.header.lanes.iter().enumerate() {
        let snap = last.and_then(|s| s.lanes.get(i));
        let rows = snap.map_or(0, |s| s.rows);
        let distinct = snap.map_or(0, |s| s.distinct);
        let duplicated = snap.map_or(0, |s| s.duplicated);
        let missing = info.items.saturating_sub(distinct);
        // A sample counts distinct tasks of the queue, so every row beyond them is a duplicate
        // or a row outside the queue; it cannot tell those apart, nor see the integrity check.
        let derived = Derived::from_facts(Facts {
            integrity_ok: true,
            duplicated,
            extra: rows.saturating_sub(distinct),
            missing,
            unexpected: 0,
            orphan_checkpoints: 0,
        });
        let recorded = recording.end.as_ref().and_then(|e| e.lanes.get(i));
        let contradiction = recorded
            .filter(|end| end.derived_status != derived.label())
            .map(|end| {
                format!(
                    "the recording's own verdict says {}; its history says {}",
                    escape_controls(&crate::text::shorten(&end.derived_status, 40)),
                    derived.label()
                )
            });
        lanes.push(CheckedLane {
            name: info.name.clone(),
            strategy: info.strategy.clone(),
            items: info.items,
            rows,
            distinct,
            duplicated_task_ids: duplicated,
            missing,
            claimed_status: snap
                .and_then(|s| s.claimed.as_ref())
                .map_or_else(|| "none".into(), |c| c.status.clone()),
            derived_status: derived.label().into(),
            derived: derived.to_string(),
            recorded_derived_status: recorded.map(|e| e.derived_status.clone()),
            contradiction,
            completed: recorded.is_some_and(|e| e.completed),
            verdict: derived,
        });
    }
    lanes
}
