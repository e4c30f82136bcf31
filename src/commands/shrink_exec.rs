//! `reclaim shrink FILE --exec CMD`: the smallest failing schedule of the user's own job. The
//! command comes from the command line, never from the recording (a file is data). The search
//! hears which crash points the job announces, then tries one kill at a time, earliest key (or
//! row count) first, each a real night, and prints the first that still goes wrong as a
//! scenario with the job's exec lane.

use std::io::{IsTerminal as _, Write};
use std::path::Path;
use std::sync::atomic::AtomicBool;

use crate::base::exit::{DATA_WRONG, OK};
use crate::cli::{CompareArgs, ShrinkArgs};
use crate::engine::ExecJob;
use crate::error::{Context as _, Error};
use crate::harness::pool::{self, Pool};
use crate::map::exec::{ExecCell, ExecKill, ExecRunner};
use crate::record::{Recording, WorkerKind};

/// At most this many nights are searched (a 10,000-key queue with three points is 30,000).
const MAX_NIGHTS: usize = 20_000;

/// Runs `reclaim shrink FILE --exec CMD`.
pub(super) fn run(args: &ShrinkArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let recording = Recording::load(&args.file)?;
    let name = args.file.display();
    let Some(end) = &recording.end else {
        return Err(Error::Refused(format!(
            "{name}: the recording has no end (the night was cut short), so it is not known to have gone wrong; record a whole night"
        )));
    };
    let exec = |info: &&crate::record::LaneInfo| info.strategy == WorkerKind::Exec;
    let lane = (recording.header.lanes.iter().zip(&end.lanes))
        .position(|(info, lane)| exec(&info) && !lane.is_ok())
        // `--compare` judges by the tables, which the recording does not hold: a night whose
        // rows ended right may still have gone wrong there.
        .or_else(|| {
            (args.compare.compare)
                .then(|| recording.header.lanes.iter().position(|info| exec(&info)))
                .flatten()
        })
        .ok_or_else(|| {
            Error::Refused(format!(
                "{name}: no exec lane's rows ended wrong (a night wrong only at its vendor is not searched: shrink --exec kills by the rows; --compare searches by the tables too); shrink --exec shrinks your own job's night"
            ))
        })?;
    let info = &recording.header.lanes[lane];
    let job = args
        .job
        .to_job(args.items.unwrap_or(info.items))?
        .ok_or_else(|| Error::Refused("shrink --exec needs the job's command".into()))?;
    if job.queue.len() != info.items {
        return Err(Error::Refused(format!(
            "{name}: the recorded lane's queue has {} items, the job's {} ({}); give the recorded night's queue",
            info.items,
            job.queue.len(),
            job.queue.describe()
        )));
    }
    // A scenario names its queue by key_format; a listed queue (--keys-from, --keys-sql) is
    // given back as the `run --exec` command that replays the kill instead.
    let format = job.queue.format_text().map(str::to_string);
    let dir = crate::map::fresh_dir("shrink-exec")
        .context(|| "cannot create a folder for the search's nights".into())?;
    let runner = ExecRunner {
        exe: std::env::current_exe().context(|| "cannot find reclaim's own executable".into())?,
        dir: dir.clone(),
        job: job.clone(),
        db_name: "warehouse.db".into(),
        keep: false,
        rows_delay: std::time::Duration::from_millis(10),
        progress_deadline: args.deadline.progress_deadline,
        vendor: None,
        warehouse: crate::warehouse::Warehouse::Sqlite,
        oracle: None,
    };
    let threads = args.threads.map_or_else(pool::default_threads, usize::from);
    let found = search(&runner, threads, &args.compare);
    let _ = std::fs::remove_dir_all(&dir);
    let derived = crate::base::text::escape_controls(&end.lanes[lane].derived);
    let found = match found? {
        Search::Undisturbed(verdict) => {
            eprintln!(
                "reclaim shrink: no kill is needed: the job goes wrong with none at all ({}); there is no schedule to shrink",
                crate::base::text::escape_controls(&verdict)
            );
            return Ok(DATA_WRONG);
        }
        Search::NoReference(why) => {
            eprintln!(
                "reclaim shrink: --compare has no reference, so no kill can be found wrong by the tables: {}",
                crate::base::text::escape_controls(&why)
            );
            return Ok(DATA_WRONG);
        }
        Search::Searched(found) => *found,
    };
    let (found, nights, searched) = found;
    let Some((kill, cell)) = found else {
        if args.compare.compare {
            // The recorded night may have ended right by its rows: not known to be wrong.
            eprintln!(
                "reclaim shrink: no single kill made the job's rows or tables go wrong on {} items ({nights} nights{searched}); replay the recorded night's kills with `reclaim run --exec ... --compare --replay-schedule {}`",
                info.items,
                args.file.display()
            );
        } else {
            eprintln!(
                "reclaim shrink: no single kill made the job go wrong on {} items ({nights} nights{searched}); the recorded night (ended {derived}) is the smallest known: replay its kills with `reclaim run --exec ... --replay-schedule {}`",
                info.items,
                args.file.display()
            );
        }
        return Ok(DATA_WRONG);
    };
    // A scenario judges by rows: a kill found wrong by the tables alone is given back as the
    // `run --exec ... --compare` command that shows it.
    let found = match &format {
        Some(format) if !cell.state_differs() => {
            scenario_toml(&job, format, (&kill, &cell), &args.file, &derived, nights)
        }
        _ => run_command(&job, (&args.job, &args.compare), (&kill, &cell), nights),
    };
    let _ = write!(out, "{found}");
    eprintln!(
        "reclaim shrink: one kill {} still goes wrong ({}); the search ran {nights} nights",
        describe(&kill, &cell),
        cell.verdict()
    );
    Ok(OK)
}

