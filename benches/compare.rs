//! Benchmark: `--compare` on a night of 100,000 rows in three tables, as a command pays it once
//! a night is over: the night's tables read (`Backend::read_state`) and compared with the two
//! undisturbed nights' (`Comparison::of`). The tables are a ledger's: `accounts` (10,000 rows, a
//! primary key), `transfers` (60,000, a primary key, a timestamp column named volatile) and
//! `log` (30,000, no key: compared as a multiset of whole rows). The night differs from the
//! reference in three balances and one log line, which the comparison must find.
//!
//! SQLite always; PostgreSQL too when `RECLAIM_BENCH_PG` holds a connection string (a role that
//! may create schemas), each night in a schema of its own, dropped afterwards.
//!
//! Run: `cargo bench --bench compare`
//! (PostgreSQL: `RECLAIM_BENCH_PG='host=/tmp/pg port=5432 user=reclaim dbname=postgres' cargo bench --bench compare`)

use std::collections::BTreeSet;
use std::error::Error;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reclaim::verdict::compare::Comparison;
use reclaim::verdict::state::ColumnName;
use reclaim::warehouse::{Conninfo, Server, Warehouse};

type BenchResult<T> = Result<T, Box<dyn Error>>;

const ACCOUNTS: u64 = 10_000;
const TRANSFERS: u64 = 60_000;
const LOG: u64 = 30_000;
/// Timed rounds; the median is reported.
const REPS: usize = 7;

/// The schema and rows of one night, as SQL both engines run: the reference's when `differs`
/// is false, the disturbed night's (three balances off, one log line more) when it is true.
fn night_sql(differs: bool, stamp: &str) -> Vec<String> {
    let mut sql = vec![
        "CREATE TABLE accounts(id TEXT PRIMARY KEY, balance BIGINT NOT NULL)".to_string(),
        "CREATE TABLE transfers(id BIGINT PRIMARY KEY, src TEXT NOT NULL, dst TEXT NOT NULL, amount BIGINT NOT NULL, applied_at TEXT NOT NULL)".to_string(),
        "CREATE TABLE log(line TEXT NOT NULL)".to_string(),
    ];
    let mut values = Vec::new();
    for a in 0..ACCOUNTS {
        let off = if differs && a % 3_333 == 7 { 15 } else { 0 };
        values.push(format!("('acct-{a:05}', {})", 1_000 + a % 97 + off));
    }
    for chunk in values.chunks(1_000) {
        sql.push(format!("INSERT INTO accounts VALUES {}", chunk.join(",")));
    }
    values.clear();
    for t in 0..TRANSFERS {
        values.push(format!(
            "({t}, 'acct-{:05}', 'acct-{:05}', {}, '{stamp}')",
            t % ACCOUNTS,
            (t * 7 + 1) % ACCOUNTS,
            10 + t % 13
        ));
    }
    for chunk in values.chunks(1_000) {
        sql.push(format!("INSERT INTO transfers VALUES {}", chunk.join(",")));
    }
    values.clear();
    let lines = LOG + u64::from(differs);
    for l in 0..lines {
        values.push(format!("('transfer {} applied')", l % LOG));
    }
    for chunk in values.chunks(1_000) {
        sql.push(format!("INSERT INTO log VALUES {}", chunk.join(",")));
    }
    sql
}

/// Times `read` and the comparison of its state with the references, `REPS` times: the
/// medians of the read, the comparison, and the two together.
fn measure(
    name: &str,
    warehouse: &Warehouse,
    dbs: &[PathBuf; 3],
) -> BenchResult<(Duration, Duration)> {
    let first = warehouse.read_state(&dbs[0], &[])?;
    let second = warehouse.read_state(&dbs[1], &[])?;
    let ignored: BTreeSet<ColumnName> = ["transfers.applied_at".parse()?].into_iter().collect();
    let mut reads = Vec::new();
    let mut compares = Vec::new();
    for _ in 0..REPS {
        let started = Instant::now();
        let night = warehouse.read_state(&dbs[2], &[])?;
        let read = started.elapsed();
        let started = Instant::now();
        let comparison = Comparison::of((&first, &second), &night, &ignored);
        compares.push(started.elapsed());
        reads.push(read);
        let found = comparison.differing_rows();
        // Three balances and one log line: the comparison must find exactly those.
        if found != 4 || comparison.rows != ACCOUNTS + TRANSFERS + LOG + 1 {
            return Err(format!(
                "{name}: found {found} differing rows of {}: {}",
                comparison.rows,
                comparison.line()
            )
            .into());
        }
        black_box(comparison);
    }
    reads.sort();
    compares.sort();
    Ok((reads[REPS / 2], compares[REPS / 2]))
}

fn report(name: &str, (read, compare): (Duration, Duration)) {
    println!(
        "{name:<10}  {:>6} rows  read {:>7.1} ms  compare {:>6.1} ms  together {:>7.1} ms  (median of {REPS})",
        ACCOUNTS + TRANSFERS + LOG + 1,
        read.as_secs_f64() * 1e3,
        compare.as_secs_f64() * 1e3,
        (read + compare).as_secs_f64() * 1e3,
    );
}

fn sqlite(dir: &Path) -> BenchResult<(Duration, Duration)> {
    let dbs = [1, 2, 3].map(|n| dir.join(format!("night-{n}.db")));
    for (n, db) in dbs.iter().enumerate() {
        let conn = rusqlite::Connection::open(db)?;
        conn.execute_batch("PRAGMA journal_mode=WAL; BEGIN")?;
        for statement in night_sql(n == 2, &format!("2026-12-04 02:{n:02}:00")) {
            conn.execute_batch(&statement)?;
        }
        conn.execute_batch("COMMIT")?;
    }
    measure("sqlite", &Warehouse::Sqlite, &dbs)
}

fn postgres(conninfo: &str, dir: &Path) -> BenchResult<(Duration, Duration)> {
    let server = Server {
        conninfo: Conninfo::new(conninfo),
        prefix: format!("bench_compare_{}", std::process::id()),
        wait: reclaim::warehouse::postgres::RESTART_WAIT,
        restarter: None,
    };
    let warehouse = Warehouse::Postgres(server.clone());
    let dbs = [1, 2, 3].map(|n| dir.join(format!("night-{n}.db")));
    let schemas: Vec<String> = dbs.iter().map(|db| server.schema_for(db)).collect();
    let result = (|| {
        for (n, db) in dbs.iter().enumerate() {
            warehouse.claim_lane(db)?;
            let mut client = server.connect(Some(&schemas[n]))?;
            let mut tx = client.transaction()?;
            for statement in night_sql(n == 2, &format!("2026-12-04 02:{n:02}:00")) {
                tx.batch_execute(&statement)?;
            }
            tx.commit()?;
        }
        measure("postgres", &warehouse, &dbs)
    })();
    let mut client = server.connect(None)?;
    for schema in &schemas {
        client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))?;
    }
    result
}

fn main() -> BenchResult<()> {
    let dir = tempfile::tempdir()?;
    report("sqlite", sqlite(dir.path())?);
    match std::env::var("RECLAIM_BENCH_PG") {
        Ok(conninfo) => report("postgres", postgres(&conninfo, dir.path())?),
        Err(_) => println!("postgres    not measured: set RECLAIM_BENCH_PG to a connection string"),
    }
    Ok(())
}
