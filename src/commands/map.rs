//! `reclaim map`: the kill-timing map. Every (strategy, task, crash point) is a real night run in
//! parallel; on a terminal the cells stream onto the map screen, otherwise the map is printed
//! (as text, `--json` or `--csv`). Exit 0 when no cell is wrong (and, under `--strict`, every
//! cell's crash fired), 1 when not.

use std::io::{self, IsTerminal as _, Write};
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::cli::MapArgs;
use crate::error::{Context as _, Error};
use crate::harness::pool::{self, Pool};
use crate::map::{Cell, Plan, Runner, Summary, Tally, Tested, summarize};
use crate::tui::map::{MapRun, MapState};
use crate::worker::Strategy;

/// `--json`: one object. The keys are stable.
#[derive(Debug, Serialize)]
struct MapReport<'a> {
    items: u64,
    tasks: (u64, u64),
    points: Vec<&'static str>,
    nights: usize,
    cells: &'a [Cell],
    summary: Vec<Summary>,
    all_right: bool,
    /// Cells whose crash never fired: never right; failures only with `--strict`.
    not_tested: usize,
    elapsed_s: f64,
    /// Where the databases are, with `--keep`.
    #[serde(skip_serializing_if = "Option::is_none")]
    kept: Option<String>,
    /// `pass`, `fail` or `untested`: the one rule on the whole map.
    outcome: String,
    judgement: &'a crate::verdict::account::Judgement,
}

/// The most real time a map's paced nights (its pause band) may take together, one after
/// another: a bound on a typo's cost, as `MAX_PLANNED_ROWS` is for the rest.
const MAX_PACED_SECS: f64 = 4.0 * 3600.0;

/// The plan the arguments describe, every value checked before anything starts, and the notes
/// to say once nothing can refuse it any more (the bands left out).
fn plan_of(args: &MapArgs) -> Result<(Plan, Vec<String>), Error> {
    let tasks = match &args.tasks {
        Some(range) => range
            .tasks()
            .map_err(|e| Error::Refused(format!("--tasks: {e}")))?,
        None => (0, args.items - 1),
    };
    crate::task::check_in_queue("--tasks", tasks.1, args.items)?;
    let mut plan = Plan {
        strategies: args.strategy.0.clone(),
        points: args
            .points
            .as_ref()
            .map_or_else(crate::map::Point::rows, |p| p.0.clone()),
        tasks,
        items: args.items,
    };
    for &point in &plan.points {
        if point.needs_server() {
            super::answers_can_be_lost(&args.warehouse, "--points lost-answer")?;
        }
        // A point no strategy named passes would be a band of nights that test nothing (the
        // map sends no side effect: only the outbox's relay sends; only claiming holds a lease).
        if let Some(never) = unreached(&plan, point)
            .filter(|_| !plan.strategies.iter().any(|&s| point.reached_by(s)))
        {
            return Err(Error::Refused(never));
        }
    }
    // A band some strategies named never meet is left out of the map, and said; a strategy
    // that meets none of the points is left out whole (no title, summary or JSON of nothing).
    let mut notes: Vec<String> = (plan.points.iter())
        .filter_map(|&point| unreached(&plan, point))
        .map(|never| format!("{never}; the map draws that point only where it is reached"))
        .collect();
    let (kept, left): (Vec<Strategy>, Vec<Strategy>) =
        (plan.strategies.iter()).partition(|&&s| plan.points.iter().any(|p| p.reached_by(s)));
    if !left.is_empty() && !kept.is_empty() {
        let names: Vec<&str> = left.iter().map(|s| s.name()).collect();
        notes.push(format!(
            "{} left out of the map: no point of --points reaches {}",
            names.join(", "),
            if left.len() == 1 { "it" } else { "them" }
        ));
        plan.strategies = kept;
    }
    if plan.nights().is_empty() {
        return Err(Error::Refused(
            "the map has no night to run: give --strategy and --points that meet".into(),
        ));
    }
    // A bound on the work asked for, so a typo cannot start a night of many hours.
    let rows = plan.nights().len() as u64 * plan.items * 2;
    if rows > crate::base::limits::MAX_PLANNED_ROWS {
        return Err(Error::Refused(format!(
            "{} nights of {} items is about {rows} rows to write; narrow --tasks, --points or --strategy",
            plan.nights().len(),
            plan.items
        )));
    }
    // Each pause night is paced: bounded by its real time, two workers sharing its items.
    let paced = (plan.nights().iter())
        .filter(|n| n.kill.point() == crate::map::Point::Pause)
        .count();
    let paced_secs = paced as f64 * plan.items as f64 * crate::map::PAUSE_DELAY.as_secs_f64() / 2.0;
    if paced_secs > MAX_PACED_SECS {
        return Err(Error::Refused(format!(
            "--points pause: {paced} paced nights of {} items take about {:.1} hours (10 ms an item); narrow --tasks or --items",
            plan.items,
            paced_secs / 3600.0
        )));
    }
    Ok((plan, notes))
}