/// What the search found: the job already wrong with no kill, or the earliest single kill that
/// breaks it (if any), the nights run, and what was left unsearched or untested.
enum Search {
    Undisturbed(String),
    /// `--compare` has nothing to compare with, and why.
    NoReference(String),
    Searched(Box<Found>),
}

/// The earliest single kill that breaks the job (if any), the nights run, and what was left
/// unsearched or untested.
type Found = (Option<(ExecKill, ExecCell)>, usize, String);

/// One kill at a time, in order, a few threads' worth at once; the earliest that goes wrong
/// (by its rows, or with `--compare` by its tables against the undisturbed night's).
fn search(runner: &ExecRunner, threads: usize, compare: &CompareArgs) -> Result<Search, Error> {
    let (points, undisturbed) = runner.probe(&AtomicBool::new(false))?;
    if !undisturbed.holds() {
        return Ok(Search::Undisturbed(undisturbed.verdict()));
    }
    let runner = &ExecRunner {
        oracle: (compare.compare)
            .then(|| runner.undisturbed(super::compare::scope(compare)))
            .transpose()?
            .map(std::sync::Arc::new),
        ..runner.clone()
    };
    // Without a reference nothing can be found wrong by the tables: said, not searched.
    if let Some(why) = runner.oracle.as_ref().and_then(|o| o.no_reference()) {
        return Ok(Search::NoReference(why.to_string()));
    }
    let items = runner.job.queue.len();
    // The search kills at points or row counts: shrink has no vendor (--vendor is not its).
    let candidates = crate::map::exec::plan(&points, (0, items - 1), false);
    let progress = std::io::stderr().is_terminal();
    let chunk = threads * 2;
    let mut nights = 0;
    let mut never_fired = 0;
    for batch in candidates.chunks(chunk).take(MAX_NIGHTS.div_ceil(chunk)) {
        let jobs: Vec<(usize, ExecKill)> = (nights..).zip(batch.iter().cloned()).collect();
        nights += jobs.len();
        let night = runner.clone();
        let pool = Pool::start(jobs, threads, move |(n, kill), cancel| {
            night
                .run(*n, kill, cancel)
                .map(|cell| (*n, kill.clone(), cell))
        })?;
        let mut failing = Vec::new();
        while let Some((_, result)) = pool.next() {
            let (n, kill, cell) = result?;
            // A kill that never fired proves nothing; only a real kill that broke the data counts.
            if !cell.killed {
                never_fired += 1;
            } else if !cell.is_right() {
                failing.push((n, kill, cell));
            }
        }
        if progress {
            eprint!("\rreclaim shrink: {nights}/{} nights ", candidates.len());
        }
        if let Some((_, kill, cell)) = failing.into_iter().min_by_key(|(n, _, _)| *n) {
            if progress {
                eprintln!();
            }
            return Ok(Search::Searched(Box::new((
                Some((kill, cell)),
                nights,
                String::new(),
            ))));
        }
    }
    if progress {
        eprintln!();
    }
    let mut said = Vec::new();
    if nights < candidates.len() {
        said.push(format!(
            "; only the first {nights} of {} candidates were searched",
            candidates.len()
        ));
    }
    if never_fired > 0 {
        said.push(format!("; in {never_fired} of them the kill never fired"));
    }
    let said = said.concat();
    Ok(Search::Searched(Box::new((None, nights, said))))
}

fn describe(kill: &ExecKill, cell: &ExecCell) -> String {
    match kill {
        ExecKill::Point { name, .. } => format!("at {}:{name}", cell.at),
        ExecKill::Rows(rows) => format!("after {rows} rows"),
        ExecKill::Message(n) => format!("at message {n}"),
    }
}

