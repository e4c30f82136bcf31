//! `reclaim shrink FILE`: the smallest failing schedule. A recorded night went wrong under
//! several kills; the search looks for the fewest kills (one, when one is enough) at the earliest
//! task and point that still go wrong with the same strategy and queue, each candidate a real
//! night, and prints that night as a scenario TOML for `reclaim tui --scenario` (and `run`).

use std::io::{IsTerminal as _, Write};
use std::path::Path;

use crate::base::exit::{DATA_WRONG, OK};
use crate::cli::ShrinkArgs;
use crate::engine::{Committed, Kind};
use crate::error::{Context as _, Error};
use crate::harness::pool::{self, Pool};
use crate::map::{Cell, Kill, PlannedNight, Runner};
use crate::record::{Recording, WorkerKind};
use crate::task::task_id;
use crate::worker::{CrashAt, CrashPoint, Strategy};

/// The tasks searched at once: enough to keep every thread busy, few enough that the search
/// stops soon after the earliest failure.
const CHUNK_TASKS: u64 = 4;

/// What the recording says about the lane that went wrong.
struct Wrong {
    lane: String,
    strategy: Strategy,
    items: u64,
    /// The last task written before each kill, in order.
    kills: Vec<Option<u64>>,
    derived: String,
}

/// Runs `reclaim shrink`.
pub(super) fn run(args: &ShrinkArgs, out: &mut dyn Write) -> Result<u8, Error> {
    if args.job.exec.is_some() {
        return super::shrink_exec::run(args, out);
    }
    let recording = Recording::load(&args.file)?;
    let wrong = the_wrong_lane(&recording, &args.file)?;
    // The same bound on the work as the map's, said before anything runs: a doctored recording
    // (100,000 items, a kill at the last) once planned 400,000 nights.
    let planned = (last_task(&wrong) + 1) * points_for(wrong.strategy).count() as u64;
    let rows = planned.saturating_mul(wrong.items).saturating_mul(2);
    if rows > crate::base::limits::MAX_PLANNED_ROWS {
        return Err(Error::Refused(format!(
            "{}: shrinking it could take {planned} nights of {} items (about {rows} rows to write, over the bound of {}); replay its schedule instead: `reclaim run --strategy {} --items {} --replay-schedule {}`",
            args.file.display(),
            wrong.items,
            crate::base::limits::MAX_PLANNED_ROWS,
            wrong.strategy,
            wrong.items,
            args.file.display(),
        )));
    }
    let exe = std::env::current_exe().context(|| "cannot find reclaim's own executable".into())?;
    let dir = crate::map::fresh_dir("shrink")
        .context(|| "cannot create a folder for the search's databases".into())?;
    let mut runner = Runner::new(exe, dir.clone(), wrong.items, false);
    runner.progress_deadline = args.deadline.progress_deadline;
    let threads = args.threads.map_or_else(pool::default_threads, usize::from);
    let found = search(&runner, &wrong, threads);
    let _ = std::fs::remove_dir_all(&dir);
    let (found, nights) = found?;
    let recorded = describe_kills(&wrong.kills);
    // The search runs crashes only: a cell it found is a crash's.
    let Some((cell, crash)) = found.and_then(|cell| cell.kill().crash().map(|c| (cell, c))) else {
        eprintln!(
            "reclaim shrink: no single kill makes {} go wrong on {} items ({} nights searched); the recorded schedule ({recorded}) is the smallest known: replay it with `reclaim run --strategy {} --items {} --replay-schedule {}`",
            wrong.strategy,
            wrong.items,
            nights,
            wrong.strategy,
            wrong.items,
            args.file.display()
        );
        return Ok(DATA_WRONG);
    };
    let source = args.file.display().to_string();
    let _ = write!(
        out,
        "{}",
        scenario_toml(&wrong, &cell, crash, &source, &recorded, nights)
    );
    eprintln!(
        "reclaim shrink: {recorded} -> 1 kill at {crash}, which still goes wrong ({}); the search ran {nights} nights",
        cell.verdict()
    );
    Ok(OK)
}

/// The first lane of the recording that ended wrong, with its kills.
fn the_wrong_lane(recording: &Recording, file: &Path) -> Result<Wrong, Error> {
    let name = file.display();
    let Some(end) = &recording.end else {
        return Err(Error::Refused(format!(
            "{name}: the recording has no end (the night was cut short), so it is not known to have gone wrong; record a whole night"
        )));
    };
    let Some(lane) = end.lanes.iter().position(|l| !l.is_ok()) else {
        return Err(Error::Refused(format!(
            "{name}: every lane of this night ended right; shrink needs a night that went wrong"
        )));
    };
    let info = recording.header.lanes.get(lane).ok_or_else(|| {
        Error::Refused(format!(
            "{name}: lane {} ended wrong but the header does not describe it",
            lane + 1
        ))
    })?;
    let strategy = match &info.strategy {
        WorkerKind::Strategy(strategy) => *strategy,
        WorkerKind::Exec => {
            return Err(Error::Refused(format!(
                "{name}: lane {} ran your own job; give its command with --exec CMD (and its --table, --key, --key-format): shrink never runs a command read from a recording",
                crate::base::text::escape_controls(&info.name)
            )));
        }
        WorkerKind::Unknown(unknown) => {
            return Err(Error::Refused(format!(
                "{name}: unknown strategy '{}'",
                crate::base::text::shorten(unknown, 40)
            )));
        }
    };
    let mut last_task = None;
    let mut kills = Vec::new();
    for event in recording.events.iter().filter(|e| e.lane == Some(lane)) {
        if event.kind == Kind::Item {
            last_task = match event.last_committed() {
                Some(Committed::Task(task)) => task,
                Some(Committed::Key(_)) | None => None,
            };
        }
        if event.mark == Some(crate::engine::Mark::Kill) {
            kills.push(last_task);
        }
    }
    if kills.is_empty() {
        return Err(Error::Refused(format!(
            "{name}: lane {} went wrong without a kill; shrink searches kill schedules",
            info.name
        )));
    }
    // Recorded text is escaped before it goes anywhere near the TOML: a line break in it would
    // end a comment and write TOML of its own (kills, captions) into the scenario.
    Ok(Wrong {
        lane: crate::base::text::escape_controls(&info.name),
        strategy,
        items: info.items,
        kills,
        derived: crate::base::text::escape_controls(&end.lanes[lane].derived),
    })
}

