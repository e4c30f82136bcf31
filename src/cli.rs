//! The command line: one clap-derived enum of subcommands.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::store::SyncMode;
use crate::tui::theme::ThemeChoice;
use crate::worker::{CrashAt, CrashPoint, Strategy};

use crate::limits::{MAX_BATCH, MAX_ITEMS, MAX_WORKERS};

#[derive(Debug, Parser)]
#[command(
    name = "reclaim",
    version,
    about = "Replays the night a batch job wrote every row twice: real workers, real SQLite, real SIGKILLs",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Open the dashboard (what `reclaim` with no command does)
    Tui(TuiArgs),
    /// List the shipped scenarios
    Scenarios,
    /// Play a recorded session back in the dashboard, or check its verdict (--check)
    Replay(ReplayArgs),
    /// Run one worker process against a warehouse (what the supervisor spawns)
    Worker(WorkerArgs),
    /// Report what a warehouse holds and derive the job's status from its rows
    Inspect(InspectArgs),
    /// Run the job under a supervisor and a kill schedule, print the night's timeline and verdict
    Run(Box<RunArgs>),
    /// Run the postmortem's three tests (and a crash-point sweep) against a strategy
    Prove(ProveArgs),
    /// The kill-timing map: a real night for every task and crash point, per strategy
    Map(MapArgs),
    /// Search a recorded night that went wrong for the smallest kill schedule that still does
    Shrink(ShrinkArgs),
    /// The dead-man's switch, for cron: exit 1 (and run --exec) when the heartbeat is stale
    HeartbeatCheck(HeartbeatCheckArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `reclaim man | man -l -`
    Man,
    /// The third party a side effect reaches: an HTTP server on 127.0.0.1 that records every
    /// message in its own database and honours (or not) an Idempotency-Key
    Vendor(VendorArgs),
    /// Delivers an outbox worker's pending messages to the vendor with each row's key, and
    /// marks them sent (what the supervisor spawns beside an outbox worker)
    Relay(RelayArgs),
    /// Runs an --exec job's `sh -c CMD` so that its whole process group dies with reclaim (what
    /// the supervisor spawns for an external worker)
    #[command(hide = true)]
    ExecGuard(ExecGuardArgs),
    /// Keeps a private PostgreSQL cluster for reclaim (`--warehouse postgres`) and removes it
    /// when reclaim's pipe closes
    #[command(hide = true)]
    PgCluster(crate::warehouse::cluster::GuardArgs),
}

#[derive(Debug, Args)]
pub struct VendorArgs {
    /// The vendor's own database of deliveries (created; a vendor database that exists is
    /// continued, keys and all)
    #[arg(long)]
    pub db: PathBuf,
    /// What it does with an Idempotency-Key: honour, ignore, or expire=SECS
    #[arg(long, default_value = "honour", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<crate::vendor::Keys>()))]
    pub keys: crate::vendor::Keys,
    /// The chance (0..=1) that it acts on a request and never answers it
    #[arg(long, default_value_t = 0.0, value_parser = crate::vendor::parse_probability)]
    pub drop_responses: f64,
    /// Seed for the dropped responses
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Record the Nth request and never answer it: its caller waits there until it is killed
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub hold_at: Option<u64>,
}

#[derive(Debug, Args)]
pub struct RelayArgs {
    /// The outbox worker's warehouse
    #[arg(long)]
    pub db: PathBuf,
    /// The vendor's address (127.0.0.1:PORT, as `reclaim vendor` says on its first line)
    #[arg(long, value_parser = crate::vendor::parse_addr)]
    pub vendor: std::net::SocketAddr,
    /// Items in the queue: the relay ends once every one has been delivered
    #[arg(long, default_value_t = 200, value_parser = items_parser())]
    pub items: u64,
    /// Die by SIGKILL at TASK:after-relay-send (delivered, not marked sent)
    #[arg(long, value_name = "TASK:POINT")]
    pub crash_at: Option<CrashAt>,
    /// Stop (an error) after this many seconds with nothing to deliver and the queue unfinished
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub idle_secs: u64,
}

