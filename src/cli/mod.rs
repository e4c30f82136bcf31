//! The command line: one clap-derived enum of subcommands and each one's arguments; the value
//! parsers are in `parse`, the flags of a job of the user's own in `job`.

mod job;
mod kept;
mod parse;
mod schemas;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser};

use crate::tui::theme::ThemeChoice;
use crate::warehouse::SyncMode;
use crate::worker::{CrashAt, Strategy};

use crate::base::limits::{MAX_BATCH, MAX_ITEMS, MAX_WORKERS};

pub use self::job::{CompareArgs, ExecArgs, JobVendorArgs, SideEffectArgs};
pub use self::kept::KeptArgs;
pub(crate) use self::parse::items_parser;
pub use self::parse::{KeyRange, MAX_MAP_ITEMS, NotTasks, Points, Strategies};
use self::parse::{
    parse_clock, parse_delay_ms, parse_key_range, parse_pause_secs, parse_points,
    parse_progress_deadline, parse_scale, parse_sim_seconds, parse_size, parse_speed,
    parse_strategies,
};
pub use self::schemas::SchemasArgs;

/// `--progress-deadline`, on every command that runs nights headless.
#[derive(Debug, Args)]
pub struct DeadlineArgs {
    /// Give up on a night after SECS of real time in which nothing moved while a worker was
    /// alive (no new row, no heartbeat, no worker started or ended; a job's own output is not
    /// progress): its workers are killed and the job is reported as never completed [default:
    /// 120, or ten items' pause if longer]
    #[arg(long, value_name = "SECS", value_parser = parse_progress_deadline)]
    pub progress_deadline: Option<Duration>,
}

#[derive(Debug, Parser)]
#[command(
    name = "reclaim",
    version,
    about = "Replays the night a batch job wrote every row twice: real workers, real SQLite, real SIGKILLs",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Subcommand>,
}

/// The subcommands, each with its arguments (the dashboard's effects are `tui::app::Command`).
#[derive(Debug, clap::Subcommand)]
pub enum Subcommand {
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
    /// Run the postmortem's three tests (and a crash-point sweep; a pause past the lease for claim and fenced; a lost answer and a server restart on PostgreSQL) against a strategy or your job
    Prove(ProveArgs),
    /// The kill-timing map: a real night for every task and crash point, per strategy
    Map(MapArgs),
    /// Search a recorded night that went wrong for the smallest kill schedule that still does
    Shrink(ShrinkArgs),
    /// The dead-man's switch, for cron: exit 1 (and run --exec) when the heartbeat is stale
    HeartbeatCheck(HeartbeatCheckArgs),
    /// List the nights reclaim kept (size, age, verdict), or remove them
    Kept(KeptArgs),
    /// List reclaim's nights on a PostgreSQL server (schemas, size, age, verdict), or drop some
    Schemas(SchemasArgs),
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
    PgCluster(crate::warehouse::postgres::cluster::GuardArgs),
}