/// What `point` does not reach among the plan's strategies, and who does, in one sentence;
/// `None` when every strategy named reaches it.
fn unreached(plan: &Plan, point: crate::map::Point) -> Option<String> {
    let never: Vec<&str> = (plan.strategies.iter())
        .filter(|s| !point.reached_by(**s))
        .map(|s| s.name())
        .collect();
    if never.is_empty() {
        return None;
    }
    let reach: Vec<&str> = crate::worker::Strategy::all()
        .iter()
        .filter(|s| point.reached_by(**s))
        .map(|s| s.name())
        .collect();
    Some(format!(
        "--points {point}: {} never {} it in the map ({}); {}",
        never.join(", "),
        if never.len() == 1 { "reaches" } else { "reach" },
        point.unreached(),
        match reach.as_slice() {
            [] => "no strategy does".to_string(),
            [one] => format!("only {one} does"),
            many => format!("{} do", many.join(", ")),
        }
    ))
}

/// The last check before the nights (a kept map's room) and the lines said before they start:
/// the room it takes, and what the map leaves out.
fn before_start(args: &MapArgs, dir: &Path, plan: &Plan, notes: &[String]) -> Result<(), Error> {
    if args.keeps_all() {
        match crate::map::kept_size(dir, plan.nights().len(), plan.items) {
            Ok(line) => eprintln!("{}", crate::base::text::escape_controls(&line)),
            Err(no_room) => {
                let _ = std::fs::remove_dir(dir);
                return Err(Error::Refused(no_room.to_string()));
            }
        }
    }
    // Nothing refuses the map from here.
    for note in notes {
        eprintln!("reclaim map: {note}");
    }
    Ok(())
}