#[derive(Debug, Args)]
pub struct ExecGuardArgs {
    /// reclaim's pid: if it is gone already, the group is killed at once
    #[arg(long)]
    pub parent: i32,
    /// The job's command, for `sh -c`
    #[arg(last = true, required = true)]
    pub command: String,
}

#[derive(Debug, Args)]
pub struct ProveArgs {
    /// The strategy on trial [default: guarded]
    #[arg(long, value_enum, conflicts_with = "exec")]
    pub strategy: Option<Strategy>,
    #[command(flatten)]
    pub warehouse: crate::warehouse::WarehouseArgs,
    /// Your own job on trial instead (see `reclaim run --exec`): the three tests, each in a
    /// fresh folder
    #[command(flatten)]
    pub job: ExecArgs,
    /// With --exec: the database's file name in each test's folder
    #[arg(long, default_value = "warehouse.db", requires = "exec")]
    pub db_name: String,
    /// Seed for the kill test's random kills [default: drawn at random, and printed]
    #[arg(long)]
    pub seed: Option<u64>,
    /// Items in the queue
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(3..=1_000_000))]
    pub items: u64,
    /// Pause after each item, in milliseconds; the kill window scales with it (0.2..0.9 s at 10)
    #[arg(long, default_value_t = 10.0, value_parser = parse_delay_ms, allow_negative_numbers = true)]
    pub delay_ms: f64,
    /// Random kills per run of the kill test
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub kills: u32,
    /// Print the results as one JSON object
    #[arg(long)]
    pub json: bool,
    /// Exit 1 also when a test passed without testing all it set out to: a window that breaks
    /// the strategy never hit, kills that could not be placed, a test skipped
    #[arg(long)]
    pub strict: bool,
    /// Also write the results as JUnit XML to FILE (a new file, or one reclaim wrote)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "command-line flags: each is a switch the user sets, not a state"
)]
pub struct MapArgs {
    /// A strategy, several comma-separated (naive,two-commit), or `all` for the four side by side
    #[arg(long, value_name = "S|all", default_value = "all", value_parser = parse_strategies)]
    pub strategy: Strategies,
    /// Items in the queue: task-000 .. task-(N-1)
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=MAX_MAP_ITEMS))]
    pub items: u64,
    /// Crash points, comma-separated: before-write, after-row-commit, after-commit, after-heartbeat [default: all four]
    #[arg(long, value_name = "P,P,...", value_parser = parse_points)]
    pub points: Option<Points>,
    /// The tasks to kill at, first..last inclusive (task-010..task-020 or 10..20) [default: every task]
    #[arg(long, value_name = "A..B", value_parser = parse_task_range)]
    pub tasks: Option<(u64, u64)>,
    /// Nights in flight at once [default: one per core, at least 2]
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: Option<u16>,
    /// Print the map as one JSON object
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print one CSV line per cell
    #[arg(long)]
    pub csv: bool,
    /// Also write the map as JUnit XML to FILE: one test case per strategy x point (a new
    /// file, or one reclaim wrote)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Print the map as text even on a terminal (no interactive screen)
    #[arg(long, conflicts_with_all = ["json", "csv"])]
    pub plain: bool,
    /// Keep every night's database (its path is in each cell) instead of removing it
    #[arg(long)]
    pub keep: bool,
    /// Your own job instead of reclaim's strategies: every key of its queue x every crash point
    /// it announces (or a kill after every row count), each a real night
    #[command(flatten)]
    pub job: ExecArgs,
    /// With --exec: the database's file name in each night's folder
    #[arg(long, default_value = "warehouse.db", requires = "exec")]
    pub db_name: String,
    /// With --exec, on nights killed at a row count: the pace told to the job
    /// (RECLAIM_DELAY_MS), so the kill lands at that count
    #[arg(long, default_value_t = 10.0, value_parser = parse_delay_ms, requires = "exec")]
    pub delay_ms: f64,
}