#[derive(Debug, Args)]
pub struct VendorArgs {
    /// The vendor's own database of deliveries (created; a vendor database that exists is
    /// continued, keys and all)
    #[arg(long)]
    pub db: PathBuf,
    /// What it does with an Idempotency-Key: honour, ignore, or expire=SECS
    #[arg(long, default_value = "honour", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<crate::fake_vendor::Keys>()))]
    pub keys: crate::fake_vendor::Keys,
    /// The chance (0..=1) that it acts on a request and never answers it
    #[arg(long, default_value_t = 0.0, value_parser = crate::fake_vendor::parse_probability)]
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
    #[arg(long, value_parser = crate::fake_vendor::parse_addr)]
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
    #[command(flatten)]
    pub compare: CompareArgs,
    #[command(flatten)]
    pub deadline: DeadlineArgs,
    #[command(flatten)]
    pub vendor: JobVendorArgs,
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
    /// A strategy, several comma-separated (naive,two-commit), or `all`: side by side, every one whose rows alone tell its story (not the outbox, which is judged by its messages)
    #[arg(long, value_name = "S|all", default_value = "all", value_parser = parse_strategies, conflicts_with = "exec")]
    pub strategy: Strategies,
    /// Items in the queue: task-000 .. task-(N-1)
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=MAX_MAP_ITEMS))]
    pub items: u64,
    /// Points, comma-separated: the crash points before-write, after-row-commit, after-commit, after-heartbeat [default: these four], after-relay-send (the outbox's relay); lost-answer (on --warehouse postgres: the answer to the task's commit lost, the worker writing it again on a new connection); pause (claim and fenced: of two workers, the one at the task's write stopped for twice its lease)
    #[arg(long, value_name = "P,P,...", value_parser = parse_points)]
    pub points: Option<Points>,
    /// The tasks to kill at, first..last inclusive (task-010..task-020 or 10..20; with --exec,
    /// keys of the job's queue such as ord-00010..ord-00020, or their numbers) [default: every task]
    #[arg(long, value_name = "A..B", value_parser = parse_key_range)]
    pub tasks: Option<KeyRange>,
    /// Nights in flight at once [default: two per core for reclaim's own workers, one per core
    /// with --exec; at least 2, at most 8]
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: Option<u16>,
    #[command(flatten)]
    pub deadline: DeadlineArgs,
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
    /// Exit 1 also when a cell tested nothing: its kill never fired, its point was never
    /// reached (without it such a cell is said UNTESTED, never counted right)
    #[arg(long)]
    pub strict: bool,
    /// `--keep` (always): keep every night's database (its path is in each cell); with
    /// --warehouse postgres, the private cluster (stopped). failed (the default): each removed
    /// once judged, nights opened from the map's screen kept; never: those too
    #[arg(long, value_name = "always|failed|never", num_args = 0..=1, default_missing_value = "always", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<crate::base::kept::Keep>()))]
    pub keep: Option<crate::base::kept::Keep>,
    /// Where the nights' rows go: sqlite (a file per night), postgres (one private PostgreSQL
    /// cluster for the whole map, each night in a schema of its own), or postgres://USER@HOST/DB
    #[arg(long, value_name = "sqlite|postgres|URL", default_value = "sqlite", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<crate::warehouse::Spec>()))]
    pub warehouse: crate::warehouse::Spec,
    /// On PostgreSQL: the map's schema prefix (each night's is NAME_NNNNN_...); none may exist
    #[arg(long, value_name = "NAME", value_parser = crate::warehouse::check_schema_name)]
    pub pg_schema: Option<String>,
    /// Your own job instead of reclaim's strategies: every key of its queue x every crash point
    /// it announces (or a kill after every row count), each a real night
    #[command(flatten)]
    pub job: ExecArgs,
    #[command(flatten)]
    pub compare: CompareArgs,
    #[command(flatten)]
    pub vendor: JobVendorArgs,
    /// With --exec: the database's file name in each night's folder
    #[arg(long, default_value = "warehouse.db", requires = "exec")]
    pub db_name: String,
    /// With --exec, on nights killed at a row count: the pace told to the job
    /// (RECLAIM_DELAY_MS), so the kill lands at that count
    #[arg(long, default_value_t = 10.0, value_parser = parse_delay_ms, requires = "exec")]
    pub delay_ms: f64,
}

