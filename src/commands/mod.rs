//! The commands, one file each, and the glue that runs a parsed command line: it maps a
//! command's outcome to an exit code (0 holds, 1 the data verdict failed, 2 an error), as
//! ripgrep does, prints an error as one line, and installs the panic hook.

mod compare;
mod consent;
mod conventions;
mod exec_guard;
mod export;
mod heartbeat_check;
mod inspect;
mod kept;
mod map;
mod map_exec;
mod map_exec_report;
mod prove;
mod prove_nights;
mod prove_report;
pub mod replay_check;
mod run;
mod run_faults;
mod run_report;
mod scenarios;
mod schemas;
mod shrink;
mod shrink_exec;
mod tui;
mod vendor;
mod worker;

use std::io;
use std::process::ExitCode;

use crate::base::exit::{ERROR as EXIT_ERROR, OK as EXIT_OK};
use crate::cli::{Cli, Subcommand};

/// Runs `cli` and returns the process's exit code. Errors are printed as one line on stderr.
#[must_use]
pub fn main(cli: Cli) -> ExitCode {
    install_panic_hook();
    let result = match cli.command {
        Some(Subcommand::Worker(args)) => worker::run(&args),
        Some(Subcommand::Inspect(args)) => inspect::run(&args),
        Some(Subcommand::Run(args)) => run::run(&args, &mut crate::base::out::stdout()),
        Some(Subcommand::Prove(args)) => prove::run(&args, &mut crate::base::out::stdout()),
        Some(Subcommand::Map(args)) => map::run(&args),
        Some(Subcommand::Shrink(args)) => shrink::run(&args, &mut crate::base::out::stdout()),
        Some(Subcommand::HeartbeatCheck(args)) => heartbeat_check::run(&args),
        Some(Subcommand::Kept(args)) => kept::run(&args, &mut crate::base::out::stdout()),
        Some(Subcommand::Schemas(args)) => schemas::run(&args, &mut crate::base::out::stdout()),
        Some(Subcommand::Vendor(args)) => vendor::run(&args),
        Some(Subcommand::Relay(args)) => vendor::relay(&args),
        Some(Subcommand::ExecGuard(args)) => exec_guard::run(&args.command, args.parent),
        Some(Subcommand::PgCluster(args)) => Ok(crate::warehouse::postgres::cluster::guard(&args)),
        Some(Subcommand::Tui(args)) => tui::live(&args),
        Some(Subcommand::Scenarios) => scenarios::run(),
        Some(Subcommand::Replay(args)) if args.check => {
            replay_check::run(&args, &mut crate::base::out::stdout())
        }
        Some(Subcommand::Replay(args)) if args.export.is_some() => export::run(&args),
        Some(Subcommand::Replay(args)) => tui::replay(&args),
        Some(Subcommand::Completions { shell }) => Ok(conventions::completions(shell)),
        Some(Subcommand::Man) => conventions::man(),
        None => tui::live(&crate::cli::TuiArgs::default()),
    };
    // Whatever a job left outside its group, re-parented to reclaim, ends with reclaim.
    if crate::base::orphans::adopts() {
        crate::base::orphans::kill_descendants();
    }
    // Output that could not be written: a reader gone away (`| head`) ends quietly with the
    // command's own code; anything else (a full disk) is one line and exit 2.
    match crate::base::out::failure() {
        Some(e) if e.kind() == io::ErrorKind::BrokenPipe => {
            return ExitCode::from(result.unwrap_or(EXIT_ERROR));
        }
        Some(e) if result.is_ok() => {
            eprintln!(
                "reclaim: error: cannot write the output: {e}{}",
                file_limit_hint(&e.to_string())
            );
            return ExitCode::from(EXIT_ERROR);
        }
        _ => {}
    }
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!(
                "reclaim: error: {}{}",
                crate::base::text::shorten_numbers(&crate::base::text::escape_controls(
                    &error.to_string()
                )),
                file_limit_hint(&error.to_string())
            );
            ExitCode::from(error.exit_code())
        }
    }
}