/// The largest queue `map` accepts: the map runs items x tasks x points rows per strategy.
pub const MAX_MAP_ITEMS: u64 = 100_000;

/// Strategies named on the command line, in the order given (`all`: every one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strategies(pub Vec<Strategy>);

/// Crash points named on the command line, in the order given, each once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Points(pub Vec<CrashPoint>);

fn parse_strategies(text: &str) -> Result<Strategies, String> {
    if text == "all" {
        // The four whose rows alone tell the story; the outbox is named to be mapped.
        return Ok(Strategies(
            Strategy::all()
                .iter()
                .copied()
                .filter(|s| !s.relays())
                .collect(),
        ));
    }
    text.split(',')
        .map(|name| {
            Strategy::from_name(name.trim()).ok_or_else(|| {
                let names: Vec<&str> = Strategy::all().iter().map(|s| s.name()).collect();
                format!(
                    "unknown strategy '{}'; give all or one of {}",
                    crate::text::shorten(name, 40),
                    names.join(", ")
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .and_then(|list| {
            // Twice the same strategy is one map drawn twice, and its nights collide.
            match list
                .iter()
                .enumerate()
                .find(|(i, s)| list[..*i].contains(s))
            {
                Some((_, twice)) => Err(format!(
                    "{} is named twice; name each strategy once",
                    twice.name()
                )),
                None => Ok(Strategies(list)),
            }
        })
}

fn parse_points(text: &str) -> Result<Points, String> {
    let mut points = Vec::new();
    for name in text.split(',').map(str::trim) {
        let point = CrashPoint::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown crash point '{}'; the points are {}",
                    crate::text::shorten(name, 40),
                    CrashPoint::ALL.map(CrashPoint::name).join(", ")
                )
            })?;
        if !points.contains(&point) {
            points.push(point);
        }
    }
    Ok(Points(points))
}

fn parse_task_range(text: &str) -> Result<(u64, u64), String> {
    let (a, b) = text.split_once("..").ok_or_else(|| {
        format!(
            "'{}' is not a range such as 10..20",
            crate::text::shorten(text, 40)
        )
    })?;
    let task = |t: &str| {
        crate::task::parse_task_id(t.trim_start_matches('=')).ok_or_else(|| {
            format!(
                "'{}' is not a task id such as task-111",
                crate::text::shorten(t, 40)
            )
        })
    };
    let (a, b) = (task(a)?, task(b)?);
    if a > b {
        return Err(format!(
            "the range {a}..{b} is empty: the first task comes after the last"
        ));
    }
    Ok((a, b))
}

#[derive(Debug, Args)]
pub struct ShrinkArgs {
    /// A night recorded with --record (by `run` or the dashboard) that went wrong
    pub file: PathBuf,
    /// Nights in flight at once [default: one per core, at least 2]
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: Option<u16>,
    /// With --exec: the queue's size [default: the recorded lane's]
    #[arg(long, requires = "exec", value_parser = items_parser())]
    pub items: Option<u64>,
    /// For a night of your own job: the command to search with (never read from the
    /// recording), and its table, key and queue, as `run --exec` takes them
    #[command(flatten)]
    pub job: ExecArgs,
}

#[derive(Debug, Args)]
pub struct HeartbeatCheckArgs {
    /// The heartbeat file a worker keeps fresh
    #[arg(long)]
    pub file: PathBuf,
    /// Seconds after which the heartbeat counts as stale
    #[arg(long, default_value_t = 300)]
    pub max_age: u64,
    /// A shell command to run when stale; the message is in $RECLAIM_ALERT
    #[arg(long, value_name = "CMD")]
    pub exec: Option<String>,
}

#[derive(Debug, Args, Default)]
pub struct TuiArgs {
    /// A shipped scenario's name (see `reclaim scenarios`) or a path to a .toml file
    #[arg(long, value_name = "NAME|PATH")]
    pub scenario: Option<String>,
    /// Let the scenario's exec lanes run their commands (shown in full before they run)
    #[arg(long, requires = "scenario")]
    pub allow_exec: bool,
    /// Replace the scenario's seed for random kills
    #[arg(long)]
    pub seed: Option<u64>,
    /// Record the night to this session file (JSON lines; must not exist)
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Colours: default, or high-contrast (colour-blind safe, bold; for a projector).
    /// NO_COLOR turns colour off whatever this says
    #[arg(long, value_enum, default_value_t)]
    pub theme: ThemeChoice,
    #[command(flatten)]
    pub presenting: PresentingArgs,
}

/// What a lecture stops at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LectureStops {
    /// Every moment worth talking about
    All,
    /// The captions only
    Captions,
}

/// For a teacher: pacing and speaker notes.
#[derive(Debug, Args, Default, Clone)]
pub struct PresentingArgs {
    /// Lecture mode: the night stops at each caption, kill, restart, hang, alert, symptom,
    /// `done` line and verdict, says what it stopped for, and goes on with space;
    /// `--lecture captions` stops at the captions only
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "all", value_name = "STOPS")]
    pub lecture: Option<LectureStops>,
    /// Append each caption the night reaches, with the scenario's speaker notes, to this file
    /// (new, or one reclaim wrote before), for a second screen: tail -F FILE
    #[arg(long, value_name = "FILE")]
    pub notes: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A session recorded with --record (or the dashboard's `o` key)
    pub file: PathBuf,
    /// Re-derive the verdict from the recorded history instead of opening the dashboard;
    /// exit 0 when every lane's data is right, 1 when not
    #[arg(long, conflicts_with_all = ["lecture", "notes"])]
    pub check: bool,
    /// With --check: the facts as one JSON object
    #[arg(long, requires = "check")]
    pub json: bool,
    /// Write the night to a new file instead of opening the dashboard: .cast (asciicast v2 for
    /// asciinema, a marker at each kill, restart and caption), .svg (one frame, see --at) or
    /// .csv (one row per sample and lane)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["check", "lecture", "notes"])]
    pub export: Option<PathBuf>,
    /// With --export FILE.svg: the moment of the frame, as the clock shows it [default: the end]
    #[arg(long, value_name = "HH:MM:SS", requires = "export", value_parser = parse_clock)]
    pub at: Option<f64>,
    /// With --export: the terminal size of the frames, columns x rows
    #[arg(long, value_name = "WxH", default_value = "120x40", value_parser = parse_size)]
    pub size: (u16, u16),
    /// Colours: default, or high-contrast (colour-blind safe, bold; for a projector)
    #[arg(long, value_enum, default_value_t)]
    pub theme: ThemeChoice,
    #[command(flatten)]
    pub presenting: PresentingArgs,
}