#[derive(Debug, Args)]
pub struct ShrinkArgs {
    /// A night recorded with --record (by `run` or the dashboard) that went wrong
    pub file: PathBuf,
    /// Nights in flight at once [default: one per core, at least 2, at most 8]
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: Option<u16>,
    #[command(flatten)]
    pub deadline: DeadlineArgs,
    /// With --exec: the queue's size [default: the recorded lane's]
    #[arg(long, requires = "exec", value_parser = items_parser())]
    pub items: Option<u64>,
    /// For a night of your own job: the command to search with (never read from the
    /// recording), and its table, key and queue, as `run --exec` takes them
    #[command(flatten)]
    pub job: ExecArgs,
    // With --compare a kill that leaves the tables other than the undisturbed night's goes
    // wrong too (the recorded lane's rows may have ended right).
    #[command(flatten)]
    pub compare: CompareArgs,
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
    #[command(flatten)]
    pub warehouse: crate::warehouse::WarehouseArgs,
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
    pub compare: CompareArgs,
    #[command(flatten)]
    pub warehouse: crate::warehouse::WarehouseArgs,
    #[command(flatten)]
    pub deadline: DeadlineArgs,
    /// Kill once as soon as the table holds N rows (for any worker, --exec included)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub kill_at_rows: Option<u64>,
    /// Run a scenario headless instead (a shipped name or a .toml path): every lane, its
    /// timeline, one verdict per lane
    #[arg(long, value_name = "NAME|PATH", conflicts_with_all = [
        "strategy", "exec", "items", "delay_ms", "kills", "kill_window", "kill_rows", "kill_at_task",
        "kill_at_rows", "crash_at", "pause_at", "pause_at_rows", "pause_at_random", "lose_answer_at", "lose_answer_at_task", "lose_answers",
        "restart_server_at_rows", "restart_server_at_task", "restart_server_at_random", "workers", "restart_delay", "max_restarts", "scale", "batch",
        "db", "replay_schedule",
    ])]
    pub scenario: Option<String>,
    /// Let the scenario's exec lanes run their commands (each printed in full first)
    #[arg(long, requires = "scenario")]
    pub allow_exec: bool,
    /// Play the scenario N times as fast as its scale (0.125 to 16, the dashboard's speeds): the
    /// same night and the same text in 1/N of the real time [default: 1]
    #[arg(long, value_name = "N", requires = "scenario", value_parser = parse_speed)]
    pub speed: Option<f64>,
    /// Items in the queue: task-000 .. task-(N-1)
    #[arg(long, default_value_t = 200, value_parser = items_parser())]
    pub items: u64,
    /// Pause after each item, in milliseconds (an --exec job is told it as RECLAIM_DELAY_MS)
    #[arg(long, default_value_t = 10.0, value_parser = parse_delay_ms, allow_negative_numbers = true)]
    pub delay_ms: f64,
    /// Random kills: at most N, one after each spawn: by time (--kill-window) for reclaim's
    /// own workers; by rows for an --exec job (--kill-rows, default 1..items/(N+1)), whose own
    /// start can outlast any time window on a loaded machine. With --workers N of reclaim's
    /// own, each kill hits one worker, in turn, and restarts only it
    #[arg(long, default_value_t = 0)]
    pub kills: u32,
    /// Place the random kills by time: each a uniform delay, in seconds after a spawn
    /// [default: 0.2..0.9 for reclaim's own workers; an --exec job's are placed by rows unless
    /// this is given]
    #[arg(long, value_name = "A..B", value_parser = crate::supervisor::schedule::parse_window)]
    pub kill_window: Option<(Duration, Duration)>,
    /// Place the random kills by work: each after A..B rows (both included, seeded) written
    /// since its attempt's spawn (with --workers N, A..B writes of the one worker it is for),
    /// the same storm at any load and on any machine
    /// [default with --exec: 1..items/(N+1)]
    #[arg(long, value_name = "A..B", requires = "kills", conflicts_with = "kill_window", value_parser = crate::supervisor::schedule::parse_rows)]
    pub kill_rows: Option<(u64, u64)>,
    /// Kill once when this key's row has been written: a key of the queue (task-111, or
    /// ord-00042 with --key-format), or its number (111)
    #[arg(long, value_name = "KEY", visible_alias = "kill-at-key")]
    pub kill_at_task: Option<String>,
    /// Die at KEY:POINT on the first attempt: a named crash point of reclaim's worker
    /// (task-111:after-commit), or one your --exec job announces (ord-00042:after-row-commit)
    #[arg(long, value_name = "KEY:POINT")]
    pub crash_at: Option<String>,
    /// Stop the worker that reaches TASK's write (a claim worker's lease taken) for SECS of the
    /// night (SIGSTOP, then SIGCONT): a pause longer than a lease
    #[arg(long, value_name = "TASK:SECS")]
    pub pause_at: Option<crate::worker::PauseAt>,
    /// Stop your --exec job (SIGSTOP to its process group) once its table holds N rows, for
    /// SECS of the night (SIGCONT then): a stop the job cannot see, such as a long GC pause or a
    /// VM migration; at --scale 600, 600 s of the night is one real second
    #[arg(long, value_name = "N:SECS", conflicts_with = "pause_at")]
    pub pause_at_rows: Option<crate::worker::PauseAtRows>,
    /// Pause once, where --seed draws it, for SECS of the night: reclaim's own worker at a task's
    /// write (as --pause-at), an --exec job once its table holds a row count (as --pause-at-rows)
    #[arg(long, value_name = "SECS", conflicts_with_all = ["pause_at", "pause_at_rows"], value_parser = parse_pause_secs)]
    pub pause_at_random: Option<f64>,
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
    #[command(flatten)]
    pub server: ServerFaultArgs,
}

