//! The cost of one map night, broken down: spawning a worker, its 200 items at full speed, the
//! restart after the crash (a second spawn and the rest of the work), the verdict (`inspect`),
//! and the whole night as `reclaim map` drives it (one thread, so the parts add up); then the
//! floor under any night, measured in the same run: two process starts and 300 small
//! transactions on the same tmpfs, with nothing of reclaim's around them.
//!
//! `cargo bench --bench map` (SAMPLES=40 by default). The full map is a command, see
//! BENCHMARKS.md.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use reclaim::map::{Kill, PlannedNight, Runner};
use reclaim::warehouse::SyncMode;
use reclaim::warehouse::sqlite as store;
use reclaim::worker::{CrashAt, CrashPoint, Strategy};

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_reclaim");
const ITEMS: u64 = 200;
/// The full built-in map's nights (4 strategies x 200 tasks x 4 points), on two cores.
const MAP_NIGHTS: f64 = 3200.0;
/// A night's transactions on average over the map (a killed naive night writes ~300 rows).
const FLOOR_TRANSACTIONS: u64 = 300;

/// The auto-checkpoint `reclaim map` gives a night's worker in the folder `db` is in.
fn autocheckpoint(db: &Path) -> Option<u32> {
    db.parent().and_then(store::wal::night_autocheckpoint)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// `reclaim worker` to its end (or its crash), wall time in ms.
fn worker(
    db: &Path,
    strategy: &str,
    items: u64,
    crash: Option<&str>,
) -> Result<f64, Box<dyn Error>> {
    let mut command = Command::new(BIN);
    command
        .args([
            "worker",
            "--supervised",
            "--delay-ms",
            "0",
            "--strategy",
            strategy,
        ])
        .args(["--items", &items.to_string()])
        .arg("--db")
        .arg(db)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(pages) = autocheckpoint(db) {
        command.args(["--wal-autocheckpoint", &pages.to_string()]);
    }
    if let Some(crash) = crash {
        command.args(["--crash-at", crash]);
    }
    let started = Instant::now();
    let _ = command.status()?;
    Ok(started.elapsed().as_secs_f64() * 1000.0)
}

/// The floor under a night, in ms, in three parts (the definition: two process starts
/// and 300 small transactions on tmpfs): two starts of `/bin/true` (fork, exec, exit, reaped),
/// a fresh database opened with guarded's schema, and `FLOOR_TRANSACTIONS` transactions of
/// guarded's shape (a row and its checkpoint, `BEGIN IMMEDIATE`, WAL at `synchronous=NORMAL`,
/// checkpointed as a map night's log is), all in this process.
fn floor(db: &Path) -> Result<(f64, f64, f64), Box<dyn Error>> {
    let started = Instant::now();
    for _ in 0..2 {
        Command::new("/bin/true").status()?;
    }
    let starts = started.elapsed().as_secs_f64() * 1000.0;
    let started = Instant::now();
    let mut conn = store::open_for_worker(db, SyncMode::Normal, Strategy::Guarded.needs(), false)?;
    // The log's settings a night's worker gets (`worker::db::open_db`).
    store::wal::WalBound::new(&conn, db, autocheckpoint(db))?;
    let opened = started.elapsed().as_secs_f64() * 1000.0;
    let started = Instant::now();
    common::guarded_transactions(&mut conn, FLOOR_TRANSACTIONS, 1, "floor")?;
    Ok((starts, opened, started.elapsed().as_secs_f64() * 1000.0))
}

fn main() -> Result<(), Box<dyn Error>> {
    let samples: usize = std::env::var("SAMPLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let dir = tempfile::tempdir_in(if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    })?;
    let counter = std::cell::Cell::new(0u32);
    let fresh = || {
        counter.set(counter.get() + 1);
        dir.path().join(format!("{}.db", counter.get()))
    };
    println!(
        "one map night, {ITEMS} items, --delay-ms 0, restart delay 0, databases in {}; median of {samples}",
        dir.path().display()
    );
    println!(
        "{:<11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "strategy", "spawn", "work", "restart", "verdict", "night", "other"
    );
    for strategy in [Strategy::Naive, Strategy::Guarded] {
        let name = strategy.name();
        let (mut spawn, mut work, mut restart, mut verdict, mut night) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..samples {
            // Spawn: a worker that writes one item (process, SQLite open, schema, exit).
            spawn.push(worker(&fresh(), name, 1, None)?);
            // The first attempt: tasks 0..=100, then the crash (less the spawn: the work).
            let db = fresh();
            work.push(worker(&db, name, ITEMS, Some("task-100:after-commit"))?);
            // The restart: a second spawn and the rest of the work (naive: all of it again).
            restart.push(worker(&db, name, ITEMS, None)?);
            // Verdict: `inspect` on that night's database.
            let started = Instant::now();
            let _ = reclaim::warehouse::sqlite::inspect::inspect(&db, ITEMS)?;
            verdict.push(started.elapsed().as_secs_f64() * 1000.0);
            // The night as the map runs it.
            let runner = Runner::new(PathBuf::from(BIN), dir.path().to_path_buf(), ITEMS, false);
            let crash = CrashAt {
                task: 100,
                point: CrashPoint::AfterCommit,
            };
            let started = Instant::now();
            runner.run(
                100_000 + counter.get() as usize,
                PlannedNight {
                    strategy,
                    kill: Kill::Crash(crash),
                },
                &AtomicBool::new(false),
            )?;
            night.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        let (spawn, first, restart, verdict, night) = (
            median(spawn),
            median(work),
            median(restart),
            median(verdict),
            median(night),
        );
        // The parts of a night: the first attempt (its spawn, then its work up to the crash),
        // the restart (spawn and the rest), the verdict; the rest is the driver's own.
        let work = (first - spawn).max(0.0);
        let other = night - (first + restart + verdict);
        println!(
            "{name:<11} {spawn:>7.2}ms {work:>7.2}ms {restart:>7.2}ms {verdict:>7.2}ms {night:>7.2}ms {other:>7.2}ms"
        );
    }
    let floors: Vec<(f64, f64, f64)> = (0..samples)
        .map(|_| floor(&fresh()))
        .collect::<Result<_, _>>()?;
    let starts = median(floors.iter().map(|f| f.0).collect());
    let opened = median(floors.iter().map(|f| f.1).collect());
    let transactions = median(floors.iter().map(|f| f.2).collect());
    let floor = starts + opened + transactions;
    println!(
        "floor: 2 process starts {starts:.2}ms + a fresh database {opened:.2}ms + \
         {FLOOR_TRANSACTIONS} transactions {transactions:.2}ms = {floor:.2}ms a night; \
         the map's {MAP_NIGHTS} nights at the floor on two cores: {:.1} s",
        floor * MAP_NIGHTS / 2.0 / 1000.0
    );
    println!(
        "spawn = a worker that writes 1 item; work = the first attempt (tasks 0..=100, crash after task-100) less a spawn;"
    );
    println!(
        "restart = the second attempt (spawn + the rest: naive rewrites all 200, guarded resumes at 101);"
    );
    println!(
        "verdict = inspect (GROUP BY, integrity_check); night = the whole night through harness::drive, as map runs it;"
    );
    println!(
        "other = night - (spawn + work + restart + verdict): the driver's 2 ms ticks, pipes, reaping, the observer"
    );
    Ok(())
}