/// A write refused as too large (EFBIG, "File too large") is the file size limit (`ulimit -f`)
/// reached, which the system's own words do not say.
fn file_limit_hint(said: &str) -> &'static str {
    if said.contains("(os error 27)") {
        " (the file size limit, ulimit -f, was reached)"
    } else {
        ""
    }
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
    let message = crate::base::text::shorten_numbers(message);
    // clap names the value it refused, which may be a URL with its password.
    let message = crate::warehouse::postgres::conninfo::redact(&message);
    eprintln!("reclaim: error: {message} (see `reclaim --help`)");
    ExitCode::from(EXIT_ERROR)
}

/// The night's warehouse opened before the job is made, when the job's queue is read there
/// (`--keys-sql` on PostgreSQL); otherwise `None`, and it opens after every other check.
fn open_for_keys(
    job: &crate::cli::ExecArgs,
    spec: &crate::warehouse::Spec,
    open: impl FnOnce() -> Result<Option<crate::warehouse::Night>, crate::error::Error>,
) -> Result<Option<crate::warehouse::Night>, crate::error::Error> {
    if job.keys_on_server(spec) {
        open()
    } else {
        Ok(None)
    }
}

/// A map's warehouse, either map's (`--warehouse`, `--pg-schema`, `--keep` keeping a private
/// cluster): `None` for SQLite files.
/// Why reclaim cannot lose a commit's answer on a warehouse: only between the workers and a
/// PostgreSQL server, and only where no TLS hides the answers from reclaim's proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NoAnswers {
    Sqlite,
    Tls,
}

impl NoAnswers {
    /// Why not on `spec`, or `None` where answers can be lost.
    fn on(spec: &crate::warehouse::Spec) -> Option<Self> {
        match spec {
            crate::warehouse::Spec::Sqlite => Some(Self::Sqlite),
            // What the driver is told: require (and the verify modes) insist on TLS.
            crate::warehouse::Spec::Server(url) => url.insists_on_tls().then_some(Self::Tls),
            crate::warehouse::Spec::Private => None,
        }
    }

    /// `what` (the flag asking) refused, in one line.
    fn refusal(self, what: &str) -> crate::error::Error {
        crate::error::Error::Refused(match self {
            Self::Sqlite => format!(
                "{what} loses a commit's answer between the workers and a PostgreSQL server; SQLite is a file in the worker's own process, with no answer to lose: add --warehouse postgres"
            ),
            Self::Tls => format!(
                "{what} reads the commits' answers between the workers and the server, which TLS hides; this URL insists on TLS (sslmode): use --warehouse postgres (a private cluster) or a server reached without it"
            ),
        })
    }

    /// Why a test of lost answers did not run, for a trial's lines.
    fn why(self) -> &'static str {
        match self {
            Self::Sqlite => {
                "SQLite is a file in the worker's own process, with no answer to lose (--warehouse postgres runs it)"
            }
            Self::Tls => {
                "this URL insists on TLS (sslmode), which hides the commits' answers from reclaim's proxy"
            }
        }
    }
}

/// Refuses `what` (the flag asking) where reclaim cannot lose a commit's answer.
fn answers_can_be_lost(
    spec: &crate::warehouse::Spec,
    what: &str,
) -> Result<(), crate::error::Error> {
    NoAnswers::on(spec).map_or(Ok(()), |no| Err(no.refusal(what)))
}

fn open_map_warehouse(
    args: &crate::cli::MapArgs,
) -> Result<Option<crate::warehouse::Night>, crate::error::Error> {
    Ok(crate::warehouse::WarehouseArgs {
        warehouse: args.warehouse.clone(),
        pg_schema: args.pg_schema.clone(),
        keep: (args.keeps_all() && args.warehouse == crate::warehouse::Spec::Private)
            .then_some(crate::base::kept::Keep::Always),
        server_wait: crate::warehouse::postgres::RESTART_WAIT.as_secs(),
    }
    .open()
    .map_err(crate::warehouse::StoreError::from)?)
}
