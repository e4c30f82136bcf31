//! `reclaim map --exec CMD`: the kill-timing map of the user's own job. A first night runs it
//! undisturbed and hears which crash points it announces; then every key x every point (or,
//! for a job that announces none, a kill after every row count 1..N) is a real night, in
//! parallel, each in its own folder. On a terminal the cells stream onto the map screen (the
//! built-in map's), otherwise printed as text (one band per point), `--json` or `--csv`;
//! `--junit` writes a test case per band. Exit 0 only when no cell is wrong (and, under
//! `--strict`, every cell's kill fired and nothing the map saw was left untested).

use std::io::{IsTerminal as _, Write};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::map_exec_report::{Legend, print};
use crate::cli::MapArgs;
use crate::engine::ExecJob;
use crate::error::{Context as _, Error};
use crate::harness::pool::{self, Pool};
use crate::map::exec::{ExecCell, ExecKill, ExecRunner};
use crate::map::{Tally, Tested};
use crate::verdict::account::Account;

/// Runs `reclaim map --exec`.
/// `warehouse` is the night's PostgreSQL when it was opened already (to read `--keys-sql`).
pub(super) fn run(
    args: &MapArgs,
    mut job: ExecJob,
    warehouse: Option<crate::warehouse::Night>,
    out: &mut dyn Write,
) -> Result<u8, Error> {
    // Each night's job is told its vendor, whose messages judge the cell beside its rows.
    job.vendor = args.vendor.vendor.is_some();
    // With a vendor, a band of kills at each message: after a send, before what follows it.
    let messages = job.vendor;
    let tasks = checked_tasks(args, &job)?;
    let items = job.queue.len();
    let junit = args
        .junit
        .as_deref()
        .map(crate::verdict::junit::check_path)
        .transpose()?;
    // On PostgreSQL one cluster (or server) holds the whole map, each night in its own schema;
    // the map is printed, not drawn (the screen's `enter` opens a night on SQLite files).
    let warehouse = warehouse.map_or_else(|| super::open_map_warehouse(args), |n| Ok(Some(n)))?;
    let dir = crate::map::fresh_dir("map-exec")
        .context(|| "cannot create a folder for the map's nights".into())?;
    let command = job.command.clone();
    let queue = job.queue.describe();
    let interactive = on_screen_here(args, warehouse.is_some());
    let screen_job = job.clone();
    let exe = std::env::current_exe().context(|| "cannot find reclaim's own executable".into())?;
    let runner = ExecRunner {
        exe: exe.clone(),
        dir: dir.clone(),
        job,
        db_name: args.db_name.clone(),
        vendor: args.vendor.vendor,
        keep: args.keeps_all(),
        rows_delay: std::time::Duration::from_secs_f64(args.delay_ms / 1000.0),
        progress_deadline: args.deadline.progress_deadline,
        warehouse: crate::warehouse::Warehouse::of(warehouse.as_ref()),
        oracle: None,
    };
    let started = Instant::now();
    let result = (|| {
        if interactive {
            eprintln!("reclaim map --exec: an undisturbed night first, to hear the job's points…");
        }
        let (points, undisturbed) = runner.probe(&AtomicBool::new(false))?;
        let runner = &compared(&runner, args)?;
        let oracle = runner.oracle.clone();
        let kills = crate::map::exec::plan(&points, tasks, messages);
        // A bound on the work asked for, as the built-in map has.
        let rows = kills.len() as u64 * items * 2;
        if rows > 200_000_000 {
            return Err(Error::Refused(format!(
                "{} nights of {items} items is about {rows} rows to write; narrow --tasks",
                kills.len()
            )));
        }
        let (cells, whole, elapsed) = if interactive {
            let screen = Screen {
                job: &screen_job,
                points: &points,
                tasks,
                exe,
                dir: &dir,
                delay: runner.rows_delay,
            };
            on_screen(kills, runner, args, &screen, started)?
        } else {
            let cells = collect(kills, runner, args)?;
            (cells, true, started.elapsed().as_secs_f64())
        };
        Ok((points, undisturbed, cells, whole, elapsed, oracle))
    })();
    let kept = crate::map::keep_or_remove(&dir, args.keep.unwrap_or_default());
    let (points, undisturbed, cells, whole, elapsed, oracle) = result?;
    let reference = oracle.as_deref().map(|o| (o.line(), o.account()));
    let all_right = all_right(whole, &cells, reference.as_ref());
    let seen_wrong = checkpoint_first_seen(undisturbed.checkpoint_before_row.as_deref(), &cells);
    let left = (!whole).then(|| plan_size(&points, tasks, messages).saturating_sub(cells.len()));
    let bands = crate::map::exec::bands(&points, messages);
    let judged = judge(&cells, left, (&seen_wrong, reference.as_ref()), args.strict);
    if let Some(path) = &junit {
        let cases = junit_cases(
            &bands,
            &cells,
            (&seen_wrong, reference.as_ref(), &judged),
            args.strict,
        );
        crate::verdict::junit::write(path, "reclaim map --exec", &cases)
            .context(|| format!("cannot write --junit {}", path.display()))?;
    }
    let facts = Legend {
        reference: reference.as_ref().map(|r| r.0.as_str()),
        command: &command,
        queue,
        points: &points,
        undisturbed: &undisturbed.verdict(),
        seen_wrong: &seen_wrong,
        judged: &judged,
        elapsed,
        kept,
        first: tasks.0,
        left,
        bands: &bands,
        interactive,
    };
    print(args, &facts, &cells, all_right, out)?;
    // Its closing lines on stderr beside JSON or CSV, so stdout stays one format.
    crate::warehouse::close_map(warehouse, args.keeps_all(), args.json || args.csv, out);
    Ok(judged.exit_code())
}

