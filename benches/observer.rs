//! Benchmark: one incremental `Observer::poll()` of 1,000 new rows, on 10k, 100k and 1M rows.
//!
//! Beside it, one full `inspect` at each size, for contrast. The observer keeps a high-water
//! mark on rowid, so a poll should cost what is new, not what is already there. Each size gets
//! its own warehouse, built as a guarded worker would leave it (rows and checkpoints, with the
//! same columns and keys), in one big transaction so the build stays fast. Only the polls and the
//! inspections are timed; the inserts between polls are not.
//!
//! The rows are written by a child process (this same executable, run with `--writer`), as
//! reclaim's workers are separate processes: a writer inside the measuring process would share
//! its heap and caches with the observer and measure those instead (docs/history/benchmarks.md,
//! "Surprises").
//!
//! Run: `cargo bench --bench observer`

use std::error::Error;
use std::hint::black_box;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use reclaim::observer::Observer;
use reclaim::warehouse::SyncMode;
use reclaim::warehouse::sqlite as store;
use reclaim::warehouse::sqlite::inspect::inspect;
use reclaim::worker::Strategy;

mod common;

type BenchResult<T> = Result<T, Box<dyn Error>>;

/// Rows in the table before the timed polls begin.
const SIZES: [u64; 3] = [10_000, 100_000, 1_000_000];
/// Rows (and checkpoints) each timed poll picks up.
const BATCH: u64 = 1_000;
/// Untimed rounds first, so the page cache and the prepared statements are warm.
const WARMUP: u64 = 2;
/// Timed rounds per size; the median is reported.
const REPS: u64 = 15;
/// The argument that makes this executable the writer child.
const WRITER_FLAG: &str = "--writer";

/// What one size measured.
struct Measured {
    size: u64,
    build: Duration,
    catch_up: Duration,
    catch_up_polls: u32,
    polls: Vec<Duration>,
    rows_at_end: u64,
    inspect: Duration,
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, path] = args.as_slice()
        && flag == WRITER_FLAG
    {
        return run_writer(Path::new(path));
    }
    let dir = tempfile::tempdir()?;
    println!(
        "observer: one poll picking up {BATCH} new rows (+{BATCH} checkpoints); {WARMUP} warm-up rounds, then the median of {REPS}"
    );
    let mut results = Vec::with_capacity(SIZES.len());
    for size in SIZES {
        let path = dir.path().join(format!("warehouse-{size}.db"));
        let measured = measure(&path, size)?;
        print_one(&measured);
        results.push(measured);
        // Each warehouse is gone before the next (bigger) one is built, to keep the temp dir small.
        remove_warehouse(&path)?;
    }
    print_table(&results);
    Ok(())
}

fn measure(path: &Path, size: u64) -> BenchResult<Measured> {
    let items = size + (WARMUP + REPS) * BATCH;
    let mut writer = Writer::start(path)?;

    let started = Instant::now();
    writer.insert(0, size)?;
    // Start the timed rounds from a short WAL, as a long-running night would have.
    writer.request("truncate")?;
    let build = started.elapsed();

    let mut observer = Observer::new(&reclaim::warehouse::Warehouse::Sqlite, path, items);
    // The observer takes at most 50,000 rows per poll, so catching up on 1M rows takes several.
    let started = Instant::now();
    let mut catch_up_polls = 0;
    loop {
        catch_up_polls += 1;
        if observer.poll()?.new_rows == 0 {
            break;
        }
    }
    let catch_up = started.elapsed();
    check_totals(&observer, size)?;

    let mut next = size;
    let mut polls = Vec::with_capacity(REPS as usize);
    for round in 0..WARMUP + REPS {
        writer.insert(next, BATCH)?;
        next += BATCH;
        let started = Instant::now();
        let poll = observer.poll()?;
        let took = started.elapsed();
        black_box(&poll);
        if poll.new_rows != BATCH {
            return Err(format!(
                "size {size}, round {round}: the poll picked up {} rows, expected {BATCH}",
                poll.new_rows
            )
            .into());
        }
        if round >= WARMUP {
            polls.push(took);
        }
    }
    check_totals(&observer, next)?;
    writer.finish()?;

    let started = Instant::now();
    let inspection = inspect(path, items)?;
    let inspect_took = started.elapsed();
    if inspection.rows != next || !inspection.consistent {
        return Err(format!(
            "size {size}: inspect saw {} rows (expected {next}), consistent={}",
            inspection.rows, inspection.consistent
        )
        .into());
    }
    Ok(Measured {
        size,
        build,
        catch_up,
        catch_up_polls,
        polls,
        rows_at_end: next,
        inspect: inspect_took,
    })
}

/// The writer child, driven one request per line: `insert FROM COUNT` or `truncate`; it answers
/// `ok` once the transaction has committed, so the next poll sees all of it.
struct Writer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Writer {
    fn start(path: &Path) -> BenchResult<Self> {
        let mut child = Command::new(std::env::current_exe()?)
            .arg(WRITER_FLAG)
            .arg(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the writer child has no stdin or stdout pipe".into());
        };
        Ok(Self {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
        })
    }

