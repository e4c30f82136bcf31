//! Worker throughput: rows per second of each strategy as a real `reclaim worker` process at
//! `--delay-ms 0`, beside the physical limit measured in the same run: a bare rusqlite loop doing
//! guarded's transaction shape (row + checkpoint in one `BEGIN IMMEDIATE` transaction) and
//! nothing else. Rounds alternate between the contenders, so machine noise hits them alike.
//!
//! `cargo bench --bench throughput` (ITEMS=20000 ROUNDS=5 by default; SYNC=normal or SYNC=full
//! measures one mode only; BIN=/path/to/reclaim runs another build's workers, against the same
//! bare loop).

use std::error::Error;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use reclaim::warehouse::SyncMode;
use reclaim::warehouse::sqlite as store;
use reclaim::worker::Strategy;

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_reclaim");

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The bare loop: guarded's transaction shape, `batch` items to a transaction, nothing else, in
/// this process.
fn bare(db: &Path, items: u64, batch: u64, sync: SyncMode) -> Result<f64, Box<dyn Error>> {
    let mut conn = store::open_for_worker(db, sync, Strategy::Guarded.needs(), false)?;
    let started = Instant::now();
    common::guarded_transactions(&mut conn, items, batch, "bare")?;
    Ok(items as f64 / started.elapsed().as_secs_f64())
}

/// One real worker process, start to exit (its start-up included).
fn worker(
    db: &Path,
    strategy: &str,
    items: u64,
    batch: u64,
    sync: &str,
) -> Result<f64, Box<dyn Error>> {
    let started = Instant::now();
    let bin = std::env::var("BIN").unwrap_or_else(|_| BIN.to_string());
    let status = Command::new(bin)
        .args([
            "worker",
            "--strategy",
            strategy,
            "--delay-ms",
            "0",
            "--sync",
            sync,
        ])
        .args(["--items", &items.to_string(), "--batch", &batch.to_string()])
        .arg("--db")
        .arg(db)
        .stdout(Stdio::null())
        .status()?;
    if !status.success() {
        return Err(format!("worker {strategy} failed: {status}").into());
    }
    Ok(items as f64 / started.elapsed().as_secs_f64())
}

/// What one line of the table measures.
enum Contender {
    /// The bare loop, this many items to a transaction.
    Bare(u64),
    /// A real worker process: strategy and `--batch`.
    Worker(&'static str, u64),
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() -> Result<(), Box<dyn Error>> {
    let items = env_or("ITEMS", 20_000);
    let rounds = env_or("ROUNDS", 5);
    let dir = tempfile::tempdir()?;
    let contenders: [(&str, Contender); 8] = [
        ("bare loop (guarded's transaction)", Contender::Bare(1)),
        ("naive", Contender::Worker("naive", 1)),
        ("two-commit", Contender::Worker("two-commit", 1)),
        ("keyed", Contender::Worker("keyed", 1)),
        ("guarded", Contender::Worker("guarded", 1)),
        ("keyed --batch 100", Contender::Worker("keyed", 100)),
        ("guarded --batch 100", Contender::Worker("guarded", 100)),
        ("bare loop, 100 to a transaction", Contender::Bare(100)),
    ];
    let syncs: &[&str] = match std::env::var("SYNC").as_deref() {
        Ok("normal") => &["normal"],
        Ok("full") => &["full"],
        _ => &["normal", "full"],
    };
    for &sync in syncs {
        let sync_mode = if sync == "full" {
            SyncMode::Full
        } else {
            SyncMode::Normal
        };
        let mut results: Vec<Vec<f64>> = vec![Vec::new(); contenders.len()];
        for round in 0..rounds {
            for (i, (_, contender)) in contenders.iter().enumerate() {
                let db = dir.path().join(format!("{sync}-{round}-{i}.db"));
                let rate = match contender {
                    Contender::Bare(batch) => bare(&db, items, *batch, sync_mode)?,
                    Contender::Worker(strategy, batch) => {
                        worker(&db, strategy, items, *batch, sync)?
                    }
                };
                results[i].push(rate);
            }
        }
        let medians: Vec<f64> = results.into_iter().map(median).collect();
        let bare_rate = medians[0];
        let guarded = medians[4];
        println!(
            "\nsync={sync}  items={items}  rounds={rounds} (median rows/s; ratio to the bare loop)"
        );
        for ((name, _), rate) in contenders.iter().zip(&medians) {
            println!(
                "  {name:<36} {rate:>10.0} rows/s  {:>6.1}%",
                rate / bare_rate * 100.0
            );
        }
        println!(
            "  guarded batch 1 / bare loop: {:.2}   guarded batch 100 / batch 1: {:.1}x",
            guarded / bare_rate,
            medians[6] / guarded
        );
        println!(
            "  guarded batch 100 / bare loop at 100: {:.2}   bare loop at 100 / at 1: {:.1}x",
            medians[6] / medians[7],
            medians[7] / bare_rate
        );
    }
    Ok(())
}