/// The map is drawn on the screen: no other format asked for, on SQLite files (the screen's
/// `enter` opens a night there), and a terminal both ways.
fn on_screen_here(args: &MapArgs, on_postgres: bool) -> bool {
    !args.json
        && !args.csv
        && !args.plain
        && !on_postgres
        && std::io::stdout().is_terminal()
        && std::io::stdin().is_terminal()
}

/// The map whole, every cell right, and (`--compare`) nothing its reference left uncompared.
fn all_right(whole: bool, cells: &[ExecCell], reference: Option<&(String, Account)>) -> bool {
    whole
        && !cells.is_empty()
        && cells.iter().all(ExecCell::is_right)
        && reference.is_none_or(|(_, account)| account.entries.is_empty())
}

/// The runner, with `--compare` the undisturbed night run twice more first: its tables the
/// reference every cell's are compared with.
fn compared(runner: &ExecRunner, args: &MapArgs) -> Result<ExecRunner, Error> {
    let oracle = (args.compare.compare)
        .then(|| runner.undisturbed(super::compare::scope(&args.compare)))
        .transpose()?;
    Ok(ExecRunner {
        oracle: oracle.map(std::sync::Arc::new),
        ..runner.clone()
    })
}

/// The keys to kill at (`--tasks`, or the whole queue), every value checked before anything
/// starts: no `--points`, the database's name, the keys, and the least the map would write.
fn checked_tasks(args: &MapArgs, job: &ExecJob) -> Result<(u64, u64), Error> {
    if args.points.is_some() {
        return Err(Error::Refused(
            "--points names reclaim's own crash points; map --exec maps every point your job announces (reclaim-point NAME KEY), or its row counts when it announces none".into(),
        ));
    }
    let name = &args.db_name;
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(Error::Refused(format!(
            "--db-name {name:?} must be a file name (each night makes its own folder)"
        )));
    }
    let items = job.queue.len();
    let tasks = match &args.tasks {
        Some(range) => {
            let key = |typed: &str| {
                job.queue.resolve(typed).ok_or_else(|| {
                    Error::Refused(format!(
                        "--tasks: '{}' is no key of the queue ({}), nor a number below {items}",
                        crate::base::text::escape_controls(&crate::base::text::shorten(typed, 40)),
                        job.queue.describe()
                    ))
                })
            };
            let (first, last) = (key(&range.first)?, key(&range.last)?);
            if first > last {
                return Err(Error::Refused(format!(
                    "--tasks {}..{} is empty: the first key comes after the last in the queue",
                    crate::base::text::escape_controls(&range.first),
                    crate::base::text::escape_controls(&range.last)
                )));
            }
            (first, last)
        }
        None => (0, items - 1),
    };
    // The least the map will write, known before its first night: a night per key at least.
    let least = (tasks.1 - tasks.0 + 1)
        .saturating_mul(items)
        .saturating_mul(2);
    if least > 200_000_000 {
        return Err(Error::Refused(format!(
            "{} nights of {items} items is at least {least} rows to write; narrow --tasks",
            tasks.1 - tasks.0 + 1
        )));
    }
    Ok(tasks)
}