fn parse_clock(text: &str) -> Result<f64, String> {
    crate::scenario::parse_clock(text)
        .ok_or_else(|| format!("'{text}' is not a time of the night such as 02:11:47"))
}

fn parse_size(text: &str) -> Result<(u16, u16), String> {
    let parsed = text
        .split_once(['x', 'X'])
        .and_then(|(w, h)| Some((w.trim().parse().ok()?, h.trim().parse().ok()?)));
    match parsed {
        Some((w, h)) if (1..=1000).contains(&w) && (1..=1000).contains(&h) => Ok((w, h)),
        _ => Err(format!(
            "'{text}' is not a size such as 120x40 (columns x rows, each 1..=1000)"
        )),
    }
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// How the worker makes a restart safe (or does not)
    #[arg(
        long,
        value_enum,
        required_unless_present_any = ["exec", "scenario"],
        conflicts_with = "exec"
    )]
    pub strategy: Option<Strategy>,
    #[command(flatten)]
    pub job: ExecArgs,
    #[command(flatten)]
    pub warehouse: crate::warehouse::WarehouseArgs,
    /// Kill once as soon as the table holds N rows (for any worker, --exec included)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub kill_at_rows: Option<u64>,
    /// Run a scenario headless instead (a shipped name or a .toml path): every lane, its
    /// timeline, one verdict per lane
    #[arg(long, value_name = "NAME|PATH", conflicts_with_all = [
        "strategy", "exec", "items", "delay_ms", "kills", "kill_window", "kill_at_task",
        "kill_at_rows", "crash_at", "workers", "restart_delay", "max_restarts", "scale", "batch",
        "db", "replay_schedule",
    ])]
    pub scenario: Option<String>,
    /// Let the scenario's exec lanes run their commands (each printed in full first)
    #[arg(long, requires = "scenario")]
    pub allow_exec: bool,
    /// Items in the queue: task-000 .. task-(N-1)
    #[arg(long, default_value_t = 200, value_parser = items_parser())]
    pub items: u64,
    /// Pause after each item, in milliseconds (an --exec job is told it as RECLAIM_DELAY_MS)
    #[arg(long, default_value_t = 10.0, value_parser = parse_delay_ms, allow_negative_numbers = true)]
    pub delay_ms: f64,
    /// Random kills: at most N, one a uniform delay after each spawn
    #[arg(long, default_value_t = 0)]
    pub kills: u32,
    /// Where those delays fall, in seconds after a spawn
    #[arg(long, default_value = "0.2..0.9", value_parser = crate::supervisor::schedule::parse_window)]
    pub kill_window: (Duration, Duration),
    /// Kill once when this key's row has been written: a key of the queue (task-111, or
    /// ord-00042 with --key-format), or its number (111)
    #[arg(long, value_name = "KEY", visible_alias = "kill-at-key")]
    pub kill_at_task: Option<String>,
    /// Die at KEY:POINT on the first attempt: a named crash point of reclaim's worker
    /// (task-111:after-commit), or one your --exec job announces (ord-00042:after-row-commit)
    #[arg(long, value_name = "KEY:POINT")]
    pub crash_at: Option<String>,
    /// Workers running at once on the same database (duplicate delivery)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=MAX_WORKERS as i64))]
    pub workers: u16,
    /// Sim seconds the supervisor waits before restarting a dead worker (the postmortem's 18)
    #[arg(long, default_value_t = 18.0, value_parser = parse_sim_seconds, allow_negative_numbers = true)]
    pub restart_delay: f64,
    /// Restarts before the supervisor gives up and reports that the job never completed
    #[arg(long, default_value_t = 100)]
    pub max_restarts: u32,
    /// Seed for the random kills [default: drawn at random, and printed]
    #[arg(long)]
    pub seed: Option<u64>,
    /// Sim seconds per real second (600: ten minutes of the night per second)
    #[arg(long, default_value_t = 600.0, value_parser = parse_scale, allow_negative_numbers = true)]
    pub scale: f64,
    /// Items per transaction (keyed, guarded and outbox)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=MAX_BATCH))]
    pub batch: u64,
    /// normal survives a process crash; full also survives a power cut
    #[arg(long, value_enum, default_value_t = SyncMode::Normal)]
    pub sync: SyncMode,
    /// The warehouse to create [default: a new folder under the system temp dir]; must not exist
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Print the facts as one JSON object instead of the timeline
    #[arg(long)]
    pub json: bool,
    /// Exit 1 also when the night did not test what it set out to: a planned kill that never
    /// fired, a window that breaks the strategy never hit, kills or rows that could not be judged
    #[arg(long)]
    pub strict: bool,
    /// Record the night to this session file (JSON lines; must not exist)
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Kill at the moments a recorded session's host killed (replaces the random kills)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["kills", "kill_at_task"])]
    pub replay_schedule: Option<PathBuf>,
    #[command(flatten)]
    pub vendor: SideEffectArgs,
    #[command(flatten)]
    pub long: LongItemArgs,
}