/// Runs `reclaim map`.
pub(super) fn run(args: &MapArgs) -> Result<u8, Error> {
    // A queue read on the server (--keys-sql on PostgreSQL) needs the warehouse first.
    let early = super::open_for_keys(&args.job, &args.warehouse, || {
        super::open_map_warehouse(args)
    })?;
    let on_keys = crate::warehouse::Warehouse::of(early.as_ref());
    if let Some(job) = args.job.to_job_on(args.items, &on_keys)? {
        return super::map_exec::run(args, job, early, &mut crate::base::out::stdout());
    }
    let (plan, notes) = plan_of(args)?;
    let junit = args
        .junit
        .as_deref()
        .map(crate::verdict::junit::check_path)
        .transpose()?;
    // On PostgreSQL one cluster (or server) holds the whole map, each night in its own schema;
    // the map is printed, not drawn (the screen's `enter` opens a night on SQLite files).
    let night = super::open_map_warehouse(args)?;
    let interactive = !args.json
        && !args.csv
        && !args.plain
        && night.is_none()
        && io::stdout().is_terminal()
        && io::stdin().is_terminal();
    let exe = std::env::current_exe().context(|| "cannot find reclaim's own executable".into())?;
    let dir = crate::map::fresh_dir("map")
        .context(|| "cannot create a folder for the map's databases".into())?;
    before_start(args, &dir, &plan, &notes)?;
    let mut runner = Runner::new(exe.clone(), dir.clone(), plan.items, args.keeps_all());
    runner.progress_deadline = args.deadline.progress_deadline;
    runner.warehouse = crate::warehouse::Warehouse::of(night.as_ref());
    let threads = args.threads.map_or_else(pool::own_map_threads, usize::from);
    let jobs: Vec<_> = plan.nights().into_iter().enumerate().collect();
    let started = Instant::now();
    let outcome = (|| {
        let pool = Pool::start(jobs, threads, move |&(n, night), cancel| {
            runner.run(n, night, cancel)
        })?;
        if interactive {
            let plan_items = plan.items;
            let mut map = MapRun {
                state: MapState::new(&plan),
                pool,
                exe,
                dir: dir.clone(),
                started,
                open: Box::new(move |cell: &Cell| crate::tui::map::scenario_for(cell, plan_items)),
            };
            let result = crate::tui::map::run(&mut map);
            // The nights in flight finish (each a few milliseconds) or die with the signal.
            drop(map.pool);
            result.map(|()| map.state)
        } else {
            collect(&plan, &pool, started)
        }
    })();
    let state = match outcome {
        Ok(state) => state,
        Err(error) => {
            if !args.keeps_all() {
                let _ = std::fs::remove_dir_all(&dir);
            }
            return Err(error);
        }
    };
    let cells = state.cells();
    // An empty map proves nothing: it is never all right.
    let all_right = state.finished() && !cells.is_empty() && cells.iter().all(Cell::is_right);
    let judged = crate::map::account(
        Tally::of(cells.iter().map(Cell::tested)),
        cells.len(),
        (!state.finished()).then(|| plan.nights().len().saturating_sub(cells.len())),
        plan.fault(),
    )
    .judge(args.strict);
    if let Some(path) = &junit {
        crate::verdict::junit::write(
            path,
            "reclaim map",
            &(junit_cases(&plan, &cells, args.strict).into_iter())
                .chain(crate::map::whole_map_case("map", &judged))
                .collect::<Vec<_>>(),
        )
        .context(|| format!("cannot write --junit {}", path.display()))?;
    }
    let kept = crate::map::keep_or_remove(&dir, args.keep.unwrap_or_default());
    let mut out = crate::base::out::stdout();
    print_map(
        args,
        (&plan, &state),
        (all_right, interactive),
        (kept, &judged),
        &mut out,
    )?;
    // Its closing lines on stderr beside JSON or CSV, so stdout stays one format.
    crate::warehouse::close_map(night, args.keeps_all(), args.json || args.csv, &mut out);
    Ok(judged.exit_code())
}

/// The finished map on stdout: JSON, CSV, or the plain map and its summary.
fn print_map(
    args: &MapArgs,
    (plan, state): (&Plan, &MapState),
    (all_right, interactive): (bool, bool),
    (kept, judged): (Option<String>, &crate::verdict::account::Judgement),
    out: &mut dyn Write,
) -> Result<(), Error> {
    let plan = plan.clone();
    // The time the nights took (not the time spent watching them afterwards).
    let elapsed = state.elapsed_s;
    let cells = state.cells();
    if args.json {
        let report = MapReport {
            items: plan.items,
            tasks: plan.tasks,
            points: plan.points.iter().map(|p| p.name()).collect(),
            nights: cells.len(),
            summary: summarize(&plan, &cells),
            cells: &cells,
            all_right,
            not_tested: Tally::of(cells.iter().map(Cell::tested)).untested,
            elapsed_s: (elapsed * 1000.0).round() / 1000.0,
            kept,
            outcome: judged.outcome.mark().to_lowercase(),
            judgement: judged,
        };
        let text = serde_json::to_string(&report).map_err(Error::json("the map"))?;
        let _ = writeln!(out, "{text}");
    } else if args.csv {
        let _ = writeln!(
            out,
            "strategy,task,point,rows,distinct,duplicated_task_ids,missing,derived_status"
        );
        for c in &cells {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{}",
                c.strategy,
                c.task,
                c.point,
                c.rows,
                c.distinct,
                c.duplicated_task_ids,
                c.missing,
                c.derived_status.label()
            );
        }
    } else {
        if !interactive {
            let width = terminal_width();
            let _ = write!(out, "{}", crate::tui::map::plain_text(state, width));
        }
        let kept = kept.map(|dir| {
            let why = crate::map::kept_why(std::path::Path::new(&dir), args.keeps_all());
            format!("{dir} ({why})")
        });
        let on_server = args.warehouse != crate::warehouse::Spec::Sqlite;
        print_summary(
            &plan,
            state,
            elapsed,
            kept.as_deref().map(|dir| (dir, on_server)),
            out,
        );
        let _ = writeln!(out, "outcome: {}", judged.line());
    }
    Ok(())
}