/// How many nights the map of `points` over `tasks` holds.
fn plan_size(points: &[String], tasks: (u64, u64), messages: bool) -> usize {
    crate::map::exec::plan(points, tasks, messages).len()
}

/// What the interactive screen needs besides the nights.
struct Screen<'a> {
    job: &'a ExecJob,
    points: &'a [String],
    tasks: (u64, u64),
    exe: std::path::PathBuf,
    dir: &'a std::path::Path,
    /// The pace of a night opened from the map (the map's own, or 63 ms when that is 0).
    delay: std::time::Duration,
}

/// The nights on the map screen as they arrive, until every one has and the user quits (or the
/// user quits first): the cells that arrived, whether they are all, and the seconds they took.
fn on_screen(
    kills: Vec<ExecKill>,
    runner: &ExecRunner,
    args: &MapArgs,
    screen: &Screen<'_>,
    started: Instant,
) -> Result<(Vec<ExecCell>, bool, f64), Error> {
    use crate::tui::map::{MapRun, MapState};
    let threads = args.threads.map_or_else(pool::default_threads, usize::from);
    let jobs: Vec<(usize, ExecKill)> = kills.into_iter().enumerate().collect();
    let night = runner.clone();
    let pool = Pool::start(jobs, threads, move |(n, kill), cancel| {
        night.run(*n, kill, cancel)
    })?;
    let job = screen.job.clone();
    // Watchable: the job's own pace, at least 63 ms an item as the built-in map's nights.
    let delay = screen.delay.max(std::time::Duration::from_millis(63));
    let mut map = MapRun {
        state: MapState::with_layout(crate::map::exec::layout(
            screen.job,
            screen.points,
            screen.tasks,
        )),
        pool,
        exe: screen.exe.clone(),
        dir: screen.dir.to_path_buf(),
        started,
        open: Box::new(move |cell: &ExecCell| crate::map::exec::scenario_for(&job, cell, delay)),
    };
    let result = crate::tui::map::run(&mut map);
    // The nights in flight finish or are killed with the pool, none left behind.
    drop(map.pool);
    result?;
    let whole = map.state.finished();
    let elapsed = if whole {
        map.state.elapsed_s
    } else {
        started.elapsed().as_secs_f64()
    };
    Ok((map.state.cells(), whole, elapsed))
}

/// Runs the nights in parallel, a progress line on a terminal's stderr; cells in plan order.
fn collect(
    kills: Vec<ExecKill>,
    runner: &ExecRunner,
    args: &MapArgs,
) -> Result<Vec<ExecCell>, Error> {
    let total = kills.len();
    let threads = args.threads.map_or_else(pool::default_threads, usize::from);
    let jobs: Vec<(usize, ExecKill)> = kills.into_iter().enumerate().collect();
    let night = runner.clone();
    let pool = Pool::start(jobs, threads, move |(n, kill), cancel| {
        night.run(*n, kill, cancel).map(|cell| (*n, cell))
    })?;
    let progress = std::io::stderr().is_terminal();
    let mut cells: Vec<Option<ExecCell>> = vec![None; total];
    let mut done = 0;
    while let Some((_, result)) = pool.next() {
        let (n, cell) = result?;
        cells[n] = Some(cell);
        done += 1;
        if progress {
            eprint!("\rreclaim map --exec: {done}/{total} nights ");
        }
    }
    if progress {
        eprintln!();
    }
    if done < total {
        return Err(Error::Stopped(
            crate::base::signals::received().unwrap_or("a signal"),
        ));
    }
    Ok(cells.into_iter().flatten().collect())
}