/// A TOML string literal.
fn quoted(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// The scenario: the job's exec lane with its table, key, queue and checkpoints, and the one
/// kill (its crash point, or the host's kill at a row count).
fn scenario_toml(
    job: &ExecJob,
    format: &str,
    (kill, cell): (&ExecKill, &ExecCell),
    source: &Path,
    derived: &str,
    nights: usize,
) -> String {
    let items = job.queue.len();
    let what = describe(kill, cell);
    let (host, crash) = match kill {
        ExecKill::Point { name, .. } => (
            String::new(),
            format!(
                "crash_at = {}\n",
                quoted(&format!("{}:{name}", job.queue.key(kill.column())))
            ),
        ),
        ExecKill::Rows(rows) => (format!("\n[host]\nkill_at_rows = {rows}\n"), String::new()),
        // Never searched (the search has no vendor), and a scenario cannot hold one: said.
        ExecKill::Message(n) => (
            format!("\n# a kill at message {n}: run --exec ... --vendor --kill-at-message {n}\n"),
            String::new(),
        ),
    };
    let setup = job
        .setup_sql
        .as_ref()
        .map(|sql| format!("setup_sql = {}\n", quoted(sql)))
        .unwrap_or_default();
    let checkpoint = job
        .rows
        .checkpoints
        .as_ref()
        .map(|c| format!("checkpoint_table = {}\n", quoted(&c.table)))
        .unwrap_or_default();
    let about = format!(
        "Shrunk from {}, whose exec lane ended {derived}. One kill, {what}, is enough: {} rows, {} distinct, {} duplicated, {} missing.",
        crate::base::text::escape_controls(&source.display().to_string()),
        cell.rows,
        cell.distinct,
        cell.duplicated_task_ids,
        cell.missing
    );
    format!(
        "# The smallest failing schedule of your job, found by `reclaim shrink --exec` in {nights} real nights.\n\
         # Shrunk: 1 kill {what}: {verdict}.\n\
         # Watch it: reclaim tui --scenario THIS_FILE --allow-exec\n\
         # Headless: reclaim run --scenario THIS_FILE --allow-exec\n\
         title = {title}\n\
         about = {about}\n\
         \n\
         items = {items}\n\
         seed = 0\n\
         {host}\n\
         [[lane]]\n\
         name = \"my-job\"\n\
         exec = {exec}\n\
         table = {table}\n\
         key = {key}\n\
         key_format = {format}\n\
         {setup}{checkpoint}{crash}{vendor}",
        verdict = cell.verdict(),
        title = quoted(&format!("your job: one kill {what}")),
        about = quoted(&about),
        exec = quoted(&job.command),
        table = quoted(&job.rows.table),
        key = quoted(&job.rows.key),
        format = quoted(format),
        vendor = if job.vendor { "vendor = true\n" } else { "" },
    )
}

/// For a listed queue, which a scenario cannot name: the `reclaim run --exec` command line
/// with the job's table, key, queue and checkpoints and the one kill, each argument quoted for
/// `sh` (control characters escaped: the terminal is not the job's to drive).
fn run_command(
    job: &ExecJob,
    (given, compare): (&crate::cli::ExecArgs, &CompareArgs),
    (kill, cell): (&ExecKill, &ExecCell),
    nights: usize,
) -> String {
    let mut words: Vec<String> = vec!["reclaim".into(), "run".into()];
    let mut arg = |flag: &str, value: &str| {
        words.push(flag.into());
        words.push(sh_quote(value));
    };
    arg("--exec", &job.command);
    arg("--table", &job.rows.table);
    arg("--key", &job.rows.key);
    if let Some(format) = job.queue.format_text() {
        arg("--key-format", format);
        arg("--items", &job.queue.len().to_string());
    }
    if let Some(file) = &given.keys_from {
        arg("--keys-from", &file.display().to_string());
    }
    if let Some(sql) = &given.keys_sql {
        arg("--keys-sql", sql);
    }
    if let Some(sql) = &job.setup_sql {
        arg("--setup-sql", sql);
    }
    if let Some(checkpoints) = &job.rows.checkpoints {
        arg("--checkpoint-table", &checkpoints.table);
        arg("--checkpoint-key", &checkpoints.key);
    }
    match kill {
        ExecKill::Point { name, .. } => {
            arg(
                "--crash-at",
                &format!("{}:{name}", job.queue.key(kill.column())),
            );
        }
        ExecKill::Rows(rows) => arg("--kill-at-rows", &rows.to_string()),
        ExecKill::Message(n) => arg("--kill-at-message", &n.to_string()),
    }
    if job.vendor {
        words.push("--vendor".into());
    }
    if cell.state_differs() {
        words.push("--compare".into());
        for table in &compare.tables {
            words.push("--compare-table".into());
            words.push(sh_quote(table));
        }
        for column in &compare.ignore {
            words.push("--ignore-column".into());
            words.push(sh_quote(&column.to_string()));
        }
    }
    format!(
        "# The smallest failing schedule of your job, found by `reclaim shrink --exec` in {nights} real nights.\n\
         # Shrunk: 1 kill {what}: {verdict}.\n\
         # {why}: replay it with\n{command}\n",
        why = if cell.state_differs() {
            "It is wrong by its tables (a scenario judges by rows)"
        } else {
            "Its queue is a list (a scenario names a queue by key_format only)"
        },
        what = describe(kill, cell),
        verdict = cell.verdict(),
        command = words.join(" ")
    )
}

/// `text` as one `sh` word: single-quoted, each `'` closed, escaped and reopened.
fn sh_quote(text: &str) -> String {
    let text = crate::base::text::escape_controls(text);
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=%@,+".contains(c))
    {
        return text;
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}
