//! Restart cost: from the SIGKILL of a guarded worker to the restarted worker's first new
//! commit, as the supervisor restarts it (no restart delay), over many cycles on one warehouse.
//! The first commit is seen by polling the warehouse's highest rowid from a reader connection.
//!
//! `cargo bench --bench restart` (CYCLES=200 by default).

use std::error::Error;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

const BIN: &str = env!("CARGO_BIN_EXE_reclaim");

fn spawn(db: &Path) -> Result<Child, Box<dyn Error>> {
    Ok(Command::new(BIN)
        .args([
            "worker",
            "--strategy",
            "guarded",
            "--delay-ms",
            "1",
            "--items",
            "100000000",
        ])
        .arg("--supervised")
        .arg("--db")
        .arg(db)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?)
}

fn max_rowid(conn: &Connection) -> Result<i64, Box<dyn Error>> {
    Ok(
        conn.query_row("SELECT coalesce(max(rowid), 0) FROM records", [], |r| {
            r.get(0)
        })?,
    )
}

/// Polls until the warehouse holds a row above `above`; returns when it saw it.
fn first_commit_after(conn: &Connection, above: i64) -> Result<Instant, Box<dyn Error>> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if max_rowid(conn)? > above {
            return Ok(Instant::now());
        }
        if Instant::now() > deadline {
            return Err("no commit within 10 s of a restart".into());
        }
        thread::sleep(Duration::from_micros(200));
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() -> Result<(), Box<dyn Error>> {
    let cycles: usize = std::env::var("CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("warehouse.db");
    let mut worker = spawn(&db)?;
    // Wait for the warehouse and a first row.
    let deadline = Instant::now() + Duration::from_secs(10);
    let conn = loop {
        if let Ok(conn) = Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_ONLY)
            && max_rowid(&conn).is_ok_and(|n| n > 0)
        {
            break conn;
        }
        if Instant::now() > deadline {
            return Err("the first worker wrote nothing".into());
        }
        thread::sleep(Duration::from_millis(1));
    };
    let started = Instant::now();
    let mut costs = Vec::with_capacity(cycles);
    for _ in 0..cycles {
        // Let it work a little, then reclaim the instance.
        thread::sleep(Duration::from_millis(5));
        let killed_at = Instant::now();
        worker.kill()?;
        worker.wait()?;
        let above = max_rowid(&conn)?;
        worker = spawn(&db)?;
        let committed = first_commit_after(&conn, above)?;
        costs.push(committed.duration_since(killed_at).as_secs_f64() * 1000.0);
    }
    worker.kill()?;
    worker.wait()?;
    let total = started.elapsed();
    let rows: i64 = conn.query_row("SELECT count(*) FROM records", [], |r| r.get(0))?;
    let distinct: i64 = conn.query_row("SELECT count(DISTINCT task_id) FROM records", [], |r| {
        r.get(0)
    })?;
    costs.sort_by(f64::total_cmp);
    println!("restart cost, SIGKILL -> first new commit, {cycles} cycles (guarded, --delay-ms 1)");
    println!(
        "  median {:.2} ms   p95 {:.2} ms   min {:.2} ms   max {:.2} ms",
        percentile(&costs, 0.5),
        percentile(&costs, 0.95),
        costs[0],
        costs[costs.len() - 1]
    );
    println!(
        "  {rows} rows, {distinct} distinct after {cycles} kills in {:.1} s",
        total.as_secs_f64()
    );
    if rows != distinct {
        return Err(format!("{} duplicated rows", rows - distinct).into());
    }
    Ok(())
}