/// What leaves the database: a side effect per item and the vendor that receives it.
#[derive(Debug, Args, Default)]
pub struct SideEffectArgs {
    /// Each item also sends a message to a vendor, before its row commits (the outbox
    /// strategy sends through its relay instead)
    #[arg(long, value_enum)]
    pub side_effect: Option<crate::worker::SideEffect>,
    /// The vendor's key policy: honour, ignore, or expire=SECS [default: honour]
    #[arg(long, value_name = "POLICY", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<crate::vendor::Keys>()))]
    pub vendor_keys: Option<crate::vendor::Keys>,
    /// The chance (0..=1) that the vendor acts on a request and never answers it
    #[arg(long, value_name = "P", value_parser = crate::vendor::parse_probability)]
    pub vendor_drop_responses: Option<f64>,
    /// With --exec: start a vendor on 127.0.0.1 for your job (RECLAIM_VENDOR_URL), with this
    /// key policy [default: honour]; its messages are judged against the queue
    #[arg(long, value_name = "POLICY", num_args = 0..=1, default_missing_value = "honour", requires = "exec", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<crate::vendor::Keys>()))]
    pub vendor: Option<crate::vendor::Keys>,
    /// SIGKILL the job when the vendor has received message N, before it answers: a kill
    /// after the send and before the commit, in any job
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub kill_at_message: Option<u64>,
}