/// `run`'s faults between the workers and a PostgreSQL server: answers lost, the server
/// restarted (`commands::run_faults`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServerFaultArgs {
    /// Restart the night's private PostgreSQL cluster once the table holds N rows (pg_ctl
    /// restart -m immediate: every session ended, every transaction in flight rolled back);
    /// --warehouse postgres only
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub restart_server_at_rows: Option<u64>,
    /// Restart the private cluster right after TASK's commit (the first, by any worker), as
    /// --restart-server-at-rows does; --warehouse postgres only
    #[arg(long, value_name = "TASK", conflicts_with = "restart_server_at_rows")]
    pub restart_server_at_task: Option<String>,
    /// Restart the private cluster once the table holds a row count drawn from --seed (1 to the
    /// queue's items); --warehouse postgres only
    #[arg(long, conflicts_with_all = ["restart_server_at_rows", "restart_server_at_task"])]
    pub restart_server_at_random: bool,
    /// Lose the answer to the commit that brings the rows to N (N,M,... for several): a proxy
    /// of reclaim's own between the workers and PostgreSQL closes the connection after the
    /// server has committed, before its answer reaches the worker (PostgreSQL only)
    #[arg(long, value_name = "N[,M...]", value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..))]
    pub lose_answer_at: Vec<u64>,
    /// Lose the answer to the first commit that brings TASK's row in, by any worker
    /// (TASK,TASK... for several); PostgreSQL only
    #[arg(long, value_name = "TASK[,TASK...]", value_delimiter = ',')]
    pub lose_answer_at_task: Vec<String>,
    /// Lose N answers, at row counts drawn from --seed (1 to the queue's items); PostgreSQL only
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub lose_answers: u64,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// How the worker makes a restart safe (or does not)
    #[arg(long, value_enum)]
    pub strategy: Strategy,
    /// The warehouse database (created if absent)
    #[arg(long, required_unless_present = "night")]
    pub db: Option<PathBuf>,
    /// A PostgreSQL server whose running night this worker joins (with --night), from any
    /// host: postgres://USER@HOST/DB
    #[arg(long, value_name = "URL", requires = "night", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<crate::warehouse::Spec>()))]
    pub warehouse: Option<crate::warehouse::Spec>,
    /// The night to join on that server: its schema, as `reclaim run --pg-schema NAME` named
    /// it (claim and fenced workers, which share its queue)
    #[arg(long, value_name = "NAME", requires = "warehouse", conflicts_with = "db", value_parser = crate::warehouse::check_schema_name)]
    pub night: Option<String>,
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
    /// Stop at TASK's write (a claim worker's lease taken) for SECS of the supervisor's clock
    #[arg(long, value_name = "TASK:SECS", requires = "gated")]
    pub pause_at: Option<crate::worker::PauseAt>,
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
    /// Granted everything, say only the latest `wrote` line before any other line
    #[arg(long, hide = true, requires = "gated")]
    pub quiet_writes: bool,
    /// Sim seconds per real second of the supervisor's clock (a claim worker's lease on the
    /// long item covers its work in the night's time)
    #[arg(long, hide = true, default_value_t = 1.0, requires = "gated")]
    pub scale: f64,
    /// After a connection lost under a write (the server's answer to its commit never came),
    /// connect again and write the same items again, up to N times, as a job's retry loop
    /// does: whether the lost commit happened, the worker cannot know
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub retry_writes: u32,
    /// Checkpoint the log every PAGES pages (a night's database in memory)
    #[arg(long, hide = true, requires = "supervised", value_name = "PAGES", value_parser = clap::value_parser!(u32).range(1..))]
    pub wal_autocheckpoint: Option<u32>,
    /// Each item also sends a message to the vendor, before its row commits
    #[arg(long, value_enum, requires = "vendor")]
    pub side_effect: Option<crate::worker::SideEffect>,
    /// The vendor's address (127.0.0.1:PORT, as `reclaim vendor` says on its first line)
    #[arg(long, value_parser = crate::fake_vendor::parse_addr)]
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
    /// The database path the worker's lane is named by: `--db`, or for a night joined on a
    /// server (`--night`) `warehouse.db` here, whose lane is the night's schema itself.
    #[must_use]
    pub fn db_or_night(&self) -> PathBuf {
        self.db
            .clone()
            .unwrap_or_else(|| PathBuf::from("warehouse.db"))
    }

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
            db: self.db_or_night(),
            items: self.items,
            delay: self.delay(),
            heartbeat: self
                .heartbeat
                .clone()
                .unwrap_or_else(|| crate::heartbeat::default_path(&self.db_or_night())),
            batch: self.batch,
            crash_at: self.crash_at,
            pause_at: self.pause_at,
            sync: self.sync,
            supervised: self.supervised,
            gated: self.gated,
            side_effect: self.side_effect,
            vendor: self.vendor,
            long_item: self.long.long_item,
            scale: self.scale,
            split: self.long.split,
            quiet_writes: self.quiet_writes,
            retry_writes: self.retry_writes,
            wal_autocheckpoint: self.wal_autocheckpoint,
            // Not on the command line: `commands::worker` reads it from the environment.
            warehouse: crate::warehouse::Warehouse::Sqlite,
        }
    }
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The warehouse database (opened read-only)
    #[arg(long)]
    pub db: PathBuf,
    /// The queue size to judge the rows against [default: 200; with --table and no
    /// --key-format, the queue a night of reclaim's wrote beside the database (DB.keys) when it
    /// is there]
    #[arg(long, value_parser = items_parser())]
    pub items: Option<u64>,
    /// Print the facts as one JSON object
    #[arg(long)]
    pub json: bool,
    /// List the task ids written more than once: how many rows each, and the runs that wrote
    /// them; with --table, the keys of the queue missing or written more than once, and the
    /// rows' keys outside the queue
    #[arg(long)]
    pub ids: bool,
    /// Your own job's table instead of reclaim's `records` (its rows judged against its queue,
    /// as a finished night: a key of the queue with no row is lost)
    #[arg(long)]
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