    fn insert(&mut self, from: u64, count: u64) -> BenchResult<()> {
        self.request(&format!("insert {from} {count}"))
    }

    fn request(&mut self, line: &str) -> BenchResult<()> {
        let stdin = self.stdin.as_mut().ok_or("the writer's stdin is closed")?;
        writeln!(stdin, "{line}")?;
        stdin.flush()?;
        let mut reply = String::new();
        self.stdout.read_line(&mut reply)?;
        match reply.trim_end() {
            "ok" => Ok(()),
            "" => Err(format!("the writer exited during `{line}`").into()),
            other => Err(format!("the writer failed `{line}`: {other}").into()),
        }
    }

    /// Closes the writer's stdin (it exits at end of input) and waits for it.
    fn finish(mut self) -> BenchResult<()> {
        drop(self.stdin.take());
        let status = self.child.wait()?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("the writer exited with {status}").into())
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // On an error path: end of input makes the child exit; reap it so none is left behind.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// The writer child's side: opens the warehouse as a guarded worker does (same pragmas, same
/// schema, the default page cache) and serves requests until its stdin closes.
fn run_writer(path: &Path) -> Result<(), Box<dyn Error>> {
    let mut conn =
        store::open_for_worker(path, SyncMode::Normal, Strategy::Guarded.needs(), false)?;
    let run_id = format!("run-{}-bench", std::process::id());
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let words: Vec<&str> = line.split_whitespace().collect();
        let result = match words.as_slice() {
            ["insert", from, count] => {
                let from: u64 = from.parse()?;
                // Guarded's own transaction: rows and their checkpoints, fresh tasks.
                common::guarded_transaction(&mut conn, from..from + count.parse::<u64>()?, &run_id)
                    .map_err(|e| Box::new(e) as Box<dyn Error>)
            }
            ["truncate"] => conn
                .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
                .map_err(Into::into),
            _ => Err(format!("unknown request {line:?}").into()),
        };
        match result {
            Ok(()) => writeln!(out, "ok")?,
            Err(error) => writeln!(out, "error: {error}")?,
        }
        out.flush()?;
    }
    Ok(())
}

fn check_totals(observer: &Observer, expected: u64) -> BenchResult<()> {
    if observer.rows != expected
        || observer.distinct != expected
        || observer.checkpoints != expected
        || observer.duplicated != 0
    {
        return Err(format!(
            "the observer counts rows={} distinct={} checkpoints={} duplicated={}, expected {expected} of each and no duplicates",
            observer.rows, observer.distinct, observer.checkpoints, observer.duplicated
        )
        .into());
    }
    Ok(())
}

/// Removes the database and its WAL and shared-memory files; no connection to it is open here.
fn remove_warehouse(path: &Path) -> BenchResult<()> {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        match std::fs::remove_file(&name) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(error.into());
            }
            _ => {}
        }
    }
    Ok(())
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    match sorted.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    }
}

fn print_one(m: &Measured) {
    println!(
        "  {:>9} rows: built in {}, poll median {}",
        thousands(m.size),
        human(m.build),
        human(median(&m.polls))
    );
}

fn print_table(results: &[Measured]) {
    println!();
    println!(
        "{:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>16} {:>10}",
        "rows", "rows end", "poll med", "poll min", "poll max", "inspect", "catch-up", "build"
    );
    for m in results {
        let min = m.polls.iter().min().copied().unwrap_or_default();
        let max = m.polls.iter().max().copied().unwrap_or_default();
        println!(
            "{:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>16} {:>10}",
            thousands(m.size),
            thousands(m.rows_at_end),
            human(median(&m.polls)),
            human(min),
            human(max),
            human(m.inspect),
            format!("{} ({} polls)", human(m.catch_up), m.catch_up_polls),
            human(m.build),
        );
    }
    if let (Some(small), Some(large)) = (results.first(), results.last()) {
        let ratio = median(&large.polls).as_secs_f64() / median(&small.polls).as_secs_f64();
        let verdict = if ratio <= 2.0 {
            "within the 2x target"
        } else {
            "OVER the 2x target"
        };
        println!();
        println!(
            "poll median {} / {}: {ratio:.2}x ({verdict})",
            thousands(large.size),
            thousands(small.size)
        );
        for m in results {
            let share = m.inspect.as_secs_f64() / median(&m.polls).as_secs_f64();
            println!(
                "inspect / poll at {:>9} rows: {share:.0}x",
                thousands(m.size)
            );
        }
    }
}

/// A duration in the unit that keeps three significant figures readable.
fn human(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs >= 1.0 {
        format!("{secs:.2} s")
    } else if secs >= 1e-3 {
        format!("{:.2} ms", secs * 1e3)
    } else {
        format!("{:.1} µs", secs * 1e6)
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