/// Your own worker instead of reclaim's: the command, its setup, where its rows land, and the
/// queue they are judged against.
#[derive(Debug, Args, Default)]
pub struct ExecArgs {
    /// Your own batch job instead of reclaim's: run with `sh -c` in the database's folder, with
    /// RECLAIM_DB, RECLAIM_KEYS_FILE, HEARTBEAT_FILE, RECLAIM_ITEMS, RECLAIM_ATTEMPT and
    /// RECLAIM_DELAY_MS set
    #[arg(long, value_name = "CMD")]
    pub exec: Option<String>,
    /// SQL run once on the new database before the first attempt (or @FILE to read it)
    #[arg(long, value_name = "SQL|@FILE", requires = "exec")]
    pub setup_sql: Option<String>,
    /// The table the job writes its rows to
    #[arg(long, default_value = crate::store::rows::DEFAULT_TABLE, requires = "exec")]
    pub table: String,
    /// The column that names a unit of work in that table; its values are matched to the queue
    #[arg(long, default_value = crate::store::rows::DEFAULT_KEY, requires = "exec")]
    pub key: String,
    /// A query returning one row (rows, distinct), for shapes a table and a key cannot name
    /// (the queue is then judged by counts alone)
    #[arg(long, value_name = "SQL", requires = "exec")]
    pub count_sql: Option<String>,
    /// The queue's keys as a printf format of the item's number: 'ord-%05d' is ord-00000 ..
    /// [default: task-%03d]
    #[arg(long, value_name = "FORMAT", requires = "exec", conflicts_with_all = ["keys_from", "keys_sql"])]
    pub key_format: Option<String>,
    /// The queue's keys, one a line (`-`: standard input); the queue's size is their count
    #[arg(long, value_name = "FILE|-", requires = "exec", conflicts_with_all = ["keys_sql", "items"])]
    pub keys_from: Option<PathBuf>,
    /// The queue's keys, read by a query of one column on the new database after --setup-sql
    #[arg(long, value_name = "SQL", requires = "exec", conflicts_with = "items")]
    pub keys_sql: Option<String>,
    /// The job's checkpoint table: where a kill landed (after-row-commit or after-commit) is
    /// read from it; without it reclaim cannot tell those windows apart, and says so
    #[arg(long, value_name = "TABLE", requires = "exec")]
    pub checkpoint_table: Option<String>,
    /// The column of the checkpoint table that names the unit of work [default: --key]
    #[arg(long, value_name = "COLUMN", requires = "checkpoint_table")]
    pub checkpoint_key: Option<String>,
}