/// Single kills in time order (task, then point within the task), a few tasks at a time in
/// parallel, up to one past the last task a recorded kill followed (a kill after task t landed
/// somewhere before t+1's commit); the earliest that goes wrong, and how many nights ran.
fn search(runner: &Runner, wrong: &Wrong, threads: usize) -> Result<(Option<Cell>, usize), Error> {
    let last = last_task(wrong);
    let planned = (last + 1) * points_for(wrong.strategy).count() as u64;
    let progress = std::io::stderr().is_terminal();
    let mut shown = std::time::Instant::now();
    let mut nights = 0;
    let mut first = 0;
    while first <= last {
        let chunk_end = (first + CHUNK_TASKS - 1).min(last);
        let candidates: Vec<(usize, PlannedNight)> = (first..=chunk_end)
            .flat_map(|task| {
                points_for(wrong.strategy).map(move |point| PlannedNight {
                    strategy: wrong.strategy,
                    kill: Kill::Crash(CrashAt { task, point }),
                })
            })
            .enumerate()
            .map(|(i, night)| (nights + i, night))
            .collect();
        nights += candidates.len();
        let worker = runner.clone();
        let pool = Pool::start(candidates, threads, move |&(n, night), cancel| {
            worker.run(n, night, cancel)
        })?;
        let mut failing: Vec<(usize, Cell)> = Vec::new();
        while let Some((i, result)) = pool.next() {
            let cell = result.inspect_err(|_| {
                // The error line must not land at the end of the progress line.
                if progress {
                    eprintln!();
                }
            })?;
            if progress && shown.elapsed().as_millis() >= 100 {
                shown = std::time::Instant::now();
                eprint!(
                    "\rreclaim shrink: tasks {first}..{chunk_end} of {} ({nights} of at most {planned} nights) ",
                    last + 1
                );
            }
            // A crash that never fired proves nothing; only a real kill that broke the data counts.
            if cell.killed && !cell.is_right() {
                failing.push((i, cell));
            }
        }
        if let Some((_, cell)) = failing.into_iter().min_by_key(|(i, _)| *i) {
            if progress {
                eprintln!();
            }
            return Ok((Some(cell), nights));
        }
        first = chunk_end + 1;
    }
    if progress {
        eprintln!();
    }
    Ok((None, nights))
}

/// The last task worth a night: one past the last task a recorded kill followed (a kill after
/// task t landed somewhere before t+1's commit), within the queue.
fn last_task(wrong: &Wrong) -> u64 {
    wrong
        .kills
        .iter()
        .flatten()
        .max()
        .map_or(0, |&t| t + 1)
        .min(wrong.items.saturating_sub(1))
}

/// The crash points worth a night for `strategy`: `after-row-commit` is a place of its own only
/// where the row and its checkpoint commit apart; elsewhere it is `after-commit`.
fn points_for(strategy: Strategy) -> impl Iterator<Item = CrashPoint> {
    CrashPoint::ALL
        .into_iter()
        .filter(move |&p| p != CrashPoint::AfterRowCommit || strategy.checkpoints_apart())
        .filter(move |&p| p.reached_by(strategy, false))
}

fn describe_kills(kills: &[Option<u64>]) -> String {
    let each: Vec<String> = kills
        .iter()
        .map(|k| {
            k.map_or_else(
                || "before any row".to_string(),
                |t| format!("after {}", task_id(t)),
            )
        })
        .collect();
    let noun = if kills.len() == 1 { "kill" } else { "kills" };
    format!("{} {noun}: {}", kills.len(), each.join(", "))
}

/// A TOML string literal.
fn quoted(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

fn scenario_toml(
    wrong: &Wrong,
    cell: &Cell,
    crash: CrashAt,
    source: &str,
    recorded: &str,
    nights: usize,
) -> String {
    let title = format!("{}: one kill at {crash}", wrong.strategy);
    let about = format!(
        "Shrunk from {source}, where lane {} ({recorded}) ended {}. One kill, at {crash}, is enough: {}.",
        wrong.lane,
        wrong.derived,
        cell.figures()
    );
    format!(
        "# The smallest failing schedule, found by `reclaim shrink` in {nights} real nights.\n\
         # Recorded: {recorded}; ended {derived}.\n\
         # Shrunk:   1 kill at {crash}: {figures}.\n\
         # Watch it: reclaim tui --scenario THIS_FILE\n\
         # Headless: reclaim run --strategy {strategy} --items {items} --crash-at {crash}\n\
         title = {title}\n\
         about = {about}\n\
         \n\
         scale = 100.0\n\
         items = {items}\n\
         delay_ms = 63.0\n\
         restart_delay = 18.0\n\
         seed = 0\n\
         \n\
         [[lane]]\n\
         strategy = {strategy_q}\n\
         crash_at = {crash_q}\n",
        derived = wrong.derived,
        figures = cell.figures(),
        strategy = wrong.strategy,
        items = wrong.items,
        title = quoted(&title),
        about = quoted(&about),
        strategy_q = quoted(wrong.strategy.name()),
        crash_q = quoted(&crash.to_string()),
    )
}
