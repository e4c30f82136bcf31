//! The binary's glue: runs a parsed command and maps its outcome to an exit code
//! (0 holds, 1 the data verdict failed, 2 an error), as ripgrep does.

use std::io::{self, Write as _};
use std::process::ExitCode;

use crate::cli::{Cli, Command, InspectArgs, WorkerArgs};
use crate::heartbeat;
use crate::store::inspect;
use crate::worker::{self, WorkerConfig};

/// The verdict held.
pub const EXIT_OK: u8 = 0;
/// The data verdict failed (duplicates, missing rows, a job that never completed).
pub const EXIT_DATA_WRONG: u8 = 1;
/// An error: bad input, a database reclaim will not touch, a worker that could not run.
pub const EXIT_ERROR: u8 = 2;

/// Runs `cli` and returns the process's exit code. Errors are printed as one line on stderr.
#[must_use]
pub fn main(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Some(Command::Worker(args)) => run_worker(&args),
        Some(Command::Inspect(args)) => run_inspect(&args),
        None => Err("no command given; try `reclaim --help`".to_string()),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            eprintln!("reclaim: error: {message}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn run_worker(args: &WorkerArgs) -> Result<u8, String> {
    let config = WorkerConfig {
        strategy: args.strategy,
        db: args.db.clone(),
        items: args.items,
        delay: args.delay(),
        heartbeat: args
            .heartbeat
            .clone()
            .unwrap_or_else(|| heartbeat::default_path(&args.db)),
        batch: args.batch,
        crash_at: args.crash_at,
        sync: args.sync,
        control: args.control,
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    worker::run(&config, &mut out).map_err(|e| e.to_string())?;
    Ok(EXIT_OK)
}

fn run_inspect(args: &InspectArgs) -> Result<u8, String> {
    let inspection = inspect::inspect(&args.db, args.items).map_err(|e| e.to_string())?;
    let mut out = io::stdout().lock();
    let text = if args.json {
        let mut value = serde_json::to_value(&inspection).map_err(|e| e.to_string())?;
        value["derived_status"] = inspection.derived().label().into();
        format!("{value}\n")
    } else {
        inspect::render(&inspection)
    };
    let _ = out.write_all(text.as_bytes());
    Ok(if inspection.consistent {
        EXIT_OK
    } else {
        EXIT_DATA_WRONG
    })
}