impl ExecArgs {
    /// The job these arguments describe, `--setup-sql @FILE` read, every SQL checked on an
    /// empty database in memory, its queue made (`items` long unless listed): a bad input is
    /// refused before anything is created.
    pub fn to_job(&self, items: u64) -> Result<Option<crate::engine::ExecJob>, String> {
        let Some(command) = &self.exec else {
            return Ok(None);
        };
        let rows = crate::store::rows::RowSource {
            table: self.table.clone(),
            key: self.key.clone(),
            count_sql: self.count_sql.clone(),
            checkpoints: self.checkpoint_table.as_ref().map(|table| {
                crate::store::rows::Checkpoints {
                    table: table.clone(),
                    key: self
                        .checkpoint_key
                        .clone()
                        .unwrap_or_else(|| self.key.clone()),
                }
            }),
        };
        let queue = self.queue(items)?;
        crate::engine::ExecJob::new(command, self.setup_sql.as_deref(), rows, queue).map(Some)
    }

    /// The queue: listed, formatted, or the postmortem's `task-NNN`. `--keys-sql` is read from
    /// the setup's trial in memory, which is the new warehouse after its setup.
    fn queue(&self, items: u64) -> Result<crate::queue::Queue, String> {
        use crate::queue::{KeyFormat, Queue};
        if let Some(file) = &self.keys_from {
            return Queue::from_file(file).map_err(|e| e.to_string());
        }
        if let Some(sql) = &self.keys_sql {
            let setup = match &self.setup_sql {
                Some(text) => Some(crate::engine::read_sql(text)?),
                None => None,
            };
            let conn = crate::store::rows::trial_setup(setup.as_deref())?;
            return crate::queue::keys_from_sql(&conn, sql).map_err(|e| e.to_string());
        }
        Ok(match &self.key_format {
            Some(format) => {
                Queue::formatted(KeyFormat::parse(format).map_err(|e| e.to_string())?, items)
            }
            None => Queue::tasks(items),
        })
    }
}

fn parse_delay_ms(text: &str) -> Result<f64, String> {
    let ms: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    if !(0.0..=60_000.0).contains(&ms) {
        return Err(format!("{ms} ms is outside 0..=60000"));
    }
    Ok(ms)
}

/// Sim seconds, up to a day (a night is shorter).
fn parse_sim_seconds(text: &str) -> Result<f64, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of sim seconds"))?;
    if !(0.0..=86_400.0).contains(&secs) {
        return Err(format!("{secs} sim seconds is outside 0..=86400"));
    }
    Ok(secs)
}

fn parse_scale(text: &str) -> Result<f64, String> {
    let scale: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    if !(0.001..=1_000_000.0).contains(&scale) {
        return Err(format!("{scale} is outside 0.001..=1000000"));
    }
    Ok(scale)
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// How the worker makes a restart safe (or does not)
    #[arg(long, value_enum)]
    pub strategy: Strategy,
    /// The warehouse database (created if absent)
    #[arg(long)]
    pub db: PathBuf,
    /// Items in the queue: task-000 .. task-(N-1)
    #[arg(long, default_value_t = 200, value_parser = items_parser())]
    pub items: u64,
    /// Pause after each item, in milliseconds
    #[arg(long, default_value_t = 10.0, value_parser = parse_delay_ms, allow_negative_numbers = true)]
    pub delay_ms: f64,
    /// Heartbeat file [default: beside the database, DB.heartbeat]
    #[arg(long)]
    pub heartbeat: Option<PathBuf>,
    /// Items per transaction (keyed, guarded and outbox)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=MAX_BATCH))]
    pub batch: u64,
    /// Die by SIGKILL at TASK:POINT (before-write, after-row-commit, after-commit, after-heartbeat,
    /// after-send)
    #[arg(long, value_name = "TASK:POINT")]
    pub crash_at: Option<CrashAt>,
    /// normal survives a process crash (what reclaim models); full also survives a power cut
    #[arg(long, value_enum, default_value_t = SyncMode::Normal)]
    pub sync: SyncMode,
    /// Started by reclaim's supervisor on a warehouse it created: accept pace changes on stdin
    /// and skip the integrity check a hand-started worker makes before its first write
    #[arg(long, hide = true)]
    pub supervised: bool,
    /// Write only what the supervisor grants on stdin (`grant N`), saying `wait N` before each
    /// write and `wrote N` after it: the supervisor's sim clock paces the worker
    #[arg(long, hide = true, requires = "supervised")]
    pub gated: bool,
    /// Each item also sends a message to the vendor, before its row commits
    #[arg(long, value_enum, requires = "vendor")]
    pub side_effect: Option<crate::worker::SideEffect>,
    /// The vendor's address (127.0.0.1:PORT, as `reclaim vendor` says on its first line)
    #[arg(long, value_parser = crate::vendor::parse_addr)]
    pub vendor: Option<std::net::SocketAddr>,
    #[command(flatten)]
    pub long: LongItemArgs,
}

