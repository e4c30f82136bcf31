//! The binary's glue: runs a parsed command and maps its outcome to an exit code
//! (0 holds, 1 the data verdict failed, 2 an error), as ripgrep does.

use std::io::{self, Write as _};
use std::process::ExitCode;

use crate::cli::{Cli, Command, HeartbeatCheckArgs, InspectArgs, WorkerArgs};
use crate::heartbeat;
use crate::paths;
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
    install_panic_hook();
    let result = match cli.command {
        Some(Command::Worker(args)) => run_worker(&args),
        Some(Command::Inspect(args)) => run_inspect(&args),
        Some(Command::Run(args)) => crate::run::run(&args, &mut io::stdout().lock()),
        Some(Command::Prove(args)) => crate::prove::prove(&args, &mut io::stdout().lock()),
        Some(Command::HeartbeatCheck(args)) => heartbeat_check(&args),
        Some(Command::Tui(args)) => crate::tui::run(&args),
        Some(Command::Scenarios) => list_scenarios(),
        Some(Command::Replay(args)) if args.check => {
            crate::run::replay_check(&args, &mut io::stdout().lock())
        }
        Some(Command::Replay(args)) => crate::tui::replay(&args),
        None => crate::tui::run(&crate::cli::TuiArgs::default()),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            eprintln!("reclaim: error: {}", crate::text::escape_controls(&message));
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn run_worker(args: &WorkerArgs) -> Result<u8, String> {
    if let Some(crash) = args.crash_at {
        crate::task::check_in_queue("--crash-at", crash.task, args.items)?;
    }
    // Both paths resolved once, before anything is opened: the heartbeat is renamed onto its
    // path after every commit, so it must never be the warehouse or one of its companions.
    let db = paths::file_or_new(&args.db, "--db").map_err(|e| e.to_string())?;
    let heartbeat = match &args.heartbeat {
        Some(path) => paths::file_or_new(path, "--heartbeat").map_err(|e| e.to_string())?,
        None => paths::file_or_new(&heartbeat::default_path(&db), "the heartbeat file")
            .map_err(|e| e.to_string())?,
    };
    paths::refuse_companion(&heartbeat, "--heartbeat", &db, Some(".heartbeat"))
        .map_err(|e| e.to_string())?;
    let config = WorkerConfig {
        db,
        heartbeat,
        ..args.to_config()
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

/// On a panic in any thread: kill every worker, restore the terminal, report, and end the
/// process (exit 101), so a panic in a helper thread cannot leave a half-working night behind.
fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // Held until the process ends: a dashboard drawing in another thread must not paint
        // over the restored terminal or the report. Only the dashboard's stdout: `run` holds its
        // lock for the whole night, and waiting for it here would never end.
        let _stdout = crate::tui::terminal_active().then(|| io::stdout().lock());
        crate::supervisor::process::kill_all();
        crate::tui::restore_terminal();
        default(info);
        std::process::exit(101);
    }));
}

/// For the robustness tests only: `RECLAIM_TEST_PANIC=loop` panics in the driving loop (of `run`,
/// `prove` or the dashboard) once `ready` (for `run`: a worker is running and has written a row), `RECLAIM_TEST_PANIC=thread` in a thread of
/// its own. Unset, this does nothing.
pub(crate) fn test_panic_point(ready: bool) {
    static WHERE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    static FIRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let Some(place) = WHERE.get_or_init(|| std::env::var("RECLAIM_TEST_PANIC").ok()) else {
        return;
    };
    if !ready || FIRED.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    match place.as_str() {
        "loop" => panic!("RECLAIM_TEST_PANIC=loop: a panic in the driving loop"),
        "thread" => {
            let _ = std::thread::Builder::new()
                .name("reclaim-test-panic".into())
                .spawn(|| panic!("RECLAIM_TEST_PANIC=thread: a panic in another thread"));
        }
        _ => {}
    }
}

/// How far in the future a heartbeat may be before the switch stops trusting it: file systems
/// round times, and a network share's clock may be a little ahead.
const FUTURE_TOLERANCE: std::time::Duration = std::time::Duration::from_secs(2);

/// The dead-man's switch: fresh is 0; stale (or from the future: a clock that cannot judge must
/// alert) prints the alert, runs `--exec`, and is 1; a missing, unreadable or not regular file is
/// an error (2), refused before it is opened.
fn heartbeat_check(args: &HeartbeatCheckArgs) -> Result<u8, String> {
    let beat = heartbeat::read(&args.file, std::time::SystemTime::now())
        .map_err(|e| format!("cannot read heartbeat {}: {e}", args.file.display()))?;
    let age = beat.age.as_secs();
    let task = crate::text::escape_controls(beat.task.as_deref().unwrap_or("no task"));
    let message = if beat.ahead > FUTURE_TOLERANCE {
        format!(
            "runner heartbeat from the future: {}s ahead of this clock (clock skew?)",
            beat.ahead.as_secs()
        )
    } else if age <= args.max_age {
        println!("runner heartbeat fresh: {age}s ({task})");
        return Ok(EXIT_OK);
    } else {
        heartbeat::stale_message(beat.age)
    };
    println!("{message}");
    if let Some(command) = &args.exec {
        let status = std::process::Command::new("sh")
            .args(["-c", command])
            .env("RECLAIM_ALERT", &message)
            .env("RECLAIM_HEARTBEAT_AGE", age.to_string())
            .status()
            .map_err(|e| format!("cannot run --exec command: {e}"))?;
        if !status.success() {
            eprintln!("reclaim: warning: the --exec command failed ({status})");
        }
    }
    Ok(EXIT_DATA_WRONG)
}

fn list_scenarios() -> Result<u8, String> {
    for (name, _) in crate::scenario::SHIPPED {
        let scenario = crate::scenario::Scenario::load(name).map_err(|e| e.to_string())?;
        println!("{name:<20} {}", scenario.title);
    }
    println!("\nrun one with: reclaim tui --scenario NAME   (or a path to your own .toml)");
    Ok(EXIT_OK)
}

/// A command line clap refused: `--help` and `--version` print as clap prints them; a real error
/// becomes one line on stderr (with the accepted values, when clap lists them) and exit 2.
#[must_use]
pub fn usage_error(error: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = error.print();
        return ExitCode::from(EXIT_OK);
    }
    let text = error.render().to_string();
    // clap's message spans lines (the error, the values, usage, a tip); keep what says what is
    // wrong and drop the rest, which `--help` gives in full.
    let said: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.starts_with("tip:"))
        .collect();
    let message = said.join(" ");
    let message = message.trim_start_matches("error: ");
    eprintln!("reclaim: error: {message} (see `reclaim --help`)");
    ExitCode::from(EXIT_ERROR)
}