/// The one rule on the whole map: its cells, the nights `left` unrun, and what it saw go wrong
/// beside them.
fn judge(
    cells: &[ExecCell],
    left: Option<usize>,
    (seen_wrong, reference): (&[String], Option<&(String, Account)>),
    strict: bool,
) -> crate::verdict::account::Judgement {
    let tally = Tally::of(cells.iter().map(ExecCell::tested));
    let mut account = crate::map::account(tally, cells.len(), left, "kill");
    for said in seen_wrong {
        account.push(
            crate::verdict::account::Kind::CheckpointBeforeRow,
            said.clone(),
        );
    }
    // `--compare`: what the undisturbed night leaves uncompared, said once for the map.
    if let Some((_, reference)) = reference {
        account.absorb(reference, "");
    }
    account.judge(strict)
}

/// What the map saw go wrong beside its cells: a job whose undisturbed night (`key`'s) or any
/// cell's night committed a checkpoint before its row. A kill by rows lands after a row's
/// commit, so no cell may have landed between the two; seen, the danger is real all the same (a
/// crash point there shows what it does: docs/own-job.md). Empty when nothing was seen.
fn checkpoint_first_seen(key: Option<&str>, cells: &[ExecCell]) -> Vec<String> {
    // Seen on the undisturbed night or on any cell's: an observer reads between a job's
    // commits when it reads, so one night may catch the checkpoint alone where another does not.
    let key = key.or_else(|| (cells.iter()).find_map(|c| c.checkpoint_before_row.as_deref()));
    key.map(crate::harness::checkpoint_first)
        .into_iter()
        .collect()
}

/// The JUnit case for what the map saw go wrong beside its cells: a failure.
fn seen_wrong_case(why: &str) -> crate::verdict::junit::Case {
    crate::verdict::junit::Case {
        class: "map.exec".into(),
        name: "checkpoint before its row".into(),
        outcome: crate::verdict::junit::CaseResult::Failed(format!("FAIL: {why}")),
        detail: why.to_string(),
    }
}

/// A JUnit test case per band: the one rule on its nights; then one for each thing the map saw
/// go wrong beside its cells, one for what `--compare`'s reference left uncompared, and the
/// whole map's (`judged`).
fn junit_cases(
    bands: &[String],
    cells: &[ExecCell],
    (seen_wrong, reference, judged): (
        &[String],
        Option<&(String, Account)>,
        &crate::verdict::account::Judgement,
    ),
    strict: bool,
) -> Vec<crate::verdict::junit::Case> {
    let compared = reference.map(|(line, account)| crate::verdict::junit::Case {
        class: "map.exec".into(),
        name: "the undisturbed night (--compare)".into(),
        outcome: account.judge(strict).junit(),
        detail: line.clone(),
    });
    let gaps = seen_wrong.iter().map(|why| seen_wrong_case(why));
    (bands.iter())
        .map(|band| {
            let nights: Vec<(Tested, String)> = (cells.iter())
                .filter(|c| &c.band == band)
                .map(|c| (c.tested(), format!("{}: {}", c.at, c.verdict())))
                .collect();
            crate::map::band_case("map.exec".into(), band.clone(), &nights, strict)
        })
        .chain(gaps)
        .chain(compared)
        .chain(crate::map::whole_map_case("map.exec", judged))
        .collect()
}