/// Work that outlives an instance: one long item, and its work in checkpointed steps.
#[derive(Debug, Args, Default)]
pub struct LongItemArgs {
    /// One item whose work takes SECS seconds before its row commits (task-050:2)
    #[arg(long, value_name = "TASK:SECS")]
    pub long_item: Option<crate::worker::LongItem>,
    /// Do that work in K steps, each committed as it finishes (guarded, outbox)
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub split: u64,
}

impl WorkerArgs {
    /// The pause after each item, to the microsecond (what `WorkerConfig::to_args` writes).
    #[must_use]
    pub fn delay(&self) -> Duration {
        Duration::from_micros((self.delay_ms * 1000.0).round() as u64)
    }

    /// The worker these arguments describe, paths as given (`app` resolves them first).
    #[must_use]
    pub fn to_config(&self) -> crate::worker::WorkerConfig {
        crate::worker::WorkerConfig {
            strategy: self.strategy,
            db: self.db.clone(),
            items: self.items,
            delay: self.delay(),
            heartbeat: self
                .heartbeat
                .clone()
                .unwrap_or_else(|| crate::heartbeat::default_path(&self.db)),
            batch: self.batch,
            crash_at: self.crash_at,
            sync: self.sync,
            supervised: self.supervised,
            gated: self.gated,
            side_effect: self.side_effect,
            vendor: self.vendor,
            long_item: self.long.long_item,
            split: self.long.split,
        }
    }
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The warehouse database (opened read-only)
    #[arg(long)]
    pub db: PathBuf,
    /// The queue size to judge the rows against
    #[arg(long, default_value_t = 200, value_parser = items_parser())]
    pub items: u64,
    /// Print the facts as one JSON object
    #[arg(long)]
    pub json: bool,
    /// List the task ids written more than once: how many rows each, and the runs that wrote them
    #[arg(long)]
    pub ids: bool,
    /// Your own job's table instead of reclaim's `records` (its rows judged against its queue,
    /// as a finished night: a key of the queue with no row is lost)
    #[arg(long, conflicts_with = "ids")]
    pub table: Option<String>,
    /// The column of --table that names a unit of work [default: task_id]
    #[arg(long, requires = "table")]
    pub key: Option<String>,
    /// The queue's keys as a printf format of the item's number ('ord-%05d')
    #[arg(long, value_name = "FORMAT", requires = "table", conflicts_with_all = ["keys_from", "keys_sql"])]
    pub key_format: Option<String>,
    /// The queue's keys, one a line (`-`: standard input)
    #[arg(long, value_name = "FILE|-", requires = "table", conflicts_with_all = ["keys_sql", "items"])]
    pub keys_from: Option<PathBuf>,
    /// The queue's keys, read by a query of one column on the database
    #[arg(long, value_name = "SQL", requires = "table", conflicts_with = "items")]
    pub keys_sql: Option<String>,
}

pub(crate) fn items_parser() -> clap::builder::RangedU64ValueParser<u64> {
    clap::value_parser!(u64).range(1..=MAX_ITEMS)
}