/// One JUnit test case per band (strategy x point): it fails when any of its nights is wrong,
/// naming them.
fn junit_cases(plan: &Plan, cells: &[Cell], strict: bool) -> Vec<crate::verdict::junit::Case> {
    plan.bands()
        .into_iter()
        .map(|(strategy, point)| {
            let nights: Vec<(Tested, String)> = (cells.iter())
                .filter(|c| c.strategy == strategy && c.point == point.name())
                .map(|c| {
                    let line = format!("{}: {}", crate::task::task_id(c.task), c.figures());
                    (c.tested(), line)
                })
                .collect();
            crate::map::band_case(
                format!("map.{}", strategy.name()),
                point.name().to_string(),
                &nights,
                strict,
            )
        })
        .collect()
}

/// Waits for every night, with a progress line on a terminal's stderr.
fn collect(plan: &Plan, pool: &Pool<Cell>, started: Instant) -> Result<MapState, Error> {
    let mut state = MapState::new(plan);
    let progress = io::stderr().is_terminal();
    let mut shown = Instant::now();
    while let Some((_, result)) = pool.next() {
        let cell = match result {
            Ok(cell) => cell,
            Err(error) => {
                // The error line must not land at the end of the progress line.
                if progress {
                    eprintln!();
                }
                return Err(error);
            }
        };
        state.add(cell);
        if progress && (shown.elapsed().as_millis() >= 100 || state.finished()) {
            shown = Instant::now();
            let wrong = state.cells().iter().filter(|c| !c.is_right()).count();
            eprint!(
                "\rreclaim map: {}/{} nights, {wrong} wrong, {:.1} s ",
                state.done(),
                state.total(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    state.elapsed_s = started.elapsed().as_secs_f64();
    if progress {
        eprintln!();
    }
    if !state.finished() {
        // The pool ended early without an error: only a signal does that.
        return Err(Error::Stopped(
            crate::base::signals::received().unwrap_or("a signal"),
        ));
    }
    Ok(state)
}

/// The width to draw the plain map at: the terminal's, else `COLUMNS`, else 100.
fn terminal_width() -> u16 {
    crossterm::terminal::size()
        .ok()
        .map(|(w, _)| w)
        .filter(|&w| w > 0 && io::stdout().is_terminal())
        .or_else(|| std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()))
        .unwrap_or(100)
        .clamp(40, 400)
}

fn print_summary(
    plan: &Plan,
    state: &MapState,
    elapsed: f64,
    kept: Option<(&str, bool)>,
    out: &mut dyn Write,
) {
    let cells = state.cells();
    let Tally { wrong, untested } = Tally::of(cells.iter().map(Cell::tested));
    let _ = writeln!(
        out,
        "reclaim map: {} of {} nights in {elapsed:.1} s; {wrong} cells wrong{}",
        state.done(),
        state.total(),
        crate::map::not_tested_note(untested, plan.fault())
    );
    for summary in summarize(plan, &cells) {
        let _ = writeln!(
            out,
            "  {:<11}{} of {} right{}",
            summary.strategy.name(),
            summary.right,
            summary.cells,
            if summary.right == summary.cells {
                String::new()
            } else {
                format!(
                    ", {} duplicated (worst night: {}), {} missing, {} other",
                    summary.duplicated,
                    crate::map::task_ids(summary.worst_duplicated_task_ids),
                    summary.missing,
                    summary.other
                )
            }
        );
    }
    if !state.finished() {
        let _ = writeln!(
            out,
            "  the map was left before it finished: {} nights never ran",
            state.total() - state.done()
        );
    }
    if let Some((dir, on_server)) = kept {
        let _ = if on_server {
            // The rows are in the server's schemas (the closing lines name them); the folder
            // holds what the nights kept beside them.
            writeln!(
                out,
                "files kept in {dir}: the nights' heartbeats (and the outbox's vendors); their rows are in the schemas below"
            )
        } else {
            writeln!(
                out,
                "databases kept in {dir}; open them with sqlite3; under /dev/shm they live in memory until reboot"
            )
        };
    }
}
